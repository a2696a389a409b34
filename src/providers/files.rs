//! File resources: inline text or base64, one file, or a directory served through a URI
//! template such as `file:///docs/{+path}`.
//!
//! A directory must never expose anything outside it. The template variable is checked as a
//! relative path of plain components (so `../`, an absolute path, and their percent-encoded
//! forms such as `%2e%2e`, which the template match decodes first, are refused), then the
//! joined path is canonicalised and must still lie under the canonical root, which refuses a
//! symlink that points outside. Hidden files (any path segment starting with `.`, such as
//! `.env` or `.git/config`) are neither listed nor read unless the entry sets `hidden = true`;
//! the name is checked before the file system is asked, and again after symlinks are
//! resolved, so a visible symlink to a hidden file is refused too. Files are read at each
//! `resources/read`, so an edit shows at once; a file over `max_bytes` is refused rather than
//! cut, because half a file read as the whole is worse than an error. How one file is read
//! (regular files only, bounded, under `file_resources.read_timeout`) is in
//! [`super::file_read`].

use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use iri_string::spec::UriSpec;
use iri_string::template::UriTemplateStr;
use iri_string::template::simple_context::SimpleContext;
use serde_json::json;

use super::file_read::{LastComponent, ReadError, read_regular, within};
use super::{ProviderError, WatchTarget, resolve};
use crate::config::{Config, ResourceConfig, ResourceKind};
use crate::features::resources::{Resource, ResourceError, ResourceTemplate};
use crate::protocol::ResourceContents;

/// What one `[[resources]]` entry provides.
pub(crate) struct BuiltResource {
    pub resources: Vec<Resource>,
    pub template: Option<ResourceTemplate>,
    pub watch: Option<WatchTarget>,
}

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

pub(crate) fn resource(
    entry: &ResourceConfig,
    key: &str,
    config: &Config,
    base_dir: &Path,
) -> Result<BuiltResource, Vec<ProviderError>> {
    let at = |field: &str| format!("{key}.{field}");
    let kind = entry
        .kind()
        .map_err(|(field, msg)| vec![(at(field), msg)])?;
    let max_bytes = entry.max_bytes.unwrap_or(config.file_resources.max_bytes);
    let read_timeout = config.file_resources.read_timeout;
    let watch_files = config.file_resources.watch;
    let uri = entry.uri.clone().unwrap_or_default();
    let mime = entry.mime_type.clone();
    let built = match kind {
        ResourceKind::Text => {
            let text = entry.text.clone().unwrap_or_default();
            let mime = mime.unwrap_or_else(|| "text/plain".into());
            single(fixed(&uri, &entry.name, mime, move |uri, mime| {
                ResourceContents::text(uri, mime, text.clone())
            }))
        }
        ResourceKind::Blob => {
            let blob = entry.blob.clone().unwrap_or_default();
            if STANDARD.decode(&blob).is_err() {
                return Err(vec![(at("blob"), "is not valid base64".into())]);
            }
            let mime = mime.unwrap_or_else(|| "application/octet-stream".into());
            single(fixed(&uri, &entry.name, mime, move |uri, mime| {
                ResourceContents::blob(uri, mime, blob.clone())
            }))
        }
        ResourceKind::File => {
            let path = resolve(base_dir, entry.file.as_deref().unwrap_or(Path::new("")));
            let path = path
                .canonicalize()
                .map_err(|e| vec![(at("file"), format!("cannot open {}: {e}", path.display()))])?;
            if !path.is_file() {
                return Err(vec![(
                    at("file"),
                    format!("{} is not a file", path.display()),
                )]);
            }
            let shown_mime = mime.clone().unwrap_or_else(|| guess_mime(&path));
            let read_path = path.clone();
            let resource = Resource::new(
                uri.clone(),
                entry.name.clone(),
                Some(&shown_mime),
                move |_, uri| {
                    let path = read_path.clone();
                    let mime = mime.clone();
                    async move {
                        read_file(path, uri, mime, max_bytes, read_timeout)
                            .await
                            .map(|c| vec![c])
                    }
                },
            );
            let mut built = single(resource);
            built.watch = watch_files.then_some(WatchTarget::File { path, uri });
            built
        }
        ResourceKind::Dir => dir_resources(entry, key, config, base_dir, max_bytes)?,
    };
    Ok(BuiltResource {
        resources: built
            .resources
            .into_iter()
            .map(|r| describe(r, entry))
            .collect(),
        template: built.template.map(|t| {
            let mut t = t;
            if let Some(title) = &entry.title {
                t = t.with("title", json!(title));
            }
            if let Some(description) = &entry.description {
                t = t.with("description", json!(description));
            }
            t
        }),
        watch: built.watch,
    })
}

