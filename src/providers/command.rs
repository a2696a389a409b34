//! Command tools: `[[tools]] command = ["program", "{argument}", ...]` runs a local program.
//!
//! Safety comes from how the process is started, not from escaping:
//! - argv is built element by element from the validated arguments and passed straight to
//!   `execve`, never to a shell, so `; rm -rf /` is one literal argument;
//! - a value that would make an element start with `-` is refused (an `isError` result)
//!   unless the tool sets `allow_flags = true`, so an argument cannot become an option such
//!   as `--delete` or `-exec`. Refusing beats inserting `--`, which not every program
//!   understands;
//! - the process leads its own process group, killed whole on timeout, on cancellation
//!   (`notifications/cancelled` or session end abort the handler task; the
//!   `CallProcesses` guard kills from `Drop`) and after exit; on Linux, descendants that
//!   left the group are found by a marker in their environment and killed too (see
//!   `descendants`), so nothing is orphaned;
//! - output is capped: past `max_output_bytes` the group is killed and the call fails;
//! - concurrency is capped server-wide and per session (`ProcessLimits`).

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use super::descendants::{RUN_MARKER_VAR, RunMarker, spawn_registered};
use super::placeholders::{ArgTemplate, Rendered, argument_text, expand_env};
use super::process::{CallProcesses, ProcessLimits};
use super::{ProviderError, ProviderRuntime, input_schema, resolve};
use crate::config::{Config, ToolConfig};
use crate::context::RequestContext;
use crate::features::tools::{Tool, ToolError};
use crate::protocol::CallToolResult;

/// Longest stderr excerpt put into an error result.
const STDERR_EXCERPT: usize = 8 * 1024;

/// A command tool, ready to run.
#[derive(Debug)]
struct CommandSpec {
    name: String,
    program: PathBuf,
    args: Vec<ArgTemplate>,
    cwd: PathBuf,
    env: Vec<(String, String)>,
    env_clear: bool,
    stdin: Option<String>,
    timeout: Duration,
    max_output: usize,
    allow_flags: bool,
    progress: bool,
    /// stdout is a JSON object, returned as `structuredContent` (an output schema is set).
    structured: bool,
}

/// Builds the tool of a `command = [...]` entry.
pub(crate) fn tool(
    entry: &ToolConfig,
    key: &str,
    config: &Config,
    base_dir: &Path,
    runtime: &ProviderRuntime,
) -> Result<Tool, Vec<ProviderError>> {
    let mut errors = Vec::new();
    let argv = entry.command.clone().unwrap_or_default();
    let name = entry.name.clone().unwrap_or_default();
    let at = |field: &str| format!("{key}.{field}");
    let mut templates = Vec::new();
    for element in argv.iter().skip(1) {
        match ArgTemplate::parse(element) {
            Ok(t) => templates.push(t),
            Err(msg) => errors.push((at("command"), msg)),
        }
    }
    let mut env = Vec::new();
    for (var, value) in &entry.env {
        match expand_env(value) {
            Ok(v) => env.push((var.clone(), v)),
            Err(msg) => errors.push((format!("{key}.env.{var}"), msg)),
        }
    }
    let path_var = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("PATH").ok().filter(|_| !entry.env_clear));
    let program = match argv.first() {
        Some(first) => match find_program(first, base_dir, path_var.as_deref()) {
            Ok(p) => Some(p),
            Err(msg) => {
                errors.push((at("command"), msg));
                None
            }
        },
        None => None,
    };
    let cwd = resolve(base_dir, entry.cwd.as_deref().unwrap_or(Path::new(".")));
    if !cwd.is_dir() {
        errors.push((at("cwd"), format!("{} is not a directory", cwd.display())));
    }
    let mut placeholders: Vec<String> = Vec::new();
    for name in templates.iter().flat_map(ArgTemplate::names) {
        if !placeholders.iter().any(|p| p == name) {
            placeholders.push(name.to_string());
        }
    }
    if let Some(stdin) = &entry.stdin {
        if !placeholders.contains(stdin) {
            placeholders.push(stdin.clone());
        }
    }
    let schema = match input_schema(
        entry.input_schema.as_ref(),
        &placeholders,
        &[],
        key,
        "command",
    ) {
        Ok(s) => Some(s),
        Err(mut e) => {
            errors.append(&mut e);
            None
        }
    };
    let (Some(program), Some(schema), true) = (program, schema, errors.is_empty()) else {
        return Err(errors);
    };
    let spec = Arc::new(CommandSpec {
        name: name.clone(),
        program,
        args: templates,
        cwd,
        env,
        env_clear: entry.env_clear,
        stdin: entry.stdin.clone(),
        timeout: entry.timeout.unwrap_or(config.command_tools.timeout),
        max_output: entry
            .max_output_bytes
            .unwrap_or(config.command_tools.max_output_bytes),
        allow_flags: entry.allow_flags,
        progress: entry.progress,
        structured: entry.output_schema.is_some(),
    });
    let description = entry
        .description
        .clone()
        .unwrap_or_else(|| format!("Runs {}", argv.join(" ")));
    let limits = Arc::clone(&runtime.limits);
    Tool::new(name, description, schema, move |ctx, args| {
        let spec = Arc::clone(&spec);
        let limits = Arc::clone(&limits);
        Box::pin(async move { run(&spec, &limits, ctx, args).await })
    })
    .map_err(|e| vec![(at("input_schema"), e.to_string())])
}

