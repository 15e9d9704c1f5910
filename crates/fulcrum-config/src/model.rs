//! The typed configuration model: what a parsed and validated HAProxy configuration means.
//!
//! Produced by the parser (`crate::load`), consumed by the engine's runtime plan. Holds plain data
//! only: no sockets, no resolution of host names (that is I/O and belongs to the engine), no
//! runtime state. Every item keeps the [`Span`] it came from so later stages can still point at
//! the config line that caused a problem.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

mod auth;
mod check;
mod http;
mod sample;
mod stick;
mod textconv;
mod tls;
pub use auth::*;
pub use check::*;
pub use http::*;
pub use sample::*;
pub use stick::*;
pub use textconv::*;
pub use tls::*;

/// Where a piece of configuration came from: file name and 1-based line number.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Span {
    pub file: Arc<str>,
    pub line: u32,
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A whole configuration: one merged `global` and the proxies in file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    pub global: Global,
    /// Frontends, backends and listens, in the order they appear. A `listen` is one proxy with
    /// both capabilities.
    pub proxies: Vec<Proxy>,
    /// `http-errors <name>` sections, in order.
    pub http_errors: Vec<HttpErrorsSection>,
    /// `userlist <name>` sections, in order.
    pub userlists: Vec<Userlist>,
    /// `ring <name>` sections.
    pub rings: Vec<crate::logfwd::Ring>,
    /// `log-forward <name>` sections.
    pub log_forwards: Vec<crate::logfwd::LogForward>,
    /// `cache <name>` sections, in order.
    pub caches: Vec<crate::cache::CacheSection>,
    /// `mailers <name>` sections, in order.
    pub mailers: Vec<crate::mailers::MailersSection>,
    /// `fcgi-app <name>` sections, in order.
    pub fcgi_apps: Vec<crate::fcgi_app::FcgiApp>,
}

impl Config {
    pub fn proxy(&self, name: &str) -> Option<&Proxy> {
        self.proxies.iter().find(|p| p.name == name)
    }
    /// Proxies that accept connections (`frontend` and `listen`).
    pub fn frontends(&self) -> impl Iterator<Item = &Proxy> {
        self.proxies.iter().filter(|p| p.kind.is_frontend())
    }
    /// Something would accept connections: a `frontend` or `listen` with a `bind` line, or a
    /// stats socket (HAProxy then runs health checks and its CLI alone). Without one, HAProxy's
    /// `-c` says the file "will not start" (status 2) and a start fails.
    pub fn has_listener(&self) -> bool {
        self.frontends().any(|p| !p.disabled && !p.binds.is_empty())
            || !self.global.stats_sockets.is_empty()
    }
    /// Proxies that hold servers (`backend` and `listen`).
    pub fn backends(&self) -> impl Iterator<Item = &Proxy> {
        self.proxies.iter().filter(|p| p.kind.is_backend())
    }
}

/// A global `set-var` / `set-var-fmt`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobalVar {
    pub span: Span,
    /// The `proc.` variable's name.
    pub name: String,
    pub value: GlobalVarValue,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GlobalVarValue {
    Expr(SampleExpr),
    Fmt(LogFormat),
}

