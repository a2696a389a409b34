//! `[telemetry]`: OpenTelemetry traces exported over OTLP/HTTP (protobuf).
//!
//! Off unless `enabled = true`: with it off no exporter exists and the request spans carry
//! no OpenTelemetry fields, so a server that does not trace pays nothing for it. The
//! endpoint and the service name fall back to the standard environment variables
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_SERVICE_NAME`) when the file does not set them.

use std::time::Duration;

use serde::Deserialize;

/// `[telemetry]` (module docs).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetrySection {
    /// Export traces. Off by default.
    pub enabled: bool,
    /// The OTLP/HTTP base URL; spans are posted to `<otlp_endpoint>/v1/traces`. Unset:
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`, else `http://localhost:4318`.
    pub otlp_endpoint: Option<String>,
    /// The `service.name` resource attribute. Unset: `OTEL_SERVICE_NAME`, else `mcp-actor`.
    pub service_name: Option<String>,
    /// The share of new traces sampled, 0.0 to 1.0. A request whose caller sent a trace
    /// context follows the caller's sampling decision instead (parent-based).
    pub sample_ratio: f64,
    /// Finished spans waiting for export at most; past it spans are dropped and counted
    /// (`mcp_telemetry_spans_dropped_total`), never waited for.
    pub max_queue_size: usize,
    /// Spans sent in one export request at most.
    pub max_export_batch_size: usize,
    /// How often queued spans are exported.
    #[serde(with = "humantime_serde")]
    pub export_interval: Duration,
    /// How long one export request may take; a slower collector loses that batch.
    #[serde(with = "humantime_serde")]
    pub export_timeout: Duration,
}

impl Default for TelemetrySection {
    fn default() -> Self {
        TelemetrySection {
            enabled: false,
            otlp_endpoint: None,
            service_name: None,
            sample_ratio: 1.0,
            max_queue_size: 2048,
            max_export_batch_size: 512,
            export_interval: Duration::from_secs(5),
            export_timeout: Duration::from_secs(10),
        }
    }
}

/// Every error of the section as (dotted key, message).
pub fn errors(section: &TelemetrySection) -> Vec<(String, String)> {
    let mut errors = Vec::new();
    let mut refuse = |key: &str, message: &str| {
        errors.push((format!("telemetry.{key}"), message.to_string()));
    };
    if !(0.0..=1.0).contains(&section.sample_ratio) {
        refuse("sample_ratio", "must be between 0.0 and 1.0");
    }
    if section.max_queue_size == 0 {
        refuse("max_queue_size", "must be at least 1");
    }
    if section.max_export_batch_size == 0 {
        refuse("max_export_batch_size", "must be at least 1");
    }
    if section.export_interval.is_zero() {
        refuse("export_interval", "must be longer than 0s");
    }
    if section.export_timeout.is_zero() {
        refuse("export_timeout", "must be longer than 0s");
    }
    if let Some(endpoint) = &section.otlp_endpoint {
        match url::Url::parse(endpoint) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => {}
            _ => refuse(
                "otlp_endpoint",
                "must be an http:// or https:// URL, as http://localhost:4318",
            ),
        }
    }
    errors
}
