//! Reading a stored JSON object entry by entry, without building a map of it first.
//!
//! Every fetched job's options go through here, so the top-level object is walked in place:
//! keys are borrowed from the input where they have no escapes, and each value is parsed on
//! its own (scalars without allocating).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// A string borrowed from the input when possible.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// The top-level entries of a JSON object, in order; `None` for any other JSON value.
pub(crate) struct Entries<'de>(pub(crate) Option<Vec<(Cow<'de, str>, &'de RawValue)>>);

impl<'de> Deserialize<'de> for Entries<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct EntriesVisitor;
        impl<'de> Visitor<'de> for EntriesVisitor {
            type Value = Entries<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries<'de>, A::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some(Key(key)) = map.next_key()? {
                    entries.push((key, map.next_value::<&'de RawValue>()?));
                }
                Ok(Entries(Some(entries)))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Entries<'de>, A::Error> {
                // `[]` is how some writers store "no options"; anything else is not options.
                match seq.next_element::<de::IgnoredAny>()? {
                    None => Ok(Entries(Some(Vec::new()))),
                    Some(_) => {
                        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                        Ok(Entries(None))
                    }
                }
            }
            fn visit_unit<E: de::Error>(self) -> Result<Entries<'de>, E> {
                Ok(Entries(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Entries<'de>, E> {
                Ok(Entries(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Entries<'de>, E> {
                Ok(Entries(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Entries<'de>, E> {
                Ok(Entries(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Entries<'de>, E> {
                Ok(Entries(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Entries<'de>, E> {
                Ok(Entries(None))
            }
        }
        d.deserialize_any(EntriesVisitor)
    }
}
