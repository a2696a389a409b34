//! Hand-written HTTP/1.1 exchanges over a bare TCP stream, for what reqwest will not send:
//! a chosen `Host`, header names and values exactly as given, or an upload that the server
//! answers before it has read it all.

use std::time::Duration;

use serde_json::Value;

/// A reply read off a hand-written HTTP/1.1 exchange.
#[derive(Debug)]
pub struct RawReply {
    pub status: u16,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body; empty for SSE replies, which are not read.
    pub body: Vec<u8>,
}

impl RawReply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The JSON-RPC error code in the body, if any.
    pub fn error_code(&self) -> Option<i64> {
        self.json()?.get("error")?.get("code")?.as_i64()
    }
}

/// Sends one HTTP/1.1 request written by hand to `addr`, so that headers reqwest derives
/// from the URL (Host) can be anything. `head_lines` are full header lines such as
/// `"Host: evil.example.com"`; `Content-Length` and `Connection: close` are added. The
/// reply head is read, then the body unless it is an SSE stream. Panics after `limit`.
pub async fn raw_request(
    addr: &str,
    request_line: &str,
    head_lines: &[&str],
    body: &[u8],
    limit: Duration,
) -> RawReply {
    use tokio::io::AsyncWriteExt;
    let exchange = async {
        let mut tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let mut head = format!("{request_line}\r\n");
        for line in head_lines {
            head.push_str(line);
            head.push_str("\r\n");
        }
        head.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        ));
        tcp.write_all(head.as_bytes()).await.expect("write head");
        tcp.write_all(body).await.expect("write body");
        let mut reader = RawReader::default();
        let (status, headers) = reader.read_head(&mut tcp).await;
        let mut reply = RawReply {
            status,
            headers,
            body: Vec::new(),
        };
        let is_sse = reply
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if !is_sse {
            let length = reply.header("content-length").and_then(|n| n.parse().ok());
            let chunked = reply
                .header("transfer-encoding")
                .is_some_and(|t| t.eq_ignore_ascii_case("chunked"));
            reply.body = reader.read_body(&mut tcp, length, chunked).await;
        }
        let _ = tcp.shutdown().await;
        reply
    };
    tokio::time::timeout(limit, exchange)
        .await
        .unwrap_or_else(|_| panic!("no complete reply to {request_line:?} within {limit:?}"))
}

/// Sends a request head announcing a body of `body_len` bytes (with `Content-Length`, or
/// chunked when `chunked`), streams filler after it, and returns the reply as soon as one
/// arrives, without waiting for the upload to finish. Panics after `limit`.
pub async fn raw_upload(
    addr: &str,
    request_line: &str,
    head_lines: &[&str],
    body_len: usize,
    chunked: bool,
    limit: Duration,
) -> RawReply {
    use tokio::io::AsyncWriteExt;
    let exchange = async {
        let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let (mut read, mut write) = tcp.into_split();
        let mut head = format!("{request_line}\r\n");
        for line in head_lines {
            head.push_str(line);
            head.push_str("\r\n");
        }
        if chunked {
            head.push_str("Transfer-Encoding: chunked\r\n\r\n");
        } else {
            head.push_str(&format!("Content-Length: {body_len}\r\n\r\n"));
        }
        let upload = tokio::spawn(async move {
            const CHUNK: usize = 64 * 1024;
            write.write_all(head.as_bytes()).await?;
            let filler = vec![b' '; CHUNK];
            let mut sent = 0;
            while sent < body_len {
                let n = CHUNK.min(body_len - sent);
                if chunked {
                    write.write_all(format!("{n:x}\r\n").as_bytes()).await?;
                }
                write.write_all(&filler[..n]).await?;
                if chunked {
                    write.write_all(b"\r\n").await?;
                }
                sent += n;
            }
            if chunked {
                write.write_all(b"0\r\n\r\n").await?;
            }
            // Keep the write half open until the reply is read: dropping it half-closes
            // the connection, and hyper then closes it without answering.
            Ok::<_, std::io::Error>(write)
        });
        let mut reader = RawReader::default();
        let (status, headers) = reader.read_head(&mut read).await;
        let mut reply = RawReply {
            status,
            headers,
            body: Vec::new(),
        };
        let length = reply.header("content-length").and_then(|n| n.parse().ok());
        if length.is_some() {
            reply.body = reader.read_body(&mut read, length, false).await;
        }
        upload.abort();
        reply
    };
    tokio::time::timeout(limit, exchange)
        .await
        .unwrap_or_else(|_| panic!("no reply to {request_line:?} within {limit:?}"))
}

/// Incremental reader of an HTTP/1.1 reply.
#[derive(Default)]
struct RawReader {
    buf: Vec<u8>,
}

impl RawReader {
    async fn fill<R: tokio::io::AsyncRead + Unpin>(&mut self, r: &mut R) -> bool {
        use tokio::io::AsyncReadExt;
        let mut chunk = [0u8; 8192];
        match r.read(&mut chunk).await {
            Ok(0) => false,
            Err(_) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }

    async fn read_head<R: tokio::io::AsyncRead + Unpin>(
        &mut self,
        r: &mut R,
    ) -> (u16, Vec<(String, String)>) {
        let end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            assert!(
                self.fill(r).await,
                "connection closed before a reply head: {:?}",
                String::from_utf8_lossy(&self.buf)
            );
        };
        let head = String::from_utf8_lossy(&self.buf[..end]).into_owned();
        self.buf.drain(..end + 4);
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        (status, headers)
    }

    async fn read_body<R: tokio::io::AsyncRead + Unpin>(
        &mut self,
        r: &mut R,
        length: Option<usize>,
        chunked: bool,
    ) -> Vec<u8> {
        match length {
            Some(n) => {
                while self.buf.len() < n && self.fill(r).await {}
                self.buf.truncate(n);
                std::mem::take(&mut self.buf)
            }
            None => {
                while self.fill(r).await {}
                let raw = std::mem::take(&mut self.buf);
                if chunked { dechunk(&raw) } else { raw }
            }
        }
    }
}

/// Decodes a complete chunked body.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(i) = raw.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&raw[..i]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).unwrap_or(0);
        raw = &raw[i + 2..];
        if size == 0 || raw.len() < size {
            break;
        }
        out.extend_from_slice(&raw[..size]);
        raw = raw.get(size + 2..).unwrap_or_default();
    }
    out
}
