//! What every command is handed: the store it acts on and how to write its result.

use crate::cli::Format;
use crate::store::Store;

/// What every command needs: the store and how to write.
pub(crate) struct Ctx {
    pub(crate) store: Store,
    pub(crate) format: Format,
    pub(crate) full: bool,
}
