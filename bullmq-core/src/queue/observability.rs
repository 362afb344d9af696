//! Metrics, Prometheus export and the workers connected to the queue.

use super::Queue;
use crate::Result;
use crate::backend::{ClientInfo, ClientRole, Lifecycle, Metrics, Queries};
use crate::job::FinishedState;

/// Escapes a Prometheus label value: backslash, double quote and newline.
fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl<B: Queries> Queue<B> {
    /// Per-minute counts of completed or failed jobs, data points `start..=end` (0 is the
    /// newest, -1 the oldest).
    pub async fn get_metrics(&self, kind: FinishedState, start: i64, end: i64) -> Result<Metrics> {
        self.backend.get_metrics(kind, start, end).await
    }

    /// The queue's job counts and totals in Prometheus' text format, the same text Node.js
    /// BullMQ's `exportPrometheusMetrics` writes; `labels` are added to every sample.
    pub async fn export_prometheus_metrics(&self, labels: &[(&str, &str)]) -> Result<String> {
        let counts = self.get_job_counts(&[]).await?;
        let completed = self
            .backend
            .get_metrics(FinishedState::Completed, 0, -1)
            .await?;
        let failed = self
            .backend
            .get_metrics(FinishedState::Failed, 0, -1)
            .await?;
        let queue = escape_label(self.name.as_str());
        let extra: String = labels
            .iter()
            .map(|(k, v)| format!(", {k}=\"{}\"", escape_label(v)))
            .collect();
        let mut out = String::new();
        let mut line = |text: String| {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&text);
        };
        line("# HELP bullmq_job_count Number of jobs in the queue by state".to_owned());
        line("# TYPE bullmq_job_count gauge".to_owned());
        for (state, count) in counts {
            line(format!(
                "bullmq_job_count{{queue=\"{queue}\", state=\"{}\"{extra}}} {count}",
                state.as_str()
            ));
        }
        line("# HELP bullmq_job_completed_total Total number of completed jobs".to_owned());
        line("# TYPE bullmq_job_completed_total counter".to_owned());
        line(format!(
            "bullmq_job_completed_total{{queue=\"{queue}\"{extra}}} {}",
            completed.total
        ));
        line("# HELP bullmq_job_failed_total Total number of failed jobs".to_owned());
        line("# TYPE bullmq_job_failed_total counter".to_owned());
        line(format!(
            "bullmq_job_failed_total{{queue=\"{queue}\"{extra}}} {}",
            failed.total
        ));
        Ok(out)
    }
}

impl<B: Queries + Lifecycle> Queue<B> {
    /// The workers connected to this queue, found by their client names
    /// (`<prefix>:<base64(queue)>` or `…:w:<name>`), whichever runtime they run in.
    pub async fn get_workers(&self) -> Result<Vec<ClientInfo>> {
        let unnamed = self.backend.client_name(&ClientRole::Queue);
        let named = format!("{unnamed}:w:");
        self.clients(|name| name == unnamed || name.starts_with(&named))
            .await
    }

    /// How many workers are connected to this queue.
    pub async fn get_workers_count(&self) -> Result<usize> {
        Ok(self.get_workers().await?.len())
    }

    /// The `QueueEvents` readers connected to this queue.
    pub async fn get_queue_events(&self) -> Result<Vec<ClientInfo>> {
        let name = self.backend.client_name(&ClientRole::QueueEvents);
        self.clients(|n| n == name).await
    }

    async fn clients(&self, matches: impl Fn(&str) -> bool) -> Result<Vec<ClientInfo>> {
        let all = self.backend.get_client_list().await?;
        Ok(all.into_iter().filter(|c| matches(&c.name)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::escape_label;

    #[test]
    fn labels_are_escaped_like_upstream() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
