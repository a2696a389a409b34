//! Hostile input at the HTTP layer, over real HTTP against the binary: bodies built to
//! decode into far more memory than they occupy, refusals answered before the body is read
//! on a keep-alive connection, idle connections against the admin listener's probes, one
//! principal holding every SSE stream, and `initialize` rates keyed by IPv6 /64.

mod common;

use std::time::{Duration, Instant};

use common::{BUILTIN_TOOLS_TOML, LATEST, TestServer};
use serde_json::{Value, json};

fn config(extra: &str) -> String {
    format!("{extra}\n{BUILTIN_TOOLS_TOML}")
}

/// The server's resident set, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Samples `pid`'s RSS every 5 ms on a thread until the returned flag is set; the thread
/// returns the peak.
fn rss_sampler(
    pid: u32,
) -> (
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    std::thread::JoinHandle<u64>,
) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::spawn(move || {
        let mut peak = 0;
        while !flag.load(std::sync::atomic::Ordering::Relaxed) {
            peak = peak.max(rss_kib(pid));
            std::thread::sleep(Duration::from_millis(5));
        }
        peak.max(rss_kib(pid))
    });
    (stop, thread)
}

/// Just under 4 MiB (`http.max_body_bytes`) of `{}` elements, as a batch or inside the
/// `params` of one `tools/call`.
fn empty_objects(count: usize) -> String {
    let mut s = String::with_capacity(count * 3);
    for i in 0..count {
        if i > 0 {
            s.push(',');
        }
        s.push_str("{}");
    }
    s
}

const ELEMENTS: usize = 1_390_000;

async fn post_concurrently(url: &str, body: String, count: usize) -> Vec<(u16, Value)> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .expect("client");
    let posts = (0..count).map(|_| {
        let request = client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", common::ACCEPT_BOTH)
            .header("mcp-protocol-version", LATEST)
            .body(body.clone());
        async move {
            match request.send().await {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    (status, resp.json::<Value>().await.unwrap_or(Value::Null))
                }
                Err(e) => (0, Value::String(e.to_string())),
            }
        }
    });
    futures_util::future::join_all(posts).await
}

#[tokio::test]
async fn bodies_of_empty_objects_cannot_grow_the_server_past_64_mb() {
    let server = TestServer::with_config(&config(""));
    let pid = server.pid();
    // A first exchange, so the start figure includes the runtime's and allocator's setup.
    let session = common::Client::new(&server.url).connect().await;
    let start = rss_kib(pid);
    let (stop, sampler) = rss_sampler(pid);

    let batch = format!("[{}]", empty_objects(ELEMENTS));
    let params = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"a":[{}]}}}}}}"#,
        empty_objects(ELEMENTS - 10)
    );
    assert!(batch.len() <= 4 * 1024 * 1024 && params.len() <= 4 * 1024 * 1024);
    let began = Instant::now();
    let batches = post_concurrently(&server.url, batch, 8).await;
    let singles = post_concurrently(&server.url, params, 8).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let peak = sampler.join().expect("sampler");
    let grown_mb = peak.saturating_sub(start) as f64 / 1024.0;
    eprintln!(
        "RSS start {} MB, peak {} MB (+{grown_mb:.1} MB) over 16 POSTs in {:?}",
        start / 1024,
        peak / 1024,
        began.elapsed()
    );
    assert!(grown_mb <= 64.0, "RSS grew {grown_mb:.1} MB");
    for (status, body) in batches.iter().chain(&singles) {
        assert_eq!(*status, 400, "{body}");
        assert_eq!(body["error"]["code"], -32600, "{body}");
    }
    let message = batches[0].1["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("http.max_batch_size"), "{message}");
    let message = singles[0].1["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("http.max_json_values"), "{message}");
    // The server still serves.
    let text = session
        .call_tool_text(json!(2), "echo", json!({"text": "ok"}))
        .await;
    assert!(!text.is_empty());
}
