//! The actor's `handle` driven by messages, synchronously: what it answers, where it
//! sends it, and when it stops. No HTTP and no registry lookups are involved.

use std::sync::Arc;

use arc_swap::ArcSwap;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::{Flow, SessionActor};
use crate::config::Config;
use crate::dispatch::identity::ServerIdentity;
use crate::events::ServerEvent;
use crate::features::FeatureSet;
use crate::jsonrpc::{Message, Notification, Request, RequestId};
use crate::protocol::{ClientInfo, Revision};
use crate::session::messages::{OpenStreamMsg, PostMsg, PostOutcome, SessionMsg};
use crate::session::streams::{Attachment, OutEvent};
use crate::session::{SessionEnv, SessionError};

fn actor(config: Config) -> (SessionActor, mpsc::Sender<SessionMsg>) {
    let config = Arc::new(config);
    let features = FeatureSet::default()
        .into_features(config.pagination.page_size)
        .expect("empty feature set");
    let env = Arc::new(SessionEnv::new(
        Arc::new(crate::core::Core {
            identity: Arc::new(ServerIdentity::new(&config)),
            node_id: Arc::from(config.server.node_id.as_str()),
            config,
            features: Arc::new(ArcSwap::from_pointee(features)),
            drain: CancellationToken::new(),
            shutdown: CancellationToken::new(),
            metrics: Arc::default(),
            gateway: None,
            audit: crate::audit::AuditLog::disabled(),
        }),
        None,
    ));
    let slot = env
        .registry
        .reserve(&Arc::from("test"), None)
        .expect("a slot");
    let (tx, rx) = mpsc::channel(16);
    let client = ClientInfo {
        implementation: json!({ "name": "unit" }),
        capabilities: json!({}),
        protocol_version: Some(Revision::LATEST),
    };
    let actor = SessionActor::new(
        Arc::from("unit-session"),
        Revision::LATEST,
        Arc::new(client),
        env,
        rx,
        tx.downgrade(),
        slot,
    );
    (actor, tx)
}

fn request(id: i64, method: &str, params: Value) -> Message {
    Message::Request(Request {
        id: RequestId::Number(id),
        method: method.into(),
        params: Some(params),
    })
}

/// Sends one POST's messages through `handle` and returns what the HTTP layer would get.
fn post(
    actor: &mut SessionActor,
    messages: Vec<Message>,
) -> (Flow, Result<PostOutcome, SessionError>) {
    let (respond_to, answer) = oneshot::channel();
    let flow = actor.handle(SessionMsg::Post(Box::new(PostMsg {
        traceparent: None,
        messages,
        grants: crate::context::Grants::everything(),
        respond_to,
    })));
    let mut answer = answer;
    (flow, answer.try_recv().expect("answered at once"))
}

fn stream_of(outcome: Result<PostOutcome, SessionError>) -> Attachment {
    match outcome {
        Ok(PostOutcome::Stream(attachment)) => attachment,
        other => panic!("expected a stream, got {other:?}"),
    }
}

/// The events already sent to an attachment's connection.
fn sent(attachment: &mut Attachment) -> Vec<Value> {
    let live = attachment.live.as_mut().expect("a live connection");
    let mut out = Vec::new();
    while let Ok(OutEvent { data, .. }) = live.try_recv() {
        out.push(serde_json::from_slice(&data).expect("JSON event"));
    }
    out
}

#[test]
fn ping_is_answered_on_its_posts_stream_at_once() {
    let (mut actor, _tx) = actor(Config::default());
    let (flow, outcome) = post(&mut actor, vec![request(1, "ping", json!({}))]);
    assert!(matches!(flow, Flow::Continue));
    let events = sent(&mut stream_of(outcome));
    assert_eq!(
        events,
        vec![json!({ "jsonrpc": "2.0", "id": 1, "result": {} })]
    );
}

#[tokio::test]
async fn a_request_id_still_in_flight_cannot_be_reused() {
    let (mut actor, _tx) = actor(Config::default());
    // The handler is spawned but cannot run before this test awaits: the call stays in flight.
    let (_, first) = post(&mut actor, vec![request(1, "tools/list", json!({}))]);
    let _first = stream_of(first);
    let (_, second) = post(&mut actor, vec![request(1, "ping", json!({}))]);
    let events = sent(&mut stream_of(second));
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["error"]["code"], -32600, "{}", events[0]);
}

#[tokio::test]
async fn at_max_in_flight_a_call_is_refused_but_ping_is_answered() {
    let mut config = Config::default();
    config.sessions.max_in_flight = 1;
    let (mut actor, _tx) = actor(config);
    let (_, busy) = post(&mut actor, vec![request(1, "tools/list", json!({}))]);
    let _busy = stream_of(busy);
    let (_, refused) = post(&mut actor, vec![request(2, "tools/list", json!({}))]);
    assert!(matches!(
        refused,
        Err(SessionError::TooManyInFlight { limit: 1 })
    ));
    let (_, ping) = post(&mut actor, vec![request(3, "ping", json!({}))]);
    assert_eq!(sent(&mut stream_of(ping))[0]["result"], json!({}));
}

#[tokio::test]
async fn a_cancelled_request_ends_its_stream_without_a_response() {
    let (mut actor, _tx) = actor(Config::default());
    let (_, outcome) = post(&mut actor, vec![request(1, "tools/list", json!({}))]);
    let mut attachment = stream_of(outcome);
    let cancel = Message::Notification(Notification {
        method: "notifications/cancelled".into(),
        params: Some(json!({ "requestId": 1, "reason": "unit" })),
    });
    let (_, accepted) = post(&mut actor, vec![cancel]);
    assert!(matches!(accepted, Ok(PostOutcome::Accepted)));
    assert!(sent(&mut attachment).is_empty());
    let live = attachment.live.as_mut().expect("connection");
    assert!(
        matches!(
            live.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        ),
        "the stream ended"
    );
}

#[test]
fn a_list_change_reaches_the_get_stream() {
    let (mut actor, _tx) = actor(Config::default());
    let (respond_to, answer) = oneshot::channel();
    actor.handle(SessionMsg::OpenStream(Box::new(OpenStreamMsg {
        last_event_id: None,
        respond_to,
    })));
    let mut answer = answer;
    let mut get = answer.try_recv().expect("answered").expect("GET stream");
    actor.handle(SessionMsg::Broadcast(Arc::new(
        ServerEvent::ToolsListChanged,
    )));
    let events = sent(&mut get);
    assert_eq!(
        events,
        vec![json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" })]
    );
    // A resource update goes only to sessions subscribed to its URI.
    actor.handle(SessionMsg::Broadcast(Arc::new(
        ServerEvent::ResourceUpdated {
            uri: "file:///x".into(),
        },
    )));
    assert!(sent(&mut get).is_empty());
}

#[test]
fn a_bad_log_level_is_invalid_params_and_delete_stops_the_actor() {
    let (mut actor, _tx) = actor(Config::default());
    let (_, outcome) = post(
        &mut actor,
        vec![request(1, "logging/setLevel", json!({ "level": "loud" }))],
    );
    assert_eq!(sent(&mut stream_of(outcome))[0]["error"]["code"], -32602);
    let (respond_to, _answer) = oneshot::channel();
    let flow = actor.handle(SessionMsg::Delete { respond_to });
    assert!(matches!(flow, Flow::Stop(_)));
}
