//! The `redis::Client` for a URL: over TLS (`rediss://`, feature `tls`), trusting only a
//! private CA when one is given, else the roots bundled with the crate.

/// The client for `url`, trusting only `ca_pem` when it is given.
pub(crate) fn client_for(url: &str, ca_pem: Option<&[u8]>) -> redis::RedisResult<redis::Client> {
    match ca_pem {
        None => redis::Client::open(url),
        Some(pem) => client_trusting(url, pem),
    }
}

#[cfg(feature = "tls")]
fn client_trusting(url: &str, ca_pem: &[u8]) -> redis::RedisResult<redis::Client> {
    let certificates = redis::TlsCertificates {
        client_tls: None,
        root_cert: Some(ca_pem.to_vec()),
    };
    redis::Client::build_with_tls(url, certificates)
}

#[cfg(not(feature = "tls"))]
fn client_trusting(_url: &str, _ca_pem: &[u8]) -> redis::RedisResult<redis::Client> {
    Err(redis::RedisError::from((
        redis::ErrorKind::InvalidClientConfig,
        "a CA certificate needs the `tls` feature of bullmq-redis",
    )))
}
