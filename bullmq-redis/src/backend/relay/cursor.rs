//! The inbox cursors a relay handle hands out: a stream id, tagged with the inbox it belongs
//! to once the node has had more than one.
//!
//! A swept (or expired) node loses its inbox stream; registering again makes a new, empty
//! one, whose ids Redis counts afresh from the server's clock. The id the node had read up to
//! in the old stream says nothing about the new one: in the same millisecond, or after a
//! failover to a node whose clock is behind, the new entries' ids sort below it, and a read
//! from there would miss them. So each cursor names its inbox's generation, and a cursor of
//! an older one reads the new inbox from its start. Generation 0 (the node's first inbox)
//! writes the bare stream id, as before.

/// The cursor a read hands out: `id` in the inbox of `generation`.
pub(super) fn tagged(generation: u64, id: &str) -> String {
    if generation == 0 {
        id.to_owned()
    } else {
        format!("{generation}@{id}")
    }
}

/// The stream id to read from for `cursor` when the inbox is at `generation`: the cursor's
/// own, or the stream's start when it belongs to an older inbox (or is not one of ours).
pub(super) fn stream_id(cursor: &str, generation: u64) -> &str {
    let (of, id) = match cursor.split_once('@') {
        Some((of, id)) => (of.parse().ok(), id),
        None => (Some(0), cursor),
    };
    if of == Some(generation) { id } else { START }
}

/// The start of a stream (the relay's initial cursor).
pub(super) const START: &str = "0-0";

#[cfg(test)]
mod tests {
    use super::{START, stream_id, tagged};

    #[test]
    fn cursors_of_an_older_inbox_read_from_the_start() {
        assert_eq!(tagged(0, "5-1"), "5-1");
        assert_eq!(stream_id(&tagged(0, "5-1"), 0), "5-1");
        assert_eq!(tagged(2, "5-1"), "2@5-1");
        assert_eq!(stream_id(&tagged(2, "5-1"), 2), "5-1");
        assert_eq!(stream_id("5-1", 1), START);
        assert_eq!(stream_id("1@5-1", 2), START);
        assert_eq!(stream_id("x@5-1", 0), START);
    }
}
