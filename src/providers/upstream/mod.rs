//! The gateway: MCP servers configured as `[[upstreams]]`, whose tools are served beside
//! this server's own under a prefix (`fs__read_file`), with calls forwarded to them.
//!
//! **Who owns a connection.** An upstream with `scope = "session"` gets one connection per
//! client session, started on the session's first call to it and owned by that session's
//! actor (through a [`Scope`] the actor holds and lends its handlers): when the session
//! ends, by DELETE, idle timeout, drain or shutdown, the connection and its processes end
//! too. 2026-07-28 requests have no session, so they share one [`Scope`] per principal,
//! which ends after `gateway.principal_idle_ttl` without a call. `scope = "shared"` keeps
//! one connection for the whole server.
//!
//! **What is served.** At startup each upstream is started once with no client
//! capabilities, its tools are listed, and the connection is closed: the catalog. Its tools
//! join the feature set under their prefix, so lists, pagination and `server/discover` show
//! them like any other, and a name that clashes with another tool is a configuration
//! error at the upstream's line. An upstream that cannot be reached at startup serves no
//! tools and is logged; a restart picks it up.
//!
//! **The server-wide state** here: the resolved upstream definitions and their catalogs
//! (fixed after startup), the shared connections, the principals' scopes, the count of
//! upstream processes (`gateway.max_children`), and the tasks that stop processes, which
//! shutdown waits for.

mod admin;
mod catalog;
mod changes;
mod child;
mod error;
mod http;
mod offer;
mod resolve;
mod route;
mod slot;
pub mod supervisor;
mod wire;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use catalog::Catalog;
use child::ChildSpec;
use slot::{Slot, SlotOwner};
use wire::Connection;
pub use wire::UpstreamError;

use crate::config::Config;
use crate::config::upstreams::{GatewaySection, NameFilter, UpstreamScope};
use crate::features::FeatureSet;
use crate::metrics::Metrics;
use crate::protocol::ClientInfo;

use super::ProviderError;

/// How an upstream is reached.
#[derive(Debug, Clone)]
pub(crate) enum UpstreamTransport {
    Stdio(ChildSpec),
    Http(Arc<http::HttpSpec>),
}

/// One configured upstream, resolved: program found, `${ENV}` expanded.
#[derive(Debug)]
pub(crate) struct Upstream {
    pub index: usize,
    pub name: String,
    /// `fs__`, or `""`.
    pub prefix: String,
    pub scope: UpstreamScope,
    pub tools: NameFilter,
    pub transport: UpstreamTransport,
    pub startup_timeout: Duration,
    pub call_timeout: Duration,
}

pub(crate) struct Inner {
    pub config: GatewaySection,
    pub upstreams: Vec<Upstream>,
    /// `gateway.max_children`.
    pub children: Arc<Semaphore>,
    /// The tasks that watch and stop upstream processes; shutdown waits for them.
    pub tracker: TaskTracker,
    pub metrics: Arc<Metrics>,
    /// Cancelled at shutdown: every connection ends.
    pub closed: CancellationToken,
    /// The client of HTTP upstreams: no redirects, no cookies, the configured headers only.
    pub http: http::UpstreamClient,
    /// Connections of `scope = "shared"` upstreams, by upstream index.
    shared: Vec<Slot>,
    shared_owner: SlotOwner,
    /// 2026-07-28 requests' connections, one scope per principal.
    principals: DashMap<Arc<str>, Arc<Scope>>,
    /// What each upstream offers; replaced when it announces a change.
    catalogs: Vec<arc_swap::ArcSwap<Catalog>>,
    /// How the server hears of changes, once it is built.
    hooks: std::sync::OnceLock<changes::Hooks>,
}

