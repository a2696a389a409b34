//! [`Server`] and [`ServerBuilder`]: the library's entry point.
//!
//! The builder collects tools, resources and prompts; `build` freezes them into an
//! immutable [`Features`] shared by every request. [`Server::replace_features`] swaps in a
//! new one atomically (configuration reload) and tells every session what changed. `serve`
//! runs the HTTP endpoint on a listener until a shutdown signal, then ends every session so
//! open SSE streams close.

use std::future::Future;
use std::io;
use std::sync::Arc;

use arc_swap::ArcSwap;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::audit::AuditLog;
use crate::auth::{Authenticator, Principal};
use crate::config::Config;
use crate::context::RequestContext;
use crate::core::Core;
use crate::dispatch::identity::ServerIdentity;
use crate::events::{EventSink, ServerEvent, ServerEvents};
use crate::features::prompts::Prompt;
use crate::features::resources::{Resource, ResourceTemplate};
use crate::features::tools::{Tool, ToolError};
use crate::features::{FeatureSet, ListChanges};
use crate::http::AppState;
use crate::http::admin_api::AdminControl;
use crate::http::connections::ConnectionLimits;
use crate::http::limits::EdgeLimits;
use crate::keyed_counts::KeyedCounts;
use crate::metrics::Metrics;
use crate::protocol::CallToolResult;
use crate::providers::upstream::Gateway;
use crate::session::SessionEnv;
use crate::stateless::StatelessState;
use crate::stateless::request_state::RequestStateKey;
use crate::stateless::tasks::TaskStore;

mod bind;
mod drain;
mod swap;
pub use bind::{bind_admin_listener, check_admin_address, check_listen_address};
use drain::{drain_then_shut_down, signals};
use swap::FeatureSwap;

/// A configured MCP server, ready to serve.
///
/// It owns nothing another layer imports: it composes each layer's own state (the session
/// registry in `SessionEnv`, the stateless path's key, tasks and permits in
/// `StatelessState`) and keeps the three things that span them: the features a reload swaps,
/// the event publisher, and the shutdown signal.
#[derive(Clone)]
pub struct Server {
    app: Arc<AppState>,
    events: Arc<ServerEvents>,
    /// Rebuilds `features` on a reload or an upstream's change.
    swap: Arc<FeatureSwap>,
    /// Cancelled on the first signal: no new session or 2026-07-28 request is taken.
    drain: CancellationToken,
    /// Cancelled when the drain ends: every session and stream ends.
    shutdown: CancellationToken,
}

/// Collects what a [`Server`] exposes.
#[must_use]
pub struct ServerBuilder {
    config: Config,
    features: FeatureSet,
    errors: Vec<String>,
    metrics: Option<Arc<Metrics>>,
    /// Where relative paths of `[auth]` (token and JWKS files) resolve.
    config_dir: std::path::PathBuf,
    gateway: Option<Gateway>,
}

/// Why [`ServerBuilder::build`] failed.
#[derive(Debug, thiserror::Error)]
#[error("invalid server definition: {}", .0.join("; "))]
pub struct BuildError(pub Vec<String>);

impl Server {
    pub fn builder() -> ServerBuilder {
        ServerBuilder {
            config: Config::default(),
            features: FeatureSet::default(),
            errors: Vec::new(),
            metrics: None,
            config_dir: std::path::PathBuf::from("."),
            gateway: None,
        }
    }

    /// Fresh metrics for a server of `config`: its node id and the method rows. Made
    /// before the server when something built first records into them (the binary's
    /// provider runtime); hand them to [`ServerBuilder::metrics`].
    pub fn new_metrics(config: &Config) -> Arc<Metrics> {
        let methods = crate::protocol::Method::metric_names();
        Arc::new(Metrics::new(&config.server.node_id, methods))
    }

