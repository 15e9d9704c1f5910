//! Traffic counters kept per frontend, backend and server (HAProxy's `fe_counters` /
//! `be_counters`), read by the runtime API, the stats page and soft-stop messages. Relaxed
//! atomics: they count, they never synchronise anything. Most are bumped where a decision is
//! made (a session accepted, a connect failed); the ones that depend on how a stream ended
//! (status classes, aborts, denials, request errors, times) are added once per stream from its
//! outcome by `stats::account`. Also each proxy's last refused message (`Slot`, `Snapshot`:
//! `show errors`), captured here (`capture`) and rendered by `stats::snapshots`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

#[derive(Debug, Default)]
pub struct Counters {
    /// Sessions (connections) handled in total.
    pub sessions: AtomicU64,
    /// Bytes received from clients.
    pub bytes_in: AtomicU64,
    /// Bytes sent to clients.
    pub bytes_out: AtomicU64,
    /// Failed connection attempts to servers.
    pub connect_errors: AtomicU64,
    /// Connection attempts retried.
    pub retries: AtomicU64,
    /// Retries sent to another server (`option redispatch`).
    pub redispatches: AtomicU64,
    /// Sessions closed because `timeout queue` expired.
    pub queue_timeouts: AtomicU64,
    /// Sessions that found no usable server.
    pub no_server: AtomicU64,
    /// HTTP responses that were invalid or truncated (answered 502).
    pub failed_responses: AtomicU64,
    /// Requests (HTTP) or connections (tcp) denied by rules (`dreq`), responses denied
    /// (`dresp`), connections and sessions denied by `tcp-request connection|session` (`dcon`,
    /// `dses`).
    pub denied_req: AtomicU64,
    pub denied_resp: AtomicU64,
    pub denied_conn: AtomicU64,
    pub denied_sess: AtomicU64,
    /// Request errors: invalid requests, client aborts and timeouts before a complete request
    /// (`ereq`).
    pub failed_req: AtomicU64,
    /// Data transfers aborted by the client / by the server (`cli_abrt`, `srv_abrt`).
    pub cli_abrt: AtomicU64,
    pub srv_abrt: AtomicU64,
    /// HTTP responses per status class: 1xx..5xx, other (`hrsp_*`).
    pub hrsp: [AtomicU64; 6],
    /// HTTP requests (`req_tot`), and those the proxy answered itself (`intercepted`).
    pub requests: AtomicU64,
    pub intercepted: AtomicU64,
    /// Connections accepted (`conn_tot`, frontends).
    pub conns: AtomicU64,
    /// Header rewrites that failed (`wrew`), internal errors (`eint`).
    pub failed_rewrites: AtomicU64,
    pub internal_errors: AtomicU64,
    /// Server connections established (`connect`) and reused from the idle pools (`reuse`).
    pub connects: AtomicU64,
    pub reuses: AtomicU64,
    /// The most sessions at once (`smax`), the longest queue (`qmax`).
    pub max_sessions: AtomicU64,
    pub max_queue: AtomicU64,
    /// Highest rates seen by the once-a-second sampler: sessions, connections, requests.
    pub max_sess_rate: AtomicU64,
    pub max_conn_rate: AtomicU64,
    pub max_req_rate: AtomicU64,
    /// Running averages over the last 1024 streams (HAProxy's `swrate`) of the queue,
    /// connect, response and total times in ms, kept as sums; and their maxima.
    pub times: [AtomicU64; 4],
    pub times_max: [AtomicU64; 4],
    /// When a session last went to this server or backend (seconds since the epoch; 0: never).
    pub last_sess: AtomicU64,
    /// Rates over the last second: sessions, connections (frontends), requests.
    pub sess_rate: Rate,
    pub conn_rate: Rate,
    pub req_rate: Rate,
    /// TLS handshakes that made a new session (`ssl_sess`), that resumed one
    /// (`ssl_reused_sess`), and that failed (`ssl_failed_handshake`), as HAProxy counts them:
    /// a frontend's with its clients, a backend's and a server's with the servers.
    pub ssl_sess: AtomicU64,
    pub ssl_reused_sess: AtomicU64,
    pub ssl_failed_handshake: AtomicU64,
    /// The HTTP/2 module's counters (a frontend's client connections, a backend's server
    /// connections).
    pub h2: H2Counters,
    /// HTTP/1 client connections now and in all (a frontend's).
    pub h1_open_conns: AtomicU64,
    pub h1_total_conns: AtomicU64,
    /// HTTP/1 transactions in progress (a frontend's): HAProxy's h1 streams.
    pub h1_open_streams: AtomicU64,
    /// Compression: bytes into the compressor and out of it, bytes that passed it unchanged
    /// (`identity`), responses compressed.
    pub comp_in: AtomicU64,
    pub comp_out: AtomicU64,
    pub comp_byp: AtomicU64,
    pub comp_rsp: AtomicU64,
    /// Requests looked up in a cache by this proxy's rules, and those answered from it.
    pub cache_lookups: AtomicU64,
    pub cache_hits: AtomicU64,
}

