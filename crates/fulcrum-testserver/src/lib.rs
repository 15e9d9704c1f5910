//! `fulcrum testserver`: a fast HTTP/1.1 test server in the spirit of httpterm, plus TCP echo
//! and sink modes, for demos, black-box tests and benchmarks. This file owns the command line
//! ([`Options::parse`], [`main`]) and the runtime: thread-per-core, each thread a current-thread
//! tokio runtime with its own `SO_REUSEPORT` listener per address ([`spawn`] / [`Running`]).

pub mod http;
mod tcp;
pub mod ws;

use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener as StdListener};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What the server does with each connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// HTTP/1.1 answers driven by the query string (`s=`, `c=`, `t=`, `k=`).
    Http,
    /// Echo every byte back; half-close when the client does.
    Echo,
    /// Read and discard; never write.
    Sink,
}

/// Server options (the command line, parsed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Addresses to listen on; port 0 picks a free port (shared by all threads).
    pub listen: Vec<SocketAddr>,
    /// Server name, sent as `X-Server`.
    pub name: String,
    /// Worker threads (each with its own listener per address).
    pub threads: usize,
    pub mode: Mode,
    /// Silence accept-error messages.
    pub quiet: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            listen: vec![SocketAddr::from(([127, 0, 0, 1], 8000))],
            name: "ts".to_string(),
            threads: 1,
            mode: Mode::Http,
            quiet: false,
        }
    }
}

/// Usage text for `-h`.
pub const USAGE: &str = "\
usage: fulcrum testserver [-L <addr:port>]... [-n <name>] [-t <threads>]
                          [--mode http|echo|sink] [-q]
  -L <addr:port>  listen address, repeatable (default 127.0.0.1:8000; port 0 = any free port)
  -n <name>       server name, sent in X-Server (default ts)
  -t <threads>    worker threads (default 1)
  --mode <m>      http (default), echo or sink
  -q              quiet: no error messages
HTTP query parameters: s=<size>[k|m|g] body size, c=<code> status, t=<delay>[us|ms|s]
delay before answering (default ms), k=0 or close=1 close after the response,
echo=head|all|body (or path /echo, or echobody=1) send the request back, chunked=1,
trailers=1, cl=none (close-delimited), hdr=Name:value and setcookie=value (repeatable, %XX-decoded),
info=<1xx> interim answer first, bodyinfo=1 (X-Body-Len, X-Body-Sum), continue=0 (no
100 Continue), drop=1|next (close silently now / at the next request), bad=<kind> (status,
version, space, hdrchar, nul, fold, cl2, badcl, clte, chunk, truncated, partial, empty, reset,
garbage, bighdr, lf), fail=<n> (only the first n requests with this exact target get c=, t=,
drop= and bad=; later ones a plain 200). Upgrade: websocket -> 101 (with Sec-WebSocket-Accept) then echo;
CONNECT -> 200 then echo.
GET /__stats: connections (accepted, closed), requests and bytes received (that connection
not counted).";

/// Parses `-L host:port`; also accepts `:port` and `*:port` for all IPv4 addresses.
fn parse_addr(s: &str) -> Option<SocketAddr> {
    if let Ok(a) = s.parse() {
        return Some(a);
    }
    let port = s.strip_prefix(':').or_else(|| s.strip_prefix("*:"))?;
    Some(SocketAddr::from(([0, 0, 0, 0], port.parse().ok()?)))
}

/// Outcome of parsing the command line without an error.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    Run(Options),
    Help,
}

impl Options {
    /// Parses the arguments following `testserver`.
    pub fn parse(args: &[String]) -> Result<Parsed, String> {
        let mut o = Options::default();
        let mut listen = Vec::new();
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (arg.as_str(), None),
            };
            let mut value = |what: &str| {
                inline
                    .clone()
                    .or_else(|| it.next().cloned())
                    .ok_or_else(|| format!("option {flag} needs {what}"))
            };
            match flag {
                "-L" => {
                    let v = value("an address")?;
                    listen.push(parse_addr(&v).ok_or_else(|| format!("bad address '{v}'"))?);
                }
                "-n" => o.name = value("a name")?,
                "-t" => {
                    let v = value("a thread count")?;
                    o.threads = match v.parse() {
                        Ok(n) if n >= 1 => n,
                        _ => return Err(format!("bad thread count '{v}'")),
                    };
                }
                "--mode" => {
                    let v = value("a mode")?;
                    o.mode = match v.as_str() {
                        "http" => Mode::Http,
                        "echo" => Mode::Echo,
                        "sink" => Mode::Sink,
                        _ => return Err(format!("bad mode '{v}' (http, echo or sink)")),
                    };
                }
                "-q" => o.quiet = true,
                "-h" | "--help" => return Ok(Parsed::Help),
                _ => return Err(format!("unknown argument '{arg}'")),
            }
        }
        if !listen.is_empty() {
            o.listen = listen;
        }
        Ok(Parsed::Run(o))
    }
}

