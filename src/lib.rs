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
//! - [`http`](crate) handlers check headers, look the session up in the registry (the only
//!   shared map), send its actor one message and await one oneshot reply.
//! - The actor handles messages one at a time and never awaits anything slow, so its state
//!   needs no lock. Tool work runs in spawned tasks that report back by message.
//! - [`dispatch`] and [`features`] hold the MCP feature logic and know nothing of sessions.
//!   The [`stateless`] path (2026-07-28) runs them per request, without an actor, through
//!   the same [`RequestContext`] API; elicitation and sampling become `input_required`
//!   results there.
//!
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

pub mod config;
pub mod context;
pub mod dispatch;
pub mod events;
pub mod features;
mod http;
pub mod jsonrpc;
mod log_limit;
pub mod protocol;
pub mod providers;
pub mod reload;
mod server;
pub mod session;
pub mod stateless;

pub use config::Config;
pub use context::{ClientRequestError, RequestContext};
pub use events::{ServerEvent, ServerEvents};
pub use features::prompts::Prompt;
pub use features::resources::{Resource, ResourceError, ResourceTemplate};
pub use features::tools::{TaskSupport, Tool, ToolError};
pub use features::{FeatureSet, ListChanges};
pub use protocol::{
    CallToolResult, Content, GetPromptResult, PromptArgument, PromptMessage, ResourceContents, Role,
};
pub use server::{BuildError, Server, ServerBuilder};
