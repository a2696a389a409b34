//! Hot reload of the configuration file: on SIGHUP, and on a change of the file when
//! `[reload] watch = true`.
//!
//! A reload reads, validates and builds the whole new configuration first — the same path
//! as startup and `mcp-actor check` — and changes nothing when any of it fails: the error is
//! logged with its `file:line` and the running features stay. Only then are the new features
//! swapped in atomically ([`Server::replace_features`]): calls already running finish on the
//! tools they started with, and every session gets the `list_changed` notifications for the
//! lists that differ. The resource watcher is rebuilt for the new resources.
//!
//! `POST /admin/reload` asks the same task for a reload and gets its errors back. SIGHUP
//! also reopens the audit log, for logrotate.
//!
//! Keys outside the providers (listen address, limits, transport) are fixed at startup;
//! a reload that changes them logs which tables need a restart and leaves them as they were.

use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::config::Config;
use crate::http::admin_api::ReloadAsk;
use crate::metrics::ReloadOutcome;
use crate::providers::{LoadedConfig, ProviderRuntime, ResourceWatcher};
use crate::server::Server;

/// Reloads the configuration of a running server.
pub struct Reloader {
    server: Server,
    path: PathBuf,
    runtime: ProviderRuntime,
    /// The configuration as read at startup (before command-line overrides), to tell which
    /// changed keys need a restart.
    started: Config,
    resources: Option<ResourceWatcher>,
}

impl Reloader {
    pub fn new(
        server: Server,
        path: PathBuf,
        runtime: ProviderRuntime,
        started: Config,
        resources: Option<ResourceWatcher>,
    ) -> Self {
        Reloader {
            server,
            path,
            runtime,
            started,
            resources,
        }
    }

    /// Reloads now. Returns whether the new configuration was taken; either way it counts
    /// in `mcp_config_reloads_total`, as `needs_restart` when some of what changed waits
    /// for a restart.
    pub fn reload(&mut self) -> bool {
        self.reload_answering().is_ok()
    }

    /// Reloads now, as [`reload`](Self::reload) does, and answers what the admin API
    /// shows: the tables waiting for a restart, or why the new file was refused.
    pub fn reload_answering(&mut self) -> Result<Vec<&'static str>, String> {
        let answer = self.try_reload();
        let outcome = match &answer {
            Err(_) => ReloadOutcome::Failed,
            Ok(waiting) if waiting.is_empty() => ReloadOutcome::Ok,
            Ok(_) => ReloadOutcome::NeedsRestart,
        };
        self.server.metrics().config_reloaded(outcome);
        answer
    }

    fn try_reload(&mut self) -> Result<Vec<&'static str>, String> {
        let loaded = LoadedConfig::read(Some(&self.path));
        let built = loaded.and_then(|l| l.build(&self.runtime).map(|p| (l, p)));
        let (loaded, provided) = match built {
            Ok(ok) => ok,
            Err(e) => {
                tracing::error!(
                    "configuration reload rejected; the running configuration stays:\n{e}"
                );
                return Err(e.to_string());
            }
        };
        for warning in &provided.warnings {
            tracing::warn!("{warning}");
        }
        let waiting = tables_needing_restart(&self.started, &loaded.config);
        for table in &waiting {
            tracing::warn!(
                table,
                "[{table}] changed in {}; it takes effect only after a restart",
                self.path.display()
            );
        }
        match self.server.replace_features(provided.features) {
            Ok(changes) => tracing::info!(
                tools_changed = changes.tools,
                resources_changed = changes.resources,
                prompts_changed = changes.prompts,
                "configuration reloaded from {}",
                self.path.display()
            ),
            Err(e) => {
                tracing::error!(
                    "configuration reload rejected; the running configuration stays: {e}"
                );
                return Err(e.to_string());
            }
        }
        // The new watcher starts before the old one stops, so no change falls in between.
        let watcher = ResourceWatcher::start(self.server.events(), provided.watch);
        self.resources = watcher;
        Ok(waiting)
    }
}

