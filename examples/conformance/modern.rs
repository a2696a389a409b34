//! The fixtures only the 2026-07-28 scenarios call (`--requirements 2026-07-28` of the
//! 0.2.0 suite): the SEP-2575 diagnostic tools of `server-stateless`, the SEP-2322
//! `input-required-result-*` tools and prompt, and a SEP-2243 tool with an `x-mcp-header`
//! parameter for `http-custom-header-server-validation`.
//!
//! They ask the client through [`RequestContext`] like the handshake-era tools do. On the
//! stateless path the library turns every unanswered `elicit` / `sample` / `list_roots`
//! into an `input_required` result and runs the handler again, from the start, on the
//! client's retry; a second ask after the first answer is a second round. The input
//! requests are keyed `input-0`, `input-1`, ... in the order the handler asks (or named
//! with `elicit_as` / `sample_as`), so a handler that needs several answers in one round
//! asks them concurrently (`tokio::join!`).
//!
//! On a handshake-era session the same handlers send real server→client requests, so the
//! tools stay usable there too.

use std::sync::OnceLock;

use mcp_actor::features::tools::ToolDefinitionError;
use mcp_actor::protocol::{Arguments, LogLevel};
use mcp_actor::{
    CallToolResult, ClientRequestError, Content, GetPromptResult, Prompt, PromptMessage,
    RequestContext, Role, Server, ServerBuilder, ServerEvent, Tool, ToolError,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::tools::{describe, sampled_text};

/// The running server, so the list-change triggers can notify listen streams and sessions.
/// `main` sets it right after building the server.
pub static SERVER: OnceLock<Server> = OnceLock::new();

// Arguments of the tools that take none (see `tools::NoArguments`).
#[derive(Deserialize, JsonSchema)]
struct NoArguments {}

/// Adds the 2026-07-28 tools and prompt to `builder`.
pub fn register(builder: ServerBuilder) -> ServerBuilder {
    let builder = builder
        // SEP-2575 diagnostics (`server-stateless`).
        .tool(
            "test_missing_capability",
            "Needs the sampling client capability: a request that does not declare it is \
             rejected with -32021 (SEP-2575)",
            missing_capability,
        )
        .tool(
            "test_streaming_elicitation",
            "Asks for confirmation through elicitation; the response stream carries only \
             notifications and the result, never a server-to-client request (SEP-2575)",
            streaming_elicitation,
        )
        .tool(
            "test_logging_tool",
            "Logs at info level; a stateless request without a logLevel gets no log \
             notifications (SEP-2575)",
            logging_tool,
        )
        .tool(
            "test_trigger_tool_change",
            "Announces a tool-list change to every listen stream and session",
            trigger_tool_change,
        )
        .tool(
            "test_trigger_prompt_change",
            "Announces a prompt-list change to every listen stream and session",
            trigger_prompt_change,
        )
        // SEP-2322 multi round-trip requests (`input-required-result-*`).
        .tool(
            "test_input_required_result_elicitation",
            "Asks for the user's name with elicitation, then greets them (SEP-2322)",
            input_required_elicitation,
        )
        .tool(
            "test_input_required_result_sampling",
            "Asks the client's model a question with sampling, then reports the answer \
             (SEP-2322)",
            input_required_sampling,
        )
        .tool(
            "test_input_required_result_list_roots",
            "Asks the client for its roots, then lists them (SEP-2322)",
            input_required_list_roots,
        )
        .tool(
            "test_input_required_result_request_state",
            "Asks for a confirmation; the retry must echo the integrity-protected \
             requestState (SEP-2322)",
            input_required_request_state,
        )
        .tool(
            "test_input_required_result_multiple_inputs",
            "Asks for elicitation, sampling and roots in one round (SEP-2322)",
            input_required_multiple_inputs,
        )
        .tool(
            "test_input_required_result_multi_round",
            "Asks two questions in two rounds (SEP-2322)",
            input_required_multi_round,
        )
        .tool(
            "test_input_required_result_tampered_state",
            "Asks for a confirmation; a retry with a tampered requestState is rejected \
             (SEP-2322)",
            input_required_tampered_state,
        )
        .tool(
            "test_input_required_result_capabilities",
            "Asks only for what the request's client capabilities declare (SEP-2322)",
            input_required_capabilities,
        )
        .prompt(Prompt::new(
            "test_input_required_result_prompt",
            "A prompt that asks the user for its context with elicitation first (SEP-2322)",
            Vec::new(),
            input_required_prompt,
        ));
    match custom_header_tool() {
        Ok(tool) => builder.add_tool(tool),
        Err(e) => builder.error(e.to_string()),
    }
}

// --- SEP-2575 diagnostics -------------------------------------------------------------

/// Samples, so a request that did not declare `sampling` is answered with -32021 and
/// `requiredCapabilities: {"sampling": {}}`.
async fn missing_capability(
    ctx: RequestContext,
    _: NoArguments,
) -> Result<CallToolResult, ToolError> {
    let result = ctx
        .sample(sampling_params("Reply with one word: ready?", 20))
        .await?;
    Ok(CallToolResult::text(format!(
        "Sampling capability is declared; the model said: {}",
        sampled_text(&result).unwrap_or("(no text)")
    )))
}

/// Reports progress (when asked for), then elicits. On the stateless path the ask becomes an
/// `input_required` result at the end of the stream, not an `elicitation/create` request.
async fn streaming_elicitation(
    ctx: RequestContext,
    _: NoArguments,
) -> Result<CallToolResult, ToolError> {
    ctx.progress(1.0, Some(2.0), Some("asking for confirmation"))
        .await;
    let answer = ctx.elicit("Please confirm", ok_schema()).await?;
    ctx.progress(2.0, Some(2.0), Some("confirmed")).await;
    Ok(CallToolResult::text(format!(
        "Streaming elicitation completed: {}",
        describe(&answer)
    )))
}

/// Logs at info level. The library decides whether the client sees it: a stateless request
/// only gets `notifications/message` at or above the `logLevel` in its `_meta`.
async fn logging_tool(ctx: RequestContext, _: NoArguments) -> Result<CallToolResult, ToolError> {
    ctx.log(
        LogLevel::Info,
        Some("conformance"),
        json!("test_logging_tool executed"),
    )
    .await;
    Ok(CallToolResult::text("Logging tool executed"))
}

async fn trigger_tool_change(
    _ctx: RequestContext,
    _: NoArguments,
) -> Result<CallToolResult, ToolError> {
    server()?.notify(ServerEvent::ToolsListChanged);
    Ok(CallToolResult::text("Tool list change announced"))
}

async fn trigger_prompt_change(
    _ctx: RequestContext,
    _: NoArguments,
) -> Result<CallToolResult, ToolError> {
    server()?.notify(ServerEvent::PromptsListChanged);
    Ok(CallToolResult::text("Prompt list change announced"))
}

fn server() -> Result<&'static Server, ToolError> {
    SERVER
        .get()
        .ok_or_else(|| ToolError::msg("the server is not running yet"))
}