/// The `global` section (several `global` sections are merged in order).
#[derive(Clone, Debug, PartialEq)]
pub struct Global {
    /// `set-var` / `set-var-fmt` lines, in order.
    pub set_vars: Vec<GlobalVar>,
    /// `lua-load`, `lua-prepend-path`, `tune.lua.*`.
    pub lua: crate::lua::LuaGlobal,
    pub daemon: bool,
    /// `quiet`: no message at start-up but alerts (as `-q`).
    pub quiet: bool,
    /// `zero-warning`: a warning makes the configuration fail (as `-dW`).
    pub zero_warning: bool,
    /// `setenv`, `presetenv`, `unsetenv`, `resetenv`: what they changed, for the program to
    /// apply to its environment (the configuration's lines already saw the changes).
    pub env_changes: crate::env_set::Changes,
    /// `unix-bind`: defaults of the proxies' UNIX binds (applied to them once parsed).
    pub unix_bind: crate::unix_bind::UnixBind,
    /// `nbthread`; `None` means "as many as the CPUs the process may use".
    pub nbthread: Option<u32>,
    /// Process-wide `maxconn`; `None` means derived from the file-descriptor limit.
    pub maxconn: Option<u32>,
    /// `maxconnrate`, `maxsessrate`: new connections / sessions per second (`None`: no limit).
    pub maxconnrate: Option<u32>,
    pub maxsessrate: Option<u32>,
    /// `maxsslrate`: new connections per second on TLS binds, process-wide (`None`: no limit).
    pub maxsslrate: Option<u32>,
    /// `maxcomprate`: kilobytes per second into the compressor, process-wide (`None`: no limit).
    pub maxcomprate: Option<u32>,
    /// `maxcompcpuusage`: HAProxy's `compress_min_idle` (100 minus the value): no compression
    /// begins, and the level of those under way is lowered, while a worker's idle share of
    /// the last second is below it (0: no limit).
    pub comp_min_idle: i64,
    pub pidfile: Option<PathBuf>,
    pub cpu_map: Vec<CpuMap>,
    /// `ulimit-n`.
    pub ulimit_n: Option<u64>,
    /// `user` / `uid`: drop privileges to this user after binding.
    pub user: Option<UserSpec>,
    /// `group` / `gid`.
    pub group: Option<UserSpec>,
    /// Where `user` / `uid` and `group` / `gid` were set (a name is looked up at start, and
    /// an unknown one named by its line, as HAProxy does while parsing).
    pub user_at: Option<Span>,
    pub group_at: Option<Span>,
    /// `tune.bufsize` (HAProxy's default 16384): the largest request or response head.
    pub tune_bufsize: usize,
    /// `tune.maxrewrite` (default 1024, at most half a buffer): the part of a buffer kept free
    /// for rewrites; a head must fit in the rest.
    pub tune_maxrewrite: usize,
    /// `tune.pool-low-fd-ratio` (20) and `tune.pool-high-fd-ratio` (25): the shares of the
    /// process's descriptors in use above which an idle server connection is kept only as a
    /// server's first of the thread, and above which none is kept.
    pub tune_pool_low_fd_ratio: u32,
    /// `tune.comp.maxlevel`: the compression level (1 to 9; 1 by default, as HAProxy).
    pub tune_comp_maxlevel: u32,
    pub tune_pool_high_fd_ratio: u32,
    /// `tune.http.maxhdr` (default 101): the most header lines a message may have.
    pub tune_http_maxhdr: u32,
    /// The room for a request line in the logs (`%r`), counting HAProxy's terminating byte:
    /// 1,024 by default (1,023 bytes logged), `tune.http.logurilen` + 1 when set (as HAProxy
    /// 2.6 logs them: 100 bytes for `tune.http.logurilen 100`).
    pub tune_http_logurilen: u32,
    /// `tune.h2.*`: the settings HTTP/2 connections announce.
    pub tune_h2: TuneH2,
    /// `tune.maxaccept` (default [`DEFAULT_MAXACCEPT`]): connections a listener accepts per
    /// wake-up before other work runs; `None` when set to a negative value (no limit).
    pub tune_maxaccept: Option<u32>,
    /// `tune.rcvbuf.client` / `tune.sndbuf.client`: kernel buffer sizes forced on client
    /// connections (set on the listening sockets, which accepted ones inherit).
    pub client_bufs: SocketBuffers,
    /// `tune.rcvbuf.server` / `tune.sndbuf.server`: the same on server connections.
    pub server_bufs: SocketBuffers,
    /// `spread-checks <0..50>`: percent of random jitter added to check intervals.
    pub spread_checks: u32,
    /// `max-spread-checks <time>`: the first checks of all servers start within this delay
    /// (instead of within the smallest check interval).
    pub max_spread_checks: Option<Duration>,
    /// `log` lines: the global log targets (`log global` in a proxy refers to them).
    pub logs: Vec<LogEntry>,
    /// `log-send-hostname [<name>]`: the host name syslog headers carry (the machine's name
    /// when given without one).
    pub log_send_hostname: Option<Option<String>>,
    /// `log-tag`: the tag of syslog headers (the program's name otherwise).
    pub log_tag: Option<String>,
    /// `node`: this node's name (the host name otherwise).
    pub node: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `hard-stop-after`: how long a soft stop may last before the remaining sessions are cut.
    pub hard_stop_after: Option<std::time::Duration>,
    /// `chroot`: the directory the process confines itself to once started.
    pub chroot: Option<PathBuf>,
    /// `grace`: how long the listeners keep accepting after a soft stop is asked for.
    pub grace: Option<std::time::Duration>,
    /// `set-dumpable`: the process stays dumpable (core files) after changing user.
    pub set_dumpable: bool,
    /// `insecure-fork-wanted`: the process may start programs (external checks).
    pub insecure_fork_wanted: bool,
    /// The process and tuning knobs of [`crate::tune`].
    pub tune: crate::tune::Tune,
    /// `h1-case-adjust`, `h1-case-adjust-file`.
    pub h1_case: crate::h1_case::CaseAdjust,
    /// `external-check`: proxies may use external checks.
    pub external_check: bool,
    /// `localpeer <name>`: this process's name in `peers` sections.
    pub localpeer: Option<String>,
    /// `server-state-base <dir>`: where relative server-state file names are.
    pub server_state_base: Option<PathBuf>,
    /// `server-state-file <file>`: the global server-state file.
    pub server_state_file: Option<PathBuf>,
    /// `stats socket` lines: the runtime API's listeners.
    pub stats_sockets: Vec<StatsSocket>,
    /// `stats timeout`: how long a runtime API session may stay idle (HAProxy: 10 s).
    pub stats_timeout: Duration,
    /// `stats maxconn`: runtime API sessions at once per socket (HAProxy: 10).
    pub stats_maxconn: u32,
    /// `ssl-default-*`, `crt-base`, `tune.ssl.*`...
    pub tls: GlobalTls,
}

/// Kernel socket buffer sizes (`SO_RCVBUF`, `SO_SNDBUF`) to force on a connection; `None`
/// leaves the kernel's auto-tuning alone (HAProxy's default, 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SocketBuffers {
    pub rcv: Option<i32>,
    pub snd: Option<i32>,
}

/// HAProxy's default `tune.maxaccept`.
pub const DEFAULT_MAXACCEPT: u32 = 64;

