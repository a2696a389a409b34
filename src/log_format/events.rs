//! The binary's event formatters: tracing-subscriber's own lines, with the request's fields
//! where the `request` span's were.
//!
//! Outside a request each formatter is tracing-subscriber's [`Format`] and nothing else.
//! Inside a request ([`RequestLog::fields`](super::RequestLog::fields)) the `Format` writes the line into a buffer
//! and the request's fields go where the span would have put them, written by the
//! subscriber's own [`FormatFields`] (so [`TextFields`](super::TextFields) or `JsonFields`,
//! escaping included), so that a line reads exactly as it did when every request opened a
//! span:
//!
//! - text: the request is the outermost span, after the level:
//!   `… WARN request{node="" session="…" method="tools/call" …}: mcp_actor::…: message`;
//! - JSON (`flatten_event`, `with_current_span`, no span list): a `span` object closing the
//!   line, `{…,"target":"mcp_actor::…","span":{"method":…,"name":"request"}}`, unless a span
//!   the handler entered is current, which `with_current_span` shows instead, as it did.
//!
//! Splicing into the buffer relies on where `Format` puts spans, which these formatters fix
//! by owning their `Format`: after the timestamp and level (no thread names or ids) in text,
//! last in JSON (no file names, line numbers or thread names after it). The tests below
//! compare every line with what the span gave.

use std::fmt;

use tracing_core::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::{Format, Full, Json, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use super::context::{self, RequestFields, SPAN_NAME};

/// The text log's [`FormatEvent`]: tracing-subscriber's default (`Full`) line, with a
/// request's fields shown as its outermost span. Use it with
/// [`replace_request_span`](super::replace_request_span).
#[derive(Debug, Clone)]
pub struct TextEvents<T = SystemTime> {
    format: Format<Full, T>,
}

impl Default for TextEvents {
    fn default() -> Self {
        TextEvents {
            format: Format::default(),
        }
    }
}

impl<S, N, T> FormatEvent<S, N> for TextEvents<T>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    T: FormatTime + Clone,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        // An event with `parent: None` showed no span, the request's included.
        if !event.is_root() {
            let written = context::with_current(|request| {
                self.format_in_request(ctx, writer.by_ref(), event, request)
            });
            if let Some(written) = written {
                return written;
            }
        }
        self.format.format_event(ctx, writer, event)
    }
}

impl<T: FormatTime + Clone> TextEvents<T> {
    fn format_in_request<S, N>(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
        request: &RequestFields,
    ) -> fmt::Result
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
        N: for<'a> FormatFields<'a> + 'static,
    {
        let ansi = writer.has_ansi_escapes();
        let mut line = String::new();
        // A buffer's `Writer` has no colour; the `Format`'s own setting gives it the line's.
        self.format
            .clone()
            .with_ansi(ansi)
            .format_event(ctx, Writer::new(&mut line), event)?;
        let Some(at) = after_level(&line, *event.metadata().level()) else {
            return writer.write_str(&line);
        };
        let (head, rest) = line.split_at(at);
        let style = Style::new(ansi);
        writer.write_str(head)?;
        write!(writer, "{}{SPAN_NAME}{}", style.bold, style.reset)?;
        write!(writer, "{}{{{}", style.bold, style.reset)?;
        request.record(|fields| ctx.format_fields(writer.by_ref(), fields))?;
        write!(writer, "{}}}{}", style.bold, style.reset)?;
        write!(writer, "{}:{}", style.dimmed, style.reset)?;
        // The spans the handler entered follow the request's, or, when there are none, the
        // space that ends the spans' part of the line.
        let spans = ctx
            .event_scope()
            .is_some_and(|mut scope| scope.next().is_some());
        if !spans {
            writer.write_char(' ')?;
        }
        writer.write_str(rest)
    }
}

/// Where `Format`'s text line continues after the level and its space: the level is the first
/// word of capitals (a timestamp has none), and coloured, it is followed by a reset before the
/// space.
fn after_level(line: &str, level: Level) -> Option<usize> {
    let at = line.find(level.as_str())?;
    let space = line[at..].find(' ')?;
    Some(at + space + 1)
}

/// The escape codes `Format` paints span names and punctuation with (`nu_ansi_term`'s bold,
/// dimmed and reset), or nothing without colour.
struct Style {
    bold: &'static str,
    dimmed: &'static str,
    reset: &'static str,
}

impl Style {
    fn new(ansi: bool) -> Self {
        if ansi {
            Style {
                bold: "\x1b[1m",
                dimmed: "\x1b[2m",
                reset: "\x1b[0m",
            }
        } else {
            Style {
                bold: "",
                dimmed: "",
                reset: "",
            }
        }
    }
}

/// The JSON log's [`FormatEvent`]: tracing-subscriber's JSON line with the event's fields
/// flattened and the current span as a `span` object, a request's fields being that span
/// when the handler entered none. Use it with `JsonFields` and
/// [`replace_request_span`](super::replace_request_span).
#[derive(Debug)]
pub struct JsonEvents<T = SystemTime> {
    format: Format<Json, T>,
}

