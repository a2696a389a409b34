//! What every 2026-07-28 result carries, added as it is encoded: `resultType`, the server's
//! `serverInfo` in `_meta`, and cache hints where the method's result is cacheable.
//!
//! `serverInfo` is the same for every result, so it is serialized once (by
//! [`ServerIdentity`](crate::dispatch::identity::ServerIdentity)) and written in front of
//! the result's own members when the result has no `_meta` of its own, the usual case:
//! no per-result copy of it is built, serialized and dropped. A result that brings its own
//! `_meta` object gets `serverInfo` inserted into it.

use bytes::Bytes;
use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::StatelessState;
use crate::dispatch::identity::SERVER_INFO_META;
use crate::jsonrpc::{self, RequestId};
use crate::protocol::Method;

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