    /// This server's metrics: what its admin listener serves at `/metrics`.
    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.app.metrics)
    }

    /// The admin API's `POST /admin/reload` requests, for the reload task; `None` after
    /// the first call.
    pub(crate) fn admin_reload_requests(
        &self,
    ) -> Option<tokio::sync::mpsc::Receiver<crate::http::admin_api::ReloadAsk>> {
        self.app.admin.reload_requests()
    }

    /// The axum router of the MCP endpoint, to mount in a larger application.
    pub fn router(&self) -> axum::Router {
        crate::http::router(Arc::clone(&self.app))
    }

    /// Serves on `listener` until Ctrl-C or SIGTERM, then drains (see
    /// [`serve_with_drain`](Self::serve_with_drain)); a second signal stops at once.
    pub async fn serve(self, listener: TcpListener) -> io::Result<()> {
        let (first, second) = signals()?;
        self.serve_with_drain(listener, first, second).await
    }

    /// Serves on `listener` until `shutdown` completes, then drains as
    /// [`serve_with_drain`](Self::serve_with_drain) does.
    pub async fn serve_with_shutdown(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        self.serve_with_drain(listener, shutdown, std::future::pending())
            .await
    }

    /// Serves on `listener`. When `drain` completes the node drains: `/readyz`, new
    /// sessions and new 2026-07-28 requests get 503, while existing sessions keep working
    /// and each ends once nothing of it is in flight. When all have ended (or after
    /// `server.drain_timeout`) every session and stream is shut down, and the connections
    /// close within `server.shutdown_timeout`. When `abort` completes, all of that happens
    /// at once and this returns [`io::ErrorKind::Interrupted`].
    ///
    /// Fails at once on a listener that
    /// [`check_listen_address`](Self::check_listen_address) refuses.
    pub async fn serve_with_drain(
        self,
        listener: TcpListener,
        drain: impl Future<Output = ()> + Send + 'static,
        abort: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        self.check_listen_address(listener.local_addr()?)?;
        let config = &self.app.config;
        let limits = ConnectionLimits {
            mcp_path: Arc::from(config.server.path.as_str()),
            max_connections: config.http.max_connections,
            max_connections_per_ip: config.http.max_connections_per_ip,
            trusted_proxies: config.http.trusted_proxies.clone(),
            header_timeout: config.http.header_timeout,
            idle_timeout: config.http.idle_timeout,
            write_timeout: config.http.write_timeout,
            shutdown_timeout: config.server.shutdown_timeout,
            metrics: Some(self.metrics()),
            overflow: None,
        };
        let app = Arc::clone(&self.app);
        let (draining, shutdown) = (self.drain.clone(), self.shutdown.clone());
        let signal = async move {
            drain.await;
            drain_then_shut_down(&app, &draining, &shutdown).await;
        };
        let shutdown = self.shutdown.clone();
        tokio::select! {
            served = crate::http::connections::serve(listener, self.router(), limits, signal) => served,
            () = abort => {
                tracing::warn!("a second signal: shutting down without draining");
                shutdown.cancel();
                Err(io::Error::new(
                    io::ErrorKind::Interrupted,
                    "stopped by a second signal before the drain finished",
                ))
            }
        }
    }

    /// Serves the admin endpoints (`/metrics`, `/healthz`, `/readyz`) on `listener` until
    /// the server shuts down: through the drain, so `/readyz` answers 503 while it lasts,
    /// and then no longer. Run it beside [`serve`](Self::serve), for example in a task of
    /// its own. Fails at once on a listener that
    /// [`check_admin_address`](Self::check_admin_address) refuses.
    pub async fn serve_admin(self, listener: TcpListener) -> io::Result<()> {
        self.check_admin_address(listener.local_addr()?)?;
        let shutdown = self.shutdown.clone();
        let stop = async move { shutdown.cancelled().await };
        crate::http::admin::serve(listener, Arc::clone(&self.app), stop).await
    }

    /// Refuses an admin address other machines can reach unless
    /// `server.allow_unauthenticated` is set ([`check_admin_address`]).
    pub fn check_admin_address(&self, addr: std::net::SocketAddr) -> io::Result<()> {
        check_admin_address(&self.app.config, addr)
    }

    /// Whether the node is draining (or has shut down).
    pub fn is_draining(&self) -> bool {
        self.drain.is_cancelled()
    }

    /// Loads what `[auth]` verifies JWTs with (the JWKS), so a missing or broken key set
    /// is an error at startup rather than a 401 on every request. Without `[auth.jwt]`,
    /// nothing to do.
    pub async fn prime_auth(&self) -> Result<(), String> {
        match &self.app.auth {
            Some(auth) => auth.prime().await,
            None => Ok(()),
        }
    }

    /// Reaches `[store]` once, so that a node whose store is unreachable stops at start
    /// with the reason. Without `[store]`, nothing to do.
    pub async fn connect_store(&self) -> Result<(), String> {
        if let Some(store) = &self.app.sessions.store {
            store.connect().await?;
            crate::session::watch_moves(&self.app.sessions);
        }
        Ok(())
    }

    /// Refuses an address other machines can reach unless `[auth]` or
    /// `server.allow_unauthenticated` is set ([`check_listen_address`]).
    pub fn check_listen_address(&self, addr: std::net::SocketAddr) -> io::Result<()> {
        check_listen_address(&self.app.config, addr)
    }

    /// Live sessions.
    pub fn session_count(&self) -> usize {
        self.app.sessions.registry.len()
    }

    pub fn config(&self) -> &Config {
        &self.app.config
    }

    /// The publisher of server events, for a watcher or an application that announces
    /// changes on its own (the same path as [`notify`](Self::notify)).
    pub fn events(&self) -> Arc<ServerEvents> {
        Arc::clone(&self.events)
    }

    /// Tells every session about a change: list changes go to each GET stream, resource
    /// updates to the sessions subscribed to that URI.
    pub fn notify(&self, event: ServerEvent) {
        self.events.publish(event);
    }

    /// Replaces everything the server exposes in one atomic swap, then sends every session
    /// the `list_changed` notifications for the lists that differ. Calls already running
    /// finish on the features they started with. Nothing changes when `set` is invalid.
    pub fn replace_features(&self, set: FeatureSet) -> Result<ListChanges, BuildError> {
        // The upstreams' features are not the configuration's: they stay across reloads.
        self.swap
            .replace(set, self.app.sessions.core.gateway.as_ref())
    }
}

