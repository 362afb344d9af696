//! An option that was stored but could not be read as its type.

/// An option that was stored but could not be read as its type. Its raw value is kept in
/// [`super::JobOptions::extra`] so that it is written back unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidOption {
    /// The key it was stored under (`kl`, `backoff`, …).
    pub key: String,
    /// Why it could not be read.
    pub reason: String,
}
