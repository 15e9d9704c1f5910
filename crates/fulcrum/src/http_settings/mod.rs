//! A proxy's `mode http` settings as the plan compiles them: timeouts, connection mode,
//! `http-reuse`, `forwardfor`/`originalto`, error messages (`messages`), limits, the balance
//! key, `retry-on`. Held by frontends and backends, read by `http` sessions.
//!
//! Must not touch: sessions, sockets, rules.

use std::net::IpAddr;

pub mod case;
pub mod messages;

use messages::Messages;

/// `option http-keep-alive` (default) / `http-server-close` / `httpclose`, in the order of
/// strictness (a transaction takes the stricter of its proxies').
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConnMode {
    #[default]
    KeepAlive,
    /// Keep the client connection, close the server one after each response.
    ServerClose,
    /// Close both after each response.
    Close,
}

/// `http-reuse`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reuse {
    /// Server connections stay private to the session that opened them.
    Never,
    /// A session's first request gets its own connection; later ones may use idle ones.
    #[default]
    Safe,
    /// Like safe, but a first request may use an idle connection that was already reused.
    Aggressive,
    /// Any request may use any idle connection.
    Always,
}

/// `option forwardfor` / `option originalto`.
#[derive(Clone, Debug)]
pub struct AddrHeader {
    pub header: String,
    /// `except <net>`: source addresses in it get no header.
    pub except: Option<(IpAddr, u8)>,
    /// `if-none`: only add when the request has no such header.
    pub if_none: bool,
}

impl AddrHeader {
    pub fn excepted(&self, ip: IpAddr) -> bool {
        match self.except {
            Some((net, bits)) => ip_in(ip, net, bits),
            None => false,
        }
    }
}

/// Whether `ip` is inside `net/bits` (an IPv4 address also matches its IPv6-mapped form).
pub fn ip_in(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    fn v6(ip: IpAddr) -> (u128, u8) {
        match ip {
            IpAddr::V4(a) => (u128::from(a.to_ipv6_mapped()), 96),
            IpAddr::V6(a) => (u128::from(a), 0),
        }
    }
    let (a, _) = v6(ip);
    let (n, extra) = v6(net);
    let bits = u32::from(bits) + u32::from(extra);
    if bits == 0 {
        return true;
    }
    let mask = u128::MAX << (128 - bits.min(128));
    a & mask == n & mask
}

/// The HTTP settings of a frontend or backend.
#[derive(Debug)]
pub struct HttpProxy {
    pub conn_mode: ConnMode,
    pub reuse: Reuse,
    pub forwardfor: Option<AddrHeader>,
    pub originalto: Option<AddrHeader>,
    /// `http-send-name-header`.
    pub send_name_header: Option<Box<str>>,
    /// The most bytes of a request line the logs keep (`tune.http.logurilen` - 1).
    pub log_uri_max: usize,
    pub messages: Messages,
    /// `tune.bufsize` / `tune.http.maxhdr` limits on a received message head.
    pub limits: fulcrum_http::Limits,
    /// `tune.bufsize`: the largest head after rewrites.
    pub bufsize: usize,
    /// The body is awaited (up to a buffer) before its rules: `option http-buffer-request`, or
    /// an `fcgi-app` (HAProxy's FastCGI filter does so); for a frontend or `listen` before
    /// its rules, for a backend as it is chosen.
    pub waits_body: bool,
    /// `monitor-uri`.
    pub monitor_uri: Option<String>,
    /// `cookie`: persistence cookie settings (backend).
    pub cookie: Option<fulcrum_config::CookieCfg>,
    /// What `balance uri|url_param|hdr` hashes (backend).
    pub hash_key: HashKey,
    /// `option http-ignore-probes`: a connection closed or timed out before sending anything
    /// gets no 400/408.
    pub ignore_probes: bool,
    /// `option accept-invalid-http-request` (a frontend's) and `accept-invalid-http-response`
    /// (a backend's): HTTP/1 heads parsed leniently, what was let through kept for `show errors`.
    pub accept_invalid_req: bool,
    pub accept_invalid_resp: bool,
    /// `option disable-h2-upgrade`: no HTTP/2 on an HTTP/1 connection that starts with its
    /// preface.
    pub disable_h2_upgrade: bool,
    /// `h1-accept-payload-with-any-method` (global).
    pub any_method_payload: bool,
    /// `h1-case-adjust` with `option h1-case-adjust-bogus-client` (responses to HTTP/1
    /// clients) and `option h1-case-adjust-bogus-server` (requests to HTTP/1 servers).
    pub case_client: Option<std::sync::Arc<case::CaseMap>>,
    pub case_server: Option<std::sync::Arc<case::CaseMap>>,
    /// `retry-on`: what makes a request go again to a server (on a new connection).
    pub retry_on: RetryOn,
    /// `compression` (a `mode http` proxy's), with the process's `tune.comp.maxlevel`.
    pub compression: Option<std::sync::Arc<fulcrum_config::compression::Compression>>,
    /// The proxy's compression filter's place among a stream's filters (an explicit `filter
    /// compression`, or the implicit one after the others; see `bwlim::Filter::order`).
    pub comp_filter: Option<u32>,
    pub comp_level: u32,
    /// `tune.zlib.windowsize`: the deflate window, in bits (9 to 15; zlib takes 8 as 9).
    pub comp_window: u8,
    /// `filter trace` lines (see `http::trace`).
    pub traces: Vec<std::sync::Arc<fulcrum_config::filters::TraceFilter>>,
    /// `use-fcgi-app` (backend): the application its `proto fcgi` servers run.
    pub fcgi: Option<std::sync::Arc<FcgiApp>>,
}

