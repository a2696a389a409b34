//! The builtin tools the binary can expose from `[[tools]] builtin = "..."`: `echo`, `sleep`,
//! `progress` (a burst of progress notifications), `ask` (elicitation) and `sample`
//! (sampling). They double as a live demonstration of the
//! [`RequestContext`] API.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::config::ToolConfig;
use crate::context::RequestContext;
use crate::features::FeatureSet;
use crate::features::tools::{Tool, ToolDefinitionError, ToolError};
use crate::protocol::{CallToolResult, ElicitAction, LogLevel};
use crate::providers::ProviderError;

/// Names accepted by `builtin = "..."`; the configuration owns the list, since it checks
/// entries before any tool is built.
pub use crate::config::names::BUILTIN_TOOLS as NAMES;

/// Progress interval of `sleep`.
const SLEEP_PROGRESS_EVERY: Duration = Duration::from_millis(100);

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to return.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    /// How long to sleep, in milliseconds (at most 600000).
    #[schemars(range(min = 0, max = 600_000))]
    ms: u64,
}

#[derive(Deserialize, JsonSchema)]
struct ProgressArgs {
    /// How many progress notifications to send (at most 100000).
    #[schemars(range(min = 0, max = 100_000))]
    count: u32,
}

#[derive(Deserialize, JsonSchema)]
struct AskArgs {
    /// The question to put to the user.
    question: String,
}

#[derive(Deserialize, JsonSchema)]
struct SampleArgs {
    /// The prompt to send to the client's model.
    prompt: String,
}

/// The configured builtin tools, for `ServerBuilder::features`; entries of other kinds are
/// skipped (see [`crate::providers::build`] for all of them).
pub fn feature_set(tools: &[ToolConfig]) -> Result<FeatureSet, ToolDefinitionError> {
    let tools = tools
        .iter()
        .filter(|t| t.builtin.is_some())
        .map(builtin_tool)
        .collect::<Result<_, _>>()?;
    Ok(FeatureSet {
        tools,
        ..FeatureSet::default()
    })
}

/// The builtin tool of a `[[tools]] builtin = "..."` entry.
pub(crate) fn tool(config: &ToolConfig, key: &str) -> Result<Tool, Vec<ProviderError>> {
    builtin_tool(config).map_err(|e| vec![(format!("{key}.builtin"), e.to_string())])
}

fn builtin_tool(config: &ToolConfig) -> Result<Tool, ToolDefinitionError> {
    let builtin = config.builtin.clone().unwrap_or_default();
    let name = config.name.clone().unwrap_or_else(|| builtin.clone());
    let describe = |default: &str| {
        config
            .description
            .clone()
            .unwrap_or_else(|| default.to_string())
    };
    match builtin.as_str() {
        "echo" => Tool::typed(name, describe("Returns the given text unchanged."), echo),
        "sleep" => Tool::typed(
            name,
            describe("Sleeps for `ms` milliseconds, reporting progress about every 100 ms."),
            sleep,
        ),
        "progress" => Tool::typed(
            name,
            describe("Sends `count` progress notifications as fast as the client reads them."),
            progress,
        ),
        "ask" => Tool::typed(
            name,
            describe("Asks the user a question through elicitation and returns the answer."),
            ask,
        ),
        "sample" => Tool::typed(
            name,
            describe(
                "Sends a prompt to the client's model through sampling and returns its reply.",
            ),
            sample,
        ),
        other => Err(ToolDefinitionError::BadName {
            name: other.to_string(),
            reason: format!("unknown builtin; expected one of: {}", NAMES.join(", ")),
        }),
    }
}

async fn echo(_ctx: RequestContext, args: EchoArgs) -> Result<CallToolResult, ToolError> {
    Ok(CallToolResult::text(args.text))
}

async fn sleep(ctx: RequestContext, args: SleepArgs) -> Result<CallToolResult, ToolError> {
    let total = Duration::from_millis(args.ms);
    ctx.log(
        LogLevel::Info,
        Some("sleep"),
        json!(format!("sleeping {} ms", args.ms)),
    )
    .await;
    let start = tokio::time::Instant::now();
    let deadline = start + total;
    let mut next = start + SLEEP_PROGRESS_EVERY;
    while ctx.wants_progress() && next < deadline {
        tokio::time::sleep_until(next).await;
        let elapsed = next.duration_since(start).as_millis() as f64;
        ctx.progress(elapsed, Some(args.ms as f64), None).await;
        next += SLEEP_PROGRESS_EVERY;
    }
    tokio::time::sleep_until(deadline).await;
    ctx.log(
        LogLevel::Info,
        Some("sleep"),
        json!(format!("slept {} ms", args.ms)),
    )
    .await;
    Ok(CallToolResult::text(format!("slept {} ms", args.ms)))
}

/// Progress 1..=count of count, each sent once the stream has taken the one before: the
/// streams benchmark's tool, and a way to see a client's progress handling.
async fn progress(ctx: RequestContext, args: ProgressArgs) -> Result<CallToolResult, ToolError> {
    let total = f64::from(args.count);
    for step in 1..=args.count {
        if !ctx.wants_progress() {
            break;
        }
        ctx.progress(f64::from(step), Some(total), None).await;
    }
    Ok(CallToolResult::text(args.count.to_string()))
}

async fn ask(ctx: RequestContext, args: AskArgs) -> Result<CallToolResult, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": { "answer": { "type": "string", "title": "Answer", "description": args.question } },
        "required": ["answer"],
    });
    let result = ctx.elicit(&args.question, schema).await?;
    let text = match result.action {
        ElicitAction::Accept => result
            .content
            .as_ref()
            .and_then(|c| c.get("answer"))
            .and_then(|a| a.as_str())
            .map(str::to_string)
            .ok_or_else(|| ToolError::msg("the client accepted but sent no string `answer`"))?,
        ElicitAction::Decline => "declined".to_string(),
        ElicitAction::Cancel => "cancelled".to_string(),
    };
    Ok(CallToolResult::text(text))
}

async fn sample(ctx: RequestContext, args: SampleArgs) -> Result<CallToolResult, ToolError> {
    let params = json!({
        "messages": [{ "role": "user", "content": { "type": "text", "text": args.prompt } }],
        "maxTokens": 1000,
    });
    let result = ctx.sample(params).await?;
    let text = result
        .get("content")
        .and_then(|c| c.get("text"))
        .and_then(|t| t.as_str())
        .ok_or_else(|| ToolError::msg("the client's sampling result has no text content"))?;
    Ok(CallToolResult::text(text))
}
