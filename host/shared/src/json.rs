//! A request body read as one JSON object, as both hosts read every JSON body they parse
//! themselves (the recall body goes to the engine, which reads it as strictly): empty,
//! not JSON, or not an object is `invalid_json`; a field given twice in any object is
//! `invalid_request` naming it, as the recall route refuses it, where a plain parse would
//! keep the last one silently (two `supervisors` in an org manifest, two `role`s in a key
//! request). A UTF-8 byte-order mark before the JSON is skipped.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::Refusal;

/// Marks the duplicate-field error inside serde's error text.
const TWICE: &str = "lid: field given twice: ";

/// `body` after a UTF-8 byte-order mark, if it starts with one (JSON has none; editors
/// and some clients write it).
pub fn without_bom(body: &str) -> &str {
    body.strip_prefix('\u{feff}').unwrap_or(body)
}

/// The body as a JSON object (see the module documentation).
pub fn object(body: &str) -> Result<Value, Refusal> {
    let body = without_bom(body);
    if body.trim().is_empty() {
        return Err(Refusal::invalid_json("the body is empty"));
    }
    let v = match serde_json::from_str::<Strict>(body) {
        Ok(Strict(v)) => v,
        Err(e) => {
            let text = e.to_string();
            return Err(match text.strip_prefix(TWICE) {
                Some(rest) => {
                    let field = rest.split(" at line ").next().unwrap_or(rest);
                    Refusal::invalid_request(format!("the body gives the field `{field}` twice in one object: send each field once"))
                }
                // A string escaping half of a UTF-16 pair (`"\ud800"`) is well-formed JSON
                // (RFC 8259) that no Rust string holds: the request's shape, said as the
                // engine says it on the recall route, not a syntax error.
                None if (text.contains("surrogate") || text.contains("hex escape")) && serde_json::from_str::<serde::de::IgnoredAny>(body).is_ok() => {
                    Refusal::invalid_request("a string in the body is not valid Unicode text: it escapes half of a UTF-16 surrogate pair (\\uD800 to \\uDFFF alone); send the text as UTF-8, or escape both halves of the pair")
                }
                None => Refusal::invalid_json(e),
            });
        }
    };
    if !v.is_object() {
        return Err(Refusal::invalid_json("expected a JSON object"));
    }
    Ok(v)
}

/// A JSON value whose objects name each field once.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(n.into())
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(n.into())
    }
    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if out.contains_key(&k) {
                return Err(serde::de::Error::custom(format!("{TWICE}{k}")));
            }
            let Strict(v) = map.next_value()?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_body_is_one_object_with_each_field_once() {
        let v = object(r#"{"a": [1, -2, 2.5, "x", null, true, {"b": {}}], "c": 18446744073709551615}"#).unwrap();
        assert_eq!(v, json!({"a": [1, -2, 2.5, "x", null, true, {"b": {}}], "c": 18446744073709551615u64}));
        assert_eq!(object("\u{feff}{\"a\": 1}").unwrap(), json!({"a": 1}), "a byte-order mark is skipped");
        let twice = object(r#"{"supervisors": {"boss": ["a"]}, "supervisors": {"boss": ["b"]}}"#).unwrap_err();
        assert_eq!((twice.status, twice.code.as_ref()), (400, "invalid_request"));
        assert!(twice.message.contains("`supervisors` twice"), "{}", twice.message);
        let nested = object(r#"{"a": [{"role": "x", "role": "y"}]}"#).unwrap_err();
        assert!(nested.message.contains("`role` twice"), "{}", nested.message);
        for bad in ["", "  ", "[1]", "\"x\"", "{", "{\"a\": 1,}"] {
            assert_eq!(object(bad).unwrap_err().code, "invalid_json", "{bad:?}");
        }
        assert!(object("").unwrap_err().message.contains("the body is empty"));
        // half a surrogate pair is well-formed JSON no string holds: the shape, not syntax
        for lone in [r#"{"a": "\ud800"}"#, r#"{"a": "x\udc00y"}"#, r#"{"a": ["\ud800\u0041"]}"#] {
            let e = object(lone).unwrap_err();
            assert_eq!((e.status, e.code.as_ref()), (400, "invalid_request"), "{lone}");
            assert!(e.message.contains("surrogate pair"), "{}", e.message);
        }
        assert_eq!(object(r#"{"a": "\ud800"#).unwrap_err().code, "invalid_json", "not well-formed: syntax");
        assert_eq!(object(r#"{"a": "\ud83d\ude00"}"#).unwrap(), json!({"a": "😀"}));
    }

    #[test]
    fn half_a_surrogate_pair_in_a_body_that_is_not_json_is_a_syntax_error() {
        for bad in [r#"{"a": "\ud800",}"#, r#"{"a": "\ud800"} x"#, r#"{"a": ["\udc00" "b"]}"#] {
            assert_eq!(object(bad).unwrap_err().code, "invalid_json", "{bad}");
        }
    }
}
