//! The admin API on the admin listener: `/admin/sessions` (list, show, end),
//! `/admin/reload`, `/admin/tasks` and `/admin/upstreams`, for an operator who must see or
//! change what a node holds without restarting it. `mcp-actor sessions|reload|tasks` is
//! its client.
//!
//! It is guarded by `[admin] token_env` / `token_file`: with a token, every `/admin/*`
//! request needs `Authorization: Bearer <token>` (compared in constant time), and
//! `/metrics`, `/healthz` and `/readyz` too when `protect_metrics` is set. The listener
//! refuses a non-loopback address without a token (`check_admin_address`). Only these
//! routes take POST and DELETE; their bodies are not read, and are bounded all the same.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Path as UrlPath, RawQuery, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use subtle::ConstantTimeEq;
use tokio::sync::{mpsc, oneshot};

use crate::config::AdminSection;
use crate::http::AppState;
use crate::session::actor::describe::SessionInfo;

/// Bytes of a request body the admin API accepts; it reads none.
const MAX_BODY_BYTES: usize = 4096;
/// Sessions per page, unless `?limit=` asks for fewer (or more, up to [`MAX_PAGE`]).
const DEFAULT_PAGE: usize = 100;
const MAX_PAGE: usize = 1000;
/// How long `POST /admin/reload` waits for the reload task.
const RELOAD_WAIT: Duration = Duration::from_secs(60);

/// A reload asked for by `POST /admin/reload`, answered by the reload task: `Ok` with the
/// tables whose changes wait for a restart, or `Err` with why the new file was refused.
pub(crate) struct ReloadAsk {
    pub respond_to: oneshot::Sender<Result<Vec<&'static str>, String>>,
}

/// What the admin API needs beyond the server's state: its token, and a way to the
/// reload task (set once the binary has started one).
pub(crate) struct AdminControl {
    token: Option<String>,
    protect_metrics: bool,
    reload: OnceLock<mpsc::Sender<ReloadAsk>>,
}

impl AdminControl {
    /// Reads the token `[admin]` names; an unset variable or an unreadable file refuses
    /// to start, rather than leave the API open.
    pub fn new(section: &AdminSection, config_dir: &Path) -> Result<Self, String> {
        let token = match (&section.token_env, &section.token_file) {
            (Some(var), _) => Some(crate::auth::token_from_env(var).ok_or_else(|| {
                format!(
                    "admin.token_env names {var}, which is not set; export it or remove the key"
                )
            })?),
            (None, Some(file)) => {
                let path = config_dir.join(file);
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    format!("admin.token_file: cannot read {}: {e}", path.display())
                })?;
                Some(text.trim_end().to_string())
            }
            (None, None) => None,
        };
        if token.as_deref() == Some("") {
            return Err("the admin token is empty; set a non-empty one".into());
        }
        Ok(AdminControl {
            token,
            protect_metrics: section.protect_metrics,
            reload: OnceLock::new(),
        })
    }

    /// The reload requests of the API, for the reload task to answer. Only the first
    /// call gets them.
    pub fn reload_requests(&self) -> Option<mpsc::Receiver<ReloadAsk>> {
        let (tx, rx) = mpsc::channel(4);
        self.reload.set(tx).ok().map(|()| rx)
    }

    fn admits(&self, path: &str, authorization: Option<&[u8]>) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        if !path.starts_with("/admin/") && !self.protect_metrics {
            return true;
        }
        let presented = authorization.and_then(|v| v.strip_prefix(b"Bearer "));
        presented.is_some_and(|p| bool::from(p.ct_eq(token.as_bytes())))
    }
}

/// The admin router's routes beyond the probes and `/metrics`, with the token check over
/// all of them (`base` included).
pub(crate) fn with_api(base: Router<Arc<AppState>>, state: Arc<AppState>) -> Router {
    base.route("/admin/sessions", get(list_sessions))
        .route(
            "/admin/sessions/{id}",
            get(show_session).delete(end_session),
        )
        .route("/admin/reload", post(reload))
        .route("/admin/tasks", get(list_tasks))
        .route("/admin/upstreams", get(list_upstreams))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            require_token,
        ))
        .with_state(state)
}

async fn require_token(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    if state.admin.admits(request.uri().path(), authorization) {
        return next.run(request).await;
    }
    let mut response = error(
        StatusCode::UNAUTHORIZED,
        "this admin endpoint needs `Authorization: Bearer <token>`, the token of [admin] token_env or token_file",
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer realm=\"mcp-actor admin\""),
    );
    response
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({ "error": message }))).into_response()
}

