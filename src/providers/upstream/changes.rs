//! What an upstream announces about its whole offer: `list_changed` makes the gateway read
//! its catalog again and, when it differs, the server rebuild its features and tell every
//! session; `resources/updated` goes to the sessions subscribed to that URI.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::Value;

use super::wire::Events;
use super::{Gateway, Inner, catalog};
use crate::events::{ServerEvent, ServerEvents};

/// Changes of upstream lists arriving within this window are read once.
const DEBOUNCE: Duration = Duration::from_millis(200);

/// Set by the server when it is built.
pub(crate) struct Hooks {
    pub events: Arc<ServerEvents>,
    pub changed: Box<dyn Fn(&Gateway) + Send + Sync>,
}

/// The events of the connections to one upstream.
pub(crate) struct UpstreamEvents {
    gateway: Weak<Inner>,
    index: usize,
    reading: Arc<AtomicBool>,
}

impl UpstreamEvents {
    pub fn for_upstream(gateway: &Arc<Inner>, index: usize) -> Arc<dyn Events> {
        Arc::new(UpstreamEvents {
            gateway: Arc::downgrade(gateway),
            index,
            reading: Arc::new(AtomicBool::new(false)),
        })
    }
}

impl Events for UpstreamEvents {
    fn list_changed(&self, method: &str) {
        if self.reading.swap(true, Ordering::AcqRel) {
            return; // A read is already coming.
        }
        tracing::debug!(method, "an upstream's offer changed; reading it again");
        let (gateway, index, reading) =
            (self.gateway.clone(), self.index, Arc::clone(&self.reading));
        tokio::spawn(async move {
            tokio::time::sleep(DEBOUNCE).await;
            reading.store(false, Ordering::Release);
            let Some(inner) = gateway.upgrade() else {
                return;
            };
            let upstream = &inner.upstreams[index];
            let fresh = catalog::read(&inner, upstream).await;
            let current = inner.catalogs[index].load_full();
            let same = fresh.tools == current.tools
                && fresh.resources == current.resources
                && fresh.templates == current.templates
                && fresh.prompts == current.prompts;
            if same {
                return;
            }
            inner.catalogs[index].store(Arc::new(fresh));
            if let Some(hooks) = inner.hooks.get() {
                (hooks.changed)(&Gateway {
                    inner: Arc::clone(&inner),
                });
            }
        });
    }

    fn resource_updated(&self, params: Value) {
        let Some(uri) = params.get("uri").and_then(Value::as_str) else {
            return;
        };
        let Some(inner) = self.gateway.upgrade() else {
            return;
        };
        if let Some(hooks) = inner.hooks.get() {
            hooks.events.publish(ServerEvent::ResourceUpdated {
                uri: uri.to_string(),
            });
        }
    }
}
