//! The requests the session actor answers itself, at once, because they read or change
//! session state: `logging/setLevel` and `resources/(un)subscribe` (`ping` needs no state).
//! [`Method::served`](crate::protocol::Method::served) names them `Served::SessionActor`.

use serde_json::{Value, json};

use super::SessionActor;
use crate::jsonrpc::{RpcError, params_object};
use crate::protocol::LogLevel;
use crate::protocol::method::SessionMethod;

impl SessionActor {
    /// Answers a method the session itself serves.
    pub(super) fn answer_itself(
        &mut self,
        method: SessionMethod,
        params: Option<&Value>,
    ) -> Result<Value, RpcError> {
        match method {
            SessionMethod::Ping => Ok(json!({})),
            SessionMethod::LoggingSetLevel => self.set_log_level(params),
            SessionMethod::ResourcesSubscribe => self.subscribe(params, true),
            SessionMethod::ResourcesUnsubscribe => self.subscribe(params, false),
            // The HTTP layer starts a session on initialize and refuses a second one there;
            // an actor is only reached by a caller that skipped that check.
            SessionMethod::Initialize => Err(RpcError::invalid_request(
                "this session is already initialized; send initialize without Mcp-Session-Id to start a new session",
            )),
        }
    }

    pub(super) fn set_log_level(&mut self, params: Option<&Value>) -> Result<Value, RpcError> {
        let params = params_object(params)?;
        let level = params
            .get("level")
            .cloned()
            .and_then(|l| serde_json::from_value::<LogLevel>(l).ok())
            .ok_or_else(|| {
                RpcError::invalid_params(format!("`level` must be one of: {}", LogLevel::NAMES))
            })?;
        self.log_level = Some(level);
        Ok(json!({}))
    }

    pub(super) fn subscribe(
        &mut self,
        params: Option<&Value>,
        on: bool,
    ) -> Result<Value, RpcError> {
        let params = params_object(params)?;
        let uri = crate::features::required_str(params, "uri")?;
        if on {
            if !self.env.core.features.load().knows_resource(uri) {
                return Err(RpcError::from(
                    crate::features::resources::ResourceError::NotFound(uri.into()),
                ));
            }
            // A URI an upstream serves is subscribed there too, on this session's connection,
            // so its `resources/updated` comes back here.
            if self.subscriptions.insert(uri.to_string()) {
                if let Some(upstreams) = &self.upstreams {
                    upstreams.subscribe(uri);
                }
                self.subscriptions_changed();
            }
        } else if self.subscriptions.remove(uri) {
            self.subscriptions_changed();
        }
        Ok(json!({}))
    }
}
