//! The protocol revisions this server speaks: the three handshake-era ones, served through
//! sessions, and the stateless 2026-07-28, served per request. One type for all four, so
//! that a session's negotiated version, the stateless revision and the `version` label of
//! the request metrics cannot disagree.

use std::fmt;

/// A protocol revision, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Revision {
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
    /// The stateless revision (see `crate::stateless`).
    V2026_07_28,
}

impl Revision {
    /// Every revision, oldest first.
    pub const ALL: [Revision; 4] = [
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
        Revision::V2026_07_28,
    ];

    /// The handshake-era revisions a session may negotiate, newest first: the order used
    /// in error messages.
    pub const HANDSHAKE: [Revision; 3] = [
        Revision::V2025_11_25,
        Revision::V2025_06_18,
        Revision::V2025_03_26,
    ];

    /// The revision answered when a client asks `initialize` for one the server does not
    /// support (spec `basic/lifecycle.mdx`, "Version Negotiation").
    pub const LATEST: Revision = Revision::V2025_11_25;

    /// The revision assumed when a session request carries no `MCP-Protocol-Version`
    /// header and nothing else tells (spec 2025-06-18 `basic/transports.mdx`).
    pub const DEFAULT_WITHOUT_HEADER: Revision = Revision::V2025_03_26;

    /// The stateless revision, served per request without sessions.
    pub const STATELESS: Revision = Revision::V2026_07_28;

    /// A handshake-era revision by its name; `None` for the stateless one, which no
    /// session negotiates, and for anything unknown.
    pub fn parse_handshake(s: &str) -> Option<Self> {
        Self::HANDSHAKE.into_iter().find(|v| v.as_str() == s)
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// Whether this is the stateless revision.
    pub fn is_stateless(self) -> bool {
        self == Self::STATELESS
    }

    /// JSON-RPC batches exist only in 2025-03-26 (removed by the 2025-06-18 changelog).
    pub fn allows_batches(self) -> bool {
        self == Self::V2025_03_26
    }

    /// SSE priming events (id + empty data) are defined from 2025-11-25 on (SEP-1699); older
    /// clients may choke on an empty data field.
    pub fn sends_priming_event(self) -> bool {
        self >= Self::V2025_11_25
    }

    /// The handshake-era revisions as a comma-separated list, for error messages.
    pub fn supported_list() -> String {
        Self::HANDSHAKE.map(Self::as_str).join(", ")
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_only_handshake_revisions_parse_for_a_session() {
        for v in Revision::HANDSHAKE {
            assert_eq!(Revision::parse_handshake(v.as_str()), Some(v));
        }
        assert_eq!(Revision::parse_handshake("2026-07-28"), None);
        assert_eq!(Revision::parse_handshake("2024-11-05"), None);
        assert_eq!(Revision::STATELESS.as_str(), "2026-07-28");
        assert!(Revision::ALL.windows(2).all(|w| w[0] < w[1]));
    }
}
