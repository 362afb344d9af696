//! `mutations` section for Redis (in progress).
