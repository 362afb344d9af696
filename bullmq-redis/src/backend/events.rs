//! `events` section for Redis (in progress).
