//! The facade as a user meets it: the quick start example, the store picked at run time from a
//! URL, and no password ever printed.

#![allow(unreachable_pub)]

use bullmq_test_support as support;

#[cfg(all(feature = "redis", feature = "postgres"))]
mod any_backend;
#[cfg(all(feature = "redis", feature = "scheduler"))]
mod api;
#[cfg(all(
    feature = "redis",
    feature = "postgres",
    feature = "flow",
    feature = "scheduler"
))]
mod examples;
#[cfg(all(feature = "redis", feature = "postgres"))]
mod k8s_worker;
#[cfg(feature = "redis")]
mod quickstart;
#[cfg(all(feature = "redis", feature = "postgres"))]
mod redaction;

/// The facade's features this test binary was built with (to build an example the same way).
#[allow(dead_code)]
fn features() -> Vec<&'static str> {
    [
        (cfg!(feature = "redis"), "redis"),
        (cfg!(feature = "postgres"), "postgres"),
        (cfg!(feature = "flow"), "flow"),
        (cfg!(feature = "scheduler"), "scheduler"),
        (cfg!(feature = "tls"), "tls"),
        (cfg!(feature = "redis-tls"), "redis-tls"),
        (cfg!(feature = "postgres-tls"), "postgres-tls"),
        (cfg!(feature = "otel"), "otel"),
    ]
    .into_iter()
    .filter_map(|(on, feature)| on.then_some(feature))
    .collect()
}
