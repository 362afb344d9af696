//! Finding a queue's jobs by what they hold: the one rule the operators' tools search by
//! (the `bullmq` command line's `jobs --search` and the dashboard's search box).
//!
//! [`Needle`] is the rule: a JSON object or array is looked for by containment in the data
//! (as PostgreSQL's `jsonb @>`); any other text matches a job whose id equals it, or whose
//! name or any string, number or boolean in its data contains it, ignoring case.
//! [`scan()`] applies it store-neutrally, window by window up to a bound, and says how far it
//! got; a store that can query data (PostgreSQL) may answer the same rule in one query.
//!
//! ```
//! use bullmq_core::search::Needle;
//!
//! let by_value = Needle::parse("ANN").expect("not empty");
//! assert!(by_value.matches("7", "order", r#"{"user":{"name":"ann"}}"#));
//! let contained = Needle::parse(r#"{"user":{"name":"ann"}}"#).expect("not empty");
//! assert!(contained.matches("7", "order", r#"{"user":{"name":"ann","age":3}}"#));
//! assert!(!contained.matches("7", "order", r#"{"user":{"name":"annie"}}"#));
//! ```

mod cursor;
mod needle;
mod scan;

pub use cursor::{BadCursor, ScanCursor};
pub use needle::{Needle, contains};
pub use scan::{Found, Match, ScanRequest, scan};
