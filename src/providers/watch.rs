//! Turns file changes into `notifications/resources/updated`.
//!
//! One [`notify`] watcher covers every file resource: a single file is watched through its
//! directory (editors save by writing a new file and renaming it over the old one, which
//! ends a watch on the file itself), a directory root recursively. Changed paths map back to
//! URIs and go out as [`ServerEvent::ResourceUpdated`] through the server's one event
//! source; each session actor forwards only the URIs it is subscribed to. Bursts of events
//! (one save is often several) are gathered for a moment and sent once per URI.
//!
//! A reload builds a new watcher for the new resources and drops the old one, which stops
//! it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use super::files::DirRoot;
use crate::events::{ServerEvent, ServerEvents};

/// How long events are gathered before the notifications go out.
const GATHER: Duration = Duration::from_millis(50);
/// Changed paths buffered between the watcher thread and the task; when full, events are
/// dropped, which only merges them into the ones already queued.
const QUEUE: usize = 1024;

/// Something whose changes are announced.
#[derive(Debug, Clone)]
pub enum WatchTarget {
    /// One file (canonical path) and its URI.
    File { path: PathBuf, uri: String },
    /// A directory root and its URI template.
    Dir(Arc<DirRoot>),
}

impl WatchTarget {
    fn uri_for(&self, changed: &Path) -> Option<String> {
        match self {
            WatchTarget::File { path, uri } => (changed == path).then(|| uri.clone()),
            WatchTarget::Dir(root) => {
                let relative = changed.strip_prefix(&root.root).ok()?;
                if relative.as_os_str().is_empty() {
                    return None;
                }
                root.uri_of(relative)
            }
        }
    }
}

/// A running watcher; dropping it stops the watching.
pub struct ResourceWatcher {
    _watcher: RecommendedWatcher,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ResourceWatcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ResourceWatcher {
    /// Starts watching `targets`, publishing updates to `events`. `None` when there is
    /// nothing to watch. A path that cannot be watched is logged and skipped: the
    /// resources still serve, only their update notifications are missing.
    pub fn start(events: Arc<ServerEvents>, targets: Vec<WatchTarget>) -> Option<ResourceWatcher> {
        if targets.is_empty() {
            return None;
        }
        let (tx, rx) = mpsc::channel::<PathBuf>(QUEUE);
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            if event.kind.is_access() {
                return;
            }
            for path in event.paths {
                let _ = tx.try_send(path);
            }
        });
        let mut watcher = match watcher {
            Ok(w) => w,
            Err(e) => {
                tracing::error!(error = %e, "cannot watch resource files; resources/updated will not be sent");
                return None;
            }
        };
        let mut watched = BTreeSet::new();
        for target in &targets {
            let (path, mode) = match target {
                WatchTarget::File { path, .. } => match path.parent() {
                    Some(dir) => (dir.to_path_buf(), RecursiveMode::NonRecursive),
                    None => continue,
                },
                WatchTarget::Dir(root) => (root.root.clone(), RecursiveMode::Recursive),
            };
            if !watched.insert((path.clone(), mode == RecursiveMode::Recursive)) {
                continue;
            }
            if let Err(e) = watcher.watch(&path, mode) {
                tracing::error!(path = %path.display(), error = %e, "cannot watch; resources/updated will not be sent for it");
            }
        }
        let task = tokio::spawn(forward(events, targets, rx));
        Some(ResourceWatcher {
            _watcher: watcher,
            task,
        })
    }
}

async fn forward(
    events: Arc<ServerEvents>,
    targets: Vec<WatchTarget>,
    mut rx: mpsc::Receiver<PathBuf>,
) {
    while let Some(first) = rx.recv().await {
        let mut changed = BTreeSet::from([first]);
        let deadline = tokio::time::Instant::now() + GATHER;
        while let Ok(Some(path)) = tokio::time::timeout_at(deadline, rx.recv()).await {
            changed.insert(path);
        }
        let uris: BTreeSet<String> = changed
            .iter()
            .flat_map(|path| targets.iter().filter_map(|t| t.uri_for(path)))
            .collect();
        for uri in uris {
            tracing::debug!(%uri, "resource changed");
            events.publish(ServerEvent::ResourceUpdated { uri });
        }
    }
}
