//! The fixtures of the `tasks-*` scenarios: the `io.modelcontextprotocol/tasks` extension
//! (SEP-2663) on the 2026-07-28 path.
//!
//! A tool takes part in tasks through its descriptor's `execution.taskSupport`
//! ([`Tool::with_task_support`]); the library then decides per request: a client that
//! declared the extension gets a `CreateTaskResult` and polls `tasks/get`, others get a
//! plain result (`optional`) or -32021 (`required`). The handlers below are ordinary tool
//! handlers: a task that elicits waits in `input_required` until `tasks/update` answers,
//! then runs again from the start with the answers. `test_tool_with_task` shows the other
//! way in: it gathers its input over `input_required` round trips first and turns into a
//! task when it calls [`RequestContext::start_task`].

use std::future::Future;
use std::time::Duration;

use mcp_actor::protocol::ElicitResult;
use mcp_actor::{CallToolResult, RequestContext, ServerBuilder, TaskSupport, Tool, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
struct NoArguments {}

#[derive(Deserialize, JsonSchema)]
struct GreetArguments {
    /// Who to greet.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct SlowComputeArguments {
    /// How long to work, in seconds (0 answers at once).
    seconds: f64,
    /// A label echoed in the result.
    #[serde(default)]
    label: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct ConfirmDeleteArguments {
    /// The file to delete (nothing is deleted: this is a fixture).
    filename: String,
}

/// Adds the tasks fixtures to `builder`.
pub fn register(builder: ServerBuilder) -> ServerBuilder {
    let builder = builder.tool("greet", "Greets by name; never a task", greet);
    let tools = [
        task_tool(
            "slow_compute",
            "Works for `seconds` seconds, then reports; runs as a task when the client \
             supports tasks",
            TaskSupport::Optional,
            slow_compute,
        ),
        task_tool(
            "failing_job",
            "Fails with a tool error after about a second; runs only as a task",
            TaskSupport::Required,
            failing_job,
        ),
        task_tool(
            "protocol_error_job",
            "Panics, so its task fails with a protocol error",
            TaskSupport::Optional,
            protocol_error_job,
        ),
        task_tool(
            "confirm_delete",
            "Asks for confirmation with elicitation, then reports the (pretend) deletion",
            TaskSupport::Optional,
            confirm_delete,
        ),
        task_tool(
            "multi_input",
            "Asks two questions at once with elicitation",
            TaskSupport::Optional,
            multi_input,
        ),
        task_tool(
            "test_tool_with_task",
            "Asks for the user's name over input_required round trips, then continues as a \
             task that greets them",
            TaskSupport::Required,
            tool_with_task,
        )
        .map(Tool::starting_own_task),
    ];
    tools.into_iter().fold(builder, |builder, tool| match tool {
        Ok(tool) => builder.add_tool(tool),
        Err(e) => builder.error(e.to_string()),
    })
}

fn task_tool<A, F, Fut>(
    name: &str,
    description: &str,
    support: TaskSupport,
    handler: F,
) -> Result<Tool, mcp_actor::features::tools::ToolDefinitionError>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(RequestContext, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
{
    Tool::typed(name, description, handler).map(|tool| tool.with_task_support(support))
}

async fn greet(_ctx: RequestContext, args: GreetArguments) -> Result<CallToolResult, ToolError> {
    Ok(CallToolResult::text(format!("Hello, {}!", args.name)))
}

async fn slow_compute(
    _ctx: RequestContext,
    args: SlowComputeArguments,
) -> Result<CallToolResult, ToolError> {
    let seconds = args.seconds.clamp(0.0, 3600.0);
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    let label = args.label.as_deref().unwrap_or("unlabelled");
    Ok(CallToolResult::text(format!(
        "Computed {label} in {seconds} seconds"
    )))
}

async fn failing_job(_ctx: RequestContext, _: NoArguments) -> Result<CallToolResult, ToolError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(ToolError::msg(
        "the job failed, as this fixture always does",
    ))
}

async fn protocol_error_job(
    _ctx: RequestContext,
    _: NoArguments,
) -> Result<CallToolResult, ToolError> {
    panic!("protocol_error_job panics on purpose: its task must end as failed");
}

async fn confirm_delete(
    ctx: RequestContext,
    args: ConfirmDeleteArguments,
) -> Result<CallToolResult, ToolError> {
    let message = format!("Delete {}?", args.filename);
    let answer = ctx.elicit(&message, confirm_schema()).await?;
    let confirmed = field(&answer, "confirm")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(CallToolResult::text(if confirmed {
        format!("Deleted {}", args.filename)
    } else {
        format!("Kept {}", args.filename)
    }))
}

async fn multi_input(ctx: RequestContext, _: NoArguments) -> Result<CallToolResult, ToolError> {
    let (name, confirm) = tokio::join!(
        ctx.elicit("What is your name?", name_schema()),
        ctx.elicit("Proceed?", confirm_schema()),
    );
    let (name, confirm) = (name?, confirm?);
    Ok(CallToolResult::text(format!(
        "Received name {} and confirmation {}",
        field(&name, "name").unwrap_or(&Value::Null),
        field(&confirm, "confirm").unwrap_or(&Value::Null)
    )))
}

async fn tool_with_task(ctx: RequestContext, _: NoArguments) -> Result<CallToolResult, ToolError> {
    // The scenario answers this input under the key `user_name`.
    let answer = ctx
        .elicit_as("user_name", "What is your name?", name_schema())
        .await?;
    ctx.start_task()?;
    let name = field(&answer, "name")
        .and_then(Value::as_str)
        .unwrap_or("stranger");
    Ok(CallToolResult::text(format!("Hello, {name}!")))
}

/// A field of an accepted elicitation's content.
fn field<'a>(answer: &'a ElicitResult, key: &str) -> Option<&'a Value> {
    answer.content.as_ref()?.get(key)
}

fn name_schema() -> Value {
    json!({
        "type": "object",
        "properties": { "name": { "type": "string" } },
        "required": ["name"],
    })
}

fn confirm_schema() -> Value {
    json!({
        "type": "object",
        "properties": { "confirm": { "type": "boolean" } },
        "required": ["confirm"],
    })
}
