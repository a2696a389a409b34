//! The requests the session actor answers itself, at once, because they read or change
//! session state: `logging/setLevel` and `resources/(un)subscribe` (`ping` needs no state).
//! The method table marks them `AnsweredBy::SessionActor`.

use serde_json::{Value, json};

use super::SessionActor;
use crate::jsonrpc::{RpcError, params_object};
use crate::protocol::LogLevel;

impl SessionActor {
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
            if !self.env.features.load().knows_resource(uri) {
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
