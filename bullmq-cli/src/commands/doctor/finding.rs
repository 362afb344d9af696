//! One check of `doctor`: what it looked at, what it found, and the fix when something is
//! wrong.

use serde_json::{Value, json};

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Status {
    /// As it should be.
    Ok,
    /// Worth knowing, not wrong (no persistence on a cache-like server, an older minor).
    Note,
    /// Wrong: jobs can be lost, refused or run twice until it is fixed.
    Problem,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Note => "note",
            Self::Problem => "problem",
        }
    }
}

/// A check's name, as `doctor` lists it ("server", "persistence", ...).
type Check = &'static str;

/// One check's outcome.
#[derive(Debug, Clone)]
pub(super) struct Finding {
    pub(super) check: Check,
    pub(super) status: Status,
    pub(super) found: String,
    pub(super) fix: Option<String>,
}

impl Finding {
    pub(super) fn ok(check: Check, found: impl Into<String>) -> Self {
        Self {
            check,
            status: Status::Ok,
            found: found.into(),
            fix: None,
        }
    }

    pub(super) fn problem(check: Check, found: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            check,
            status: Status::Problem,
            found: found.into(),
            fix: Some(fix.into()),
        }
    }

    /// Like [`Finding::problem`], but only worth knowing.
    pub(super) fn note(check: Check, found: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            status: Status::Note,
            ..Self::problem(check, found, fix)
        }
    }

    pub(super) fn json(&self) -> Value {
        json!({
            "check": self.check,
            "status": self.status.as_str(),
            "found": self.found,
            "fix": self.fix,
        })
    }

    pub(super) fn status_text(&self) -> &'static str {
        self.status.as_str()
    }
}

/// The clock check, from a server time read between two local readings (Unix ms).
pub(super) fn clock(before_ms: u64, server_ms: u64, after_ms: u64) -> Finding {
    let local = i128::from(before_ms) + (i128::from(after_ms) - i128::from(before_ms)) / 2;
    let skew = i128::from(server_ms) - local;
    let uncertainty = i128::from(after_ms.saturating_sub(before_ms)) / 2 + 1;
    let found = format!("the server's clock is {skew:+} ms from this host's (± {uncertainty} ms)");
    if skew.abs() - uncertainty > 1000 {
        Finding::problem(
            "clock",
            found,
            "synchronise both clocks (NTP: chrony or systemd-timesyncd); delays, lock and \
             stalled checks read time from the clients, so skew moves them",
        )
    } else {
        Finding::ok("clock", found)
    }
}

/// Now, Unix ms, by this host's clock.
pub(super) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
