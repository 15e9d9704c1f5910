//! One outcome per stream (a `mode tcp` session or an HTTP transaction): who ended it and in
//! which phase, in HAProxy's vocabulary (configuration.txt §8.5), what the persistence cookie
//! did, the server, the timers, the bytes, retries and queue positions. Both modes fill it in
//! as the stream goes; the log line and the counters read it, and nothing else decides how a
//! stream ended. Must not touch: sockets, rules, servers (it records; it does not act).

use std::time::Duration;

use tokio::time::Instant;

/// Who or what ended the stream: the first letter of the termination state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Cause {
    /// Ended normally (`-`).
    #[default]
    Normal,
    /// The client aborted or closed early (`C`).
    ClientAbort,
    /// The server aborted, refused or answered wrongly at the transport level (`S`).
    ServerAbort,
    /// The proxy ended it: a rule, an invalid message (`P`).
    Proxy,
    /// The proxy answered it itself (`return`, `redirect`) (`L`).
    Local,
    /// Out of a resource (`R`).
    Resource,
    /// An internal error (`I`).
    Internal,
    /// Its server went DOWN and its sessions were shut (`D`).
    Down,
    /// A backup's sessions shut as the active servers came back (`U`).
    Up,
    /// `timeout client` (or `http-request`) expired (`c`).
    ClientTimeout,
    /// `timeout server`, `connect` or `queue` expired (`s`).
    ServerTimeout,
}

impl Cause {
    pub fn letter(self) -> u8 {
        match self {
            Cause::Normal => b'-',
            Cause::ClientAbort => b'C',
            Cause::ServerAbort => b'S',
            Cause::Proxy => b'P',
            Cause::Local => b'L',
            Cause::Resource => b'R',
            Cause::Internal => b'I',
            Cause::Down => b'D',
            Cause::Up => b'U',
            Cause::ClientTimeout => b'c',
            Cause::ServerTimeout => b's',
        }
    }
}

/// Where the stream was when it ended: the second letter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Phase {
    /// Complete (`-`).
    #[default]
    Done,
    /// Waiting for the client's request (`R`).
    Request,
    /// Waiting in a queue for a server slot (`Q`).
    Queue,
    /// Connecting to the server (`C`).
    Connect,
    /// Waiting for the server's response head (`H`).
    Headers,
    /// Moving data (`D`).
    Data,
    /// Held in the tarpit (`T`).
    Tarpit,
}

impl Phase {
    pub fn letter(self) -> u8 {
        match self {
            Phase::Done => b'-',
            Phase::Request => b'R',
            Phase::Queue => b'Q',
            Phase::Connect => b'C',
            Phase::Headers => b'H',
            Phase::Data => b'D',
            Phase::Tarpit => b'T',
        }
    }
}

/// The persistence cookie the client sent (third letter of `%tsc`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CookieIn {
    /// No persistence cookie configured (`-`).
    #[default]
    NotApplicable,
    /// The request had none (`N`).
    None,
    /// It named no known server (`I`).
    Invalid,
    /// It named a server that is down (`D`); the request went elsewhere.
    Down,
    /// It named a usable server, which took the request (`V`).
    Valid,
    /// It was there but not used: `ignore-persist` applied (`U`).
    Unused,
}

impl CookieIn {
    pub fn letter(self) -> u8 {
        match self {
            CookieIn::NotApplicable => b'-',
            CookieIn::None => b'N',
            CookieIn::Invalid => b'I',
            CookieIn::Down => b'D',
            CookieIn::Valid => b'V',
            CookieIn::Unused => b'U',
        }
    }
}

/// What the proxy did with the persistence cookie in the response (fourth letter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CookieOut {
    /// No persistence cookie configured (`-`).
    #[default]
    NotApplicable,
    /// Left as it was (`N`).
    None,
    /// Inserted (`I`).
    Inserted,
    /// Provided by the server and kept (`P`).
    Provided,
    /// Provided by the server and deleted (`D`).
    Deleted,
    /// Rewritten (`R`).
    Rewritten,
}

impl CookieOut {
    pub fn letter(self) -> u8 {
        match self {
            CookieOut::NotApplicable => b'-',
            CookieOut::None => b'N',
            CookieOut::Inserted => b'I',
            CookieOut::Provided => b'P',
            CookieOut::Deleted => b'D',
            CookieOut::Rewritten => b'R',
        }
    }
}

/// The moments a stream passed, read from the clock only when someone reads the timers
/// (a log line): `None` is a stage not reached (HAProxy's -1). A stage passed at once (a free
/// server slot, a reused connection) takes the previous stage's moment, without a clock read.
#[derive(Clone, Copy, Debug, Default)]
pub struct Marks {
    /// The stream began: the connection was accepted, or the previous transaction ended.
    pub start: Option<Instant>,
    /// The first byte of the request arrived (`Ti` ends).
    pub request_begin: Option<Instant>,
    /// The request head was complete (mode tcp: the first connection attempt).
    pub request: Option<Instant>,
    /// A server slot was had (out of the queue, or the tarpit's end).
    pub queue: Option<Instant>,
    /// The server connection was established (or reused).
    pub connect: Option<Instant>,
    /// The response head arrived.
    pub data: Option<Instant>,
}