/// The upstreams of a server. Cheap to clone.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("upstreams", &self.inner.upstreams.len())
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// Resolves `config.upstreams` (programs found against `base_dir` and `PATH`, `${ENV}`
    /// expanded) and reads each upstream's catalog. `supervisor` is the binary that runs
    /// [`supervisor::supervise`] (the `mcp-actor` binary itself); without one, processes are
    /// stopped by the server alone and a server killed with SIGKILL leaves them running.
    /// Errors name their keys (`upstreams[0].command`).
    pub async fn start(
        config: &Config,
        base_dir: &Path,
        supervisor: Option<PathBuf>,
        metrics: Arc<Metrics>,
    ) -> Result<Gateway, Vec<ProviderError>> {
        let mut upstreams = Vec::new();
        let mut errors = Vec::new();
        for (index, entry) in config.upstreams.iter().enumerate() {
            match resolve::resolve(
                index,
                entry,
                &config.gateway,
                base_dir,
                supervisor.clone(),
                &metrics,
            ) {
                Ok(upstream) => upstreams.push(upstream),
                Err(mut e) => errors.append(&mut e),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let gateway = &config.gateway;
        let closed = CancellationToken::new();
        let http = http::UpstreamClient::new(Duration::from_secs(10))
            .map_err(|e| vec![("upstreams".to_string(), format!("no HTTP client: {e}"))])?;
        let mut inner = Inner {
            config: gateway.clone(),
            children: Arc::new(Semaphore::new(gateway.max_children)),
            tracker: TaskTracker::new(),
            metrics,
            shared: upstreams.iter().map(|_| Slot::default()).collect(),
            shared_owner: SlotOwner {
                closed: closed.clone(),
                children: Arc::new(Semaphore::new(gateway.max_children)),
            },
            closed,
            http,
            principals: DashMap::new(),
            catalogs: Vec::new(),
            hooks: std::sync::OnceLock::new(),
            upstreams,
        };
        let probes = inner.upstreams.iter().map(|u| catalog::read(&inner, u));
        let read = futures_util::future::join_all(probes).await;
        inner.catalogs = read
            .into_iter()
            .map(arc_swap::ArcSwap::from_pointee)
            .collect();
        let inner = Arc::new(inner);
        if !inner.upstreams.is_empty() {
            tokio::spawn(sweep_principals(Arc::downgrade(&inner)));
        }
        Ok(Gateway { inner })
    }

    /// Lets the gateway tell the server: `events` for the upstreams' resource updates, and
    /// `changed` when an upstream's offer changed and the features must be rebuilt.
    pub fn attach(
        &self,
        events: Arc<crate::events::ServerEvents>,
        changed: impl Fn(&Gateway) + Send + Sync + 'static,
    ) {
        let hooks = changes::Hooks {
            events,
            changed: Box::new(changed),
        };
        if self.inner.hooks.set(hooks).is_err() {
            tracing::warn!("a gateway serves one server; a second one is not told of changes");
        }
    }

    /// Whether any upstream is configured.
    pub fn is_empty(&self) -> bool {
        self.inner.upstreams.is_empty()
    }

    /// The upstreams' tools, resources, resource templates and prompts, as they are
    /// served here.
    pub fn features(&self) -> FeatureSet {
        let (resources, templates) = offer::resources(&self.inner);
        FeatureSet {
            tools: catalog::tools(&self.inner),
            resources,
            templates,
            prompts: offer::prompts(&self.inner),
        }
    }

    /// Errors for upstream tools and prompts whose served names, and resources whose URIs,
    /// clash with those of `taken` or with each other's, keyed at the upstream's entry.
    pub fn clashes(&self, taken: &FeatureSet) -> Vec<ProviderError> {
        catalog::clashes(&self.inner, taken)
    }

    /// The scope of a new session, when some upstream is session-scoped.
    pub fn session_scope(&self, client: Arc<ClientInfo>) -> Option<Arc<Scope>> {
        self.has_session_scoped()
            .then(|| Arc::new(Scope::new(&self.inner, client)))
    }

    /// The scope 2026-07-28 requests of `principal` share, when some upstream is
    /// session-scoped. `client` is mirrored to connections this request starts.
    pub fn principal_scope(
        &self,
        principal: &Arc<str>,
        client: Arc<ClientInfo>,
    ) -> Option<Arc<Scope>> {
        if !self.has_session_scoped() {
            return None;
        }
        let scope = self
            .inner
            .principals
            .entry(Arc::clone(principal))
            .or_insert_with(|| Arc::new(Scope::new(&self.inner, client)))
            .clone();
        scope.touch();
        Some(scope)
    }

    fn has_session_scoped(&self) -> bool {
        self.inner
            .upstreams
            .iter()
            .any(|u| u.scope == UpstreamScope::Session)
    }

    /// Ends every connection and waits, up to `limit`, for their processes to be gone.
    pub async fn shutdown(&self, limit: Duration) {
        self.inner.closed.cancel();
        for scope in self.inner.principals.iter() {
            scope.close();
        }
        self.inner.principals.clear();
        self.inner.tracker.close();
        if tokio::time::timeout(limit, self.inner.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("upstream processes still stopping at shutdown");
        }
    }
}

/// Closes principals' scopes that have been idle for `gateway.principal_idle_ttl`.
async fn sweep_principals(gateway: std::sync::Weak<Inner>) {
    loop {
        let Some(inner) = gateway.upgrade() else {
            return;
        };
        let ttl = inner.config.principal_idle_ttl;
        let closed = inner.closed.clone();
        inner.principals.retain(|_, scope| {
            let keep = !scope.idle_for(ttl);
            if !keep {
                scope.close();
            }
            keep
        });
        drop(inner);
        tokio::select! {
            () = tokio::time::sleep((ttl / 4).max(Duration::from_secs(1))) => {}
            () = closed.cancelled() => return,
        }
    }
}

/// The connections one owner (a session, or a principal's 2026-07-28 requests) holds to
/// session-scoped upstreams. Closing it, or dropping its last handle, stops them.
pub struct Scope {
    gateway: Arc<Inner>,
    client: Arc<ClientInfo>,
    slots: Vec<Slot>,
    owner: SlotOwner,
    /// Calls running now, and when the last one ended (ms since `born`).
    busy: std::sync::atomic::AtomicUsize,
    last_used: std::sync::atomic::AtomicU64,
    born: tokio::time::Instant,
}

impl Scope {
    fn new(gateway: &Arc<Inner>, client: Arc<ClientInfo>) -> Scope {
        Scope {
            gateway: Arc::clone(gateway),
            client,
            slots: gateway.upstreams.iter().map(|_| Slot::default()).collect(),
            owner: SlotOwner {
                closed: gateway.closed.child_token(),
                children: Arc::new(Semaphore::new(gateway.config.max_children_per_session)),
            },
            busy: 0.into(),
            last_used: 0.into(),
            born: tokio::time::Instant::now(),
        }
    }

    /// Stops every connection of this scope.
    pub fn close(&self) {
        self.owner.closed.cancel();
    }

    fn touch(&self) {
        let now = self.born.elapsed().as_millis() as u64;
        self.last_used
            .store(now, std::sync::atomic::Ordering::Relaxed);
    }

    fn idle_for(&self, ttl: Duration) -> bool {
        let last = self.last_used.load(std::sync::atomic::Ordering::Relaxed);
        self.busy.load(std::sync::atomic::Ordering::Relaxed) == 0
            && self.born.elapsed().as_millis() as u64 >= last + ttl.as_millis() as u64
    }

    /// Subscribes to `uri` at the upstream that serves it, if one does, in the background:
    /// a failure is logged, and the session's own subscription stands.
    pub fn subscribe(self: &Arc<Self>, uri: &str) {
        let Some(index) = catalog::owner_of(&self.gateway, uri) else {
            return;
        };
        let (scope, uri) = (Arc::clone(self), uri.to_string());
        tokio::spawn(async move {
            let upstream = &scope.gateway.upstreams[index];
            let wait = upstream.call_timeout;
            let conn = match upstream.scope {
                UpstreamScope::Session => scope.connection(upstream, wait).await,
                UpstreamScope::Shared => shared_connection(&scope.gateway, upstream, wait).await,
            };
            let params = serde_json::json!({ "uri": uri });
            let outcome = match conn {
                Ok(conn) => conn
                    .request(
                        "resources/subscribe",
                        Some(params),
                        None,
                        upstream.call_timeout,
                    )
                    .await
                    .map(|_| ()),
                Err(e) => Err(e),
            };
            if let Err(e) = outcome {
                tracing::warn!(upstream = %upstream.name, %uri, error = %e, "subscribing upstream failed");
            }
        });
    }

    async fn connection(
        &self,
        upstream: &Upstream,
        wait: Duration,
    ) -> Result<Connection, UpstreamError> {
        let slot = &self.slots[upstream.index];
        if let Some(conn) = slot.live_connection() {
            return Ok(conn);
        }
        slot.connection(
            &self.gateway,
            upstream,
            &self.client,
            &self.owner,
            changes::UpstreamEvents::for_upstream(&self.gateway, upstream.index),
            wait,
        )
        .await
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        self.owner.closed.cancel();
    }
}

/// A call counted as running in its scope, so an idle sweep leaves the scope alone.
struct Busy<'a>(&'a Scope);