/// An `fcgi-app` section as its FastCGI requests use it (`http::fcgi`).
#[derive(Debug)]
pub struct FcgiApp {
    pub docroot: String,
    pub index: Option<String>,
    /// `path-info`: its first capture is the script name, its second the path info.
    pub path_info: Option<fulcrum_pattern::Rx>,
    /// `option keep-conn`: the application keeps the connection for the next request.
    pub keep_conn: bool,
    /// `option get-values`: a new connection asks `FCGI_MAX_REQS` and `FCGI_MPXS_CONNS` first.
    pub get_values: bool,
    /// `option mpxs-conns`: the application multiplexes requests on a connection.
    pub mpxs_conns: bool,
    /// `option max-reqs`: requests at once on a connection (1 unless `mpxs-conns` or
    /// `get-values`, as HAProxy's check leaves it).
    pub max_reqs: u32,
    /// `log-stderr`: where the application's `STDERR` records go.
    pub stderr: Option<crate::log::syslog::Logger>,
}

/// A request header HAProxy 2.6 keeps from FastCGI applications unless `pass-header` names it
/// (`Authorization`, and the hop-by-hop ones).
pub fn fcgi_hides(name: &[u8]) -> bool {
    fulcrum_config::fcgi_app::HIDDEN_HEADERS.iter().any(|h| name.eq_ignore_ascii_case(h.as_bytes()))
}

/// `retry-on`, as flags. Connection failures are retried per `retries` unless `none`.
#[derive(Clone, Copy, Debug, Default)]
pub struct RetryOn {
    pub conn_failure: bool,
    pub empty_response: bool,
    pub junk_response: bool,
    pub response_timeout: bool,
    /// Statuses whose answer is dropped and the request sent again (bit per listed code).
    pub statuses: [bool; 10],
}

/// The statuses `retry-on` may name, in the order of [`RetryOn::statuses`].
pub const RETRY_STATUSES: [u16; 10] = [401, 403, 404, 408, 425, 500, 501, 502, 503, 504];

impl RetryOn {
    pub fn status(&self, code: u16) -> bool {
        RETRY_STATUSES.iter().position(|&c| c == code).is_some_and(|i| self.statuses[i])
    }
}

