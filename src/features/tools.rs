//! Tools: their descriptors, argument validation and invocation (spec `server/tools.mdx`).
//!
//! Arguments are validated against the tool's input schema with a compiled JSON Schema
//! validator (2020-12 unless the schema names another dialect) before the handler runs.
//! Invalid arguments and failing handlers become `isError` results, as 2025-11-25 asks
//! (SEP-1303), so the model can see and correct them; only an unknown tool or malformed
//! params are protocol errors.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

/// The naming rule belongs to the configuration, which checks names before any tool exists.
pub use crate::config::names::validate_tool_name;
use crate::context::{ClientRequestError, RequestContext};
use crate::protocol::{Answer, CallToolResult};

/// Why a tool handler failed. The client receives it as an `isError` result.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("{0}")]
    Failed(String),
    #[error("{0}")]
    Client(#[from] ClientRequestError),
}

impl ToolError {
    pub fn msg(message: impl Into<String>) -> Self {
        ToolError::Failed(message.into())
    }
}

/// The future a tool handler returns.
pub type ToolFuture = BoxFuture<'static, Result<CallToolResult, ToolError>>;

type ToolHandler = Arc<dyn Fn(RequestContext, Value) -> ToolFuture + Send + Sync>;

/// The future of a handler that answers with the result object as another server wrote it.
pub(crate) type RawToolFuture = BoxFuture<'static, Result<Answer, ToolError>>;

/// How a tool answers: with a typed result, or with the result object as it came (a tool
/// forwarded to an upstream server, whose results keep every field they had).
#[derive(Clone)]
enum Handler {
    Typed(ToolHandler),
    Raw(Arc<dyn Fn(RequestContext, Value) -> RawToolFuture + Send + Sync>),
}

/// A tool definition that is not valid.
#[derive(Debug, thiserror::Error)]
pub enum ToolDefinitionError {
    #[error("tool name {name:?}: {reason}")]
    BadName { name: String, reason: String },
    #[error("tool {name:?}: invalid input schema: {reason}")]
    BadSchema { name: String, reason: String },
}

pub use crate::protocol::TaskSupport;

/// A registered tool.
#[derive(Clone)]
pub struct Tool {
    name: String,
    descriptor: Value,
    /// `None` for a forwarded tool: the upstream checks its own arguments.
    validator: Option<Arc<jsonschema::Validator>>,
    handler: Handler,
    /// The handler calls [`RequestContext::start_task`] itself, after a synchronous
    /// (multi round-trip) phase, instead of the task starting with the call.
    starts_own_task: bool,
    /// Read from the descriptor whenever it changes, not on every call.
    task_support: TaskSupport,
    /// `(argument, token)` of each input-schema property marked `x-mcp-header`.
    param_headers: Arc<[(String, String)]>,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("descriptor", &self.descriptor)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// A tool taking raw JSON arguments, validated against `input_schema` before `handler`
    /// runs. `descriptor_extra` may add `title`, `annotations`, `outputSchema`, `icons`.
    pub fn new<F>(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: F,
    ) -> Result<Tool, ToolDefinitionError>
    where
        F: Fn(RequestContext, Value) -> ToolFuture + Send + Sync + 'static,
    {
        let name = name.into();
        validate_tool_name(&name).map_err(|reason| ToolDefinitionError::BadName {
            name: name.clone(),
            reason,
        })?;
        if !input_schema.is_object() {
            return Err(ToolDefinitionError::BadSchema {
                name,
                reason: "must be a JSON object".into(),
            });
        }
        let validator = jsonschema::validator_for(&input_schema).map_err(|e| {
            ToolDefinitionError::BadSchema {
                name: name.clone(),
                reason: e.to_string(),
            }
        })?;
        let descriptor = json!({
            "name": name,
            "description": description.into(),
            "inputSchema": input_schema,
        });
        Ok(Tool {
            name,
            descriptor,
            validator: Some(Arc::new(validator)),
            handler: Handler::Typed(Arc::new(handler)),
            starts_own_task: false,
            task_support: TaskSupport::default(),
            param_headers: Arc::new([]),
        }
        .derived())
    }

    /// A tool described by `descriptor` as another server gave it (its `name` already set
    /// to the name served here), answered by `handler` with a raw result object. Arguments
    /// are not validated here: the server that owns the schema does that.
    pub(crate) fn forwarding<F>(descriptor: Value, handler: F) -> Result<Tool, ToolDefinitionError>
    where
        F: Fn(RequestContext, Value) -> RawToolFuture + Send + Sync + 'static,
    {
        let name = descriptor
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        validate_tool_name(&name).map_err(|reason| ToolDefinitionError::BadName {
            name: name.clone(),
            reason,
        })?;
        Ok(Tool {
            name,
            descriptor,
            validator: None,
            handler: Handler::Raw(Arc::new(handler)),
            starts_own_task: false,
            task_support: TaskSupport::default(),
            param_headers: Arc::new([]),
        }
        .derived())
    }

