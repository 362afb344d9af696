//! [`QueueRoute`]: what every handler under `/c/{connection}/q/{queue}` takes from its
//! request, in one extractor instead of three in each handler.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use serde::Deserialize;

use crate::actions::Fields;
use crate::csrf;
use crate::error::DashboardError;
use crate::pages::layout::View;
use crate::pages::{Opened, open};
use crate::request::Ctx;
use crate::state::Shared;

/// The path's two names every route under a queue has; an action's further ones (a job or
/// scheduler id, the action) its handler reads itself.
#[derive(Deserialize)]
struct QueuePath {
    connection: String,
    queue: String,
}

/// The dashboard, the connection and queue the path names, and the request's context.
pub(crate) struct QueueRoute {
    pub(crate) inner: Shared,
    pub(crate) connection: String,
    pub(crate) queue: String,
    pub(crate) ctx: Ctx,
}

/// A page's start, from [`QueueRoute::page`].
pub(crate) struct Page<'a> {
    pub(crate) view: View,
    pub(crate) opened: Opened<'a>,
    pub(crate) ctx: &'a Ctx,
}

impl FromRequestParts<Shared> for QueueRoute {
    type Rejection = DashboardError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Shared,
    ) -> Result<Self, Self::Rejection> {
        let Path(QueuePath { connection, queue }) = Path::from_request_parts(parts, state)
            .await
            .map_err(|_| DashboardError::NotFound)?;
        let ctx = Ctx::from_request_parts(parts, state).await?;
        Ok(Self {
            inner: Arc::clone(state),
            connection,
            queue,
            ctx,
        })
    }
}

impl QueueRoute {
    /// The page's view (it draws a CSRF nonce when the browser has none).
    pub(crate) fn view(&mut self) -> Result<View, DashboardError> {
        View::new(&self.inner, &mut self.ctx)
    }

    /// What a page under the queue starts from: its view, the queue opened for reading and
    /// the request's context.
    pub(crate) async fn page(&mut self) -> Result<Page<'_>, DashboardError> {
        let view = self.view()?;
        Ok(Page {
            view,
            opened: self.open().await?,
            ctx: &self.ctx,
        })
    }

    /// The queue, for reading: 404 when it or its connection is unknown or hidden.
    pub(crate) async fn open(&self) -> Result<Opened<'_>, DashboardError> {
        open(&self.inner, &self.ctx, &self.connection, &self.queue).await
    }

    /// The queue, for an action posting `fields`: it must be visible (else 404), writable
    /// (else 403), and the form's CSRF token must match the browser's cookie (else 403).
    pub(crate) async fn guard(&self, fields: &Fields) -> Result<Opened<'_>, DashboardError> {
        let (connection, queue) = (self.connection.as_str(), self.queue.as_str());
        let opened = self.open().await?;
        if !opened.access.can_act() {
            tracing::warn!(target: "bullmq_dashboard", connection, queue, "action refused: read-only");
            return Err(DashboardError::ReadOnly {
                connection: opened.conn.name.clone(),
                queue: opened.name.as_str().to_owned(),
            });
        }
        if let Err(refusal) = self.inner.csrf.verify(
            self.ctx.nonce.as_deref(),
            fields.get(csrf::FIELD).map(String::as_str),
        ) {
            tracing::warn!(target: "bullmq_dashboard", connection, queue, %refusal, "action refused: CSRF");
            return Err(refusal.into());
        }
        Ok(opened)
    }
}
