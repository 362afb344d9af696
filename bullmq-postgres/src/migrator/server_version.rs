//! The server version check upstream runs before it migrates or accepts a schema.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::PostgresError;

/// The oldest PostgreSQL major version the backend runs on (upstream's
/// `MINIMUM_POSTGRES_VERSION`): its functions rely on features or fixes older servers lack.
pub const MINIMUM_POSTGRES_VERSION: i32 = 13;

/// The oldest major version that runs without a warning (upstream's
/// `RECOMMENDED_POSTGRES_VERSION`).
pub const RECOMMENDED_POSTGRES_VERSION: i32 = 14;

/// Whether the below-recommended warning was logged; upstream warns once per process.
static WARNED_BELOW_RECOMMENDED: AtomicBool = AtomicBool::new(false);

/// Refuses a server older than [`MINIMUM_POSTGRES_VERSION`] and warns once below
/// [`RECOMMENDED_POSTGRES_VERSION`].
///
/// `version_num` is the server's `server_version_num` (`150020` for 15.20: the major is the
/// number divided by 10000 for every supported release); `reported` its `server_version`,
/// quoted in the error. A value that is not a number counts as version 0, as upstream's
/// `parseInt` yields `NaN` there and refuses too.
pub(crate) fn check_server_version(version_num: &str, reported: &str) -> Result<(), PostgresError> {
    let major = version_num
        .trim()
        .parse::<i32>()
        .map_or(0, |num| num / 10_000);
    if major < MINIMUM_POSTGRES_VERSION {
        return Err(PostgresError::UnsupportedPostgresVersion {
            server_version: reported.to_owned(),
            minimum_major: MINIMUM_POSTGRES_VERSION,
        });
    }
    if major < RECOMMENDED_POSTGRES_VERSION
        && !WARNED_BELOW_RECOMMENDED.swap(true, Ordering::Relaxed)
    {
        tracing::warn!(
            "bullmq: PostgreSQL {RECOMMENDED_POSTGRES_VERSION} or newer is recommended for the \
             PostgreSQL backend (detected {reported})"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_than_13_is_refused_with_the_reported_version() {
        for (num, reported) in [("120017", "12.17"), ("90624", "9.6.24"), ("", "unknown")] {
            let err = check_server_version(num, reported).expect_err(num);
            assert!(
                matches!(
                    &err,
                    PostgresError::UnsupportedPostgresVersion { server_version, minimum_major: 13 }
                        if server_version == reported
                ),
                "{err:?}"
            );
            assert!(
                err.to_string().contains("requires server version 13"),
                "{err}"
            );
        }
    }

    #[test]
    fn thirteen_and_newer_are_accepted() {
        for num in ["130000", "130014", "140000", "150020", "170002", "180000"] {
            check_server_version(num, num).unwrap_or_else(|e| panic!("{num}: {e}"));
        }
    }
}
