//! JSON-RPC error codes as the specifications fix them, written out here (not imported from
//! the crate) so that a changed constant in the server makes the tests fail. One list for
//! both eras: the handshake-era sessions and the stateless 2026-07-28 revision share the
//! JSON-RPC 2.0 codes and add their own.

// ----- JSON-RPC 2.0 -----

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;

// ----- Handshake-era sessions (2025) -----

/// Implementation-defined: transport refusals (TS-SDK convention).
pub const SERVER_ERROR: i64 = -32000;
/// Implementation-defined: unknown or ended session (TS-SDK convention).
pub const SESSION_NOT_FOUND: i64 = -32001;
/// MCP `resources/read` of an unknown URI (spec `server/resources.mdx`). The 2026-07-28
/// revision answers [`INVALID_PARAMS`] instead.
pub const RESOURCE_NOT_FOUND: i64 = -32002;

// ----- Stateless 2026-07-28 (`shared/spec/stateless-2026-07-28.md`) -----

/// A routing header (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`)
/// missing, duplicated or disagreeing with the body.
pub const HEADER_MISMATCH: i64 = -32020;
/// The request needs a client capability it did not declare.
pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
/// A complete `_meta` envelope claiming a revision the server does not speak.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