    /// A tool whose arguments deserialize into `A`; the input schema is derived from `A`.
    pub fn typed<A, F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> Result<Tool, ToolDefinitionError>
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(RequestContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
    {
        let schema = serde_json::to_value(schemars::schema_for!(A)).map_err(|e| {
            ToolDefinitionError::BadSchema {
                name: "?".into(),
                reason: e.to_string(),
            }
        })?;
        let handler = Arc::new(handler);
        Tool::new(name, description, schema, move |ctx, args| {
            let handler = Arc::clone(&handler);
            Box::pin(async move {
                // The schema was checked already, so this only fails where serde is stricter
                // than the derived schema; report it like a validation failure.
                let args: A = serde_json::from_value(args)
                    .map_err(|e| ToolError::Failed(format!("invalid arguments: {e}")))?;
                handler(ctx, args).await
            })
        })
    }

    /// Sets an optional descriptor field: `title`, `annotations`, `outputSchema`, `icons`,
    /// `_meta`.
    pub fn with(mut self, field: &str, value: Value) -> Self {
        if let Some(obj) = self.descriptor.as_object_mut() {
            obj.insert(field.to_string(), value);
        }
        self.derived()
    }

    /// Reads what calls need from the descriptor once: its task support and its
    /// `x-mcp-header` arguments.
    fn derived(mut self) -> Self {
        self.task_support = self
            .descriptor
            .get("execution")
            .and_then(|e| e.get("taskSupport"))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        let properties = self
            .descriptor
            .get("inputSchema")
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object);
        self.param_headers = properties
            .into_iter()
            .flatten()
            .filter_map(|(property, schema)| {
                let token = schema.get("x-mcp-header").and_then(Value::as_str)?;
                Some((property.clone(), token.to_string()))
            })
            .collect();
        self
    }

    /// Sets `execution.taskSupport` in the descriptor; the same as
    /// `with("execution", json!({ "taskSupport": "optional" }))`.
    pub fn with_task_support(self, support: TaskSupport) -> Self {
        self.with("execution", json!({ "taskSupport": support }))
    }

    /// Lets the handler choose when its task starts: the call first runs like any other
    /// (it may ask the client for input over several round trips), and becomes a task when
    /// the handler calls [`RequestContext::start_task`]. The task then runs the handler again
    /// from the start with the answers gathered so far.
    pub fn starting_own_task(mut self) -> Self {
        self.starts_own_task = true;
        self
    }

    /// The descriptor's `execution.taskSupport`; absent or unknown means forbidden.
    pub fn task_support(&self) -> TaskSupport {
        self.task_support
    }

    /// `(argument, token)` of each input-schema property marked `x-mcp-header`, mirrored
    /// into an `Mcp-Param-<token>` header by 2026-07-28 clients.
    pub(crate) fn param_headers(&self) -> &[(String, String)] {
        &self.param_headers
    }

    pub(crate) fn starts_own_task(&self) -> bool {
        self.starts_own_task
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tool as `tools/list` shows it.
    pub fn descriptor(&self) -> &Value {
        &self.descriptor
    }

    /// Validates `arguments` and runs the handler: the result object. Never a protocol
    /// error.
    pub(crate) async fn call(&self, ctx: RequestContext, arguments: Value) -> Answer {
        let outcome = match &self.handler {
            Handler::Typed(handler) => self.call_typed(handler, ctx, arguments).await,
            Handler::Raw(handler) => match handler(ctx, arguments).await {
                Ok(result) => return result,
                Err(e) => CallToolResult::error(e.to_string()),
            },
        };
        Answer::from(outcome)
    }

    async fn call_typed(
        &self,
        handler: &ToolHandler,
        ctx: RequestContext,
        arguments: Value,
    ) -> CallToolResult {
        let Some(validator) = &self.validator else {
            return CallToolResult::error("this tool has no input schema".to_string());
        };
        let problems: Vec<String> = validator
            .iter_errors(&arguments)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect();
        if !problems.is_empty() {
            return CallToolResult::error(format!(
                "invalid arguments for tool {:?}: {}",
                self.name,
                problems.join("; ")
            ));
        }
        match handler(ctx, arguments).await {
            Ok(result) => result,
            Err(e) => CallToolResult::error(e.to_string()),
        }
    }
}

/// Reads `arguments` of a `tools/call`; absent means `{}` (clients omit it for tools
/// without parameters).
pub(crate) fn call_arguments(arguments: Option<Value>) -> Option<Value> {
    match arguments {
        None | Some(Value::Null) => Some(Value::Object(Map::new())),
        Some(v @ Value::Object(_)) => Some(v),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn param_headers_are_read_from_the_input_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "region": { "type": "string", "x-mcp-header": "Region" },
                "text": { "type": "string" },
            },
        });
        let tool = Tool::new("t", "d", schema, |_ctx, _args| {
            Box::pin(async { Ok(CallToolResult::text("x")) })
        })
        .unwrap();
        assert_eq!(
            tool.param_headers(),
            [("region".to_string(), "Region".to_string())]
        );
        let plain = tool.with("inputSchema", json!({ "type": "object" }));
        assert!(plain.param_headers().is_empty());
    }

    #[test]
    fn task_support_reads_the_descriptor() {
        let tool = Tool::new("t", "d", json!({ "type": "object" }), |_ctx, _args| {
            Box::pin(async { Ok(CallToolResult::text("x")) })
        })
        .unwrap();
        assert_eq!(tool.task_support(), TaskSupport::Forbidden);
        let tool = tool.with("execution", json!({ "taskSupport": "optional" }));
        assert_eq!(tool.task_support(), TaskSupport::Optional);
        let tool = tool.with_task_support(TaskSupport::Required);
        assert_eq!(tool.descriptor()["execution"]["taskSupport"], "required");
        assert_eq!(tool.task_support(), TaskSupport::Required);
    }
}