impl Default for Global {
    fn default() -> Self {
        Global {
            lua: crate::lua::LuaGlobal::default(),
            set_vars: Vec::new(),
            daemon: false,
            quiet: false,
            zero_warning: false,
            env_changes: Default::default(),
            unix_bind: Default::default(),
            nbthread: None,
            maxconn: None,
            maxconnrate: None,
            maxsessrate: None,
            maxsslrate: None,
            maxcomprate: None,
            comp_min_idle: 0,
            pidfile: None,
            cpu_map: Vec::new(),
            ulimit_n: None,
            user: None,
            group: None,
            user_at: None,
            group_at: None,
            tune_bufsize: 16384,
            tune_maxrewrite: 1024,
            tune_pool_low_fd_ratio: 20,
            tune_comp_maxlevel: 1,
            tune_pool_high_fd_ratio: 25,
            tune_http_maxhdr: 101,
            tune_http_logurilen: 1024,
            tune_h2: TuneH2::default(),
            tune_maxaccept: Some(DEFAULT_MAXACCEPT),
            client_bufs: SocketBuffers::default(),
            server_bufs: SocketBuffers::default(),
            spread_checks: 0,
            max_spread_checks: None,
            logs: Vec::new(),
            log_send_hostname: None,
            log_tag: None,
            node: None,
            description: None,
            hard_stop_after: None,
            chroot: None,
            grace: None,
            set_dumpable: false,
            insecure_fork_wanted: false,
            tune: crate::tune::Tune::default(),
            h1_case: Default::default(),
            external_check: false,
            localpeer: None,
            stats_sockets: Vec::new(),
            server_state_base: None,
            server_state_file: None,
            stats_timeout: Duration::from_secs(10),
            stats_maxconn: 10,
            tls: GlobalTls::default(),
        }
    }
}

/// A user or group named in the config, by name or by number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserSpec {
    Name(String),
    Id(u32),
}

/// One `cpu-map` line: `cpu-map [auto:]<process>[/<threads>] <cpus>...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuMap {
    pub span: Span,
    /// `auto:` prefix: threads and CPUs are mapped one to one, in order.
    pub auto: bool,
    /// 1-based thread numbers this line applies to; `None` means all threads.
    pub threads: Option<Vec<u32>>,
    /// CPU numbers (0-based, as the kernel numbers them).
    pub cpus: Vec<u32>,
}

/// Which capabilities a proxy section has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyKind {
    Frontend,
    Backend,
    Listen,
}

