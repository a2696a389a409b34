//! A POST as the endpoint routes it: the body decoded, the era chosen from the headers and
//! `_meta` (`src/http/post.rs`), and for a 2026-07-28 request the envelope checked against
//! the `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` headers
//! (`src/stateless/envelope.rs`), then its params decoded as the feature methods do
//! (pagination cursors, completion references, resource URIs, tool arguments).
//!
//! Input: `Name: value` header lines, an empty line, then the body.

#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use mcp_actor::features::Features;
use mcp_actor::fuzzing::{StatelessVerdict, check_stateless_post, header_map, sample_features};

static FEATURES: LazyLock<Features> = LazyLock::new(sample_features);

fuzz_target!(|data: &[u8]| {
    let (head, body) = match data.windows(2).position(|w| w == b"\n\n") {
        Some(at) => (&data[..at], &data[at + 2..]),
        None => (&[][..], data),
    };
    let pairs: Vec<(&[u8], &[u8])> = head
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let colon = line.iter().position(|&b| b == b':')?;
            let value = &line[colon + 1..];
            let start = value.iter().position(|&b| b != b' ').unwrap_or(value.len());
            Some((&line[..colon], &value[start..]))
        })
        .collect();
    let headers = header_map(&pairs);
    match check_stateless_post(&headers, body, &FEATURES) {
        StatelessVerdict::Undecodable(e) => assert!(matches!(e.code, -32700 | -32600)),
        StatelessVerdict::Handshake | StatelessVerdict::NotARequest => {}
        StatelessVerdict::Refused(e) => {
            assert!(
                matches!(e.code, -32020 | -32602 | -32022),
                "envelope refused with code {}",
                e.code
            );
        }
        StatelessVerdict::Valid {
            log_level: _,
            progress_token,
        } => {
            let version = headers
                .get("mcp-protocol-version")
                .and_then(|v| v.to_str().ok())
                .map(|v| v.trim_matches([' ', '\t']));
            assert_eq!(
                version,
                Some("2026-07-28"),
                "a request passed without the version"
            );
            assert!(
                headers.get("mcp-method").is_some(),
                "a request passed without Mcp-Method"
            );
            if let Some(token) = progress_token {
                assert!(token.is_string() || token.is_i64() || token.is_u64());
            }
        }
    }
});
