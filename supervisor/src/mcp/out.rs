//! The server's output stream, shared by rmcp and the direct path ([`super::direct`]): whole
//! lines, in the order they were handed over, never interleaved.
//!
//! rmcp writes through [`RmcpOut`] (an `AsyncWrite` that cuts what it is given into lines);
//! its lines are queued for the writer task ([`spawn`]), which writes whatever is queued in one
//! go. A direct call hands its answer line to [`Lines::send`], which writes it at once from the
//! calling task when nothing is queued and nobody is writing (the usual case: one call at a
//! time), and queues it otherwise. Why: the answer is the end of the call's critical path, and
//! handing it to another task put a task wake-up (and, on a multi-threaded runtime, possibly a
//! thread hop) between the Step and the write.
//!
//! Invariants:
//! - One writer at a time: stdout sits behind one lock, held for whole lines (the writer task
//!   holds it for a batch, a direct call for its line).
//! - Order: a line skips the queue only when the queue is empty, so it never overtakes a line
//!   handed over before it.
//! - Bounded: the bytes queued and not yet written are counted; past [`OUT_MAX_BYTES`] rmcp's
//!   writes wait (`Pending`) and direct answers wait for room, so a client that stops reading
//!   its answers stops the server's output, not its memory (a direct call writing its own line
//!   holds only that line).
//! - The writer task ends once every sender is gone (rmcp closed its transport and every
//!   direct call has answered) and everything queued is written, or at the first write error;
//!   after a failed write every later line is refused.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, mpsc};

/// Output queued beyond this waits for the client to read (64 MiB: a few large answers).
pub const OUT_MAX_BYTES: usize = 64 << 20;

/// The output itself, behind the one lock every writer takes.
type Out = Arc<tokio::sync::Mutex<Box<dyn AsyncWrite + Unpin + Send>>>;

#[derive(Debug, Default)]
struct Room {
    queued: AtomicUsize,
    /// Set by the first failed write: the output is gone.
    failed: AtomicBool,
    /// Direct senders waiting for room.
    notify: Notify,
    /// rmcp's writer waiting for room.
    waker: Mutex<Option<Waker>>,
}

impl Room {
    fn full(&self) -> bool {
        self.queued.load(Ordering::Acquire) > OUT_MAX_BYTES
    }

    fn freed(&self, n: usize) {
        self.queued.fetch_sub(n, Ordering::AcqRel);
        self.notify.notify_waiters();
        let waker = self.waker.lock().map(|mut w| w.take()).ok().flatten();
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// A sender of whole lines (each ending in `\n`). Cloning shares the queue.
#[derive(Clone)]
pub struct Lines {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    room: Arc<Room>,
    out: Out,
}

impl std::fmt::Debug for Lines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lines").field("room", &self.room).finish()
    }
}

impl Lines {
    /// Writes one line now if nothing is queued and nobody is writing, else queues it once
    /// there is room; an error if the output has failed or its writer has stopped.
    pub async fn send(&self, line: Vec<u8>) -> io::Result<()> {
        if self.room.failed.load(Ordering::Acquire) {
            return Err(closed());
        }
        if self.room.queued.load(Ordering::Acquire) == 0
            && let Ok(mut out) = self.out.try_lock()
        {
            let written = write_out(&mut **out, &line).await;
            if written.is_err() {
                self.room.failed.store(true, Ordering::Release);
            }
            return written;
        }
        loop {
            let wait = self.room.notify.notified();
            tokio::pin!(wait);
            wait.as_mut().enable();
            if !self.room.full() {
                break;
            }
            wait.await;
        }
        self.push(line)
    }

    fn push(&self, line: Vec<u8>) -> io::Result<()> {
        self.room.queued.fetch_add(line.len(), Ordering::AcqRel);
        self.tx.send(line).map_err(|_| closed())
    }
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the output is closed")
}

async fn write_out(out: &mut (dyn AsyncWrite + Unpin + Send), bytes: &[u8]) -> io::Result<()> {
    out.write_all(bytes).await?;
    out.flush().await
}

