//! `mcp-actor sessions list|show|end`, `mcp-actor reload` and `mcp-actor tasks list`: the
//! admin API's client (`src/http/admin_api.rs`), printing a table or, with `--json`, the
//! API's own JSON.
//!
//! The admin URL defaults to the configured admin listener (`admin.listen` of `--config`,
//! or of the embedded default); the token comes from `MCP_ACTOR_ADMIN_TOKEN`, never from
//! the command line, where `ps` would show it.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use futures_util::StreamExt;
use serde_json::Value;

/// The environment variable holding the admin token.
pub const TOKEN_ENV: &str = "MCP_ACTOR_ADMIN_TOKEN";

/// Bytes of an admin answer read at most: a page of sessions is far smaller.
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;
const TIMEOUT: Duration = Duration::from_secs(70);

/// What the operator asked.
pub enum AdminAsk {
    ListSessions { principal: Option<String> },
    ShowSession(String),
    EndSession(String),
    Reload,
    ListTasks,
}

pub struct AdminClient {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl AdminClient {
    /// A client of the admin listener at `base` (`http://127.0.0.1:9090`).
    pub fn new(base: &str) -> Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .context("cannot build an HTTP client")?;
        let token = std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty());
        Ok(AdminClient {
            base: base.trim_end_matches('/').to_string(),
            token,
            http,
        })
    }

    /// Sends one request; the answer's JSON, or an error with the API's message.
    async fn send(&self, method: reqwest::Method, path: &str) -> Result<(u16, Value)> {
        let url = format!("{}{path}", self.base);
        let mut request = self.http.request(method, &url);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.with_context(|| {
            format!(
                "cannot reach the admin API at {url}; is the server running, and is --admin right?"
            )
        })?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.with_context(|| format!("reading the answer of {url}"))?;
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                bail!("the answer of {url} exceeds {MAX_ANSWER_BYTES} bytes; stopped reading");
            }
            body.extend_from_slice(&chunk);
        }
        let value = if body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&body)
                .with_context(|| format!("{url} answered {status} with a body that is not JSON"))?
        };
        if status == 401 {
            bail!("{url}: 401: the admin API needs a token; set {TOKEN_ENV}");
        }
        Ok((status, value))
    }

    async fn expect_ok(&self, method: reqwest::Method, path: &str) -> Result<Value> {
        let (status, value) = self.send(method, path).await?;
        if !(200..300).contains(&status) {
            let message = value
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("(no message)");
            bail!("{status}: {message}");
        }
        Ok(value)
    }

    /// Every session, following `nextCursor` page by page.
    async fn all_sessions(&self, principal: Option<&str>) -> Result<Vec<Value>> {
        let mut sessions = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut query = url::form_urlencoded::Serializer::new(String::new());
            if let Some(c) = &cursor {
                query.append_pair("cursor", c);
            }
            if let Some(p) = principal {
                query.append_pair("principal", p);
            }
            let path = format!("/admin/sessions?{}", query.finish());
            let page = self.expect_ok(reqwest::Method::GET, &path).await?;
            if let Some(list) = page.get("sessions").and_then(Value::as_array) {
                sessions.extend(list.iter().cloned());
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_string()),
                None => return Ok(sessions),
            }
        }
    }
}

/// Runs `ask` against the admin API at `base`; returns whether it succeeded (a refused
/// reload prints its errors and fails).
pub async fn run(base: &str, ask: AdminAsk, json: bool) -> Result<bool> {
    let client = AdminClient::new(base)?;
    let segment =
        |id: &str| url::form_urlencoded::byte_serialize(id.as_bytes()).collect::<String>();
    match ask {
        AdminAsk::ListSessions { principal } => {
            let sessions = client.all_sessions(principal.as_deref()).await?;
            if json {
                print_json(&Value::from(sessions));
            } else {
                print_table(&SESSION_COLUMNS, &sessions);
            }
        }
        AdminAsk::ShowSession(id) => {
            let path = format!("/admin/sessions/{}", segment(&id));
            let session = client.expect_ok(reqwest::Method::GET, &path).await?;
            if json {
                print_json(&session);
            } else {
                print_fields(&session);
            }
        }
        AdminAsk::EndSession(id) => {
            let path = format!("/admin/sessions/{}", segment(&id));
            client.expect_ok(reqwest::Method::DELETE, &path).await?;
            if json {
                print_json(&serde_json::json!({ "ended": id }));
            } else {
                println!("session {id} ended");
            }
        }
        AdminAsk::Reload => {
            let (status, answer) = client.send(reqwest::Method::POST, "/admin/reload").await?;
            if json {
                print_json(&answer);
            } else if status == 200 {
                let waiting = text_list(answer.get("needsRestart"));
                match waiting.is_empty() {
                    true => println!("configuration reloaded"),
                    false => println!("configuration reloaded; a restart is needed for: {waiting}"),
                }
            } else {
                let message = answer
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("refused");
                eprintln!("{status}: {message}");
                if let Some(errors) = answer.get("errors").and_then(Value::as_str) {
                    eprintln!("{errors}");
                }
            }
            return Ok(status == 200);
        }
        AdminAsk::ListTasks => {
            let answer = client
                .expect_ok(reqwest::Method::GET, "/admin/tasks")
                .await?;
            let tasks = answer
                .get("tasks")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if json {
                print_json(&Value::from(tasks));
            } else {
                print_table(&TASK_COLUMNS, &tasks);
            }
        }
    }
    Ok(true)
}

/// A table column: its heading and the JSON pointer of its cells.
type Column = (&'static str, &'static str);

const SESSION_COLUMNS: [Column; 8] = [
    ("ID", "/id"),
    ("PRINCIPAL", "/principal"),
    ("VERSION", "/protocolVersion"),
    ("CLIENT", "/client/name"),
    ("CREATED", "/createdAt"),
    ("LAST ACTIVITY", "/lastActivity"),
    ("IN FLIGHT", "/inFlight"),
    ("STREAMS", "/streams"),
];

const TASK_COLUMNS: [Column; 5] = [
    ("TASK", "/taskId"),
    ("OWNER", "/owner"),
    ("STATUS", "/status"),
    ("TOOL", "/tool"),
    ("CREATED", "/createdAt"),
];

fn cell(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "-".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

fn text_list(value: Option<&Value>) -> String {
    let items = value
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    items
        .iter()
        .map(|v| cell(Some(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn print_table(columns: &[Column], rows: &[Value]) {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            columns
                .iter()
                .map(|(_, pointer)| cell(row.pointer(pointer)))
                .collect()
        })
        .collect();
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, (heading, _))| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .chain([heading.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |texts: Vec<&str>| {
        let padded: Vec<String> = texts
            .iter()
            .zip(&widths)
            .map(|(t, w)| format!("{t:<w$}"))
            .collect();
        println!("{}", padded.join("  ").trim_end());
    };
    line(columns.iter().map(|(heading, _)| *heading).collect());
    for row in &cells {
        line(row.iter().map(String::as_str).collect());
    }
}

fn print_fields(object: &Value) {
    let Some(map) = object.as_object() else {
        return print_json(object);
    };
    let width = map.keys().map(String::len).max().unwrap_or(0);
    for (key, value) in map {
        let text = match value {
            Value::Object(_) | Value::Array(_) => value.to_string(),
            other => cell(Some(other)),
        };
        println!("{key:<width$}  {text}");
    }
}

fn print_json(value: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}
