//! The end of a server: the drain, the shutdown, and the signals that start them.

use std::future::Future;
use std::io;

use tokio_util::sync::CancellationToken;

use crate::http::AppState;

/// How often a drain looks whether the last session and call have finished.
const DRAIN_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// The drain: refuse what is new, wait (at most `server.drain_timeout`) for the sessions to
/// end and the 2026-07-28 calls to finish, then shut down whatever is left.
pub(super) async fn drain_then_shut_down(
    app: &AppState,
    draining: &CancellationToken,
    shutdown: &CancellationToken,
) {
    let timeout = app.config.server.drain_timeout;
    let deadline = tokio::time::Instant::now() + timeout;
    let left = || (app.sessions.registry.len(), app.stateless.calls_in_flight());
    let (sessions, calls) = left();
    tracing::info!(
        sessions,
        calls,
        timeout = %humantime::format_duration(timeout),
        "draining: new sessions and requests get 503; existing sessions end when idle"
    );
    draining.cancel();
    let drained = async {
        while left() != (0, 0) {
            tokio::time::sleep(DRAIN_POLL).await;
        }
    };
    if tokio::time::timeout(timeout, drained).await.is_err() {
        let (sessions, calls) = left();
        tracing::warn!(
            sessions,
            calls,
            "server.drain_timeout passed: ending what is left (requests in flight get an error)"
        );
    } else {
        tracing::info!("drained: every session has ended");
    }
    crate::stateless::tasks::drain::settle_tasks(&app.stateless, deadline).await;
    shutdown.cancel();
    // Every session has ended, so every upstream connection is stopping: wait for their
    // processes (stdin closed, SIGTERM, SIGKILL: at most twice the grace period).
    if let Some(gateway) = &app.sessions.core.gateway {
        let grace = app.config.gateway.shutdown_grace;
        gateway
            .shutdown(grace * 2 + std::time::Duration::from_secs(1))
            .await;
    }
}

/// Two futures: the first SIGTERM or Ctrl-C (SIGINT), and the second.
pub(super) fn signals() -> io::Result<(
    impl Future<Output = ()> + Send + 'static,
    impl Future<Output = ()> + Send + 'static,
)> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let (first_tx, first_rx) = tokio::sync::oneshot::channel::<()>();
    let (second_tx, second_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        for tx in [first_tx, second_tx] {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
            let _ = tx.send(());
        }
    });
    // A dropped sender (the runtime is ending) must not read as a signal.
    let wait = |rx: tokio::sync::oneshot::Receiver<()>| async move {
        if rx.await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    Ok((wait(first_rx), wait(second_rx)))
}
