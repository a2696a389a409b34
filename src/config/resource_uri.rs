//! The one canonical form of a resource URI. `[auth.scopes] resources` decides on it and
//! `resources/read` resolves it, so a URI the resolver would treat as the file a scope key
//! protects is decided under that key, however the client spelled it.
//!
//! RFC 3986 §6.2.2 normalisation alone is not enough: it keeps `%3B` apart from `;`, while a
//! template variable is percent-decoded whole before a directory resource opens it. So every
//! percent-encoded octet is decoded and the text is encoded again one fixed way: unreserved
//! characters, sub-delimiters, `:`, `@` and `/` literal, everything else as `%XX` in upper
//! case; an encoded `/` is a `/`, as it is to a directory resource. Scheme and authority are
//! lower-cased. What has no single meaning is refused rather than guessed at: `.` and `..`
//! segments and empty segments (a directory resource would fold them away, and
//! `secret%2F..%2F` hides one), decoded bytes that are not UTF-8, text not in Unicode NFC
//! (one name, two spellings), and control characters.

use unicode_normalization::is_nfc;

/// Why a URI has no canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UriError {
    #[error("{0:?} is not an absolute URI (it needs a scheme, as in \"file:///docs/a.md\")")]
    NoScheme(String),
    #[error("{0:?} has a '%' not followed by two hex digits")]
    BadEscape(String),
    #[error("{0:?} percent-decodes to bytes that are not UTF-8")]
    NotUtf8(String),
    #[error("{0:?} is not in Unicode NFC; send the NFC form of the name")]
    NotNfc(String),
    #[error("{0:?} contains a control character")]
    Control(String),
    #[error("{0:?} has a '.' or '..' segment; send the path it stands for")]
    DotSegment(String),
    #[error("{0:?} has an empty path segment ('//' or a trailing '/')")]
    EmptySegment(String),
}

/// The canonical form of the resource URI `uri` (see the module docs).
pub fn canonical_resource_uri(uri: &str) -> Result<String, UriError> {
    canonical(uri, false)
}

/// The canonical form of the part of a URI before a `prefix*` scope key's `*`: as
/// [`canonical_resource_uri`], but the text may end in an empty segment (`file:///docs/`).
pub fn canonical_uri_prefix(prefix: &str) -> Result<String, UriError> {
    canonical(prefix, true)
}

fn canonical(uri: &str, prefix: bool) -> Result<String, UriError> {
    let (scheme, rest) = uri
        .split_once(':')
        .filter(|(s, _)| is_scheme(s))
        .ok_or_else(|| UriError::NoScheme(uri.into()))?;
    let mut out = scheme.to_ascii_lowercase();
    out.push(':');
    let (hier, tail) = match rest.find(['?', '#']) {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    let path = match hier.strip_prefix("//") {
        Some(after) => {
            let end = after.find('/').unwrap_or(after.len());
            out.push_str("//");
            out.push_str(&encode(&decode(uri, &after[..end])?.to_lowercase(), "[]"));
            &after[end..]
        }
        None => hier,
    };
    // Decoded whole, as a template variable is: `%2F` is a `/` like any other.
    let decoded = decode(uri, path)?;
    let segments: Vec<&str> = decoded.split('/').collect();
    let hierarchical = decoded.starts_with('/');
    for (i, segment) in segments.iter().enumerate() {
        if hierarchical && i > 0 {
            let last = i + 1 == segments.len();
            if *segment == "." || *segment == ".." {
                return Err(UriError::DotSegment(uri.into()));
            }
            // A path of "/" alone is a root, not an empty segment.
            if segment.is_empty() && !(last && (prefix || segments.len() == 2)) {
                return Err(UriError::EmptySegment(uri.into()));
            }
        }
        if i > 0 {
            out.push('/');
        }
        out.push_str(&encode(segment, ""));
    }
    if !tail.is_empty() {
        out.push_str(&encode(&decode(uri, tail)?, "?#/"));
    }
    Ok(out)
}

/// RFC 3986 §3.1: a letter, then letters, digits, `+`, `-` and `.`.
fn is_scheme(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// `part` of `uri` with every `%XX` decoded, checked to be text one way only.
fn decode(uri: &str, part: &str) -> Result<String, UriError> {
    let bytes = part.as_bytes();
    if bytes.iter().enumerate().any(|(i, &b)| {
        b == b'%'
            && !(bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    }) {
        return Err(UriError::BadEscape(uri.into()));
    }
    let decoded = percent_encoding::percent_decode(bytes)
        .decode_utf8()
        .map_err(|_| UriError::NotUtf8(uri.into()))?;
    if decoded.chars().any(char::is_control) {
        return Err(UriError::Control(uri.into()));
    }
    if !is_nfc(&decoded) {
        return Err(UriError::NotNfc(uri.into()));
    }
    Ok(decoded.into_owned())
}

/// `text` with everything but unreserved characters, sub-delimiters, `:`, `@` and `also`
/// percent-encoded in upper case.
fn encode(text: &str, also: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let literal =
            c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=:@".contains(c) || also.contains(c);
        if literal {
            out.push(c);
        } else {
            let mut buf = [0; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_one_file_has_one_canonical_form() {
        let plain = "file:///docs/secret/plan.md";
        for spelling in [
            plain,
            "file:///docs/%73ecret/plan.md",
            "FILE:///docs/secret/plan%2Emd",
            "file:///docs/secre%74/plan.md",
            "file:///docs/secret%2Fplan.md",
        ] {
            assert_eq!(
                canonical_resource_uri(spelling).unwrap(),
                plain,
                "{spelling}"
            );
        }
        assert_eq!(
            canonical_resource_uri("Mem://Secret/a%20b;c%3b").unwrap(),
            "mem://secret/a%20b;c;"
        );
        // An encoded '%' stays one: decoding happens once, as the resolver does it.
        assert_eq!(
            canonical_resource_uri("file:///docs/%2573ecret").unwrap(),
            "file:///docs/%2573ecret"
        );
        assert_eq!(
            canonical_resource_uri("test://café/ü").unwrap(),
            "test://caf%C3%A9/%C3%BC"
        );
        assert_eq!(
            canonical_resource_uri("https://x.example/").unwrap(),
            "https://x.example/"
        );
        assert_eq!(
            canonical_uri_prefix("file:///docs/").unwrap(),
            "file:///docs/"
        );
    }

    #[test]
    fn ambiguous_uris_are_refused() {
        for (uri, want) in [
            ("file:///docs/x%2F..%2Fsecret", "DotSegment"),
            ("file:///docs/./secret/plan.md", "DotSegment"),
            ("file:///docs/%2e%2e/secret", "DotSegment"),
            ("file:///docs//secret/plan.md", "EmptySegment"),
            ("file:///docs/secret/", "EmptySegment"),
            ("file:///docs/%ff", "NotUtf8"),
            ("file:///docs/%zz", "BadEscape"),
            ("file:///docs/e\u{301}.md", "NotNfc"),
            ("file:///docs/%00", "Control"),
            ("docs/plan.md", "NoScheme"),
        ] {
            let error = canonical_resource_uri(uri).unwrap_err();
            assert!(format!("{error:?}").starts_with(want), "{uri}: {error:?}");
        }
    }
}
