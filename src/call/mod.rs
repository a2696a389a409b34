//! `mcp-actor call TOOL key=value …`: a small MCP client in the binary, so trying a tool
//! (elicitation and sampling included) needs no second build.
//!
//! It speaks the handshake era (2025-11-25) over Streamable HTTP, as
//! `examples/ask_client.rs` does step by step: `initialize` declaring `elicitation` and
//! `sampling` (without them the server sends neither), `notifications/initialized`, then
//! `tools/call` with a progress token. When the tool needs something from the client the
//! server answers that POST with an SSE stream and sends its request there; the answer goes
//! back in a POST of its own, and the stream goes on until the tool's response. Questions,
//! progress and log messages go to stderr and the result to stdout, so the result can be
//! piped. The session is DELETEd at the end, whatever happened to the call.

pub mod admin;
pub mod admin_cli;
mod session;

use anyhow::{Context, Result, bail};
use futures_util::StreamExt;
use serde_json::{Map, Value, json};
use sse_stream::SseByteStream;
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};

use session::{Session, is_sse};

/// The id of the one `tools/call`: the response carrying it ends the run.
const CALL_ID: u64 = 1;

/// What `mcp-actor call` was asked.
pub struct CallRequest {
    pub url: String,
    pub tool: String,
    /// `key=value` pairs; a value is JSON when it parses as JSON, else a string.
    pub pairs: Vec<String>,
    /// `--json '{…}'`: the arguments as one JSON object, merged under the pairs.
    pub json: Option<String>,
}

type StdinLines = Lines<BufReader<Stdin>>;

/// Calls the tool and serves the server's requests until the tool's response arrives;
/// returns whether the tool succeeded (`isError` is false).
pub async fn call(request: CallRequest) -> Result<bool> {
    let arguments = arguments(&request)?;
    let session = Session::initialize(&request.url).await?;
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    let outcome = call_tool(&session, &request.tool, arguments, &mut stdin).await;
    session.delete().await;
    outcome
}

fn arguments(request: &CallRequest) -> Result<Map<String, Value>> {
    let mut arguments = match &request.json {
        Some(text) => match serde_json::from_str(text) {
            Ok(Value::Object(object)) => object,
            Ok(_) => bail!("--json takes a JSON object, as --json '{{\"question\": \"Why?\"}}'"),
            Err(e) => bail!("--json is not JSON: {e}"),
        },
        None => Map::new(),
    };
    for pair in &request.pairs {
        let Some((key, value)) = pair.split_once('=') else {
            bail!("argument {pair:?} is not key=value, as question=\"Your name?\"");
        };
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::from(value));
        arguments.insert(key.to_string(), value);
    }
    Ok(arguments)
}

async fn call_tool(
    session: &Session,
    tool: &str,
    arguments: Map<String, Value>,
    stdin: &mut StdinLines,
) -> Result<bool> {
    let call = json!({
        "jsonrpc": "2.0", "id": CALL_ID, "method": "tools/call",
        "params": { "name": tool, "arguments": arguments, "_meta": { "progressToken": "call" } },
    });
    let reply = session.post(&call).await?;
    if !is_sse(&reply) {
        let status = reply.status();
        let text = session::bounded_text(reply)
            .await
            .context("reading the tools/call reply")?;
        let message: Value = serde_json::from_str(&text)
            .with_context(|| format!("the tools/call reply ({status}) is not JSON: {text}"))?;
        return print_tool_response(&message);
    }
    let mut events = SseByteStream::new(session::bounded_bytes(reply));
    while let Some(event) = events.next().await {
        let event = event.context("reading the tools/call SSE stream")?;
        // The priming event and keep-alives carry no data.
        let Some(data) = event.data.filter(|d| !d.is_empty()) else {
            continue;
        };
        let message: Value = serde_json::from_str(&data).context("SSE data is not JSON")?;
        match (
            message.get("method").and_then(Value::as_str),
            message.get("id"),
        ) {
            (Some(method), Some(id)) => {
                let answer = answer_request(method, &message["params"], stdin).await;
                session.respond(id, answer).await?;
            }
            (Some(method), None) => print_notification(method, &message["params"]),
            (None, Some(id)) if *id == json!(CALL_ID) => return print_tool_response(&message),
            _ => eprintln!("(ignoring {message})"),
        }
    }
    bail!("the server closed the stream before the tool answered")
}

