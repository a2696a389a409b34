//! A terminal MCP client that answers the server's questions, so a new user can watch the
//! default config's `ask` (elicitation) and `sample` (sampling) tools work:
//!
//! ```text
//! cargo run --example ask_client -- ask "Your name?"
//! cargo run --example ask_client -- http://127.0.0.1:8080/mcp sample "Write a haiku"
//! ```
//!
//! It speaks the 2025-11-25 handshake era over Streamable HTTP by hand, so every step of the
//! exchange is visible here: `initialize` declaring the `elicitation` and `sampling`
//! capabilities (without them the server refuses to send either request), then
//! `notifications/initialized`, then `tools/call`. The reply to that POST is plain JSON when the
//! tool answers at once; when the tool first needs something from the client the server
//! switches the reply to an SSE stream and sends its `elicitation/create` or
//! `sampling/createMessage` request there. The client answers with a separate POST carrying
//! the JSON-RPC response, keeps reading the stream until the tool's own response arrives, and
//! finally DELETEs the session.
//!
//! Answers come from stdin, one line per question, so the example also runs from a pipe:
//! `echo Ada | cargo run --example ask_client -- ask "Your name?"` (tests/example_client.rs does
//! exactly that).

use anyhow::{Context, Result, anyhow, bail};
use clap::{Parser, Subcommand};
use futures_util::StreamExt;
use reqwest::{Client, Response, StatusCode};
use serde_json::{Map, Value, json};
use sse_stream::SseByteStream;
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};

const PROTOCOL_VERSION: &str = "2025-11-25";
/// The id of the one `tools/call` this client sends; the response carrying it ends the run.
const CALL_ID: u64 = 1;

#[derive(Parser)]
#[command(about = "Calls the builtin `ask` or `sample` tool and answers the server from stdin")]
struct Cli {
    /// The server's MCP endpoint.
    #[arg(default_value = "http://127.0.0.1:8080/mcp")]
    url: String,
    #[command(subcommand)]
    tool: ToolCall,
}

#[derive(Subcommand)]
enum ToolCall {
    /// Call `ask {question}`: the server elicits the answer from this terminal.
    Ask { question: String },
    /// Call `sample {prompt}`: the server asks this terminal to play the model.
    Sample { prompt: String },
}

impl ToolCall {
    fn name_and_arguments(&self) -> (&'static str, Value) {
        match self {
            ToolCall::Ask { question } => ("ask", json!({ "question": question })),
            ToolCall::Sample { prompt } => ("sample", json!({ "prompt": prompt })),
        }
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    let session = Session::initialize(&cli.url).await?;
    // Close the session whatever happened to the call, so the server frees it at once.
    let outcome = call_tool(&session, &cli.tool, &mut stdin).await;
    session.delete().await;
    outcome
}

/// Calls the tool and serves the server's requests until the tool's response arrives.
async fn call_tool(session: &Session, tool: &ToolCall, stdin: &mut StdinLines) -> Result<()> {
    let (name, arguments) = tool.name_and_arguments();
    let call = json!({
        "jsonrpc": "2.0", "id": CALL_ID, "method": "tools/call",
        "params": { "name": name, "arguments": arguments },
    });
    let reply = session.post(&call).await?;
    if !is_sse(&reply) {
        let message: Value = reply
            .json()
            .await
            .context("the tools/call reply is not JSON")?;
        return print_tool_response(&message);
    }
    let mut events = SseByteStream::new(reply.bytes_stream());
    while let Some(event) = events.next().await {
        let event = event.context("reading the tools/call SSE stream")?;
        // The priming event and keep-alives carry no data.
        let Some(data) = event.data.filter(|d| !d.is_empty()) else {
            continue;
        };
        let message: Value = serde_json::from_str(&data).context("SSE data is not JSON")?;
        match (message.get("method"), message.get("id")) {
            (Some(method), Some(id)) => {
                let answer = answer_request(method.as_str().unwrap_or(""), &message, stdin).await;
                session.respond(id, answer).await?;
            }
            (Some(method), None) => eprintln!("(notification {method})"),
            (None, Some(id)) if *id == json!(CALL_ID) => return print_tool_response(&message),
            _ => eprintln!("(ignoring {message})"),
        }
    }
    bail!("the server closed the stream before the tool answered")
}

/// The `result` (or `error`) answering one server→client request.
async fn answer_request(
    method: &str,
    request: &Value,
    stdin: &mut StdinLines,
) -> Result<Value, Value> {
    let params = &request["params"];
    match method {
        "elicitation/create" => {
            println!(
                "server asks (elicitation/create): {}",
                text_of(&params["message"])
            );
            elicit(&params["requestedSchema"], stdin).await
        }
        "sampling/createMessage" => {
            println!("server asks (sampling/createMessage):");
            for message in params["messages"].as_array().into_iter().flatten() {
                let (role, content) = (&message["role"], &message["content"]["text"]);
                println!("  {}: {}", text_of(role), text_of(content));
            }
            println!("  reply as the model:");
            let text = read_line(stdin).await?;
            Ok(json!({
                "role": "assistant",
                "content": { "type": "text", "text": text },
                "model": "terminal",
                "stopReason": "endTurn",
            }))
        }
        // MCP clients answer methods they do not implement with -32601 (JSON-RPC 2.0 §5.1).
        _ => Err(
            json!({ "code": -32601, "message": format!("ask_client does not handle {method}") }),
        ),
    }
}

/// Accepts the elicitation with one stdin line per property of the requested schema
/// (elicitation schemas are flat objects of primitives: MCP 2025-11-25, elicitation).
async fn elicit(schema: &Value, stdin: &mut StdinLines) -> Result<Value, Value> {
    let mut content = Map::new();
    let properties = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for (name, property) in &properties {
        let label = property["title"].as_str().unwrap_or(name);
        match property["description"].as_str() {
            Some(description) => println!("  {label} ({description}):"),
            None => println!("  {label}:"),
        }
        let line = match read_line(stdin).await {
            Ok(line) => line,
            // No more input: cancel rather than accept with missing fields.
            Err(_) => return Ok(json!({ "action": "cancel" })),
        };
        content.insert(name.clone(), typed_value(property, line));
    }
    Ok(json!({ "action": "accept", "content": content }))
}

/// The line as the JSON type the property asks for, falling back to the string itself.
fn typed_value(property: &Value, line: String) -> Value {
    let parsed = match property["type"].as_str() {
        Some("integer") => line.parse::<i64>().ok().map(Value::from),
        Some("number") => line.parse::<f64>().ok().map(Value::from),
        Some("boolean") => line.parse::<bool>().ok().map(Value::from),
        _ => None,
    };
    parsed.unwrap_or(Value::String(line))
}

/// A JSON string without its quotes; any other value as JSON.
fn text_of(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_string)
}

