//! Packed script arguments (in progress).
