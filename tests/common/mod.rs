//! Shared test harness: starts the real `mcp-actor` binary on an ephemeral 127.0.0.1 port
//! and gives a small raw MCP client over real HTTP.
//!
//! This file owns the server process ([`TestServer`]) and the handshake-era client
//! ([`Client`], [`Session`]); the submodules own the rest:
//! - [`sse`]: reading SSE streams and whole replies;
//! - [`raw_http`]: hand-written HTTP/1.1 exchanges;
//! - [`rpc_codes`]: the JSON-RPC error codes, written out;
//! - [`modern`]: the 2026-07-28 request builder and its assertions;
//! - [`in_process`]: the library server run inside the test, for what the binary cannot do;
//! - [`node`]: the binary on a chosen address, stopped by SIGKILL or SIGTERM, as one node of
//!   a cluster.
//!
//! Every test binary compiles this whole tree and uses a part of it, hence the blanket
//! `dead_code` allowance (it covers the submodules too).

#![allow(dead_code)]

pub mod in_process;
pub mod modern;
pub mod node;
pub mod raw_http;
pub mod rpc_codes;
pub mod sse;

// The names test files imported from `common` before it had submodules; each test binary
// uses some of them.
#[allow(unused_imports)]
pub use raw_http::{RawReply, raw_request, raw_upload};
#[allow(unused_imports)]
pub use sse::{Event, Reply, SseReader, read_reply};

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

pub const LATEST: &str = "2025-11-25";
pub const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// A running server binary; killed on drop.
pub struct TestServer {
    pub url: String,
    pub addr: String,
    /// The admin listener, as `http://127.0.0.1:PORT` (`/metrics`, `/healthz`, `/readyz`).
    pub admin_url: String,
    child: Child,
    _stdout: BufReader<std::process::ChildStdout>,
    _config: Option<tempfile_path::TempPath>,
}

mod tempfile_path {
    /// A file removed on drop.
    pub struct TempPath(pub std::path::PathBuf);
    impl Drop for TempPath {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

impl TestServer {
    /// The binary on its embedded default configuration.
    pub fn start() -> TestServer {
        Self::spawn(None)
    }

    /// The binary with `overrides` appended to the default configuration (TOML tables that
    /// replace the defaults' keys are written whole, so pass complete tables).
    pub fn with_config(toml: &str) -> TestServer {
        Self::spawn(Some(toml))
    }

    /// The binary on the configuration file at `path` (left in place, so a test can edit it
    /// and reload), with extra environment variables.
    pub fn with_config_file(path: &std::path::Path, env: &[(&str, &str)]) -> TestServer {
        let mut cmd = Command::new(binary());
        cmd.args(["--listen", "127.0.0.1:0", "--config"]).arg(path);
        for (k, v) in env {
            cmd.env(k, v);
        }
        Self::run(cmd, None, None)
    }

    /// The binary with `args` (which must include a `--listen` on loopback) and extra
    /// environment variables.
    pub fn with_args(args: &[&str], env: &[(&str, &str)]) -> TestServer {
        let mut cmd = Command::new(binary());
        cmd.args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        Self::run(cmd, None, None)
    }

    /// The binary's process id, to signal it (SIGHUP reloads).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn spawn(config: Option<&str>) -> TestServer {
        let mut cmd = Command::new(binary());
        cmd.args(["--listen", "127.0.0.1:0"]);
        let config_file = config.map(|text| {
            let path = std::env::temp_dir().join(format!("mcp-actor-test-{}.toml", uuid_like()));
            let mut f = std::fs::File::create(&path).expect("write test config");
            f.write_all(text.as_bytes()).expect("write test config");
            cmd.arg("--config").arg(&path);
            tempfile_path::TempPath(path)
        });
        Self::run(cmd, config_file, None)
    }