#[derive(Default)]
struct Page {
    cursor: Option<String>,
    limit: Option<usize>,
    principal: Option<String>,
}

impl Page {
    /// `?cursor=&limit=&principal=`; other parameters are ignored.
    fn parse(query: Option<&str>) -> Result<Page, String> {
        let mut page = Page::default();
        for (key, value) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            match &*key {
                "cursor" => page.cursor = Some(value.into_owned()),
                "principal" => page.principal = Some(value.into_owned()),
                "limit" => {
                    let limit = value.parse().map_err(|_| {
                        format!("limit must be a whole number from 1 to {MAX_PAGE}, not {value:?}")
                    })?;
                    page.limit = Some(limit);
                }
                _ => {}
            }
        }
        Ok(page)
    }
}

/// Sessions ordered by id; `nextCursor` (the last id of the page) asks for the next page.
async fn list_sessions(State(state): State<Arc<AppState>>, RawQuery(query): RawQuery) -> Response {
    let page = match Page::parse(query.as_deref()) {
        Ok(page) => page,
        Err(message) => return error(StatusCode::BAD_REQUEST, &message),
    };
    let limit = page.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE);
    let handles = state.sessions.registry.all();
    let after = page.cursor.as_deref().unwrap_or("");
    let mut sessions: Vec<SessionInfo> = Vec::new();
    let mut next_cursor = None;
    let matching = handles
        .into_iter()
        .filter(|h| *h.id > *after)
        .filter(|h| page.principal.as_deref().is_none_or(|p| *h.owner == *p));
    for handle in matching {
        if sessions.len() == limit {
            next_cursor = sessions.last().map(|s| s.id.clone());
            break;
        }
        // A session that ended meanwhile is simply not listed.
        if let Ok(info) = handle.describe().await {
            sessions.push(info);
        }
    }
    axum::Json(json!({ "sessions": sessions, "nextCursor": next_cursor })).into_response()
}

fn no_session(id: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        &format!("no live session {id}; list them with GET /admin/sessions"),
    )
}

async fn show_session(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
) -> Response {
    let described = match state.sessions.registry.any(&id) {
        Some(handle) => handle.describe().await.ok(),
        None => None,
    };
    match described {
        Some(info) => axum::Json(info).into_response(),
        None => no_session(&id),
    }
}

/// Ends the session as its client's DELETE would: its next request gets 404.
async fn end_session(State(state): State<Arc<AppState>>, UrlPath(id): UrlPath<String>) -> Response {
    let ended = match state.sessions.registry.any(&id) {
        Some(handle) => handle.delete().await.is_ok(),
        None => false,
    };
    if !ended {
        return no_session(&id);
    }
    tracing::info!(session = %id, "session ended by the admin API");
    StatusCode::NO_CONTENT.into_response()
}

async fn reload(State(state): State<Arc<AppState>>) -> Response {
    let Some(reloads) = state.admin.reload.get() else {
        return error(
            StatusCode::CONFLICT,
            "this server runs without a configuration file (--config); there is nothing to reload",
        );
    };
    let (respond_to, answer) = oneshot::channel();
    if reloads.try_send(ReloadAsk { respond_to }).is_err() {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "a reload is already under way; retry shortly",
        );
    }
    match tokio::time::timeout(RELOAD_WAIT, answer).await {
        Ok(Ok(Ok(waiting))) => axum::Json(json!({
            "reloaded": true,
            "needsRestart": waiting,
        }))
        .into_response(),
        Ok(Ok(Err(errors))) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            axum::Json(json!({
                "reloaded": false,
                "error": "the new configuration was refused; the running configuration stays",
                "errors": errors,
            })),
        )
            .into_response(),
        _ => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the reload did not answer in time; see the server's log",
        ),
    }
}

async fn list_tasks(State(state): State<Arc<AppState>>) -> Response {
    let tasks: Vec<Value> = state.stateless.tasks.list_for_admin();
    axum::Json(json!({ "tasks": tasks })).into_response()
}

async fn list_upstreams(State(state): State<Arc<AppState>>) -> Response {
    let upstreams = state
        .sessions
        .core
        .gateway
        .as_ref()
        .map_or_else(Vec::new, |g| g.describe_for_admin());
    axum::Json(json!({ "upstreams": upstreams })).into_response()
}
