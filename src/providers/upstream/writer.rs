//! The writer of a stdio upstream's input: lines from the connection's queue to the child's
//! stdin, as few writes as the queue allows.

use bytes::Bytes;
use futures_util::SinkExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::wire::Outgoing;

/// Writes each line, newline-terminated, until the connection ends.
pub(super) async fn write_lines<W>(
    mut sink: W,
    mut lines: mpsc::Receiver<Outgoing>,
    closed: CancellationToken,
) where
    W: futures_util::Sink<Bytes, Error = std::io::Error> + Unpin,
{
    loop {
        tokio::select! {
            line = lines.recv() => {
                let Some(line) = line else { break };
                if let Err(e) = write_queued(&mut sink, line.line, &mut lines).await {
                    tracing::debug!(error = %e, "upstream input closed");
                    break;
                }
            }
            () = closed.cancelled() => break,
        }
    }
    let _ = sink.close().await;
    closed.cancel();
}

/// Writes `first` and every line queued behind it with one flush: when many calls are in
/// flight, the lines that arrived while the last write ran go out in one write to the
/// pipe instead of a write each. The sink still flushes on its own past its buffer's
/// high-water mark, so a long queue is written as it is taken, not gathered whole.
async fn write_queued<W>(
    sink: &mut W,
    first: Bytes,
    lines: &mut mpsc::Receiver<Outgoing>,
) -> std::io::Result<()>
where
    W: futures_util::Sink<Bytes, Error = std::io::Error> + Unpin,
{
    sink.feed(first).await?;
    while let Ok(queued) = lines.try_recv() {
        sink.feed(queued.line).await?;
    }
    sink.flush().await
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use super::*;

    /// A sink that records what it was given and how often it was flushed.
    #[derive(Default)]
    struct Recorder {
        lines: Vec<Bytes>,
        flushes: usize,
    }

    impl futures_util::Sink<Bytes> for Recorder {
        type Error = std::io::Error;
        fn poll_ready(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn start_send(mut self: Pin<&mut Self>, line: Bytes) -> std::io::Result<()> {
            self.lines.push(line);
            Ok(())
        }
        fn poll_flush(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            self.flushes += 1;
            Poll::Ready(Ok(()))
        }
        fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn queued_lines_go_out_in_order_with_one_flush() {
        let (tx, mut rx) = mpsc::channel(8);
        for line in ["b", "c", "d"] {
            let head = crate::providers::upstream::wire::Head::default();
            let line = Bytes::from(line);
            tx.try_send(Outgoing { line, head }).unwrap();
        }
        let mut sink = Recorder::default();
        write_queued(&mut sink, Bytes::from("a"), &mut rx)
            .await
            .unwrap();
        assert_eq!(sink.lines, ["a", "b", "c", "d"]);
        assert_eq!(sink.flushes, 1);
        // Nothing queued: the line is written and flushed alone.
        write_queued(&mut sink, Bytes::from("e"), &mut rx)
            .await
            .unwrap();
        assert_eq!(sink.lines.len(), 5);
        assert_eq!(sink.flushes, 2);
    }
}
