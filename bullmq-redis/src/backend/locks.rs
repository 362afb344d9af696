//! `locks` section for Redis (in progress).
