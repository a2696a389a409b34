//! The requests of one exchange with the upstream: the headers every POST carries, built
//! when the session or the negotiated version changes rather than for each call, and the
//! URI parsed once from the configuration.

use std::sync::Arc;

use bytes::Bytes;
use http::Method as HttpMethod;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue, USER_AGENT};

use super::client::Body;
use super::{Exchange, POST_ACCEPT, SESSION, USER_AGENT_VALUE, VERSION};
use crate::telemetry;

impl Exchange {
    /// The configured headers, then `accept`, the session and the version.
    pub(super) fn headers(&self, accept: &'static str) -> HeaderMap {
        let mut headers = self.spec.headers.clone();
        headers.append(USER_AGENT, HeaderValue::from_static(USER_AGENT_VALUE));
        headers.append(ACCEPT, HeaderValue::from_static(accept));
        if let Some(session) = &self.session {
            headers.append(SESSION, session.clone());
        }
        if let Some(version) = &self.version {
            headers.append(VERSION, version.clone());
        }
        headers
    }

    pub(super) fn set_session(&mut self, session: Option<HeaderValue>) {
        self.session = session;
        self.rebuild_post_headers();
    }

    pub(super) fn set_version(&mut self, version: Option<HeaderValue>) {
        self.version = version;
        self.rebuild_post_headers();
    }

    pub(super) fn rebuild_post_headers(&mut self) {
        let mut headers = self.headers(POST_ACCEPT);
        headers.append(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        self.post_headers = Arc::new(headers);
    }

    /// A GET or DELETE: rare, so built in full.
    pub(super) fn request(&self, method: HttpMethod) -> http::Request<Body> {
        let accept = match method == HttpMethod::GET {
            true => "text/event-stream",
            false => POST_ACCEPT,
        };
        let mut request = http::Request::new(Body::default());
        *request.method_mut() = method;
        *request.uri_mut() = self.spec.uri.clone();
        *request.headers_mut() = self.headers(accept);
        request
    }

    /// A POST of `message`, from the headers built beforehand and the URI parsed once.
    pub(super) fn post_request(&self, message: Bytes) -> http::Request<Body> {
        let mut request = http::Request::new(Body::new(message.clone()));
        *request.method_mut() = HttpMethod::POST;
        *request.uri_mut() = self.spec.uri.clone();
        let headers = request.headers_mut();
        headers.clone_from(&self.post_headers);
        headers.extend(telemetry::headers_of_message(&message));
        request
    }
}
