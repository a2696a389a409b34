//! `[auth.scopes]`: which scopes an operation needs, by tool name, prompt name or canonical
//! resource URI, and the check that resource keys are written the way requests are matched.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::config::resource_uri::{canonical_resource_uri, canonical_uri_prefix};
use crate::protocol::Method;
use crate::protocol::method::ScopeTable;

/// `[auth.scopes]`: the scopes a `tools/call`, `prompts/get` or `resources/read` needs, by
/// tool name, prompt name or resource URI. A key ending in `*` matches by prefix, and `"*"`
/// alone matches every one no other key names. Operations no key matches need only a
/// valid token. Names match byte for byte; resource keys are canonical URIs
/// ([`canonical_resource_uri`]) and are matched against the request's canonical URI.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperationScopes {
    #[serde(default)]
    pub tools: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub prompts: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub resources: BTreeMap<String, Vec<String>>,
}

impl OperationScopes {
    /// The scopes `method` on `name` (a tool or prompt name, a resource URI) needs: the
    /// exact key's, else the longest matching prefix's, else `"*"`'s.
    pub fn needed(&self, method: Method, name: &str) -> &[String] {
        let table = match method.scope_table() {
            Some(ScopeTable::Tools) => &self.tools,
            Some(ScopeTable::Prompts) => &self.prompts,
            Some(ScopeTable::Resources) => &self.resources,
            None => return &[],
        };
        if let Some(scopes) = table.get(name) {
            return scopes;
        }
        table
            .iter()
            .filter_map(|(key, scopes)| {
                let prefix = key.strip_suffix('*')?;
                name.starts_with(prefix).then_some((prefix.len(), scopes))
            })
            .max_by_key(|(len, _)| *len)
            .map_or(&[], |(_, scopes)| scopes.as_slice())
    }

    /// The scope sets of which a caller must hold one for some URI starting with
    /// `prefix` (a resource template's literal text, canonical) to be readable: the rule
    /// that covers the whole prefix, and every key that names something under it. An
    /// empty set means some such URI needs no scope.
    pub fn needed_for_some_under(&self, prefix: &str) -> Vec<&[String]> {
        let table = &self.resources;
        let covering = table
            .iter()
            .filter_map(|(key, scopes)| {
                let p = key.strip_suffix('*')?;
                prefix.starts_with(p).then_some((p.len(), scopes))
            })
            .max_by_key(|(len, _)| *len)
            .map_or(&[][..], |(_, scopes)| scopes.as_slice());
        let under = table
            .iter()
            .filter(|(key, _)| {
                let key = key.strip_suffix('*').unwrap_or(key);
                key.len() > prefix.len() && key.starts_with(prefix)
            })
            .map(|(_, scopes)| scopes.as_slice());
        std::iter::once(covering).chain(under).collect()
    }

    pub(super) fn entries(&self) -> impl Iterator<Item = (&'static str, &String, &Vec<String>)> {
        self.tools
            .iter()
            .map(|(k, v)| ("tools", k, v))
            .chain(self.prompts.iter().map(|(k, v)| ("prompts", k, v)))
            .chain(self.resources.iter().map(|(k, v)| ("resources", k, v)))
    }
}

/// Why a resource scope key is not the canonical URI (or URI prefix) requests are matched
/// on: a key in any other spelling would never match, and protect nothing.
pub(super) fn non_canonical(key: &str) -> Option<String> {
    if key == "*" {
        return None;
    }
    let canonical = match key.strip_suffix('*') {
        Some(prefix) => canonical_uri_prefix(prefix).map(|c| format!("{c}*")),
        None => canonical_resource_uri(key),
    };
    match canonical {
        Ok(canonical) if canonical == key => None,
        Ok(canonical) => Some(format!(
            "is not in canonical form, so no request would match it; write it as {canonical:?}"
        )),
        Err(e) => Some(format!("cannot protect anything: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::OperationScopes;

    #[test]
    fn a_template_is_usable_when_any_uri_under_it_may_be_read() {
        let scopes = |pairs: &[(&str, &str)]| OperationScopes {
            resources: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), vec![v.to_string()]))
                .collect(),
            ..Default::default()
        };
        let rules = scopes(&[("file:///docs/*", "a"), ("file:///docs/public/*", "b")]);
        let needs = rules.needed_for_some_under("file:///docs/");
        assert_eq!(needs, vec![&["a".to_string()][..], &["b".to_string()][..]]);
        assert_eq!(
            rules.needed_for_some_under("file:///other/"),
            vec![&[][..] as &[String]]
        );
    }
}
