//! `jsonrpc::decode_body`: any POST body decodes to messages or to the JSON-RPC error that
//! answers it (-32700 for bytes that are not JSON, -32600 for JSON that is no message), and
//! what decodes survives re-encoding: decode → encode → decode gives the same messages.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_actor::fuzzing::{
    Body, Message, decode_body, encode_notification, encode_request, encode_response, params_object,
};

/// The message as the server would send it back out.
fn encode(message: &Message) -> Vec<u8> {
    match message {
        Message::Request(r) => encode_request(&r.id, &r.method, r.params.as_ref()).to_vec(),
        Message::Notification(n) => encode_notification(&n.method, n.params.as_ref()).to_vec(),
        Message::Response(r) => encode_response(Some(&r.id), &r.outcome).to_vec(),
    }
}

/// Everything a message carries, comparable.
fn fields(message: &Message) -> String {
    format!("{message:?}")
}

fuzz_target!(|data: &[u8]| {
    let body = match decode_body(data) {
        Ok(body) => body,
        Err(e) => {
            assert!(
                e.code == -32700 || e.code == -32600,
                "decode error with code {}",
                e.code
            );
            return;
        }
    };
    if let Body::Batch(messages) = &body {
        assert!(!messages.is_empty(), "an empty batch decoded");
    }
    for message in body.messages() {
        let params = match message {
            Message::Request(r) => r.params.as_ref(),
            Message::Notification(n) => n.params.as_ref(),
            Message::Response(_) => None,
        };
        if let Some(params) = params {
            assert!(params.is_object() || params.is_array());
            assert_eq!(params_object(Some(params)).is_ok(), params.is_object());
        }
        let encoded = encode(message);
        let again = match decode_body(&encoded) {
            Ok(Body::Single(again)) => again,
            other => panic!("re-encoded message does not decode to one message: {other:?}"),
        };
        assert_eq!(
            fields(message),
            fields(&again),
            "decode → encode → decode changed it"
        );
        assert_eq!(encoded, encode(&again), "encoding is not stable");
    }
});