/// The tables whose changes a reload cannot apply. Provider defaults (`[command_tools]`
/// timeouts and output caps, `[http_tools]`, `[file_resources]`) apply to the rebuilt
/// tools; the process counts are server-wide state, so their limits need a restart.
fn tables_needing_restart(old: &Config, new: &Config) -> Vec<&'static str> {
    let processes = |c: &Config| {
        (
            c.command_tools.max_processes,
            c.command_tools.max_processes_per_session,
        )
    };
    [
        ("server", old.server != new.server),
        ("admin", old.admin != new.admin),
        ("http", old.http != new.http),
        ("sessions", old.sessions != new.sessions),
        (
            "client_requests",
            old.client_requests != new.client_requests,
        ),
        ("replay", old.replay != new.replay),
        ("pagination", old.pagination != new.pagination),
        ("stateless", old.stateless != new.stateless),
        ("tasks", old.tasks != new.tasks),
        ("reload", old.reload != new.reload),
        ("log", old.log != new.log),
        ("auth", old.auth != new.auth),
        ("gateway", old.gateway != new.gateway),
        ("upstreams", old.upstreams != new.upstreams),
        ("command_tools", processes(old) != processes(new)),
        ("audit", old.audit != new.audit),
    ]
    .into_iter()
    .filter(|(_, changed)| *changed)
    .map(|(table, _)| table)
    .collect()
}

/// Runs reloads for the life of the server: on SIGHUP, and on file changes when
/// `[reload] watch` is set. Without a configuration file, SIGHUP is only logged (its
/// default action would end the process).
pub fn spawn(
    mut reloader: Option<Reloader>,
    watch: bool,
    debounce: Duration,
) -> tokio::task::JoinHandle<()> {
    // Installed before returning, so a SIGHUP right after startup cannot take the default
    // action (ending the process).
    let mut hangup = hangup_signal();
    let (tx, mut changes) = mpsc::channel::<()>(1);
    let file_watcher = match (&reloader, watch) {
        (Some(r), true) => watch_file(&r.path, tx),
        _ => None,
    };
    let mut asked = reloader
        .as_ref()
        .and_then(|r| r.server.admin_reload_requests());
    tokio::spawn(async move {
        let _file_watcher = file_watcher;
        loop {
            tokio::select! {
                Some(()) = hangup.recv() => {
                    crate::audit::reopen_all();
                    match reloader.as_mut() {
                        Some(r) => {
                            tracing::info!("SIGHUP: reloading the configuration");
                            r.reload();
                        }
                        None => tracing::warn!("SIGHUP ignored: the server runs the embedded default configuration, there is no file to reload"),
                    }
                }
                Some(()) = changes.recv() => {
                    // Wait for the file to be quiet, so one save makes one reload.
                    while let Ok(Some(())) = tokio::time::timeout(debounce, changes.recv()).await {}
                    if let Some(r) = reloader.as_mut() {
                        tracing::info!("configuration file changed: reloading");
                        r.reload();
                    }
                }
                Some(ask) = next_ask(&mut asked) => {
                    if let Some(r) = reloader.as_mut() {
                        tracing::info!("admin API: reloading the configuration");
                        let _ = ask.respond_to.send(r.reload_answering());
                    }
                }
                else => break,
            }
        }
    })
}

/// The next reload the admin API asks for; never, without one.
async fn next_ask(asked: &mut Option<mpsc::Receiver<ReloadAsk>>) -> Option<ReloadAsk> {
    match asked {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// Watches the configuration file through its directory (editors replace files by
/// renaming), forwarding changes of that file only.
fn watch_file(path: &Path, tx: mpsc::Sender<()>) -> Option<notify::RecommendedWatcher> {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = absolute.parent()?.to_path_buf();
    let name = absolute.file_name()?.to_os_string();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if event.kind.is_access() {
            return;
        }
        if event
            .paths
            .iter()
            .any(|p| p.file_name() == Some(name.as_os_str()))
        {
            let _ = tx.try_send(());
        }
    })
    .map_err(
        |e| tracing::error!(error = %e, "cannot watch the configuration file; reload with SIGHUP"),
    )
    .ok()?;
    if let Err(e) = watcher.watch(&dir, RecursiveMode::NonRecursive) {
        tracing::error!(dir = %dir.display(), error = %e, "cannot watch the configuration file; reload with SIGHUP");
        return None;
    }
    tracing::info!(file = %absolute.display(), "watching the configuration file for changes");
    Some(watcher)
}

/// SIGHUP as a stream of `()`; never yields where signals do not exist.
fn hangup_signal() -> mpsc::Receiver<()> {
    let (tx, rx) = mpsc::channel(1);
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::hangup()) {
            Ok(mut hangups) => {
                tokio::spawn(async move {
                    while hangups.recv().await.is_some() {
                        if tx.send(()).await.is_err() {
                            break;
                        }
                    }
                });
            }
            Err(e) => tracing::error!(error = %e, "cannot listen for SIGHUP"),
        }
    }
    #[cfg(not(unix))]
    drop(tx);
    rx
}
