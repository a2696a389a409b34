//! Telling HTTP/1 from HTTP/2 (prior knowledge, h2c) by a connection's first bytes, as
//! hyper-util's `auto::Builder` does, but without its memory cost per connection.
//!
//! `auto` reads up to 24 bytes to look for the HTTP/2 preface and hands them back to hyper
//! in a read of their own. hyper then reads the rest of the request into what is left of its
//! 8 KiB read buffer, finds less than 8 KiB free and doubles the buffer to 16 KiB, which
//! every connection keeps for its life. [`Sniffed`] hands the sniffed bytes back together
//! with whatever else the socket already holds, in one read, so the first request lands in
//! hyper's first 8 KiB buffer. And where `auto`'s connection future is as large as an HTTP/2
//! connection, the HTTP/2 connection here is boxed: HTTP/1 connections do not carry its
//! size.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The client preface of HTTP/2 with prior knowledge (RFC 9113, section 3.4).
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The protocol a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Version {
    Http1,
    Http2,
}

/// Reads from `io` until its first bytes show the protocol: HTTP/2 once all 24 bytes of
/// the preface arrived, HTTP/1 as soon as a byte differs from it or the client closes.
/// The bytes read are kept in the returned [`Sniffed`], which reads them again first.
pub(super) async fn sniff<T: AsyncRead + Unpin>(mut io: T) -> io::Result<(Version, Sniffed<T>)> {
    let mut head = [0u8; 24];
    let mut filled = 0;
    let version = loop {
        let mut buf = ReadBuf::new(&mut head[filled..]);
        std::future::poll_fn(|cx| Pin::new(&mut io).poll_read(cx, &mut buf)).await?;
        let read = buf.filled().len();
        let was = filled;
        filled += read;
        if read == 0 || head[was..filled] != H2_PREFACE[was..filled] {
            break Version::Http1;
        }
        if filled == H2_PREFACE.len() {
            break Version::Http2;
        }
    };
    let sniffed = Sniffed {
        head,
        start: 0,
        end: filled as u8,
        inner: io,
    };
    Ok((version, sniffed))
}

/// A connection whose first bytes were read by [`sniff`]: reading gives them back first.
pub(super) struct Sniffed<T> {
    head: [u8; 24],
    start: u8,
    end: u8,
    inner: T,
}

impl<T: AsyncRead + Unpin> AsyncRead for Sniffed<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.start == self.end {
            return Pin::new(&mut self.inner).poll_read(cx, buf);
        }
        let (start, end) = (usize::from(self.start), usize::from(self.end));
        let n = (end - start).min(buf.remaining());
        buf.put_slice(&self.head[start..start + n]);
        self.start += n as u8;
        if self.start == self.end && buf.remaining() > 0 {
            // The rest of what already arrived goes in the same read, so hyper parses the
            // first request from the buffer it started with (module docs). Nothing there
            // yet, or an error, is for the next read: these bytes are returned now.
            let _ = Pin::new(&mut self.inner).poll_read(cx, buf);
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Sniffed<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn sniffed(chunks: &[&[u8]]) -> (Version, Vec<u8>) {
        let (mut client, server) = tokio::io::duplex(1024);
        for chunk in chunks {
            client.write_all(chunk).await.unwrap();
        }
        drop(client);
        let (version, mut io) = sniff(server).await.unwrap();
        let mut all = Vec::new();
        io.read_to_end(&mut all).await.unwrap();
        (version, all)
    }

    #[tokio::test]
    async fn http1_bytes_come_back_whole_even_when_they_begin_like_the_preface() {
        let request: &[u8] = b"PRI-NOT * HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_eq!(
            sniffed(&[request]).await,
            (Version::Http1, request.to_vec())
        );
        let get: &[u8] = b"GET / HTTP/1.1\r\n\r\n";
        assert_eq!(
            sniffed(&[&get[..1], &get[1..]]).await,
            (Version::Http1, get.to_vec())
        );
    }

    #[tokio::test]
    async fn the_preface_in_pieces_is_http2_and_is_read_again() {
        let mut sent = H2_PREFACE.to_vec();
        sent.extend_from_slice(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00");
        let (version, all) = sniffed(&[&sent[..5], &sent[5..30], &sent[30..]]).await;
        assert_eq!((version, all), (Version::Http2, sent));
    }

    #[tokio::test]
    async fn a_client_that_closes_at_once_is_http1_with_nothing_to_read() {
        assert_eq!(sniffed(&[]).await, (Version::Http1, Vec::new()));
    }
}