/// What a server received: connections accepted (and since closed), requests parsed (HTTP mode)
/// and raw bytes read, over all threads, since it started. Connections asking for `/__stats` are
/// left out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub conns: u64,
    pub closed: u64,
    pub requests: u64,
    pub bytes: u64,
}

impl Counts {
    /// Connections open now.
    pub fn open(&self) -> u64 {
        self.conns - self.closed
    }
}

/// One thread's counters, on their own cache line.
#[derive(Default)]
#[repr(align(64))]
struct Stats {
    conns: AtomicU64,
    closed: AtomicU64,
    requests: AtomicU64,
    bytes: AtomicU64,
}

/// A connection's handle on the counters: its own thread's slot, and all of them for totals.
#[derive(Clone)]
pub(crate) struct Counter {
    all: Arc<[Stats]>,
    me: usize,
    /// Requests seen per request target carrying `fail=` (shared by all threads).
    seen: Arc<Mutex<HashMap<Vec<u8>, u64>>>,
}

impl Counter {
    fn mine(&self) -> &Stats {
        &self.all[self.me]
    }
    pub(crate) fn conn(&self) {
        self.mine().conns.fetch_add(1, Relaxed);
    }
    pub(crate) fn closed(&self) {
        self.mine().closed.fetch_add(1, Relaxed);
    }
    pub(crate) fn uncount_conn(&self) {
        self.mine().conns.fetch_sub(1, Relaxed);
    }
    pub(crate) fn request(&self) {
        self.mine().requests.fetch_add(1, Relaxed);
    }
    pub(crate) fn bytes(&self, n: usize) {
        self.mine().bytes.fetch_add(n as u64, Relaxed);
    }
    /// How many requests with this target came before this one (`fail=`); counts this one.
    pub(crate) fn attempt(&self, target: &[u8]) -> u64 {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let n = seen.entry(target.to_vec()).or_insert(0);
        *n += 1;
        *n - 1
    }
    pub(crate) fn total(&self) -> Counts {
        let mut c = Counts::default();
        for s in self.all.iter() {
            c.conns += s.conns.load(Relaxed);
            c.closed += s.closed.load(Relaxed);
            c.requests += s.requests.load(Relaxed);
            c.bytes += s.bytes.load(Relaxed);
        }
        c
    }
}

/// A running server: its bound addresses and the handle to stop it. Dropping it stops it too.
pub struct Running {
    addrs: Vec<SocketAddr>,
    stop: watch::Sender<bool>,
    threads: Vec<JoinHandle<()>>,
    stats: Counter,
}

impl Running {
    /// Actual bound addresses, one per `Options::listen` entry, in order.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// The first bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }

    /// What the server received so far (see [`Counts`]).
    pub fn counts(&self) -> Counts {
        self.stats.total()
    }

    /// Stops all threads (closing listeners and connections) and waits for them.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let _ = self.stop.send(true);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn bind(addr: SocketAddr) -> io::Result<StdListener> {
    bind_inner(addr).map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))
}

fn bind_inner(addr: SocketAddr) -> io::Result<StdListener> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    sock.set_reuse_address(true)?;
    sock.set_reuse_port(true)?;
    sock.set_nonblocking(true)?;
    sock.bind(&addr.into())?;
    sock.listen(1024)?;
    Ok(sock.into())
}

