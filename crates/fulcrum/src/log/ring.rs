//! `ring` sections at run time: `log ring@<name>` targets put whole messages (header and
//! text, as the ring's `format` says) in the ring; each of its `server`s gets every message
//! over its own TCP connection, with a line feed after each (`log-proto legacy`) or its length
//! before it (`octet-count`, RFC 6587). A server's backlog is bounded by the ring's `size`: the
//! oldest messages go first, as in HAProxy's ring buffer.
//!
//! Each server has its own thread (started by the first message, so `-c` starts none) that
//! connects, writes and reconnects after a failure; it ends once the plan that made the ring
//! is gone. Putting a message takes one short lock and never waits for the network.
//!
//! Must not touch: what messages say (callers format them), other targets.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Condvar, Mutex, Once, RwLock, Weak};
use std::time::Duration;

use fulcrum_config::logfwd;
use fulcrum_config::SyslogFormat;

/// One ring.
#[derive(Debug)]
pub struct Ring {
    pub format: SyslogFormat,
    pub maxlen: usize,
    servers: Vec<Arc<Outbox>>,
}

/// What waits for one server.
#[derive(Debug)]
struct Outbox {
    addr: SocketAddr,
    octet_count: bool,
    connect: Duration,
    size: usize,
    queue: Mutex<(VecDeque<Vec<u8>>, usize)>,
    ready: Condvar,
    started: Once,
}

/// The rings of the current plan, by name (targets are resolved against them).
static RINGS: RwLock<Option<HashMap<String, Arc<Ring>>>> = RwLock::new(None);

/// Makes the configuration's rings the ones `ring@<name>` targets find.
pub fn install(rings: &[logfwd::Ring]) {
    let mut map = HashMap::new();
    for r in rings {
        let servers = r
            .servers
            .iter()
            .map(|s| {
                Arc::new(Outbox {
                    addr: s.addr,
                    octet_count: s.octet_count,
                    connect: r.timeout_connect.unwrap_or(Duration::from_secs(5)),
                    size: r.size as usize,
                    queue: Mutex::new((VecDeque::new(), 0)),
                    ready: Condvar::new(),
                    started: Once::new(),
                })
            })
            .collect();
        let ring = Ring { format: r.format, maxlen: r.maxlen as usize, servers };
        map.insert(r.name.clone(), Arc::new(ring));
    }
    *RINGS.write().unwrap_or_else(|e| e.into_inner()) = Some(map);
}

/// The ring called `name`, if the configuration has one.
pub fn find(name: &str) -> Option<Arc<Ring>> {
    RINGS.read().unwrap_or_else(|e| e.into_inner()).as_ref()?.get(name).cloned()
}

impl Ring {
    /// Adds one message (without its line feed) for every server.
    pub fn put(&self, parts: &[&[u8]]) {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let mut msg = Vec::with_capacity(len);
        parts.iter().for_each(|p| msg.extend_from_slice(p));
        for ob in &self.servers {
            ob.started.call_once(|| {
                let weak = Arc::downgrade(ob);
                let _ = std::thread::Builder::new()
                    .name("fulcrum-ring".into())
                    .spawn(move || forward(weak));
            });
            let mut q = ob.queue.lock().unwrap_or_else(|e| e.into_inner());
            q.1 += msg.len();
            q.0.push_back(msg.clone());
            while q.1 > ob.size && q.0.len() > 1 {
                if let Some(old) = q.0.pop_front() {
                    q.1 -= old.len();
                }
            }
            drop(q);
            ob.ready.notify_one();
        }
    }
}

/// One server's thread: connects, sends what waits, reconnects after a failure; ends when
/// the ring is gone.
fn forward(weak: Weak<Outbox>) {
    let mut conn: Option<TcpStream> = None;
    loop {
        let Some(ob) = weak.upgrade() else { return };
        if conn.is_none() {
            match TcpStream::connect_timeout(&ob.addr, ob.connect) {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    let _ = s.set_write_timeout(Some(Duration::from_secs(10)));
                    conn = Some(s);
                }
                Err(_) => {
                    drop(ob);
                    std::thread::sleep(Duration::from_secs(1));
                    continue;
                }
            }
        }
        let batch: Vec<Vec<u8>> = {
            let q = ob.queue.lock().unwrap_or_else(|e| e.into_inner());
            let (mut q, _) = ob
                .ready
                .wait_timeout_while(q, Duration::from_secs(1), |q| q.0.is_empty())
                .unwrap_or_else(|e| e.into_inner());
            q.1 = 0;
            q.0.drain(..).collect()
        };
        if batch.is_empty() {
            continue;
        }
        let mut out = Vec::new();
        for m in &batch {
            if ob.octet_count {
                out.extend_from_slice(format!("{} ", m.len()).as_bytes());
                out.extend_from_slice(m);
            } else {
                out.extend_from_slice(m);
                out.push(b'\n');
            }
        }
        if let Some(s) = conn.as_mut() {
            if s.write_all(&out).is_err() {
                // Lost with the connection, as HAProxy loses what it had not sent.
                conn = None;
            }
        }
    }
}
