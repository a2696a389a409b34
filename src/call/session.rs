//! One handshake-era session of `mcp-actor call`: the headers every request after
//! `initialize` carries.

use anyhow::{Context, Result, anyhow, bail};
use reqwest::{Client, Response, StatusCode};
use serde_json::{Value, json};

const PROTOCOL_VERSION: &str = "2025-11-25";

pub(super) struct Session {
    http: Client,
    url: String,
    id: String,
    version: String,
}

pub(super) fn is_sse(response: &Response) -> bool {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

impl Session {
    pub(super) async fn initialize(url: &str) -> Result<Session> {
        let http = Client::builder()
            .connect_timeout(std::time::Duration::from_secs(10))
            .build()?;
        let initialize = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": { "elicitation": {}, "sampling": {} },
                "clientInfo": { "name": "mcp-actor call", "version": env!("CARGO_PKG_VERSION") },
            },
        });
        let reply = post(&http, url, &initialize, &[])
            .await
            .with_context(|| format!("cannot reach {url}; is mcp-actor serving it? (--url)"))?;
        if reply.status() != StatusCode::OK {
            bail!(
                "initialize failed: {} {}",
                reply.status(),
                bounded_text(reply).await?
            );
        }
        let id = reply
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| anyhow!("the initialize reply has no Mcp-Session-Id header"))?
            .to_string();
        let text = bounded_text(reply).await?;
        let result = initialize_result(&text)?;
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

    pub(super) async fn post(&self, message: &Value) -> Result<Response> {
        let headers = [
            ("mcp-session-id", self.id.as_str()),
            ("mcp-protocol-version", &self.version),
        ];
        post(&self.http, &self.url, message, &headers).await
    }

    /// POSTs the response to a server→client request (the server accepts it with 202).
    pub(super) async fn respond(&self, id: &Value, answer: Result<Value, Value>) -> Result<()> {
        let response = match answer {
            Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error }),
        };
        let status = self.post(&response).await?.status();
        if status != StatusCode::ACCEPTED {
            bail!("the server refused the answer: {status}");
        }
        Ok(())
    }

    pub(super) async fn delete(&self) {
        let _ = self
            .http
            .delete(&self.url)
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", &self.version)
            .send()
            .await;
    }
}

async fn post(
    http: &Client,
    url: &str,
    message: &Value,
    headers: &[(&str, &str)],
) -> Result<Response> {
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request
        .body(message.to_string())
        .send()
        .await
        .context("POST to the server")
}

/// The initialize response: plain JSON, or the one message of an SSE reply.
fn initialize_result(text: &str) -> Result<Value> {
    if let Ok(value) = serde_json::from_str(text) {
        return Ok(value);
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .find_map(|d| serde_json::from_str(d.trim()).ok())
        .ok_or_else(|| anyhow!("the initialize reply is not JSON: {text}"))
}

/// The most a reply may hold: a server that never ends its body or its stream must not
/// grow this process without bound.
pub const MAX_REPLY_BYTES: usize = 64 << 20;

/// `reply`'s body as a stream of chunks that fails once it has carried more than
/// [`MAX_REPLY_BYTES`].
pub fn bounded_bytes(
    reply: Response,
) -> impl futures_util::Stream<Item = Result<bytes::Bytes, std::io::Error>> {
    use futures_util::StreamExt;
    let mut seen = 0usize;
    reply.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        seen = seen.saturating_add(chunk.len());
        if seen > MAX_REPLY_BYTES {
            return Err(std::io::Error::other(format!(
                "the server's reply passed {} MiB; this client reads no more",
                MAX_REPLY_BYTES >> 20
            )));
        }
        Ok(chunk)
    })
}

/// `reply`'s body as text, at most [`MAX_REPLY_BYTES`] of it.
pub async fn bounded_text(reply: Response) -> Result<String> {
    use futures_util::StreamExt;
    let mut body = Vec::new();
    let mut chunks = std::pin::pin!(bounded_bytes(reply));
    while let Some(chunk) = chunks.next().await {
        body.extend_from_slice(&chunk?);
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}
