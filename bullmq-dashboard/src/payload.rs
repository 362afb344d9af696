//! Payloads shown cut: a page never carries more than [`LIMIT`] bytes of one value unless
//! asked for the whole of it.

/// The most of one value a page shows by default.
pub(crate) const LIMIT: usize = 16 * 1024;

/// A value as a page shows it.
pub(crate) struct Shown<'a> {
    /// What is shown.
    pub(crate) text: &'a str,
    /// The whole value's size in bytes, when `text` is cut.
    pub(crate) cut_from: Option<usize>,
}

/// `text`, cut at `limit` bytes (on a character boundary) unless `full`.
pub(crate) fn cut(text: &str, limit: usize, full: bool) -> Shown<'_> {
    if full || text.len() <= limit {
        return Shown {
            text,
            cut_from: None,
        };
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Shown {
        text: &text[..end],
        cut_from: Some(text.len()),
    }
}

/// A byte count for people: `512 B`, `16.0 KiB`, `10.0 MiB`.
pub(crate) fn size(bytes: usize) -> String {
    #[allow(clippy::cast_precision_loss)]
    let b = bytes as f64;
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_on_a_character_boundary() {
        let text = "éééé";
        let shown = cut(text, 3, false);
        assert_eq!(shown.text, "é");
        assert_eq!(shown.cut_from, Some(8));
        assert!(cut(text, 3, true).cut_from.is_none());
        assert_eq!(size(10 * 1024 * 1024), "10.0 MiB");
        assert_eq!(size(100), "100 B");
    }
}
