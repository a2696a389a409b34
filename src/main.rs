//! The `mcp-actor` binary: serve a TOML configuration, or check one.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};
use mcp_actor::Server;
use mcp_actor::config::{Config, LogFormat};
use mcp_actor::providers::upstream::{Gateway, supervisor};
use mcp_actor::providers::{
    LoadedConfig, ProviderRuntime, ResourceWatcher, become_child_subreaper,
};
use mcp_actor::reload::{self, Reloader};
use tracing_subscriber::EnvFilter;

mod call;

use call::admin_cli;

// mimalloc, chosen by measurement against the system allocator; see docs/performance.md.
#[global_allocator]
static ALLOCATOR: WordAligned = WordAligned;

/// mimalloc behind `mimalloc::MiMalloc`'s calls, except that a layout aligned to at most a
/// word goes to `mi_malloc`/`mi_zalloc`/`mi_realloc`: every mimalloc block is word-aligned,
/// and mimalloc's aligned entry points take a slower over-allocating path whenever the
/// thread's free list for the size is empty or the size is over 1 KiB (about 1,000
/// instructions per request here, docs/performance.md). Larger alignments (tokio's task
/// cells are 128-byte aligned) keep the aligned calls.
struct WordAligned;

const WORD: usize = std::mem::size_of::<usize>();

// SAFETY: each call forwards to the mimalloc function of the same contract; the unaligned
// ones are used only where mimalloc's word alignment already satisfies the layout.
unsafe impl std::alloc::GlobalAlloc for WordAligned {
    #[inline]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if layout.align() <= WORD {
            unsafe { libmimalloc_sys::mi_malloc(layout.size()).cast() }
        } else {
            unsafe { libmimalloc_sys::mi_malloc_aligned(layout.size(), layout.align()).cast() }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        if layout.align() <= WORD {
            unsafe { libmimalloc_sys::mi_zalloc(layout.size()).cast() }
        } else {
            unsafe { libmimalloc_sys::mi_zalloc_aligned(layout.size(), layout.align()).cast() }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: std::alloc::Layout) {
        unsafe { libmimalloc_sys::mi_free(ptr.cast()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= WORD {
            unsafe { libmimalloc_sys::mi_realloc(ptr.cast(), new_size).cast() }
        } else {
            unsafe {
                libmimalloc_sys::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
            }
        }
    }
}

#[derive(Parser)]
#[command(
    version,
    about = "An MCP server (Streamable HTTP) built on one actor per session"
)]
struct Cli {
    /// Configuration file; without it the embedded default configuration is served.
    #[arg(long, short, global = true)]
    config: Option<PathBuf>,
    /// Address to listen on, overriding `server.listen` from the configuration.
    #[arg(long, short)]
    listen: Option<SocketAddr>,
    /// Serve a non-loopback address without authentication, overriding
    /// `server.allow_unauthenticated` (for a trusted network or an authenticating proxy).
    #[arg(long)]
    allow_unauthenticated: bool,
    /// This node's id in a fleet, overriding `server.node_id`: it prefixes every session
    /// id so a load balancer routes each session to its node. Unique per node, for example
    /// the pod name.
    #[arg(long, env = "MCP_ACTOR_NODE_ID", value_parser = parse_node_id)]
    node_id: Option<String>,
    /// Address of the admin listener (`/metrics`, `/healthz`, `/readyz`), overriding
    /// `admin.listen` and turning it on; port 0 picks a free port.
    #[arg(long)]
    admin_listen: Option<SocketAddr>,
    /// Log lines as `text` or `json` (one object per line), overriding `log.format`.
    #[arg(long)]
    log_format: Option<LogFormat>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Validate a configuration file and exit (0 when valid).
    Check { file: PathBuf },
    /// Call a tool on a running server and print its result; questions the server asks
    /// (elicitation, sampling) are answered from the terminal, one line each.
    Call {
        /// The tool's name, as tools/list shows it.
        tool: String,
        /// Arguments as key=value (a value is JSON when it parses as JSON, else a string).
        args: Vec<String>,
        /// The arguments as one JSON object; key=value pairs are merged over it.
        #[arg(long)]
        json: Option<String>,
        /// The server's MCP endpoint.
        #[arg(long, default_value = "http://127.0.0.1:8080/mcp")]
        url: String,
    },
    /// GET a probe of a running server (a container HEALTHCHECK needs no curl): exit 0 on
    /// a 2xx answer, 1 otherwise.
    Probe {
        /// The probe's URL (plain http).
        #[arg(default_value = "http://127.0.0.1:8080/healthz")]
        url: String,
        /// How long to wait for the answer.
        #[arg(long, default_value = "3s", value_parser = humantime::parse_duration)]
        timeout: std::time::Duration,
    },
    /// `sessions`, `reload` and `tasks`: the admin API's client.
    #[command(flatten)]
    Admin(admin_cli::AdminCommand),
}

