//! Choosing the store at run time: [`AnyBackend`], either backend the features compiled in,
//! and [`connect`], which picks one by the URL's scheme.

mod backend;
mod connect;

pub use backend::AnyBackend;
pub use connect::{ConnectError, ConnectOptions, connect};
