//! [`Ctx`]: what every handler reads from the request's head: where the dashboard is mounted,
//! the CSRF nonce, the head itself for the authorization hook.

use axum::extract::{FromRequestParts, OriginalUri};
use axum::http::header::{COOKIE, SET_COOKIE};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::csrf;
use crate::error::DashboardError;
use crate::state::Shared;

/// The request, as a handler sees it.
pub(crate) struct Ctx {
    /// The request's head, for the authorization hook.
    pub(crate) parts: Parts,
    /// Where the dashboard is mounted, without a trailing `/` (empty at the root).
    pub(crate) base: String,
    /// The CSRF nonce of the request's cookie, if it has one.
    pub(crate) nonce: Option<String>,
    /// A nonce to set, when the request had none.
    new_nonce: Option<String>,
}

/// `path`'s mount point: the original path less the path the nested router saw.
fn mount_point(original: &str, seen: &str) -> String {
    // Nested at `/admin`, a request for `/admin` itself reaches the router as `/`.
    let base = original
        .strip_suffix(seen)
        .or_else(|| (seen == "/").then_some(original))
        .unwrap_or("");
    base.trim_end_matches('/').to_owned()
}

/// The CSRF nonce in the request's cookies.
fn cookie_nonce(parts: &Parts) -> Option<String> {
    parts
        .headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == csrf::COOKIE)
        .map(|(_, value)| value.to_owned())
        .filter(|v| v.len() <= 128 && v.bytes().all(|b| b.is_ascii_hexdigit()))
}

impl FromRequestParts<Shared> for Ctx {
    type Rejection = DashboardError;

    async fn from_request_parts(
        parts: &mut Parts,
        _state: &Shared,
    ) -> Result<Self, Self::Rejection> {
        let seen = parts.uri.path().to_owned();
        let base = parts
            .extensions
            .get::<OriginalUri>()
            .map_or_else(String::new, |o| mount_point(o.path(), &seen));
        let nonce = cookie_nonce(parts);
        Ok(Self {
            parts: parts.clone(),
            base,
            nonce,
            new_nonce: None,
        })
    }
}

impl Ctx {
    /// A context for `parts` alone (a live stream re-running the hook).
    pub(crate) fn for_parts(parts: Parts) -> Self {
        Self {
            parts,
            base: String::new(),
            nonce: None,
            new_nonce: None,
        }
    }

    /// The nonce this page's forms are signed for, drawing one when the browser has none.
    pub(crate) fn form_nonce(&mut self) -> Result<String, DashboardError> {
        if let Some(n) = self.nonce.as_ref().or(self.new_nonce.as_ref()) {
            return Ok(n.clone());
        }
        let nonce = csrf::random_hex(16).ok_or(DashboardError::NoRandomness)?;
        self.new_nonce = Some(nonce.clone());
        Ok(nonce)
    }

    /// `response` with the nonce cookie set when one was drawn for it.
    pub(crate) fn finish(&self, mut response: Response) -> Response {
        if let Some(nonce) = &self.new_nonce {
            let path = if self.base.is_empty() {
                "/"
            } else {
                &self.base
            };
            let cookie = format!(
                "{}={nonce}; Path={path}; HttpOnly; SameSite=Strict",
                csrf::COOKIE
            );
            match HeaderValue::from_str(&cookie) {
                Ok(value) => {
                    response.headers_mut().append(SET_COOKIE, value);
                }
                // A mount path that is not a valid header value: no cookie, so actions are
                // refused rather than the page failing.
                Err(_) => {
                    tracing::warn!(target: "bullmq_dashboard", "mount path unfit for a cookie");
                }
            }
        }
        response
    }

    /// A 303 to `path` (below the mount point).
    pub(crate) fn redirect(&self, path: &str) -> Response {
        let location = crate::urls::below(&self.base, path);
        match HeaderValue::from_str(&location) {
            Ok(value) => {
                let mut response = StatusCode::SEE_OTHER.into_response();
                response
                    .headers_mut()
                    .insert(axum::http::header::LOCATION, value);
                response
            }
            Err(_) => DashboardError::NotFound.into_response(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mount_point_is_what_nesting_stripped() {
        assert_eq!(mount_point("/admin/queues/c/a", "/c/a"), "/admin/queues");
        assert_eq!(mount_point("/admin/queues/", "/"), "/admin/queues");
        assert_eq!(mount_point("/", "/"), "");
        assert_eq!(mount_point("/x", "/y"), "");
        assert_eq!(mount_point("/admin", "/"), "/admin");
    }
}