impl ProxyKind {
    pub fn is_frontend(self) -> bool {
        matches!(self, ProxyKind::Frontend | ProxyKind::Listen)
    }
    pub fn is_backend(self) -> bool {
        matches!(self, ProxyKind::Backend | ProxyKind::Listen)
    }
    pub fn keyword(self) -> &'static str {
        match self {
            ProxyKind::Frontend => "frontend",
            ProxyKind::Backend => "backend",
            ProxyKind::Listen => "listen",
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    #[default]
    Tcp,
    Http,
}

/// A `frontend`, `backend` or `listen` section after its `defaults` were applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Proxy {
    pub name: String,
    pub span: Span,
    pub kind: ProxyKind,
    /// `id <n>`: the proxy's stable number (HAProxy's `puid`); assigned at start-up when unset.
    pub id: Option<u32>,
    /// `description`: free text (shown by the stats page).
    pub description: Option<String>,
    pub mode: Mode,
    pub binds: Vec<Bind>,
    /// `backlog <n>`: the listen backlog of its binds that do not set their own.
    pub backlog: Option<u32>,
    /// `fullconn <n>` (backends): the load at which `minconn` servers reach their `maxconn`.
    pub fullconn: Option<u32>,
    /// Frontend `maxconn`.
    pub maxconn: Option<u32>,
    /// `rate-limit sessions <rate>`: new sessions accepted per second (frontends).
    pub rate_limit_sessions: Option<u32>,
    pub timeouts: Timeouts,
    pub balance: Balance,
    pub hash_type: HashType,
    pub servers: Vec<Server>,
    pub default_backend: Option<BackendRef>,
    /// `use_backend` rules, in order; the first that applies wins.
    pub use_backends: Vec<UseBackend>,
    /// `use-server` rules (backends), in order; the first that applies to a usable server
    /// wins.
    pub use_servers: Vec<UseServer>,
    /// `retries` (HAProxy's default is 3).
    pub retries: u32,
    /// `retry-on`: when a failed request may be retried, in the order written (duplicates
    /// removed). `[ConnFailure]` when not set, as HAProxy. Backend side only (a frontend keeps
    /// the default).
    pub retry_on: Vec<RetryOn>,
    /// `option redispatch`: the last retry may go to another server.
    pub redispatch: bool,
    /// `option abortonclose`.
    pub abortonclose: bool,
    /// `option nolinger`: the proxy's connections (a frontend's clients, a backend's servers)
    /// end with a reset, without lingering in the kernel.
    pub nolinger: bool,
    /// `option independent-streams`: what is sent to the proxy's side of a tunnel (a
    /// frontend's clients, a backend's servers) does not count as activity for its timeout.
    pub independent_streams: bool,
    /// `option idle-close-on-response`: at a soft stop, a frontend's idle HTTP/1 connections
    /// stay open for one more request, answered with `connection: close`.
    pub idle_close_on_response: bool,
    /// `option socket-stats`: counters and a statistics row for each of a frontend's binds.
    pub socket_stats: bool,
    /// TCP keep-alive probes on client connections (`option clitcpka`, `clitcpka-*`) and on
    /// server connections (`option srvtcpka`, `srvtcpka-*`); `option tcpka` sets both.
    pub cli_tcpka: TcpKeepAlive,
    pub srv_tcpka: TcpKeepAlive,
    /// `acl` lines, in order (lines sharing a name are ORed).
    pub acls: Vec<NamedAcl>,
    /// `http-request` rules, in order.
    pub http_request: Vec<HttpRule>,
    /// `http-response` rules, in order.
    pub http_response: Vec<HttpRule>,
    /// `http-after-response` rules, in order.
    pub http_after_response: Vec<HttpRule>,
    /// Legacy `redirect` rules (the action is always [`HttpAction::Redirect`]).
    pub redirects: Vec<HttpRule>,
    /// `tcp-request connection` rules.
    pub tcp_request_connection: Vec<TcpRule>,
    /// `tcp-request session` rules (after the PROXY header and the TLS handshake).
    pub tcp_request_session: Vec<TcpRule>,
    /// `tcp-request connection expect-proxy layer4 [if|unless ...]`: the conditions under
    /// which a connection must open with a PROXY protocol header.
    pub expect_proxy: Vec<Option<Condition>>,
    /// `tcp-request connection expect-netscaler-cip layer4 [if|unless ...]`: the conditions
    /// under which a connection starts with a NetScaler Client IP header (of the bind line's
    /// magic number: 0 without `accept-netscaler-cip`, as in HAProxy).
    pub expect_cip: Vec<Option<Condition>>,
    /// `tcp-request content` rules.
    pub tcp_request_content: Vec<TcpRule>,
    /// `tcp-request inspect-delay`.
    pub inspect_delay: Option<Duration>,
    /// `tcp-response content` rules.
    pub tcp_response_content: Vec<TcpRule>,
    /// `tcp-response inspect-delay`.
    pub response_inspect_delay: Option<Duration>,
    /// `monitor-uri`.
    pub monitor_uri: Option<String>,
    /// `stick-table`: the proxy's table (named after the proxy).
    pub stick_table: Option<StickTable>,
    /// `stick on|match|store-request|store-response` rules, in order.
    pub stick_rules: Vec<StickRule>,
    /// `stats enable` and the other `stats` keywords: the statistics page (any of them
    /// turns it on, as in HAProxy).
    pub stats: Option<StatsPage>,
    /// `monitor fail if|unless <cond>` lines: the monitor URI answers 503 when one applies.
    pub monitor_fail: Vec<Condition>,
    /// `force-persist` and `ignore-persist` lines (a backend's), in order: the first whose
    /// condition holds decides. `ignore-persist`: the request is not sent by its persistence
    /// cookie, and its response gets none; `force-persist`: a cookie, stick table or
    /// `use-server` rule may send it to a server that is down or in maintenance.
    pub persist_rules: Vec<PersistRule>,
    /// `option persist`: a persistence cookie, stick table or `use-server` rule may send a
    /// request to a server that is down.
    pub persist: bool,
    /// `persist rdp-cookie[(<name>)]`: a connection whose RDP cookie `<name>` (`msts` by
    /// default) names a server's IPv4 address and port goes to that server.
    pub persist_rdp: Option<String>,
    /// `option prefer-last-server`: a keep-alive client's next request goes to the server
    /// of its previous one when that one can take it.
    pub prefer_last_server: bool,
    /// `max-keep-alive-queue <n>` (`None`: -1, unlimited): with `prefer-last-server`, the
    /// previous server is kept only when it has room or fewer than `n` requests waiting for it.
    pub max_ka_queue: Option<u32>,
    /// `option contstats` (frontends): read; byte counters are still added when each stream
    /// ends.
    pub contstats: bool,
    /// `disabled` (`enabled` undoes it): the proxy is not started; its binds stay closed,
    /// its servers take no traffic and are not checked, and it is not in the statistics.
    pub disabled: bool,
    /// `source`: the local address (and `usesrc`, `interface`) of its server connections,
    /// for servers without their own.
    pub source: Option<crate::source::Source>,
    /// Error messages by status, from `errorfile`, `errorfiles`, `errorloc*` and `http-error`
    /// (later lines override earlier ones).
    pub errors: BTreeMap<u16, ErrorSource>,
    /// `option forwardfor`.
    pub forwardfor: Option<ForwardFor>,
    /// `option originalto`.
    pub originalto: Option<ForwardFor>,
    /// `http-send-name-header <name>`: the header set to the server's name on each try.
    pub send_name_header: Option<String>,
    /// `option http-keep-alive` / `http-server-close` / `httpclose`.
    pub http_conn_mode: HttpConnMode,
    /// `option http-buffer-request`.
    pub http_buffer_request: bool,
    /// `http-reuse`.
    pub http_reuse: HttpReuse,
    /// `load-server-state-from-file global|local|none`.
    pub load_server_state: ServerStateLoad,
    /// `server-state-file-name [use-backend-name | <file>]`: the local file (`None`: the
    /// backend's name).
    pub server_state_file_name: Option<String>,
    /// `cookie`: cookie-based server persistence.
    pub cookie: Option<CookieCfg>,
    /// The line each stream logs: `option httplog [clf]`, `option httpslog`, `option tcplog`
    /// or `log-format` (the last one wins); `None`: a `Connect from` line at each accept.
    pub log_format: Option<LogFormatDecl>,
    /// `log-format-sd`: the structured-data part of RFC 5424 lines.
    pub log_format_sd: Option<FormatText>,
    /// `error-log-format`: the line of a request refused before it was complete.
    pub error_log_format: Option<FormatText>,
    /// `unique-id-format`: each request's unique id.
    pub unique_id_format: Option<FormatText>,
    /// `unique-id-header`: the request header that carries it to the server.
    pub unique_id_header: Option<String>,
    /// `option dontlog-normal`: only streams that ended in error are logged.
    pub dontlog_normal: bool,
    /// `option logasap`: a stream is logged once its server answered (HTTP: the response's
    /// head; TCP: the connection), its unknown figures marked `+`.
    pub logasap: bool,
    /// `option log-separate-errors`: streams that ended in error are logged at `err` level.
    pub log_separate_errors: bool,
    /// The formats above compiled for the proxy's final mode (set by validation, for proxies
    /// with frontend capability).
    pub formats: LogFormats,
    /// `option dontlognull`.
    pub dontlognull: bool,
    /// `option http-restrict-req-hdr-names preserve|delete|reject`: 0 not set (preserve, but
    /// `delete` for a backend with `use-fcgi-app`, as HAProxy 2.6 sets it), 1 delete request
    /// headers whose name has a character other than a letter, a digit or `-`, 2 refuse such
    /// requests with a 403 (after the proxy's `http-request` rules), 3 preserve (set).
    pub restrict_req_hdr_names: u8,
    /// `option accept-invalid-http-request` (frontend side) and
    /// `option accept-invalid-http-response` (backend side): HTTP/1 heads parsed leniently
    /// (`fulcrum_http::Head::set_lenient`), the faults let pass kept for `show errors`.
    pub accept_invalid_req: bool,
    pub accept_invalid_resp: bool,
    /// `option h1-case-adjust-bogus-client` (frontend side: responses to HTTP/1 clients) and
    /// `option h1-case-adjust-bogus-server` (backend side: requests to HTTP/1 servers): header
    /// names get the case `h1-case-adjust` gives them.
    pub h1_case_client: bool,
    pub h1_case_server: bool,
    /// `option disable-h2-upgrade` (frontend side): an HTTP/1 connection that starts with
    /// HTTP/2's preface is not taken as HTTP/2 (its request is refused as HTTP/1: 400).
    pub disable_h2_upgrade: bool,
    /// `option http-ignore-probes` (frontend side): a connection closed or timed out before
    /// sending any byte gets no 400/408 answer (nor log, nor error count).
    pub http_ignore_probes: bool,
    /// `option http-use-proxy-header` (frontend side): for proxied requests (target neither
    /// `/...` nor `*`), `Proxy-Connection` is used in place of `Connection` for the
    /// keep-alive decision.
    pub http_use_proxy_header: bool,
    /// `option http-pretend-keepalive` (backend side): in `http-server-close`/`httpclose`
    /// modes, no `Connection: close` is sent to the server; the connection is closed after
    /// the response anyway.
    pub http_pretend_keepalive: bool,
    /// `option checkcache` (backend side): cacheable responses carrying `Set-Cookie` are
    /// blocked (answered with a 502), as HAProxy's manual describes.
    pub checkcache: bool,
    /// `capture request header|response header|cookie` lines (frontend side), in order.
    pub captures: Vec<Capture>,
    /// The capture slots `%hr` / `%hs` show (headers, `declare capture`, capture actions).
    pub capture_slots: CaptureSlots,
    /// How servers are checked (`option httpchk`, `tcp-check`...; a plain connect otherwise).
    pub health_check: HealthCheck,
    /// `use-fcgi-app <name>`: the FastCGI application its `proto fcgi` servers run.
    pub use_fcgi_app: Option<(String, Span)>,
    /// `email-alert` settings: server state changes mailed through a `mailers` section.
    pub email_alert: crate::mailers::EmailAlert,
    /// `option allbackups`: every backup server takes traffic when no active one can.
    pub allbackups: bool,
    /// `option log-health-checks`: every check result change is logged.
    pub log_health_checks: bool,
    /// `log` lines, in order (`log global` stands for the global targets).
    pub logs: Vec<LogEntry>,
    /// `log-tag`: the syslog tag of this proxy's messages (the global one otherwise).
    pub log_tag: Option<String>,
    /// `compression` lines (a `defaults` section's algorithms and types included).
    pub compression: Option<crate::compression::Compression>,
    /// `filter compression` (a proxy with `compression` gets the filter without it).
    pub compression_filter: bool,
    /// The proxy's filters in HAProxy's order: `filter compression` and `filter cache <name>`
    /// lines, and the cache filters `http-request cache-use` / `http-response cache-store`
    /// rules declare implicitly (one per cache name, where the first rule naming it stands;
    /// those of a named `defaults` section's rules come with the rules). A proxy with
    /// `compression` but no `filter compression` gets its compression filter after all of
    /// these. [`Proxy::cache_filters`] lists the caches the proxy uses.
    pub filters: Vec<crate::cache::Filter>,
}