/// How one stream ended and what it did.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub cause: Cause,
    pub phase: Phase,
    pub cookie_in: CookieIn,
    pub cookie_out: CookieOut,
    /// `ignore-persist` applied: no persistence cookie chose the server, none goes back.
    pub persist_ignored: bool,
    /// The server that took the stream (index in its backend).
    pub server: Option<usize>,
    /// A cache answered instead of a server (its log line names the server `<CACHE>`).
    pub from_cache: bool,
    /// The algorithm the response was compressed with (`res.comp`, `res.comp_algo` in a log
    /// format): set once the response's compression is decided.
    pub comp: Option<fulcrum_config::compression::CompAlgo>,
    /// The status sent to the client (HTTP); `None` without one.
    pub status: Option<u16>,
    /// Bytes from the client (`%U`) and to the client (`%B`).
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Connection attempts retried (`%rc`), and whether the last went to another server
    /// (`option redispatch`: printed `+n`).
    pub retries: u32,
    pub redispatched: bool,
    /// Streams served before this one while it waited in the server's / backend's queue.
    pub srv_queue: u32,
    pub be_queue: u32,
    pub marks: Marks,
    /// The server connection's local and remote addresses, kept when a log line prints
    /// them (`want_server_addrs`).
    pub server_conn: Option<(std::net::SocketAddr, std::net::SocketAddr)>,
    pub want_server_addrs: bool,
}

/// The timers of a stream in milliseconds as HAProxy computes them (configuration.txt §8.4,
/// `sess_build_logline`), `-1` for a stage the stream did not reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timers {
    /// `Th`: handshakes (TLS, PROXY protocol) before the first request.
    pub th: i64,
    /// `Ti`: idle before the request began.
    pub ti: i64,
    /// `TR`: receiving the request head.
    pub tr: i64,
    /// `Tq`: `Th + Ti + TR`.
    pub tq: i64,
    /// `Tw`: waiting for a server slot.
    pub tw: i64,
    /// `Tc`: connecting.
    pub tc: i64,
    /// `Tr`: waiting for the response head.
    pub tresp: i64,
    /// `Td`: moving data (from the response head in mode http, from the connection otherwise).
    pub td: i64,
    /// `Ta`: active (from the request's first byte to the end).
    pub ta: i64,
    /// `Tt`: total.
    pub tt: i64,
    /// `Tu`: total minus idle.
    pub tu: i64,
}