    fn run(
        mut cmd: Command,
        config_file: Option<tempfile_path::TempPath>,
        log_file: Option<std::fs::File>,
    ) -> TestServer {
        // MCP_TEST_SERVER_LOGS=1 shows the server's logs, for debugging a test.
        let logs = std::env::var_os("MCP_TEST_SERVER_LOGS").is_some();
        let stderr = match log_file {
            Some(file) => Stdio::from(file),
            None if logs => Stdio::inherit(),
            None => Stdio::null(),
        };
        // Many servers run at once: each admin listener takes a free port of its own,
        // unless the caller chose one.
        if !cmd.get_args().any(|a| a == "--admin-listen") {
            cmd.args(["--admin-listen", "127.0.0.1:0"]);
        }
        cmd.stdout(Stdio::piped()).stderr(stderr);
        // A test that reads the log chooses its filter.
        if !cmd.get_envs().any(|(name, _)| name == "RUST_LOG") {
            cmd.env("RUST_LOG", if logs { "info" } else { "warn" });
        }
        let mut child = cmd.spawn().expect("start mcp-actor");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        let mut stdout = BufReader::new(stdout);
        stdout.read_line(&mut line).expect("read listening line");
        let url = line
            .trim()
            .strip_prefix("mcp-actor listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_string();
        let addr = url
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        // The banner's last line names the admin listener.
        let admin_url = loop {
            line.clear();
            let read = stdout.read_line(&mut line).expect("read the banner");
            assert!(read > 0, "the banner ended without an admin line");
            if let Some(admin) = line.trim().strip_prefix("admin: ") {
                break admin.trim_end_matches("/metrics").to_string();
            }
        };
        TestServer {
            url,
            addr,
            admin_url,
            child,
            _stdout: stdout,
            _config: config_file,
        }
    }

    pub fn client(&self) -> Client {
        Client::new(&self.url)
    }

    /// The binary on `toml`, its log (at `RUST_LOG=warn`) written to `log`.
    pub fn with_config_logging_to(toml: &str, log: &std::path::Path) -> TestServer {
        Self::with_config_logging_env(toml, log, &[])
    }

    /// As [`Self::with_config_logging_to`], with extra environment variables (`RUST_LOG`
    /// among them, to log at another level).
    pub fn with_config_logging_env(
        toml: &str,
        log: &std::path::Path,
        env: &[(&str, &str)],
    ) -> TestServer {
        let path = std::env::temp_dir().join(format!("mcp-actor-test-{}.toml", uuid_like()));
        std::fs::write(&path, toml).expect("write test config");
        let mut cmd = Command::new(binary());
        cmd.args(["--listen", "127.0.0.1:0", "--config"]).arg(&path);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let file = std::fs::File::create(log).expect("create log file");
        Self::run(cmd, Some(tempfile_path::TempPath(path)), Some(file))
    }

    /// Sends SIGTERM and waits up to `limit` for the process to exit; `None` if it did not.
    pub fn terminate(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        self.signal(nix::sys::signal::Signal::SIGTERM);
        self.wait_exit(limit)
    }

    /// Sends `signal` without waiting.
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, signal).expect("signal the server");
    }

    /// Waits up to `limit` for the process to exit; `None` if it did not.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + limit;
        while std::time::Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("wait for the server") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A directory removed with its contents on drop.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("mcp-actor-{label}-{}", uuid_like()));
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }

    /// Writes `contents` to `relative` (creating parent folders) and returns its path.
    pub fn write(&self, relative: &str, contents: &str) -> std::path::PathBuf {
        let path = self.0.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent");
        }
        std::fs::write(&path, contents).expect("write file");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Live processes whose command line contains `needle` (zombies have no command line, so
/// they never match).
pub fn processes_matching(needle: &str) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| {
                    String::from_utf8_lossy(&c)
                        .replace('\0', " ")
                        .contains(needle)
                })
                .unwrap_or(false)
        })
        .collect()
}

/// Zombie children of process `parent` (processes that exited and that `parent` has not
/// waited for).
pub fn zombie_children(parent: u32) -> Vec<u32> {
    let parent = parent.to_string();
    all_pids()
        .into_iter()
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // The command name, in parentheses, may contain spaces: fields follow the last ')'.
            let fields: Vec<&str> = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.split_whitespace().collect())
                .unwrap_or_default();
            fields.first() == Some(&"Z") && fields.get(1) == Some(&parent.as_str())
        })
        .collect()
}

fn all_pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .collect()
}

