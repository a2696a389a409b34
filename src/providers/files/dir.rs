//! A directory served through a URI template such as `file:///docs/{+path}`: its files are
//! listed as resources and read through the template.
//!
//! A directory must never expose anything outside it. The template variable is checked as a
//! relative path of plain components (so `../`, an absolute path, and their percent-encoded
//! forms such as `%2e%2e`, which the template match decodes first, are refused), then the
//! joined path is canonicalised and must still lie under the canonical root, which refuses a
//! symlink that points outside. Hidden files (any path segment starting with `.`, such as
//! `.env` or `.git/config`) are neither listed nor read unless the entry sets `hidden = true`;
//! the name is checked before the file system is asked, and again after symlinks are
//! resolved, so a visible symlink to a hidden file is refused too.

use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use iri_string::spec::UriSpec;
use iri_string::template::UriTemplateStr;
use iri_string::template::simple_context::SimpleContext;

use super::{BuiltResource, contents, guess_mime};
use crate::config::{Config, ResourceConfig};
use crate::features::resources::{Resource, ResourceError, ResourceTemplate};
use crate::protocol::ResourceContents;
use crate::providers::file_read::{LastComponent, ReadError, read_regular, within};
use crate::providers::{ProviderError, WatchTarget, resolve};

/// A directory root and the template that maps its files to URIs.
#[derive(Debug, Clone)]
pub struct DirRoot {
    /// Canonical path of the directory.
    pub root: PathBuf,
    /// The configured URI template, for expanding a relative path into a URI.
    pub uri_template: String,
    /// The template's one variable.
    pub variable: String,
    max_bytes: usize,
    read_timeout: Duration,
    /// Serve and list hidden files (the entry's `hidden`).
    serve_hidden: bool,
    mime_type: Option<String>,
}

impl DirRoot {
    /// The URI of a file under the root, as the template expands it.
    pub fn uri_of(&self, relative: &Path) -> Option<String> {
        let rel = relative.to_str()?;
        let template = UriTemplateStr::new(&self.uri_template).ok()?;
        let mut context = SimpleContext::new();
        context.insert(self.variable.as_str(), rel);
        template
            .expand::<UriSpec, _>(&context)
            .ok()
            .map(|e| e.to_string())
    }
}

pub(super) fn dir_resources(
    entry: &ResourceConfig,
    key: &str,
    config: &Config,
    base_dir: &Path,
    max_bytes: usize,
) -> Result<BuiltResource, Vec<ProviderError>> {
    let at = |field: &str| format!("{key}.{field}");
    let template_text = entry.uri_template.clone().unwrap_or_default();
    let dir = resolve(base_dir, entry.dir.as_deref().unwrap_or(Path::new("")));
    let root = dir
        .canonicalize()
        .map_err(|e| vec![(at("dir"), format!("cannot open {}: {e}", dir.display()))])?;
    if !root.is_dir() {
        return Err(vec![(
            at("dir"),
            format!("{} is not a directory", root.display()),
        )]);
    }
    let variables: Vec<String> = UriTemplateStr::new(&template_text)
        .map(|t| t.variables().map(|v| v.as_str().to_string()).collect())
        .unwrap_or_default();
    let [variable] = variables.as_slice() else {
        return Err(vec![(
            at("uri_template"),
            "needs exactly one variable for the file's path, as in \"file:///docs/{+path}\"".into(),
        )]);
    };
    let root_info = Arc::new(DirRoot {
        root: root.clone(),
        uri_template: template_text.clone(),
        variable: variable.clone(),
        max_bytes,
        read_timeout: config.file_resources.read_timeout,
        serve_hidden: entry.hidden,
        mime_type: entry.mime_type.clone(),
    });
    let handler_root = Arc::clone(&root_info);
    let mut template = ResourceTemplate::new(
        &template_text,
        entry.name.clone(),
        entry.mime_type.as_deref(),
        move |_, uri, args| {
            let root = Arc::clone(&handler_root);
            async move {
                let relative = args.get(&root.variable).cloned().unwrap_or_default();
                read_under(&root, &relative, uri).await
            }
        },
    )
    .map_err(|e| vec![(at("uri_template"), e.to_string())])?;
    let mut resources = Vec::new();
    if entry.list {
        let mut files = Vec::new();
        let max_listed = config.file_resources.max_listed;
        list_files(&root, &root, max_listed, entry.hidden, &mut files);
        for relative in files {
            let Some(uri) = root_info.uri_of(&relative) else {
                continue;
            };
            let shown = entry
                .mime_type
                .clone()
                .unwrap_or_else(|| guess_mime(&relative));
            let root = Arc::clone(&root_info);
            let rel_text = relative.to_string_lossy().into_owned();
            resources.push(Resource::new(
                uri,
                rel_text.clone(),
                Some(&shown),
                move |_, uri| {
                    let root = Arc::clone(&root);
                    let relative = rel_text.clone();
                    async move { read_under(&root, &relative, uri).await }
                },
            ));
        }
    }
    let names: Vec<String> = resources
        .iter()
        .filter_map(|r| {
            r.descriptor
                .get("name")
                .and_then(|n| n.as_str())
                .map(str::to_string)
        })
        .collect();
    template = template.with_completer(move |_, partial, _| {
        names
            .iter()
            .filter(|n| n.starts_with(partial))
            .cloned()
            .collect()
    });
    Ok(BuiltResource {
        resources,
        template: Some(template),
        watch: config
            .file_resources
            .watch
            .then_some(WatchTarget::Dir(root_info)),
    })
}

