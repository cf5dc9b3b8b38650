//! Frames out over one Unix stream that many tasks send on: written in place by the sending
//! task when nothing is queued, otherwise queued, in order, for a writer task.
//!
//! Why: a connection that multiplexes requests mostly has one frame to send at a time, and
//! handing every frame to a writer task costs a task wake-up (often on another thread) on the
//! latency path of every request. A non-blocking `try_write` from the sender avoids that; a full
//! socket buffer, or a frame already waiting, sends the frame to the writer task instead, which
//! coalesces whatever is queued into one write.
//!
//! Invariants:
//! - Frames go out whole and in `send` order: a sender writes in place only while the queue is
//!   empty, under the lock that also counts the queue, and the unwritten rest of a partly written
//!   frame is queued before that lock is released.
//! - After a write error the outbox is closed: that `send` and every later one fails.
//! - The writer task ([`Outbox::new`]'s future) ends when every `Outbox` handle is gone and the
//!   queue is drained, or at the first write error, which it returns.
//! - The bytes queued and not yet written are counted ([`Outbox::queued_bytes`]), and a reader
//!   can wait until they fall under a bound ([`Outbox::wait_below`]): the daemon stops reading a
//!   connection whose client does not read its answers, so the queue cannot grow without end.

use std::io::{Error, ErrorKind};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::mpsc;

/// A frame's bytes and how many of them are already written.
struct Queued {
    frame: Vec<u8>,
    from: usize,
}

struct Inner {
    wr: OwnedWriteHalf,
    state: Mutex<State>,
    /// Woken whenever the writer task has written a batch (or failed).
    drained: tokio::sync::Notify,
}

#[derive(Default)]
struct State {
    /// Frames handed to the writer task and not yet fully written.
    queued: usize,
    /// Their unwritten bytes.
    queued_bytes: usize,
    closed: bool,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding it; a poisoned lock still guards consistent counters.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The sending side of a connection. Cloning shares it.
#[derive(Clone)]
pub struct Outbox {
    inner: Arc<Inner>,
    tx: mpsc::UnboundedSender<Queued>,
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbox").finish_non_exhaustive()
    }
}

impl Outbox {
    /// The outbox and its writer task, to be spawned by the caller.
    pub fn new(
        wr: OwnedWriteHalf,
    ) -> (
        Outbox,
        impl std::future::Future<Output = std::io::Result<()>> + Send + 'static,
    ) {
        let inner = Arc::new(Inner {
            wr,
            state: Mutex::new(State::default()),
            drained: tokio::sync::Notify::new(),
        });
        let (tx, rx) = mpsc::unbounded_channel();
        let writer = drain(Arc::clone(&inner), rx);
        (Outbox { inner, tx }, writer)
    }

    /// Sends one encoded frame: written now if the socket takes it and nothing is queued,
    /// otherwise queued. An error means the connection can no longer be written to.
    pub fn send(&self, frame: Vec<u8>) -> std::io::Result<()> {
        let mut st = self.inner.lock();
        if st.closed {
            return Err(closed());
        }
        let mut from = 0;
        if st.queued == 0 {
            while from < frame.len() {
                match self
                    .inner
                    .wr
                    .try_write(frame.get(from..).unwrap_or_default())
                {
                    Ok(0) => {
                        st.closed = true;
                        return Err(ErrorKind::WriteZero.into());
                    }
                    Ok(n) => from += n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => {
                        st.closed = true;
                        return Err(e);
                    }
                }
            }
            if from == frame.len() {
                return Ok(());
            }
        }
        let bytes = frame.len().saturating_sub(from);
        if self.tx.send(Queued { frame, from }).is_err() {
            st.closed = true;
            return Err(closed());
        }
        st.queued += 1;
        st.queued_bytes = st.queued_bytes.saturating_add(bytes);
        Ok(())
    }

    /// Bytes queued for the writer task and not yet written.
    pub fn queued_bytes(&self) -> usize {
        self.inner.lock().queued_bytes
    }

    /// Returns once at most `limit` bytes are queued, or the outbox is closed.
    pub async fn wait_below(&self, limit: usize) {
        loop {
            // Created before the check, so a drain between the check and the await still wakes it.
            let drained = self.inner.drained.notified();
            {
                let st = self.inner.lock();
                if st.closed || st.queued_bytes <= limit {
                    return;
                }
            }
            drained.await;
        }
    }
}

fn closed() -> Error {
    Error::new(ErrorKind::BrokenPipe, "the connection is closed")
}