/// Waits up to `wait` for `check` to hold.
pub async fn eventually(wait: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        if check() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A unique token for this test process, to find its child processes in /proc.
pub fn unique() -> String {
    uuid_like().replace('-', "")
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// The binary under test: `MCP_ACTOR_TEST_BIN` when set (to run the suite against another
/// build, a release one for example), else the one cargo built for this test run.
pub fn binary() -> std::ffi::OsString {
    std::env::var_os("MCP_ACTOR_TEST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_mcp-actor").into())
}

/// A raw HTTP client for the MCP endpoint.
#[derive(Clone)]
pub struct Client {
    pub http: reqwest::Client,
    pub url: String,
}

impl Client {
    pub fn new(url: &str) -> Client {
        Client::with_http(url, reqwest::Client::builder())
    }

    /// A client whose every exchange, body included, fails after `limit`, so a test can
    /// never hang on an unresponsive server. Each call makes a new connection pool.
    pub fn bounded(url: &str, limit: Duration) -> Client {
        Client::with_http(url, reqwest::Client::builder().timeout(limit))
    }

    fn with_http(url: &str, builder: reqwest::ClientBuilder) -> Client {
        let http = builder.pool_max_idle_per_host(64).build().expect("client");
        Client {
            http,
            url: url.to_string(),
        }
    }

    /// POSTs a JSON body with the standard headers plus `extra`.
    pub async fn post_raw(&self, body: &Value, extra: &[(&str, &str)]) -> reqwest::Response {
        let mut req = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", ACCEPT_BOTH)
            .body(body.to_string());
        for (k, v) in extra {
            req = req.header(*k, *v);
        }
        req.send().await.expect("POST")
    }

    /// Sends `initialize` and returns the session (no `notifications/initialized` yet).
    pub async fn initialize(&self, version: &str, capabilities: Value) -> Session {
        let body = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": { "protocolVersion": version, "capabilities": capabilities,
                        "clientInfo": { "name": "mcp-actor-tests", "version": "1" } }
        });
        let resp = self.post_raw(&body, &[]).await;
        assert_eq!(resp.status(), StatusCode::OK, "initialize failed");
        let id = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("Mcp-Session-Id header")
            .to_string();
        let result: Value = resp.json().await.expect("initialize JSON");
        let negotiated = result["result"]["protocolVersion"]
            .as_str()
            .expect("protocolVersion")
            .to_string();
        Session {
            client: self.clone(),
            id,
            version: negotiated,
            init_result: result,
        }
    }

    /// `initialize` + `notifications/initialized`, with elicitation, sampling and roots.
    pub async fn connect(&self) -> Session {
        let session = self
            .initialize(
                LATEST,
                json!({ "elicitation": {}, "sampling": {}, "roots": {} }),
            )
            .await;
        assert_eq!(
            session.notify("notifications/initialized", None).await,
            StatusCode::ACCEPTED
        );
        session
    }
}

/// An initialized session.
#[derive(Clone)]
pub struct Session {
    pub client: Client,
    pub id: String,
    pub version: String,
    pub init_result: Value,
}

impl Session {
    fn headers(&self) -> Vec<(&'static str, String)> {
        vec![
            ("mcp-session-id", self.id.clone()),
            ("mcp-protocol-version", self.version.clone()),
        ]
    }

    /// POSTs a JSON-RPC value with the session headers.
    pub async fn post_value(&self, body: &Value) -> reqwest::Response {
        let headers = self.headers();
        let extra: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        self.client.post_raw(body, &extra).await
    }

    /// POSTs and reads the whole reply.
    pub async fn post(&self, body: &Value) -> Reply {
        read_reply(self.post_value(body).await).await
    }

    /// Sends a request and reads the whole reply.
    pub async fn request(&self, id: Value, method: &str, params: Value) -> Reply {
        self.post(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await
    }

    /// Sends a request and returns the `result` of its response, panicking on an error.
    pub async fn call(&self, id: Value, method: &str, params: Value) -> Value {
        let reply = self.request(id.clone(), method, params).await;
        assert_eq!(reply.status, StatusCode::OK, "{method}: {reply:?}");
        let response = reply
            .response(&id)
            .unwrap_or_else(|| panic!("no response for {id} in {reply:?}"));
        response
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} failed: {response}"))
    }

