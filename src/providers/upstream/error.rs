//! Why a forwarded request got no result: what callers of a connection see.

use std::time::Duration;

use crate::jsonrpc::RpcError;

/// Why a request to the upstream got no result.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UpstreamError {
    /// The upstream answered with a JSON-RPC error: passed on as it is.
    #[error("{0}")]
    Rpc(RpcError),
    /// The connection ended (the process exited, the pipe broke) before the answer.
    #[error("the upstream connection closed before it answered{0}")]
    Closed(String),
    #[error("the upstream did not answer within {0:?}; the request was cancelled upstream")]
    TimedOut(Duration),
    #[error("the request was cancelled")]
    Cancelled,
    /// The upstream needs the client's input, and this client answers with a 2026-07-28
    /// `input_required` result: the call ends here and is retried with the answer.
    #[error("the client's input is required")]
    InputRequired,
    /// The upstream could not be started or initialized.
    #[error("{0}")]
    Unavailable(String),
}
