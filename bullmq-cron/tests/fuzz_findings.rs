//! Inputs the fuzz targets (`fuzz/`, target `cron`) found, each kept as a regression test.
#![allow(clippy::unwrap_used)]

use bullmq_cron::{CronError, CronExpression, CronOptions, MAX_DATE_MS};

/// Dates past the last one JavaScript holds overflowed the search's arithmetic (a panic in a
/// debug build, a wrapped time in a release one); they are refused now, naming the option.
#[test]
fn dates_past_javascripts_last_are_refused() {
    let options = CronOptions::new()
        .tz("America/New_York")
        .current_date(18_444_492_273_928_896_512)
        .start_date(2_319_409_883_188_822_271)
        .hash_seed("");
    let err = CronExpression::parse("", &options).unwrap_err();
    assert!(
        matches!(
            err,
            CronError::DateOutOfRange {
                option: "start_date",
                ..
            }
        ),
        "{err:?}"
    );
    for (options, option) in [
        (
            CronOptions::new().tz("UTC").current_date(u64::MAX),
            "current_date",
        ),
        (
            CronOptions::new().tz("UTC").end_date(MAX_DATE_MS + 1),
            "end_date",
        ),
    ] {
        let err = CronExpression::parse("* * * * *", &options).unwrap_err();
        assert!(err.to_string().contains(option), "{err}");
        assert!(matches!(err, CronError::DateOutOfRange { .. }), "{err:?}");
    }
}

/// From the last second JavaScript holds, the search ends there instead of running past it.
#[test]
fn the_search_stops_at_javascripts_last_date() {
    let options = CronOptions::new()
        .tz("Pacific/Chatham")
        .current_date(MAX_DATE_MS - 2_000);
    let mut cron = CronExpression::parse("* * * * * *", &options).unwrap();
    let runs = cron.take(5);
    assert_eq!(runs, [MAX_DATE_MS - 1_000, MAX_DATE_MS]);
    assert_eq!(cron.next_run(), Err(CronError::OutOfTimeSpan));
}

/// A hashed step larger than `i64` (read as its largest value) overflowed the count of values
/// and the walk over them; it stands for one hashed value, as a step wider than the field does.
#[test]
fn a_huge_hashed_step_is_one_value() {
    let huge = "8888888888888888888888888888888888888888882";
    for pattern in [
        format!("H H/{huge} * * *"),
        format!("H(0-59)/{huge} * * * *"),
        format!("0 H/{} * * *", i64::MAX),
    ] {
        let options = CronOptions::new()
            .tz("UTC")
            .current_date(0)
            .hash_seed("seed");
        let mut cron = CronExpression::parse(&pattern, &options).unwrap();
        let runs = cron.take(3);
        assert_eq!(runs.len(), 3, "{pattern}");
        assert!(runs.windows(2).all(|w| w[0] < w[1]), "{pattern}: {runs:?}");
    }
}

/// A range step larger than `i64` overflowed the walk over the range; it holds the range's
/// first value, as a step wider than the field does.
#[test]
fn a_huge_range_step_is_the_first_value() {
    let huge = "528888888888888888888888888888888888888888888888888888888888";
    let options = CronOptions::new().tz("UTC").current_date(0);
    let mut cron = CronExpression::parse(&format!("0 5/{huge} * * *"), &options).unwrap();
    // 05:00 on 1970-01-01, then a day later.
    assert_eq!(cron.take(2), [5 * 3_600_000, 29 * 3_600_000]);
}