/// Starts the writer task on `out`; returns the sender for direct answers, rmcp's side, and
/// the task (it ends as described above).
pub fn spawn<W>(out: W) -> (Lines, RmcpOut, tokio::task::JoinHandle<io::Result<()>>)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let room = Arc::new(Room::default());
    let out: Out = Arc::new(tokio::sync::Mutex::new(Box::new(out)));
    let lines = Lines {
        tx,
        room: Arc::clone(&room),
        out: Arc::clone(&out),
    };
    let rmcp = RmcpOut {
        lines: Some(lines.clone()),
        partial: Vec::new(),
    };
    let task = tokio::spawn(async move {
        let mut batch = Vec::new();
        while let Some(line) = rx.recv().await {
            batch.extend_from_slice(&line);
            while let Ok(more) = rx.try_recv() {
                batch.extend_from_slice(&more);
            }
            let written = write_out(&mut **out.lock().await, &batch).await;
            if written.is_err() {
                room.failed.store(true, Ordering::Release);
            }
            room.freed(batch.len());
            batch.clear();
            written?;
        }
        out.lock().await.shutdown().await
    });
    (lines, rmcp, task)
}

/// rmcp's side of the output: what it writes is cut into lines and queued.
#[derive(Debug)]
pub struct RmcpOut {
    /// `None` once rmcp shut its side down.
    lines: Option<Lines>,
    /// The start of a line whose newline has not come yet.
    partial: Vec<u8>,
}

impl AsyncWrite for RmcpOut {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let Some(lines) = &this.lines else {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        };
        if lines.room.full() {
            if let Ok(mut w) = lines.room.waker.lock() {
                *w = Some(cx.waker().clone());
            }
            if lines.room.full() {
                return Poll::Pending;
            }
        }
        let mut rest = buf;
        while let Some(i) = rest.iter().position(|b| *b == b'\n') {
            let mut line = std::mem::take(&mut this.partial);
            line.extend_from_slice(&rest[..=i]);
            rest = &rest[i + 1..];
            lines.push(line)?;
        }
        this.partial.extend_from_slice(rest);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().lines = None;
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn lines_from_both_sides_come_out_whole_and_in_order() {
        let (w, mut r) = tokio::io::duplex(1 << 16);
        let (lines, mut rmcp, task) = spawn(w);
        rmcp.write_all(b"{\"a\":").await.ok();
        lines.send(b"direct\n".to_vec()).await.ok();
        rmcp.write_all(b"1}\n{\"b\":2}\n").await.ok();
        rmcp.shutdown().await.ok();
        drop(lines);
        assert!(matches!(task.await, Ok(Ok(()))));
        let mut got = String::new();
        r.read_to_string(&mut got).await.ok();
        assert_eq!(got, "direct\n{\"a\":1}\n{\"b\":2}\n");
    }

    /// With nothing queued, a direct line is written by `send` itself: it is readable before
    /// any other task (the writer task included) has run on this one-thread runtime.
    #[tokio::test]
    async fn a_direct_line_is_written_before_send_returns_when_nothing_is_queued() {
        let (w, mut r) = tokio::io::duplex(1 << 16);
        let (lines, _rmcp, _task) = spawn(w);
        assert!(lines.send(b"now\n".to_vec()).await.is_ok());
        let mut buf = [0u8; 16];
        let read = tokio::time::timeout(std::time::Duration::ZERO, r.read(&mut buf)).await;
        assert!(matches!(read, Ok(Ok(4))), "{read:?}");
        assert_eq!(&buf[..4], b"now\n");
    }

    /// A direct line handed over after a queued one goes after it.
    #[tokio::test]
    async fn a_direct_line_never_overtakes_a_queued_one() {
        let (w, mut r) = tokio::io::duplex(1 << 16);
        let (lines, mut rmcp, task) = spawn(w);
        rmcp.write_all(b"{\"r\":1}\n").await.ok();
        lines.send(b"d\n".to_vec()).await.ok();
        rmcp.shutdown().await.ok();
        drop(lines);
        assert!(matches!(task.await, Ok(Ok(()))));
        let mut got = String::new();
        r.read_to_string(&mut got).await.ok();
        assert_eq!(got, "{\"r\":1}\nd\n");
    }

    #[tokio::test]
    async fn a_client_that_does_not_read_stops_the_output_at_the_bound() {
        let (w, mut r) = tokio::io::duplex(1024);
        let (lines, _rmcp, _task) = spawn(w);
        let line = vec![b'x'; 1 << 20];
        let mut sent = 0usize;
        let stalled = tokio::time::timeout(std::time::Duration::from_millis(300), async {
            loop {
                let mut l = line.clone();
                l.push(b'\n');
                if lines.send(l).await.is_err() {
                    break;
                }
                sent += 1;
            }
        })
        .await;
        assert!(stalled.is_err(), "sending never waits");
        assert!(
            sent * (1 << 20) <= OUT_MAX_BYTES + (2 << 20),
            "{sent} MiB queued"
        );
        let mut buf = vec![0; 4096];
        assert!(r.read(&mut buf).await.is_ok_and(|n| n > 0));
    }
}
