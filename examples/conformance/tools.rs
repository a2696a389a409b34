//! The `test_*` tools. Each scenario of the suite calls one of them by name; the function
//! names below drop the `test_` prefix. Tools that talk back to the client mid-call
//! (logging, progress, sampling, elicitation, SSE polling) do it through [`RequestContext`],
//! which is the point of running the suite against the library rather than a mock.

use std::time::Duration;

use mcp_actor::features::tools::ToolDefinitionError;
use mcp_actor::protocol::{ElicitResult, LogLevel};
use mcp_actor::{
    CallToolResult, Content, RequestContext, ResourceContents, ServerBuilder, Tool, ToolError,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::fixtures::{PNG_BASE64, PNG_MIME, WAV_BASE64, WAV_MIME};

/// The pause between the steps of the logging and progress tools. The scenarios want to see
/// notifications spread over the call, not one burst with the result.
const STEP_DELAY: Duration = Duration::from_millis(50);

/// How long `test_reconnection` keeps working after it closed its SSE connection, so the
/// result is produced while the client is disconnected and must be replayed on resume.
const RECONNECTION_DELAY: Duration = Duration::from_millis(100);

// Arguments of the tools that take none. A braced struct (a unit struct would derive
// `{"type": "null"}`; tools need an object schema). A plain comment, not a doc comment,
// because schemars would copy a doc comment into every tool's input schema.
#[derive(Deserialize, JsonSchema)]
struct NoArguments {}

#[derive(Deserialize, JsonSchema)]
struct SamplingArguments {
    /// The prompt to send to the client's model.
    prompt: String,
}

#[derive(Deserialize, JsonSchema)]
struct ElicitationArguments {
    /// The message to show the user.
    message: String,
}

/// Adds every conformance tool to `builder`.
pub fn register(builder: ServerBuilder) -> ServerBuilder {
    let builder = builder
        .tool(
            "test_simple_text",
            "Tests simple text content response",
            simple_text,
        )
        .tool(
            "test_image_content",
            "Tests image content response",
            image_content,
        )
        .tool(
            "test_audio_content",
            "Tests audio content response",
            audio_content,
        )
        .tool(
            "test_embedded_resource",
            "Tests embedded resource content response",
            embedded_resource,
        )
        .tool(
            "test_multiple_content_types",
            "Tests response with multiple content types (text, image, resource)",
            multiple_content_types,
        )
        .tool(
            "test_tool_with_logging",
            "Tests tool that sends log messages during execution",
            tool_with_logging,
        )
        .tool(
            "test_tool_with_progress",
            "Tests tool that reports progress notifications",
            tool_with_progress,
        )
        .tool(
            "test_error_handling",
            "Tests error response handling",
            error_handling,
        )
        .tool(
            "test_sampling",
            "Tests server-initiated sampling (LLM completion request)",
            sampling,
        )
        .tool(
            "test_elicitation",
            "Tests server-initiated elicitation (user input request)",
            elicitation,
        )
        .tool(
            "test_elicitation_sep1034_defaults",
            "Tests elicitation with default values for all primitive types (SEP-1034)",
            elicitation_sep1034_defaults,
        )
        .tool(
            "test_elicitation_sep1330_enums",
            "Tests elicitation with enum schema improvements (SEP-1330)",
            elicitation_sep1330_enums,
        )
        .tool(
            "test_reconnection",
            "Tests SSE polling: closes the SSE stream mid-call so the client must resume \
             with Last-Event-ID to receive the result (SEP-1699)",
            reconnection,
        );
    match json_schema_2020_12_tool() {
        Ok(tool) => builder.add_tool(tool),
        Err(e) => builder.error(e.to_string()),
    }
}

async fn simple_text(_ctx: RequestContext, _: NoArguments) -> Result<CallToolResult, ToolError> {
    Ok(CallToolResult::text(
        "This is a simple text response for testing.",
    ))
}

async fn image_content(_ctx: RequestContext, _: NoArguments) -> Result<CallToolResult, ToolError> {
    Ok(CallToolResult::content(vec![png()]))
}

async fn audio_content(_ctx: RequestContext, _: NoArguments) -> Result<CallToolResult, ToolError> {
    Ok(CallToolResult::content(vec![Content::Audio {
        data: WAV_BASE64.into(),
        mime_type: WAV_MIME.into(),
    }]))
}

async fn embedded_resource(
    _ctx: RequestContext,
    _: NoArguments,
) -> Result<CallToolResult, ToolError> {
    Ok(CallToolResult::content(vec![Content::Resource {
        resource: ResourceContents::text(
            "test://embedded-resource",
            "text/plain",
            "This is an embedded resource content.",
        ),
    }]))
}

async fn multiple_content_types(
    _ctx: RequestContext,
    _: NoArguments,
) -> Result<CallToolResult, ToolError> {
    Ok(CallToolResult::content(vec![
        Content::text("Multiple content types test:"),
        png(),
        Content::Resource {
            resource: ResourceContents::text(
                "test://mixed-content-resource",
                "application/json",
                json!({ "test": "data", "value": 123 }).to_string(),
            ),
        },
    ]))
}

/// Three info-level messages, [`STEP_DELAY`] apart. The scenario sets the level to `debug`
/// first, so none is filtered.
async fn tool_with_logging(
    ctx: RequestContext,
    _: NoArguments,
) -> Result<CallToolResult, ToolError> {
    let steps = [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ];
    for (i, step) in steps.into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(STEP_DELAY).await;
        }
        ctx.log(LogLevel::Info, Some("conformance"), json!(step))
            .await;
    }
    Ok(CallToolResult::text(
        "Tool with logging executed successfully",
    ))
}

