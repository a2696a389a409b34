//! The checks of `[[tools]]`, `[[resources]]` and `[[prompts]]` entries that their types
//! alone cannot make: one kind per entry, known builtins, valid and unique names. Each error
//! is the dotted key to blame and a message, which [`crate::config::Config`] locates in
//! the file. Every failing check is reported, so one `mcp-actor check` lists them all.

use super::{EntryError, PromptConfig, ResourceConfig, ToolConfig, ToolKind};
use crate::config::names::{BUILTIN_TOOLS, validate_tool_name};

/// Checks the provider entries for what their types alone cannot: kinds, names, duplicates.
/// Returns every error found, in entry order.
pub(crate) fn validate(
    tools: &[ToolConfig],
    resources: &[ResourceConfig],
    prompts: &[PromptConfig],
) -> Vec<EntryError> {
    let mut errors = Vec::new();
    validate_tools(tools, &mut errors);
    validate_resources(resources, &mut errors);
    validate_prompts(prompts, &mut errors);
    errors
}

fn at(table: &str, i: usize, key: &str) -> String {
    format!("{table}[{i}].{key}")
}

fn validate_tools(tools: &[ToolConfig], errors: &mut Vec<EntryError>) {
    let mut names = std::collections::HashSet::new();
    for (i, tool) in tools.iter().enumerate() {
        match tool.kind() {
            Err((key, msg)) => errors.push((at("tools", i, key), msg)),
            Ok(ToolKind::Builtin) => {
                let builtin = tool.builtin.as_deref().unwrap_or_default();
                if !BUILTIN_TOOLS.contains(&builtin) {
                    errors.push((
                        at("tools", i, "builtin"),
                        format!(
                            "unknown builtin {builtin:?}; expected one of: {}",
                            BUILTIN_TOOLS.join(", ")
                        ),
                    ));
                }
            }
            Ok(_) => {}
        }
        match tool.exposed_name() {
            None => errors.push((at("tools", i, "name"), "is required".into())),
            Some(name) => {
                if let Err(msg) = validate_tool_name(name) {
                    errors.push((at("tools", i, "name"), msg));
                } else if !names.insert(name.to_string()) {
                    errors.push((
                        at("tools", i, "name"),
                        format!("duplicate tool name {name:?}"),
                    ));
                }
            }
        }
        if tool.command.as_ref().is_some_and(Vec::is_empty) {
            errors.push((
                at("tools", i, "command"),
                "must name a program: [\"program\", \"arg\", ...]".into(),
            ));
        }
        for (key, limit) in [
            ("max_output_bytes", tool.max_output_bytes),
            ("max_response_bytes", tool.max_response_bytes),
        ] {
            if limit == Some(0) {
                errors.push((at("tools", i, key), "must be greater than 0".into()));
            }
        }
        if tool.timeout.is_some_and(|t| t.is_zero()) {
            errors.push((at("tools", i, "timeout"), "must be longer than 0s".into()));
        }
    }
}

fn validate_resources(resources: &[ResourceConfig], errors: &mut Vec<EntryError>) {
    let mut uris = std::collections::HashSet::new();
    for (i, resource) in resources.iter().enumerate() {
        if let Err((key, msg)) = resource.kind() {
            errors.push((at("resources", i, key), msg));
        }
        let uri = match (&resource.uri, &resource.uri_template) {
            (Some(uri), _) => Some(("uri", uri)),
            (_, Some(template)) => Some(("uri_template", template)),
            (None, None) => None,
        };
        if let Some((key, uri)) = uri {
            if !uris.insert(uri.clone()) {
                errors.push((
                    at("resources", i, key),
                    format!("duplicate resource {uri:?}"),
                ));
            }
        }
        if resource.max_bytes == Some(0) {
            errors.push((
                at("resources", i, "max_bytes"),
                "must be greater than 0".into(),
            ));
        }
    }
}

fn validate_prompts(prompts: &[PromptConfig], errors: &mut Vec<EntryError>) {
    let mut names = std::collections::HashSet::new();
    for (i, prompt) in prompts.iter().enumerate() {
        if prompt.name.is_empty() {
            errors.push((at("prompts", i, "name"), "must not be empty".into()));
        } else if !names.insert(prompt.name.clone()) {
            errors.push((
                at("prompts", i, "name"),
                format!("duplicate prompt name {:?}", prompt.name),
            ));
        }
        let sources = [
            prompt.template.is_some(),
            prompt.file.is_some(),
            !prompt.messages.is_empty(),
        ];
        if sources.iter().filter(|s| **s).count() != 1 {
            errors.push((
                at("prompts", i, "name"),
                "needs exactly one of `template`, `file` or `messages`".into(),
            ));
        }
        let mut args = std::collections::HashSet::new();
        for (j, arg) in prompt.arguments.iter().enumerate() {
            if !args.insert(arg.name.as_str()) {
                errors.push((
                    format!("prompts[{i}].arguments[{j}].name"),
                    format!("duplicate argument {:?}", arg.name),
                ));
            }
        }
    }
}
