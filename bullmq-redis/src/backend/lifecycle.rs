//! `lifecycle` section for Redis (in progress).
