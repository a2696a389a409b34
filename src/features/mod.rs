//! What the server offers: tools, resources, resource templates and prompts, and the
//! feature methods over them (list with pagination, call, read, get, complete).
//!
//! [`Features`] is immutable once built and shared behind an `Arc`, so any number of tasks
//! read it without locking. It never touches session state: the session actor and the
//! stateless path both call into it with a [`RequestContext`]. A configuration reload does
//! not change a `Features`: it builds a new one from a [`FeatureSet`] and the server swaps
//! the `Arc`, so a call already running keeps the tools it started with.

/// The builder methods prompts and resource templates share: extra descriptor fields and a
/// completer for their arguments. `$fields` names the descriptor fields in the docs.
macro_rules! descriptor_and_completer {
    ($fields:literal) => {
        #[doc = concat!("Sets an optional descriptor field: ", $fields, ".")]
        pub fn with(mut self, field: &str, value: serde_json::Value) -> Self {
            self.descriptor[field] = value;
            self
        }

        /// Answers `completion/complete` for its arguments: `(argument name, partial
        /// value, other arguments)` to suggestions.
        pub fn with_completer(
            mut self,
            completer: impl Fn(&str, &str, &crate::protocol::Arguments) -> Vec<String>
            + Send
            + Sync
            + 'static,
        ) -> Self {
            self.completer = Some(std::sync::Arc::new(completer));
            self
        }
    };
}

mod pages;
pub mod prompts;
pub mod resources;
pub mod tools;

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::config::resource_uri::{canonical_resource_uri, canonical_uri_prefix};
use crate::context::{Grants, RequestContext};
use crate::jsonrpc::{RpcError, params_object};
use crate::protocol::{Answer, Arguments, Method};
use prompts::Prompt;
use resources::{Resource, ResourceError, ResourceTemplate};
use tools::Tool;

/// Everything a server exposes, indexed for lookup.
#[derive(Clone, Default)]
pub struct Features {
    tools: Vec<Tool>,
    tool_index: HashMap<String, usize>,
    resources: Vec<Resource>,
    resource_index: HashMap<String, usize>,
    templates: Vec<ResourceTemplate>,
    prompts: Vec<Prompt>,
    prompt_index: HashMap<String, usize>,
    page_size: usize,
}

/// What a server exposes, before it is indexed: the builder collects one, and a
/// configuration reload builds a new one.
#[derive(Clone, Default)]
pub struct FeatureSet {
    pub tools: Vec<Tool>,
    pub resources: Vec<Resource>,
    pub templates: Vec<ResourceTemplate>,
    pub prompts: Vec<Prompt>,
}

impl FeatureSet {
    /// Indexes the set; every duplicate name is reported.
    pub(crate) fn into_features(self, page_size: usize) -> Result<Features, Vec<String>> {
        let mut errors = Vec::new();
        let mut features = Features::new(page_size);
        for tool in self.tools {
            if let Err(e) = features.add_tool(tool) {
                errors.push(e.to_string());
            }
        }
        for resource in self.resources {
            if let Err(e) = features.add_resource(resource) {
                errors.push(e.to_string());
            }
        }
        for template in self.templates {
            features.add_template(template);
        }
        for prompt in self.prompts {
            if let Err(e) = features.add_prompt(prompt) {
                errors.push(e.to_string());
            }
        }
        if errors.is_empty() {
            Ok(features)
        } else {
            Err(errors)
        }
    }
}

/// Which lists differ between two [`Features`]: the `list_changed` notifications a swap
/// owes every session. Only what a client can list counts; a tool whose command changed but
/// whose descriptor did not needs no notification.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListChanges {
    pub tools: bool,
    pub resources: bool,
    pub prompts: bool,
}

/// Two registrations under one name.
#[derive(Debug, thiserror::Error)]
#[error("duplicate {kind} {name:?}")]
pub struct DuplicateName {
    pub kind: &'static str,
    pub name: String,
}

impl Features {
    pub(crate) fn new(page_size: usize) -> Self {
        Features {
            page_size: page_size.max(1),
            ..Default::default()
        }
    }

    pub(crate) fn add_tool(&mut self, tool: Tool) -> Result<(), DuplicateName> {
        insert_unique(&mut self.tool_index, tool.name(), self.tools.len(), "tool")?;
        self.tools.push(tool);
        Ok(())
    }

    pub(crate) fn add_resource(&mut self, resource: Resource) -> Result<(), DuplicateName> {
        // Indexed by the canonical URI a read resolves; one that has none can never be read.
        let key = canonical_resource_uri(&resource.uri).unwrap_or_else(|_| resource.uri.clone());
        insert_unique(
            &mut self.resource_index,
            &key,
            self.resources.len(),
            "resource",
        )?;
        self.resources.push(resource);
        Ok(())
    }

    pub(crate) fn add_template(&mut self, template: ResourceTemplate) {
        self.templates.push(template);
    }