type StdinLines = Lines<BufReader<Stdin>>;

/// One line from stdin, or the JSON-RPC error to send when there is none.
async fn read_line(stdin: &mut StdinLines) -> Result<String, Value> {
    match stdin.next_line().await {
        Ok(Some(line)) => Ok(line),
        _ => Err(json!({ "code": -1, "message": "the user gave no answer (stdin closed)" })),
    }
}

fn print_tool_response(message: &Value) -> Result<()> {
    if let Some(error) = message.get("error") {
        bail!("tools/call failed: {error}");
    }
    let result = &message["result"];
    let label = if result["isError"] == json!(true) {
        "tool error"
    } else {
        "tool result"
    };
    for item in result["content"].as_array().into_iter().flatten() {
        match item["text"].as_str() {
            Some(text) => println!("{label}: {text}"),
            None => println!("{label}: {item}"),
        }
    }
    Ok(())
}

fn is_sse(response: &Response) -> bool {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// An initialized MCP session: the headers every later request carries.
struct Session {
    http: Client,
    url: String,
    id: String,
    version: String,
}

impl Session {
    async fn initialize(url: &str) -> Result<Session> {
        let http = Client::new();
        let initialize = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": { "elicitation": {}, "sampling": {} },
                "clientInfo": { "name": "ask_client", "version": env!("CARGO_PKG_VERSION") },
            },
        });
        let reply = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize.to_string())
            .send()
            .await
            .with_context(|| format!("cannot reach {url}; is `cargo run` serving it?"))?;
        if reply.status() != StatusCode::OK {
            bail!(
                "initialize failed: {} {}",
                reply.status(),
                reply.text().await?
            );
        }
        let id = reply
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| anyhow!("the initialize reply has no Mcp-Session-Id header"))?
            .to_string();
        let result: Value = reply
            .json()
            .await
            .context("the initialize reply is not JSON")?;
        let version = result["result"]["protocolVersion"]
            .as_str()
            .unwrap_or(PROTOCOL_VERSION)
            .to_string();
        let session = Session {
            http,
            url: url.to_string(),
            id,
            version,
        };
        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        let status = session.post(&initialized).await?.status();
        if status != StatusCode::ACCEPTED {
            bail!("notifications/initialized was refused: {status}");
        }
        Ok(session)
    }

    async fn post(&self, message: &Value) -> Result<Response> {
        self.http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", &self.version)
            .body(message.to_string())
            .send()
            .await
            .context("POST to the server")
    }

    /// POSTs the response to a server→client request (the server accepts it with 202).
    async fn respond(&self, id: &Value, answer: Result<Value, Value>) -> Result<()> {
        let response = match answer {
            Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error }),
        };
        let status = self.post(&response).await?.status();
        if status != StatusCode::ACCEPTED {
            bail!("the server refused our answer: {status}");
        }
        Ok(())
    }

    async fn delete(&self) {
        let _ = self
            .http
            .delete(&self.url)
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", &self.version)
            .send()
            .await;
    }
}
