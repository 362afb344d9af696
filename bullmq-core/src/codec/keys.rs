//! The names options are stored under. This file is the only place that knows the short keys.

/// How option names are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyStyle {
    /// Redis: six options under short keys and telemetry flattened to `tm`/`omc`, as
    /// upstream's `optsAsJSON` writes them into the job hash.
    Short,
    /// PostgreSQL: `JSON.stringify(opts)` with long camelCase names and a nested `telemetry`.
    Long,
}

/// An option whose stored name depends on the [`KeyStyle`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Compressible {
    pub(crate) long: &'static str,
    pub(crate) short: &'static str,
}

impl Compressible {
    const fn new(long: &'static str, short: &'static str) -> Self {
        Self { long, short }
    }

    pub(crate) fn name(self, style: KeyStyle) -> &'static str {
        match style {
            KeyStyle::Short => self.short,
            KeyStyle::Long => self.long,
        }
    }
}

pub(crate) const DEDUPLICATION: Compressible = Compressible::new("deduplication", "de");
pub(crate) const FAIL_PARENT: Compressible = Compressible::new("failParentOnFailure", "fpof");
pub(crate) const CONTINUE_PARENT: Compressible =
    Compressible::new("continueParentOnFailure", "cpof");
pub(crate) const IGNORE_DEPENDENCY: Compressible =
    Compressible::new("ignoreDependencyOnFailure", "idof");
pub(crate) const KEEP_LOGS: Compressible = Compressible::new("keepLogs", "kl");
pub(crate) const REMOVE_DEPENDENCY: Compressible =
    Compressible::new("removeDependencyOnFailure", "rdof");

/// `telemetry.metadata` when flattened (short style).
pub(crate) const TELEMETRY_METADATA: &str = "tm";
/// `telemetry.omitContext` when flattened (short style).
pub(crate) const TELEMETRY_OMIT_CONTEXT: &str = "omc";
/// The nested object (long style).
pub(crate) const TELEMETRY: &str = "telemetry";

/// Every compressible option, for decoding either spelling.
pub(crate) const COMPRESSIBLE: [Compressible; 6] = [
    DEDUPLICATION,
    FAIL_PARENT,
    CONTINUE_PARENT,
    IGNORE_DEPENDENCY,
    KEEP_LOGS,
    REMOVE_DEPENDENCY,
];
