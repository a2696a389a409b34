//! The checks of `[[tools]]`, `[[resources]]` and `[[prompts]]` entries that their types
//! alone cannot make: one kind per entry, known builtins, valid and unique names. Each error
//! is the dotted key to blame and a message, which [`crate::config::Config`] locates in
//! the file.

use super::{EntryError, PromptConfig, ResourceConfig, ToolConfig, ToolKind};
use crate::config::names::{BUILTIN_TOOLS, validate_tool_name};

/// Checks the provider entries for what their types alone cannot: kinds, names, duplicates.
pub(crate) fn validate(
    tools: &[ToolConfig],
    resources: &[ResourceConfig],
    prompts: &[PromptConfig],
) -> Result<(), EntryError> {
    let at = |table: &str, i: usize, key: &str| format!("{table}[{i}].{key}");
    let mut names = std::collections::HashSet::new();
    for (i, tool) in tools.iter().enumerate() {
        let kind = tool
            .kind()
            .map_err(|(key, msg)| (at("tools", i, key), msg))?;
        if kind == ToolKind::Builtin {
            let builtin = tool.builtin.as_deref().unwrap_or_default();
            if !BUILTIN_TOOLS.contains(&builtin) {
                return Err((
                    at("tools", i, "builtin"),
                    format!(
                        "unknown builtin {builtin:?}; expected one of: {}",
                        BUILTIN_TOOLS.join(", ")
                    ),
                ));
            }
        }
        let Some(name) = tool.exposed_name() else {
            return Err((at("tools", i, "name"), "is required".into()));
        };
        if let Err(msg) = validate_tool_name(name) {
            return Err((at("tools", i, "name"), msg));
        }
        if !names.insert(name.to_string()) {
            return Err((
                at("tools", i, "name"),
                format!("duplicate tool name {name:?}"),
            ));
        }
        if tool.command.as_ref().is_some_and(Vec::is_empty) {
            return Err((
                at("tools", i, "command"),
                "must name a program: [\"program\", \"arg\", ...]".into(),
            ));
        }
        let zero_limit = [
            ("max_output_bytes", tool.max_output_bytes),
            ("max_response_bytes", tool.max_response_bytes),
        ]
        .into_iter()
        .find(|(_, v)| *v == Some(0));
        if let Some((key, _)) = zero_limit {
            return Err((at("tools", i, key), "must be greater than 0".into()));
        }
        if tool.timeout.is_some_and(|t| t.is_zero()) {
            return Err((at("tools", i, "timeout"), "must be longer than 0s".into()));
        }
    }
    let mut uris = std::collections::HashSet::new();
    for (i, resource) in resources.iter().enumerate() {
        resource
            .kind()
            .map_err(|(key, msg)| (at("resources", i, key), msg))?;
        let (key, uri) = match (&resource.uri, &resource.uri_template) {
            (Some(uri), _) => ("uri", uri),
            (_, Some(template)) => ("uri_template", template),
            (None, None) => continue,
        };
        if !uris.insert(uri.clone()) {
            return Err((
                at("resources", i, key),
                format!("duplicate resource {uri:?}"),
            ));
        }
        if resource.max_bytes == Some(0) {
            return Err((
                at("resources", i, "max_bytes"),
                "must be greater than 0".into(),
            ));
        }
    }
    let mut names = std::collections::HashSet::new();
    for (i, prompt) in prompts.iter().enumerate() {
        if prompt.name.is_empty() {
            return Err((at("prompts", i, "name"), "must not be empty".into()));
        }
        if !names.insert(prompt.name.clone()) {
            return Err((
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
            return Err((
                at("prompts", i, "name"),
                "needs exactly one of `template`, `file` or `messages`".into(),
            ));
        }
        let mut args = std::collections::HashSet::new();
        for (j, arg) in prompt.arguments.iter().enumerate() {
            if !args.insert(arg.name.as_str()) {
                return Err((
                    format!("prompts[{i}].arguments[{j}].name"),
                    format!("duplicate argument {:?}", arg.name),
                ));
            }
        }
    }
    Ok(())
}
