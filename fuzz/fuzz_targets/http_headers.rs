//! The header checks of the MCP endpoint (`src/http/headers.rs`): Host and Origin against
//! DNS rebinding, Accept and Content-Type negotiation, `MCP-Protocol-Version`,
//! `Mcp-Session-Id` and `Last-Event-ID`. Each verdict is compared with a plain statement of
//! the rule, so a header that slips through (or a check that panics) is found.
//!
//! Input: the first line is the request target (`/mcp`, or an absolute URI); each later line
//! is one `Name: value` header.

#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use mcp_actor::fuzzing::{HeaderVerdicts, check_headers, header_map, http_section};

const CONFIGURED_HOST: &str = "mcp.internal";
const CONFIGURED_ORIGIN: &str = "https://app.example.com";
const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// `name[:digits]`, with `name` one of `names`, ignoring ASCII case.
fn is_host(text: &str, names: &[&str]) -> bool {
    let lower = text.to_ascii_lowercase();
    names.iter().any(|name| match lower.strip_prefix(name) {
        Some("") => true,
        Some(rest) => rest
            .strip_prefix(':')
            .is_some_and(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())),
        None => false,
    })
}

fn origin_ok(origin: &str, configured: bool) -> bool {
    if configured && origin.eq_ignore_ascii_case(CONFIGURED_ORIGIN) {
        return true;
    }
    match origin.split_once("://") {
        Some(("http" | "https", rest)) => is_host(rest, &LOOPBACK),
        _ => false,
    }
}

/// The first value of `name`, as bytes.
fn first<'a>(pairs: &[(&'a [u8], &'a [u8])], name: &str) -> Option<&'a [u8]> {
    pairs
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
        .map(|(_, v)| *v)
}

fn check(verdicts: &HeaderVerdicts, pairs: &[(&[u8], &[u8])], target: &str, configured: bool) {
    let mut hosts = LOOPBACK.to_vec();
    if configured {
        hosts.push(CONFIGURED_HOST);
    }
    if verdicts.host_and_origin {
        match first(pairs, "host") {
            Some(host) => {
                let host = std::str::from_utf8(host).expect("an unreadable Host was allowed");
                assert!(is_host(host, &hosts), "Host {host:?} was allowed");
            }
            None => {
                if let Some(authority) = target
                    .parse::<http::Uri>()
                    .ok()
                    .and_then(|u| u.authority().map(|a| a.as_str().to_string()))
                {
                    assert!(
                        is_host(&authority, &hosts),
                        "authority {authority:?} was allowed"
                    );
                }
            }
        }
        if let Some(origin) = first(pairs, "origin") {
            let origin = std::str::from_utf8(origin).expect("an unreadable Origin was allowed");
            assert!(
                origin_ok(origin, configured),
                "Origin {origin:?} was allowed"
            );
        }
    }
    assert_eq!(
        verdicts.post_accept,
        verdicts.json_accept && verdicts.get_accept,
        "a POST must accept both reply forms"
    );
    if verdicts.content_type {
        let value = first(pairs, "content-type").expect("no Content-Type passed");
        let value = String::from_utf8_lossy(value);
        let media = value.split(';').next().unwrap_or("").trim();
        assert!(
            media.eq_ignore_ascii_case("application/json"),
            "{value:?} passed as JSON"
        );
    }
    match verdicts.protocol_version {
        Ok(Some(version)) => {
            let value = verdicts.protocol_version_value.as_deref().expect("version");
            assert_eq!(value, version, "{value:?} was read as {version}");
            assert!(
                !verdicts.stateless,
                "a handshake revision was routed to 2026-07-28"
            );
        }
        Ok(None) => assert!(verdicts.protocol_version_value.is_none()),
        Err(()) => assert!(verdicts.protocol_version_value.is_some()),
    }
    for value in [&verdicts.session_id, &verdicts.last_event_id]
        .into_iter()
        .flatten()
    {
        assert_eq!(value.trim(), value, "an untrimmed value");
    }
}

static DEFAULT: LazyLock<mcp_actor::config::HttpSection> =
    LazyLock::new(|| http_section(Vec::new(), Vec::new()));
static CONFIGURED: LazyLock<mcp_actor::config::HttpSection> =
    LazyLock::new(|| http_section(vec![CONFIGURED_HOST.into()], vec![CONFIGURED_ORIGIN.into()]));

fuzz_target!(|data: &[u8]| {
    let mut lines = data.split(|&b| b == b'\n');
    let target = String::from_utf8_lossy(lines.next().unwrap_or(b"/mcp")).into_owned();
    let pairs: Vec<(&[u8], &[u8])> = lines
        .filter_map(|line| {
            let colon = line.iter().position(|&b| b == b':')?;
            let value = &line[colon + 1..];
            let start = value.iter().position(|&b| b != b' ').unwrap_or(value.len());
            Some((&line[..colon], &value[start..]))
        })
        .collect();
    let headers = header_map(&pairs);
    // Only the pairs that made it into the map count for the oracle.
    let kept: Vec<(&[u8], &[u8])> = pairs
        .iter()
        .copied()
        .filter(|(n, v)| {
            http::HeaderName::from_bytes(n).is_ok() && http::HeaderValue::from_bytes(v).is_ok()
        })
        .collect();
    for (config, configured) in [(&*DEFAULT, false), (&*CONFIGURED, true)] {
        let verdicts = check_headers(&headers, &target, config);
        check(&verdicts, &kept, &target, configured);
    }
});