impl ServerBuilder {
    /// Uses `config` for identity, limits and transport settings. Its `[[tools]]` entries
    /// are not read here; the binary builds them with `crate::providers`.
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Registers a tool whose arguments deserialize into `A`; its input schema is derived
    /// from `A` with schemars.
    pub fn tool<A, F, Fut>(mut self, name: &str, description: &str, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(RequestContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
    {
        match Tool::typed(name, description, handler) {
            Ok(tool) => self.features.tools.push(tool),
            Err(e) => self.errors.push(e.to_string()),
        }
        self
    }

    /// Registers a prepared [`Tool`] (raw JSON schema, extra descriptor fields).
    pub fn add_tool(mut self, tool: Tool) -> Self {
        self.features.tools.push(tool);
        self
    }

    pub fn resource(mut self, resource: Resource) -> Self {
        self.features.resources.push(resource);
        self
    }

    pub fn resource_template(mut self, template: ResourceTemplate) -> Self {
        self.features.templates.push(template);
        self
    }

    pub fn prompt(mut self, prompt: Prompt) -> Self {
        self.features.prompts.push(prompt);
        self
    }

    /// Adds every tool, resource, template and prompt of `set`.
    pub fn features(mut self, set: FeatureSet) -> Self {
        self.features.tools.extend(set.tools);
        self.features.resources.extend(set.resources);
        self.features.templates.extend(set.templates);
        self.features.prompts.extend(set.prompts);
        self
    }

    /// Where relative paths in the configuration's `[auth]` resolve (default: the working
    /// directory); the binary passes the configuration file's directory.
    pub fn config_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.config_dir = dir.into();
        self
    }

    /// Records into `metrics` (made by [`Server::new_metrics`]) instead of fresh ones.
    pub fn metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Serves the tools of `gateway`'s upstream servers beside the others, and gives each
    /// session its own upstream connections; shutdown stops them all.
    pub fn gateway(mut self, gateway: Gateway) -> Self {
        self.gateway = Some(gateway);
        self
    }

    /// Records a definition error to report from [`build`](Self::build).
    pub fn error(mut self, message: impl Into<String>) -> Self {
        self.errors.push(message.into());
        self
    }

    pub fn build(self) -> Result<Server, BuildError> {
        let mut errors = self.errors;
        let base = self.features.clone();
        let page_size = self.config.pagination.page_size;
        let features = match FeatureSwap::build(self.features, self.gateway.as_ref(), page_size) {
            Ok(features) => Some(features),
            Err(BuildError(mut duplicates)) => {
                errors.append(&mut duplicates);
                None
            }
        };
        let Some(features) = features.filter(|_| errors.is_empty()) else {
            return Err(BuildError(errors));
        };
        let stateless = &self.config.stateless;
        let request_state = RequestStateKey::new(
            stateless.request_state_key.as_deref(),
            stateless.request_state_ttl,
        )
        .map_err(|e| BuildError(vec![format!("stateless.request_state_key: {e}")]))?;
        let auth = match &self.config.auth {
            Some(section) => Some(Arc::new(
                Authenticator::new(section, &self.config_dir)
                    .map_err(|e| BuildError(vec![format!("[auth]: {e}")]))?,
            )),
            None => None,
        };
        let metrics = self
            .metrics
            .unwrap_or_else(|| Server::new_metrics(&self.config));
        let audit = AuditLog::open(
            &self.config.audit,
            &self.config.server.node_id,
            Arc::clone(&metrics),
        )
        .map_err(|e| BuildError(vec![e.to_string()]))?;
        let admin = AdminControl::new(&self.config.admin, &self.config_dir)
            .map_err(|e| BuildError(vec![e]))?;
        let config = Arc::new(self.config);
        let features = Arc::new(ArcSwap::from_pointee(features));
        let identity = Arc::new(ServerIdentity::new(&config));
        let (drain, shutdown) = (CancellationToken::new(), CancellationToken::new());
        let core = Arc::new(Core {
            node_id: Arc::from(config.server.node_id.as_str()),
            config: Arc::clone(&config),
            features: Arc::clone(&features),
            identity,
            drain: drain.clone(),
            shutdown: shutdown.clone(),
            metrics: Arc::clone(&metrics),
            gateway: self.gateway,
            audit,
        });
        let store = crate::store::SessionStore::open(&config.store, Arc::clone(&metrics))
            .map_err(|e| BuildError(vec![e]))?
            .map(Arc::new);
        let sessions = Arc::new(SessionEnv::new(Arc::clone(&core), store));
        let events = Arc::new(ServerEvents::new(
            vec![Arc::clone(&sessions) as Arc<dyn EventSink>],
            config.stateless.listen_buffer,
        ));
        let stateless = Arc::new(StatelessState {
            core: Arc::clone(&core),
            events: Arc::clone(&events),
            request_state,
            tasks: TaskStore::new(
                config.tasks.clone(),
                &config.server.node_id,
                Arc::clone(&metrics),
            )
            .with_store(sessions.store.clone(), config.store.max_task_result),
            listen_permits: Arc::new(Semaphore::new(config.stateless.max_listen_streams)),
            call_permits: Arc::new(Semaphore::new(config.stateless.max_in_flight)),
            principal_calls: KeyedCounts::default(),
            principal_listens: KeyedCounts::default(),
        });
        let app = Arc::new(AppState {
            edge: EdgeLimits::new(&config),
            config,
            sessions,
            stateless,
            metrics,
            auth,
            anonymous: Principal::anonymous(),
            admin: Arc::new(admin),
        });
        let swap = Arc::new(FeatureSwap {
            features: Arc::clone(&features),
            events: Arc::clone(&events),
            base: ArcSwap::from_pointee(base),
            page_size,
        });
        if let Some(gateway) = &core.gateway {
            // Weak: the gateway lives inside the server, and must not keep it alive.
            let weak = Arc::downgrade(&swap);
            gateway.attach(Arc::clone(&events), move |gateway| {
                if let Some(swap) = weak.upgrade() {
                    swap.refresh(gateway);
                }
            });
        }
        Ok(Server {
            app,
            events,
            swap,
            drain,
            shutdown,
        })
    }
}
