//! Where the shared test services are: the environment, else the local defaults that
//! `.ci/run` starts.

/// The Redis the tests use: `REDIS_URL`, else `redis://127.0.0.1:6379`.
pub fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// The PostgreSQL the tests use: `DATABASE_URL`, else the local server's database `test`
/// (trust authentication).
pub fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}
