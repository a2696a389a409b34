//! Field formatting for the text log: [`TextFields`].
//!
//! The text log formats fields for every span when it opens and for every event, and
//! [`TextEvents`](super::TextEvents) formats a request's fields with it too. With
//! tracing-subscriber's [`DefaultFields`] that cost about 6,000 instructions for the span
//! each request had: each field name goes through `nu_ansi_term` styling even when colour is
//! off. [`TextFields`] writes the same `name=value` text directly when colour is off, and
//! hands everything else (colour on, the `message` field, errors, `r#` names) to
//! [`DefaultFields`], so the output is byte for byte the same and the default's escaping of
//! control characters in messages is kept. Fields named `log.…` are skipped, as the default
//! skips them: they are the metadata of an event bridged from the `log` crate, already shown
//! in the line's target. A `str` value is written with `{:?}`, as the default does, which
//! quotes it and escapes every control character a client could put in a method name or
//! request id.

use std::fmt;

use tracing::field::{Field, Visit};
use tracing_subscriber::field::{RecordFields, VisitOutput};
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::{DefaultFields, DefaultVisitor, Writer};

/// [`FormatFields`] for the text log: [`DefaultFields`]' output, without its styling cost
/// when colour is off. Pass it to `tracing_subscriber::fmt().fmt_fields(TextFields)`.
#[derive(Debug, Default, Clone, Copy)]
pub struct TextFields;