/// Expected errors (a busy port, a refused address, a configuration error) print their
/// message alone and exit 1: returning them from `main` would make anyhow print a backtrace
/// under them whenever `RUST_BACKTRACE` is set. A panic still prints its backtrace.
fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    // Not a clap subcommand: its arguments after `--` are another program's, passed as
    // they are (see `upstream::supervisor`).
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == supervisor::SUBCOMMAND) {
        std::process::exit(run_supervisor(&args[2..]));
    }
    let cli = Cli::parse();
    match &cli.command {
        Some(Command::Check { file }) => return runtime(0)?.block_on(async { check(file) }),
        Some(Command::Call {
            tool,
            args,
            json,
            url,
        }) => {
            let request = call::CallRequest {
                url: url.clone(),
                tool: tool.clone(),
                pairs: args.clone(),
                json: json.clone(),
            };
            if !runtime(1)?.block_on(call::call(request))? {
                std::process::exit(1);
            }
            return Ok(());
        }
        Some(Command::Probe { url, timeout }) => {
            return runtime(1)?.block_on(call::probe(url, *timeout));
        }
        Some(Command::Admin(command)) => return admin_cli::run(cli.config.as_deref(), command),
        None => {}
    }
    let loaded = LoadedConfig::read(cli.config.as_deref())?;
    let otel_env = mcp_actor::telemetry::ExporterEnv::capture();
    withhold_token_env(&loaded);
    // Before the runtime: the exporter runs on a thread of its own.
    let telemetry = mcp_actor::telemetry::start(&loaded.config.telemetry, &otel_env)?;
    init_logging(cli.log_format.unwrap_or(loaded.config.log.format));
    // Process-wide, so set once here, before any command tool runs: orphaned descendants of
    // command tools re-parent to this process, which kills and reaps them (see
    // `providers::become_child_subreaper`). `check` runs no command, so it skips this.
    if let Err(e) = become_child_subreaper() {
        tracing::warn!(error = %e, "cannot become a child subreaper; processes a command tool detaches may outlive it");
    }
    let runtime = runtime(loaded.config.server.worker_threads)?;
    let served = runtime.block_on(serve(cli, loaded));
    // A blocking read stuck in a hung filesystem must not hold the exit: the server has
    // drained already, so whatever still runs is abandoned.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    served
}

/// Takes the static tokens' and the admin token's `token_env` variables, those
/// `[store] url` names and the OTLP exporter's header variables (an API key, often), out of
/// the environment, which every
/// child (stdio upstreams, command tools without `env_clear`) inherits; the server keeps
/// their values in memory (`auth::withhold_token_env`).
fn withhold_token_env(loaded: &LoadedConfig) {
    let admin = loaded.config.admin.token_env.as_deref();
    let admin = admin.and_then(mcp_actor::auth::withhold_env_var);
    let store = mcp_actor::store::env_vars(&loaded.config.store);
    let store = store
        .iter()
        .filter_map(|v| mcp_actor::auth::withhold_env_var(v));
    let otel = mcp_actor::telemetry::SECRET_VARS
        .iter()
        .filter_map(|v| mcp_actor::auth::withhold_env_var(v));
    let vars = mcp_actor::auth::withhold_token_env(loaded.config.auth.as_ref());
    for var in vars.into_iter().chain(admin).chain(store).chain(otel) {
        // SAFETY: `remove_var` races only with another thread reading or writing the
        // environment. This runs in `main` before the tokio runtime is built, the first
        // thread this process starts (nothing before it spawns one: argument parsing and
        // reading the configuration file are on this thread), so no other thread exists.
        unsafe { std::env::remove_var(&var) };
    }
}

