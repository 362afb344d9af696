//! `meta` section for Redis (in progress).