/// The writer task: writes queued frames in order, several at a time when they pile up.
async fn drain(inner: Arc<Inner>, mut rx: mpsc::UnboundedReceiver<Queued>) -> std::io::Result<()> {
    let mut batch = Vec::new();
    while let Some(first) = rx.recv().await {
        batch.clear();
        batch.extend_from_slice(first.frame.get(first.from..).unwrap_or_default());
        let mut frames = 1;
        while let Ok(more) = rx.try_recv() {
            batch.extend_from_slice(more.frame.get(more.from..).unwrap_or_default());
            frames += 1;
        }
        let written = write_all(&inner.wr, &batch).await;
        let mut st = inner.lock();
        if let Err(e) = written {
            st.closed = true;
            drop(st);
            inner.drained.notify_waiters();
            return Err(e);
        }
        st.queued = st.queued.saturating_sub(frames);
        st.queued_bytes = st.queued_bytes.saturating_sub(batch.len());
        drop(st);
        inner.drained.notify_waiters();
    }
    inner.lock().closed = true;
    inner.drained.notify_waiters();
    Ok(())
}

async fn write_all(wr: &OwnedWriteHalf, mut buf: &[u8]) -> std::io::Result<()> {
    while !buf.is_empty() {
        wr.writable().await?;
        match wr.try_write(buf) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => buf = buf.get(n..).unwrap_or_default(),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::AsyncReadExt;

    /// Frames larger than the socket buffer, sent from many tasks, arrive whole and in order
    /// per sender (the queued path), and small ones go out in place.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn frames_arrive_whole_and_in_order() {
        let (a, b) = tokio::net::UnixStream::pair().unwrap();
        let (_ard, awr) = a.into_split();
        let (out, writer) = Outbox::new(awr);
        let writer = tokio::spawn(writer);
        let mut senders = Vec::new();
        for s in 0u8..4 {
            let out = out.clone();
            senders.push(tokio::spawn(async move {
                for i in 0u8..50 {
                    // Frame: sender, index, length (u32), then `len` copies of the index.
                    let len = if i % 7 == 0 { 300_000 } else { 10 };
                    let mut f = vec![s, i];
                    f.extend_from_slice(&u32::try_from(len).unwrap().to_be_bytes());
                    f.extend(std::iter::repeat_n(i, len));
                    out.send(f).unwrap();
                    tokio::task::yield_now().await;
                }
            }));
        }
        let mut b = b;
        let reader = tokio::spawn(async move {
            let mut next = [0u8; 4];
            for _ in 0..200 {
                let mut head = [0u8; 6];
                b.read_exact(&mut head).await.unwrap();
                let (s, i) = (head[0] as usize, head[1]);
                assert_eq!(next[s], i, "sender {s} out of order");
                next[s] += 1;
                let len = u32::from_be_bytes([head[2], head[3], head[4], head[5]]) as usize;
                let mut body = vec![0u8; len];
                b.read_exact(&mut body).await.unwrap();
                assert!(
                    body.iter().all(|x| *x == i),
                    "frame {i} of sender {s} interleaved"
                );
            }
        });
        for s in senders {
            s.await.unwrap();
        }
        drop(out);
        writer.await.unwrap().unwrap();
        reader.await.unwrap();
    }

    /// A peer that does not read: the queued bytes are counted, `wait_below` waits until the
    /// peer reads, then returns.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn queued_bytes_are_counted_until_the_peer_reads() {
        let (a, mut b) = tokio::net::UnixStream::pair().unwrap();
        let (_ard, awr) = a.into_split();
        let (out, writer) = Outbox::new(awr);
        let _writer = tokio::spawn(writer);
        for _ in 0..64 {
            out.send(vec![7; 64 << 10]).unwrap();
        }
        // The socket buffer takes some; the rest waits in the queue.
        assert!(out.queued_bytes() > 1 << 20, "{}", out.queued_bytes());
        let waiting = tokio::time::timeout(Duration::from_millis(100), out.wait_below(0)).await;
        assert!(
            waiting.is_err(),
            "nothing was read, so the queue cannot be empty"
        );
        let reader = tokio::spawn(async move {
            let mut buf = vec![0u8; 64 << 10];
            let mut total = 0;
            while total < 64 * (64 << 10) {
                total += b.read(&mut buf).await.unwrap();
            }
        });
        tokio::time::timeout(Duration::from_secs(10), out.wait_below(0))
            .await
            .unwrap();
        assert_eq!(out.queued_bytes(), 0);
        reader.await.unwrap();
    }

    #[tokio::test]
    async fn a_closed_peer_fails_sends() {
        let (a, b) = tokio::net::UnixStream::pair().unwrap();
        let (_ard, awr) = a.into_split();
        let (out, writer) = Outbox::new(awr);
        let _writer = tokio::spawn(writer);
        drop(b);
        let mut failed = false;
        for _ in 0..100 {
            if out.send(vec![0; 1024]).is_err() {
                failed = true;
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(failed, "sending to a closed peer must fail");
    }
}
