//! Prompts from configuration: `[[prompts]]` with declared arguments and minijinja
//! templates.
//!
//! Templates compile when the configuration loads, and every variable a template reads must
//! be a declared argument, so a typo such as `{{ lang }}` for `language` is a configuration
//! error with its line, not an empty hole in a rendered prompt. An optional argument the
//! client leaves out is undefined in the template: `{% if language %}` tests for it, and
//! `{{ language }}` renders as nothing.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use minijinja::Environment;
use serde_json::json;

use super::metadata::icons_json;
use super::{ProviderError, resolve};
use crate::config::PromptConfig;
use crate::features::prompts::Prompt;
use crate::protocol::{Content, GetPromptResult, PromptArgument, PromptMessage, Role};

/// Builds the prompt of a `[[prompts]]` entry.
pub(crate) fn prompt(
    entry: &PromptConfig,
    key: &str,
    base_dir: &Path,
) -> Result<Prompt, Vec<ProviderError>> {
    let at = |field: &str| format!("{key}.{field}");
    let mut sources: Vec<(Role, String, String)> = Vec::new();
    if let Some(template) = &entry.template {
        sources.push((Role::User, template.clone(), at("template")));
    }
    if let Some(file) = &entry.file {
        let path = resolve(base_dir, file);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| vec![(at("file"), format!("cannot read {}: {e}", path.display()))])?;
        sources.push((Role::User, text, at("file")));
    }
    for (i, message) in entry.messages.iter().enumerate() {
        sources.push((
            message.role,
            message.template.clone(),
            format!("{key}.messages[{i}].template"),
        ));
    }
    let mut env = Environment::new();
    env.set_keep_trailing_newline(true);
    let declared: Vec<&str> = entry.arguments.iter().map(|a| a.name.as_str()).collect();
    let mut errors = Vec::new();
    let mut roles = Vec::new();
    for (i, (role, source, source_key)) in sources.into_iter().enumerate() {
        let name = i.to_string();
        if let Err(e) = env.add_template_owned(name.clone(), source) {
            errors.push((source_key, format!("is not a valid template: {e}")));
            continue;
        }
        if let Ok(template) = env.get_template(&name) {
            let mut unknown: Vec<String> = template
                .undeclared_variables(false)
                .into_iter()
                .filter(|v| !declared.contains(&v.as_str()))
                .collect();
            unknown.sort();
            for variable in unknown {
                errors.push((
                    source_key.clone(),
                    format!(
                        "uses {{{{ {variable} }}}}, which is not a declared argument of this prompt"
                    ),
                ));
            }
        }
        roles.push((name, role));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let arguments: Vec<PromptArgument> = entry
        .arguments
        .iter()
        .map(|a| PromptArgument {
            name: a.name.clone(),
            description: a.description.clone(),
            required: a.required,
        })
        .collect();
    let env = Arc::new(env);
    let roles = Arc::new(roles);
    let description = entry.description.clone();
    let name = entry.name.clone();
    let mut prompt = Prompt::new(
        entry.name.clone(),
        entry.description.clone().unwrap_or_default(),
        arguments,
        move |_, args| {
            let env = Arc::clone(&env);
            let roles = Arc::clone(&roles);
            let description = description.clone();
            let name = name.clone();
            async move {
                let context: BTreeMap<String, String> = args.into_iter().collect();
                let mut messages = Vec::new();
                for (template, role) in roles.iter() {
                    let text = env
                        .get_template(template)
                        .and_then(|t| t.render(&context))
                        .map_err(|e| format!("rendering prompt {name:?} failed: {e}"))?;
                    messages.push(PromptMessage {
                        role: *role,
                        content: Content::text(text),
                    });
                }
                Ok(GetPromptResult {
                    description,
                    messages,
                })
            }
        },
    );
    if let Some(title) = &entry.title {
        prompt = prompt.with("title", json!(title));
    }
    if !entry.icons.is_empty() {
        prompt = prompt.with("icons", icons_json(&entry.icons));
    }
    if entry.arguments.iter().any(|a| a.title.is_some()) {
        // PromptArgument has no title field; the descriptor carries it (2025-06-18 on).
        let described: Vec<serde_json::Value> = entry
            .arguments
            .iter()
            .map(|a| {
                let mut v = json!({ "name": a.name, "required": a.required });
                if let Some(d) = &a.description {
                    v["description"] = json!(d);
                }
                if let Some(t) = &a.title {
                    v["title"] = json!(t);
                }
                v
            })
            .collect();
        prompt = prompt.with("arguments", json!(described));
    }
    let completions: Vec<(String, Vec<String>)> = entry
        .arguments
        .iter()
        .filter(|a| !a.completions.is_empty())
        .map(|a| (a.name.clone(), a.completions.clone()))
        .collect();
    if !completions.is_empty() {
        prompt = prompt
            .with_completer(move |argument, partial, _| complete(&completions, argument, partial));
    }
    Ok(prompt)
}

/// The configured values of `argument` that start with `partial`, ignoring case.
fn complete(completions: &[(String, Vec<String>)], argument: &str, partial: &str) -> Vec<String> {
    let partial = partial.to_lowercase();
    completions
        .iter()
        .find(|(name, _)| name == argument)
        .map(|(_, values)| {
            values
                .iter()
                .filter(|v| v.to_lowercase().starts_with(&partial))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PromptArgumentConfig;

    fn entry(template: &str) -> PromptConfig {
        PromptConfig {
            name: "review".into(),
            template: Some(template.into()),
            arguments: vec![PromptArgumentConfig {
                name: "code".into(),
                title: None,
                description: None,
                required: true,
                completions: vec!["Rust".into(), "Python".into()],
            }],
            ..Default::default()
        }
    }

    #[test]
    fn undeclared_variables_and_syntax_errors_are_configuration_errors() {
        let Err(err) = prompt(&entry("{{ lang }}"), "prompts[0]", Path::new(".")) else {
            panic!("an undeclared variable must be refused");
        };
        assert!(err[0].1.contains("lang"), "{err:?}");
        assert_eq!(err[0].0, "prompts[0].template");
        assert!(prompt(&entry("{% if %}"), "prompts[0]", Path::new(".")).is_err());
        assert!(prompt(&entry("Review {{ code }}"), "prompts[0]", Path::new(".")).is_ok());
    }

    #[test]
    fn completion_filters_by_prefix_ignoring_case() {
        let values = vec![(
            "lang".to_string(),
            vec!["Rust".to_string(), "Ruby".to_string(), "Go".to_string()],
        )];
        assert_eq!(complete(&values, "lang", "ru"), ["Rust", "Ruby"]);
        assert!(complete(&values, "other", "").is_empty());
    }
}