/// The program to execute: a path with a `/` resolves against the configuration's
/// directory and must exist; a bare name is looked up in `PATH` now, so a typo fails at
/// load rather than at the first call.
pub(crate) fn find_program(
    program: &str,
    base_dir: &Path,
    path_var: Option<&str>,
) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = resolve(base_dir, Path::new(program));
        if !path.exists() {
            return Err(format!("program {} does not exist", path.display()));
        }
        if !executable(&path) {
            return Err(format!(
                "program {} is not an executable file (chmod +x it?)",
                path.display()
            ));
        }
        return Ok(path);
    }
    path_var
        .into_iter()
        .flat_map(|p| p.split(':'))
        .map(|dir| Path::new(dir).join(program))
        .find(|p| executable(p))
        .ok_or_else(|| format!("program {program:?} is not found in PATH"))
}

/// How the process ended.
enum Ending {
    Exited(ExitStatus),
    TimedOut,
    OutputTooLarge,
    Cancelled,
}

async fn run(
    spec: &CommandSpec,
    limits: &Arc<ProcessLimits>,
    ctx: RequestContext,
    args: Value,
) -> Result<CallToolResult, ToolError> {
    let empty = Map::new();
    let args = args.as_object().unwrap_or(&empty);
    let mut argv = Vec::with_capacity(spec.args.len());
    for template in &spec.args {
        match template.render(args) {
            Rendered::Absent => {}
            Rendered::Arg {
                value,
                flag_injected,
            } => {
                if flag_injected && !spec.allow_flags {
                    tracing::warn!(tool = %spec.name, "refused an argument that starts with '-'");
                    return Ok(CallToolResult::error(format!(
                        "argument value {value:?} starts with '-', which tool {:?} does not accept: it could be read as an option (the tool's configuration would need allow_flags = true)",
                        spec.name
                    )));
                }
                argv.push(value);
            }
        }
    }
    let _slot = match limits.try_acquire(ctx.session_id()) {
        Ok(slot) => slot,
        Err(e) => {
            tracing::warn!(tool = %spec.name, session = ?ctx.session_id(), "command refused: {e}");
            return Ok(CallToolResult::error(e.to_string()));
        }
    };
    let stdin_data = spec
        .stdin
        .as_ref()
        .and_then(|name| args.get(name))
        .and_then(argument_text);
    let mut command = Command::new(&spec.program);
    command
        .args(&argv)
        .current_dir(&spec.cwd)
        .stdin(if stdin_data.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if spec.env_clear {
        command.env_clear();
    }
    command.envs(spec.env.iter().map(|(k, v)| (k, v)));
    // Set last, so neither `env` nor `env_clear` can remove or forge it.
    let marker = RunMarker::new();
    command.env(RUN_MARKER_VAR, marker.value());
    let mut spawned = spawn_registered(&mut command)
        .map_err(|e| ToolError::msg(format!("cannot start {}: {e}", spec.program.display())))?;
    let child = &mut spawned.child;
    // Declared after `spawned`, so it is dropped first: the processes die before the handle.
    let pid = child.id();
    let mut processes = pid.map(|pid| CallProcesses::new(pid, marker));
    tracing::debug!(tool = %spec.name, ?pid, "command started");
    if let (Some(data), Some(mut stdin)) = (stdin_data, child.stdin.take()) {
        // A program that does not read its stdin must not block the call: write in the
        // background and ignore a closed pipe.
        tokio::spawn(async move {
            let _ = stdin.write_all(data.as_bytes()).await;
        });
    }
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(ToolError::msg("the command's output pipes are missing"));
    };
    let mut output = Output::new(spec.max_output);
    let ending = tokio::select! {
        ending = collect(child, &mut processes, stdout, stderr, &mut output, spec, &ctx) => ending,
        () = tokio::time::sleep(spec.timeout) => Ending::TimedOut,
        () = ctx.cancellation().cancelled() => Ending::Cancelled,
    };
    if let Some(processes) = processes.as_mut() {
        processes.kill().await;
    }
    Ok(result(spec, ending, output))
}

/// What the process wrote.
struct Output {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    max: usize,
    lines_seen: usize,
    line_start: usize,
}

