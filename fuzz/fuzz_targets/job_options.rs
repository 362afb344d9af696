//! Stored job options: JSON in either key style (Redis stores Node's short keys, PostgreSQL
//! the long names) and the msgpack a Node.js producer sends. Properties: no panic, and options
//! that were read are read back the same from the JSON (both styles) and msgpack they write.
#![no_main]

use bullmq_core::JobOptions;
use bullmq_core::codec::{self, KeyStyle};
use libfuzzer_sys::fuzz_target;

#[path = "common/js_value.rs"]
mod js_value;

/// Options with the values kept raw as JavaScript sees them.
fn as_javascript(mut opts: JobOptions) -> JobOptions {
    opts.extra.values_mut().for_each(js_value::normalize);
    opts
}

fuzz_target!(|bytes: &[u8]| {
    let Some((mode, rest)) = bytes.split_first() else {
        return;
    };
    let decoded = if mode % 2 == 0 {
        let Ok(text) = std::str::from_utf8(rest) else {
            return;
        };
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
            let _ = codec::options_from_value(&value);
        }
        codec::options_from_json(text)
    } else {
        codec::options_from_msgpack(rest)
    };
    let Ok(decoded) = decoded else {
        return;
    };
    let opts = as_javascript(decoded.options);
    for style in [KeyStyle::Short, KeyStyle::Long] {
        let json = codec::options_to_json(&opts, style);
        let back = codec::options_from_json(&json)
            .unwrap_or_else(|e| panic!("options written as {json} must read back: {e}"));
        assert_eq!(
            as_javascript(back.options),
            opts,
            "JSON round trip ({style:?}): {json}"
        );
    }
    let packed = codec::options_to_msgpack(&opts).expect("options encode as msgpack");
    let back = codec::options_from_msgpack(&packed).expect("packed options read back");
    // msgpack carries numbers past 2^53 as doubles (documented in the codec): what it reads
    // back packs to the same bytes.
    let again = codec::options_to_msgpack(&back.options).expect("options encode as msgpack");
    assert_eq!(again, packed, "msgpack round trip");
});
