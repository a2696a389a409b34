//! The four prompts of the prompt scenarios, and the completer `completion-complete` asks
//! about `test_prompt_with_arguments`.

use mcp_actor::protocol::Arguments;
use mcp_actor::{
    Content, GetPromptResult, Prompt, PromptArgument, PromptMessage, RequestContext,
    ResourceContents, Role, ServerBuilder,
};

use crate::fixtures::{PNG_BASE64, PNG_MIME};

/// Adds the conformance prompts to `builder`.
pub fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .prompt(Prompt::new(
            "test_simple_prompt",
            "A simple prompt without arguments",
            Vec::new(),
            simple_prompt,
        ))
        .prompt(
            Prompt::new(
                "test_prompt_with_arguments",
                "A prompt with required arguments",
                vec![
                    required("arg1", "First test argument"),
                    required("arg2", "Second test argument"),
                ],
                prompt_with_arguments,
            )
            .with_completer(complete_argument),
        )
        .prompt(Prompt::new(
            "test_prompt_with_embedded_resource",
            "A prompt that includes an embedded resource",
            vec![required("resourceUri", "URI of the resource to embed")],
            prompt_with_embedded_resource,
        ))
        .prompt(Prompt::new(
            "test_prompt_with_image",
            "A prompt that includes image content",
            Vec::new(),
            prompt_with_image,
        ))
}

fn required(name: &str, description: &str) -> PromptArgument {
    PromptArgument {
        name: name.into(),
        description: Some(description.into()),
        required: true,
    }
}

fn user(content: Content) -> PromptMessage {
    PromptMessage {
        role: Role::User,
        content,
    }
}

fn messages(messages: Vec<PromptMessage>) -> GetPromptResult {
    GetPromptResult {
        description: None,
        messages,
    }
}

async fn simple_prompt(_ctx: RequestContext, _args: Arguments) -> Result<GetPromptResult, String> {
    Ok(messages(vec![user(Content::text(
        "This is a simple prompt for testing.",
    ))]))
}

/// The library has already checked that both required arguments are present.
async fn prompt_with_arguments(
    _ctx: RequestContext,
    args: Arguments,
) -> Result<GetPromptResult, String> {
    let arg = |name: &str| args.get(name).map_or("", String::as_str);
    Ok(messages(vec![user(Content::text(format!(
        "Prompt with arguments: arg1='{}', arg2='{}'",
        arg("arg1"),
        arg("arg2")
    )))]))
}

async fn prompt_with_embedded_resource(
    _ctx: RequestContext,
    args: Arguments,
) -> Result<GetPromptResult, String> {
    let uri = args.get("resourceUri").cloned().unwrap_or_default();
    Ok(messages(vec![
        user(Content::Resource {
            resource: ResourceContents::text(
                uri,
                "text/plain",
                "Embedded resource content for testing.",
            ),
        }),
        user(Content::text("Please process the embedded resource above.")),
    ]))
}

async fn prompt_with_image(
    _ctx: RequestContext,
    _args: Arguments,
) -> Result<GetPromptResult, String> {
    Ok(messages(vec![
        user(Content::Image {
            data: PNG_BASE64.into(),
            mime_type: PNG_MIME.into(),
        }),
        user(Content::text("Please analyze the image above.")),
    ]))
}

/// Suggests values for `arg1` and `arg2` that start with what the user typed so far.
fn complete_argument(argument: &str, typed: &str, _context: &Arguments) -> Vec<String> {
    let candidates: &[&str] = match argument {
        "arg1" => &["testValue1", "test-alpha", "sample-one"],
        "arg2" => &["testValue2", "test-beta", "sample-two"],
        _ => &[],
    };
    candidates
        .iter()
        .filter(|c| c.starts_with(typed))
        .map(|c| c.to_string())
        .collect()
}
