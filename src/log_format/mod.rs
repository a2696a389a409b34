//! How the binary's log lines are written, and what they say about the request they are
//! logged in.
//!
//! Every line a handler logs (a command tool's failure, a refused file read) names its
//! request: node, session, method, target, request id and protocol revision. A library
//! embedder gets them from the `request` span `dispatch` opens per request. The binary
//! instead calls [`replace_request_span`] and installs [`TextEvents`] or [`JsonEvents`]:
//! each request's future then carries its [`RequestFields`] ([`RequestLog`]), which costs a
//! fraction of a span, and the formatters show them exactly where the span's were.
//!
//! - `context.rs`: the fields, the future that carries them (or the span), the switch, and
//!   the fields as a `tracing` record;
//! - `events.rs`: the two event formatters, which delegate each line to tracing-subscriber's
//!   own `Format`;
//! - `fields.rs`: [`TextFields`], the text log's field formatting without the styling cost.

#[cfg(test)]
mod captured;
mod context;
mod events;
mod fields;

pub use context::{
    InRequest, RequestFields, RequestLog, replace_request_span, request_span_replaced,
};
pub use events::{JsonEvents, TextEvents};
pub use fields::TextFields;