fn single(resource: Resource) -> BuiltResource {
    BuiltResource {
        resources: vec![resource],
        template: None,
        watch: None,
    }
}

fn describe(mut resource: Resource, entry: &ResourceConfig) -> Resource {
    if entry.dir.is_some() {
        return resource;
    }
    if let Some(title) = &entry.title {
        resource = resource.with("title", json!(title));
    }
    if let Some(description) = &entry.description {
        resource = resource.with("description", json!(description));
    }
    resource
}

fn dir_resources(
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

/// Reads the configured file at `path` (a `file` entry).
async fn read_file(
    path: PathBuf,
    uri: String,
    mime: Option<String>,
    max_bytes: usize,
    read_timeout: Duration,
) -> Result<ResourceContents, ResourceError> {
    let opened = path.clone();
    let bytes = within(read_timeout, move || {
        read_regular(&opened, max_bytes, LastComponent::MayBeSymlink)
    })
    .await
    .map_err(|e| e.for_uri(uri.clone()))?;
    Ok(contents(&path, uri, mime, bytes))
}

/// The contents of a file: text when its MIME type is textual and it is valid UTF-8, else a
/// base64 blob.
fn contents(path: &Path, uri: String, mime: Option<String>, bytes: Vec<u8>) -> ResourceContents {
    let mime = mime.unwrap_or_else(|| guess_mime(path));
    let bytes = if is_textual(&mime) {
        match String::from_utf8(bytes) {
            Ok(text) => return ResourceContents::text(uri, mime, text),
            Err(not_utf8) => not_utf8.into_bytes(),
        }
    } else {
        bytes
    };
    let mime = if mime == "text/plain" {
        "application/octet-stream".to_string()
    } else {
        mime
    };
    ResourceContents::blob(uri, mime, STANDARD.encode(bytes))
}

/// The MIME type of a path from its extension; plain text when unknown, since most
/// extensionless files a server exposes (README, LICENSE) are text.
pub(crate) fn guess_mime(path: &Path) -> String {
    match path.extension().and_then(|e| e.to_str()) {
        Some("md" | "markdown") => "text/markdown".into(),
        Some(_) => mime_guess::from_path(path)
            .first()
            .map_or_else(|| "text/plain".into(), |m| m.essence_str().to_string()),
        None => "text/plain".into(),
    }
}

fn is_textual(mime: &str) -> bool {
    mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || matches!(
            mime,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/toml"
                | "application/yaml"
                | "application/x-yaml"
                | "application/x-sh"
                | "application/sql"
        )
}

/// A resource whose contents are fixed in the configuration; `make` builds them for the URI
/// and MIME type.
fn fixed(
    uri: &str,
    name: &str,
    mime: String,
    make: impl Fn(String, String) -> ResourceContents + Send + Sync + 'static,
) -> Resource {
    let shown = mime.clone();
    Resource::new(
        uri.to_string(),
        name.to_string(),
        Some(&shown),
        move |_, uri| {
            let contents = make(uri, mime.clone());
            async move { Ok(vec![contents]) }
        },
    )
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