/// A `force-persist` or `ignore-persist` line.
#[derive(Clone, Debug, PartialEq)]
pub struct PersistRule {
    /// `force-persist` (else `ignore-persist`).
    pub force: bool,
    pub cond: Condition,
}

/// One `log` line of a proxy (or of `global`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogEntry {
    /// `log global`: the global section's targets.
    Global,
    Target(LogTarget),
}

/// Where and how log messages are sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogTarget {
    pub span: Span,
    pub addr: LogAddr,
    /// The address as written, for messages.
    pub written: String,
    /// `len`: the longest datagram (header included), 1024 by default.
    pub maxlen: u32,
    pub format: SyslogFormat,
    /// Syslog facility number (`local0` is 16).
    pub facility: u8,
    /// Messages above this level (less severe) are not sent (default 7, debug).
    pub level: u8,
    /// Messages are sent at least at this level (default 0, emerg).
    pub minlevel: u8,
    /// `sample <ranges>:<size>`: of each `size` messages in turn, those whose number (from 1)
    /// is in one of the ranges (sorted, inclusive) are sent.
    pub sample: Option<LogSample>,
}

/// TCP keep-alive probes on one side's connections; unset settings keep the system's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpKeepAlive {
    pub on: bool,
    /// Probes without answer before the connection is dropped (`TCP_KEEPCNT`).
    pub cnt: Option<u32>,
    /// Idle seconds before the first probe (`TCP_KEEPIDLE`).
    pub idle: Option<u32>,
    /// Seconds between probes (`TCP_KEEPINTVL`).
    pub intvl: Option<u32>,
}

