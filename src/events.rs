//! Server events: what changed on the server side, delivered to everyone who must hear it.
//!
//! A reload changes the lists, a file watcher sees a resource change, an embedding
//! application calls [`Server::notify`](crate::Server::notify). Each becomes one
//! [`ServerEvent`] published once through [`ServerEvents`], which hands it to
//! - every registered [`EventSink`]: the session registry, which puts it in each session
//!   actor's mailbox (a session then forwards what its client may see), and
//! - every subscriber: the 2026-07-28 `subscriptions/listen` streams.
//!
//! This module sits below the layers that publish and receive, so none of them imports
//! another to pass an event along.

use std::sync::Arc;

use tokio::sync::broadcast;

/// Server-wide events delivered to every session and listen stream.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    ToolsListChanged,
    ResourcesListChanged,
    PromptsListChanged,
    ResourceUpdated { uri: String },
}

/// Receives every published event, synchronously: an implementation must not wait.
pub trait EventSink: Send + Sync {
    fn deliver(&self, event: &Arc<ServerEvent>);
}

/// The one place server events are published.
pub struct ServerEvents {
    sinks: Vec<Arc<dyn EventSink>>,
    subscribers: broadcast::Sender<Arc<ServerEvent>>,
}

impl ServerEvents {
    /// Publishes to `sinks` and to subscribers, each of which may fall `buffer` events
    /// behind before it misses some.
    pub fn new(sinks: Vec<Arc<dyn EventSink>>, buffer: usize) -> Self {
        let (subscribers, _) = broadcast::channel(buffer.max(1));
        ServerEvents { sinks, subscribers }
    }

    pub fn publish(&self, event: ServerEvent) {
        let event = Arc::new(event);
        for sink in &self.sinks {
            sink.deliver(&event);
        }
        // No subscriber is not an error: nobody listens.
        let _ = self.subscribers.send(event);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<ServerEvent>> {
        self.subscribers.subscribe()
    }
}

impl std::fmt::Debug for ServerEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerEvents")
            .field("sinks", &self.sinks.len())
            .field("subscribers", &self.subscribers.receiver_count())
            .finish()
    }
}
