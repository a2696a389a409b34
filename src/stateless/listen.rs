//! `subscriptions/listen`: the 2026-07-28 replacement for the GET stream and
//! `resources/subscribe` (spec `basic/patterns/subscriptions.mdx`).
//!
//! The stream opens with `notifications/subscriptions/acknowledged` naming what is
//! honoured, then carries only the requested kinds, each tagged with the listen request's id
//! as `subscriptionId`. Events come from the server's one event source, the same broadcast
//! that feeds the sessions' GET streams. A graceful shutdown ends the stream with the final
//! `complete` result. There is no replay: a stream that falls a whole buffer behind ends,
//! and the client listens again and refetches.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, broadcast};

use super::{Refusal, Reply, StatelessState, StatelessTransport};
use crate::events::ServerEvent;
use crate::jsonrpc::{self, Request, RequestId, RpcError};
use crate::keyed_counts::KeyedSlot;
use crate::log_limit::warn_limited;
use crate::protocol::object;

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// What one listen stream asked for.
#[derive(Debug, Default, Clone, PartialEq)]
struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: Vec<String>,
}

impl Filter {
    fn parse(params: Option<&Value>) -> Result<Filter, RpcError> {
        let Some(spec) = params.and_then(|p| p.get("notifications")) else {
            return Ok(Filter::default());
        };
        let flag = |name: &str| spec.get(name).and_then(Value::as_bool).unwrap_or(false);
        let uris = match spec.get("resourceSubscriptions") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|u| u.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    RpcError::invalid_params("resourceSubscriptions must be an array of URIs")
                })?,
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "resourceSubscriptions must be an array of URIs",
                ));
            }
        };
        Ok(Filter {
            tools: flag("toolsListChanged"),
            prompts: flag("promptsListChanged"),
            resources: flag("resourcesListChanged"),
            uris,
        })
    }

    /// The honoured subset, as the acknowledgement reports it: requested kinds only.
    fn honoured(&self) -> Value {
        let mut out = serde_json::Map::new();
        for (on, key) in [
            (self.tools, "toolsListChanged"),
            (self.prompts, "promptsListChanged"),
            (self.resources, "resourcesListChanged"),
        ] {
            if on {
                out.insert(key.into(), json!(true));
            }
        }
        if !self.uris.is_empty() {
            out.insert("resourceSubscriptions".into(), json!(self.uris));
        }
        Value::Object(out)
    }

    /// The notification for `event`, if this stream asked for it.
    fn select(&self, event: &ServerEvent, id: &RequestId) -> Option<jsonrpc::Message> {
        let meta = || object([("_meta", json!({ SUBSCRIPTION_ID: id }))]);
        let (method, params) = match event {
            ServerEvent::ToolsListChanged if self.tools => {
                ("notifications/tools/list_changed", meta())
            }
            ServerEvent::PromptsListChanged if self.prompts => {
                ("notifications/prompts/list_changed", meta())
            }
            ServerEvent::ResourcesListChanged if self.resources => {
                ("notifications/resources/list_changed", meta())
            }
            ServerEvent::ResourceUpdated { uri } if self.covers(uri) => (
                "notifications/resources/updated",
                json!({ "uri": uri, "_meta": { SUBSCRIPTION_ID: id } }),
            ),
            _ => return None,
        };
        Some(jsonrpc::Message::Notification(jsonrpc::Notification {
            method: method.into(),
            params: Some(params),
        }))
    }

    /// A subscription covers its URI and the resources beneath it.
    fn covers(&self, uri: &str) -> bool {
        self.uris.iter().any(|u| {
            uri == u
                || uri
                    .strip_prefix(u.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }
}

/// Opens a listen stream: the acknowledgement, then the events the filter selects.
pub(crate) async fn open(
    state: &Arc<StatelessState>,
    transport: &StatelessTransport<'_>,
    request: Request,
) -> Reply {
    if !transport.accepts_stream {
        return Reply::Refused(Refusal::ListenNeedsEventStream);
    }
    let filter = match Filter::parse(request.params.as_ref()) {
        Ok(f) => f,
        Err(e) => return Reply::error(Some(&request.id), e),
    };
    let Ok(permit) = Arc::clone(&state.listen_permits).try_acquire_owned() else {
        let limit = state.core.config.stateless.max_listen_streams;
        tracing::debug!(
            limit,
            "subscriptions/listen refused: too many listen streams"
        );
        return Reply::Refused(Refusal::TooManyListenStreams { limit });
    };
    let caller = transport.caller;
    let principal_slot = match caller.max_listen_streams {
        Some(limit) => match state.principal_listens.take(&caller.key, limit) {
            Some(slot) => Some(slot),
            None => {
                tracing::debug!(limit, "subscriptions/listen refused: the principal's cap");
                return Reply::Refused(Refusal::PrincipalListening { limit });
            }
        },
        None => None,
    };
    let events = state.events.subscribe();
    let id = request.id;
    let ack = jsonrpc::encode_notification(
        "notifications/subscriptions/acknowledged",
        Some(&json!({ "_meta": { SUBSCRIPTION_ID: id }, "notifications": filter.honoured() })),
    );
    tracing::debug!(subscription = %id, ?filter, "listen stream opened");
    let listening = Listening {
        state: Arc::clone(state),
        filter,
        id,
        events,
        _permit: permit,
        _principal_slot: principal_slot,
        done: false,
    };
    let stream = futures_util::stream::once(async move { ack }).chain(
        futures_util::stream::unfold(listening, Listening::next_message),
    );
    Reply::Stream(stream.boxed())
}

struct Listening {
    state: Arc<StatelessState>,
    filter: Filter,
    id: RequestId,
    events: broadcast::Receiver<Arc<ServerEvent>>,
    /// A slot among `stateless.max_listen_streams`, given back when the stream is dropped.
    _permit: OwnedSemaphorePermit,
    /// A slot among the principal's `auth.max_listen_streams_per_principal`.
    _principal_slot: Option<KeyedSlot>,
    done: bool,
}

impl Listening {
    async fn next_message(mut self) -> Option<(Bytes, Self)> {
        if self.done {
            return None;
        }
        loop {
            tokio::select! {
                event = self.events.recv() => match event {
                    Ok(event) => {
                        if let Some(jsonrpc::Message::Notification(n)) = self.filter.select(&event, &self.id) {
                            return Some((jsonrpc::encode_notification(&n.method, n.params.as_ref()), self));
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        warn_limited!(subscription = %self.id, missed, "listen stream fell behind; ended so the client listens again");
                        return None;
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
                () = self.state.core.shutdown.cancelled() => {
                    self.done = true;
                    let result = json!({ "_meta": { SUBSCRIPTION_ID: self.id } });
                    let body = super::stamp::stamped_response(&self.state, crate::protocol::Method::SubscriptionsListen, &self.id, result);
                    return Some((body, self));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_requested_kinds_pass_the_filter() {
        let f = Filter::parse(Some(&json!({ "notifications": { "toolsListChanged": true, "resourceSubscriptions": ["file:///a"] } }))).unwrap();
        let id = RequestId::Number(3);
        assert!(f.select(&ServerEvent::ToolsListChanged, &id).is_some());
        assert!(f.select(&ServerEvent::PromptsListChanged, &id).is_none());
        assert!(
            f.select(
                &ServerEvent::ResourceUpdated {
                    uri: "file:///a/b".into()
                },
                &id
            )
            .is_some()
        );
        assert!(
            f.select(
                &ServerEvent::ResourceUpdated {
                    uri: "file:///ab".into()
                },
                &id
            )
            .is_none()
        );
        assert_eq!(
            f.honoured(),
            json!({ "toolsListChanged": true, "resourceSubscriptions": ["file:///a"] })
        );
    }
}