/// A log target's `sample` setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogSample {
    pub ranges: Vec<(u32, u32)>,
    pub size: u32,
}

/// A log target's address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogAddr {
    /// UDP to a host (name or address, resolved at start-up) and port.
    Inet { host: String, port: u16 },
    /// A UNIX datagram socket (`/dev/log`).
    Unix(PathBuf),
    /// An inherited file descriptor (`stdout` is 1, `stderr` 2).
    Fd(i32),
    /// `ring@<name>`: the `ring` section of that name.
    Ring(String),
}

/// The header of a syslog message (`format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyslogFormat {
    /// None given: `rfc3164` when a host name is sent, else `local`.
    Unspecified,
    Local,
    Rfc3164,
    Rfc5424,
    Priority,
    Short,
    Timed,
    Iso,
    Raw,
}

/// A reference to a backend by name, with the line that made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendRef {
    pub name: String,
    pub span: Span,
}

/// Timeouts of a proxy. `None` means not set (HAProxy treats unset as infinite, with a warning
/// for connect/client/server).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Option<Duration>,
    pub client: Option<Duration>,
    pub server: Option<Duration>,
    pub queue: Option<Duration>,
    pub tunnel: Option<Duration>,
    pub client_fin: Option<Duration>,
    pub server_fin: Option<Duration>,
    pub http_request: Option<Duration>,
    pub http_keep_alive: Option<Duration>,
    /// `timeout tarpit`: how long `http-request tarpit` holds a request (`connect` when unset).
    pub tarpit: Option<Duration>,
    /// `timeout check`: once a check's connection is up, how long the rest may take.
    pub check: Option<Duration>,
}

/// One `bind` line. A line with a comma list or a port range yields several addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bind {
    pub span: Span,
    /// The address list as written (HAProxy names a bind line by it in messages).
    pub written: String,
    pub addrs: Vec<BindAddr>,
    /// `name <name>`.
    pub name: Option<String>,
    /// `backlog <n>`.
    pub backlog: Option<u32>,
    /// `v4v6`: an IPv6 socket also accepts IPv4.
    pub v4v6: bool,
    /// `v6only`: an IPv6 socket accepts IPv6 only (before `v4v6`).
    pub v6only: bool,
    /// TCP listeners' socket options: `defer-accept` (`TCP_DEFER_ACCEPT`), `tfo`
    /// (`TCP_FASTOPEN`), `mss <n>` (`TCP_MAXSEG`; negative: that much below the default),
    /// `interface <name>` (`SO_BINDTODEVICE`).
    pub sockopts: BindSockOpts,
    /// `maxconn <n>` on this bind.
    pub maxconn: Option<u32>,
    /// `mode`, `uid`/`user`, `gid`/`group`: the permissions of a UNIX socket's file.
    pub unix: UnixPerms,
    /// `level user|operator|admin` (runtime API sockets; HAProxy's default is operator).
    pub level: CliLevel,
    /// `expose-fd listeners`: the runtime API may hand the listening sockets to a new process.
    pub expose_fd: bool,
    /// `ssl`, `crt`... (see [`BindTls`]).
    pub tls: BindTls,
    /// `accept-proxy`: every connection starts with a PROXY protocol header (v1 or v2).
    pub accept_proxy: bool,
    /// `accept-netscaler-cip <magic>`: every connection starts with a NetScaler Client IP
    /// header of that magic number.
    pub netscaler_cip: Option<u32>,
    /// `proto h1|h2`: the HTTP version every connection speaks, whatever ALPN or the first
    /// bytes say.
    pub proto: Option<MuxProto>,
    /// `id <n>`: its listener's id (`so_id`; a line of one address only).
    pub id: Option<u32>,
    /// `thread [1/]<set>`: the threads (from 1, up to 64) whose workers accept on it; empty:
    /// every one.
    pub threads: Vec<u32>,
    /// `nice <n>`: checked as HAProxy 2.6 checks it (-1024..1024); no effect.
    pub nice: i32,
}

/// See [`Bind::sockopts`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BindSockOpts {
    pub defer_accept: bool,
    pub tfo: bool,
    pub mss: Option<i32>,
    pub interface: Option<String>,
    /// `tcp-ut <time>`: `TCP_USER_TIMEOUT` (milliseconds), inherited by accepted sockets.
    pub tcp_ut: Option<u32>,
    /// `transparent`: the address may be a foreign one (`IP_TRANSPARENT`, else `IP_FREEBIND`).
    pub transparent: bool,
}

impl Bind {
    /// `IPV6_V6ONLY` for its IPv6 sockets: `v6only`, else `v4v6`, else the system's default
    /// (`net.ipv6.bindv6only`), as HAProxy sets it.
    pub fn only_v6(&self) -> Option<bool> {
        if self.v6only {
            Some(true)
        } else if self.v4v6 {
            Some(false)
        } else {
            None
        }
    }
}