// --- SEP-2322 multi round-trip requests ---------------------------------------------

async fn input_required_elicitation(
    ctx: RequestContext,
    _: NoArguments,
) -> Result<CallToolResult, ToolError> {
    // The scenario expects this input under the key `user_name`.
    let answer = ctx
        .elicit_as("user_name", "What is your name?", string_schema("name"))
        .await?;
    let name = answer
        .content
        .as_ref()
        .and_then(|c| c.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("stranger");
    Ok(CallToolResult::text(format!("Hello, {name}!")))
}

async fn input_required_sampling(
    ctx: RequestContext,
    _: NoArguments,
) -> Result<CallToolResult, ToolError> {
    let result = ctx
        .sample(sampling_params("What is the capital of France?", 100))
        .await?;
    let text = sampled_text(&result)
        .ok_or_else(|| ToolError::msg("the client's sampling result has no text content"))?;
    Ok(CallToolResult::text(format!("LLM response: {text}")))
}

async fn input_required_list_roots(
    ctx: RequestContext,
    _: NoArguments,
) -> Result<CallToolResult, ToolError> {
    let roots = ctx.list_roots().await?;
    Ok(CallToolResult::text(format!(
        "Client roots: {}",
        root_uris(&roots)
    )))
}

/// The library seals the answers gathered so far into `requestState` and refuses a retry
/// whose state fails verification before this handler runs again; reaching the answer on
/// the retry therefore means the state checked out.
async fn input_required_request_state(
    ctx: RequestContext,
    _: NoArguments,
) -> Result<CallToolResult, ToolError> {
    let answer = ctx.elicit("Please confirm", ok_schema()).await?;
    Ok(CallToolResult::text(format!(
        "state-ok: the requestState was verified; {}",
        describe(&answer)
    )))
}

/// Three asks of three kinds in one round: asked concurrently, so the first unanswered one
/// does not end the run before the others are recorded.
async fn input_required_multiple_inputs(
    ctx: RequestContext,
    _: NoArguments,
) -> Result<CallToolResult, ToolError> {
    let (name, greeting, roots) = tokio::join!(
        ctx.elicit("What is your name?", string_schema("name")),
        ctx.sample(sampling_params("Generate a greeting", 50)),
        ctx.list_roots(),
    );
    let (name, greeting, roots) = (name?, greeting?, roots?);
    Ok(CallToolResult::text(format!(
        "All inputs received: name {}; greeting {:?}; roots {}",
        describe(&name),
        sampled_text(&greeting).unwrap_or(""),
        root_uris(&roots)
    )))
}

/// The second question is only asked once the first is answered: two rounds, each with a
/// new `requestState` carrying the answers so far.
async fn input_required_multi_round(
    ctx: RequestContext,
    _: NoArguments,
) -> Result<CallToolResult, ToolError> {
    let name = ctx
        .elicit("Step 1: What is your name?", string_schema("name"))
        .await?;
    let color = ctx
        .elicit(
            "Step 2: What is your favorite color?",
            string_schema("color"),
        )
        .await?;
    Ok(CallToolResult::text(format!(
        "Multi-round completed: step 1 {}; step 2 {}",
        describe(&name),
        describe(&color)
    )))
}

async fn input_required_tampered_state(
    ctx: RequestContext,
    _: NoArguments,
) -> Result<CallToolResult, ToolError> {
    let answer = ctx.elicit("Please confirm", ok_schema()).await?;
    Ok(CallToolResult::text(format!(
        "Confirmed with a verified requestState: {}",
        describe(&answer)
    )))
}

/// Asks only what the request declared: elicitation if it can, sampling if it can (both in
/// one round when it can do both). A client that declared neither is told it lacks
/// `sampling` (-32021 on the stateless path).
async fn input_required_capabilities(
    ctx: RequestContext,
    _: NoArguments,
) -> Result<CallToolResult, ToolError> {
    let client = ctx.client_info();
    let (can_elicit, can_sample) = (
        client.supports_elicitation_form(),
        client.supports_sampling(),
    );
    let elicit = async {
        if can_elicit {
            ctx.elicit("What is your name?", string_schema("name"))
                .await
                .map(|answer| Some(describe(&answer)))
        } else {
            Ok::<_, ClientRequestError>(None)
        }
    };
    let sample = async {
        if can_sample || !can_elicit {
            ctx.sample(sampling_params("Generate a greeting", 50))
                .await
                .map(|result| Some(sampled_text(&result).unwrap_or("").to_string()))
        } else {
            Ok(None)
        }
    };
    let (elicited, sampled) = tokio::join!(elicit, sample);
    let (elicited, sampled) = (elicited?, sampled?);
    Ok(CallToolResult::text(format!(
        "Asked only for declared capabilities: elicitation {}; sampling {}",
        elicited.as_deref().unwrap_or("(not declared)"),
        sampled.as_deref().unwrap_or("(not declared)")
    )))
}

/// `prompts/get` can need input too: the prompt asks for its context before it is built.
async fn input_required_prompt(
    ctx: RequestContext,
    _args: Arguments,
) -> Result<GetPromptResult, String> {
    let answer = ctx
        .elicit(
            "What context should the prompt use?",
            string_schema("context"),
        )
        .await
        .map_err(|e| e.to_string())?;
    let context = answer
        .content
        .as_ref()
        .and_then(|c| c.get("context"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    Ok(GetPromptResult {
        description: Some("A prompt built from the context the user gave".into()),
        messages: vec![PromptMessage {
            role: Role::User,
            content: Content::text(format!("Use this context: {context}")),
        }],
    })
}

// --- SEP-2243 custom headers ----------------------------------------------------------

/// A tool whose `region` argument is mirrored into the `Mcp-Param-Region` header. The
/// library checks header against argument (presence, `=?base64?…?=` decoding, equality)
/// before the tool runs.
fn custom_header_tool() -> Result<Tool, ToolDefinitionError> {
    let input_schema = json!({
        "type": "object",
        "properties": {
            "region": {
                "type": "string",
                "description": "The region to run in; sent as the Mcp-Param-Region header",
                "x-mcp-header": "Region",
            },
        },
        "required": ["region"],
    });
    Tool::new(
        "test_custom_header_param",
        "Tests x-mcp-header: its region argument is mirrored into Mcp-Param-Region (SEP-2243)",
        input_schema,
        |_ctx, arguments| {
            Box::pin(async move {
                let region = arguments
                    .get("region")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                Ok(CallToolResult::text(format!("Region: {region}")))
            })
        },
    )
}

// --- helpers --------------------------------------------------------------------------

/// A form with one required string field.
fn string_schema(field: &str) -> Value {
    json!({
        "type": "object",
        "properties": { field: { "type": "string" } },
        "required": [field],
    })
}

/// A form with one required boolean `ok`.
fn ok_schema() -> Value {
    json!({
        "type": "object",
        "properties": { "ok": { "type": "boolean" } },
        "required": ["ok"],
    })
}

fn sampling_params(question: &str, max_tokens: u32) -> Value {
    json!({
        "messages": [{ "role": "user", "content": { "type": "text", "text": question } }],
        "maxTokens": max_tokens,
    })
}

/// The URIs of a `roots` array, comma-separated.
fn root_uris(roots: &Value) -> String {
    let uris: Vec<&str> = roots
        .as_array()
        .map(|roots| {
            roots
                .iter()
                .filter_map(|r| r.get("uri").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if uris.is_empty() {
        "(none)".into()
    } else {
        uris.join(", ")
    }
}
