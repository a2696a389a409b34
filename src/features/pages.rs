//! One page of a list result. Cursors are opaque to clients (spec
//! `server/utilities/pagination.mdx`): an offset into the list the caller is shown, which is
//! already filtered by its scopes, so the same caller's pages neither skip nor repeat.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};

use crate::jsonrpc::{RpcError, params_object};

/// One page of a list result, with an opaque `nextCursor` when more remain. The cursor
/// is an offset into `items` as given, already filtered for the caller: pages of one
/// caller neither skip nor repeat, and only the last may be short.
pub(super) fn page<'a>(
    page_size: usize,
    params: Option<&Value>,
    key: &str,
    items: impl Iterator<Item = &'a Value>,
) -> Result<Value, RpcError> {
    let params = params_object(params)?;
    let items: Vec<&Value> = items.collect();
    let total = items.len();
    let start =
        match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(cursor)) => decode_cursor(cursor)
                .filter(|&o| o <= total)
                .ok_or_else(|| {
                    RpcError::invalid_params(format!(
                        "invalid cursor {cursor:?}: use a nextCursor from an earlier page"
                    ))
                })?,
            Some(_) => return Err(RpcError::invalid_params("cursor must be a string")),
        };
    let page: Vec<Value> = items
        .into_iter()
        .skip(start)
        .take(page_size)
        .cloned()
        .collect();
    let end = start + page.len();
    let mut result = Map::new();
    result.insert(key.to_string(), Value::Array(page));
    if end < total {
        result.insert("nextCursor".into(), Value::String(encode_cursor(end)));
    }
    Ok(Value::Object(result))
}

fn encode_cursor(offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("offset:{offset}"))
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    std::str::from_utf8(&bytes)
        .ok()?
        .strip_prefix("offset:")?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    proptest::proptest! {
        #[test]
        fn every_cursor_round_trips(offset in proptest::num::usize::ANY) {
            proptest::prop_assert_eq!(decode_cursor(&encode_cursor(offset)), Some(offset));
        }

        #[test]
        fn any_client_cursor_decodes_to_an_offset_or_nothing(cursor in ".{0,64}") {
            if let Some(offset) = decode_cursor(&cursor) {
                proptest::prop_assert_eq!(decode_cursor(&encode_cursor(offset)), Some(offset));
            }
        }
    }

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        assert_eq!(decode_cursor(&encode_cursor(42)), Some(42));
        assert_eq!(decode_cursor("garbage!"), None);
    }

    #[test]
    fn pages_split_long_lists() {
        let items = [json!(1), json!(2), json!(3)];
        let first = page(2, None, "x", items.iter()).unwrap();
        assert_eq!(first["x"], json!([1, 2]));
        let cursor = first["nextCursor"].clone();
        let second = page(2, Some(&json!({ "cursor": cursor })), "x", items.iter()).unwrap();
        assert_eq!(second["x"], json!([3]));
        assert!(second.get("nextCursor").is_none());
        let bad = page(2, Some(&json!({ "cursor": "nope" })), "x", items.iter());
        assert_eq!(bad.unwrap_err().code, crate::jsonrpc::codes::INVALID_PARAMS);
    }
}
