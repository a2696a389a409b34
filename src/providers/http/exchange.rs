//! One HTTP tool call on the wire: the request, the redirects it may follow, and the
//! response body read up to the tool's limit.
//!
//! The shared client follows no redirects itself ([`ProviderRuntime`](crate::providers::ProviderRuntime)); they
//! are followed here, because the decision depends on the tool (`follow_redirects`) and
//! because reqwest, when it follows one to another host, drops only the headers it knows to
//! be credentials (`Authorization`, `Cookie`, ...) and would carry a configured `X-Api-Key`
//! along. Here a configured header is sent only while every hop so far stayed on the tool's
//! origin; once a redirect leaves it, none is sent again, even on a way back.

use reqwest::header::{HeaderMap, LOCATION};
use reqwest::{Method, StatusCode, Url};
use serde_json::Value;

use crate::config::FollowRedirects;
use crate::telemetry;

/// Redirects followed at most in one call (reqwest's default limit too).
pub(super) const MAX_REDIRECTS: usize = 10;

/// What one call sends.
pub(super) struct Request<'a> {
    pub client: &'a reqwest::Client,
    pub method: Method,
    pub url: Url,
    pub headers: &'a HeaderMap,
    /// The JSON body, when the tool sends the arguments.
    pub body: Option<&'a Value>,
    pub follow: FollowRedirects,
    pub max_bytes: usize,
}

/// The final response: status, lowercased `Content-Type` and (bounded) body.
pub(super) struct Response {
    pub status: StatusCode,
    pub content_type: String,
    pub body: Vec<u8>,
}

/// Why a call got no response to show. Messages never contain the URL or a header value:
/// either may hold a `${ENV}` secret.
#[derive(Debug, thiserror::Error)]
pub(super) enum ExchangeError {
    #[error("the HTTP request failed: {0}")]
    Send(String),
    #[error("reading the HTTP response failed: {0}")]
    Read(String),
    #[error("the HTTP response is larger than {0} bytes (max_response_bytes)")]
    TooLarge(usize),
    #[error(
        "the API redirected to another origin ({to}); this tool follows redirects only within \
         its own origin (follow_redirects = \"same-origin\"). If that origin is trusted, set \
         follow_redirects = \"any\" on the tool (its configured headers are never sent to \
         another origin)"
    )]
    CrossOrigin { to: String },
    #[error("the API answered a redirect whose Location is not an http(s) URL")]
    BadLocation,
    #[error("the API redirected more than {MAX_REDIRECTS} times")]
    TooManyRedirects,
}

/// Sends `request`, following redirects as its tool allows.
pub(super) async fn send(request: Request<'_>) -> Result<Response, ExchangeError> {
    let origin = request.url.origin();
    let mut url = request.url.clone();
    let mut method = request.method.clone();
    let mut body = request.body;
    let mut at_origin = true;
    // The endpoint's work joins the call's trace (W3C Trace Context): every hop gets it,
    // as it names no secret.
    let mut trace = HeaderMap::new();
    telemetry::inject_current_headers(&mut trace);
    for _ in 0..=MAX_REDIRECTS {
        let mut builder = request.client.request(method.clone(), url.clone());
        builder = builder.headers(trace.clone());
        if at_origin {
            builder = builder.headers(request.headers.clone());
        }
        if let Some(body) = body {
            builder = builder.json(body);
        }
        let response = builder
            .send()
            .await
            .map_err(|e| ExchangeError::Send(error_chain(e)))?;
        let status = response.status();
        let redirect = is_followed_redirect(status) && request.follow != FollowRedirects::None;
        let location = response.headers().get(LOCATION);
        let (true, Some(location)) = (redirect, location) else {
            return read(response, request.max_bytes).await;
        };
        let next = location
            .to_str()
            .ok()
            .and_then(|l| url.join(l).ok())
            .filter(|next| matches!(next.scheme(), "http" | "https"))
            .ok_or(ExchangeError::BadLocation)?;
        if next.origin() != origin {
            if request.follow == FollowRedirects::SameOrigin {
                return Err(ExchangeError::CrossOrigin {
                    to: next.origin().ascii_serialization(),
                });
            }
            at_origin = false;
        }
        // As browsers and reqwest do: 303 always, and 301/302 after a POST, continue as a
        // GET without body; 307 and 308 repeat the request as it was.
        let to_get = status == StatusCode::SEE_OTHER
            || (method == Method::POST
                && matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND));
        if to_get && method != Method::HEAD {
            method = Method::GET;
            body = None;
        }
        url = next;
    }
    Err(ExchangeError::TooManyRedirects)
}

fn is_followed_redirect(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::MOVED_PERMANENTLY
            | StatusCode::FOUND
            | StatusCode::SEE_OTHER
            | StatusCode::TEMPORARY_REDIRECT
            | StatusCode::PERMANENT_REDIRECT
    )
}

/// Reads the body: a 2xx one larger than `max_bytes` fails, any other is cut there (only
/// an excerpt of it is shown).
async fn read(
    mut response: reqwest::Response,
    max_bytes: usize,
) -> Result<Response, ExchangeError> {
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| ExchangeError::Read(error_chain(e)))?
    {
        if body.len() + chunk.len() > max_bytes {
            if status.is_success() {
                return Err(ExchangeError::TooLarge(max_bytes));
            }
            body.extend_from_slice(&chunk[..max_bytes - body.len()]);
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Response {
        status,
        content_type,
        body,
    })
}

/// The error and its causes, as `error sending request: client error (Connect): tcp connect
/// error: Connection refused (os error 111)`, without the URL reqwest adds to its own
/// message. reqwest's top-level message alone says nothing about DNS, refusal or TLS.
fn error_chain(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        // Some layers repeat their source's message in their own.
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
