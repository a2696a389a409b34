//! File resources: inline text or base64, one file, or a directory served through a URI
//! template such as `file:///docs/{+path}`.
//!
//! Files are read at each `resources/read`, so an edit shows at once; a file over
//! `max_bytes` is refused rather than cut, because half a file read as the whole is worse
//! than an error. How one file is read (regular files only, bounded, under
//! `file_resources.read_timeout`) is in `super::file_read`; how a directory is served
//! without exposing anything outside it, or its hidden files, is in `files/dir.rs`.

mod dir;

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;

use super::file_read::{LastComponent, read_regular, within};
use super::{ProviderError, WatchTarget, resolve};
use crate::config::{Config, ResourceConfig, ResourceKind};
use crate::features::resources::{Resource, ResourceError, ResourceTemplate};
use crate::protocol::ResourceContents;
pub use dir::DirRoot;
use dir::dir_resources;

/// What one `[[resources]]` entry provides.
pub(crate) struct BuiltResource {
    pub resources: Vec<Resource>,
    pub template: Option<ResourceTemplate>,
    pub watch: Option<WatchTarget>,
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