/// HAProxy 2.6's `h2` statistics module, per proxy: frames received by kind, errors found
/// and what was sent for them, connections now and in all, a backend's streams now and in
/// all. Touched per frame and per connection by the HTTP/2 driver (`http::h2::conn`).
#[derive(Debug, Default)]
pub struct H2Counters {
    pub headers_rcvd: AtomicU64,
    pub data_rcvd: AtomicU64,
    pub settings_rcvd: AtomicU64,
    pub rst_stream_rcvd: AtomicU64,
    pub goaway_rcvd: AtomicU64,
    pub conn_proto_err: AtomicU64,
    pub strm_proto_err: AtomicU64,
    pub rst_stream_resp: AtomicU64,
    pub goaway_resp: AtomicU64,
    pub open_conns: AtomicU64,
    pub open_streams: AtomicU64,
    pub total_conns: AtomicU64,
    pub total_streams: AtomicU64,
}

impl H2Counters {
    /// The counters `clear counters all` clears (the gauges stay).
    fn cumulative(&self) -> [&AtomicU64; 11] {
        [
            &self.headers_rcvd,
            &self.data_rcvd,
            &self.settings_rcvd,
            &self.rst_stream_rcvd,
            &self.goaway_rcvd,
            &self.conn_proto_err,
            &self.strm_proto_err,
            &self.rst_stream_resp,
            &self.goaway_resp,
            &self.total_conns,
            &self.total_streams,
        ]
    }
}

/// The process's TLS counters (`show info`'s `*Ssl*` fields, the Prometheus process
/// families made from them), as HAProxy 2.6 counts them: connections with a TLS layer
/// (clients' and servers', health checks' too) now and in all, connections accepted on TLS
/// binds (`SslRate`), and the full handshakes (new keys) with clients and with servers; the
/// rates are sampled once a second with the proxies'. Touched once per TLS connection.
#[derive(Debug, Default)]
pub struct TlsTotals {
    pub cur: AtomicU64,
    pub cum: AtomicU64,
    pub fe_accepts: AtomicU64,
    pub fe_keys: AtomicU64,
    pub be_keys: AtomicU64,
    pub rate: Rate,
    pub fe_key_rate: Rate,
    pub be_key_rate: Rate,
    pub max_rate: AtomicU64,
    pub max_fe_key_rate: AtomicU64,
    pub max_be_key_rate: AtomicU64,
    /// `maxsslconn` (0: no limit).
    pub max: AtomicU64,
}

/// The process's [`TlsTotals`].
pub fn tls() -> &'static TlsTotals {
    static TLS: std::sync::OnceLock<TlsTotals> = std::sync::OnceLock::new();
    TLS.get_or_init(TlsTotals::default)
}

impl TlsTotals {
    /// Once a second: the rates move on, their peaks are kept.
    pub fn sample(&self) {
        self.rate.tick(&self.fe_accepts, &self.max_rate);
        self.fe_key_rate.tick(&self.fe_keys, &self.max_fe_key_rate);
        self.be_key_rate.tick(&self.be_keys, &self.max_be_key_rate);
    }
}

/// Whether one more connection may get a TLS layer under `maxsslconn` (HAProxy refuses the
/// layer to a connection when the current count has reached it).
#[inline]
pub fn tls_room() -> bool {
    let t = tls();
    let max = t.max.load(Ordering::Relaxed);
    max == 0 || t.cur.load(Ordering::Relaxed) < max
}