/// Progress 0, 50 and 100 of 100, [`STEP_DELAY`] apart. Without a progress token the
/// context sends nothing, and the tool only takes its time.
async fn tool_with_progress(
    ctx: RequestContext,
    _: NoArguments,
) -> Result<CallToolResult, ToolError> {
    const TOTAL: f64 = 100.0;
    for (i, progress) in [0.0, 50.0, TOTAL].into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(STEP_DELAY).await;
        }
        ctx.progress(progress, Some(TOTAL), None).await;
    }
    Ok(CallToolResult::text(
        "Tool with progress executed successfully",
    ))
}

/// A failing handler: the library turns the error into an `isError` result, which is what
/// the scenario requires (a JSON-RPC error would fail it).
async fn error_handling(_ctx: RequestContext, _: NoArguments) -> Result<CallToolResult, ToolError> {
    Err(ToolError::msg(
        "This tool intentionally returns an error for testing",
    ))
}

async fn sampling(
    ctx: RequestContext,
    args: SamplingArguments,
) -> Result<CallToolResult, ToolError> {
    let params = json!({
        "messages": [{ "role": "user", "content": { "type": "text", "text": args.prompt } }],
        "maxTokens": 100,
    });
    let result = ctx.sample(params).await?;
    let text = sampled_text(&result)
        .ok_or_else(|| ToolError::msg("the client's sampling result has no text content"))?;
    Ok(CallToolResult::text(format!("LLM response: {text}")))
}

/// The text of a `sampling/createMessage` result, whose `content` is one block or, since
/// 2025-11-25, an array of blocks.
pub(crate) fn sampled_text(result: &Value) -> Option<&str> {
    fn text_of(block: &Value) -> Option<&str> {
        block.get("text").and_then(Value::as_str)
    }
    match result.get("content")? {
        Value::Array(blocks) => blocks.iter().find_map(text_of),
        block => text_of(block),
    }
}

async fn elicitation(
    ctx: RequestContext,
    args: ElicitationArguments,
) -> Result<CallToolResult, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "username": { "type": "string", "description": "User's response" },
            "email": { "type": "string", "description": "User's email address" },
        },
        "required": ["username", "email"],
    });
    let result = ctx.elicit(&args.message, schema).await?;
    Ok(CallToolResult::text(format!(
        "User response: {}",
        describe(&result)
    )))
}