/// Regular files under `dir`, relative to `root`, sorted, hidden entries skipped unless
/// `hidden`, at most `max`. Symlinks are not followed, so listing never leaves the root, and
/// FIFOs, sockets and devices are not files, so the listing offers only what a read serves.
fn list_files(root: &Path, dir: &Path, max: usize, hidden: bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        if out.len() >= max {
            return;
        }
        if !hidden && is_hidden_name(&entry.file_name()) {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            list_files(root, &path, max, hidden, out);
        } else if kind.is_file() {
            if let Ok(relative) = path.strip_prefix(root) {
                out.push(relative.to_path_buf());
            }
        }
    }
}

fn is_hidden_name(name: &std::ffi::OsStr) -> bool {
    name.as_bytes().starts_with(b".")
}

/// Whether any segment of `path` names a hidden file or folder.
fn is_hidden(path: &Path) -> bool {
    path.components()
        .any(|c| matches!(c, Component::Normal(name) if is_hidden_name(name)))
}

/// Reads `relative` under the root, refusing anything that would leave it, and hidden files
/// unless the entry serves them.
async fn read_under(
    root: &Arc<DirRoot>,
    relative: &str,
    uri: String,
) -> Result<Vec<ResourceContents>, ResourceError> {
    let path = Path::new(relative);
    let plain = !relative.is_empty()
        && !relative.contains('\0')
        && path.components().all(|c| matches!(c, Component::Normal(_)));
    if !plain {
        tracing::warn!(%uri, "resources/read refused: path leaves the resource root");
        return Err(ResourceError::InvalidUri(format!(
            "{uri}: the path must stay inside the resource's directory (no '..', '.', or absolute paths)"
        )));
    }
    if !root.serve_hidden && is_hidden(path) {
        return Err(ReadError::Hidden.for_uri(uri));
    }
    let joined = root.root.join(path);
    let checked = Arc::clone(root);
    let (canonical, bytes) = within(root.read_timeout, move || {
        let canonical = std::fs::canonicalize(&joined).map_err(|_| ReadError::Missing)?;
        let inside = canonical
            .strip_prefix(&checked.root)
            .map_err(|_| ReadError::Outside)?;
        if !checked.serve_hidden && is_hidden(inside) {
            return Err(ReadError::Hidden);
        }
        // The path was just resolved: a symlink at its end now was swapped in since.
        let bytes = read_regular(
            &canonical,
            checked.max_bytes,
            LastComponent::MustNotBeSymlink,
        )?;
        Ok((canonical, bytes))
    })
    .await
    .map_err(|e| e.for_uri(uri.clone()))?;
    Ok(vec![contents(
        &canonical,
        uri,
        root.mime_type.clone(),
        bytes,
    )])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(dir: &Path) -> Arc<DirRoot> {
        Arc::new(DirRoot {
            root: dir.canonicalize().unwrap(),
            uri_template: "file:///docs/{+path}".into(),
            variable: "path".into(),
            max_bytes: 1024,
            read_timeout: Duration::from_secs(5),
            serve_hidden: false,
            mime_type: None,
        })
    }

    #[tokio::test]
    async fn traversal_is_refused_before_the_file_system_is_asked() {
        let dir = std::env::temp_dir();
        let root = root(&dir);
        for bad in ["../etc/passwd", "a/../../x", "/etc/passwd", "./x", ""] {
            let err = read_under(&root, bad, "u".into()).await.unwrap_err();
            assert!(
                matches!(err, ResourceError::InvalidUri(_)),
                "{bad}: {err:?}"
            );
        }
    }

    #[test]
    fn any_segment_starting_with_a_dot_is_hidden() {
        for hidden in [".env", ".git/config", "a/.ssh/id_rsa", "..x"] {
            assert!(is_hidden(Path::new(hidden)), "{hidden}");
        }
        for visible in ["readme.md", "a/b.c/d", "x.env"] {
            assert!(!is_hidden(Path::new(visible)), "{visible}");
        }
    }

    #[test]
    fn uris_expand_relative_paths_keeping_slashes() {
        let root = root(&std::env::temp_dir());
        assert_eq!(
            root.uri_of(Path::new("guide/a b.md")).unwrap(),
            "file:///docs/guide/a%20b.md"
        );
        assert_eq!(guess_mime(Path::new("x.md")), "text/markdown");
        assert_eq!(guess_mime(Path::new("x.png")), "image/png");
    }
}
