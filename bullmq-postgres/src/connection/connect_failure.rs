//! Why a connection to PostgreSQL could not be opened: one class per cause, each with the
//! advice that fits it (a full server is not a wrong password, an unknown CA is not a stopped
//! server).

use std::fmt;

/// What to do when nothing answered; the advice of [`ConnectFailure::Refused`].
const NOT_RUNNING_HINT: &str = "Is PostgreSQL running and accepting TCP connections there? \
     Start it (Debian: `pg_ctlcluster <version> main start`; install it with \
     `apt-get install postgresql`), or point the URL at a running server \
     (the tests read DATABASE_URL).";

/// Why opening a connection failed; [`PostgresError::connect_failure`](crate::PostgresError::connect_failure)
/// reads it from an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectFailure {
    /// Nothing listens at the address.
    Refused,
    /// No answer within `connect_timeout`.
    TimedOut,
    /// The password (or another credential) was refused (SQLSTATE 28P01).
    Authentication,
    /// `pg_hba.conf` admits no such connection, or the role may not log in (28000).
    NotAllowed,
    /// The database does not exist (3D000).
    UnknownDatabase,
    /// Every connection slot is taken (53300, `max_connections`).
    TooManyClients,
    /// The server is starting, shutting down or recovering (57P01..57P03).
    ServerUnavailable,
    /// TLS could not be set up.
    Tls(TlsFailure),
    /// The server answered with an error of another SQLSTATE (its message says why).
    ServerRefused,
    /// Anything else (a host name that does not resolve, a broken connection, …).
    Other,
}

/// Why TLS could not be set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsFailure {
    /// `sslmode` asks for TLS but bullmq-postgres was built without its `tls` feature.
    NotBuilt,
    /// `sslmode=require` (or stronger) and the server does not offer TLS.
    ServerWithoutTls,
    /// The server's certificate is not signed by a trusted CA (`sslrootcert`).
    UnknownCa,
    /// The server's certificate is not for the host in the URL (`verify-full`).
    NameMismatch,
    /// The server's certificate has expired or is not valid yet.
    Expired,
    /// A certificate or key named in the URL could not be read or used
    /// (`sslrootcert`, `sslcert`, `sslkey`).
    BadFile,
    /// The handshake failed otherwise (the server refused the client certificate, …).
    Handshake,
}

impl ConnectFailure {
    /// The class of `err`, a failure to open a connection.
    #[must_use]
    pub fn of(err: &sqlx::Error) -> Self {
        match err {
            sqlx::Error::Database(db) => match db.code().as_deref().unwrap_or_default() {
                "28P01" => Self::Authentication,
                "28000" => Self::NotAllowed,
                "3D000" => Self::UnknownDatabase,
                "53300" => Self::TooManyClients,
                "57P01" | "57P02" | "57P03" => Self::ServerUnavailable,
                _ => Self::ServerRefused,
            },
            sqlx::Error::Tls(source) => Self::Tls(tls_failure(&**source)),
            sqlx::Error::Io(io) => io_failure(io),
            sqlx::Error::PoolTimedOut => Self::TimedOut,
            _ => Self::Other,
        }
    }

    /// What to do about it.
    #[must_use]
    pub fn advice(self) -> &'static str {
        match self {
            Self::Refused | Self::TimedOut | Self::Other => NOT_RUNNING_HINT,
            Self::Authentication => {
                "The server refused the credentials: check the user and password in the URL."
            }
            Self::NotAllowed => {
                "pg_hba.conf admits no such connection (or the role may not log in): check the \
                 user, database and address it allows, and whether it only admits TLS \
                 (`hostssl`: set sslmode=require or stronger, with the `tls` feature)."
            }
            Self::UnknownDatabase => {
                "The database does not exist: create it, or fix its name in the URL."
            }
            Self::TooManyClients => {
                "The server has no free connection slot (max_connections): lower \
                 PostgresOptions::max_connections across processes, close idle clients, or \
                 raise max_connections (or put a pooler in front)."
            }
            Self::ServerUnavailable => {
                "The server is starting, shutting down or recovering: try again shortly."
            }
            Self::ServerRefused => {
                "The server answered and refused the connection: its message and SQLSTATE \
                 (above) say why."
            }
            Self::Tls(tls) => tls.advice(),
        }
    }
}

