//! The tasks' part of a drain (SEP-2663 tasks outlive the request that created them, so a
//! drain that waited only for requests would lose them with the process).
//!
//! While the node drains, new task-augmented calls are refused like any new work, but
//! `tasks/get`, `tasks/update` and `tasks/cancel` are still served: they are the way a
//! client collects what the node already owes it. Live tasks get what is left of
//! `server.drain_timeout`; those still live then are settled as `failed`, saying the node
//! shut down. The node then stays up for `tasks.linger_after_drain` after the last task
//! settled, so a client polling every `poll_interval` reads the result before the process,
//! and every task in it, is gone.

use std::time::Duration;

use tokio::time::Instant;

use super::super::StatelessState;
use crate::protocol::method::{Method, Served, StatelessMethod};

/// How often the drain looks whether the last task has settled.
const POLL: Duration = Duration::from_millis(50);

/// What a task still running when the drain times out says to its client.
const SHUT_DOWN: &str = "the server shut down (server.drain_timeout passed) before this task \
                         finished; run the call again, and a load balancer sends it to another node";

/// The methods a draining node still serves: they touch tasks it already holds.
pub(crate) fn served_while_draining(method: &str) -> bool {
    matches!(
        Method::parse(method).and_then(Method::served),
        Some(Served::Stateless(StatelessMethod::Task(_)))
    )
}

/// Waits until no task is live (at most until `deadline`, then fails the rest), and then
/// for `tasks.linger_after_drain` after the last task settled.
pub(crate) async fn settle_tasks(state: &StatelessState, deadline: Instant) {
    let store = &state.tasks;
    let linger = state.core.config.tasks.linger_after_drain;
    let live = store.live();
    if live > 0 {
        tracing::info!(
            live,
            "draining: waiting for live tasks; tasks/get, tasks/update and tasks/cancel are still served"
        );
    }
    loop {
        while store.live() > 0 && Instant::now() < deadline {
            tokio::time::sleep(POLL).await;
        }
        let failed = store.fail_live(SHUT_DOWN);
        if failed > 0 {
            tracing::warn!(
                failed,
                "server.drain_timeout passed: tasks still live were settled as failed"
            );
        }
        // Final states on their way to the store land before the process exits.
        if let Some(durable) = store.durable() {
            durable.flush(state.core.config.store.timeout).await;
        }
        if let Some(settled) = store.last_settled() {
            let until = Instant::from_std(settled) + linger;
            if until > Instant::now() {
                tracing::info!(
                    linger = %humantime::format_duration(linger),
                    "draining: every task has settled; staying up (tasks.linger_after_drain) so clients read the results"
                );
                tokio::time::sleep_until(until).await;
            }
        }
        // An answer to an input request during the linger may have started a run again.
        if store.live() == 0 {
            return;
        }
    }
}