/// Logs to standard error, filtered by `RUST_LOG` (default `info`).
fn init_logging(format: LogFormat) {
    use mcp_actor::log_format::{JsonEvents, TextEvents, TextFields, replace_request_span};
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // The formatters show each request's fields where its span's were, so no request opens
    // one (a span costs a request several thousand instructions, logged in or not).
    replace_request_span();
    match format {
        // The event's fields at the top level, as log shippers index them, and the request's
        // (node, session, method, target, request id, version) in a `span` object, where
        // `target` does not clash with the event's.
        LogFormat::Json => builder
            .fmt_fields(tracing_subscriber::fmt::format::JsonFields::new())
            .with_ansi(false)
            .event_format(JsonEvents::default())
            .init(),
        // Colour only on a terminal, and never when NO_COLOR is set (no-color.org): a log
        // file or a collector must not receive escape codes.
        // `TextFields`: the default's text, at a fraction of its cost.
        LogFormat::Text => builder
            .fmt_fields(TextFields)
            .with_ansi(
                std::io::IsTerminal::is_terminal(&std::io::stderr())
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
            )
            .event_format(TextEvents::default())
            .init(),
    }
}

fn parse_node_id(id: &str) -> Result<String, String> {
    mcp_actor::config::check_node_id(id)
        .map(|()| id.to_string())
        .map_err(|e| format!("a node id {e}"))
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
    config.server.allow_unauthenticated |= cli.allow_unauthenticated;
    if let Some(node_id) = cli.node_id {
        config.server.node_id = node_id;
    }
    // Nobody chose the admin address when neither the file nor a flag names one: only then
    // may a busy port mean another one (`bind_admin_listener`). An address written in the
    // file counts as chosen even when it is the default's.
    let admin_is_default = cli.admin_listen.is_none() && !loaded.sets("admin", "listen");
    if let Some(admin) = cli.admin_listen {
        (config.admin.listen, config.admin.enabled) = (admin, true);
    }
    // Before anything slow (upstreams take seconds to start): a refused or busy address
    // fails at once.
    let listener = bind_endpoint(&config).await?;
    let admin = bind_admin(&config, admin_is_default).await?;
    let metrics = Server::new_metrics(&config);
    let runtime = ProviderRuntime::with_metrics(&config, Arc::clone(&metrics))?;
    let provided = loaded.build(&runtime)?;
    for warning in &provided.warnings {
        tracing::warn!("{warning}");
    }
    // Each upstream is started once to read what it offers; this binary supervises their
    // processes itself (`upstream-supervisor`), so they end even if it is killed.
    let supervisor = std::env::current_exe().ok();
    let gateway = Gateway::start(&config, loaded.base_dir(), supervisor, Arc::clone(&metrics))
        .await
        .map_err(|errors| loaded.locate(errors))?;
    let clashes = gateway.clashes(&provided.features);
    if !clashes.is_empty() {
        gateway.shutdown(std::time::Duration::from_secs(5)).await;
        return Err(loaded.locate(clashes).into());
    }
    let (watch, debounce) = (config.reload.watch, config.reload.debounce);
    let server = Server::builder()
        .config(config)
        .config_dir(loaded.base_dir())
        .metrics(metrics)
        .features(provided.features)
        .gateway(gateway)
        .build()?;
    server
        .prime_auth()
        .await
        .map_err(|e| anyhow::anyhow!("[auth]: {e}"))?;
    server
        .connect_store()
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let resources = ResourceWatcher::start(server.events(), provided.watch);
    let reloader = cli
        .config
        .clone()
        .map(|path| Reloader::new(server.clone(), path, runtime, loaded.config, resources));
    reload::spawn(reloader, watch, debounce);
    raise_descriptor_limit(server.config().http.max_connections);
    let addr = listener.local_addr()?;
    let url = format!("http://{}{}", reachable(addr), server.config().server.path);
    let everywhere = if addr.ip().is_unspecified() {
        format!(
            "\n  (listening on every interface, port {}; remote clients need their Host name in http.allowed_hosts)",
            addr.port()
        )
    } else {
        String::new()
    };
    let admin_url = match &admin {
        Some(admin) => format!("http://{}/metrics", reachable(admin.local_addr()?)),
        None => "disabled ([admin] enabled = false)".to_string(),
    };
    // A closed stdout (a supervisor that stopped reading) must not stop the server.
    let _ = writeln!(
        std::io::stdout(),
        "mcp-actor listening on {url}{everywhere}\n  MCP Inspector: npx -y @modelcontextprotocol/inspector@2.12.0 --cli {url} \
         --transport http --method tools/list   (Node 20 works; npm warns EBADENGINE below 22.19)\n  Claude Code:   claude mcp add --transport http mcp-actor {url}\n  admin: {admin_url}"
    );
    let _ = std::io::stdout().flush();
    if let Some(admin) = admin {
        let server = server.clone();
        tokio::spawn(async move {
            if let Err(e) = server.serve_admin(admin).await {
                tracing::error!(error = %e, "the admin listener stopped");
            }
        });
    }
    server.serve(listener).await?;
    Ok(())
}

