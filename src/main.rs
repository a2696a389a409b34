//! The `mcp-actor` binary: serve a TOML configuration, or check one.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use mcp_actor::Server;
use mcp_actor::providers::{
    LoadedConfig, ProviderRuntime, ResourceWatcher, become_child_subreaper,
};
use mcp_actor::reload::{self, Reloader};
use tracing_subscriber::EnvFilter;

// Chosen by measurement against the system allocator; see docs/performance.md.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if let Some(Command::Check { file }) = &cli.command {
        return runtime(0)?.block_on(async { check(file) });
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    // Process-wide, so set once here, before any command tool runs: orphaned descendants of
    // command tools re-parent to this process, which kills and reaps them (see
    // `providers::become_child_subreaper`). `check` runs no command, so it skips this.
    if let Err(e) = become_child_subreaper() {
        tracing::warn!(error = %e, "cannot become a child subreaper; processes a command tool detaches may outlive it");
    }
    let loaded = LoadedConfig::read(cli.config.as_deref())?;
    runtime(loaded.config.server.worker_threads)?.block_on(serve(cli, loaded))
}

/// The async runtime: `threads` workers, or one per core when 0 (`server.worker_threads`).
fn runtime(threads: usize) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if threads > 0 {
        builder.worker_threads(threads);
    }
    builder.enable_all().build()
}

async fn serve(cli: Cli, loaded: LoadedConfig) -> anyhow::Result<()> {
    let mut config = loaded.config.clone();
    if let Some(listen) = cli.listen {
        config.server.listen = listen;
    }
    let runtime = ProviderRuntime::new(&config)?;
    let provided = loaded.build(&runtime)?;
    for warning in &provided.warnings {
        tracing::warn!("{warning}");
    }
    let (watch, debounce) = (config.reload.watch, config.reload.debounce);
    let server = Server::builder()
        .config(config)
        .features(provided.features)
        .build()?;
    let resources = ResourceWatcher::start(server.clone(), provided.watch);
    let reloader = cli
        .config
        .clone()
        .map(|path| Reloader::new(server.clone(), path, runtime, loaded.config, resources));
    reload::spawn(reloader, watch, debounce);
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

/// Everything startup would do short of listening: parse, validate, build every provider.
fn check(file: &std::path::Path) -> anyhow::Result<()> {
    let built = LoadedConfig::read(Some(file)).and_then(|loaded| {
        let runtime = ProviderRuntime::new(&loaded.config)?;
        loaded.build(&runtime).map(|provided| (loaded, provided))
    });
    match built {
        Ok((loaded, provided)) => {
            // Warnings do not fail the check: the server starts without those tools.
            for warning in &provided.warnings {
                eprintln!("warning: {warning}");
            }
            Server::builder()
                .config(loaded.config)
                .features(provided.features)
                .build()?;
            println!("{}: ok", file.display());
            Ok(())
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
