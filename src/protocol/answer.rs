//! A method's result as it goes to the client: a JSON value built here, a tool's typed
//! result, or the exact JSON text another server sent.
//!
//! A typed tool's [`CallToolResult`] is written straight to the response: building a
//! [`Value`] of it first would allocate a map per object only to encode it and drop it.
//!
//! A tool forwarded to an upstream server answers with the upstream's result as it came:
//! its members in their order, its numbers as they were spelled (`2.50`, an integer past
//! 2^53), every field this server does not know. Decoding it into a [`Value`] and encoding
//! it again would sort the members, respell the numbers and round big integers to floats.
//! So the text is kept, read only as far as its top-level members (whether it is a tool
//! error; where a 2026-07-28 result takes `resultType` and `_meta`), and written as is.

use std::borrow::Cow;
use std::fmt;

use bytes::Bytes;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::jsonrpc::{self, RequestId, RpcError};
use crate::protocol::CallToolResult;

/// The result of a method, ready to encode.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A result built here.
    Value(Value),
    /// A typed tool's result, encoded when it is written.
    Tool(Box<CallToolResult>),
    /// A result as another server wrote it (see the module docs).
    Text(TextAnswer),
}

/// JSON text kept as it came, with what was read of it.
#[derive(Debug, Clone)]
pub struct TextAnswer {
    text: Box<RawValue>,
    is_error: bool,
}

impl TextAnswer {
    /// The JSON text as it came.
    pub fn text(&self) -> &RawValue {
        &self.text
    }
}

impl Answer {
    /// The result `text`, kept as it is.
    pub fn text(text: Box<RawValue>) -> Answer {
        let is_error = members(&text).is_some_and(|members| {
            members
                .iter()
                .any(|(key, value)| key == "isError" && value.get() == "true")
        });
        Answer::Text(TextAnswer { text, is_error })
    }

    /// Whether this is a `tools/call` result with `isError: true` (a tool execution
    /// error, which is still a successful call).
    pub fn is_error(&self) -> bool {
        match self {
            Answer::Value(value) => value.get("isError").and_then(Value::as_bool) == Some(true),
            Answer::Tool(result) => result.is_error == Some(true),
            Answer::Text(text) => text.is_error,
        }
    }

    /// The result as a [`Value`], for what stores or inspects it. Text nested deeper than
    /// serde_json builds values for is an error.
    pub fn into_value(self) -> Result<Value, RpcError> {
        match self {
            Answer::Value(value) => Ok(value),
            Answer::Tool(result) => serde_json::to_value(result)
                .map_err(|e| RpcError::internal(format!("the result could not be encoded: {e}"))),
            Answer::Text(text) => serde_json::from_str(text.text.get()).map_err(|e| {
                RpcError::internal(format!("the result could not be read as JSON: {e}"))
            }),
        }
    }
}

impl From<CallToolResult> for Answer {
    fn from(result: CallToolResult) -> Answer {
        Answer::Tool(Box::new(result))
    }
}

impl From<Value> for Answer {
    fn from(value: Value) -> Answer {
        Answer::Value(value)
    }
}

impl Serialize for Answer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Answer::Value(value) => value.serialize(serializer),
            Answer::Tool(result) => result.serialize(serializer),
            Answer::Text(text) => text.text.serialize(serializer),
        }
    }
}

/// The JSON-RPC response carrying `outcome` to request `id`.
pub fn encode(id: &RequestId, outcome: &Result<Answer, RpcError>) -> Bytes {
    match outcome {
        Ok(answer) => jsonrpc::encode_result(id, answer),
        Err(error) => jsonrpc::encode_error(Some(id), error),
    }
}

/// The top-level members of `text` in their order, each value as its text; `None` when
/// `text` is not an object.
pub fn members(text: &RawValue) -> Option<Vec<(Cow<'_, str>, &RawValue)>> {
    if !text.get().trim_start().starts_with('{') {
        return None;
    }
    serde_json::from_str::<Members<'_>>(text.get())
        .ok()
        .map(|m| m.0)
}

/// An object's members, in order, written back as an object.
pub struct Members<'a>(pub Vec<(Cow<'a, str>, &'a RawValue)>);

impl Serialize for Members<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Object;
        impl<'de> Visitor<'de> for Object {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(4));
                while let Some(Key(key)) = map.next_key()? {
                    members.push((key, map.next_value::<&'de RawValue>()?));
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(Object)
    }
}

/// A member name, borrowed from the text unless it has escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl<'de> Visitor<'de> for Name {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, name: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(name)))
            }
            fn visit_str<E>(self, name: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(name.to_owned())))
            }
        }
        deserializer.deserialize_str(Name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).unwrap()
    }

    #[test]
    fn text_is_written_exactly_as_it_came() {
        let text = r#"{"z":1,"content":[],"n":2.50,"big":123456789012345678901234567890}"#;
        let id = RequestId::Number(7);
        let bytes = encode(&id, &Ok(Answer::text(raw(text))));
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{text}}}"#)
        );
    }

    #[test]
    fn members_keep_their_order_and_escaped_names() {
        let text = raw(r#"{ "b" : 1 , "a\u0041" : {"x": [1,2]}, "c": "s" }"#);
        let members = members(&text).unwrap();
        let names: Vec<&str> = members.iter().map(|(k, _)| k.as_ref()).collect();
        assert_eq!(names, ["b", "aA", "c"]);
        assert_eq!(members[1].1.get(), r#"{"x": [1,2]}"#);
        assert_eq!(
            serde_json::to_string(&Members(members)).unwrap(),
            r#"{"b":1,"aA":{"x": [1,2]},"c":"s"}"#
        );
        assert!(super::members(&raw("[1]")).is_none());
        assert!(super::members(&raw("\"x\"")).is_none());
    }

    #[test]
    fn is_error_reads_only_a_top_level_true() {
        assert!(Answer::text(raw(r#"{"content":[],"isError":true}"#)).is_error());
        assert!(!Answer::text(raw(r#"{"content":[],"isError":false}"#)).is_error());
        assert!(!Answer::text(raw(r#"{"content":[{"isError":true}]}"#)).is_error());
        assert!(!Answer::text(raw(r#"{"isError":"true"}"#)).is_error());
        assert!(!Answer::text(raw("true")).is_error());
        assert!(Answer::from(serde_json::json!({ "isError": true })).is_error());
    }

    #[test]
    fn a_tool_result_is_written_as_its_value_would_be() {
        let id = RequestId::Number(3);
        for result in [
            CallToolResult::text("hi \"there\""),
            CallToolResult::error("no"),
        ] {
            let value = serde_json::to_value(&result).unwrap();
            let bytes = encode(&id, &Ok(Answer::from(result.clone())));
            let written: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(written["result"], value);
            assert_eq!(
                Answer::from(result.clone()).is_error(),
                value["isError"] == true
            );
            assert_eq!(Answer::from(result).into_value().unwrap(), value);
        }
    }

    #[test]
    fn into_value_reads_the_text() {
        let answer = Answer::text(raw(r#"{"a":[1,{"b":null}]}"#));
        assert_eq!(
            answer.into_value().unwrap(),
            serde_json::json!({ "a": [1, { "b": null }] })
        );
    }
}