/// SEP-1034: a default for every primitive type the elicitation schema allows.
async fn elicitation_sep1034_defaults(
    ctx: RequestContext,
    _: NoArguments,
) -> Result<CallToolResult, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "description": "User name", "default": "John Doe" },
            "age": { "type": "integer", "description": "User age", "default": 30 },
            "score": { "type": "number", "description": "User score", "default": 95.5 },
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": { "type": "boolean", "description": "Verification status", "default": true },
        },
    });
    let result = ctx
        .elicit(
            "Please review and update the form fields with defaults",
            schema,
        )
        .await?;
    Ok(CallToolResult::text(format!(
        "Elicitation completed: {}",
        describe(&result)
    )))
}

/// SEP-1330: the five enum shapes — untitled and titled single-select, the deprecated
/// `enumNames` form, and untitled and titled multi-select.
async fn elicitation_sep1330_enums(
    ctx: RequestContext,
    _: NoArguments,
) -> Result<CallToolResult, ToolError> {
    let titled = |titles: [&str; 3]| {
        titles
            .iter()
            .enumerate()
            .map(|(i, title)| json!({ "const": format!("value{}", i + 1), "title": title }))
            .collect::<Vec<_>>()
    };
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Select an option",
                "enum": ["option1", "option2", "option3"],
            },
            "titledSingle": {
                "type": "string",
                "description": "Select a titled option",
                "oneOf": titled(["First Option", "Second Option", "Third Option"]),
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select a legacy option",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "items": { "type": "string", "enum": ["option1", "option2", "option3"] },
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple titled options",
                "items": { "anyOf": titled(["First Choice", "Second Choice", "Third Choice"]) },
            },
        },
    });
    let result = ctx
        .elicit("Please select options from the enum fields", schema)
        .await?;
    Ok(CallToolResult::text(format!(
        "Elicitation completed: {}",
        describe(&result)
    )))
}

/// `action=<accept|decline|cancel>, content=<the submitted object>`.
pub(crate) fn describe(result: &ElicitResult) -> String {
    let action = serde_json::to_value(result.action).unwrap_or(Value::Null);
    let action = action.as_str().unwrap_or("unknown");
    let content = result.content.as_ref().map_or_else(
        || "{}".to_string(),
        |c| Value::Object(c.clone()).to_string(),
    );
    format!("action={action}, content={content}")
}

/// SEP-1699 polling: close the SSE connection carrying this call, keep working, then answer.
/// The result lands in the stream's replay log, so the client only sees it by reconnecting
/// with `Last-Event-ID` after the `retry` interval.
async fn reconnection(ctx: RequestContext, _: NoArguments) -> Result<CallToolResult, ToolError> {
    ctx.close_sse_stream().await;
    tokio::time::sleep(RECONNECTION_DELAY).await;
    Ok(CallToolResult::text(
        "Reconnection test completed: the result was sent after the SSE stream was closed",
    ))
}

/// SEP-1613: a hand-written 2020-12 input schema that `tools/list` must return verbatim:
/// `$schema`, `$defs` with a `$ref` to it, and `additionalProperties`. It also carries the
/// keywords SEP-2106 adds to the check from 2026-07-28 on (`$anchor`, `allOf`/`anyOf`,
/// `if`/`then`/`else`), copied from the newer suite, so one schema satisfies both suites.
/// Built with [`Tool::new`] because a derived schema would not have this exact shape.
fn json_schema_2020_12_tool() -> Result<Tool, ToolDefinitionError> {
    let input_schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {
                    "street": { "type": "string" },
                    "city": { "type": "string" },
                },
            },
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" },
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": {
            "properties": { "contactMethod": { "const": "phone" } },
            "required": ["contactMethod"],
        },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false,
    });
    Tool::new(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        input_schema,
        |_ctx, arguments| {
            Box::pin(async move {
                Ok(CallToolResult::text(format!(
                    "JSON Schema 2020-12 tool called with: {arguments}"
                )))
            })
        },
    )
}

fn png() -> Content {
    Content::Image {
        data: PNG_BASE64.into(),
        mime_type: PNG_MIME.into(),
    }
}