impl Default for JsonEvents {
    fn default() -> Self {
        JsonEvents {
            format: json_format(Format::default()),
        }
    }
}

/// `format` with the JSON settings the splice relies on.
fn json_format<T>(format: Format<Full, T>) -> Format<Json, T> {
    format
        .json()
        .flatten_event(true)
        .with_current_span(true)
        .with_span_list(false)
}

impl<S, N, T> FormatEvent<S, N> for JsonEvents<T>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    T: FormatTime,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        // Unlike the text, an event with `parent: None` showed the current span too.
        let written = context::with_current(|request| {
            self.format_in_request(ctx, writer.by_ref(), event, request)
        });
        if let Some(written) = written {
            return written;
        }
        self.format.format_event(ctx, writer, event)
    }
}

impl<T: FormatTime> JsonEvents<T> {
    fn format_in_request<S, N>(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
        request: &RequestFields,
    ) -> fmt::Result
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
        N: for<'a> FormatFields<'a> + 'static,
    {
        // `with_current_span` shows the innermost span, the one `Format` picks this way: a
        // span the handler entered comes before its request, as it did when the request was
        // a span too.
        let spanned = event
            .parent()
            .and_then(|id| ctx.span(id))
            .or_else(|| ctx.lookup_current())
            .is_some();
        if spanned {
            return self.format.format_event(ctx, writer, event);
        }
        let mut line = String::new();
        self.format
            .format_event(ctx, Writer::new(&mut line), event)?;
        let mut fields = String::new();
        request.record(|record| ctx.format_fields(Writer::new(&mut fields), record))?;
        // Both are objects, `{…}\n` and `{…}`: the span goes in as the line's last entry, its
        // name after its fields, as `with_current_span` writes it.
        let (Some(object), Some(span)) = (line.strip_suffix("}\n"), fields.strip_suffix('}'))
        else {
            return writer.write_str(&line);
        };
        let comma = |open: &str| if open.len() > 1 { "," } else { "" };
        writeln!(
            writer,
            "{object}{}\"span\":{span}{}\"name\":\"{SPAN_NAME}\"}}}}",
            comma(object),
            comma(span),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tracing_subscriber::fmt::format::JsonFields;

    use super::*;
    use crate::dispatch::request_span;
    use crate::jsonrpc::RequestId;
    use crate::log_format::RequestLog;
    use crate::log_format::TextFields;
    use crate::log_format::captured::Captured;
    use crate::protocol::Method;

    /// One instant for every line, so that two runs compare byte for byte.
    #[derive(Debug, Clone, Copy)]
    struct FixedTime;

    impl FormatTime for FixedTime {
        fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
            w.write_str("2026-07-28T12:34:56.789012Z")
        }
    }

    /// Requests of every shape: both eras, both kinds of id, no target, and a target and an id
    /// a client filled with quotes and control characters.
    fn requests() -> Vec<(Method, RequestFields)> {
        let fields = |method: Method, node: &str, session: Option<&str>, target: Option<&str>| {
            RequestFields {
                node: Arc::from(node),
                session: session.map(Arc::from),
                method: method.as_str(),
                target: target.map(str::to_owned),
                request_id: RequestId::Number(7),
                version: "2025-11-25",
            }
        };
        let hostile = RequestFields {
            request_id: RequestId::String(Arc::from("req-\"7\"\u{1b}[2J")),
            version: "2026-07-28",
            ..fields(
                Method::ResourcesRead,
                "n1",
                None,
                Some("file:///\u{1b}[31m\"x\"\n"),
            )
        };
        vec![
            (
                Method::ToolsCall,
                fields(Method::ToolsCall, "", Some("3f2a"), Some("echo")),
            ),
            (
                Method::ToolsList,
                fields(Method::ToolsList, "n1", Some("s"), None),
            ),
            (Method::ResourcesRead, hostile),
        ]
    }

    /// The span `dispatch` opened for `fields` before the span was replaced.
    fn span_of(method: Method, fields: &RequestFields) -> tracing::Span {
        request_span(
            &fields.node,
            method,
            fields.target.as_deref(),
            fields.session.as_deref(),
            &fields.request_id,
            fields.version,
        )
    }

    /// What a handler logs: every level, fields named like the request's, a root event and a
    /// span of its own.
    fn log_in_a_request() {
        tracing::trace!("trace");
        tracing::debug!(n = 1, "debug");
        tracing::info!(said = "hi");
        tracing::warn!(session = ?Some("other"), target = "x", "named like the request's");
        tracing::error!("error");
        tracing::warn!(parent: None, "a root event");
        let inner = tracing::info_span!("inner", step = 2);
        inner.in_scope(|| tracing::warn!("in a span the handler entered"));
    }

    /// How a request's lines are made: the span, or the fields in scope.
    #[derive(Clone, Copy, PartialEq, Debug)]
    enum Era {
        Span,
        Fields,
        /// Neither: a line outside any request.
        Outside,
    }

    fn run(era: Era, request: &(Method, RequestFields)) {
        match era {
            Era::Span => span_of(request.0, &request.1).in_scope(log_in_a_request),
            Era::Fields => RequestLog::fields(request.1.clone()).in_scope(log_in_a_request),
            Era::Outside => log_in_a_request(),
        }
    }

    /// The text log: today's formatter with the span, ours with the fields.
    fn text(era: Era, ansi: bool, request: &(Method, RequestFields)) -> String {
        let captured = Captured::default();
        let builder = tracing_subscriber::fmt()
            .with_writer(captured.clone())
            .with_ansi(ansi)
            .with_max_level(tracing::Level::TRACE)
            .fmt_fields(TextFields);
        if era == Era::Span {
            let subscriber = builder.with_timer(FixedTime).finish();
            tracing::subscriber::with_default(subscriber, || run(era, request));
        } else {
            let events = TextEvents {
                format: Format::default().with_timer(FixedTime),
            };
            let subscriber = builder.event_format(events).finish();
            tracing::subscriber::with_default(subscriber, || run(era, request));
        }
        captured.text()
    }

    /// The JSON log, as `text`.
    fn json(era: Era, request: &(Method, RequestFields)) -> String {
        let captured = Captured::default();
        let builder = tracing_subscriber::fmt()
            .with_writer(captured.clone())
            .with_max_level(tracing::Level::TRACE);
        if era == Era::Span {
            let subscriber = builder
                .with_timer(FixedTime)
                .json()
                .flatten_event(true)
                .with_current_span(true)
                .with_span_list(false)
                .finish();
            tracing::subscriber::with_default(subscriber, || run(era, request));
        } else {
            let events = JsonEvents {
                format: json_format(Format::default().with_timer(FixedTime)),
            };
            let subscriber = builder
                .fmt_fields(JsonFields::new())
                .with_ansi(false)
                .event_format(events)
                .finish();
            tracing::subscriber::with_default(subscriber, || run(era, request));
        }
        captured.text()
    }

    #[test]
    fn a_text_line_in_a_request_is_the_line_its_span_gave_byte_for_byte() {
        for request in &requests() {
            for ansi in [false, true] {
                let (ours, span) = (
                    text(Era::Fields, ansi, request),
                    text(Era::Span, ansi, request),
                );
                assert_eq!(ours, span, "ansi {ansi}");
                assert_eq!(ours.lines().count(), 7, "{ours}");
            }
        }
    }

    #[test]
    fn a_json_line_in_a_request_is_the_line_its_span_gave_byte_for_byte() {
        for request in &requests() {
            let (ours, span) = (json(Era::Fields, request), json(Era::Span, request));
            assert_eq!(ours, span);
            for line in ours.lines() {
                serde_json::from_str::<serde_json::Value>(line).expect(line);
            }
        }
    }

    #[test]
    fn a_line_outside_a_request_is_the_formats_own() {
        let request = &requests()[0];
        for ansi in [false, true] {
            let ours = text(Era::Outside, ansi, request);
            let format = {
                let captured = Captured::default();
                let subscriber = tracing_subscriber::fmt()
                    .with_writer(captured.clone())
                    .with_ansi(ansi)
                    .with_max_level(tracing::Level::TRACE)
                    .fmt_fields(TextFields)
                    .with_timer(FixedTime)
                    .finish();
                tracing::subscriber::with_default(subscriber, log_in_a_request);
                captured.text()
            };
            assert_eq!(ours, format, "ansi {ansi}");
            assert!(!ours.contains("request{"), "{ours}");
        }
        let ours = json(Era::Outside, request);
        assert!(!ours.contains("\"name\":\"request\""), "{ours}");
    }

    #[test]
    fn the_request_is_shown_as_the_outermost_span() {
        let request = &requests()[0];
        let text = text(Era::Fields, false, request);
        let lines: Vec<&str> = text.lines().collect();
        let fields = "node=\"\" session=\"3f2a\" method=\"tools/call\" target=\"echo\" request_id=7 \
                      version=\"2025-11-25\"";
        assert_eq!(
            lines[4],
            format!(
                "2026-07-28T12:34:56.789012Z ERROR request{{{fields}}}: \
                 mcp_actor::log_format::events::tests: error"
            )
        );
        assert!(
            lines[5].ends_with(" WARN mcp_actor::log_format::events::tests: a root event"),
            "{}",
            lines[5]
        );
        assert!(
            lines[6].contains(&format!(" WARN request{{{fields}}}:inner{{step=2}}: ")),
            "{}",
            lines[6]
        );
        let json = json(Era::Fields, request);
        let line: serde_json::Value = serde_json::from_str(json.lines().nth(4).unwrap()).unwrap();
        assert_eq!(
            line,
            serde_json::json!({
                "timestamp": "2026-07-28T12:34:56.789012Z",
                "level": "ERROR",
                "message": "error",
                "target": "mcp_actor::log_format::events::tests",
                "span": {
                    "node": "", "session": "3f2a", "method": "tools/call", "target": "echo",
                    "request_id": "7", "version": "2025-11-25", "name": "request"
                }
            })
        );
    }
}
