use super::*;

/// The value of the sample `name{labels}` in Prometheus text, if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

#[test]
fn every_metric_is_exported_before_anything_happens() {
    let text = Metrics::new("node-a", ["tools/call"]).encode_prometheus();
    for series in [
        "mcp_sessions_active",
        "mcp_sessions_created_total",
        "mcp_sessions_ended_total{reason=\"delete\"}",
        "mcp_sessions_ended_total{reason=\"shutdown\"}",
        "mcp_tools_in_flight",
        "mcp_command_processes",
        "mcp_client_requests_pending",
        "mcp_client_requests_total{outcome=\"timed_out\"}",
        "mcp_sse_streams_open",
        "mcp_sse_events_replayed_total",
        "mcp_sse_replay_misses_total",
        "mcp_limit_rejections_total{limit=\"max_body_bytes\"}",
        "mcp_limit_rejections_total{limit=\"idle_timeout\"}",
        "mcp_config_reloads_total{outcome=\"failed\"}",
        "mcp_config_reloads_total{outcome=\"needs_restart\"}",
    ] {
        assert_eq!(sample(&text, series), Some(0.0), "{series} in\n{text}");
    }
    let version = env!("CARGO_PKG_VERSION");
    let build = format!("mcp_build_info{{version=\"{version}\",node=\"node-a\"}}");
    assert_eq!(sample(&text, &build), Some(1.0), "{text}");
}

#[test]
fn requests_are_counted_by_method_era_and_outcome_with_unknown_methods_as_other() {
    let metrics = Arc::new(Metrics::new("", ["tools/call", "ping"]));
    let ping = MethodLabel::new(1);
    metrics.record_request(
        ping,
        Revision::V2025_06_18,
        true,
        Duration::from_micros(100),
    );
    metrics.record_request(ping, Revision::V2025_06_18, true, Duration::from_millis(2));
    metrics
        .start_request(MethodLabel::OTHER, Revision::V2026_07_28)
        .finish(false);
    // Dropped unanswered: an error. Discarded: nothing.
    drop(metrics.start_request(MethodLabel::new(0), Revision::V2025_11_25));
    metrics
        .start_request(MethodLabel::new(0), Revision::V2025_03_26)
        .discard();
    let text = metrics.encode_prometheus();
    let count = |labels: &str| sample(&text, &format!("mcp_requests_total{{{labels}}}"));
    assert_eq!(
        count("method=\"ping\",era=\"2025-06-18\",outcome=\"ok\""),
        Some(2.0)
    );
    assert_eq!(
        count("method=\"other\",era=\"2026-07-28\",outcome=\"error\""),
        Some(1.0)
    );
    assert_eq!(
        count("method=\"tools/call\",era=\"2025-11-25\",outcome=\"error\""),
        Some(1.0)
    );
    assert_eq!(
        count("method=\"tools/call\",era=\"2025-03-26\",outcome=\"ok\""),
        None
    );
    let bucket = |le: &str| {
        sample(
            &text,
            &format!(
                "mcp_request_duration_seconds_bucket{{method=\"ping\",era=\"2025-06-18\",le=\"{le}\"}}"
            ),
        )
    };
    assert_eq!(bucket("0.0001"), Some(1.0));
    assert_eq!(bucket("0.0005"), Some(1.0));
    assert_eq!(bucket("0.0025"), Some(2.0));
    assert_eq!(bucket("+Inf"), Some(2.0));
    assert_eq!(
        sample(
            &text,
            "mcp_request_duration_seconds_count{method=\"ping\",era=\"2025-06-18\"}"
        ),
        Some(2.0)
    );
}

#[test]
fn gauges_follow_their_guards_and_counters_their_enums() {
    let metrics = Metrics::default();
    let tool = metrics.tool_running();
    let _sse = metrics.sse_stream_open();
    metrics.session_started();
    metrics.session_ended(SessionEnd::Idle);
    metrics.client_request_sent();
    metrics.client_request_sent();
    metrics.client_request_ended(ClientRequestEnd::TimedOut);
    metrics.limit_hit(Limit::MailboxFull);
    metrics.config_reloaded(ReloadOutcome::Failed);
    drop(tool);
    let text = metrics.encode_prometheus();
    for (series, value) in [
        ("mcp_tools_in_flight", 0.0),
        ("mcp_sse_streams_open", 1.0),
        ("mcp_sessions_active", 0.0),
        ("mcp_sessions_created_total", 1.0),
        ("mcp_sessions_ended_total{reason=\"idle\"}", 1.0),
        ("mcp_client_requests_pending", 1.0),
        ("mcp_client_requests_total{outcome=\"timed_out\"}", 1.0),
        ("mcp_limit_rejections_total{limit=\"mailbox_full\"}", 1.0),
        ("mcp_config_reloads_total{outcome=\"failed\"}", 1.0),
        ("mcp_config_reloads_total{outcome=\"ok\"}", 0.0),
    ] {
        assert_eq!(sample(&text, series), Some(value), "{series} in\n{text}");
    }
}

#[test]
fn openmetrics_output_ends_with_eof_and_names_the_same_samples() {
    let metrics = Metrics::default();
    metrics.session_started();
    let text = metrics.encode_openmetrics();
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert_eq!(sample(&text, "mcp_sessions_created_total"), Some(1.0));
    assert!(
        text.contains("# TYPE mcp_sessions_created counter"),
        "{text}"
    );
}
