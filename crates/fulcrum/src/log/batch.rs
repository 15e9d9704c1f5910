//! A worker's log datagrams to UDP targets, gathered during one turn of its event loop and
//! sent together with `sendmmsg`: one system call for the lines of a turn instead of one per
//! line (under load a turn ends dozens of requests).
//!
//! A worker turns batching on by calling [`flush`] from the future its event loop polls
//! before each batch of tasks, with that future's waker; the first line of a turn wakes it so
//! that the turn's lines leave at the start of the next, even when nothing else is pending.
//! [`stop`] sends what is left and turns batching off (a stopping worker no longer polls that
//! future). Threads that never turn it on (start-up, the supervisor) send each line at once.
//! Must not touch: what a line says or where it goes (`syslog` decides both).

use std::cell::RefCell;
use std::os::fd::AsRawFd;
use std::task::Waker;

use crate::worker::{Id, Slot};

/// Lines kept before a batch is sent without waiting for the end of the turn.
const MAX_LINES: usize = 64;

#[derive(Default)]
struct Batch {
    on: bool,
    waker: Option<Waker>,
    /// The lines' bytes, one after the other.
    bytes: Vec<u8>,
    /// Each line: the socket it goes out on, and where its bytes end in `bytes`.
    lines: Vec<(i32, usize)>,
}

static BATCH: Slot<RefCell<Batch>> = Slot::new(Id::LogBatch, || RefCell::new(Batch::default()));

/// Keeps `parts` (one datagram) for `fd` if this thread batches; `false`: send it now.
pub fn add(fd: &impl AsRawFd, parts: &[std::io::IoSlice<'_>]) -> bool {
    BATCH.with(|b| {
        let Ok(mut b) = b.try_borrow_mut() else { return false };
        if !b.on {
            return false;
        }
        if b.lines.is_empty() {
            if let Some(w) = &b.waker {
                w.wake_by_ref();
            }
        }
        for p in parts {
            b.bytes.extend_from_slice(p);
        }
        let end = b.bytes.len();
        b.lines.push((fd.as_raw_fd(), end));
        if b.lines.len() >= MAX_LINES {
            send(&mut b);
        }
        true
    })
}

/// Sends the lines gathered so far; from now on this thread batches, and `waker` is woken
/// when a turn has lines to send.
pub fn flush(waker: &Waker) {
    BATCH.with(|b| {
        let Ok(mut b) = b.try_borrow_mut() else { return };
        b.on = true;
        if !b.waker.as_ref().is_some_and(|w| w.will_wake(waker)) {
            b.waker = Some(waker.clone());
        }
        if !b.lines.is_empty() {
            send(&mut b);
        }
    });
}

/// Sends what is left and sends each later line at once.
pub fn stop() {
    BATCH.with(|b| {
        let Ok(mut b) = b.try_borrow_mut() else { return };
        send(&mut b);
        b.on = false;
        b.waker = None;
    });
}

/// One `sendmmsg` per run of lines for the same socket; lines the kernel would not take at
/// once are dropped and counted, as a single send would.
fn send(b: &mut Batch) {
    let mut datagrams: Vec<&[u8]> = Vec::with_capacity(b.lines.len());
    let mut start = 0;
    for &(_, end) in &b.lines {
        datagrams.push(&b.bytes[start..end]);
        start = end;
    }
    let mut i = 0;
    while i < b.lines.len() {
        let fd = b.lines[i].0;
        let run = b.lines[i..].iter().take_while(|l| l.0 == fd).count();
        let mut sent = 0;
        while sent < run {
            match crate::sys::send_datagrams(fd, &datagrams[i + sent..i + run]) {
                Ok(n) if n > 0 => sent += n,
                Ok(_) => break,
                Err(e) => match e.kind() {
                    // A datagram refused earlier (nobody listened yet): the next ones go on.
                    std::io::ErrorKind::Interrupted | std::io::ErrorKind::ConnectionRefused => {}
                    std::io::ErrorKind::WouldBlock => {
                        super::syslog::count_dropped((run - sent) as u64);
                        break;
                    }
                    // Another error drops this datagram alone (as one send would).
                    _ => {
                        super::syslog::count_dropped(1);
                        sent += 1;
                    }
                },
            }
        }
        i += run;
    }
    b.lines.clear();
    b.bytes.clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::IoSlice;
    use std::net::UdpSocket;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn recv_all(sink: &UdpSocket) -> Vec<String> {
        let mut got = Vec::new();
        let mut buf = [0u8; 256];
        while let Ok(n) = sink.recv(&mut buf) {
            got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
        got
    }

    #[test]
    fn lines_of_a_turn_leave_together_in_order_and_the_first_wakes_the_loop() {
        let sink = UdpSocket::bind("127.0.0.1:0").expect("bind");
        sink.set_nonblocking(true).expect("nonblocking");
        let tx = UdpSocket::bind("127.0.0.1:0").expect("bind");
        tx.connect(sink.local_addr().expect("addr")).expect("connect");
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        // Not batching yet: the caller sends.
        assert!(!add(&tx, &[IoSlice::new(b"now")]));
        flush(&waker);
        for i in 0..3 {
            assert!(add(&tx, &[IoSlice::new(b"line "), IoSlice::new(i.to_string().as_bytes())]));
        }
        assert_eq!(count.0.load(Ordering::Relaxed), 1, "one wake per turn");
        assert!(recv_all(&sink).is_empty(), "nothing leaves before the turn ends");
        flush(&waker);
        assert_eq!(recv_all(&sink), ["line 0", "line 1", "line 2"]);
        // A full batch leaves at once; stop sends the rest and ends batching.
        for _ in 0..MAX_LINES + 1 {
            assert!(add(&tx, &[IoSlice::new(b"x")]));
        }
        assert_eq!(recv_all(&sink).len(), MAX_LINES);
        stop();
        assert_eq!(recv_all(&sink), ["x"]);
        assert!(!add(&tx, &[IoSlice::new(b"after")]));
    }
}