    /// `tools/call` returning the first text content.
    pub async fn call_tool_text(&self, id: Value, name: &str, arguments: Value) -> String {
        let result = self
            .call(
                id,
                "tools/call",
                json!({ "name": name, "arguments": arguments }),
            )
            .await;
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    pub async fn notify(&self, method: &str, params: Option<Value>) -> StatusCode {
        let mut body = json!({ "jsonrpc": "2.0", "method": method });
        if let Some(p) = params {
            body["params"] = p;
        }
        self.post_value(&body).await.status()
    }

    /// POSTs a JSON-RPC response (the answer to a server→client request).
    pub async fn answer(&self, id: &Value, result: Value) -> StatusCode {
        self.post_value(&json!({ "jsonrpc": "2.0", "id": id, "result": result }))
            .await
            .status()
    }

    /// Opens a GET stream, optionally resuming with `Last-Event-ID`.
    pub async fn get(&self, last_event_id: Option<&str>) -> reqwest::Response {
        let mut req = self
            .client
            .http
            .get(&self.client.url)
            .header("accept", "text/event-stream");
        for (k, v) in self.headers() {
            req = req.header(k, v);
        }
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id);
        }
        req.send().await.expect("GET")
    }

    pub async fn delete(&self) -> StatusCode {
        let mut req = self.client.http.delete(&self.client.url);
        for (k, v) in self.headers() {
            req = req.header(k, v);
        }
        req.send().await.expect("DELETE").status()
    }
}

// ----- Helpers for the status, feature and lifecycle tests -----

/// The four builtin tools as `[[tools]]` entries, for configurations passed whole to
/// [`TestServer::with_config`].
pub const BUILTIN_TOOLS_TOML: &str = "
[[tools]]
builtin = \"echo\"

[[tools]]
builtin = \"sleep\"

[[tools]]
builtin = \"ask\"

[[tools]]
builtin = \"sample\"
";

impl TestServer {
    /// A client whose every request, body included, fails after `limit`, so a test can
    /// never hang on an unresponsive server.
    pub fn bounded_client(&self, limit: Duration) -> Client {
        Client::bounded(&self.url, limit)
    }

    /// The endpoint path, for example `/mcp`.
    pub fn path(&self) -> &str {
        let after_scheme = self.url.trim_start_matches("http://");
        after_scheme
            .find('/')
            .map_or("/", |slash| &after_scheme[slash..])
    }
}

impl Session {
    /// `req` with this session's `Mcp-Session-Id` and `MCP-Protocol-Version` headers.
    pub fn with_session_headers(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        self.headers()
            .into_iter()
            .fold(req, |req, (k, v)| req.header(k, v))
    }
}

/// Runs the binary with `args` and returns its exit status and stderr if it exits within
/// `limit`, killing it otherwise.
pub fn run_binary(args: &[&str], limit: Duration) -> Option<(std::process::ExitStatus, String)> {
    let mut child = Command::new(binary())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mcp-actor");
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if let Some(status) = child.try_wait().expect("wait") {
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                use std::io::Read;
                let _ = pipe.read_to_string(&mut stderr);
            }
            return Some((status, stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Runs `mcp-actor check FILE` with extra environment variables, bounded in time; returns
/// the exit status, stdout and stderr.
pub fn run_check(
    file: &std::path::Path,
    env: &[(&str, &str)],
) -> (std::process::ExitStatus, String, String) {
    run_check_without(file, env, &[])
}

/// [`run_check`], with the environment variables `unset` removed.
pub fn run_check_without(
    file: &std::path::Path,
    env: &[(&str, &str)],
    unset: &[&str],
) -> (std::process::ExitStatus, String, String) {
    const LIMIT: Duration = Duration::from_secs(30);
    let mut cmd = Command::new(binary());
    cmd.arg("check")
        .arg(file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    for k in unset {
        cmd.env_remove(k);
    }
    let mut child = cmd.spawn().expect("run mcp-actor check");
    let deadline = std::time::Instant::now() + LIMIT;
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "mcp-actor check {} did not exit within {LIMIT:?}",
                file.display()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let output = child.wait_with_output().expect("output");
    (
        output.status,
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Resident memory of process `pid` (`VmRSS` in `/proc/PID/status`), in KiB; 0 once it is gone.
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
