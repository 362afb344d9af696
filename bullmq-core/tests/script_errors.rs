//! Upstream's script error codes, both ways, and the messages that go with them.

use bullmq_core::error::UnknownScriptCode;
use bullmq_core::{ScriptError, ScriptErrorCode};

#[test]
fn every_upstream_code_maps_to_a_name_and_back() {
    for code in -11..=-1 {
        let named = ScriptErrorCode::try_from(code).expect("codes -1..-11 are upstream's");
        assert_eq!(named.code(), code);
    }
    assert_eq!(
        ScriptErrorCode::try_from(-1),
        Ok(ScriptErrorCode::JobNotFound)
    );
    assert_eq!(
        ScriptErrorCode::try_from(-9),
        Ok(ScriptErrorCode::FailedChildren)
    );
    assert_eq!(
        ScriptErrorCode::try_from(-11),
        Ok(ScriptErrorCode::SchedulerJobSlotsBusy)
    );
    for code in [0, 1, -12, i64::MIN] {
        assert_eq!(
            ScriptErrorCode::try_from(code),
            Err(UnknownScriptCode(code))
        );
    }
}

#[test]
fn messages_read_like_upstreams() {
    let err = ScriptError::new(ScriptErrorCode::LockNotFound, "moveToFinished", "42");
    assert_eq!(err.to_string(), "Missing lock for job 42. moveToFinished");

    let mut err = ScriptError::new(ScriptErrorCode::NotInState, "promote", "7");
    err.state = Some("delayed".to_owned());
    assert_eq!(
        err.to_string(),
        "Job 7 is not in the delayed state. promote"
    );

    let mut err = ScriptError::new(ScriptErrorCode::ParentNotFound, "addJob", "3");
    err.parent_key = Some("bull:parents:1".to_owned());
    assert_eq!(
        err.to_string(),
        "Missing key for parent job bull:parents:1. addJob"
    );

    let err: bullmq_core::Error =
        ScriptError::new(ScriptErrorCode::FailedChildren, "moveToFinished", "9").into();
    assert_eq!(
        err.to_string(),
        "Cannot complete job 9 because it has at least one failed child. moveToFinished"
    );
}