/// A connection got a TLS layer: counted in all, and now until the guard drops.
pub fn tls_layer() -> Up<'static> {
    let t = tls();
    Counters::inc(&t.cum);
    Up::new(&t.cur)
}

/// A gauge's one more, given back when dropped.
#[derive(Debug)]
pub struct Up<'a>(&'a AtomicU64);

impl<'a> Up<'a> {
    pub fn new(gauge: &'a AtomicU64) -> Self {
        gauge.fetch_add(1, Ordering::Relaxed);
        Up(gauge)
    }
}

impl Drop for Up<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A TLS handshake's end, counted where HAProxy counts it: on `counters` (a frontend's, or a
/// backend's and its server's for `servers`), and, for a full handshake, in the process's
/// key totals (`fe`: with a client).
pub fn handshake_done(counters: &[&Counters], ok: bool, resumed: bool, fe: bool) {
    for c in counters {
        match (ok, resumed) {
            (false, _) => Counters::inc(&c.ssl_failed_handshake),
            (true, false) => Counters::inc(&c.ssl_sess),
            (true, true) => Counters::inc(&c.ssl_reused_sess),
        }
    }
    if ok && !resumed {
        Counters::inc(if fe { &tls().fe_keys } else { &tls().be_keys });
    }
}

/// Streams the time averages cover (HAProxy's `TIME_STATS_SAMPLES`).
pub const TIME_SAMPLES: u64 = 1024;

/// The time averages' order in [`Counters::times`].
pub const QTIME: usize = 0;
pub const CTIME: usize = 1;
pub const RTIME: usize = 2;
pub const TTIME: usize = 3;

impl Counters {
    pub fn add(field: &AtomicU64, n: u64) {
        field.fetch_add(n, Ordering::Relaxed);
    }
    pub fn inc(field: &AtomicU64) {
        field.fetch_add(1, Ordering::Relaxed);
    }

    /// Raises a maximum. A load first: the store happens only when the maximum moves.
    pub fn raise(field: &AtomicU64, v: u64) {
        if v > field.load(Ordering::Relaxed) {
            field.fetch_max(v, Ordering::Relaxed);
        }
    }

    /// Adds one sample (ms) to time average `which`, and to its maximum. A load and a store,
    /// not a compare-and-swap: two workers adding at the same instant may lose a sample,
    /// which an average over 1,024 of them does not notice.
    pub fn add_time(&self, which: usize, ms: u64) {
        let sum = &self.times[which];
        let old = sum.load(Ordering::Relaxed);
        sum.store(old - old / TIME_SAMPLES + ms, Ordering::Relaxed);
        Self::raise(&self.times_max[which], ms);
    }

    /// The average of time `which` in ms, over the streams seen (at most [`TIME_SAMPLES`]):
    /// HAProxy's `swrate_avg(sum, n)` (rounded up) with `n` the streams counted so far.
    pub fn time_avg(&self, which: usize, streams: u64) -> u64 {
        let n = streams.clamp(1, TIME_SAMPLES);
        self.times[which].load(Ordering::Relaxed).div_ceil(n)
    }

    /// Reads a counter.
    pub fn get(field: &AtomicU64) -> u64 {
        field.load(Ordering::Relaxed)
    }

    /// `clear counters`: the maxima and rates' peaks start over.
    pub fn clear_max(&self) {
        for f in [
            &self.max_sessions,
            &self.max_queue,
            &self.max_sess_rate,
            &self.max_conn_rate,
            &self.max_req_rate,
        ]
        .into_iter()
        .chain(&self.times_max)
        {
            f.store(0, Ordering::Relaxed);
        }
    }

    /// `clear counters all`: every counter starts over.
    pub fn clear_all(&self) {
        self.clear_max();
        for f in [
            &self.sessions,
            &self.bytes_in,
            &self.bytes_out,
            &self.connect_errors,
            &self.retries,
            &self.redispatches,
            &self.queue_timeouts,
            &self.no_server,
            &self.failed_responses,
            &self.denied_req,
            &self.denied_resp,
            &self.denied_conn,
            &self.denied_sess,
            &self.failed_req,
            &self.cli_abrt,
            &self.srv_abrt,
            &self.requests,
            &self.intercepted,
            &self.conns,
            &self.failed_rewrites,
            &self.internal_errors,
            &self.connects,
            &self.reuses,
            &self.last_sess,
            &self.ssl_sess,
            &self.ssl_reused_sess,
            &self.ssl_failed_handshake,
            &self.h1_total_conns,
            &self.comp_in,
            &self.comp_out,
            &self.comp_byp,
            &self.comp_rsp,
            &self.cache_lookups,
            &self.cache_hits,
        ]
        .into_iter()
        .chain(self.h2.cumulative())
        .chain(&self.hrsp)
        .chain(&self.times)
        {
            f.store(0, Ordering::Relaxed);
        }
    }
}

