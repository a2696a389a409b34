//! Bearer authentication on the MCP endpoint (spec `basic/authorization`). With `[auth]`,
//! every POST, GET and DELETE proves its principal before its session is looked up or its
//! body read; 401 and 403 carry the `WWW-Authenticate` challenge that leads a client to
//! the protected resource metadata (RFC 9728), which is served here too.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::Value;

use crate::auth::{AuthError, Authenticator, Principal};
use crate::config::resource_uri::canonical_resource_uri;
use crate::context::Grants;
use crate::http::AppState;
use crate::http::error::HttpError;
use crate::jsonrpc::{Message, RpcError, codes};
use crate::protocol::Method;
use crate::protocol::method::ScopeTable;
use crate::session::SessionOwner;
use crate::stateless::Caller;

/// The root of RFC 9728's well-known paths.
const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

impl AppState {
    /// The principal a request acts for: from its bearer token with `[auth]`, else the one
    /// anonymous principal every request shares.
    pub(crate) async fn principal(&self, headers: &HeaderMap) -> Result<Principal, HttpError> {
        let Some(auth) = &self.auth else {
            return Ok(self.anonymous.clone());
        };
        let value = match headers.get(header::AUTHORIZATION).map(HeaderValue::to_str) {
            None => None,
            Some(Ok(value)) => Some(value),
            Some(Err(_)) => return Err(unauthorized(auth, &AuthError::Malformed)),
        };
        // Boxed: a verification that fetches keys is a large future, and every POST's
        // future would carry its size even where `[auth]` is off.
        Box::pin(auth.authenticate(value))
            .await
            .map_err(|e| unauthorized(auth, &e))
    }

    /// Who starts a session: the principal, with its session cap under `[auth]`.
    pub(crate) fn owner(&self, principal: &Principal) -> SessionOwner {
        SessionOwner {
            key: Arc::clone(&principal.key),
            name: Arc::clone(&principal.name),
            max_sessions: self
                .auth
                .as_ref()
                .map(|a| a.config().max_sessions_per_principal),
        }
    }

    /// Who sends a 2026-07-28 request: the principal, with its caps under `[auth]`.
    pub(crate) fn caller(&self, principal: &Principal) -> Caller {
        let config = self.auth.as_ref().map(|a| a.config());
        Caller {
            key: Arc::clone(&principal.key),
            max_in_flight: config.map(|c| c.max_in_flight_per_principal),
            max_tasks: config.map(|c| c.max_tasks_per_principal),
            max_listen_streams: config.map(|c| c.max_listen_streams_per_principal),
            grants: self.grants(principal),
            traceparent: None,
        }
    }

    /// What `principal` may use under `[auth.scopes]`; lists are filtered with it.
    pub(crate) fn grants(&self, principal: &Principal) -> Grants {
        match &self.auth {
            None => Grants::everything(),
            Some(auth) => Grants::new(
                Arc::clone(&auth.config().scopes),
                Arc::clone(&principal.scopes),
            ),
        }
    }

    /// 403 `insufficient_scope` when any request among `messages` needs a scope the
    /// principal lacks (`[auth.scopes]`); the challenge names every scope that request needs.
    /// A resource is decided on its canonical URI, the one `resources/read` resolves; a URI
    /// without one gets 400, as no read could serve it.
    pub(crate) fn check_scopes<'a>(
        &self,
        principal: &Principal,
        messages: impl IntoIterator<Item = &'a Message>,
    ) -> Result<(), HttpError> {
        let Some(auth) = &self.auth else {
            return Ok(());
        };
        let rules = &auth.config().scopes;
        for message in messages {
            let Message::Request(request) = message else {
                continue;
            };
            let Some(method) = Method::parse(&request.method) else {
                continue;
            };
            for (method, name) in operations(method, request.params.as_ref()) {
                let canonical;
                let name = if method.scope_table() == Some(ScopeTable::Resources) {
                    canonical = canonical_resource_uri(name).map_err(|e| {
                        HttpError::bad_request(RpcError::invalid_params(format!(
                            "{} refused: {e}",
                            request.method
                        )))
                    })?;
                    canonical.as_str()
                } else {
                    name
                };
                let needed = rules.needed(method, name);
                if principal.missing_scopes(needed).is_empty() {
                    continue;
                }
                let scope = needed.join(" ");
                let challenge = format!(
                    "Bearer error=\"insufficient_scope\", scope=\"{scope}\", resource_metadata=\"{}\", \
                     error_description=\"this operation needs the scopes: {scope}\"",
                    auth.metadata_url()
                );
                let message = format!(
                    "Forbidden: {} {name:?} needs the scopes \"{scope}\"; ask the authorization server for a token that grants them",
                    request.method,
                );
                return Err(
                    HttpError::new(StatusCode::FORBIDDEN, codes::SERVER_ERROR, message)
                        .challenge(challenge),
                );
            }
        }
        Ok(())
    }
}

