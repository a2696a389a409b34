//! `requestState` (`stateless::request_state`): the token comes back from the client, so it
//! is attacker input. No token a client makes up opens (it would need the key), and a token
//! the server sealed opens for its own binding only, with the answers it sealed.
//!
//! Input: `token\nmethod\ntarget\nprincipal\nanswers-json`. The token is opened as sent;
//! then the rest is sealed and opened again, as the retry of an input_required round trip.

#![no_main]

use std::collections::BTreeMap;
use std::sync::LazyLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use mcp_actor::fuzzing::{Binding, RequestStateKey, StateError};
use serde_json::Value;

/// A configured key (32 bytes of 7, base64), as `[stateless] request_state_key` gives one.
static KEY: LazyLock<RequestStateKey> = LazyLock::new(|| {
    RequestStateKey::new(
        Some("BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="),
        Duration::from_secs(600),
    )
    .expect("key")
});

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.splitn(5, '\n');
    let token = lines.next().unwrap_or("");
    let method = lines.next().unwrap_or("tools/call");
    let target = lines.next().unwrap_or("");
    let principal = lines.next().unwrap_or("anonymous");
    let arguments: Value = lines
        .next()
        .and_then(|rest| serde_json::from_str(rest).ok())
        .unwrap_or(Value::Null);
    let binding = Binding::new(method, target, &arguments, principal);

    // A forged token: every failure is one of the four refusals, never an opening.
    match KEY.open(token, &binding) {
        Ok(_) => panic!("a token the server did not seal opened: {token:?}"),
        Err(StateError::Malformed | StateError::Forged) => {}
        Err(e) => panic!("a forged token got past authentication: {e:?}"),
    }

    // The round trip of a real token.
    let answers: BTreeMap<String, Value> = match &arguments {
        Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => BTreeMap::new(),
    };
    let sealed = KEY.seal(binding.clone(), answers.clone());
    assert_eq!(KEY.open(&sealed, &binding), Ok(answers));
    let other = Binding::new(method, target, &arguments, &format!("{principal}!"));
    assert_eq!(KEY.open(&sealed, &other), Err(StateError::Mismatch));
    // The token as the client echoes it, with its last character changed.
    let mut tampered = sealed.clone();
    let last = tampered.pop().unwrap_or('A');
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    assert!(
        KEY.open(&tampered, &binding).is_err(),
        "a tampered token opened"
    );
});
