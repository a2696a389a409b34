//! What every 2026-07-28 result carries, added as it is encoded: `resultType`, the server's
//! `serverInfo` in `_meta`, and cache hints where the method's result is cacheable.
//!
//! `serverInfo` is the same for every result, so it is serialized once (by
//! [`ServerIdentity`](crate::dispatch::identity::ServerIdentity)) and written in front of
//! the result's own members when the result has no `_meta` of its own, the usual case:
//! no per-result copy of it is built, serialized and dropped. A result that brings its own
//! `_meta` object gets `serverInfo` inserted into it.
//!
//! A typed tool result ([`Answer::Tool`]) is written with the stamp's members around its
//! fields, never built as a map.
//!
//! A result kept as the text an upstream wrote ([`Answer::Text`]) is stamped the same way
//! without being decoded: its members stay in their order and keep their text, and the
//! stamp's members are added after them (`_meta` in front, as above).

use std::borrow::Cow;

use bytes::Bytes;
use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::StatelessState;
use crate::dispatch::identity::SERVER_INFO_META;
use crate::jsonrpc::{self, RequestId};
use crate::protocol::answer::{self, Answer};
use crate::protocol::{CallToolResult, Method};

/// The JSON-RPC response carrying `result` to request `id` of `method`, stamped.
pub(crate) fn stamped_response(
    state: &StatelessState,
    method: Method,
    id: &RequestId,
    mut result: Value,
) -> Bytes {
    let Some(members) = result.as_object_mut() else {
        return jsonrpc::encode_response(Some(id), &Ok(result));
    };
    members
        .entry("resultType")
        .or_insert_with(|| json!("complete"));
    let cacheable = method.cacheable();
    if cacheable && members.get("resultType") == Some(&json!("complete")) {
        members.insert("ttlMs".into(), json!(state.core.config.stateless.ttl_ms));
        members.insert(
            "cacheScope".into(),
            json!(state.core.config.stateless.cache_scope.as_str()),
        );
    }
    match members.get_mut("_meta") {
        None => {
            let result = WithMeta {
                meta: state.core.identity.server_info_meta(),
                members,
            };
            return jsonrpc::encode_result(id, &result);
        }
        Some(Value::Object(meta)) => {
            let info = state.core.identity.server_info().clone();
            meta.insert(SERVER_INFO_META.into(), info);
        }
        // A `_meta` that is not an object is the handler's to answer for; it is left as is.
        Some(_) => {}
    }
    jsonrpc::encode_response(Some(id), &Ok(result))
}

/// [`stamped_response`] for any [`Answer`].
pub(crate) fn stamped_answer(
    state: &StatelessState,
    method: Method,
    id: &RequestId,
    answer: Answer,
) -> Bytes {
    let kept = match answer {
        Answer::Value(value) => return stamped_response(state, method, id, value),
        Answer::Tool(result) => {
            let config = &state.core.config.stateless;
            let cacheable = method.cacheable();
            let stamped = StampedTool {
                meta: state.core.identity.server_info_meta(),
                result: &result,
                result_type: "complete",
                ttl_ms: cacheable.then_some(config.ttl_ms),
                cache_scope: cacheable.then(|| config.cache_scope.as_str()),
            };
            return jsonrpc::encode_result(id, &stamped);
        }
        Answer::Text(kept) => kept,
    };
    let Some(members) = answer::members(kept.text()) else {
        return jsonrpc::encode_result(id, &kept.text());
    };
    let mut parts: Vec<(Cow<'_, str>, Part<'_>)> = members
        .into_iter()
        .map(|(key, value)| (key, Part::Text(value)))
        .collect();
    let complete = match parts.iter().find(|(key, _)| key == "resultType") {
        None => {
            parts.push(("resultType".into(), Part::Value(json!("complete"))));
            true
        }
        Some((_, Part::Text(kind))) => is_string(kind, "complete"),
        Some(_) => false,
    };
    if method.cacheable() && complete {
        let config = &state.core.config.stateless;
        set(&mut parts, "ttlMs", Part::Value(json!(config.ttl_ms)));
        let scope = json!(config.cache_scope.as_str());
        set(&mut parts, "cacheScope", Part::Value(scope));
    }
    match parts.iter_mut().find(|(key, _)| key == "_meta") {
        None => parts.insert(
            0,
            (
                "_meta".into(),
                Part::Text(state.core.identity.server_info_meta()),
            ),
        ),
        Some((_, meta)) => {
            let inner = match meta {
                Part::Text(text) => answer::members(text),
                _ => None,
            };
            // A `_meta` that is not an object is the upstream's to answer for, as above.
            if let Some(inner) = inner {
                let mut inner: Vec<(Cow<'_, str>, Part<'_>)> = inner
                    .into_iter()
                    .map(|(key, value)| (key, Part::Text(value)))
                    .collect();
                let info = state.core.identity.server_info().clone();
                set(&mut inner, SERVER_INFO_META, Part::Value(info));
                *meta = Part::Object(inner);
            }
        }
    }
    jsonrpc::encode_result(id, &Part::Object(parts))
}

/// Whether JSON text `text` is the string `expected`.
fn is_string(text: &RawValue, expected: &str) -> bool {
    let quoted = text.get();
    (quoted.len() == expected.len() + 2 && quoted.get(1..quoted.len() - 1) == Some(expected))
        || serde_json::from_str::<String>(quoted).is_ok_and(|s| s == expected)
}

/// Sets member `key` of `parts` to `value`, where it stands or else at the end.
fn set<'a>(parts: &mut Vec<(Cow<'a, str>, Part<'a>)>, key: &'a str, value: Part<'a>) {
    match parts.iter_mut().find(|(k, _)| k == key) {
        Some((_, part)) => *part = value,
        None => parts.push((Cow::Borrowed(key), value)),
    }
}

/// A stamped text result, written member by member.
enum Part<'a> {
    /// As it came.
    Text(&'a RawValue),
    /// Added by the stamp.
    Value(Value),
    /// An object whose members the stamp changed.
    Object(Vec<(Cow<'a, str>, Part<'a>)>),
}

impl Serialize for Part<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Part::Text(text) => text.serialize(serializer),
            Part::Value(value) => value.serialize(serializer),
            Part::Object(members) => {
                let mut map = serializer.serialize_map(Some(members.len()))?;
                for (key, value) in members {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

/// A typed tool result, stamped: it has no `_meta` or `resultType` of its own, so the stamp's
/// members are written around its fields.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StampedTool<'a> {
    #[serde(rename = "_meta")]
    meta: &'a RawValue,
    #[serde(flatten)]
    result: &'a CallToolResult,
    result_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_scope: Option<&'a str>,
}

/// A result object with a pre-serialized `_meta` member written first.
struct WithMeta<'a> {
    meta: &'a RawValue,
    members: &'a Map<String, Value>,
}

impl Serialize for WithMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.members.len() + 1))?;
        map.serialize_entry("_meta", self.meta)?;
        for (key, value) in self.members {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}
