//! Session log lines in HAProxy's `option tcplog` format (configuration.txt §8.2.2), written to
//! stderr under `-d` until the `log` keyword arrives. Owns the mapping from a session's outcome
//! to HAProxy's two-letter termination state (§8.5). Reads counters; changes nothing.

pub mod syslog;

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::backend::{AcquireError, Backend};
use crate::frontend::Frontend;
use crate::tcp::tunnel::TunnelEnd;
use crate::tcp::{Ending, Outcome};

/// `-q`: no warnings or alerts on stderr once started.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Silences [`warning`] and [`alert`] (`-q`).
pub fn set_quiet(on: bool) {
    QUIET.store(on, Ordering::Relaxed);
}

/// A run-time event as HAProxy's `ha_warning()` prints it: `[WARNING]  (pid) : <msg>.` on
/// stderr (server state changes, check results). The logging issue routes them to syslog too.
pub fn warning(msg: &str) {
    emit("[WARNING]  ", msg);
}

/// As HAProxy's `ha_alert()` (`backend 'app' has no server available!`).
pub fn alert(msg: &str) {
    emit("[ALERT]    ", msg);
}

fn emit(tag: &str, msg: &str) {
    if QUIET.load(Ordering::Relaxed) {
        return;
    }
    let end = if msg.ends_with('!') { "" } else { "." };
    eprintln!("{tag}({}) : {msg}{end}", std::process::id());
}

/// The line HAProxy logs at each stream's start when no log format is set:
/// `Connect from 10.0.0.1:51000 to 10.0.0.2:80 (fe/HTTP)`.
pub fn connect_line(
    client: Option<SocketAddr>,
    dst: Option<SocketAddr>,
    fe: &str,
    http: bool,
) -> String {
    let mode = if http { "HTTP" } else { "TCP" };
    match (client, dst) {
        (Some(c), Some(d)) => {
            format!("Connect from {}:{} to {}:{} ({fe}/{mode})", c.ip(), c.port(), d.ip(), d.port())
        }
        (Some(c), None) => {
            format!("Connect from {}:{} to undetermined address:0 ({fe}/{mode})", c.ip(), c.port())
        }
        // A UNIX socket: only the listener is known.
        (None, _) => format!("Connect to unix:1 ({fe}/{mode})"),
    }
}

/// HAProxy's termination state: who ended the session, and in which phase.
pub fn termination_state(e: Ending) -> &'static str {
    match e {
        Ending::Done => "--",
        Ending::Tunnel(TunnelEnd::Done) => "--",
        Ending::Tunnel(TunnelEnd::ClientError) => "CD",
        Ending::Tunnel(TunnelEnd::ServerError) => "SD",
        Ending::Tunnel(TunnelEnd::ClientTimeout) => "cD",
        Ending::Tunnel(TunnelEnd::ServerTimeout) => "sD",
        Ending::NoServer(AcquireError::QueueTimeout) => "sQ",
        Ending::NoServer(AcquireError::QueueFull) => "SQ",
        Ending::NoServer(AcquireError::NoServer) => "SC",
        Ending::ConnectFailed => "SC",
        Ending::ClientAborted => "CC",
    }
}

/// `[21/Nov/2026:10:11:12.345]` in UTC.
fn write_date(out: &mut String, now: SystemTime) {
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let d = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86400, secs % 86400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let _ = write!(
        out,
        "[{day:02}/{}/{year}:{:02}:{:02}:{:02}.{:03}]",
        MONTHS[(month - 1) as usize],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    );
}

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

