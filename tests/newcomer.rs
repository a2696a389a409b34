//! What a new user meets in their first hour, run over the real binary: a second instance
//! on one machine, `check` refusing what the server refuses, every mistake of a file in one
//! `check`, expected startup errors without a backtrace, and `mcp-actor call` answering an
//! elicitation from the terminal.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{TempDir, TestServer, binary, run_binary, run_check};

const AUTH: &str = "[auth]\nresource = \"https://mcp.example.com/mcp\"\n\
    authorization_servers = [\"https://auth.example.com\"]\n\
    [[auth.tokens]]\nprincipal = \"ci\"\ntoken_env = \"NEWCOMER_TOKEN\"\n";
const TOKEN: (&str, &str) = ("NEWCOMER_TOKEN", "newcomer-token-5f0c2a9e");

/// A server started as the README says, without `--admin-listen`; killed on drop.
struct Instance {
    child: Child,
    url: String,
    admin: String,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the binary with `args` and reads its banner, or returns what it printed to stderr
/// when it exits first.
fn start(args: &[&str]) -> Result<Instance, String> {
    start_reporting_pid(args, &std::sync::mpsc::channel().0)
}

async fn healthy(admin: &str) -> bool {
    let answer = reqwest::get(format!("{admin}/healthz")).await;
    answer.is_ok_and(|r| r.status().is_success())
}

#[tokio::test]
async fn two_instances_started_as_the_readme_says_both_run() {
    // `config/gateway.toml`'s upstreams are not installed here (scripts/upstreams.sh
    // installs others), so the second instance is the default one again: it meets the
    // same admin port as the gateway would.
    let first = start(&["--listen", "127.0.0.1:0"]).expect("the first instance starts");
    let began = Instant::now();
    let second = start(&["--listen", "127.0.0.1:0"])
        .unwrap_or_else(|stderr| panic!("the second instance exited: {stderr}"));
    assert!(began.elapsed() < Duration::from_secs(10));
    assert_ne!(
        first.admin, second.admin,
        "both report the same admin address"
    );
    assert_ne!(first.url, second.url);
    assert!(healthy(&first.admin).await, "{}", first.admin);
    assert!(healthy(&second.admin).await, "{}", second.admin);
}

/// [`start`], given up after `limit`: the child, whose pid is read before the banner, is
/// killed rather than left behind.
fn start_within(args: Vec<String>, limit: Duration) -> Result<Instance, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let (pid_tx, pid_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let _ = tx.send(start_reporting_pid(&args, &pid_tx));
    });
    match rx.recv_timeout(limit) {
        Ok(started) => started,
        Err(_) => {
            if let Ok(pid) = pid_rx.try_recv() {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            Err(format!("no banner within {limit:?}"))
        }
    }
}

/// [`start`], sending the child's pid on `pid` first.
fn start_reporting_pid(
    args: &[&str],
    pid: &std::sync::mpsc::Sender<u32>,
) -> Result<Instance, String> {
    let mut child = Command::new(binary())
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mcp-actor");
    let _ = pid.send(child.id());
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let (mut url, mut admin, mut line) = (String::new(), String::new(), String::new());
    while admin.is_empty() {
        line.clear();
        if stdout.read_line(&mut line).unwrap_or(0) == 0 {
            let _ = child.wait();
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                let _ = pipe.read_to_string(&mut stderr);
            }
            return Err(stderr);
        }
        if let Some(rest) = line.trim().strip_prefix("mcp-actor listening on ") {
            url = rest.to_string();
        }
        if let Some(rest) = line.trim().strip_prefix("admin: ") {
            admin = rest.trim_end_matches("/metrics").to_string();
        }
    }
    // The stdout pipe must keep a reader, or a later write would fail with EPIPE.
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    Ok(Instance { child, url, admin })
}