impl Output {
    fn new(max: usize) -> Self {
        Output {
            stdout: Vec::new(),
            stderr: Vec::new(),
            max,
            lines_seen: 0,
            line_start: 0,
        }
    }
}

/// Reads both pipes until the process exits. Once it has, its processes are killed so a
/// background child holding the pipes open cannot keep the call waiting, then the pipes are
/// drained.
async fn collect(
    child: &mut tokio::process::Child,
    processes: &mut Option<CallProcesses>,
    mut stdout: impl AsyncRead + Unpin,
    mut stderr: impl AsyncRead + Unpin,
    output: &mut Output,
    spec: &CommandSpec,
    ctx: &RequestContext,
) -> Ending {
    let mut out_buf = [0u8; 8192];
    let mut err_buf = [0u8; 8192];
    let (mut out_open, mut err_open) = (true, true);
    let mut status = None;
    loop {
        if status.is_some() && !out_open && !err_open {
            break;
        }
        tokio::select! {
            read = stdout.read(&mut out_buf), if out_open => match read {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => {
                    if output.stdout.len() + n > output.max {
                        return Ending::OutputTooLarge;
                    }
                    output.stdout.extend_from_slice(&out_buf[..n]);
                    if spec.progress {
                        report_lines(output, ctx).await;
                    }
                }
            },
            read = stderr.read(&mut err_buf), if err_open => match read {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => {
                    // stderr past the cap is read and dropped, so the program never blocks
                    // on a full pipe; only stdout's cap ends the call.
                    let room = output.max.saturating_sub(output.stderr.len());
                    output.stderr.extend_from_slice(&err_buf[..n.min(room)]);
                }
            },
            exit = child.wait(), if status.is_none() => {
                status = Some(exit);
                // Leftover background processes would hold the pipes open.
                if let Some(processes) = processes.as_mut() {
                    processes.kill().await;
                }
            },
        }
    }
    match status {
        Some(Ok(status)) => Ending::Exited(status),
        // `wait` failing means the child cannot be observed; treat it as killed.
        Some(Err(_)) | None => Ending::Cancelled,
    }
}

/// Sends one progress notification per complete stdout line.
async fn report_lines(output: &mut Output, ctx: &RequestContext) {
    while let Some(pos) = output.stdout[output.line_start..]
        .iter()
        .position(|&b| b == b'\n')
    {
        let end = output.line_start + pos;
        let line = String::from_utf8_lossy(&output.stdout[output.line_start..end]).into_owned();
        output.line_start = end + 1;
        output.lines_seen += 1;
        ctx.progress(
            output.lines_seen as f64,
            None,
            Some(line.trim_end_matches('\r')),
        )
        .await;
    }
}

fn result(spec: &CommandSpec, ending: Ending, output: Output) -> CallToolResult {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let excerpt: String = stderr.chars().take(STDERR_EXCERPT).collect();
    match ending {
        Ending::Exited(status) if status.success() => {
            if spec.structured {
                return match serde_json::from_str::<Value>(&stdout) {
                    Ok(value @ Value::Object(_)) => CallToolResult {
                        content: vec![crate::protocol::Content::text(stdout.clone())],
                        structured_content: Some(value),
                        is_error: None,
                    },
                    _ => CallToolResult::error(format!(
                        "tool {:?} declares an output schema, but its command did not print a JSON object:\n{stdout}",
                        spec.name
                    )),
                };
            }
            CallToolResult::text(stdout)
        }
        Ending::Exited(status) => {
            use std::os::unix::process::ExitStatusExt;
            let how = match (status.code(), status.signal()) {
                (Some(code), _) => format!("exited with code {code}"),
                (None, Some(signal)) => format!("was killed by signal {signal}"),
                (None, None) => "failed".to_string(),
            };
            tracing::info!(tool = %spec.name, "command {how}");
            let mut text = format!("command {how}");
            if !excerpt.is_empty() {
                text.push_str(&format!("\nstderr:\n{excerpt}"));
            }
            if !stdout.is_empty() {
                text.push_str(&format!("\nstdout:\n{stdout}"));
            }
            CallToolResult::error(text)
        }
        Ending::TimedOut => {
            tracing::warn!(tool = %spec.name, timeout = ?spec.timeout, "command timed out; process group killed");
            CallToolResult::error(format!(
                "command timed out after {:?}; it was stopped (the tool's timeout)",
                spec.timeout
            ))
        }
        Ending::OutputTooLarge => {
            tracing::warn!(tool = %spec.name, max = spec.max_output, "command output over the limit; process group killed");
            CallToolResult::error(format!(
                "command output exceeded {} bytes (max_output_bytes); it was stopped. The first {} bytes:\n{stdout}",
                spec.max_output,
                output.stdout.len()
            ))
        }
        Ending::Cancelled => {
            tracing::info!(tool = %spec.name, "command cancelled; process group killed");
            CallToolResult::error("the call was cancelled; the command was stopped")
        }
    }
}
