//! The clap arguments of `mcp-actor sessions|reload|tasks`, and how they reach
//! [`super::admin`]: the admin URL from `--admin`, else from the configuration file.

use std::net::{IpAddr, Ipv4Addr};

use clap::Subcommand;
use mcp_actor::providers::LoadedConfig;

use super::admin::AdminAsk;

/// The admin commands, flattened into the binary's subcommands.
#[derive(Subcommand)]
pub enum AdminCommand {
    /// List, show or end the sessions of a running server (its admin API).
    Sessions(SessionsCommand),
    /// Reload a running server's configuration file; prints its errors when refused.
    Reload(AdminArgs),
    /// List the 2026-07-28 tasks of a running server.
    Tasks(TasksCommand),
}

/// `mcp-actor sessions …`.
#[derive(clap::Args)]
pub struct SessionsCommand {
    #[command(subcommand)]
    pub action: SessionsAction,
    #[command(flatten)]
    pub admin: AdminArgs,
}

/// `mcp-actor tasks …`.
#[derive(clap::Args)]
pub struct TasksCommand {
    #[command(subcommand)]
    pub action: TasksAction,
    #[command(flatten)]
    pub admin: AdminArgs,
}

/// How the admin commands reach the server. The token comes from `MCP_ACTOR_ADMIN_TOKEN`.
#[derive(clap::Args)]
pub struct AdminArgs {
    /// The admin listener, as `http://127.0.0.1:9090`; by default `admin.listen` of
    /// --config (or of the embedded default).
    #[arg(long, global = true)]
    pub admin: Option<String>,
    /// Print the admin API's JSON instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum SessionsAction {
    /// Every live session.
    List {
        /// Only the sessions of this principal.
        #[arg(long)]
        principal: Option<String>,
    },
    /// One session.
    Show { id: String },
    /// End a session; its client's next request gets 404.
    End { id: String },
}

#[derive(Subcommand)]
pub enum TasksAction {
    /// Every task, with its owner and status.
    List,
}

impl SessionsAction {
    pub fn ask(&self) -> AdminAsk {
        match self {
            SessionsAction::List { principal } => AdminAsk::ListSessions {
                principal: principal.clone(),
            },
            SessionsAction::Show { id } => AdminAsk::ShowSession(id.clone()),
            SessionsAction::End { id } => AdminAsk::EndSession(id.clone()),
        }
    }
}

impl TasksAction {
    pub fn ask(&self) -> AdminAsk {
        match self {
            TasksAction::List => AdminAsk::ListTasks,
        }
    }
}

/// Runs an admin command against `--admin`, or the admin listener `config` names (read as
/// `check` reads it), and exits 1 when it fails.
pub fn run(config: Option<&std::path::Path>, command: &AdminCommand) -> anyhow::Result<()> {
    let (args, ask) = match command {
        AdminCommand::Sessions(c) => (&c.admin, c.action.ask()),
        AdminCommand::Reload(admin) => (admin, AdminAsk::Reload),
        AdminCommand::Tasks(c) => (&c.admin, c.action.ask()),
    };
    let base = match &args.admin {
        Some(url) => url.clone(),
        None => {
            let loaded = LoadedConfig::read(config)?;
            let mut listen = loaded.config.admin.listen;
            // A wildcard address is where the server listens, not where to connect.
            if listen.ip().is_unspecified() {
                listen.set_ip(IpAddr::V4(Ipv4Addr::LOCALHOST));
            }
            format!("http://{listen}")
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    if !runtime.block_on(super::admin::run(&base, ask, args.json))? {
        std::process::exit(1);
    }
    Ok(())
}