/// Binds the MCP endpoint's listener (`server.listen`, `--listen`).
async fn bind_endpoint(config: &Config) -> anyhow::Result<tokio::net::TcpListener> {
    let listen = config.server.listen;
    mcp_actor::check_listen_address(config, listen)?;
    tokio::net::TcpListener::bind(listen).await.with_context(|| {
        format!(
            "cannot listen on {listen}; choose another address with --listen, for example \
             `mcp-actor --listen 127.0.0.1:9000` (through cargo: `cargo run --release -- --listen 127.0.0.1:9000`)"
        )
    })
}

/// Binds the admin listener (`[admin]`, `--admin-listen`), or `None` when it is off.
async fn bind_admin(
    config: &Config,
    is_default: bool,
) -> anyhow::Result<Option<tokio::net::TcpListener>> {
    let admin = &config.admin;
    if !admin.enabled {
        return Ok(None);
    }
    let listen = admin.listen;
    mcp_actor::check_admin_address(config, listen)?;
    let listener = mcp_actor::bind_admin_listener(listen, is_default).await;
    let listener = listener.with_context(|| {
        format!(
            "cannot listen on {listen} for the admin endpoints (/metrics, /healthz, /readyz); \
             choose another address with --admin-listen (port 0 picks a free one), or set \
             [admin] enabled = false"
        )
    })?;
    Ok(Some(listener))
}

/// An address a client on this machine can use: the server's own Host check refuses
/// `0.0.0.0` and `[::]`, so those are shown as their loopback counterparts.
fn reachable(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::from((Ipv4Addr::LOCALHOST, addr.port()))
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::from((Ipv6Addr::LOCALHOST, addr.port()))
        }
        _ => addr,
    }
}

/// Raises the soft limit on open files to the hard one, as most servers do: the usual soft
/// limit of 1024 is far below `http.max_connections`. Warns when even the hard limit is too
/// low for the configured connections.
fn raise_descriptor_limit(max_connections: usize) {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return;
    };
    let limit = if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        hard
    } else {
        soft
    };
    // Descriptors beside the connections: listener, files, command tools, upstream sockets.
    let needed = max_connections as u64 + 256;
    if limit < needed {
        tracing::warn!(
            open_files_limit = limit,
            max_connections,
            "the open-file limit is below http.max_connections + 256; raise it (ulimit -n) or lower http.max_connections"
        );
    }
}

/// Everything startup would do short of listening: parse, validate, build every provider.
/// Warnings go to stderr and do not change the exit status.
fn check(file: &std::path::Path) -> anyhow::Result<()> {
    match LoadedConfig::read_and_build(file) {
        Ok((loaded, provided)) => {
            // Warnings do not fail the check: the server starts without those tools.
            for warning in &provided.warnings {
                eprintln!("warning: {warning}");
            }
            let config = loaded.config;
            // The refusals the server makes at startup, so `check` passes no file it refuses.
            mcp_actor::check_listen_address(&config, config.server.listen)?;
            if config.admin.enabled {
                mcp_actor::check_admin_address(&config, config.admin.listen)?;
            }
            Server::builder()
                .config(config)
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

/// `mcp-actor upstream-supervisor PARENT_PID GRACE_MS -- PROGRAM ARGS...`: run by the
/// gateway for each stdio upstream, never by hand.
fn run_supervisor(args: &[std::ffi::OsString]) -> i32 {
    let number = |a: Option<&std::ffi::OsString>| a.and_then(|a| a.to_str()?.parse::<u64>().ok());
    let (Some(parent), Some(grace)) = (number(args.first()), number(args.get(1))) else {
        eprintln!(
            "usage: mcp-actor {} PARENT_PID GRACE_MS -- PROGRAM [ARGS...]",
            supervisor::SUBCOMMAND
        );
        return 2;
    };
    let command = match args.get(2) {
        Some(dashes) if dashes == "--" => &args[3..],
        _ => &args[2..],
    };
    let Ok(parent) = u32::try_from(parent) else {
        return 2;
    };
    supervisor::supervise(parent, std::time::Duration::from_millis(grace), command)
}
