//! `blocking` section for Redis (in progress).