fn print_notification(method: &str, params: &Value) {
    match method {
        "notifications/progress" => {
            let total = params["total"].as_f64().map(|t| format!("/{t}"));
            let message = params["message"].as_str().map(|m| format!(" {m}"));
            eprintln!(
                "progress: {}{}{}",
                params["progress"],
                total.unwrap_or_default(),
                message.unwrap_or_default()
            );
        }
        "notifications/message" => {
            eprintln!(
                "log [{}]: {}",
                text_of(&params["level"]),
                text_of(&params["data"])
            );
        }
        _ => eprintln!("({method})"),
    }
}

/// The `result` (or `error`) answering one server→client request.
async fn answer_request(
    method: &str,
    params: &Value,
    stdin: &mut StdinLines,
) -> Result<Value, Value> {
    match method {
        "elicitation/create" => {
            eprintln!("server asks: {}", text_of(&params["message"]));
            elicit(&params["requestedSchema"], stdin).await
        }
        "sampling/createMessage" => {
            eprintln!("server asks this terminal to play the model:");
            for message in params["messages"].as_array().into_iter().flatten() {
                let (role, content) = (&message["role"], &message["content"]["text"]);
                eprintln!("  {}: {}", text_of(role), text_of(content));
            }
            eprintln!("  reply as the model:");
            let text = read_line(stdin).await?;
            Ok(json!({
                "role": "assistant",
                "content": { "type": "text", "text": text },
                "model": "terminal",
                "stopReason": "endTurn",
            }))
        }
        "ping" => Ok(json!({})),
        // Methods a client does not implement get -32601 (JSON-RPC 2.0 §5.1).
        _ => Err(
            json!({ "code": -32601, "message": format!("mcp-actor call does not handle {method}") }),
        ),
    }
}

/// Accepts with one stdin line per property of the requested schema (elicitation schemas
/// are flat objects of primitives: MCP 2025-11-25, elicitation). End of input cancels.
async fn elicit(schema: &Value, stdin: &mut StdinLines) -> Result<Value, Value> {
    let mut content = Map::new();
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        let label = property["title"].as_str().unwrap_or(name);
        match property["description"].as_str() {
            Some(description) => eprintln!("  {label} ({description}):"),
            None => eprintln!("  {label}:"),
        }
        let Ok(line) = read_line(stdin).await else {
            return Ok(json!({ "action": "cancel" }));
        };
        content.insert(name.clone(), typed_value(property, line));
    }
    Ok(json!({ "action": "accept", "content": content }))
}

/// The line as the JSON type the property asks for, else the string itself.
fn typed_value(property: &Value, line: String) -> Value {
    let parsed = match property["type"].as_str() {
        Some("integer") => line.parse::<i64>().ok().map(Value::from),
        Some("number") => line.parse::<f64>().ok().map(Value::from),
        Some("boolean") => line.parse::<bool>().ok().map(Value::from),
        _ => None,
    };
    parsed.unwrap_or(Value::String(line))
}

fn text_of(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_string)
}

async fn read_line(stdin: &mut StdinLines) -> Result<String, Value> {
    match stdin.next_line().await {
        Ok(Some(line)) => Ok(line),
        _ => Err(json!({ "code": -1, "message": "the user gave no answer (stdin closed)" })),
    }
}

/// Prints the result's text to stdout (other content as JSON); an error goes to stderr.
fn print_tool_response(message: &Value) -> Result<bool> {
    if let Some(error) = message.get("error") {
        bail!(
            "tools/call failed: {} ({})",
            text_of(&error["message"]),
            error["code"]
        );
    }
    let result = &message["result"];
    let failed = result["isError"] == json!(true);
    for item in result["content"].as_array().into_iter().flatten() {
        let text = item["text"]
            .as_str()
            .map_or_else(|| item.to_string(), str::to_string);
        if failed {
            eprintln!("tool error: {text}");
        } else {
            println!("{text}");
        }
    }
    Ok(!failed)
}

/// `mcp-actor probe URL`: one GET of this machine's server (a container's health check),
/// successful only on a 2xx answer.
pub async fn probe(url: &str, timeout: std::time::Duration) -> Result<()> {
    anyhow::ensure!(
        url.starts_with("http://"),
        "probe takes a plain http:// URL of this machine's server, not {url:?}"
    );
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let response = client
        .get(url)
        .send()
        .await
        .with_context(|| format!("probe {url}"))?;
    let status = response.status();
    anyhow::ensure!(status.is_success(), "probe {url}: {status}");
    println!("{url}: {status}");
    Ok(())
}