/// One `tcplog` line:
/// `client [date] frontend backend/server Tw/Tc/Tt bytes state actconn/feconn/beconn/srvconn/retries srv_queue/be_queue`.
pub fn tcp_line(
    client: Option<SocketAddr>,
    fe: &Frontend,
    be: &Backend,
    o: &Outcome,
    total: Duration,
    actconn: u32,
) -> String {
    let mut s = String::with_capacity(160);
    match client {
        Some(a) => {
            let _ = write!(s, "{}:{} ", a.ip(), a.port());
        }
        None => s.push_str("unix:1 "),
    }
    write_date(&mut s, SystemTime::now() - total);
    let server = o.server.map(|i| be.servers[i].name.as_str()).unwrap_or("<NOSRV>");
    let tc = if o.server.is_some() && o.ending != Ending::ConnectFailed {
        ms(o.connect).to_string()
    } else {
        "-1".into()
    };
    let _ = write!(
        s,
        " {} {}/{server} {}/{tc}/{} {} {} {actconn}/{}/{}/{}/{} {}/{}",
        fe.name,
        be.name,
        ms(o.queue_wait),
        ms(total),
        o.moved.server_to_client,
        termination_state(o.ending),
        fe.limit.current(),
        be.active_sessions(),
        o.server.map(|i| be.servers[i].cur_conns()).unwrap_or(0),
        o.retries,
        o.server.map(|i| be.server_queued(i)).unwrap_or(0),
        be.queued(),
    );
    s
}

/// What an HTTP transaction reports for its `httplog` line.
pub struct HttpLog<'a> {
    pub client: Option<SocketAddr>,
    pub frontend: &'a str,
    pub backend: &'a str,
    pub server: &'a str,
    /// Time to receive the request head (TR), to get a server slot (Tw), to connect (Tc), to
    /// get the response head (Tr); total (Ta). `None` prints -1.
    pub tr: Option<Duration>,
    pub tw: Option<Duration>,
    pub tc: Option<Duration>,
    pub trsp: Option<Duration>,
    pub ta: Duration,
    pub status: u16,
    pub bytes: u64,
    /// HAProxy's termination state (two letters).
    pub state: &'a str,
    pub request_line: &'a [u8],
}

/// One `httplog` line (configuration.txt §8.2.3), without the cookie and header captures:
/// `client [date] frontend backend/server TR/Tw/Tc/Tr/Ta status bytes - - state "request"`.
pub fn http_line(l: &HttpLog<'_>) -> String {
    let mut s = String::with_capacity(200);
    match l.client {
        Some(a) => {
            let _ = write!(s, "{}:{} ", a.ip(), a.port());
        }
        None => s.push_str("unix:1 "),
    }
    write_date(&mut s, SystemTime::now() - l.ta);
    let t = |d: Option<Duration>| d.map_or("-1".to_string(), |d| ms(d).to_string());
    let _ = write!(
        s,
        " {} {}/{} {}/{}/{}/{}/{} {} {} - - {}-- \"{}\"",
        l.frontend,
        l.backend,
        l.server,
        t(l.tr),
        t(l.tw),
        t(l.tc),
        t(l.trsp),
        ms(l.ta),
        l.status,
        l.bytes,
        l.state,
        String::from_utf8_lossy(l.request_line),
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_written_as_haproxy_does() {
        let mut s = String::new();
        write_date(&mut s, UNIX_EPOCH + Duration::from_millis(1_795_259_472_345));
        assert_eq!(s, "[21/Nov/2026:11:11:12.345]");
        let mut s = String::new();
        write_date(&mut s, UNIX_EPOCH + Duration::from_secs(951_782_400)); // 2000-02-29
        assert_eq!(s, "[29/Feb/2000:00:00:00.000]");
    }

    #[test]
    fn termination_states_name_side_and_phase() {
        assert_eq!(termination_state(Ending::Done), "--");
        assert_eq!(termination_state(Ending::Tunnel(TunnelEnd::ClientTimeout)), "cD");
        assert_eq!(termination_state(Ending::Tunnel(TunnelEnd::ServerError)), "SD");
        assert_eq!(termination_state(Ending::NoServer(AcquireError::QueueTimeout)), "sQ");
        assert_eq!(termination_state(Ending::ConnectFailed), "SC");
    }
}
