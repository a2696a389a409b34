//! The client the gateway's HTTP upstreams are reached with: hyper's pooled HTTP/1.1
//! client (keep-alive, idle connections reused, one in use per request in flight) over
//! rustls for `https://`, built once per server.
//!
//! hyper itself rather than reqwest around it: reqwest parses the URL twice more for every
//! request (its redirect layer turns the `Uri` back into a string and a `Url` even with
//! redirects off) and runs its redirect, retry and timeout layers around each, which cost a
//! forwarded call about a sixth of the gateway's instructions (docs/performance.md,
//! "Gateway hop: instructions"). None of it is wanted here: redirects are not followed,
//! cookies not kept, no proxy is used, and only the configured headers are sent. Each
//! exchange's bounds (`call_timeout`, `startup_timeout`, `max_message_bytes`) are the
//! transport's, in `mod.rs` and `body.rs`.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// A request's body: the whole message, so its length is known.
pub(crate) type Body = Full<Bytes>;
pub(crate) type Response = http::Response<hyper::body::Incoming>;

/// Connections to the HTTP upstreams. Cheap to clone: one pool.
#[derive(Clone)]
pub struct UpstreamClient {
    pool: Client<hyper_rustls::HttpsConnector<HttpConnector>, Body>,
}

impl std::fmt::Debug for UpstreamClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamClient").finish_non_exhaustive()
    }
}

impl UpstreamClient {
    /// A client whose connection attempts give up after `connect_timeout`; `https://`
    /// upstreams are checked against the Mozilla roots (`webpki-roots`), as reqwest's
    /// `rustls-tls` does.
    pub fn new(connect_timeout: Duration) -> Result<UpstreamClient, String> {
        let mut http = HttpConnector::new();
        http.set_connect_timeout(Some(connect_timeout));
        http.set_nodelay(true);
        http.enforce_http(false);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
            .map_err(|e| e.to_string())?
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let pool = Client::builder(TokioExecutor::new()).build(https);
        Ok(UpstreamClient { pool })
    }

    /// Sends `request`: the response's head, its body still to be read.
    pub async fn send(&self, request: http::Request<Body>) -> Result<Response, SendError> {
        self.pool.request(request).await.map_err(SendError)
    }
}

/// Why a request got no response: the error and each of its causes, as one line.
#[derive(Debug)]
pub struct SendError(hyper_util::client::legacy::Error);

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = std::error::Error::source(&self.0);
        while let Some(e) = cause {
            write!(f, ": {e}")?;
            cause = e.source();
        }
        Ok(())
    }
}
