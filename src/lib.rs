//! # mcp-actor
//!
//! A Model Context Protocol server for the Streamable HTTP transport. One endpoint serves the
//! handshake-era revisions (2025-03-26, 2025-06-18, 2025-11-25) through sessions and the
//! stateless revision 2026-07-28 per request. It is built so that the failures of
//! shared-state servers — lost responses under parallel requests, live sessions rejected as
//! "not initialized", deleted sessions coming back, a session stalled by a tool waiting on
//! the client — cannot happen.
//!
//! ## Architecture
//!
//! ```text
//!  HTTP (axum)        session actor (one task per Mcp-Session-Id)     spawned tasks
//!  ───────────        ──────────────────────────────────────────     ─────────────
//!  POST/GET/DELETE ──► mailbox (mpsc) ─► owns: lifecycle, log level, ─► dispatch ─► features
//!        ▲             in-flight requests, pending client requests,      │
//!        └─ oneshot ── subscriptions, SSE streams + replay logs ◄────────┘ Finished / Notify
//! ```
//!
//! Layers, top to bottom; each uses only those below it (`tests/layers.rs` checks every
//! `use crate::` against this order):
//!
//! ```text
//!  reload → server (composition only) → http → { session | stateless } → core → store
//!         → { dispatch | providers | auth | audit } → features → context → events
//!         → telemetry → config
//!         → { protocol | log_format } → jsonrpc → metrics
//!         → { log_limit | keyed_counts | revision }
//! ```
//!
//! Above them all, `src/call/` is the binary's `mcp-actor call` client, not part of the
//! library: it reaches a server over HTTP only, and imports no layer.
//!
//! - `http` is the only layer that knows HTTP: connections and their limits, header checks,
//!   statuses, JSON bodies and SSE framing. Its handlers send a session actor one message and
//!   await one oneshot reply, or hand a 2026-07-28 request to [`stateless`].
//! - [`session`]: the actor handles messages one at a time and never awaits anything slow,
//!   so its state needs no lock. Tool work runs in spawned tasks that report back by message.
//! - [`stateless`] (2026-07-28) runs the same [`dispatch`] per request, without an actor,
//!   and answers with a transport-neutral reply; elicitation and sampling become
//!   `input_required` results there.
//! - [`protocol::Method`] is every method, parsed once; [`dispatch`] routes the feature
//!   methods; [`features`] the MCP feature logic, which knows
//!   nothing of sessions; [`providers`] build features from the configuration.
//! - Server-wide state is split by owner: `core::Core` (what both eras read, one `Arc`
//!   shared), `session::SessionEnv`, `stateless::StatelessState`, the [`events`] publisher, and the features a reload swaps; [`server`](Server) only
//!   composes them.
//! - [`metrics`]: one Prometheus registry per server, recorded into by every layer and
//!   served by the admin listener ([`Server::serve_admin`]).

//! ## Embedding
//!
//! ```no_run
//! use mcp_actor::{CallToolResult, RequestContext, Server, ToolError};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Add {
//!     a: i64,
//!     b: i64,
//! }
//!
//! #[tokio::main]
//! async fn main() -> anyhow::Result<()> {
//!     let server = Server::builder()
//!         .tool("add", "Adds two integers", |ctx: RequestContext, args: Add| async move {
//!             ctx.progress(1.0, Some(1.0), Some("adding")).await;
//!             Ok::<_, ToolError>(CallToolResult::text((args.a + args.b).to_string()))
//!         })
//!         .build()?;
//!     let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//!     server.serve(listener).await?;
//!     Ok(())
//! }
//! ```

pub mod audit;
pub mod auth;
pub mod config;
pub mod context;
mod core;
pub mod dispatch;
pub mod events;
pub mod features;
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing;
mod http;
pub mod jsonrpc;
pub mod keyed_counts;
pub mod log_format;
mod log_limit;
pub mod metrics;
pub mod protocol;
pub mod providers;
pub mod reload;
pub mod revision;
mod server;
pub mod session;
pub mod stateless;
pub mod store;
pub mod telemetry;

pub use config::Config;
pub use context::{ClientRequestError, RequestContext};
pub use events::{ServerEvent, ServerEvents};
pub use features::prompts::Prompt;
pub use features::resources::{Resource, ResourceError, ResourceTemplate};
pub use features::tools::{TaskSupport, Tool, ToolError};
pub use features::{FeatureSet, ListChanges};
pub use metrics::Metrics;
pub use protocol::{
    CallToolResult, Content, GetPromptResult, PromptArgument, PromptMessage, ResourceContents, Role,
};
pub use server::{
    BuildError, Server, ServerBuilder, bind_admin_listener, check_admin_address,
    check_listen_address,
};