impl<'writer> FormatFields<'writer> for TextFields {
    fn format_fields<R: RecordFields>(
        &self,
        mut writer: Writer<'writer>,
        fields: R,
    ) -> fmt::Result {
        if writer.has_ansi_escapes() {
            return DefaultFields::new().format_fields(writer, fields);
        }
        // Into a buffer on the stack first, so the span's `String` grows once instead of
        // once per piece (about 1,000 instructions for a request's six fields); fields
        // longer than the buffer are written directly.
        // The visitor writes to the `Line` itself rather than through a `Writer`, whose
        // every piece is a dynamic call: another 1,000 or so for the same six fields.
        let mut line = Line::default();
        let mut staged = PlainVisitor {
            writer: &mut line,
            is_empty: true,
            result: Ok(()),
        };
        fields.record(&mut staged);
        if staged.result.is_ok() {
            if let Ok(text) = std::str::from_utf8(line.filled()) {
                return writer.write_str(text);
            }
        }
        let mut visitor = PlainVisitor {
            writer,
            is_empty: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

/// A fixed buffer that refuses (with `fmt::Error`) what does not fit.
struct Line {
    bytes: [u8; LINE_BYTES],
    len: usize,
}

/// Room for a request's fields with a long session id and method.
const LINE_BYTES: usize = 256;

impl Default for Line {
    fn default() -> Self {
        Line {
            bytes: [0; LINE_BYTES],
            len: 0,
        }
    }
}

impl Line {
    fn filled(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl fmt::Write for Line {
    #[inline]
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let end = self.len + text.len();
        let room = self.bytes.get_mut(self.len..end).ok_or(fmt::Error)?;
        room.copy_from_slice(text.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// A field value as the visitor received it.
#[derive(Clone, Copy)]
enum Plain<'v> {
    Str(&'v str),
    Debug(&'v dyn fmt::Debug),
}

/// Printable ASCII other than the two characters `{:?}` escapes in a string.
fn needs_no_escape(byte: u8) -> bool {
    (b' '..=b'~').contains(&byte) && byte != b'"' && byte != b'\\'
}

/// Writes to a [`Writer`], or straight to a [`Line`] when staging.
struct PlainVisitor<W> {
    writer: W,
    is_empty: bool,
    result: fmt::Result,
}

impl<W: fmt::Write> PlainVisitor<W> {
    /// Fields the default formats specially.
    fn is_special(name: &str) -> bool {
        name == "message" || name.starts_with("r#")
    }

    /// Fields the default leaves out.
    fn is_skipped(name: &str) -> bool {
        name.starts_with("log.")
    }

    /// `name=value`, with the separating space the default writes.
    fn write_plain(&mut self, name: &str, value: Plain<'_>) {
        if self.result.is_err() {
            return;
        }
        if self.is_empty {
            self.is_empty = false;
        } else if let Err(e) = self.writer.write_str(" ") {
            self.result = Err(e);
            return;
        }
        self.result = self
            .writer
            .write_str(name)
            .and_then(|()| self.writer.write_str("="))
            .and_then(|()| match value {
                // What `{:?}` writes for a string that needs no escape: itself, quoted.
                Plain::Str(text) if text.bytes().all(needs_no_escape) => self
                    .writer
                    .write_str("\"")
                    .and_then(|()| self.writer.write_str(text))
                    .and_then(|()| self.writer.write_str("\"")),
                Plain::Str(text) => write!(self.writer, "{text:?}"),
                Plain::Debug(value) => write!(self.writer, "{value:?}"),
            });
    }

    /// One field through the default visitor, continuing this one's output.
    fn delegate(&mut self, record: impl FnOnce(&mut DefaultVisitor<'_>)) {
        if self.result.is_err() {
            return;
        }
        let mut inner = DefaultVisitor::new(Writer::new(&mut self.writer), self.is_empty);
        record(&mut inner);
        self.result = inner.finish();
        self.is_empty = false;
    }
}

impl<W: fmt::Write> Visit for PlainVisitor<W> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if Self::is_skipped(field.name()) {
            return;
        }
        if Self::is_special(field.name()) {
            self.delegate(|v| v.record_str(field, value));
        } else {
            self.write_plain(field.name(), Plain::Str(value));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if Self::is_skipped(field.name()) {
            return;
        }
        if Self::is_special(field.name()) {
            self.delegate(|v| v.record_debug(field, value));
        } else {
            self.write_plain(field.name(), Plain::Debug(value));
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.delegate(|v| v.record_error(field, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log_format::captured::Captured;

    #[derive(Debug)]
    struct Failure;
    impl fmt::Display for Failure {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("disk \x1b[2Jfull")
        }
    }
    impl std::error::Error for Failure {}

    /// Spans and events with every kind of field, some carrying control characters.
    fn log_everything() {
        let hostile = "tools/\x1b[31mcall\u{9b}\n";
        let span = tracing::error_span!(
            "request",
            node = "a",
            session = "",
            method = hostile,
            request_id = ?"\x1b]0;x",
            n = 7_u64,
        );
        let _entered = span.enter();
        tracing::warn!("plain message");
        tracing::warn!(
            said = "say \"hi\", it's",
            path = r"C:\x",
            accented = "café ~",
            empty = ""
        );
        tracing::warn!(
            r#type = "x",
            flag = true,
            ratio = 0.5,
            count = -3_i64,
            "typed \x1b[1m"
        );
        tracing::warn!(
            error = &Failure as &(dyn std::error::Error + 'static),
            "failed"
        );
        tracing::warn!(detail = ?Some(hostile), shown = %"plain");
        // Past the stack buffer: formatted directly instead.
        let long = "z".repeat(LINE_BYTES);
        tracing::warn!(first = "a", long = long.as_str(), shown = %long, "long");
        let inner = tracing::error_span!("inner", method = "x");
        inner.record("method", "y");
        inner.in_scope(|| tracing::error!(message = "explicit", later = 1));
    }

    fn output(ansi: bool, custom: bool) -> String {
        let captured = Captured::default();
        let builder = tracing_subscriber::fmt()
            .with_writer(captured.clone())
            .with_ansi(ansi)
            .without_time();
        if custom {
            let subscriber = builder.fmt_fields(TextFields).finish();
            tracing::subscriber::with_default(subscriber, log_everything);
        } else {
            tracing::subscriber::with_default(builder.finish(), log_everything);
        }
        captured.text()
    }

    #[test]
    fn the_text_is_the_default_text_byte_for_byte() {
        for ansi in [false, true] {
            let (ours, default) = (output(ansi, true), output(ansi, false));
            assert_eq!(ours, default, "ansi {ansi}");
            assert_eq!(ours.lines().count(), 7, "{ours}");
        }
    }

    #[test]
    fn control_characters_from_a_client_are_escaped() {
        let text = output(false, true);
        assert!(!text.contains('\x1b'), "{text}");
        assert!(!text.contains('\u{9b}'), "{text}");
        assert!(
            text.contains(r#"method="tools/\u{1b}[31mcall\u{9b}\n""#),
            "{text}"
        );
    }
}
