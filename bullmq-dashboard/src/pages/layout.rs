//! The page shell, and the form every action posts.

use axum::response::{Html, IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

use crate::error::DashboardError;
use crate::request::Ctx;
use crate::state::Inner;

/// What a page needs to link and sign its forms.
pub(crate) struct View {
    /// The mount point.
    pub(crate) base: String,
    /// The CSRF token for this browser's nonce.
    pub(crate) token: String,
}

impl View {
    /// The view of `ctx`, drawing a CSRF nonce when the browser has none.
    pub(crate) fn new(inner: &Inner, ctx: &mut Ctx) -> Result<Self, DashboardError> {
        let nonce = ctx.form_nonce()?;
        Ok(Self {
            base: ctx.base.clone(),
            token: inner.csrf.token(&nonce),
        })
    }

    /// A path below the mount point.
    pub(crate) fn href(&self, path: &str) -> String {
        crate::urls::below(&self.base, path)
    }

    /// A POST form to `action` (below the mount point) with one button; `fields` go first.
    pub(crate) fn form(&self, action: &str, label: &str, fields: &Markup, class: &str) -> Markup {
        html! {
            form.action method="post" action=(self.href(action)) {
                input type="hidden" name=(crate::csrf::FIELD) value=(self.token);
                (fields)
                button type="submit" class=(class) { (label) }
            }
        }
    }
}

/// The breadcrumbs of a page of queue `n` on connection `c`: the connection, the queue, then
/// `last` (its text and link) on a page below the queue's own.
pub(crate) fn queue_crumbs(
    c: &str,
    n: &str,
    last: Option<(String, String)>,
) -> Vec<(String, String)> {
    let mut crumbs = vec![
        (c.to_owned(), "/".to_owned()),
        (n.to_owned(), crate::urls::queue(c, n)),
    ];
    crumbs.extend(last);
    crumbs
}

/// A whole page: `crumbs` (label, path) lead to it; `live` is the SSE endpoint its script
/// reads, if any.
pub(crate) fn page(
    ctx: &Ctx,
    view: &View,
    title: &str,
    crumbs: &[(String, String)],
    live: Option<String>,
    body: &Markup,
) -> Response {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                // No icon: browsers would otherwise ask the host's root for one.
                link rel="icon" href="data:,";
                title { (title) " · bullmq dashboard" }
                link rel="stylesheet" href=(view.href("/static/dashboard.css"));
                script src=(view.href("/static/dashboard.js")) defer {}
            }
            body data-live=[live.map(|l| view.href(&l))] {
                header.top {
                    a.brand href=(view.href("/")) { "bullmq" }
                    nav.crumbs {
                        @for (label, path) in crumbs {
                            span.sep { "/" }
                            a href=(view.href(path)) { (label) }
                        }
                    }
                }
                main { (body) }
            }
        }
    };
    ctx.finish(Html(markup.into_string()).into_response())
}
