//! Prompts: declared arguments, rendering and argument completion (spec `server/prompts.mdx`).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use crate::context::RequestContext;
use crate::features::resources::Completer;
use crate::jsonrpc::RpcError;
use crate::protocol::{Arguments, GetPromptResult, PromptArgument};

/// The future a prompt handler returns. An `Err` becomes an internal error (-32603).
pub type PromptFuture = BoxFuture<'static, Result<GetPromptResult, String>>;

type PromptHandler = Arc<dyn Fn(RequestContext, Arguments) -> PromptFuture + Send + Sync>;

/// A registered prompt.
#[derive(Clone)]
pub struct Prompt {
    pub(crate) name: String,
    pub(crate) arguments: Vec<PromptArgument>,
    pub(crate) descriptor: Value,
    pub(crate) handler: PromptHandler,
    pub(crate) completer: Option<Completer>,
}

impl Prompt {
    pub fn new<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        arguments: Vec<PromptArgument>,
        handler: F,
    ) -> Self
    where
        F: Fn(RequestContext, Arguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, String>> + Send + 'static,
    {
        let name = name.into();
        let description: String = description.into();
        let mut descriptor = json!({ "name": name });
        // `description` is optional in the schema: an empty one is left out, not sent as "".
        if !description.is_empty() {
            descriptor["description"] = json!(description);
        }
        if !arguments.is_empty() {
            descriptor["arguments"] = json!(arguments);
        }
        let handler = Arc::new(handler);
        Prompt {
            name,
            arguments,
            descriptor,
            handler: Arc::new(move |ctx, args| Box::pin(handler(ctx, args))),
            completer: None,
        }
    }

    descriptor_and_completer!("`title`, `icons`, `_meta`");

    /// Checks the supplied arguments against the declared ones, then renders.
    pub(crate) async fn get(
        &self,
        ctx: RequestContext,
        args: Arguments,
    ) -> Result<GetPromptResult, RpcError> {
        let missing: Vec<&str> = self
            .arguments
            .iter()
            .filter(|a| a.required && !args.contains_key(&a.name))
            .map(|a| a.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(RpcError::invalid_params(format!(
                "prompt {:?} is missing required argument(s): {}",
                self.name,
                missing.join(", ")
            )));
        }
        if let Some(unknown) = args
            .keys()
            .find(|k| !self.arguments.iter().any(|a| &a.name == *k))
        {
            return Err(RpcError::invalid_params(format!(
                "prompt {:?} has no argument {unknown:?}",
                self.name
            )));
        }
        (self.handler)(ctx, args)
            .await
            .map_err(|e| RpcError::internal(format!("prompt {:?} failed: {e}", self.name)))
    }
}
