//! Drawing `top`'s screen: a header, one row per queue, the failed jobs of one queue when
//! opened, a status line and the keys.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Row as TableRow, Table, TableState};

use super::sample::Watched;

/// A failed job as the failed-jobs panel lists it.
pub(super) struct FailedJob {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) attempts: u64,
    pub(super) reason: String,
}

/// What the screen shows besides the queues.
#[derive(Default)]
pub(super) struct Screen {
    pub(super) title: String,
    pub(super) selected: usize,
    /// The queue whose failed jobs are open, and those jobs (newest first).
    pub(super) failed: Option<(String, Vec<FailedJob>)>,
    pub(super) status: String,
}

/// The widths of the columns after QUEUE (whose width follows the longest name), in the
/// header's order.
const COLUMN_WIDTHS: [u16; 12] = [7, 8, 7, 8, 7, 10, 7, 7, 7, 8, 8, 7];

const KEYS: &str = "↑/↓ select   p pause/resume   f failed jobs   r refresh   esc close   q quit";

/// A rate for a cell: one decimal below 10, whole above.
fn rate(r: f64) -> String {
    if r < 10.0 {
        format!("{r:.1}")
    } else {
        format!("{r:.0}")
    }
}

/// An age for a cell: `850ms`, `42s`, `3m12s`, `2h5m`.
pub(super) fn age(ms: Option<u64>) -> String {
    let Some(ms) = ms else {
        return "-".to_owned();
    };
    let s = ms / 1000;
    match s {
        0 => format!("{ms}ms"),
        1..60 => format!("{s}s"),
        60..3600 => format!("{}m{}s", s / 60, s % 60),
        _ => format!("{}h{}m", s / 3600, s % 3600 / 60),
    }
}

/// Draws the whole screen.
pub(super) fn draw(frame: &mut Frame<'_>, queues: &[Watched], screen: &Screen) {
    // The queues keep their rows when the failed jobs open below them.
    let rows_height = u16::try_from(queues.len() + 2).unwrap_or(u16::MAX);
    let (table_size, failed_size) = if screen.failed.is_some() {
        (Constraint::Length(rows_height), Constraint::Min(3))
    } else {
        (Constraint::Min(3), Constraint::Length(0))
    };
    let [title, table, failed, status, keys] = Layout::vertical([
        Constraint::Length(1),
        table_size,
        failed_size,
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    frame.render_widget(Paragraph::new(screen.title.as_str()), title);

    let header = TableRow::new([
        "QUEUE",
        "STATE",
        "WAITING",
        "ACTIVE",
        "DELAYED",
        "FAILED",
        "COMPLETED",
        "IN/s",
        "OUT/s",
        "FAIL/s",
        "OLDEST",
        "WORKERS",
        "RATES",
    ])
    .style(Style::new().add_modifier(Modifier::BOLD));
    let rows = queues.iter().map(|q| {
        let r = &q.row;
        let c = &r.counts;
        TableRow::new([
            q.name.clone(),
            if r.paused { "paused" } else { "running" }.to_owned(),
            (c.waiting + c.prioritized).to_string(),
            c.active.to_string(),
            c.delayed.to_string(),
            c.failed.to_string(),
            c.completed.to_string(),
            rate(r.in_per_sec),
            rate(r.out_per_sec),
            rate(r.failed_per_sec),
            age(r.oldest_waiting_ms),
            r.workers.to_string(),
            if r.from_events { "events" } else { "counts" }.to_owned(),
        ])
    });
    let longest = queues
        .iter()
        .map(|q| q.name.chars().count())
        .max()
        .unwrap_or(0);
    let name_width = u16::try_from(longest.clamp(5, 40)).unwrap_or(40) + 1;
    let widths = std::iter::once(name_width)
        .chain(COLUMN_WIDTHS)
        .map(Constraint::Length);
    let table_widget = Table::new(rows, widths)
        .header(header)
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
        .highlight_symbol("> ")
        .block(Block::new().borders(Borders::TOP));
    let mut state = TableState::default().with_selected(Some(screen.selected));
    frame.render_stateful_widget(table_widget, table, &mut state);

    if let Some((queue, jobs)) = &screen.failed {
        let mut lines: Vec<Line<'_>> = jobs
            .iter()
            .map(|j| {
                Line::from(format!(
                    "{:<12} {:<16} attempts {:<3} {}",
                    j.id, j.name, j.attempts, j.reason
                ))
            })
            .collect();
        if lines.is_empty() {
            lines.push(Line::from("no failed jobs"));
        }
        let block = Block::new()
            .borders(Borders::TOP)
            .title(format!("failed jobs of {queue} (newest first; esc closes)"));
        frame.render_widget(Paragraph::new(lines).block(block), failed);
    }
    frame.render_widget(Paragraph::new(screen.status.as_str()), status);
    frame.render_widget(
        Paragraph::new(KEYS).style(Style::new().add_modifier(Modifier::DIM)),
        keys,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_and_rates_read_short() {
        assert_eq!(age(None), "-");
        assert_eq!(age(Some(850)), "850ms");
        assert_eq!(age(Some(42_000)), "42s");
        assert_eq!(age(Some(192_000)), "3m12s");
        assert_eq!(age(Some(7_500_000)), "2h5m");
        assert_eq!(rate(2.24), "2.2");
        assert_eq!(rate(125.4), "125");
    }
}
