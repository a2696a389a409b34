//! What ships beside the binary, run as an operator runs it: the container's HEALTHCHECK
//! (the `probe` subcommand) and the systemd unit's command line, environment and stop.

mod common;

use std::process::Command;
use std::time::Duration;

use common::TestServer;
use nix::sys::signal::Signal;
use serde_json::{Value, json};

fn repo_file(path: &str) -> String {
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("read {path}: {e}"))
}

fn probe(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-actor"))
        .arg("probe")
        .args(args)
        .output()
        .expect("run mcp-actor probe")
}

#[test]
fn probe_exits_0_on_a_healthy_server_and_1_otherwise() {
    let server = TestServer::start();
    for path in ["/healthz", "/readyz"] {
        let out = probe(&[&format!("http://{}{path}", server.addr)]);
        assert!(out.status.success(), "{path}: {out:?}");
    }
    let missing = probe(&[&format!("http://{}/nowhere", server.addr)]);
    assert_eq!(missing.status.code(), Some(1), "{missing:?}");
    assert!(String::from_utf8_lossy(&missing.stderr).contains("404"));
    // A port nobody listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let closed = probe(&[
        "--timeout",
        "1s",
        &format!("http://127.0.0.1:{port}/healthz"),
    ]);
    assert_eq!(closed.status.code(), Some(1), "{closed:?}");
    let tls = probe(&["https://127.0.0.1:1/healthz"]);
    assert_eq!(tls.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&tls.stderr).contains("plain http://"));
}

/// The exec-form array of the Dockerfile's `HEALTHCHECK ... CMD [...]`.
fn healthcheck_command(dockerfile: &str) -> Vec<String> {
    let joined = dockerfile.replace("\\\n", " ");
    let line = joined
        .lines()
        .find(|l| l.starts_with("HEALTHCHECK"))
        .expect("a HEALTHCHECK instruction");
    let array = &line[line.find("CMD").expect("CMD") + 3..];
    serde_json::from_str(array.trim()).expect("HEALTHCHECK CMD in exec form")
}

#[test]
fn the_dockerfile_healthcheck_probes_the_health_path_of_the_served_port() {
    let dockerfile = repo_file("Dockerfile");
    let command = healthcheck_command(&dockerfile);
    assert_eq!(command[..2], ["mcp-actor", "probe"], "{command:?}");
    let url = command.last().expect("a URL");
    assert_eq!(url, "http://127.0.0.1:8080/healthz");
    assert!(
        dockerfile.contains("\"--listen\", \"0.0.0.0:8080\""),
        "the probe's port must be the served one"
    );
    // The same arguments against a running server (on a port of the test's own).
    let server = TestServer::start();
    let mut args: Vec<String> = command[2..].to_vec();
    if let Some(last) = args.last_mut() {
        *last = format!("http://{}/healthz", server.addr);
    }
    let out = probe(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{out:?}");
}

/// `key=value` settings of the unit's `[Service]` section.
fn service_setting(unit: &str, key: &str) -> Vec<String> {
    unit.lines()
        .filter_map(|l| l.strip_prefix(&format!("{key}=")))
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn the_systemd_unit_starts_a_node_that_reloads_on_hup_and_drains_on_term() {
    let unit = repo_file("config/mcp-actor.service");
    let exec = service_setting(&unit, "ExecStart");
    assert_eq!(exec.len(), 1);
    let argv: Vec<&str> = exec[0].split_whitespace().collect();
    assert_eq!(argv[0], "/usr/local/bin/mcp-actor");
    let default_config = format!("{}/config/default.toml", env!("CARGO_MANIFEST_DIR"));
    let mut args: Vec<&str> = argv[1..]
        .iter()
        .map(|a| match *a {
            "/etc/mcp-actor/config.toml" => default_config.as_str(),
            other => other,
        })
        .collect();
    args.extend(["--listen", "127.0.0.1:0"]);
    let environment = service_setting(&unit, "Environment");
    let (key, value) = environment[0].split_once('=').expect("KEY=value");
    assert_eq!((key, value), ("MCP_ACTOR_NODE_ID", "%H"));
    assert_eq!(
        service_setting(&unit, "ExecReload"),
        ["/bin/kill -HUP $MAINPID"]
    );
    assert_eq!(service_setting(&unit, "KillMode"), ["mixed"]);

    let mut server = TestServer::with_args(&args, &[(key, "host-1")]);
    let session = server.client().connect().await;
    assert!(session.id.starts_with("host-1."), "{}", session.id);
    server.signal(Signal::SIGHUP);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pong = session.call(json!(1), "ping", json!({})).await;
    assert_eq!(
        pong,
        Value::Object(Default::default()),
        "SIGHUP must not end sessions"
    );
    let status = server
        .terminate(Duration::from_secs(10))
        .expect("stopped within TimeoutStopSec");
    assert!(status.success(), "{status:?}");
}
