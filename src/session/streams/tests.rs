use super::*;

proptest::proptest! {
    #[test]
    fn every_event_id_round_trips(stream in proptest::num::u32::ANY, seq in proptest::num::u64::ANY) {
        proptest::prop_assert_eq!(parse_event_id(&format_event_id(stream, seq)), Some((stream, seq)));
    }

    #[test]
    fn any_last_event_id_parses_to_an_id_or_nothing(text in "\\PC{0,40}") {
        if let Some((stream, seq)) = parse_event_id(&text) {
            proptest::prop_assert_eq!(parse_event_id(&format_event_id(stream, seq)), Some((stream, seq)));
        }
    }
}

#[test]
fn event_ids_round_trip() {
    assert_eq!(parse_event_id(&format_event_id(3, 17)), Some((3, 17)));
    assert_eq!(parse_event_id("x"), None);
    assert_eq!(parse_event_id("1.x"), None);
}

#[test]
fn events_are_logged_without_a_connection_and_replayed_after_the_cursor() {
    let mut s = Stream::new(1, true);
    for i in 0..5 {
        s.push(2, Bytes::from(format!("{i}")), false, 10);
    }
    let replay = s.replay_after(2, 2, 10).unwrap();
    assert_eq!(
        replay.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![3, 4, 5]
    );
    assert!(s.replay_after(2, 0, 10).is_ok());
}

#[test]
fn a_cursor_older_than_the_window_is_an_error_not_a_partial_replay() {
    let mut s = Stream::new(1, true);
    for i in 0..10 {
        s.push(1, Bytes::from(format!("{i}")), false, 4);
    }
    assert!(matches!(
        s.replay_after(1, 2, 4),
        Err(ReplayError::OutOfWindow { .. })
    ));
    assert_eq!(s.replay_after(1, 6, 4).unwrap().len(), 4);
    assert!(matches!(
        s.replay_after(1, 99, 4),
        Err(ReplayError::Unknown(_))
    ));
}

#[test]
fn a_slow_connection_is_dropped_not_waited_for() {
    let mut s = Stream::new(1, true);
    let _rx = s.attach(1);
    assert!(s.push(1, Bytes::from_static(b"a"), false, 10));
    assert!(!s.push(1, Bytes::from_static(b"b"), false, 10));
    assert!(!s.has_live_connection());
    assert_eq!(s.replay_after(1, 0, 10).unwrap().len(), 2);
}

#[test]
fn logs_past_the_byte_budget_drop_finished_streams_then_old_events() {
    let rules = StreamRules {
        max_events: 100,
        max_finished: 10,
        max_bytes_per_session: 1_000,
        max_bytes: usize::MAX,
        connection_buffer: 4,
        response_mode: ResponseMode::Sse,
        priming: true,
    };
    let metrics = Arc::new(Metrics::new("test", []));
    let mut streams = Streams::new(rules, Arc::clone(&metrics));
    let first = streams.open_post(1).stream;
    streams.emit(first, Bytes::from(vec![b'a'; 600]), true);
    streams.settle(first);
    let second = streams.open_post(1).stream;
    for _ in 0..3 {
        streams.emit(second, Bytes::from(vec![b'b'; 300]), false);
    }
    assert!(streams.bytes <= 1_000, "{}", streams.bytes);
    assert_eq!(metrics.replay_bytes(), streams.bytes);
    assert!(matches!(
        streams.open(Some(format_event_id(first, 0))),
        Err(ReplayError::OutOfWindow { .. })
    ));
    // One event larger than the budget is still kept: it is the newest.
    streams.emit(second, Bytes::from(vec![b'c'; 5_000]), false);
    assert_eq!(streams.bytes, 5_000);
    drop(streams);
    assert_eq!(
        metrics.replay_bytes(),
        0,
        "a session's bytes are given back"
    );
}
