//! The `mcp-actor` binary: serve a TOML configuration, or check one.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use mcp_actor::{Config, Server, providers};
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(
    version,
    about = "An MCP server (Streamable HTTP) built on one actor per session"
)]
struct Cli {
    /// Configuration file; without it the embedded default configuration is served.
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Address to listen on, overriding `server.listen` from the configuration.
    #[arg(long, short)]
    listen: Option<SocketAddr>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Validate a configuration file and exit (0 when valid).
    Check { file: PathBuf },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if let Some(Command::Check { file }) = cli.command {
        return check(&file);
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let mut config = match &cli.config {
        Some(path) => Config::load(path)?,
        None => Config::parse(
            mcp_actor::config::DEFAULT_CONFIG_TOML,
            "<embedded default config>",
        )?,
    };
    if let Some(listen) = cli.listen {
        config.server.listen = listen;
    }
    let tools = config.tools.clone();
    let server = providers::builtin::register(Server::builder().config(config), &tools).build()?;
    let listen = server.config().server.listen;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr()?;
    let url = format!("http://{addr}{}", server.config().server.path);
    // A closed stdout (a supervisor that stopped reading) must not stop the server.
    let _ = writeln!(
        std::io::stdout(),
        "mcp-actor listening on {url}\n  MCP Inspector: npx @modelcontextprotocol/inspector --cli {url} \
         --transport http --method tools/list\n  Claude Code:   claude mcp add --transport http mcp-actor {url}"
    );
    let _ = std::io::stdout().flush();
    server.serve(listener).await?;
    Ok(())
}

fn check(file: &std::path::Path) -> anyhow::Result<()> {
    match Config::load(file) {
        Ok(config) => {
            let tools = config.tools.clone();
            providers::builtin::register(Server::builder().config(config), &tools).build()?;
            println!("{}: ok", file.display());
            Ok(())
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
