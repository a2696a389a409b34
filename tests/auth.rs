//! Authorization over real HTTP: the binary as an OAuth 2.1 resource server (spec
//! `basic/authorization`, digest in `shared/spec/authorization.md`), with this test playing
//! the authorization server: it generates signing keys, signs access tokens and serves the
//! JWKS on 127.0.0.1.
//!
//! One file per question a deployment asks:
//! - [`challenges`]: who is turned away (401), and how a client finds out where to get a
//!   token (the challenge and the RFC 9728 metadata);
//! - [`access`]: who gets in (JWTs, static tokens, a rotated key) and what scopes allow (403);
//! - [`binding`]: what one principal's state (sessions, `requestState`, tasks,
//!   notifications, the session cap) means to another;
//! - [`boundaries`]: where tokens stop (never forwarded upstream) and where a protected
//!   server may listen;
//! - [`tasks`]: tasks, bound like sessions (a server in process, for a task tool).
//!
//! [`keys`] plays the authorization server and [`fixture`] starts a protected server.

mod common;

// A test crate's root resolves `mod x;` beside itself (tests/x.rs), so the submodules in
// tests/auth/ are named by path.
#[path = "auth/access.rs"]
mod access;
#[path = "auth/binding.rs"]
mod binding;
#[path = "auth/boundaries.rs"]
mod boundaries;
#[path = "auth/challenges.rs"]
mod challenges;
#[path = "auth/fixture.rs"]
mod fixture;
#[path = "auth/keys.rs"]
mod keys;
#[path = "auth/tasks.rs"]
mod tasks;
