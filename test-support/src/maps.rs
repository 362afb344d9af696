//! Owned string maps, written as a list of pairs.

use std::collections::HashMap;

/// `pairs` as a map of owned strings, to compare with a hash or table read back.
pub fn string_map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}
