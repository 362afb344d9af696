//! JSON as a Node.js process writes and reads it.
//!
//! Writing: every JSON text this crate stores where Node.js would have called
//! `JSON.stringify` (job data, return values, progress, flow and scheduler-template data,
//! custom events, PostgreSQL rows) goes through [`to_string`], which writes numbers as
//! ECMAScript's `Number::toString` does (`1e20` as `100000000000000000000`, `1e-7` as
//! `1e-7`, `-0` as `0`, NaN and infinities as `null`) and puts objects' integer-like keys
//! first, as a JavaScript object holds them. Integers (a `u64`, an `i64`) keep their digits;
//! a [`serde_json::value::RawValue`] given as the value is written as given.
//!
//! Reading: [`js_view`] gives the text of what `JSON.parse` makes of a stored value, with
//! JavaScript's object key order (integer-like keys first, ascending, then the others in the
//! order written), which is what a Node.js processor sees.

mod format;
mod payload;
mod view;

pub use format::{JsFormatter, to_string};
pub use payload::JsonPayload;
pub use view::js_view;
