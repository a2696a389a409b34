//! A 2025-11-25 client of the cluster, through the balancer, that does what the spec asks of
//! a client behind a load balancer: on 404 its session is gone, so it starts a new one and
//! sends the request again (the request had not started: the node that got it did not know
//! the session); an `initialize` refused with 503 (the node drains or is full) is sent again
//! after `Retry-After`. Everything else that is not a result is an error, which the
//! scenarios count as a lost call.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{ACCEPT_BOTH, Client, LATEST, Session, read_reply};

/// Longest one exchange may take.
pub const LIMIT: Duration = Duration::from_secs(20);
/// Attempts at one `initialize`, and at one call, before the client gives up.
const ATTEMPTS: u32 = 20;
/// The longest `Retry-After` the client honours; the nodes ask for 1 to 5 seconds.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(1);

/// What the client did besides plain calls.
#[derive(Debug, Default, Clone, Copy)]
pub struct Recoveries {
    /// Sessions started again after a 404.
    pub reinitialized: u32,
    /// `initialize` requests refused with 503 and sent again.
    pub initialize_refused: u32,
}

pub struct Caller {
    client: Client,
    session: Option<Session>,
    pub recoveries: Recoveries,
}

impl Caller {
    pub fn new(url: &str) -> Caller {
        Caller {
            client: Client::bounded(url, LIMIT),
            session: None,
            recoveries: Recoveries::default(),
        }
    }

    /// The current session's id, starting one if there is none.
    pub async fn session_id(&mut self) -> Result<String, String> {
        Ok(self.session().await?.id.clone())
    }

    /// The current session's id, if one is open.
    pub fn current_session_id(&self) -> Option<&str> {
        self.session.as_ref().map(|s| s.id.as_str())
    }

    async fn session(&mut self) -> Result<&Session, String> {
        if self.session.is_none() {
            let session = self.initialize().await?;
            self.session = Some(session);
        }
        Ok(self.session.as_ref().expect("a session"))
    }

    /// `initialize` + `notifications/initialized`, sent again on 503 (after Retry-After)
    /// and when the new session is gone before it is confirmed (404).
    async fn initialize(&mut self) -> Result<Session, String> {
        let body = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": { "protocolVersion": LATEST, "capabilities": {},
                        "clientInfo": { "name": "mcp-actor-cluster-tests", "version": "1" } }
        });
        for _ in 0..ATTEMPTS {
            let resp = self.post(&body, None).await?;
            let status = resp.status();
            if status == StatusCode::SERVICE_UNAVAILABLE {
                self.recoveries.initialize_refused += 1;
                tokio::time::sleep(retry_wait(&resp)).await;
                continue;
            }
            if status != StatusCode::OK {
                return Err(format!(
                    "initialize: HTTP {status}: {}",
                    resp.text().await.unwrap_or_default()
                ));
            }
            let id = resp
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .ok_or("initialize: no Mcp-Session-Id header")?
                .to_string();
            let result: Value = resp.json().await.map_err(|e| format!("initialize: {e}"))?;
            let session = Session {
                client: self.client.clone(),
                id,
                version: result["result"]["protocolVersion"]
                    .as_str()
                    .ok_or_else(|| format!("initialize: no protocolVersion in {result}"))?
                    .to_string(),
                init_result: result,
            };
            let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
            match self.post(&initialized, Some(&session)).await?.status() {
                StatusCode::ACCEPTED => return Ok(session),
                StatusCode::NOT_FOUND => self.recoveries.reinitialized += 1,
                other => return Err(format!("notifications/initialized: HTTP {other}")),
            }
        }
        Err(format!("initialize: no session after {ATTEMPTS} attempts"))
    }

    /// One attempt: POSTs the request on the current session and returns the status and,
    /// for a 200, the response's `result` (or `error`, as `Err`).
    pub async fn send_once(
        &mut self,
        id: u64,
        method: &str,
        params: Value,
    ) -> Result<(StatusCode, Option<Result<Value, Value>>), String> {
        let session = self.session().await?.clone();
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let reply = read_reply(self.post(&body, Some(&session)).await?).await;
        if reply.status != StatusCode::OK {
            return Ok((reply.status, None));
        }
        let response = reply
            .response(&json!(id))
            .ok_or_else(|| format!("{method}: no response with id {id} in {reply:?}"))?;
        let outcome = match response.get("result") {
            Some(result) => Ok(result.clone()),
            None => Err(response.get("error").cloned().unwrap_or(Value::Null)),
        };
        Ok((reply.status, Some(outcome)))
    }

    /// POSTs `body`, with the session's headers when given; a transport error (the balancer
    /// closed the connection, or [`LIMIT`] passed) is an `Err`.
    async fn post(
        &self,
        body: &Value,
        session: Option<&Session>,
    ) -> Result<reqwest::Response, String> {
        let mut req = self
            .client
            .http
            .post(&self.client.url)
            .header("content-type", "application/json")
            .header("accept", ACCEPT_BOTH)
            .body(body.to_string());
        if let Some(session) = session {
            req = session.with_session_headers(req);
        }
        req.send()
            .await
            .map_err(|e| format!("{}: {e}", body["method"]))
    }

    /// Forgets the session, as a client does after a 404.
    pub fn drop_session(&mut self) {
        self.session = None;
    }

    /// `tools/call` until it has a result: on 404 a new session and the call again.
    /// Returns the result and the id of the session that served it.
    pub async fn call_tool(
        &mut self,
        id: u64,
        name: &str,
        arguments: Value,
    ) -> Result<(Value, String), String> {
        let params = json!({ "name": name, "arguments": arguments });
        for _ in 0..ATTEMPTS {
            let (status, outcome) = self.send_once(id, "tools/call", params.clone()).await?;
            match (status, outcome) {
                (StatusCode::OK, Some(Ok(result))) => {
                    let session = self.current_session_id().unwrap_or_default().to_string();
                    return Ok((result, session));
                }
                (StatusCode::OK, Some(Err(error))) => {
                    return Err(format!("tools/call {name}: error {error}"));
                }
                (StatusCode::NOT_FOUND, _) => {
                    self.recoveries.reinitialized += 1;
                    self.drop_session();
                }
                (other, _) => return Err(format!("tools/call {name}: HTTP {other}")),
            }
        }
        Err(format!(
            "tools/call {name}: 404 on {ATTEMPTS} sessions in a row"
        ))
    }

    /// `echo` of `text`, checked; returns the id of the session that served it.
    pub async fn echo(&mut self, id: u64, text: &str) -> Result<String, String> {
        let (result, session) = self.call_tool(id, "echo", json!({ "text": text })).await?;
        let echoed = result["content"][0]["text"].as_str().unwrap_or_default();
        if echoed != text {
            return Err(format!("echo {text:?} came back as {result}"));
        }
        Ok(session)
    }
}

/// How long a 503 asks the client to wait, capped at [`MAX_RETRY_WAIT`].
fn retry_wait(resp: &reqwest::Response) -> Duration {
    resp.headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(MAX_RETRY_WAIT, |secs| {
            Duration::from_secs(secs).min(MAX_RETRY_WAIT)
        })
}
