//! `admin` section for Redis (in progress).
