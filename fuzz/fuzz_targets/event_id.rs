//! `Last-Event-ID` and event ids (`session::streams`): any header value parses to an id or
//! to nothing, parsed ids round-trip through `format_event_id`, and a resumption against a
//! session's streams, after any sequence of POSTs, events and settlements, replays exactly
//! the events after the id, of that stream only, in order, or refuses.
//!
//! Input: the first line is the `Last-Event-ID`; each later byte is one operation on the
//! streams, with the byte after it as its argument.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_actor::fuzzing::{ReplayError, SessionStreams, StreamId, format_event_id, parse_event_id};

fuzz_target!(|data: &[u8]| {
    let (header, ops) = match data.iter().position(|&b| b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let Ok(header) = std::str::from_utf8(header) else {
        return;
    };
    let parsed = parse_event_id(header);
    if let Some((stream, seq)) = parsed {
        let canonical = format_event_id(stream, seq);
        assert_eq!(parse_event_id(&canonical), Some((stream, seq)));
    }

    let flags = ops.first().copied().unwrap_or(0);
    let mut streams = SessionStreams::new(
        usize::from(flags & 0x7) + 1,
        usize::from((flags >> 3) & 0x3),
        flags & 0x20 != 0,
        flags & 0x40 != 0,
    );
    // Streams of POSTs, with the responses they still owe. As in the session actor, a
    // response goes to its request's stream and settles it; notifications go to the stream
    // related to a request, or to the GET stream.
    let mut owed: Vec<(StreamId, usize)> = Vec::new();
    let mut attachments = Vec::new();
    let mut ops = ops.iter().skip(1);
    while let (Some(&op), Some(&arg)) = (ops.next(), ops.next()) {
        let pick = usize::from(arg) % owed.len().max(1);
        match op % 6 {
            0 => {
                let requests = usize::from(arg % 3) + 1;
                let attachment = streams.open_post(requests);
                owed.push((attachment.stream, requests));
                // Some connections stay, others are dropped at once.
                if arg & 0x80 != 0 {
                    attachments.push(attachment);
                }
            }
            1 => {
                if let Some(&(stream, _)) = owed.get(pick) {
                    let related = streams.related(stream);
                    streams.emit(related, b"{}", false);
                }
            }
            2 => {
                if let Some((stream, left)) = owed.get_mut(pick) {
                    if *left > 0 {
                        *left -= 1;
                        streams.emit(*stream, b"{}", true);
                        streams.settle(*stream);
                    }
                }
            }
            3 => {
                streams.emit(0, b"{}", false);
            }
            4 => {
                if let Some(&(stream, left)) = owed.get(pick) {
                    if left > 0 {
                        streams.close_for_polling(stream);
                    }
                }
            }
            _ => {
                if let Ok(attachment) = streams.open(None) {
                    attachments.push(attachment);
                }
            }
        }
    }

    match streams.open(Some(header.to_string())) {
        Ok(attachment) => {
            let (stream, seq) = parsed.expect("a resumption from an id that does not parse");
            assert_eq!(attachment.stream, stream, "resumed another stream");
            let mut last = seq;
            for event in &attachment.backlog {
                assert_eq!(event.stream, stream, "replayed another stream's event");
                assert!(
                    event.seq > last,
                    "replay out of order or from before the id"
                );
                last = event.seq;
            }
        }
        Err(ReplayError::Unknown(_) | ReplayError::OutOfWindow { .. }) => {}
    }
});
