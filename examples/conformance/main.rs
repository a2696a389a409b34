//! The server the official MCP conformance suite (`@modelcontextprotocol/conformance`)
//! expects to find, built only on mcp-actor's public library API.
//!
//! ```text
//! cargo run --release --example conformance -- --listen 127.0.0.1:3000
//! npx @modelcontextprotocol/conformance server --url http://127.0.0.1:3000/mcp
//! ```
//!
//! `scripts/conformance.sh` runs every suite against it. The names, texts and fixtures mirror
//! the suite's reference "everything server" (`examples/servers/typescript/everything-server.ts`
//! in the conformance repository), because the scenarios call them by name and some checks
//! compare the payloads. Each feature area lives in its own module:
//!
//! - [`tools`]: one function per `test_*` tool, driving [`mcp_actor::RequestContext`]
//!   (logging, progress, sampling, elicitation, SSE polling);
//! - [`resources`]: the static resources, the watched resource and the URI template;
//! - [`prompts`]: the four prompts and the argument completer;
//! - [`modern`]: what only the 2026-07-28 scenarios call — the stateless diagnostics, the
//!   `input_required` (multi round-trip) tools and prompt, and an `x-mcp-header` tool;
//! - [`tasks`]: the fixtures of the `io.modelcontextprotocol/tasks` extension scenarios.

mod fixtures;
mod modern;
mod prompts;
mod resources;
mod tasks;
mod tools;

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;

use anyhow::Context;
use clap::Parser;
use mcp_actor::{Config, Server};
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(about = "The MCP conformance-suite server, built on the mcp-actor library")]
struct Cli {
    /// Address to listen on. Keep it on loopback: the suite's DNS-rebinding scenario
    /// expects only loopback Host headers to be accepted.
    #[arg(long, default_value = "127.0.0.1:3000")]
    listen: SocketAddr,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();

    let mut config = Config::default();
    config.server.name = "mcp-actor-conformance".into();
    config.server.title = Some("mcp-actor conformance server".into());
    config.server.version = env!("CARGO_PKG_VERSION").into();
    config.server.description =
        Some("Exposes the tools, resources and prompts of the MCP conformance suite".into());
    config.server.listen = cli.listen;

    let builder = Server::builder().config(config);
    let builder = tools::register(builder);
    let builder = resources::register(builder);
    let builder = prompts::register(builder);
    let builder = modern::register(builder);
    let builder = tasks::register(builder);
    let server = builder.build()?;
    // The list-change triggers notify through it.
    let _ = modern::SERVER.set(server.clone());

    let listen = server.config().server.listen;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr()?;
    // Scripts wait for this line, so it is the first thing on stdout.
    let mut stdout = std::io::stdout();
    writeln!(
        stdout,
        "listening on http://{addr}{}",
        server.config().server.path
    )?;
    stdout.flush()?;
    server.serve(listener).await?;
    Ok(())
}