/// What a request does that `[auth.scopes]` may restrict, as (method, name) pairs: the
/// tool, prompt or resource it names, and for `subscriptions/listen` each resource it
/// subscribes to (counted as `resources/subscribe`).
fn operations(method: Method, params: Option<&Value>) -> Vec<(Method, &str)> {
    let text = |key: &str| params.and_then(|p| p.get(key)).and_then(Value::as_str);
    if method == Method::SubscriptionsListen {
        return params
            .and_then(|p| p.pointer("/notifications/resourceSubscriptions"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|uri| (Method::ResourcesSubscribe, uri))
            .collect();
    }
    let field = match method.scope_table() {
        Some(ScopeTable::Tools | ScopeTable::Prompts) => "name",
        Some(ScopeTable::Resources) => "uri",
        None => return Vec::new(),
    };
    vec![(method, text(field).unwrap_or_default())]
}

/// 401 with the challenge: where the metadata is, which scopes exist, and for a token that
/// was sent, why it was refused (RFC 6750 §3).
fn unauthorized(auth: &Authenticator, error: &AuthError) -> HttpError {
    let mut challenge = format!("Bearer resource_metadata=\"{}\"", auth.metadata_url());
    let scopes = &auth.config().scopes_supported;
    if !scopes.is_empty() {
        challenge.push_str(&format!(", scope=\"{}\"", scopes.join(" ")));
    }
    if let Some(code) = error.code() {
        challenge.push_str(&format!(
            ", error=\"{code}\", error_description=\"{}\"",
            quotable(&error.to_string())
        ));
    }
    let message = format!("Unauthorized: {error}");
    HttpError::new(StatusCode::UNAUTHORIZED, codes::SERVER_ERROR, message).challenge(challenge)
}

/// `text` as the inside of a quoted-string a client can parse without unescaping: visible
/// ASCII and spaces, with `"` and `\` replaced.
fn quotable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            ' '..='~' => c,
            _ => '?',
        })
        .collect()
}

/// Adds the protected resource metadata routes (without authentication: a client reads
/// them to learn how to get a token) when `[auth]` is configured: the path-inserted form
/// of the resource, the same form for the endpoint's path when it differs, and the root.
pub(crate) fn metadata_routes(
    router: Router<Arc<AppState>>,
    state: &AppState,
) -> Router<Arc<AppState>> {
    let Some(auth) = &state.auth else {
        return router;
    };
    let endpoint = format!(
        "{WELL_KNOWN}{}",
        state.config.server.path.trim_end_matches('/')
    );
    let paths: BTreeSet<String> = [
        auth.metadata_path().to_string(),
        endpoint,
        WELL_KNOWN.into(),
    ]
    .into_iter()
    .collect();
    paths
        .iter()
        .fold(router, |router, path| router.route(path, get(metadata)))
}

async fn metadata(State(state): State<Arc<AppState>>) -> Response {
    let Some(auth) = &state.auth else {
        return StatusCode::NOT_FOUND.into_response();
    };
    (
        // A public document: browser-based clients read it from another origin.
        [(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")],
        axum::Json(auth.metadata()),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::{operations, quotable};
    use crate::protocol::Method;
    use serde_json::json;

    #[test]
    fn a_listen_stream_is_checked_for_every_resource_it_subscribes_to() {
        let params = json!({ "notifications": { "toolsListChanged": true,
            "resourceSubscriptions": ["file:///a", "file:///secret/b"] } });
        assert_eq!(
            operations(Method::SubscriptionsListen, Some(&params)),
            vec![
                (Method::ResourcesSubscribe, "file:///a"),
                (Method::ResourcesSubscribe, "file:///secret/b")
            ]
        );
        let call = json!({ "name": "deploy" });
        assert_eq!(
            operations(Method::ToolsCall, Some(&call)),
            vec![(Method::ToolsCall, "deploy")]
        );
        assert!(operations(Method::ToolsList, None).is_empty());
    }

    #[test]
    fn error_descriptions_never_break_out_of_their_quotes() {
        assert_eq!(quotable("bad \"kid\" \\ x\r\ny"), "bad 'kid' ' x??y");
    }
}
