//! [`JsonPayload`]: a value serialized once, when it is given, for a builder that cannot fail.

use serde::Serialize;

use crate::codec::CodecError;

/// A value given to a builder (a flow node's or a scheduler template's data), kept as the
/// JSON text [`to_string`](super::to_string) writes for it; a value that could not be
/// serialized keeps the reason, reported when the job is added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPayload(Result<String, String>);

impl JsonPayload {
    /// `value` serialized as `JSON.stringify` writes it (a raw JSON value as given).
    pub fn new<T: Serialize>(value: T) -> Self {
        Self(super::to_string(&value).map_err(|e| e.to_string()))
    }

    /// The JSON text; `what` names the value in the error when it could not be serialized.
    ///
    /// # Errors
    ///
    /// [`CodecError::Encode`] with the serializer's reason.
    pub fn text(&self, what: &'static str) -> Result<&str, CodecError> {
        self.0.as_deref().map_err(|reason| CodecError::Encode {
            what,
            reason: reason.clone(),
        })
    }
}