/// Events per second over a sliding second (HAProxy's `freq_ctr`), read from a running total
/// the request path already keeps: once a second a sampler notes the total, and a read adds
/// what happened since to the part of the previous second the window still covers. Counting
/// costs the request path nothing more.
#[derive(Debug, Default)]
pub struct Rate {
    /// The total at the start of the current second.
    start: AtomicU64,
    /// Events during the previous second.
    prev: AtomicU64,
    /// When the current second started (ms since the epoch).
    at_ms: AtomicU64,
}

fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Rate {
    /// Once a second, for the running total `total`: the peak so far raised to the last
    /// second's rate in `max`, then the window moved on.
    pub fn tick(&self, total: &AtomicU64, max: &AtomicU64) {
        let t = Counters::get(total);
        Counters::raise(max, self.read(t));
        self.sample(t);
    }

    /// Called about once a second with the running total.
    pub fn sample(&self, total: u64) {
        let start = self.start.swap(total, Ordering::Relaxed);
        let fresh = self.at_ms.swap(epoch_ms(), Ordering::Relaxed) == 0;
        self.prev.store(if fresh { 0 } else { total.saturating_sub(start) }, Ordering::Relaxed);
    }

    /// Events in the last second, given the running total now.
    pub fn read(&self, total: u64) -> u64 {
        let at = self.at_ms.load(Ordering::Relaxed);
        let elapsed = epoch_ms().saturating_sub(at).min(1000);
        let curr = total.saturating_sub(self.start.load(Ordering::Relaxed));
        curr + self.prev.load(Ordering::Relaxed) * (1000 - elapsed) / 1000
    }
}

/// One refused message.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub when: SystemTime,
    /// The process-wide event number (`event #N`).
    pub event: u32,
    pub src: Option<SocketAddr>,
    /// For a request: the backend it was for, if known; for a response: the frontend.
    pub other: Option<(String, u32)>,
    pub server: Option<(String, u32)>,
    pub buf: Vec<u8>,
    pub error_at: usize,
}

/// Where a proxy keeps its last snapshot.
#[derive(Debug, Default)]
pub struct Slot(Mutex<Option<Box<Snapshot>>>);

impl Slot {
    pub fn get(&self) -> Option<Snapshot> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).as_deref().cloned()
    }

    pub fn set(&self, s: Snapshot) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(s));
    }
}

/// Snapshots taken since the process started (`Total events captured`).
static SNAPSHOTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Snapshots captured so far (`show errors`' `Total events captured`).
pub fn snapshots_taken() -> u32 {
    SNAPSHOTS.load(Ordering::Relaxed)
}

/// Captures a refused message into `slot` (`show errors`, see `stats::snapshots`); `err` locates the error when the head was
/// refused by the parser (`None`: too large or incomplete, the error is at its end).
pub fn capture(
    slot: &Slot,
    buf: &[u8],
    bufsize: usize,
    err: Option<fulcrum_http::HeadError>,
    src: Option<SocketAddr>,
    other: Option<(String, u32)>,
    server: Option<(String, u32)>,
) {
    let buf = &buf[..buf.len().min(bufsize)];
    let error_at = err.map_or(buf.len(), |e| fulcrum_http::error_position(buf, e));
    slot.set(Snapshot {
        when: SystemTime::now(),
        event: SNAPSHOTS.fetch_add(1, Ordering::Relaxed),
        src,
        other,
        server,
        buf: buf.to_vec(),
        error_at,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_counts_since_the_last_sample_and_what_is_left_of_the_second_before() {
        let r = Rate::default();
        r.sample(100);
        assert_eq!(r.read(100), 0, "no past before the first sample");
        r.sample(110);
        let v = r.read(114);
        assert!((4..=14).contains(&v), "{v}");
        r.sample(114);
        assert!(r.read(114) <= 4);
    }
}
