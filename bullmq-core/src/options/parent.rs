//! The parent a child job reports to in a flow.

/// `parent`: the parent job's id and its queue's qualified name (`<prefix>:<queue>`).
///
/// ```
/// use bullmq_core::options::ParentOptions;
///
/// let p = ParentOptions::new("7", "bull:reports");
/// assert_eq!(p.key(), "bull:reports:7");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, garde::Validate)]
pub struct ParentOptions {
    /// The parent's job id.
    #[garde(length(min = 1))]
    pub id: String,
    /// The parent queue's qualified name, prefix included (`bull:reports`).
    #[garde(length(min = 1))]
    pub queue: String,
}

impl ParentOptions {
    /// A parent reference.
    #[must_use]
    pub fn new(id: impl Into<String>, queue: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            queue: queue.into(),
        }
    }

    /// The parent's job key, `<queue>:<id>`, as stored in the child's `parentKey` field.
    #[must_use]
    pub fn key(&self) -> String {
        format!("{}:{}", self.queue, self.id)
    }
}

/// Telemetry context carried by the job (`tm` and `omc` in stored options).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Telemetry {
    /// Serialized propagation context (`telemetry.metadata`, stored as `tm`).
    pub metadata: Option<String>,
    /// Do not propagate the producer's context (`telemetry.omitContext`, stored as `omc`).
    pub omit_context: Option<bool>,
}