fn ms(d: Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

impl Outcome {
    /// The two-letter termination state (`%ts`).
    pub fn state(&self) -> [u8; 2] {
        [self.cause.letter(), self.phase.letter()]
    }

    /// The four-letter state with the cookie flags (`%tsc`).
    pub fn state_with_cookies(&self) -> [u8; 4] {
        [
            self.cause.letter(),
            self.phase.letter(),
            self.cookie_in.letter(),
            self.cookie_out.letter(),
        ]
    }

    /// A server state change ended the stream (`D`, `U`): that is why it ended when the
    /// stream saw only its server leave (a close, a normal end), in the phase it was in.
    pub fn ended_by_state_change(&mut self, by: Cause, phase: Phase) {
        if matches!(self.cause, Cause::Normal | Cause::ServerAbort) {
            self.cause = by;
            if self.phase == Phase::Done {
                self.phase = phase;
            }
        }
    }

    /// Records the end of a stream: who ended it, where; the first decision stands (an
    /// ending is never decided twice).
    pub fn end(&mut self, cause: Cause, phase: Phase) {
        if self.cause == Cause::Normal && self.phase == Phase::Done {
            self.cause = cause;
            self.phase = phase;
        }
    }

    /// The timers as of `now`; `http`: the backend is in `mode http`.
    pub fn timers(&self, now: Instant, http: bool) -> Timers {
        let m = &self.marks;
        let start = m.start.unwrap_or(now);
        let at = |t: Option<Instant>| t.map_or(-1, |t| ms(t.saturating_duration_since(start)));
        let t_close = at(Some(now));
        let t_idle = at(m.request_begin);
        let t_request = at(m.request);
        let (t_queue, t_connect, t_data) = (at(m.queue), at(m.connect), at(m.data));
        let th = 0;
        let since = |t: i64, from: i64| if t >= 0 { t - from } else { -1 };
        let idle = if t_idle >= 0 { t_idle + th } else { 0 };
        Timers {
            th,
            ti: t_idle,
            tr: if t_request >= 0 { t_request - t_idle - th } else { -1 },
            tq: t_request,
            tw: since(t_queue, t_request),
            tc: since(t_connect, t_queue),
            tresp: since(t_data, t_connect),
            td: match (http, t_data >= 0, t_connect >= 0) {
                (true, true, _) => t_close - t_data,
                (false, _, true) => t_close - t_connect,
                _ => -1,
            },
            ta: t_close - idle,
            tt: t_close,
            tu: t_close - t_idle.max(0),
        }
    }

    /// The time the stream's request began (`%tr`), as a delay before `now`.
    pub fn request_age(&self, now: Instant) -> Duration {
        let m = &self.marks;
        m.request_begin.or(m.start).map_or(Duration::ZERO, |b| now.saturating_duration_since(b))
    }

    /// The time the stream began (`%t`), as a delay before `now`.
    pub fn age(&self, now: Instant) -> Duration {
        self.marks.start.map_or(Duration::ZERO, |s| now.saturating_duration_since(s))
    }
}

/// The size HAProxy counts for a message head in `%B` / `%U` and its byte counters: not the
/// bytes on the wire but its internal (HTX) form: a 20-byte start-line record with the
/// line's three parts, each header's name and value, and one byte that ends the headers. A
/// `Connection` header saying only `close` / `keep-alive` is not part of it (HAProxy's
/// HTTP/1 parser consumes it).
pub fn head_size(head: &fulcrum_http::Head) -> u64 {
    let line = if head.status() == 0 {
        head.method_bytes().len() + head.target().len()
    } else {
        3 + head.reason().len()
    };
    let fields: usize = head
        .headers()
        .filter(|(n, v)| !n.eq_ignore_ascii_case(b"connection") || kept_connection(v))
        .map(|(n, v)| n.len() + v.len())
        .sum();
    (20 + line + head.version().as_bytes().len() + fields + 1) as u64
}

/// A `Connection` value HAProxy keeps (`upgrade` or another token than close/keep-alive).
fn kept_connection(v: &[u8]) -> bool {
    !fulcrum_http::comma_values(v)
        .all(|t| t.eq_ignore_ascii_case(b"close") || t.eq_ignore_ascii_case(b"keep-alive"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_sizes_are_haproxys_internal_sizes() {
        let mut h = fulcrum_http::Head::new();
        let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nSet-Cookie: sid=abc\r\nX-Srv: b\r\nConnection: close\r\n\r\n";
        let limits = fulcrum_http::Limits { max_head: 1024, max_headers: 100 };
        h.parse_response(raw, &limits).expect("parses").expect("complete");
        // As HAProxy 2.6 logs it: 77 bytes with the 5-byte body.
        assert_eq!(head_size(&h) + 5, 77);
        let raw = b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\r\n";
        h.parse_response(raw, &limits).expect("parses").expect("complete");
        assert_eq!(head_size(&h), 20 + 8 + 3 + 19 + 10 + 7 + 1, "an upgrade token stays");
    }

    #[test]
    fn states_spell_haproxy_letters_and_the_first_ending_stands() {
        let mut o = Outcome::default();
        assert_eq!(&o.state_with_cookies(), b"----");
        o.end(Cause::ServerTimeout, Phase::Headers);
        o.end(Cause::ClientAbort, Phase::Data);
        assert_eq!(&o.state(), b"sH");
        o.cookie_in = CookieIn::Valid;
        o.cookie_out = CookieOut::Inserted;
        assert_eq!(&o.state_with_cookies(), b"sHVI");
    }

    #[test]
    fn timers_are_haproxys_differences_of_stages_and_unreached_stages_are_minus_one() {
        let t0 = Instant::now();
        let at = |ms: u64| Some(t0 + Duration::from_millis(ms));
        let mut o = Outcome {
            marks: Marks {
                start: at(0),
                request_begin: at(5),
                request: at(7),
                queue: at(17),
                connect: at(20),
                data: at(40),
            },
            ..Outcome::default()
        };
        let t = o.timers(t0 + Duration::from_millis(100), true);
        assert_eq!(
            t,
            Timers {
                th: 0,
                ti: 5,
                tr: 2,
                tq: 7,
                tw: 10,
                tc: 3,
                tresp: 20,
                td: 60,
                ta: 95,
                tt: 100,
                tu: 95
            }
        );
        assert_eq!(
            o.timers(t0 + Duration::from_millis(100), false).td,
            80,
            "mode tcp: from the connection"
        );
        o.marks.data = None;
        let t = o.timers(t0 + Duration::from_millis(100), true);
        assert_eq!((t.tresp, t.td), (-1, -1));
        assert_eq!(o.request_age(t0 + Duration::from_millis(100)), Duration::from_millis(95));
        // HAProxy's tarpit: no request mark, so Tw counts from -1.
        o.marks = Marks { start: at(0), request_begin: at(0), queue: at(201), ..Marks::default() };
        let t = o.timers(t0 + Duration::from_millis(201), true);
        assert_eq!((t.tr, t.tw, t.tc, t.tt), (-1, 202, -1, 201));
    }
}