impl<'a> Busy<'a> {
    fn new(scope: &'a Scope) -> Self {
        scope
            .busy
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Busy(scope)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.touch();
        self.0
            .busy
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A client that declares every capability the gateway forwards.
fn forwarding_client() -> ClientInfo {
    ClientInfo {
        implementation: serde_json::Value::Null,
        capabilities: serde_json::json!({ "elicitation": {}, "sampling": {}, "roots": {} }),
        protocol_version: None,
    }
}

/// The one connection of a `scope = "shared"` upstream.
async fn shared_connection(
    gateway: &Arc<Inner>,
    upstream: &Upstream,
    wait: Duration,
) -> Result<Connection, UpstreamError> {
    let slot = &gateway.shared[upstream.index];
    if let Some(conn) = slot.live_connection() {
        return Ok(conn);
    }
    // One connection serves every client, so it declares all that the gateway can forward;
    // each request is still checked against its own client when it comes.
    let client = forwarding_client();
    slot.connection(
        gateway,
        upstream,
        &client,
        &gateway.shared_owner,
        changes::UpstreamEvents::for_upstream(gateway, upstream.index),
        wait,
    )
    .await
}

/// The connection a call to `upstream` uses, from the context's scope or the shared slot,
/// and what is left of the call's `call_timeout` after waiting for it: the timeout covers
/// the whole call, a start (or restart) included.
async fn connection_for(
    gateway: &Arc<Inner>,
    upstream: &Upstream,
    ctx: &crate::context::RequestContext,
) -> Result<(Connection, Option<Arc<Scope>>, Duration), UpstreamError> {
    let began = tokio::time::Instant::now();
    let wait = upstream.call_timeout;
    let (conn, scope) = match upstream.scope {
        UpstreamScope::Shared => (shared_connection(gateway, upstream, wait).await?, None),
        UpstreamScope::Session => {
            let Some(scope) = ctx.scope::<Scope>() else {
                return Err(UpstreamError::Unavailable(format!(
                    "upstream {} is per session, and this request has no session scope",
                    upstream.name
                )));
            };
            (scope.connection(upstream, wait).await?, Some(scope))
        }
    };
    Ok((conn, scope, wait.saturating_sub(began.elapsed())))
}

/// Sends a forwarded request with `left`, what remains of the call's `call_timeout`; a
/// timeout still names the configured `call_timeout`, which is what the operator can change.
async fn request_within(
    conn: &Connection,
    upstream: &Upstream,
    method: &str,
    params: serde_json::Value,
    ctx: &crate::context::RequestContext,
    left: Duration,
) -> Result<Box<serde_json::value::RawValue>, UpstreamError> {
    conn.request_text(method, Some(params), Some(ctx), left)
        .await
        .map_err(|e| match e {
            UpstreamError::TimedOut(_) => UpstreamError::TimedOut(upstream.call_timeout),
            other => other,
        })
}
