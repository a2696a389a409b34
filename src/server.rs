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

use crate::config::Config;
use crate::context::RequestContext;
use crate::dispatch::identity::ServerIdentity;
use crate::events::{EventSink, ServerEvent, ServerEvents};
use crate::features::prompts::Prompt;
use crate::features::resources::{Resource, ResourceTemplate};
use crate::features::tools::{Tool, ToolError};
use crate::features::{FeatureSet, Features, ListChanges};
use crate::http::AppState;
use crate::http::connections::ConnectionLimits;
use crate::protocol::CallToolResult;
use crate::session::SessionEnv;
use crate::stateless::ModernState;
use crate::stateless::request_state::RequestStateKey;
use crate::stateless::tasks::TaskStore;

/// A configured MCP server, ready to serve.
///
/// It owns nothing another layer imports: it composes each layer's own state (the session
/// registry in `SessionEnv`, the stateless path's key, tasks and permits in
/// `ModernState`) and keeps the three things that span them: the features a reload swaps,
/// the event publisher, and the shutdown signal.
#[derive(Clone)]
pub struct Server {
    app: Arc<AppState>,
    features: Arc<ArcSwap<Features>>,
    events: Arc<ServerEvents>,
    shutdown: CancellationToken,
}

/// Collects what a [`Server`] exposes.
#[must_use]
pub struct ServerBuilder {
    config: Config,
    features: FeatureSet,
    errors: Vec<String>,
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
        }
    }

    /// The axum router of the MCP endpoint, to mount in a larger application.
    pub fn router(&self) -> axum::Router {
        crate::http::router(Arc::clone(&self.app))
    }

    /// Serves on `listener` until Ctrl-C or SIGTERM.
    pub async fn serve(self, listener: TcpListener) -> io::Result<()> {
        self.serve_with_shutdown(listener, shutdown_signal()).await
    }

    /// Serves on `listener` until `shutdown` completes, then ends every session and drains
    /// the connections within `server.shutdown_timeout`. Fails at once on a listener that
    /// [`check_listen_address`](Self::check_listen_address) refuses.
    pub async fn serve_with_shutdown(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        self.check_listen_address(listener.local_addr()?)?;
        let config = &self.app.config;
        let limits = ConnectionLimits {
            mcp_path: Arc::from(config.server.path.as_str()),
            max_connections: config.http.max_connections,
            header_timeout: config.http.header_timeout,
            idle_timeout: config.http.idle_timeout,
            write_timeout: config.http.write_timeout,
            shutdown_timeout: config.server.shutdown_timeout,
        };
        let (sessions, token) = (Arc::clone(&self.app.sessions), self.shutdown.clone());
        let signal = async move {
            shutdown.await;
            tracing::info!(
                sessions = sessions.registry.len(),
                "shutting down: ending every session"
            );
            token.cancel();
            sessions.registry.shutdown_all();
        };
        crate::http::connections::serve(listener, self.router(), limits, signal).await
    }

    /// Refuses an address other machines can reach unless `server.allow_unauthenticated`
    /// is set: without authentication, anyone who reaches the port could run the tools.
    pub fn check_listen_address(&self, addr: std::net::SocketAddr) -> io::Result<()> {
        if addr.ip().is_loopback() || self.app.config.server.allow_unauthenticated {
            return Ok(());
        }
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "refusing to serve on {addr} without authentication: other machines could reach \
                 it and run its tools. Listen on 127.0.0.1, or set \
                 server.allow_unauthenticated = true when a trusted proxy in front \
                 authenticates clients"
            ),
        ))
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
        let features = set
            .into_features(self.app.config.pagination.page_size)
            .map_err(BuildError)?;
        let old = self.features.swap(Arc::new(features));
        let changes = old.list_changes(&self.features.load());
        for (changed, event) in [
            (changes.tools, ServerEvent::ToolsListChanged),
            (changes.resources, ServerEvent::ResourcesListChanged),
            (changes.prompts, ServerEvent::PromptsListChanged),
        ] {
            if changed {
                self.events.publish(event);
            }
        }
        Ok(changes)
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

    /// Records a definition error to report from [`build`](Self::build).
    pub fn error(mut self, message: impl Into<String>) -> Self {
        self.errors.push(message.into());
        self
    }

    pub fn build(self) -> Result<Server, BuildError> {
        let mut errors = self.errors;
        let features = match self
            .features
            .into_features(self.config.pagination.page_size)
        {
            Ok(features) => Some(features),
            Err(mut duplicates) => {
                errors.append(&mut duplicates);
                None
            }
        };
        let Some(features) = features.filter(|_| errors.is_empty()) else {
            return Err(BuildError(errors));
        };
        let modern = &self.config.modern;
        let request_state = RequestStateKey::new(
            modern.request_state_key.as_deref(),
            modern.request_state_ttl,
        )
        .map_err(|e| BuildError(vec![format!("modern.request_state_key: {e}")]))?;
        let config = Arc::new(self.config);
        let features = Arc::new(ArcSwap::from_pointee(features));
        let identity = Arc::new(ServerIdentity::new(&config));
        let shutdown = CancellationToken::new();
        let sessions = Arc::new(SessionEnv::new(
            Arc::clone(&config),
            Arc::clone(&features),
            Arc::clone(&identity),
            shutdown.clone(),
        ));
        let events = Arc::new(ServerEvents::new(
            vec![Arc::clone(&sessions) as Arc<dyn EventSink>],
            config.modern.listen_buffer,
        ));
        let modern = Arc::new(ModernState {
            config: Arc::clone(&config),
            features: Arc::clone(&features),
            identity,
            events: Arc::clone(&events),
            request_state,
            tasks: TaskStore::new(config.tasks.clone()),
            listen_permits: Arc::new(Semaphore::new(config.modern.max_listen_streams)),
            call_permits: Arc::new(Semaphore::new(config.modern.max_in_flight)),
            shutdown: shutdown.clone(),
        });
        let app = Arc::new(AppState {
            config,
            sessions,
            modern,
        });
        Ok(Server {
            app,
            features,
            events,
            shutdown,
        })
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}
