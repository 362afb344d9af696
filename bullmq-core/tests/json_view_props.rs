//! Properties of the JSON view a processor gets (`bullmq_core::json::js_view`) and of the
//! writer: any text, however cut or malformed, is answered without a panic, and a value
//! written then viewed reads back as the same value.

#![allow(clippy::unwrap_used)]

use bullmq_core::json::{js_view, to_string};
use proptest::prelude::*;
use serde_json::Value;

/// JSON values with integer-like and other keys, nested, with floats and big integers.
fn values() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "[a-z0-9 \"\\\\é]{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
            prop::collection::vec(("(0|[1-9][0-9]{0,10}|0[0-9]|[a-z]{1,3})", inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn any_text_is_viewed_without_a_panic(text in "[\\[\\]{}\":,0-9a-z\\\\ .eE+-]{0,40}") {
        let view = js_view(&text);
        if serde_json::from_str::<Value>(&text).is_err() {
            prop_assert_eq!(view.as_ref(), text.as_str());
        }
    }

    #[test]
    fn written_then_viewed_reads_back_the_same_value(value in values()) {
        let text = to_string(&value).unwrap();
        let back: Value = serde_json::from_str(&js_view(&text)).unwrap();
        prop_assert_eq!(back, serde_json::from_str::<Value>(&text).unwrap());
        // Spaced as jsonb prints it, the view is the same text.
        let spaced = serde_json::to_string_pretty(&serde_json::from_str::<Value>(&text).unwrap()).unwrap();
        prop_assert_eq!(js_view(&spaced), js_view(&text));
    }
}
