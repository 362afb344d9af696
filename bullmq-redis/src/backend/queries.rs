//! `queries` section for Redis (in progress).