/// What a hash-based `balance` hashes from the request.
#[derive(Clone, Debug, Default)]
pub enum HashKey {
    /// The client's address (`source`, and every non-HTTP algorithm).
    #[default]
    Source,
    /// No key (`rdp-cookie`, which reads only a `mode tcp` connection's first bytes): round
    /// robin, as HAProxy 2.6 falls back to.
    Nothing,
    Uri {
        depth: Option<u32>,
        len: Option<u32>,
        whole: bool,
        path_only: bool,
    },
    UrlParam(String),
    Hdr {
        name: String,
        domain_only: bool,
    },
}

/// What `balance hdr(<name>) [use_domain_only]` hashes of the header's value, as HAProxy's
/// `get_server_hh()`: the first comma-separated element (`http_find_header()`); `None` when it
/// is empty (round robin then). With `use_domain_only`, only the label before the last dot
/// (`www.example.com:8080` -> `example`): the end is the last dot after the first byte, the
/// start follows the dot before it, never the byte just before the end (`x..com` -> `x.`); a
/// value without such a dot is hashed whole.
pub fn hdr_hash_key(value: &[u8], domain_only: bool) -> Option<&[u8]> {
    let v = fulcrum_http::comma_values(value).next().filter(|v| !v.is_empty())?;
    if !domain_only {
        return Some(v);
    }
    let Some(end) = (1..v.len()).rev().find(|&i| v[i] == b'.') else { return Some(v) };
    let start = (0..end.saturating_sub(1)).rev().find(|&i| v[i] == b'.').map_or(0, |i| i + 1);
    Some(&v[start..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn use_domain_only_hashes_the_label_before_the_last_dot_as_haproxy() {
        let key = |v: &str| {
            hdr_hash_key(v.as_bytes(), true).map(|k| String::from_utf8_lossy(k).into_owned())
        };
        for host in ["www.example.com", "example.com", "a.b.example.com:8080", "api.example.org"] {
            assert_eq!(key(host).as_deref(), Some("example"), "{host}");
        }
        assert_eq!(key("localhost").as_deref(), Some("localhost"));
        assert_eq!(key(".com").as_deref(), Some(".com"));
        assert_eq!(key("example.com.").as_deref(), Some("com"));
        assert_eq!(key("x..com").as_deref(), Some("x."));
        assert_eq!(key("a.com").as_deref(), Some("a"));
        assert_eq!(key(""), None);
        // HAProxy's hash of those keys (sdbm, the default `hash-type`), computed apart from this
        // code from hash_sdbm()'s definition: the server is this modulo the total weight.
        let sdbm =
            |v: &str| fulcrum_balance::hash_sdbm(hdr_hash_key(v.as_bytes(), true).expect("key"));
        assert_eq!(sdbm("www.example.com"), 2_806_477_450);
        assert_eq!(sdbm("static.example.com"), 2_806_477_450);
        assert_eq!(sdbm("example.com."), 825_170_593);
        assert_eq!(sdbm("haproxy.org"), 248_846_773);
    }

    #[test]
    fn hdr_hashes_the_first_element_of_the_value() {
        assert_eq!(hdr_hash_key(b" a, b", false), Some(&b"a"[..]));
        assert_eq!(hdr_hash_key(b"www.example.com", false), Some(&b"www.example.com"[..]));
        assert_eq!(hdr_hash_key(b"  ", false), None);
        assert_eq!(hdr_hash_key(b", b", false), None);
    }

    #[test]
    fn ip_in_matches_v4_and_v6_networks() {
        let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
        assert!(ip_in(ip("10.1.2.3"), ip("10.0.0.0"), 8));
        assert!(!ip_in(ip("11.1.2.3"), ip("10.0.0.0"), 8));
        assert!(ip_in(ip("127.0.0.1"), ip("127.0.0.1"), 32));
        assert!(ip_in(ip("::1"), ip("::1"), 128));
        assert!(ip_in(ip("2001:db8::5"), ip("2001:db8::"), 32));
        assert!(ip_in(ip("1.2.3.4"), ip("0.0.0.0"), 0));
        assert!(ip_in(ip("::ffff:10.0.0.1"), ip("10.0.0.0"), 8));
    }
}