    pub(crate) fn add_prompt(&mut self, prompt: Prompt) -> Result<(), DuplicateName> {
        insert_unique(
            &mut self.prompt_index,
            &prompt.name,
            self.prompts.len(),
            "prompt",
        )?;
        self.prompts.push(prompt);
        Ok(())
    }

    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tool_index.get(name).map(|&i| &self.tools[i])
    }

    /// What differs between `self` (the running features) and `new`.
    pub fn list_changes(&self, new: &Features) -> ListChanges {
        fn differ<'a>(
            a: impl Iterator<Item = &'a Value>,
            b: impl Iterator<Item = &'a Value>,
        ) -> bool {
            !a.eq(b)
        }
        ListChanges {
            tools: differ(
                self.tools.iter().map(Tool::descriptor),
                new.tools.iter().map(Tool::descriptor),
            ),
            resources: differ(
                self.resources.iter().map(|r| &r.descriptor),
                new.resources.iter().map(|r| &r.descriptor),
            ) || differ(
                self.templates.iter().map(|t| &t.descriptor),
                new.templates.iter().map(|t| &t.descriptor),
            ),
            prompts: differ(
                self.prompts.iter().map(|p| &p.descriptor),
                new.prompts.iter().map(|p| &p.descriptor),
            ),
        }
    }

    pub fn has_tools(&self) -> bool {
        !self.tools.is_empty()
    }

    /// `tools/list`: the tools `grants` allows calling.
    pub fn list_tools(&self, grants: &Grants, params: Option<&Value>) -> Result<Value, RpcError> {
        let shown = self
            .tools
            .iter()
            .filter(|t| grants.allows(Method::ToolsCall, t.name()));
        pages::page(self.page_size, params, "tools", shown.map(Tool::descriptor))
    }

    /// `tools/call`. Unknown tools and malformed params are protocol errors; everything
    /// else, including invalid arguments, is an `isError` result.
    pub async fn call_tool(
        &self,
        ctx: RequestContext,
        params: Option<Value>,
    ) -> Result<Answer, RpcError> {
        // Owned params, so the arguments move into the handler instead of being copied.
        let mut params = match params {
            None => Map::new(),
            Some(Value::Object(map)) => map,
            Some(_) => return Err(RpcError::invalid_params("params must be a JSON object")),
        };
        let arguments = tools::call_arguments(params.remove("arguments"))
            .ok_or_else(|| RpcError::invalid_params("tools/call `arguments` must be an object"))?;
        let name = required_str(&params, "name")?;
        let tool = self
            .tool(name)
            .ok_or_else(|| RpcError::invalid_params(format!("unknown tool: {name:?}")))?;
        Ok(tool.call(ctx, arguments).await)
    }

    /// `resources/list`: the resources `grants` allows reading.
    pub fn list_resources(
        &self,
        grants: &Grants,
        params: Option<&Value>,
    ) -> Result<Value, RpcError> {
        let shown = self.resources.iter().filter(|r| {
            canonical_resource_uri(&r.uri)
                .is_ok_and(|uri| grants.allows(Method::ResourcesRead, &uri))
        });
        pages::page(
            self.page_size,
            params,
            "resources",
            shown.map(|r| &r.descriptor),
        )
    }

    /// `resources/templates/list`: the templates through which `grants` allows reading
    /// something.
    pub fn list_resource_templates(
        &self,
        grants: &Grants,
        params: Option<&Value>,
    ) -> Result<Value, RpcError> {
        let shown = self.templates.iter().filter(|t| {
            let prefix = t.template.literal_prefix();
            let prefix = canonical_uri_prefix(prefix).unwrap_or_else(|_| prefix.to_string());
            grants.allows_some_under(&prefix)
        });
        pages::page(
            self.page_size,
            params,
            "resourceTemplates",
            shown.map(|t| &t.descriptor),
        )
    }

    /// Whether `uri` names a resource or matches a template.
    pub fn knows_resource(&self, uri: &str) -> bool {
        let Ok(uri) = canonical_resource_uri(uri) else {
            return false;
        };
        self.resource_index.contains_key(&uri)
            || self
                .templates
                .iter()
                .any(|t| t.template.matches(&uri).is_some())
    }

    /// `resources/read`: the exact resource first, then the first matching template, both
    /// on the canonical URI, the one `[auth.scopes]` was decided on.
    pub async fn read_resource(
        &self,
        ctx: RequestContext,
        params: Option<&Value>,
    ) -> Result<Value, RpcError> {
        let params = params_object(params)?;
        let uri = required_str(params, "uri")?.to_string();
        let canonical = canonical_resource_uri(&uri).map_err(|e| {
            // A URI with dot segments or encoded tricks is refused here, before any
            // resolver sees it; the operator still hears of it, as of any refused read.
            crate::log_limit::warn_limited!(%uri, reason = %e, "resources/read refused");
            RpcError::from(ResourceError::InvalidUri(e.to_string()))
        })?;
        let (handler, args) = if let Some(&i) = self.resource_index.get(&canonical) {
            (self.resources[i].handler.clone(), Arguments::new())
        } else {
            self.templates
                .iter()
                .find_map(|t| {
                    t.template
                        .matches(&canonical)
                        .map(|args| (t.handler.clone(), args))
                })
                .ok_or_else(|| RpcError::from(ResourceError::NotFound(uri.clone())))?
        };
        let contents = handler(ctx, uri, args).await?;
        Ok(json!({ "contents": contents }))
    }

    /// `prompts/list`: the prompts `grants` allows getting.
    pub fn list_prompts(&self, grants: &Grants, params: Option<&Value>) -> Result<Value, RpcError> {
        let shown = self
            .prompts
            .iter()
            .filter(|p| grants.allows(Method::PromptsGet, &p.name));
        pages::page(
            self.page_size,
            params,
            "prompts",
            shown.map(|p| &p.descriptor),
        )
    }

    /// `prompts/get`: -32602 for an unknown prompt or a missing required argument.
    pub async fn get_prompt(
        &self,
        ctx: RequestContext,
        params: Option<&Value>,
    ) -> Result<Value, RpcError> {
        let params = params_object(params)?;
        let name = required_str(params, "name")?;
        let prompt = self
            .prompt_index
            .get(name)
            .map(|&i| &self.prompts[i])
            .ok_or_else(|| RpcError::invalid_params(format!("unknown prompt: {name:?}")))?;
        let args = string_map(params.get("arguments"), "arguments")?;
        let result = prompt.get(ctx, args).await?;
        serde_json::to_value(result).map_err(|e| RpcError::internal(e.to_string()))
    }

    /// `completion/complete` for prompt arguments and template variables. A prompt
    /// `grants` does not allow is as unknown here as in `prompts/list`.
    pub fn complete(&self, grants: &Grants, params: Option<&Value>) -> Result<Value, RpcError> {
        const MAX_VALUES: usize = 100;
        let params = params_object(params)?;
        let reference = params
            .get("ref")
            .and_then(Value::as_object)
            .ok_or_else(|| RpcError::invalid_params("completion/complete needs a `ref` object"))?;
        let argument = params
            .get("argument")
            .and_then(Value::as_object)
            .ok_or_else(|| {
                RpcError::invalid_params("completion/complete needs an `argument` object")
            })?;
        let arg_name = required_str(argument, "name")?;
        let arg_value = argument.get("value").and_then(Value::as_str).unwrap_or("");
        let context = string_map(
            params.get("context").and_then(|c| c.get("arguments")),
            "context.arguments",
        )?;
        let completer = match reference.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => {
                let name = required_str(reference, "name")?;
                let prompt = self
                    .prompt_index
                    .get(name)
                    .map(|&i| &self.prompts[i])
                    .filter(|_| grants.allows(Method::PromptsGet, name))
                    .ok_or_else(|| RpcError::invalid_params(format!("unknown prompt: {name:?}")))?;
                prompt.completer.clone()
            }
            Some("ref/resource") => {
                let uri = required_str(reference, "uri")?;
                let template = self
                    .templates
                    .iter()
                    .find(|t| t.descriptor.get("uriTemplate").and_then(Value::as_str) == Some(uri))
                    .ok_or_else(|| {
                        RpcError::invalid_params(format!("unknown resource template: {uri:?}"))
                    })?;
                template.completer.clone()
            }
            other => {
                return Err(RpcError::invalid_params(format!(
                    "unknown ref type {other:?}; expected \"ref/prompt\" or \"ref/resource\""
                )));
            }
        };
        let mut values = completer
            .map(|c| c(arg_name, arg_value, &context))
            .unwrap_or_default();
        let total = values.len();
        values.truncate(MAX_VALUES);
        Ok(
            json!({ "completion": { "values": values, "total": total, "hasMore": total > MAX_VALUES } }),
        )
    }
}

fn insert_unique(
    index: &mut HashMap<String, usize>,
    name: &str,
    at: usize,
    kind: &'static str,
) -> Result<(), DuplicateName> {
    if index.contains_key(name) {
        return Err(DuplicateName {
            kind,
            name: name.to_string(),
        });
    }
    index.insert(name.to_string(), at);
    Ok(())
}

pub(crate) fn required_str<'a>(
    params: &'a Map<String, Value>,
    key: &str,
) -> Result<&'a str, RpcError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params(format!("missing or non-string `{key}`")))
}

fn string_map(value: Option<&Value>, what: &str) -> Result<Arguments, RpcError> {
    match value {
        None | Some(Value::Null) => Ok(Arguments::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(RpcError::invalid_params(format!(
                    "`{what}.{k}` must be a string"
                ))),
            })
            .collect(),
        Some(_) => Err(RpcError::invalid_params(format!(
            "`{what}` must be an object of strings"
        ))),
    }
}