/// Binds every listener and starts the worker threads; returns once all are listening.
pub fn spawn(opts: Options) -> io::Result<Running> {
    let threads = opts.threads.max(1);
    if opts.listen.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no listen address"));
    }
    // per_thread[t] = that thread's listeners, one per address.
    let mut per_thread: Vec<Vec<StdListener>> = (0..threads).map(|_| Vec::new()).collect();
    let mut addrs = Vec::with_capacity(opts.listen.len());
    for &want in &opts.listen {
        let first = bind(want)?;
        let actual = first.local_addr()?;
        per_thread[0].push(first);
        for listeners in per_thread.iter_mut().skip(1) {
            listeners.push(bind(actual)?);
        }
        addrs.push(actual);
    }
    let (stop, stop_rx) = watch::channel(false);
    let fixed = http::fixed_headers(&opts.name);
    let all: Arc<[Stats]> = (0..threads).map(|_| Stats::default()).collect();
    let seen = Arc::new(Mutex::new(HashMap::new()));
    let mut running = Running {
        addrs,
        stop,
        threads: Vec::with_capacity(threads),
        stats: Counter { all: all.clone(), me: 0, seen: seen.clone() },
    };
    for (i, listeners) in per_thread.into_iter().enumerate() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build()?;
        let mut stop_rx = stop_rx.clone();
        let fixed = fixed.clone();
        let (mode, quiet) = (opts.mode, opts.quiet);
        let ctr = Counter { all: all.clone(), me: i, seen: seen.clone() };
        let handle = std::thread::Builder::new().name(format!("ts-{i}")).spawn(move || {
            rt.block_on(async move {
                for l in listeners {
                    match TcpListener::from_std(l) {
                        Ok(l) => drop(tokio::spawn(accept_loop(
                            l,
                            mode,
                            fixed.clone(),
                            quiet,
                            ctr.clone(),
                        ))),
                        Err(e) if !quiet => eprintln!("testserver: listener: {e}"),
                        Err(_) => {}
                    }
                }
                let _ = stop_rx.wait_for(|stopped| *stopped).await;
            });
            // Dropping the runtime here cancels every connection task and closes its socket.
        })?;
        running.threads.push(handle);
    }
    Ok(running)
}

async fn accept_loop(
    listener: TcpListener,
    mode: Mode,
    fixed: Arc<[u8]>,
    quiet: bool,
    ctr: Counter,
) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                ctr.conn();
                drop(tokio::spawn(handle(stream, mode, fixed.clone(), ctr.clone())));
            }
            Err(e) => {
                // Typically EMFILE/ENFILE: back off instead of spinning.
                if !quiet {
                    eprintln!("testserver: accept: {e}");
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

async fn handle(stream: TcpStream, mode: Mode, fixed: Arc<[u8]>, ctr: Counter) {
    let counted = match mode {
        Mode::Http => http::serve(stream, fixed, &ctr).await,
        Mode::Echo => {
            tcp::echo(stream, &ctr).await;
            true
        }
        Mode::Sink => {
            tcp::sink(stream, &ctr).await;
            true
        }
    };
    if counted {
        ctr.closed();
    }
}

/// Entry point for `fulcrum testserver <args>`: returns the process exit code
/// (0 after SIGTERM/SIGINT, 1 on a runtime error, 2 on bad arguments).
pub fn main(args: &[String]) -> i32 {
    let opts = match Options::parse(args) {
        Ok(Parsed::Run(o)) => o,
        Ok(Parsed::Help) => {
            println!("{USAGE}");
            return 0;
        }
        Err(e) => {
            eprintln!("testserver: {e}\n{USAGE}");
            return 2;
        }
    };
    match run(opts) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("testserver: {e}");
            1
        }
    }
}

fn run(opts: Options) -> io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let rt = tokio::runtime::Builder::new_current_thread().enable_io().build()?;
    // Install the handlers before announcing the ports, so a prompt SIGTERM is not fatal.
    let (mut term, mut int) = {
        let _guard = rt.enter();
        (signal(SignalKind::terminate())?, signal(SignalKind::interrupt())?)
    };
    let running = spawn(opts)?;
    {
        let mut out = io::stdout().lock();
        for a in running.addrs() {
            let _ = writeln!(out, "listening on {a}");
        }
        let _ = out.flush();
    }
    rt.block_on(async {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    });
    running.stop();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn cli() {
        assert_eq!(Options::parse(&[]), Ok(Parsed::Run(Options::default())));
        let Ok(Parsed::Run(o)) =
            Options::parse(&args("-L 127.0.0.1:0 -L [::1]:81 -n s1 -t 2 --mode echo -q"))
        else {
            panic!("parse failed");
        };
        assert_eq!(
            o.listen,
            vec!["127.0.0.1:0".parse().expect("addr"), "[::1]:81".parse().expect("addr")]
        );
        assert_eq!((o.name.as_str(), o.threads, o.mode, o.quiet), ("s1", 2, Mode::Echo, true));
        let Ok(Parsed::Run(o)) = Options::parse(&args("--mode=sink -L :9000")) else {
            panic!("parse failed");
        };
        assert_eq!(o.mode, Mode::Sink);
        assert_eq!(o.listen, vec!["0.0.0.0:9000".parse().expect("addr")]);
        assert_eq!(Options::parse(&args("-h")), Ok(Parsed::Help));
        for bad in ["-L", "-L nope", "-t 0", "-t x", "--mode ftp", "-x", "extra"] {
            assert!(Options::parse(&args(bad)).is_err(), "{bad}");
        }
        assert_eq!(main(&args("-t 0")), 2);
    }
}
