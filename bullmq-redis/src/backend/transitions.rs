//! `transitions` section for Redis (in progress).