/// `tune.h2.header-table-size`, `initial-window-size`, `max-concurrent-streams`,
/// `max-frame-size` (HAProxy 2.6's defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TuneH2 {
    pub header_table_size: u32,
    pub initial_window_size: u32,
    pub max_concurrent_streams: u32,
    pub max_frame_size: u32,
    /// `h2-workaround-bogus-websocket-clients`: no SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441)
    /// sent to clients (set from [`crate::tune::Tune`] when the plan is made).
    pub no_websocket: bool,
}

impl Default for TuneH2 {
    fn default() -> Self {
        TuneH2 {
            header_table_size: 4096,
            initial_window_size: 65_535,
            max_concurrent_streams: 100,
            max_frame_size: 16_384,
            no_websocket: false,
        }
    }
}

/// A `proto` name of a `bind` or `server` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MuxProto {
    H1,
    H2,
    /// FastCGI (servers only).
    Fcgi,
}

/// The owner and mode a UNIX socket's file is given (`bind /path mode 600 user haproxy`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnixPerms {
    /// `mode <octal>`.
    pub mode: Option<u32>,
    /// `uid <n>` or `user <name>` (looked up when the socket is opened).
    pub owner: Option<UserSpec>,
    /// `gid <n>` or `group <name>`.
    pub group: Option<UserSpec>,
}

/// What a runtime API session may do (HAProxy's `ACCESS_LVL_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum CliLevel {
    /// Read-only commands that show no sensitive data.
    User,
    /// Also the commands that change nothing essential (`show sess`, `clear counters`...):
    /// HAProxy's default.
    #[default]
    Operator,
    /// Every command.
    Admin,
}

/// Where a backend's servers take their state from at start-up
/// (`load-server-state-from-file`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ServerStateLoad {
    #[default]
    None,
    /// The global `server-state-file`.
    Global,
    /// The backend's own file (`server-state-file-name`, in `server-state-base`).
    Local,
}

/// The statistics page of a proxy (`stats enable`, `stats uri`...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatsPage {
    /// `stats uri`: the prefix of the URIs it answers (HAProxy's default `/haproxy?stats`).
    pub uri: String,
    /// `stats realm` (HAProxy's default when auth is asked: `HAProxy Statistics`).
    pub realm: Option<String>,
    /// `stats auth <user>:<password>` lines.
    pub auth: Vec<(String, String)>,
    /// `stats refresh`: the page reloads itself this often.
    pub refresh: Option<Duration>,
    pub hide_version: bool,
    pub show_legends: bool,
    pub show_modules: bool,
    /// `stats show-node [<name>]`: `Some(None)` shows the node's name.
    pub show_node: Option<Option<String>>,
    /// `stats show-desc [<text>]`: `Some(None)` shows the global description.
    pub show_desc: Option<Option<String>>,
    /// `stats scope`: only these proxies are shown (`.` is the proxy itself); empty: all.
    pub scope: Vec<String>,
    /// `stats admin { if | unless } <cond>`: who may change server states from the page.
    pub admin: Vec<Condition>,
    /// `stats http-request allow|deny|auth [realm <r>] [cond]`.
    pub http_request: Vec<StatsRule>,
}

impl Default for StatsPage {
    fn default() -> Self {
        StatsPage {
            uri: "/haproxy?stats".into(),
            realm: None,
            auth: Vec::new(),
            refresh: None,
            hide_version: false,
            show_legends: false,
            show_modules: false,
            show_node: None,
            show_desc: None,
            scope: Vec::new(),
            admin: Vec::new(),
            http_request: Vec::new(),
        }
    }
}

/// One `stats http-request` rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatsRule {
    pub action: StatsAction,
    pub cond: Option<Condition>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StatsAction {
    Allow,
    Deny,
    /// Ask for credentials, in this realm.
    Auth(Option<String>),
}

/// A global `stats socket` line: a runtime API listener.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatsSocket {
    pub span: Span,
    /// Its address and options, as on a `bind` line.
    pub bind: Bind,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BindAddr {
    /// An IP address and port. `:80` and `*:80` are `0.0.0.0:80`; `:::80` is `[::]:80`.
    Inet(SocketAddr),
    /// A host name and port (`bind localhost:5000`): the engine resolves it at start-up, as
    /// HAProxy resolves it when reading the configuration. `text` is the address as written.
    Host { name: String, port: u16, family: Family, text: String },
    /// `unix@<path>`.
    Unix(PathBuf),
    /// `fd@<n>`: an already-listening socket inherited from the parent process.
    Fd(i32),
}

/// The address family a `bind` or `server` address is restricted to by its prefix
/// (`ipv4@`, `ipv6@`; none: any).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    Any,
    V4,
    V6,
}

/// `balance` algorithm. HAProxy's default when `balance` is omitted is `roundrobin`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Balance {
    #[default]
    RoundRobin,
    StaticRr,
    LeastConn,
    First,
    /// Hash of the client's source address.
    Source,
    /// `random[(<draws>)]`: pick the least loaded of `draws` random servers (default 2).
    Random {
        draws: u32,
    },
    /// `uri [depth <n>] [len <n>] [whole] [path-only]`: hash of the request URI.
    Uri {
        depth: Option<u32>,
        len: Option<u32>,
        whole: bool,
        path_only: bool,
    },
    /// `url_param <name>`: hash of a query-string parameter (round robin without it).
    UrlParam {
        name: String,
    },
    /// `hdr(<name>) [use_domain_only]`: hash of a request header (round robin without it).
    Hdr {
        name: String,
        use_domain_only: bool,
    },
    /// `rdp-cookie[(<name>)]`: the hash of the RDP cookie `<name>` (`mstshash` by default) in
    /// the connection's first bytes, as the hash algorithms hash; round robin without one.
    RdpCookie {
        name: String,
    },
}