impl TlsFailure {
    fn advice(self) -> &'static str {
        match self {
            Self::NotBuilt => {
                "TLS needs the `tls` feature of bullmq-postgres (feature `tls` or \
                 `postgres-tls` of bullmq); without it use sslmode=disable, and only over a \
                 trusted network."
            }
            Self::ServerWithoutTls => {
                "The server does not offer TLS: turn on `ssl` in postgresql.conf, or lower \
                 sslmode (prefer uses TLS when offered)."
            }
            Self::UnknownCa => {
                "The server's certificate is not signed by a CA this client trusts: point \
                 sslrootcert at the CA certificate that signed it."
            }
            Self::NameMismatch => {
                "The server's certificate is not for the host in the URL: connect by a name \
                 the certificate lists (sqlx 0.8 checks the name under verify-ca too)."
            }
            Self::Expired => "The server's certificate has expired or is not valid yet.",
            Self::BadFile => {
                "A certificate or key named in the URL (sslrootcert, sslcert, sslkey) cannot \
                 be read or is not PEM."
            }
            Self::Handshake => {
                "The TLS handshake failed: check the server's TLS settings and, for a client \
                 certificate, that the server trusts its CA."
            }
        }
    }
}

impl fmt::Display for ConnectFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Self::Refused => "connection refused",
            Self::TimedOut => "timed out",
            Self::Authentication => "authentication failed",
            Self::NotAllowed => "not allowed by pg_hba.conf",
            Self::UnknownDatabase => "unknown database",
            Self::TooManyClients => "too many clients",
            Self::ServerUnavailable => "server unavailable",
            Self::Tls(TlsFailure::NotBuilt) => "TLS not built in",
            Self::Tls(TlsFailure::ServerWithoutTls) => "TLS: server without TLS",
            Self::Tls(TlsFailure::UnknownCa) => "TLS: unknown CA",
            Self::Tls(TlsFailure::NameMismatch) => "TLS: certificate not for this host",
            Self::Tls(TlsFailure::Expired) => "TLS: certificate expired",
            Self::Tls(TlsFailure::BadFile) => "TLS: unreadable certificate or key",
            Self::Tls(TlsFailure::Handshake) => "TLS: handshake failed",
            Self::ServerRefused => "refused by the server",
            Self::Other => "connection failed",
        };
        f.write_str(name)
    }
}

/// An I/O failure: the socket's, or a TLS handshake's (rustls reports through `io::Error`).
fn io_failure(io: &std::io::Error) -> ConnectFailure {
    if let Some(tls) = rustls_failure(io) {
        return ConnectFailure::Tls(tls);
    }
    use std::io::ErrorKind as K;
    match io.kind() {
        K::ConnectionRefused | K::NotFound | K::AddrNotAvailable | K::HostUnreachable => {
            ConnectFailure::Refused
        }
        K::TimedOut => ConnectFailure::TimedOut,
        _ => ConnectFailure::Other,
    }
}

/// A TLS failure sqlx reports as such (before or around the handshake).
fn tls_failure(source: &(dyn std::error::Error + 'static)) -> TlsFailure {
    let text = source.to_string();
    if text.contains("without TLS support") {
        TlsFailure::NotBuilt
    } else if text.contains("server does not support TLS") {
        TlsFailure::ServerWithoutTls
    } else {
        // Everything else sqlx reports this way happens while it reads the certificates and
        // keys the URL names (the handshake's own failures come as I/O errors).
        TlsFailure::BadFile
    }
}

#[cfg(feature = "tls")]
fn rustls_failure(io: &std::io::Error) -> Option<TlsFailure> {
    io.get_ref().and_then(|inner| rustls_error(inner))
}

#[cfg(not(feature = "tls"))]
fn rustls_failure(_io: &std::io::Error) -> Option<TlsFailure> {
    None
}

/// The class of a rustls error (inside an I/O error of the handshake).
#[cfg(feature = "tls")]
fn rustls_error(err: &(dyn std::error::Error + 'static)) -> Option<TlsFailure> {
    use rustls::{CertificateError as C, Error as E};
    Some(match err.downcast_ref::<E>()? {
        E::InvalidCertificate(C::UnknownIssuer | C::BadSignature) => TlsFailure::UnknownCa,
        E::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => {
            TlsFailure::NameMismatch
        }
        E::InvalidCertificate(
            C::Expired | C::ExpiredContext { .. } | C::NotValidYet | C::NotValidYetContext { .. },
        ) => TlsFailure::Expired,
        _ => TlsFailure::Handshake,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_kinds_and_tls_messages_are_classed() {
        let io = |kind| sqlx::Error::Io(std::io::Error::from(kind));
        assert_eq!(
            ConnectFailure::of(&io(std::io::ErrorKind::ConnectionRefused)),
            ConnectFailure::Refused
        );
        assert_eq!(
            ConnectFailure::of(&io(std::io::ErrorKind::TimedOut)),
            ConnectFailure::TimedOut
        );
        let tls = |text: &str| sqlx::Error::Tls(text.to_owned().into());
        assert_eq!(
            ConnectFailure::of(&tls("server does not support TLS")),
            ConnectFailure::Tls(TlsFailure::ServerWithoutTls)
        );
        assert_eq!(
            ConnectFailure::of(&tls(
                "TLS upgrade required by connect options but SQLx was built without TLS support enabled"
            )),
            ConnectFailure::Tls(TlsFailure::NotBuilt)
        );
    }
}