#[tokio::test]
async fn the_gateway_config_runs_beside_a_default_instance_as_its_header_says() {
    // config/gateway.toml's header: a default instance first, then the gateway config. Both
    // take free MCP ports here; the admin port is left to the defaults, as the header does.
    // Its filesystem upstream comes from npm (npx), so the banner may wait for a download.
    let first = start(&["--listen", "127.0.0.1:0"]).expect("the first instance starts");
    let config = format!("{}/config/gateway.toml", env!("CARGO_MANIFEST_DIR"));
    let args = ["--config", config.as_str(), "--listen", "127.0.0.1:0"];
    let second = start_within(
        args.iter().map(|a| a.to_string()).collect(),
        Duration::from_secs(120),
    )
    .unwrap_or_else(|why| panic!("the gateway instance: {why}"));
    assert_ne!(first.admin, second.admin);
    assert!(healthy(&first.admin).await, "{}", first.admin);
    assert!(healthy(&second.admin).await, "{}", second.admin);
}

#[test]
fn an_admin_address_the_user_chose_still_fails_at_once_when_busy() {
    let held = TcpListener::bind("127.0.0.1:0").expect("hold a port");
    let busy = held.local_addr().expect("address").to_string();
    let args = ["--listen", "127.0.0.1:0", "--admin-listen", &busy];
    let (status, stderr) = run_binary(&args, Duration::from_secs(10)).expect("it exits");
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("for the admin endpoints"), "{stderr}");
}

