//! Reading one served file so that the file cannot decide how long the read takes or how
//! much it returns.
//!
//! A plain `open` of a FIFO waits for a writer, and a read of a terminal or a socket waits
//! for input; each such read pins one thread of tokio's blocking pool for good, and a few
//! hundred of them starve every other file read and keep the process from exiting. So only regular files
//! are read, and the check is made twice: on the path (so a device is never even opened, since
//! opening some has side effects) and on the opened descriptor (`fstat`), so swapping the file
//! between the two gains nothing. The open uses `O_NONBLOCK`, which makes opening a FIFO
//! return at once instead of waiting for a writer; on a regular file it changes nothing.
//! Reads stop one byte past `max_bytes`, so a file growing during the read is caught without
//! reading it whole. Everything runs on the blocking pool under a timeout, since a slow or
//! hung file system (NFS, FUSE) can still stall a regular file.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

use nix::fcntl::OFlag;

use crate::features::resources::ResourceError;

/// Why a served file was not read. Each message reads as a predicate of the URI, and
/// [`ReadError::for_uri`] turns it into the JSON-RPC error, so every refusal's code and
/// message is decided in one place.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("does not exist")]
    Missing,
    #[error("resolves outside the resource's directory")]
    Outside,
    #[error(
        "is a hidden file (a path segment starts with '.'); hidden files are served only \
         when the server's operator sets `hidden = true` on the resource"
    )]
    Hidden,
    #[error("is {0}, not a regular file; only regular files are served")]
    NotRegular(&'static str),
    #[error("is larger than {0} bytes (the resource's max_bytes); it is not served")]
    TooLarge(usize),
    #[error(
        "took longer than {} to read (file_resources.read_timeout); try again later",
        humantime::format_duration(*.0)
    )]
    TimedOut(Duration),
    #[error("could not be read: {0}")]
    Io(#[from] std::io::Error),
}

impl ReadError {
    /// The `resources/read` error for `uri`: a missing file is -32002 (resource not found), a
    /// file the client may not have is -32602 (invalid params), and a read that failed or
    /// was cut off is -32603. Refusals are logged: they are an attack or a misconfiguration
    /// the operator wants to see.
    pub(crate) fn for_uri(self, uri: String) -> ResourceError {
        let message = format!("{uri} {self}");
        match self {
            ReadError::Missing => ResourceError::NotFound(uri),
            ReadError::Outside | ReadError::Hidden | ReadError::NotRegular(_) => {
                tracing::warn!(%uri, reason = %self, "resources/read refused");
                ResourceError::InvalidUri(message)
            }
            ReadError::TooLarge(_) | ReadError::TimedOut(_) => {
                tracing::warn!(%uri, reason = %self, "resources/read refused");
                ResourceError::Failed(message)
            }
            ReadError::Io(_) => ResourceError::Failed(message),
        }
    }
}

/// Whether the last component of the path to open may be a symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LastComponent {
    /// A path the operator configured: a symlink swapped in by a deploy keeps working.
    MayBeSymlink,
    /// A path already canonicalised and checked: a symlink there now was swapped in after
    /// the check, so the open fails (`O_NOFOLLOW`) rather than follow it.
    MustNotBeSymlink,
}

/// Reads the regular file at `path`, at most `max_bytes` of it. Blocking: call it through
/// [`within`].
pub(crate) fn read_regular(
    path: &Path,
    max_bytes: usize,
    last: LastComponent,
) -> Result<Vec<u8>, ReadError> {
    let before = std::fs::metadata(path).map_err(|_| ReadError::Missing)?;
    refuse_unless_regular(&before.file_type())?;
    let mut flags = OFlag::O_NONBLOCK | OFlag::O_NOCTTY;
    if last == LastComponent::MustNotBeSymlink {
        flags |= OFlag::O_NOFOLLOW;
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits())
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ReadError::Missing,
            _ => ReadError::Io(e),
        })?;
    let opened = file.metadata()?;
    refuse_unless_regular(&opened.file_type())?;
    if opened.len() > max_bytes as u64 {
        return Err(ReadError::TooLarge(max_bytes));
    }
    read_at_most(file, max_bytes)
}

fn refuse_unless_regular(kind: &std::fs::FileType) -> Result<(), ReadError> {
    if kind.is_file() {
        return Ok(());
    }
    let what = if kind.is_dir() {
        "a folder"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "a special file"
    };
    Err(ReadError::NotRegular(what))
}

/// Reads to the end, but never more than `max_bytes + 1` bytes: one byte past the limit is
/// enough to know the file grew over it since `fstat`.
fn read_at_most(file: File, max_bytes: usize) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    file.take(max_bytes as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > max_bytes {
        return Err(ReadError::TooLarge(max_bytes));
    }
    Ok(bytes)
}

/// Runs blocking file work on tokio's blocking pool and gives up waiting after `timeout`.
///
/// The timeout frees the request, not the thread: a thread stuck in the kernel cannot be
/// cancelled, and it returns to the pool when the file system answers. Only regular files
/// are read, so nothing a client names can block forever on its own.
pub(crate) async fn within<T: Send + 'static>(
    timeout: Duration,
    work: impl FnOnce() -> Result<T, ReadError> + Send + 'static,
) -> Result<T, ReadError> {
    match tokio::time::timeout(timeout, tokio::task::spawn_blocking(work)).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(join)) => Err(ReadError::Io(std::io::Error::other(join))),
        Err(_) => Err(ReadError::TimedOut(timeout)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn slow_work_ends_in_a_timeout_that_names_the_key() {
        let err = within(Duration::from_millis(20), || {
            std::thread::sleep(Duration::from_millis(300));
            Ok(())
        })
        .await
        .unwrap_err();
        assert!(matches!(err, ReadError::TimedOut(_)), "{err:?}");
        let ResourceError::Failed(message) = err.for_uri("file:///docs/a.md".into()) else {
            panic!("a timeout is a failed read");
        };
        assert!(message.contains("file_resources.read_timeout"), "{message}");
        assert!(message.contains("20ms"), "{message}");
    }

    #[test]
    fn fifo_is_refused_without_waiting_for_a_writer() {
        let dir = std::env::temp_dir().join(format!("mcp-actor-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("pipe");
        let _ = std::fs::remove_file(&fifo);
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let err = read_regular(&fifo, 1024, LastComponent::MustNotBeSymlink).unwrap_err();
        assert!(matches!(err, ReadError::NotRegular("a FIFO")), "{err:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn read_stops_one_byte_past_the_limit() {
        let err = read_at_most(File::open("/dev/zero").unwrap(), 16).unwrap_err();
        assert!(matches!(err, ReadError::TooLarge(16)), "{err:?}");
    }
}