/// `hash-type <method> [<function>] [avalanche]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HashType {
    pub method: HashMethod,
    pub function: HashFunction,
    pub avalanche: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HashMethod {
    #[default]
    MapBased,
    Consistent,
}

/// `hash-type`'s function: the balancer's own type (one enum for model and engine).
pub use fulcrum_balance::HashFunction;

/// One `server` line, with `default-server` settings applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Server {
    pub name: String,
    pub span: Span,
    pub addr: ServerAddr,
    /// `weight` (1..=256, default 1).
    pub weight: u32,
    /// Per-server `maxconn`; `None` or 0 means unlimited.
    pub maxconn: Option<u32>,
    /// `maxqueue`; `None` or 0 means unlimited.
    pub maxqueue: Option<u32>,
    pub backup: bool,
    /// `disabled`: starts in maintenance.
    pub disabled: bool,
    /// `id <n>`: the server's stable number in its backend; assigned at start-up when unset.
    pub id: Option<u32>,
    /// `check` and its timing options.
    pub check: ServerCheck,
    /// `agent-check` and its options.
    pub agent: AgentCheck,
    /// `slowstart <time>`: after coming up, weight and maxconn ramp up over this time.
    pub slowstart: Option<Duration>,
    /// `observe layer4|layer7`: live traffic errors count against the server's health.
    pub observe: Option<Observe>,
    /// `on-error`: what `error-limit` consecutive observed errors do.
    pub on_error: OnError,
    /// `error-limit` (HAProxy's default 10).
    pub error_limit: u32,
    /// `on-marked-down shutdown-sessions`: a server marked DOWN loses its live sessions.
    pub shutdown_on_down: bool,
    /// `on-marked-up shutdown-backup-sessions`: an active server coming UP ends the sessions
    /// of every backup server.
    pub shutdown_backups_on_up: bool,
    /// `init-addr`: how the address is found at start-up (`last,libc` by default).
    pub init_addr: Vec<InitAddr>,
    /// `cookie <value>`: the persistence cookie value for this server.
    pub cookie: Option<String>,
    /// `pool-max-conn`: `None` or -1 unlimited idle connections, 0 no pooling.
    pub pool_max_conn: Option<i32>,
    /// `pool-low-conn`: below this many idle connections to it, a worker takes none over from
    /// another worker, and keeps this many more than its recent need.
    pub pool_low_conn: Option<i32>,
    /// `pool-purge-delay`.
    pub pool_purge_delay: Option<Duration>,
    /// `ssl`, `verify`, `sni`... (see [`ServerTls`]).
    pub tls: ServerTls,
    /// `send-proxy*`, `proxy-v2-options`.
    pub send_proxy: SendProxy,
    /// `socks4 <addr>:<port>`: connections go through this SOCKS4 proxy.
    pub socks4: Option<std::net::SocketAddr>,
    /// `tcp-ut <time>`: `TCP_USER_TIMEOUT` on connections to the server (milliseconds).
    pub tcp_ut: Option<u32>,
    /// `tfo`: TCP Fast Open on new connections to the server (`TCP_FASTOPEN_CONNECT`).
    pub tfo: bool,
    /// `non-stick`: streams the server served store nothing in stick tables.
    pub non_stick: bool,
    /// `max-reuse <n>`: a connection to the server carries at most `n` + 1 requests (`None`:
    /// no limit).
    pub max_reuse: Option<u32>,
    /// `proto h1|h2`: the protocol spoken to the server, whatever ALPN chose (HTTP/1.1 when
    /// neither says).
    pub proto: Option<MuxProto>,
    /// `check-proto`, or else `proto`: the protocol of the server's HTTP health checks.
    pub check_proto: Option<MuxProto>,
    /// `ws h1|h2`: the protocol WebSocket upgrades take to the server (`None`: `auto`).
    pub ws: Option<MuxProto>,
    /// `minconn`: with the backend's `fullconn`, the server's connection limit grows from
    /// this to `maxconn` with the backend's load (HAProxy's dynamic maxconn).
    pub minconn: Option<u32>,
    /// `redir <prefix>`: GET and HEAD requests sent to it are answered with a 302 to this
    /// prefix and their path instead.
    pub redir: Option<String>,
    /// `track [<backend>/]<server>`: its state follows that server's checks.
    pub track: Option<String>,
    /// `source`: the local address (and `usesrc`, `interface`) of its connections.
    pub source: Option<crate::source::Source>,
}

/// A server's address as written. Host names are resolved by the engine at start-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerAddr {
    /// `host:port`, `ip:port`, `[v6]:port`; `port` is how the port was written.
    Inet { host: String, port: ServerPort },
    /// `unix@<path>` or an absolute path.
    Unix(PathBuf),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerPort {
    /// `addr:8080`.
    Fixed(u16),
    /// No port: use the port the client connected to.
    Same,
    /// `addr:+N` / `addr:-N`: the client's destination port plus this offset.
    Offset(i32),
}
