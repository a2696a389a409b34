//! mcp-bench: load generator for MCP servers on Streamable HTTP, for the handshake era
//! (2025-11-25 sessions) and the stateless 2026-07-28 revision. Every reply is verified.

mod load;
mod mcp;
mod procfs;
mod sessions;
mod stats;
mod streams;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(name = "mcp-bench", version, about = "Load generator for MCP servers on Streamable HTTP; verifies every reply")]
struct Cli {
    /// Tokio worker threads of the load generator (1 = current-thread runtime, the lowest CPU).
    #[arg(long, default_value_t = 1, global = true)]
    threads: usize,
    /// With --pid: read PID and all its descendants (a gateway and the servers it runs), CPU
    /// and RSS summed over the tree.
    #[arg(long, global = true)]
    tree: bool,
    /// With --tree: the processes that run this program (the file name of argv[0], or of
    /// argv[1] for a script) are the upstream children; their CPU is reported apart
    /// (child_cpu_us_per_op), not in server_cpu_us_per_op.
    #[arg(long, global = true, requires = "tree")]
    child_cmd: Option<String>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// tools/call echo in a loop: S sessions x C workers (legacy) or S*C stateless workers (modern).
    Echo(load::EchoArgs),
    /// 2026-07-28 input_required round trips: call `ask`, answer the elicitation, retry.
    InputRequired(load::InputRequiredArgs),
    /// Handshake-era elicitation round trips: call `ask`, answer elicitation/create by POST.
    Elicit(load::ElicitArgs),
    /// tools/call progress with a progressToken: N progress notifications, then the result.
    Progress(load::ProgressArgs),
    /// Many open streams (GET streams or subscriptions/listen): RSS per stream, list_changed fan-out time.
    Streams(streams::StreamsArgs),
    /// Handshake-era SSE resumption: drop the POST's stream every K events, resume with Last-Event-ID.
    Resume(load::ResumeArgs),
    /// Many idle handshake-era sessions: opens/s, RSS per idle session, a sample checked alive, DELETE all.
    Sessions(sessions::SessionsArgs),
}

/// Options shared by the measured load subcommands.
#[derive(Args, Clone)]
pub struct Common {
    /// The MCP endpoint, e.g. http://127.0.0.1:8080/mcp
    #[arg(long)]
    url: String,
    /// Seconds measured (after the warm-up).
    #[arg(short = 'd', long = "duration", default_value_t = 10.0)]
    duration: f64,
    /// Seconds of warm-up before the measured window (excluded from every figure).
    #[arg(short = 'w', long = "warmup", default_value_t = 2.0)]
    warmup: f64,
    /// PID of the server process: its CPU time (/proc/PID/stat) and RSS (/proc/PID/status).
    #[arg(long)]
    pid: Option<u32>,
    /// Write the figures as one JSON object to this file.
    #[arg(long = "json")]
    json: Option<String>,
    /// Seconds one operation may take before it counts as failed.
    #[arg(long, default_value_t = 30.0)]
    timeout: f64,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum Era {
    /// 2025-11-25: initialize handshake, Mcp-Session-Id.
    Legacy,
    /// 2026-07-28: stateless, per-request _meta envelope.
    Modern,
}

impl Era {
    pub fn name(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }
}

/// Exit codes: 0 all verified, 1 some operation failed or was mismatched, 2 the run could
/// not be set up, 3 the server does not support what the scenario measures.
pub enum Outcome {
    Clean,
    Errors,
    Unsupported(String),
}

fn main() {
    let cli = Cli::parse();
    procfs::set_scope(procfs::Scope { tree: cli.tree, child_cmd: cli.child_cmd.clone() });
    let rt = if cli.threads <= 1 {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(cli.threads).enable_all().build()
    }
    .expect("tokio runtime");
    let result = rt.block_on(async move {
        match cli.cmd {
            Cmd::Echo(a) => load::echo(a).await,
            Cmd::InputRequired(a) => load::input_required(a).await,
            Cmd::Elicit(a) => load::elicit(a).await,
            Cmd::Progress(a) => load::progress(a).await,
            Cmd::Streams(a) => streams::run(a).await,
            Cmd::Resume(a) => load::resume(a).await,
            Cmd::Sessions(a) => sessions::run(a).await,
        }
    });
    // Tasks still blocked on open streams are abandoned, not awaited.
    rt.shutdown_background();
    let code = match result {
        Ok(Outcome::Clean) => 0,
        Ok(Outcome::Errors) => {
            eprintln!("mcp-bench: some operations failed or were mismatched (samples above)");
            1
        }
        Ok(Outcome::Unsupported(reason)) => {
            eprintln!("mcp-bench: not supported: {reason}");
            3
        }
        Err(e) => {
            eprintln!("mcp-bench: {e}");
            2
        }
    };
    std::process::exit(code);
}
