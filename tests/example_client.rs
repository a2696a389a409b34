//! `examples/ask_client.rs`, the README's way to try elicitation and sampling, run for real:
//! the example binary against the server binary on its default config, stdin piped.

mod common;

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::TestServer;

/// Building the example from a warm `target/` takes seconds; a cold one, a few minutes.
const BUILD_LIMIT: Duration = Duration::from_secs(600);
const RUN_LIMIT: Duration = Duration::from_secs(30);

#[test]
fn ask_client_answers_an_elicitation_with_a_line_from_stdin() {
    let server = TestServer::start();
    let output = run_ask_client(&[&server.url, "ask", "Your name?"], "Ada\n");
    assert!(
        output.contains("server asks (elicitation/create): Your name?"),
        "{output}"
    );
    assert!(output.contains("tool result: Ada\n"), "{output}");
}

#[test]
fn ask_client_plays_the_model_for_sampling_with_a_line_from_stdin() {
    let server = TestServer::start();
    let output = run_ask_client(&[&server.url, "sample", "Write a haiku"], "Ada\n");
    assert!(
        output.contains("server asks (sampling/createMessage):"),
        "{output}"
    );
    assert!(output.contains("tool result: Ada\n"), "{output}");
}

#[test]
fn ask_client_cancels_the_elicitation_when_stdin_is_empty() {
    let server = TestServer::start();
    let output = run_ask_client(&[&server.url, "ask", "Your name?"], "");
    assert!(output.contains("tool result: cancelled\n"), "{output}");
}

/// Runs the example with `stdin`, bounded by [`RUN_LIMIT`], and returns its stdout; panics
/// with its stderr when it fails.
fn run_ask_client(args: &[&str], stdin: &str) -> String {
    let mut command = Command::new(ask_client_binary());
    command.args(args);
    let output = run_bounded(command, stdin, RUN_LIMIT);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "ask_client failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The example's binary, built once per test run. Integration tests get no
/// `CARGO_BIN_EXE_` path for examples, so this runs the same cargo with the same profile and
/// finds the binary in `examples/` beside the server's.
fn ask_client_binary() -> &'static PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let mut build = Command::new(env!("CARGO"));
        build
            .args(["build", "--quiet", "--example", "ask_client"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if !cfg!(debug_assertions) {
            build.arg("--release");
        }
        let output = run_bounded(build, "", BUILD_LIMIT);
        assert!(
            output.status.success(),
            "cargo build --example ask_client failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let profile_dir = std::path::Path::new(env!("CARGO_BIN_EXE_mcp-actor"))
            .parent()
            .expect("the server binary's directory");
        profile_dir
            .join("examples")
            .join(format!("ask_client{}", std::env::consts::EXE_SUFFIX))
    })
}

/// Runs `command` with `stdin` written and closed, killing it if it outlives `limit`. The
/// outputs are read after exit, which is safe for the few lines these commands print.
fn run_bounded(mut command: Command, stdin: &str, limit: Duration) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let _ = child
        .stdout
        .take()
        .expect("stdout")
        .read_to_end(&mut stdout);
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_end(&mut stderr);
    Output {
        status,
        stdout,
        stderr,
    }
}
