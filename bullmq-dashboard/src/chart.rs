//! A per-minute series drawn as an inline SVG on the server: no script, no chart library.

use maud::{Markup, html};

/// Width and height of the drawing, in its own units (it scales to its box).
const WIDTH: u64 = 600;
const HEIGHT: u64 = 120;

/// `points` (oldest first) as a line over a baseline, with the largest value labelled.
pub(crate) fn series(points: &[u64], class: &str, label: &str) -> Markup {
    let max = points.iter().copied().max().unwrap_or(0).max(1);
    let n = u64::try_from(points.len()).unwrap_or(1).max(2) - 1;
    let mut path = String::new();
    for (i, value) in points.iter().enumerate() {
        let i = u64::try_from(i).unwrap_or(0);
        let x = i * WIDTH / n;
        let y = HEIGHT - (value.min(&max) * HEIGHT / max);
        path.push_str(if i == 0 { "M" } else { " L" });
        path.push_str(&format!("{x} {y}"));
    }
    html! {
        figure.chart {
            svg viewBox={ "0 -10 " (WIDTH) " " (HEIGHT + 20) } role="img" aria-label=(label) {
                line.axis x1="0" y1=(HEIGHT) x2=(WIDTH) y2=(HEIGHT) {}
                @if !points.is_empty() {
                    path class={ "series " (class) } d=(path) {}
                }
                text x="4" y="2" { "max " (max) "/min" }
            }
            figcaption { (label) }
        }
    }
}
