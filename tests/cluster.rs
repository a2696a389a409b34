//! Three nodes behind the load-balancer recipes of `config/lb/`, run as shipped (only the
//! addresses replaced) by the real nginx and HAProxy, on 127.0.0.1.
//!
//! Each scenario runs once per balancer:
//! - sessions stay on the node that minted them, SSE is streamed, the client's Host reaches
//!   the nodes, and an id naming no live session gets 404;
//! - a node killed with SIGKILL: its clients get 404 (never 502), start a new session on a
//!   live node, and go on;
//! - a rolling restart (SIGTERM, one node at a time, restarted once it exits) under steady
//!   load loses no call, and every node exits 0;
//! - 2026-07-28 requests spread over every node, and an `input_required` round trip completes
//!   on another node than the one that asked.
//!
//! The scenarios run one at a time (each starts four processes on a small machine), each in
//! its own runtime and bounded by [`SCENARIO_LIMIT`]. nginx and HAProxy come from the Debian
//! packages (`scripts/lb-tools.sh`); when one is missing its scenarios fail and say so.

#[path = "cluster/balancer.rs"]
mod balancer;
mod common;
#[path = "cluster/nodes.rs"]
mod nodes;
#[path = "cluster/scenarios.rs"]
mod scenarios;
#[path = "cluster/scratch.rs"]
mod scratch;
#[path = "cluster/store.rs"]
mod store;
#[path = "task_client/mod.rs"]
mod task_client;
#[path = "cluster/tasks.rs"]
mod tasks;
#[path = "cluster/traffic.rs"]
mod traffic;

use std::future::Future;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use balancer::Kind;

/// The longest one scenario may take.
const SCENARIO_LIMIT: Duration = Duration::from_secs(180);

/// Runs one scenario alone: the other scenarios wait for the lock.
fn run(name: &str, scenario: impl Future<Output = ()>) {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(async {
            tokio::time::timeout(SCENARIO_LIMIT, scenario)
                .await
                .unwrap_or_else(|_| panic!("{name} did not finish within {SCENARIO_LIMIT:?}"))
        });
}

#[test]
fn nginx_keeps_each_session_on_the_node_that_minted_it() {
    run(
        "routing through nginx",
        scenarios::sessions_stay_on_their_node(Kind::Nginx),
    );
}

#[test]
fn haproxy_keeps_each_session_on_the_node_that_minted_it() {
    run(
        "routing through HAProxy",
        scenarios::sessions_stay_on_their_node(Kind::Haproxy),
    );
}

#[test]
fn nginx_answers_404_for_a_killed_nodes_sessions_and_clients_start_again() {
    run(
        "a killed node behind nginx",
        scenarios::killed_node_sessions_start_again(Kind::Nginx),
    );
}

#[test]
fn haproxy_answers_404_for_a_killed_nodes_sessions_and_clients_start_again() {
    run(
        "a killed node behind HAProxy",
        scenarios::killed_node_sessions_start_again(Kind::Haproxy),
    );
}

#[test]
fn nginx_rolling_restart_loses_no_call() {
    run(
        "a rolling restart behind nginx",
        scenarios::rolling_restart_loses_no_call(Kind::Nginx),
    );
}

#[test]
fn haproxy_rolling_restart_loses_no_call() {
    run(
        "a rolling restart behind HAProxy",
        scenarios::rolling_restart_loses_no_call(Kind::Haproxy),
    );
}

#[test]
fn nginx_spreads_stateless_requests_and_input_round_trips_cross_nodes() {
    run(
        "2026-07-28 requests through nginx",
        scenarios::stateless_requests_spread(Kind::Nginx),
    );
}

#[test]
fn haproxy_spreads_stateless_requests_and_input_round_trips_cross_nodes() {
    run(
        "2026-07-28 requests through HAProxy",
        scenarios::stateless_requests_spread(Kind::Haproxy),
    );
}

#[test]
fn nginx_routes_each_task_to_its_node_through_a_drain_and_a_kill() {
    run(
        "tasks through nginx",
        tasks::tasks_follow_their_node(Kind::Nginx),
    );
}

#[test]
fn haproxy_routes_each_task_to_its_node_through_a_drain_and_a_kill() {
    run(
        "tasks through HAProxy",
        tasks::tasks_follow_their_node(Kind::Haproxy),
    );
}

#[test]
fn nginx_rolling_restart_and_a_kill_keep_every_session_with_a_shared_store() {
    run(
        "a shared store behind nginx",
        store::rolling_restart_and_a_kill_keep_every_session(Kind::Nginx),
    );
}

#[test]
fn haproxy_rolling_restart_and_a_kill_keep_every_session_with_a_shared_store() {
    run(
        "a shared store behind HAProxy",
        store::rolling_restart_and_a_kill_keep_every_session(Kind::Haproxy),
    );
}

#[test]
fn nginx_retries_a_handed_off_request_whose_body_came_after_its_head() {
    run(
        "a late body handed off behind nginx",
        store::a_request_whose_body_comes_late_is_handed_off_from_a_draining_node(Kind::Nginx),
    );
}

#[test]
fn haproxy_retries_a_handed_off_request_whose_body_came_after_its_head() {
    run(
        "a late body handed off behind HAProxy",
        store::a_request_whose_body_comes_late_is_handed_off_from_a_draining_node(Kind::Haproxy),
    );
}