#[test]
fn the_default_admin_address_written_in_the_file_still_fails_at_once_when_busy() {
    // The default's own address, written by the operator, is a choice: a busy port must fail
    // as any chosen one does. Other tests' instances take 9090 for a moment, so wait for it.
    let deadline = Instant::now() + Duration::from_secs(20);
    let held = loop {
        match TcpListener::bind("127.0.0.1:9090") {
            Ok(held) => break held,
            Err(e) if Instant::now() > deadline => panic!("127.0.0.1:9090 stayed busy: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    };
    let dir = TempDir::new("newcomer-admin-file");
    let config = dir.write("admin.toml", "[admin]\nlisten = \"127.0.0.1:9090\"\n");
    let config = config.to_string_lossy().into_owned();
    let args = ["--listen", "127.0.0.1:0", "--config", config.as_str()];
    let (status, stderr) = run_binary(&args, Duration::from_secs(10)).expect("it exits");
    drop(held);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("for the admin endpoints"), "{stderr}");
}

#[test]
fn check_refuses_the_two_non_loopback_configs() {
    let dir = TempDir::new("newcomer-check");
    let configs = [
        ("listen.toml", "[server]\nlisten = \"0.0.0.0:8080\"\n"),
        (
            "admin.toml",
            "[admin]\nenabled = true\nlisten = \"0.0.0.0:9191\"\n",
        ),
    ];
    for (name, text) in configs {
        let (status, _, stderr) = run_check(&dir.write(name, text), &[]);
        assert_eq!(status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains("refusing to serve"), "{name}: {stderr}");
    }
}

#[test]
fn auth_does_not_open_the_admin_listener_beyond_loopback() {
    let dir = TempDir::new("newcomer-admin-auth");
    let file = dir.write("auth.toml", AUTH);
    let args = ["--config", file.to_str().expect("utf-8"), "--listen"];
    let args = [&args[..], &["127.0.0.1:0", "--admin-listen", "0.0.0.0:0"]].concat();
    let began = Instant::now();
    let mut cmd = Command::new(binary());
    cmd.args(&args)
        .env(TOKEN.0, TOKEN.1)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start mcp-actor");
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().expect("wait").is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let exited = child.try_wait().expect("wait");
    let _ = child.kill();
    let output = child.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(exited.is_some(), "it served the admin endpoints on 0.0.0.0");
    assert_eq!(exited.and_then(|s| s.code()), Some(1), "{stderr}");
    assert!(began.elapsed() < Duration::from_secs(5));
    assert!(stderr.contains("admin endpoints on 0.0.0.0"), "{stderr}");
    let public = format!("{AUTH}\n[admin]\nlisten = \"0.0.0.0:9191\"\n");
    let (status, _, stderr) = run_check(&dir.write("public.toml", &public), &[TOKEN]);
    assert_eq!(status.code(), Some(1), "check: {stderr}");
}

#[test]
fn check_reports_an_unknown_key_and_a_bad_duration_in_one_run_with_a_suggestion() {
    let dir = TempDir::new("newcomer-one-pass");
    let text = "[http]\nmax_conections = 10\n\n[sessions]\nidle_ttl = \"soon\"\n\n\
                [pagination]\npage_size = 0\n";
    let (status, _, stderr) = run_check(&dir.write("typos.toml", text), &[]);
    assert_eq!(status.code(), Some(1), "{stderr}");
    let unknown = stderr.find(":2:").expect("the unknown key on line 2");
    let duration = stderr.find(":5:").expect("the bad duration on line 5");
    assert!(unknown < duration, "not in file order: {stderr}");
    assert!(
        stderr.contains("did you mean `max_connections`?"),
        "{stderr}"
    );
    assert!(stderr.contains("sessions.idle_ttl"), "{stderr}");
    assert!(stderr.contains("pagination.page_size"), "{stderr}");
    assert!(
        !stderr.contains("max_body_bytes"),
        "lists every key: {stderr}"
    );
}

#[test]
fn expected_startup_errors_print_no_backtrace() {
    let held = TcpListener::bind("127.0.0.1:0").expect("hold a port");
    let busy = held.local_addr().expect("address").to_string();
    let dir = TempDir::new("newcomer-startup");
    let bad = dir.write("bad.toml", "[sessions]\nidle_ttl = \"soon\"\n");
    let runs: [&[&str]; 2] = [
        &["--listen", &busy, "--admin-listen", "127.0.0.1:0"],
        &["--config", bad.to_str().expect("utf-8")],
    ];
    for args in runs {
        let mut child = Command::new(binary())
            .args(args)
            .env("RUST_BACKTRACE", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start mcp-actor");
        let mut stderr = String::new();
        let _ = child
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut stderr);
        let status = child.wait().expect("wait");
        assert_eq!(status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            !stderr.to_lowercase().contains("backtrace"),
            "{args:?}: {stderr}"
        );
        let lines = stderr.lines().filter(|l| !l.trim().is_empty()).count();
        assert!(lines <= 2, "{args:?}: {lines} lines: {stderr}");
    }
}

#[tokio::test]
async fn call_ask_answers_an_elicitation_from_stdin() {
    let server = TestServer::start();
    let mut child = Command::new(binary())
        .args(["call", "ask", "question=Your name?", "--url", &server.url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mcp-actor call");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"Ada\n")
        .expect("answer");
    let deadline = Instant::now() + Duration::from_secs(15);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("mcp-actor call did not finish");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let output = child.wait_with_output().expect("output");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("Your name?"), "the question: {stderr}");
    assert_eq!(stdout.trim(), "Ada", "{stderr}");
    let metrics = format!("{}/metrics", server.admin_url);
    let mut active = f64::NAN;
    for _ in 0..50 {
        let text = reqwest::get(&metrics).await.expect("metrics").text().await;
        active = text
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with("mcp_sessions_active"))
            .and_then(|l| l.split_whitespace().last()?.parse().ok())
            .unwrap_or(f64::NAN);
        if active == 0.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(active, 0.0, "the session was not deleted");
}

#[test]
fn call_stops_reading_a_reply_that_never_ends() {
    // A server that answers initialize with a body of spaces and never stops.
    let server = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = server.local_addr().expect("address");
    std::thread::spawn(move || {
        let Ok((mut conn, _)) = server.accept() else {
            return;
        };
        let mut request = [0u8; 4096];
        let _ = conn.read(&mut request);
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                    Mcp-Session-Id: endless\r\nConnection: close\r\n\r\n";
        let _ = conn.write_all(head.as_bytes());
        let chunk = vec![b' '; 1 << 20];
        // Past the client's cap (64 MiB), bounded so that a client that reads on ends too.
        for _ in 0..256 {
            if conn.write_all(&chunk).is_err() {
                return;
            }
        }
    });
    let url = format!("http://{addr}/mcp");
    let args = ["call", "--url", url.as_str(), "echo", "text=hi"];
    let (status, stderr) = run_binary(&args, Duration::from_secs(30)).expect("it exits");
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("64 MiB"), "{stderr}");
}
