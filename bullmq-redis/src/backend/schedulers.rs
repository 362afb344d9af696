//! `schedulers` section for Redis (in progress).
