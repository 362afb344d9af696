//! CSRF protection for every action: a signed double-submit token, without sessions.
//!
//! Each browser gets a random nonce in a cookie (`SameSite=Strict`, `HttpOnly`); every form
//! carries, in a hidden field, the HMAC-SHA256 of that nonce under a key drawn at random when
//! the process starts. A POST is refused unless the cookie is there and the field is the HMAC
//! of it. Another site's page cannot send the cookie (`SameSite=Strict`), cannot read it, and
//! cannot make a matching field for a nonce it plants (it has no key). Tokens end with the
//! process: a form loaded before a restart is refused and has to be loaded again.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The cookie that holds the nonce.
pub(crate) const COOKIE: &str = "bullmq_dashboard_csrf";
/// The form field that holds the token.
pub(crate) const FIELD: &str = "csrf";
/// What the HMAC covers besides the nonce, so the key signs nothing else by accident.
const CONTEXT: &[u8] = b"bullmq-dashboard csrf v1:";

/// Why an action's CSRF check failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CsrfRefusal {
    /// The request has no nonce cookie.
    #[error(
        "the CSRF cookie `bullmq_dashboard_csrf` is missing: load the page again (with cookies on) and resubmit"
    )]
    NoCookie,
    /// The form has no token field.
    #[error("the form field `csrf` is missing: submit the action from the dashboard's own form")]
    NoToken,
    /// The token is not the one for the cookie.
    #[error(
        "the form field `csrf` does not match the CSRF cookie: load the page again and resubmit"
    )]
    Mismatch,
}

/// The per-process key.
pub(crate) struct CsrfKey([u8; 32]);

/// Random bytes, or `None` when the system has no randomness to give.
pub(crate) fn random_hex(len: usize) -> Option<String> {
    let mut bytes = vec![0_u8; len];
    getrandom::fill(&mut bytes).ok()?;
    Some(hex::encode(bytes))
}

impl CsrfKey {
    /// A fresh random key; `None` when the system has no randomness.
    pub(crate) fn random() -> Option<Self> {
        let mut key = [0_u8; 32];
        getrandom::fill(&mut key).ok()?;
        Some(Self(key))
    }

    fn mac(&self, nonce: &str) -> Hmac<Sha256> {
        // HMAC takes a key of any length.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC accepts every key length"));
        mac.update(CONTEXT);
        mac.update(nonce.as_bytes());
        mac
    }

    /// The form token for `nonce`.
    pub(crate) fn token(&self, nonce: &str) -> String {
        hex::encode(self.mac(nonce).finalize().into_bytes())
    }

    /// Checks a POST's cookie nonce against its form token, in constant time.
    pub(crate) fn verify(
        &self,
        nonce: Option<&str>,
        token: Option<&str>,
    ) -> Result<(), CsrfRefusal> {
        let nonce = nonce
            .filter(|n| !n.is_empty())
            .ok_or(CsrfRefusal::NoCookie)?;
        let token = token
            .filter(|t| !t.is_empty())
            .ok_or(CsrfRefusal::NoToken)?;
        let token = hex::decode(token).map_err(|_| CsrfRefusal::Mismatch)?;
        self.mac(nonce)
            .verify_slice(&token)
            .map_err(|_| CsrfRefusal::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_matches_its_nonce_under_its_key_only() {
        let key = CsrfKey::random().expect("randomness");
        let other = CsrfKey::random().expect("randomness");
        let token = key.token("abc");
        assert_eq!(key.verify(Some("abc"), Some(&token)), Ok(()));
        assert_eq!(
            key.verify(Some("abd"), Some(&token)),
            Err(CsrfRefusal::Mismatch)
        );
        assert_eq!(
            other.verify(Some("abc"), Some(&token)),
            Err(CsrfRefusal::Mismatch)
        );
        assert_eq!(key.verify(None, Some(&token)), Err(CsrfRefusal::NoCookie));
        assert_eq!(key.verify(Some("abc"), None), Err(CsrfRefusal::NoToken));
        assert_eq!(
            key.verify(Some("abc"), Some("zz")),
            Err(CsrfRefusal::Mismatch)
        );
    }
}
