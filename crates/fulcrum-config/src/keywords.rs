//! The keyword table: every HAProxy 2.6 keyword Fulcrum knows about (from the 2.6 manual: §3
//! global keywords, §4.1 proxy keyword matrix, §5.1 bind and §5.2 server options), with the
//! sections it is allowed in and Fulcrum's support status. It drives the "not supported yet" /
//! "unknown keyword" messages, the section-placement checks and `docs/compat.md`.

/// How far Fulcrum supports a keyword.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Supported,
    /// Supported with the limits described.
    Partial(&'static str),
    /// HAProxy knows it; Fulcrum refuses it with "is not supported yet".
    NotYet,
    /// HAProxy 2.6 itself refuses it; the text is HAProxy's explanation.
    Obsolete(&'static str),
}

/// Section bits of the proxy keyword matrix.
pub const D: u8 = 1;
pub const F: u8 = 2;
pub const L: u8 = 4;
pub const B: u8 = 8;

/// One keyword: its name (several words for `option x`, `timeout x`, `stats uri`...), the
/// proxy sections it is allowed in (0 for non-proxy tables) and its status.
#[derive(Clone, Copy, Debug)]
pub struct Keyword {
    pub name: &'static str,
    pub sections: u8,
    pub status: Status,
}

use Status::*;

const fn p(name: &'static str, sections: u8, status: Status) -> Keyword {
    Keyword { name, sections, status }
}

const fn g(name: &'static str, status: Status) -> Keyword {
    Keyword { name, sections: 0, status }
}

/// Sections HAProxy 2.6 knows besides the proxies and `global`.
pub const OTHER_SECTIONS: &[&str] = &["peers", "program", "resolvers"];

/// HAProxy 2.6's `global` keywords (manual §3).
pub static GLOBAL: &[Keyword] = &[
    g("51degrees-cache-size", NotYet),
    g("51degrees-data-file", NotYet),
    g("51degrees-property-name-list", NotYet),
    g("51degrees-property-separator", NotYet),
    g("ca-base", Supported),
    g("chroot", Supported),
    g("cluster-secret", Partial("checked and kept: it keys QUIC retry tokens, and Fulcrum has no QUIC yet")),
    g("cpu-map", Partial("process set must include process 1 (no nbproc)")),
    g("crt-base", Supported),
    g("daemon", Supported),
    g("default-path", NotYet),
    g("description", Supported),
    g("deviceatlas-json-file", NotYet),
    g("deviceatlas-log-level", NotYet),
    g("deviceatlas-properties-cookie", NotYet),
    g("deviceatlas-separator", NotYet),
    g("expose-experimental-directives", Partial("accepted: no experimental directive is supported")),
    g("external-check", Supported),
    g("fd-hard-limit", Supported),
    g("gid", Supported),
    g("grace", Supported),
    g("group", Supported),
    g("h1-accept-payload-with-any-method", Supported),
    g("h1-case-adjust", Supported),
    g("h1-case-adjust-file", Supported),
    g("h2-workaround-bogus-websocket-clients", Supported),
    g("hard-stop-after", Supported),
    g("httpclient.resolvers.id", NotYet),
    g("httpclient.resolvers.prefer", NotYet),
    g("httpclient.ssl.ca-file", NotYet),
    g("httpclient.ssl.verify", NotYet),
    g("insecure-fork-wanted", Partial("without it external checks fail to start their program (SOCKERR) unless running as root, as under HAProxy's nproc limit, with HAProxy's warning at start-up; 'no insecure-fork-wanted' takes it back")),
    g("insecure-setuid-wanted", Supported),
    g("issuers-chain-path", NotYet),
    g("localpeer", Partial("recorded for the peers sections, which are not supported yet")),
    g("log", Partial("UDP (ipv4@, ipv6@, host:port, port 514 by default), UNIX datagram sockets, stdout/stderr/fd@<n>, ring@<name>; len, format (every format), sample, facility, level, minlevel; not tcp@")),
    g("log-send-hostname", Supported),
    g("log-tag", Supported),
    g("lua-load", Partial("the script runs when its line is read, as HAProxy runs it (Lua 5.3, HAProxy's messages for a script that fails); `core.register_action` for `http-req` and `http-res`. Each worker has its own state, which loads every `lua-load` and `lua-load-per-thread` script: globals are not shared between threads (HAProxy's `lua-load` shares one state under a lock)")),
    g("lua-load-per-thread", Partial("as `lua-load`: one state per worker")),
    g("lua-prepend-path", Supported),
    g("mworker-max-reloads", Partial("accepted and ignored: Fulcrum reloads in place, there are no old workers to count")),
    g("nbthread", Supported),
    g("thread-groups", Partial("1, the only value HAProxy 2.6 takes")),
    g("node", Supported),
    g("numa-cpu-mapping", Partial("checked as HAProxy 2.6 checks it; no effect: threads are not bound to one NUMA node when nothing binds them")),
    g("pidfile", Supported),
    g("pp2-never-send-local", Supported),
    g("presetenv", Supported),
    g("resetenv", Supported),
    g("set-dumpable", Supported),
    g("set-var", Supported),
    g("set-var-fmt", Supported),
    g("setenv", Supported),
    g("ssl-default-bind-ciphers", Partial("OpenSSL cipher names mapped to the TLS 1.2 suites rustls offers (ECDHE with AES-GCM or ChaCha20-Poly1305); others are dropped with a warning")),
    g("ssl-default-bind-ciphersuites", Partial("TLS 1.3 suites: TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256; others dropped with a warning")),
    g("ssl-default-bind-curves", Partial("X25519, P-256, P-384 (and X25519MLKEM768); others dropped with a warning")),
    g("ssl-default-bind-options", Partial("ssl-min-ver, ssl-max-ver, no-sslv3, no-tlsv1x, force-tlsv1x, no-tls-tickets, prefer-client-ciphers; TLS 1.0/1.1 and SSLv3 are never offered")),
    g("ssl-default-server-ciphers", Partial("as ssl-default-bind-ciphers")),
    g("ssl-default-server-ciphersuites", Partial("as ssl-default-bind-ciphersuites")),
    g("ssl-default-server-options", Partial("as ssl-default-bind-options")),
    g("ssl-dh-param-file", Partial("accepted with a warning: no DHE key exchange (ECDHE only)")),
    g("ssl-propquery", NotYet),
    g("ssl-provider", NotYet),
    g("ssl-provider-path", NotYet),
    g("ssl-server-verify", Supported),
    g("ssl-skip-self-issued-ca", Partial("accepted; chains are sent as the PEM file has them")),
    g("stats bind-process", Partial("accepted and ignored, as HAProxy 2.6 does (one process)")),
    g("stats maxconn", Supported),
    g("stats socket", Partial("UNIX paths, ipv4@/ipv6@ addresses and fd@; the commands listed under Runtime API")),
    g("stats timeout", Supported),
    g("strict-limits", Supported),
    g("uid", Supported),
    g("ulimit-n", Supported),
    g("unix-bind", Partial("`prefix`, `mode`, `uid`/`user`, `gid`/`group` for the UNIX sockets of the proxies' `bind` lines that do not set their own (not `stats socket`, as in HAProxy); applied to every proxy, even one read before it (HAProxy: those after it)")),
    g("unsetenv", Supported),
    g("user", Supported),
    g("wurfl-cache-size", NotYet),
    g("wurfl-data-file", NotYet),
    g("wurfl-information-list", NotYet),
    g("wurfl-information-list-separator", NotYet),
    g("busy-polling", Partial("checked as HAProxy 2.6 checks it; no effect: a worker with nothing to do sleeps in epoll_wait")),
    g("max-spread-checks", Supported),
    g("maxcompcpuusage", Partial("as HAProxy: no compression begins, and those under way go one level down per block, while the worker's idle share of the last second (from its thread's CPU time, sampled each second) is under 100 minus the value; zstd and br (Fulcrum's own) keep their level")),
    g("maxcomprate", Partial("as HAProxy: no compression begins while the compressors' input rate is over the limit, and those under way go one level down per block (to 0, stored blocks) while their output rate is; zstd and br (Fulcrum's own) keep their level")),
    g("maxconn", Supported),
    g("maxconnrate", Supported),
    g("maxpipes", Partial("accepted, no effect: Fulcrum never splices")),
    g("maxsessrate", Supported),
    g("maxsslconn", Supported),
    g("maxsslrate", Supported),
    g("maxzlibmem", Partial("checked as HAProxy 2.6 checks it; no effect: compression memory is not limited (nor is it in HAProxy built with libslz, as Debian builds it)")),
    g("no-memory-trimming", Partial("checked as HAProxy 2.6 checks it; no effect: Fulcrum does not trim the allocator's memory")),
    g("noepoll", Partial("checked as HAProxy 2.6 checks it; no effect: the workers' event loops always use epoll")),
    g("noevports", Partial("accepted, no effect on Linux (as in HAProxy)")),
    g("nogetaddrinfo", Partial("checked as HAProxy 2.6 checks it; no effect: host names are resolved through getaddrinfo")),
    g("nokqueue", Partial("accepted, no effect on Linux (as in HAProxy)")),
    g("nopoll", Partial("checked as HAProxy 2.6 checks it; no effect: the workers' event loops always use epoll")),
    g("noreuseport", Supported),
    g("nosplice", Partial("accepted, no effect: Fulcrum never splices")),
    g("profiling.tasks", Supported),
    g("server-state-base", Supported),
    g("server-state-file", Partial("admin state, weights, check state and a DOWN state are restored; addresses and ports come from the configuration")),
    g("spread-checks", Supported),
    g("ssl-engine", NotYet),
    g("ssl-mode-async", Partial("checked as HAProxy 2.6 checks it; no effect: no asynchronous crypto engines (rustls)")),
    g("tune.buffers.limit", Partial("checked as HAProxy 2.6 checks it; no effect: buffers are not counted against a process-wide limit")),
    g("tune.buffers.reserve", Partial("checked as HAProxy 2.6 checks it; no effect: buffers are not counted against a process-wide limit")),
    g("tune.bufsize", Supported),
    g("tune.comp.maxlevel", Supported),
    g("tune.fail-alloc", Partial("checked as HAProxy 2.6 checks it; no effect: no allocation failures are simulated")),
    g("tune.fd.edge-triggered", Partial("checked as HAProxy 2.6 checks it; no effect: epoll is always edge-triggered (experimental, as in HAProxy)")),
    g("tune.h2.header-table-size", Supported),
    g("tune.h2.initial-window-size", Supported),
    g("tune.h2.max-concurrent-streams", Supported),
    g("tune.h2.max-frame-size", Supported),
    g("tune.http.cookielen", Supported),
    g("tune.http.logurilen", Supported),
    g("tune.http.maxhdr", Supported),
    g("tune.idle-pool.shared", Partial("accepted, no effect: idle server connections are kept per worker thread (HAProxy shares them across threads)")),
    g("tune.idletimer", Partial("checked as HAProxy 2.6 checks it; no effect: no splicing, so no idle-stream heuristic")),
    g("tune.lua.forced-yield", Partial("read and checked as HAProxy 2.6 reads it; not applied yet")),
    g("tune.lua.maxmem", Partial("read and checked as HAProxy 2.6 reads it; not applied yet")),
    g("tune.lua.service-timeout", Partial("read and checked as HAProxy 2.6 reads it; not applied yet")),
    g("tune.lua.session-timeout", Partial("read and checked as HAProxy 2.6 reads it; not applied yet")),
    g("tune.lua.task-timeout", Partial("read and checked as HAProxy 2.6 reads it; not applied yet")),
    g("tune.maxaccept", Supported),
    g("tune.maxpollevents", Partial("checked as HAProxy 2.6 checks it; no effect: each worker's tokio loop sizes its own event batches")),
    g("tune.maxrewrite", Supported),
    g("tune.pattern.cache-size", Partial("checked as HAProxy 2.6 checks it; no effect: Fulcrum keeps no cache of pattern matches")),
    g("tune.peers.max-updates-at-once", Partial("checked as HAProxy 2.6 checks it; no effect: no peers yet")),
    g("tune.pipesize", Partial("accepted, no effect: Fulcrum never splices")),
    g("tune.pool-high-fd-ratio", Supported),
    g("tune.pool-low-fd-ratio", Supported),
    g("tune.quic.frontend.conn-tx-buffers.limit", NotYet),
    g("tune.quic.frontend.max-idle-timeout", NotYet),
    g("tune.quic.frontend.max-streams-bidi", NotYet),
    g("tune.quic.retry-threshold", NotYet),
    g("tune.rcvbuf.client", Supported),
    g("tune.rcvbuf.server", Supported),
    g("tune.recv_enough", Partial("checked as HAProxy 2.6 checks it; no effect: reads take what the socket has, up to the buffer")),
    g("tune.runqueue-depth", Partial("checked as HAProxy 2.6 checks it; no effect: each worker's tokio loop runs every ready task of a turn")),
    g("tune.sched.low-latency", Partial("checked as HAProxy 2.6 checks it; no effect: no task priorities in a worker's loop")),
    g("tune.sndbuf.client", Supported),
    g("tune.sndbuf.server", Supported),
    g("tune.ssl.cachesize", Partial("the size of the TLS 1.2 session-id cache shared by all workers")),
    g("tune.ssl.capture-buffer-size", Supported),
    g("tune.ssl.capture-cipherlist-size", Supported),
    g("tune.ssl.default-dh-param", Partial("accepted: no DHE key exchange (ECDHE only)")),
    g("tune.ssl.force-private-cache", Partial("accepted, no effect: the cache is shared by the workers of one process")),
    g("tune.ssl.hard-maxrecord", Partial("accepted, no effect")),
    g("tune.ssl.keylog", Partial("the secrets of client connections (`ssl_fc_*`): TLS 1.3's traffic, handshake and exporter secrets, TLS 1.2's master secret (`ssl_fc_session_key`), the client and server randoms")),
    g("tune.ssl.lifetime", Partial("lifetime of session tickets and cache entries")),
    g("tune.ssl.maxrecord", Partial("accepted, no effect: records are as large as the data written")),
    g("tune.ssl.ssl-ctx-cache-size", Partial("accepted, no effect")),
    g("tune.vars.global-max-size", Partial("checked as HAProxy 2.6 checks it; no effect: variables are not limited in size")),
    g("tune.vars.proc-max-size", Partial("checked as HAProxy 2.6 checks it; no effect: variables are not limited in size")),
    g("tune.vars.reqres-max-size", Partial("checked as HAProxy 2.6 checks it; no effect: variables are not limited in size")),
    g("tune.vars.sess-max-size", Partial("checked as HAProxy 2.6 checks it; no effect: variables are not limited in size")),
    g("tune.vars.check-max-size", Partial("checked as HAProxy 2.6 checks it; no effect: variables are not limited in size")),
    g("tune.vars.txn-max-size", Partial("checked as HAProxy 2.6 checks it; no effect: variables are not limited in size")),
    g("tune.zlib.memlevel", Partial("checked (1 to 9, as HAProxy built with zlib); zlib-rs keeps its memory level 8")),
    g("tune.zlib.windowsize", Supported),
    g("quiet", Supported),
    g("zero-warning", Supported),
    g("master-worker", Partial("accepted (as -W): Fulcrum reloads in place on SIGUSR2 or `reload`; under `chroot`, a master outside the jail reads the files of each reload (see the command-line note)")),
    g("nbproc", Obsolete("nbproc is not supported any more since HAProxy 2.5. Threads will automatically be used on multi-processor machines if available.")),
];

/// HAProxy 2.6's proxy keywords (manual §4.1 matrix), plus the legacy timeouts Fulcrum accepts.
pub static PROXY: &[Keyword] = &[
    p("acl", D|F|L|B, Partial("not in defaults sections; the fetches and converters listed below")),
    p("backlog", D|F|L, Supported),
    p("balance", D|L|B, Partial("roundrobin, static-rr, leastconn, first, source, random[(<draws>)], uri, url_param, hdr(); not rdp-cookie(), hash, url_param check_post")),
    p("bind", F|L, Partial("addresses, host names, ranges, lists, unix@, fd@; options name, backlog, v4v6, maxconn")),
    p("bind-process", D|F|L|B, Partial("as HAProxy 2.6 takes it: 1, all, odd, even (one process), with its warning that it has no effect; other numbers refused")),
    p("block", D|F|L|B, Obsolete("The 'block' directive is not supported anymore since HAProxy 2.1. Use 'http-request deny' which uses the exact same syntax.")),
    p("capture cookie", F|L, Supported),
    p("capture request header", F|L, Supported),
    p("capture response header", F|L, Supported),
    p("cliexp", D|F|L|B, Obsolete("The 'cliexp' directive is not supported anymore since HAProxy 2.1. Use 'http-request replace-path', 'http-request replace-uri' or 'http-request replace-header' instead.")),
    p("clitcpka-cnt", D|F|L, Supported),
    p("clitcpka-idle", D|F|L, Supported),
    p("clitcpka-intvl", D|F|L, Supported),
    p("compression", D|F|L|B, Partial("algo identity, gzip, deflate, raw-deflate (and zstd, br: Fulcrum extensions); type; offload (with HAProxy 2.6's rules for what is compressed); see the compression notes")),
    p("cookie", D|L|B, Partial("insert, rewrite, prefix, indirect, nocache, preserve, httponly, secure, domain, maxidle, maxlife; not postonly, dynamic, attr")),
    p("declare capture", F|L, Supported),
    p("default-server", D|L|B, Partial("the server options marked supported below; not id")),
    p("default_backend", D|F|L, Supported),
    p("description", F|L|B, Partial("recorded for the stats page, which does not exist yet")),
    p("disabled", D|F|L|B, Partial("the proxy is not started: a frontend binds nothing, a backend gives every request a 503 (`SC`, no server chosen) and checks nothing, neither is in the statistics; HAProxy's post-parse checks skip it (a `track` into it included); `enabled` undoes a `defaults` section's")),
    p("dispatch", L|B, NotYet),
    p("email-alert from", D|F|L|B, Supported),
    p("email-alert level", D|F|L|B, Supported),
    p("email-alert mailers", D|F|L|B, Supported),
    p("email-alert myhostname", D|F|L|B, Supported),
    p("email-alert to", D|F|L|B, Supported),
    p("enabled", D|F|L|B, Supported),
    p("errorfile", D|F|L|B, Supported),
    p("errorfiles", D|F|L|B, Supported),
    p("errorloc", D|F|L|B, Supported),
    p("errorloc302", D|F|L|B, Supported),
    p("errorloc303", D|F|L|B, Supported),
    p("error-log-format", D|F|L, Supported),
    p("force-persist", L|B, Supported),
    p("filter", F|L|B, Partial("compression, cache, trace, spoe (see the SPOE notes), and HAProxy 2.7's bwlim-in and bwlim-out (see the filters notes); not fcgi-app (implicit with use-fcgi-app), opentracing")),
    p("fullconn", D|L|B, Supported),
    p("grace", D|F|L|B, Obsolete("the 'grace' keyword is not supported any more since HAProxy version 2.5.")),
    p("hash-type", D|L|B, Supported),
    p("http-after-response", D|F|L|B, Partial("allow, set-header, add-header, del-header, replace-header, replace-value, set-status, set-var(), set-var-fmt(), unset-var(), strict-mode; in a named defaults section too (its rules run before the proxy's own, with HAProxy's restrictions on who may use it)")),
    p("http-check comment", D|L|B, Supported),
    p("http-check connect", D|L|B, Partial("port, addr, send-proxy, linger, comment, default, ssl, sni, alpn, via-socks4; not proto, port expressions")),
    p("http-check disable-on-404", D|L|B, Supported),
    p("http-check expect", D|L|B, Partial("status, rstatus, string, rstring, hdr, fhdr (name-lf and value-lf too), min-recv, ok-status, error-status, tout-status, comment; on-success/on-error as plain text (not log-format); not string-lf, status-code")),
    p("http-check send", D|L|B, Supported),
    p("http-check send-state", D|L|B, Supported),
    p("http-check set-var", D|L|B, Partial("check. and proc. scopes; a check sees its check. variables, constants and its server's response (res.hdr, res.fhdr, res.payload...), not process variables")),
    p("http-check unset-var", D|L|B, Partial("check. and proc. scopes; a check sees its check. variables, constants and its server's response (res.hdr, res.fhdr, res.payload...), not process variables")),
    p("http-error", D|F|L|B, Supported),
    p("http-request", D|F|L|B, Partial("use-service prometheus-exporter, send-spoe-group (see the SPOE notes), cache-use <cache>, set-bandwidth-limit (HAProxy 2.7's; see the filters notes), auth [realm <realm>] (the proxy's 401 message with its WWW-Authenticate header), track-sc*, sc-inc-gpc*, sc-set-gpt*, set-src, set-src-port, set-dst, set-dst-port (for the request: the next one starts from the session's addresses), allow, deny, return, redirect, tarpit (no reply options), reject, silent-drop, set-header, add-header, del-header (with -m str|beg|end|sub|reg), replace-header, replace-value, set-path, set-pathq, set-query, set-uri, set-method, replace-uri, replace-path, replace-pathq, set-var(), set-var-fmt(), unset-var(), wait-for-body, strict-mode, early-hint; in a named defaults section too (its rules run before the proxy's own, with HAProxy's restrictions on who may use it)")),
    p("http-response", D|F|L|B, Partial("cache-store <cache>, send-spoe-group, set-bandwidth-limit (HAProxy 2.7's), allow, deny, return, redirect, silent-drop, set-header, add-header, del-header, replace-header, replace-value, set-status, set-var(), set-var-fmt(), unset-var(), strict-mode, wait-for-body (the response body, or at-least of it, read first; 504 when the time runs out); in a named defaults section too (its rules run before the proxy's own, with HAProxy's restrictions on who may use it)")),
    p("http-reuse", D|L|B, Supported),
    p("http-send-name-header", D|L|B, Partial("set on each try to the server's name (mode http)")),
    p("id", F|L|B, Supported),
    p("ignore-persist", L|B, Supported),
    p("load-server-state-from-file", D|L|B, Supported),
    p("log", D|F|L|B, Partial("as in global, plus `log global` and `no log`; what is sent: server state changes and alerts, `Connect from ...` lines without a log format, and one line per stream in the proxy's format (`option tcplog`, `option httplog`, `log-format`...)")),
    p("log-format", D|F|L, Supported),
    p("log-format-sd", D|F|L, Supported),
    p("log-tag", D|F|L|B, Supported),
    p("max-keep-alive-queue", D|L|B, Supported),
    p("maxconn", D|F|L, Supported),
    p("mode", D|F|L|B, Supported),
    p("monitor fail", F|L, Supported),
    p("monitor-net", D|F|L|B, Obsolete("'monitor-net' doesn't exist anymore. Please use 'http-request return status 200 if { src <net> }' instead.")),
    p("monitor-uri", D|F|L, Supported),
    p("option abortonclose", D|L|B, Supported),
    p("option accept-invalid-http-request", D|F|L, Partial("HTTP/1 requests: any byte but LF in a header name, target bytes above 0x7F, a Host naming another host than an absolute target, any version of letters, digits, `.` and `/`, HTTP/0.9 `GET <target>` (as HTTP/1.0); each request let through is kept for `show errors`. An odd version goes on as HTTP/1.0 or HTTP/1.1 (HAProxy passes it as written)")),
    p("option accept-invalid-http-response", D|L|B, Partial("HTTP/1 responses: any byte but LF in a header name, any version of letters, digits, `.` and `/`; each response let through is kept for `show errors`")),
    p("option allbackups", D|L|B, Supported),
    p("option checkcache", D|L|B, Partial("accepted; cacheable responses with cookies are not blocked yet")),
    p("option clitcpka", D|F|L, Supported),
    p("option contstats", D|F|L, Partial("accepted; byte counters are still added when each stream ends (a long tunnel shows its bytes once closed)")),
    p("option disable-h2-upgrade", D|F|L, Supported),
    p("option dontlog-normal", D|F|L, Supported),
    p("option dontlognull", D|F|L, Supported),
    p("option forceclose", D|F|L|B, Obsolete("option 'forceclose' is not supported any more since HAProxy 2.0, please just remove it, or use 'option httpclose' if absolutely needed.")),
    p("option forwardfor", D|F|L|B, Partial("except takes an address or network, not a host name")),
    p("option h1-case-adjust-bogus-client", D|F|L, Partial("the names `h1-case-adjust` lists get its case on the way out to HTTP/1 peers; other names keep the case they came with (HAProxy sends them in lower case)")),
    p("option h1-case-adjust-bogus-server", D|L|B, Partial("the names `h1-case-adjust` lists get its case on the way out to HTTP/1 peers; other names keep the case they came with (HAProxy sends them in lower case)")),
    p("option http-buffer-request", D|F|L|B, Supported),
    p("option http-ignore-probes", D|F|L, Supported),
    p("option http-keep-alive", D|F|L|B, Supported),
    p("option http-no-delay", D|F|L|B, Partial("accepted, no effect")),
    p("option http-pretend-keepalive", D|L|B, Partial("accepted, no effect: server connections are kept alive unless http-server-close/httpclose")),
    p("option http-restrict-req-hdr-names", D|F|L|B, Supported),
    p("option http-server-close", D|F|L|B, Supported),
    p("option http-tunnel", D|F|L|B, Obsolete("option 'http-tunnel' is not supported any more since HAProxy 2.1, please just remove it, it shouldn't be needed.")),
    p("option http-use-proxy-header", D|F|L, Partial("accepted; Proxy-Connection is not consulted (it is removed as hop-by-hop)")),
    p("option http_proxy", D|F|L|B, Obsolete("option 'http_proxy' is not supported any more since HAProxy 2.5. This option stopped working in HAProxy 1.9 and usually had nasty side effects. It can be more reliably implemented with combinations of 'http-request set-dst' and 'http-request set-uri', and even 'http-request do-resolve' if DNS resolution is desired.")),
    p("option httpchk", D|L|B, Supported),
    p("option httpclose", D|F|L|B, Supported),
    p("option httplog", D|F|L, Supported),
    p("option httpslog", D|F|L, Supported),
    p("option independent-streams", D|F|L|B, Partial("in tunnels (`mode tcp`, WebSocket, CONNECT), as HAProxy 2.6: what is sent to a side does not refresh its read timeout (`timeout client`/`server`/`tunnel`), whose expiry ends that side's direction only (as a FIN would; the other goes on, and the log says `cD`/`sD`); an HTTP message's transfer is timed as without it")),
    p("option ldap-check", D|L|B, Supported),
    p("option external-check", D|L|B, Supported),
    p("option log-health-checks", D|L|B, Supported),
    p("option log-separate-errors", D|F|L, Supported),
    p("option logasap", D|F|L, Supported),
    p("option mysql-check", D|L|B, Supported),
    p("option nolinger", D|F|L|B, Supported),
    p("option originalto", D|F|L|B, Partial("except takes an address or network, not a host name")),
    p("option persist", D|L|B, Supported),
    p("option pgsql-check", D|L|B, Supported),
    p("option prefer-last-server", D|L|B, Partial("a client's next request goes to the server of the connection its session keeps (connections private to it: `http-reuse never`, a PROXY header, as in HAProxy 2.6), unless the algorithm maps a key to a server; `max-keep-alive-queue` not yet")),
    p("option redispatch", D|L|B, Supported),
    p("option redis-check", D|L|B, Supported),
    p("option smtpchk", D|L|B, Supported),
    p("option socket-stats", D|F|L, Partial("a statistics row (`show stat`, type 3, `sock-<id>` or the bind's `name`) and counters for each bind line, as HAProxy 2.6 fills them; a line of several addresses has one row, not one per socket; the exporter's `haproxy_listener_*` families")),
    p("option splice-auto", D|F|L|B, Partial("accepted, no effect")),
    p("option splice-request", D|F|L|B, Partial("accepted, no effect")),
    p("option splice-response", D|F|L|B, Partial("accepted, no effect")),
    p("option spop-check", D|L|B, Supported),
    p("option srvtcpka", D|L|B, Supported),
    p("option ssl-hello-chk", D|L|B, Supported),
    p("option tcp-check", D|L|B, Supported),
    p("option tcp-smart-accept", D|F|L, Partial("accepted, no effect")),
    p("option tcp-smart-connect", D|L|B, Partial("accepted, no effect")),
    p("option tcpka", D|F|L|B, Supported),
    p("option tcplog", D|F|L, Supported),
    p("option transparent", D|L|B, NotYet),
    p("option idle-close-on-response", D|F|L, Supported),
    p("external-check command", D|L|B, Supported),
    p("external-check path", D|L|B, Supported),
    p("persist rdp-cookie", D|L|B, Supported),
    p("rate-limit sessions", D|F|L, Supported),
    p("redirect", F|L|B, Partial("location, prefix, scheme, code, drop-query, append-slash, ignore-empty; not set-cookie, clear-cookie")),
    p("redisp", D|F|L|B, Obsolete("keyword 'redisp' directive is not supported anymore since HAProxy 2.1. Use 'option redispatch'.")),
    p("redispatch", D|F|L|B, Obsolete("keyword 'redispatch' directive is not supported anymore since HAProxy 2.1. Use 'option redispatch'.")),
    p("reqadd", D|F|L|B, Obsolete("The 'reqadd' directive is not supported anymore since HAProxy 2.1. Use 'http-request add-header' instead.")),
    p("reqallow", D|F|L|B, Obsolete("The 'reqallow' directive is not supported anymore since HAProxy 2.1. Use 'http-request allow' instead.")),
    p("reqdel", D|F|L|B, Obsolete("The 'reqdel' directive is not supported anymore since HAProxy 2.1. Use 'http-request del-header' instead.")),
    p("reqdeny", D|F|L|B, Obsolete("The 'reqdeny' not supported anymore since HAProxy 2.1. Use 'http-request deny' instead.")),
    p("reqiallow", D|F|L|B, Obsolete("The 'reqiallow' directive is not supported anymore since HAProxy 2.1. Use 'http-request allow' instead.")),
    p("reqidel", D|F|L|B, Obsolete("The 'reqidel' directive is not supported anymore since HAProxy 2.1. Use 'http-request del-header' instead.")),
    p("reqideny", D|F|L|B, Obsolete("The 'reqideny' directive is not supported anymore since HAProxy 2.1. Use 'http-request deny' instead.")),
    p("reqipass", D|F|L|B, Obsolete("The 'reqipass' directive is not supported anymore since HAProxy 2.1.")),
    p("reqirep", D|F|L|B, Obsolete("The 'reqirep' directive is not supported anymore since HAProxy 2.1. Use 'http-request replace-header' instead.")),
    p("reqitarpit", D|F|L|B, Obsolete("The 'reqitarpit' directive is not supported anymore since HAProxy 2.1. Use 'http-request tarpit' instead.")),
    p("reqpass", D|F|L|B, Obsolete("The 'reqpass' not supported anymore since HAProxy 2.1.")),
    p("reqrep", D|F|L|B, Obsolete("The 'reqrep' directive is not supported anymore since HAProxy 2.1. Use 'http-request replace-path', 'http-request replace-uri' or 'http-request replace-header' instead.")),
    p("reqtarpit", D|F|L|B, Obsolete("The 'reqtarpit' directive is not supported anymore since HAProxy 2.1. Use 'http-request tarpit' instead.")),
    p("retries", D|L|B, Supported),
    p("retry-on", D|L|B, Partial("empty-response, junk-response, response-timeout and status codes retry requests without a body on a new connection, up to `retries`; connection failures are always retried per `retries`; 0rtt-rejected has no effect")),
    p("rspadd", D|F|L|B, Obsolete("The 'rspadd' directive is not supported anymore since HAProxy 2.1. Use 'http-response add-header' instead.")),
    p("rspdel", D|F|L|B, Obsolete("The 'rspdel' directive is not supported anymore since HAProxy 2.1. Use 'http-response del-header' .")),
    p("rspdeny", D|F|L|B, Obsolete("The 'rspdeny' directive is not supported anymore since HAProxy 2.1. Use 'http-response deny' instead.")),
    p("rspidel", D|F|L|B, Obsolete("The 'rspidel' directive is not supported anymore since HAProxy 2.1. Use 'http-response del-header' instead.")),
    p("rspideny", D|F|L|B, Obsolete("The 'rspideny' directive is not supported anymore since HAProxy 2.1. Use 'http-response deny' instead.")),
    p("rspirep", D|F|L|B, Obsolete("The 'rspirep' directive is not supported anymore since HAProxy 2.1. Use 'http-response replace-header' instead.")),
    p("rsprep", D|F|L|B, Obsolete("The 'rsprep' directive is not supported anymore since HAProxy 2.1. Use 'http-response replace-header' instead.")),
    p("server", L|B, Partial("the server options marked supported below")),
    p("server-state-file-name", D|L|B, Supported),
    p("server-template", L|B, NotYet),
    p("source", D|L|B, Partial("`source <ip>[:<port>]`, `usesrc <ip>[:<port>]|client|clientip|hdr_ip(<name>[,<occ>])` (the last: the IPv4 address in that occurrence of the request's header, a 500 `IC` without one, as in HAProxy; `IP_TRANSPARENT`: needs `CAP_NET_ADMIN` and the routing of transparent proxying) and `interface <name>` bind the connections to servers without their own `source` (health checks too, without `usesrc`, as HAProxy's); host names and `usesrc hdr_ip()` not yet")),
    p("srvexp", D|F|L|B, Obsolete("The 'srvexp' directive is not supported anymore since HAProxy 2.1. Use 'http-response replace-header' instead.")),
    p("srvtcpka-cnt", D|L|B, Supported),
    p("srvtcpka-idle", D|L|B, Supported),
    p("srvtcpka-intvl", D|L|B, Supported),
    p("stats admin", F|L|B, Supported),
    p("stats auth", D|F|L|B, Supported),
    p("stats enable", D|F|L|B, Supported),
    p("stats hide-version", D|F|L|B, Supported),
    p("stats http-request", F|L|B, Supported),
    p("stats realm", D|F|L|B, Supported),
    p("stats refresh", D|F|L|B, Supported),
    p("stats scope", D|F|L|B, Supported),
    p("stats show-desc", D|F|L|B, Supported),
    p("stats show-legends", D|F|L|B, Supported),
    p("stats show-modules", D|F|L|B, Partial("accepted; the page shows no extra module columns (their counters are in ;csv and show stat)")),
    p("stats show-node", D|F|L|B, Supported),
    p("stats uri", D|F|L|B, Supported),
    p("stick match", L|B, Supported),
    p("stick on", L|B, Supported),
    p("stick store-request", L|B, Supported),
    p("stick store-response", L|B, Supported),
    p("stick-table", F|L|B, Partial("every key and data type of 2.6; 'peers' is accepted and nothing is synchronised (no peers sections); a reload keeps a table declared the same way, with its entries")),
    p("tcp-check comment", D|L|B, Supported),
    p("tcp-check connect", D|L|B, Partial("port, addr, send-proxy, linger, comment, default, ssl, sni, alpn, via-socks4; not proto, port expressions")),
    p("tcp-check expect", D|L|B, Partial("string, rstring, binary, rbinary, min-recv, ok-status, error-status, tout-status, comment; on-success/on-error as plain text (not log-format); not string-lf, binary-lf, status-code")),
    p("tcp-check send", D|L|B, Supported),
    p("tcp-check send-lf", D|L|B, Partial("rendered at each run with the check's variables and the bytes received so far (fetches that need a stream, or the server, give nothing)")),
    p("tcp-check send-binary", D|L|B, Supported),
    p("tcp-check send-binary-lf", D|L|B, Partial("rendered at each run with the check's variables and the bytes received so far (fetches that need a stream, or the server, give nothing)")),
    p("tcp-check set-var", D|L|B, Partial("check. and proc. scopes; a check sees its check. variables, constants and its server's response (res.hdr, res.fhdr, res.payload...), not process variables")),
    p("tcp-check unset-var", D|L|B, Partial("check. and proc. scopes; a check sees its check. variables, constants and its server's response (res.hdr, res.fhdr, res.payload...), not process variables")),
    p("tcp-request connection", D|F|L, Partial("accept, reject, silent-drop, track-sc*, sc-inc-gpc*, sc-set-gpt*, set-var, set-var-fmt, unset-var, set-src, set-src-port, set-dst, set-dst-port (the connection's own addresses: fc_src, fc_dst), expect-proxy layer4 and expect-netscaler-cip layer4 (their conditions are tested before the accept/reject rules, whatever their order; the NetScaler header's magic number is the bind line's, 0 without `accept-netscaler-cip`, as in HAProxy); in a named defaults section too (its rules run before the proxy's own, with HAProxy's restrictions on who may use it)")),
    p("tcp-request content", D|F|L|B, Partial("accept, reject, silent-drop, send-spoe-group, track-sc*, sc-inc-gpc*, sc-set-gpt*, set-var, set-var-fmt, unset-var, set-src, set-src-port, set-dst, set-dst-port, set-bandwidth-limit (HAProxy 2.7's; see the filters notes) (in mode tcp they may read req.ssl_sni, req.ssl_alpn, req.ssl_hello_type, req.ssl_ver, req.len, req.payload, req.payload_lv, a rule waiting for more bytes under inspect-delay when these cannot decide it yet, and on ssl binds run after the handshake, so ssl_fc_* work); a backend's run after the frontend's, once it is chosen; in a named defaults section too (its rules run before the proxy's own, with HAProxy's restrictions on who may use it)")),
    p("tcp-request inspect-delay", D|F|L|B, Partial("mode tcp: the first bytes are waited for until a TLS record is complete, the bytes are not TLS, the buffer is full or the delay ends; in a named defaults section too (its rules run before the proxy's own, with HAProxy's restrictions on who may use it)")),
    p("tcp-request session", D|F|L, Partial("accept, reject, silent-drop, track-sc*, sc-inc-gpc*, sc-set-gpt*, set-var, set-var-fmt, unset-var, set-src, set-src-port, set-dst, set-dst-port (the session's addresses); after the PROXY header and the TLS handshake")),
    p("tcp-response content", D|F|L|B, Partial("accept, reject, close, silent-drop, sc-inc-gpc*, sc-set-gpt*, set-var, set-var-fmt, unset-var, set-bandwidth-limit (HAProxy 2.7's), send-spoe-group (asks the backend's engine; nothing without `tcp-response inspect-delay`, as HAProxy 2.6 was measured to do); mode http: before the http-response rules, on the response's head (res.len, res.payload see nothing); mode tcp: rules that read the response (res.len, res.payload*, WAIT_END) are not supported yet, others run once connected; in a named defaults section too")),
    p("tcp-response inspect-delay", D|F|L|B, Partial("how long tcp-response content rules may wait for a condition that is not decided yet (WAIT_END, res.len...)")),
    p("timeout check", D|L|B, Supported),
    p("timeout client", D|F|L, Supported),
    p("timeout client-fin", D|F|L, Supported),
    p("timeout connect", D|L|B, Supported),
    p("timeout http-keep-alive", D|F|L|B, Supported),
    p("timeout http-request", D|F|L|B, Supported),
    p("timeout queue", D|L|B, Supported),
    p("timeout server", D|L|B, Supported),
    p("timeout server-fin", D|L|B, Supported),
    p("timeout tarpit", D|F|L|B, Supported),
    p("timeout tunnel", D|L|B, Supported),
    p("transparent", D|L|B, NotYet),
    p("unique-id-format", D|F|L, Partial("the id is made as the request rules begin (HAProxy: when first needed, at the latest after the backend's rules), so `%b` in it names the frontend")),
    p("unique-id-header", D|F|L, Supported),
    p("use_backend", F|L, Supported),
    p("use-fcgi-app", L|B, Supported),
    p("use-server", L|B, Partial("HTTP and mode tcp (its conditions see the first bytes, req.ssl_sni for one); a server by name or by a log-format; evaluated after the backend's request rules and before cookies and stick tables, which then do not assign the server (a prefix cookie is still stripped); a server that is down is passed over (unless `option persist` or `force-persist` says otherwise)")),
    p("contimeout", D|L|B, Partial("legacy (removed in HAProxy 2.1): accepted with a warning as 'timeout connect'")),
    p("clitimeout", D|F|L, Partial("legacy (removed in HAProxy 2.1): accepted with a warning as 'timeout client'")),
    p("srvtimeout", D|L|B, Partial("legacy (removed in HAProxy 2.1): accepted with a warning as 'timeout server'")),
];

/// Bind options (manual §5.1).
pub static BIND_OPTIONS: &[Keyword] = &[
    g("accept-netscaler-cip", Supported),
    g("accept-proxy", Partial("PROXY protocol v1 and v2 (TLVs: authority, unique id, any type through fc_pp_tlv); a bad header closes the connection with a log line")),
    g("allow-0rtt", Partial("accepted; early data is not accepted (no replay protection for it yet)")),
    g("alpn", Partial("offered as configured; `h2` serves HTTP/2 on an HTTP frontend (see the HTTP/2 notes below); a client whose protocols share none with the list gets a no_application_protocol alert (RFC 7301; HAProxy on OpenSSL goes on without ALPN)")),
    g("backlog", Supported),
    g("ca-file", Supported),
    g("ca-ignore-err", Partial("accepted, no effect")),
    g("ca-sign-file", NotYet),
    g("ca-sign-pass", NotYet),
    g("ca-verify-file", Supported),
    g("ciphers", Partial("as ssl-default-bind-ciphers")),
    g("ciphersuites", Partial("as ssl-default-bind-ciphersuites")),
    g("crl-file", Supported),
    g("crt", Partial("PEM bundles (chain + key, RSA, ECDSA, Ed25519; .key companion files; a DER .ocsp companion is checked as HAProxy checks it, against the issuer from the chain or the .issuer companion, then stapled), directories, multi-cert bundles (.rsa/.ecdsa/.dsa), X.509 v1 certificates; a .sctl companion is not sent (a warning says so); no OCSP updates")),
    g("crt-ignore-err", Partial("accepted, no effect")),
    g("crt-list", Partial("lines <crt> [[<ssl options>]] [[!]<sni filter>...]; a line's options (alpn, verify, ca-file, crl-file, ciphers, ciphersuites, curves, ecdhe, ssl-min-ver, ssl-max-ver, no-ca-names, allow-0rtt, npn) apply to its names: the ClientHello is read first, then that line's configuration runs the handshake")),
    g("curves", Partial("as ssl-default-bind-curves")),
    g("defer-accept", Supported),
    g("ecdhe", Partial("as curves")),
    g("expose-fd", Partial("accepted: a new process takes the listening sockets over with pidfd_getfd (-sf), without -x")),
    g("force-sslv3", Partial("refused at start-up: SSLv3 is not offered")),
    g("force-tlsv10", Partial("refused at start-up: TLS 1.0 is not offered")),
    g("force-tlsv11", Partial("refused at start-up: TLS 1.1 is not offered")),
    g("force-tlsv12", Supported),
    g("force-tlsv13", Supported),
    g("generate-certificates", NotYet),
    g("gid", Supported),
    g("group", Supported),
    g("id", Supported),
    g("interface", Supported),
    g("level", Supported),
    g("maxconn", Supported),
    g("mode", Supported),
    g("mss", Supported),
    g("name", Supported),
    g("namespace", NotYet),
    g("nice", Partial("checked as HAProxy 2.6 checks it; no effect: a worker does not favour one listener's connections over another's")),
    g("no-ca-names", Supported),
    g("no-sslv3", Supported),
    g("no-tls-tickets", Supported),
    g("no-tlsv10", Supported),
    g("no-tlsv11", Supported),
    g("no-tlsv12", Supported),
    g("no-tlsv13", Supported),
    g("npn", Partial("accepted and ignored with a warning (NPN is obsolete; use alpn)")),
    g("prefer-client-ciphers", Supported),
    g("process", Partial("as HAProxy 2.6 takes it (one process): 1, all, odd or even, with its deprecation warning; a '/<threads>' part is taken as `thread <threads>`")),
    g("proto", Partial("h2 (every connection speaks HTTP/2 at once, prior knowledge; a client that does not gets its connection closed) and h1 (HTTP/1 only: no switch to HTTP/2 on its preface, h2 not chosen by ALPN)")),
    g("quic-cc-algo", NotYet),
    g("quic-force-retry", NotYet),
    g("severity-output", NotYet),
    g("shards", NotYet),
    g("ssl", Supported),
    g("ssl-max-ver", Supported),
    g("ssl-min-ver", Partial("TLSv1.2 and TLSv1.3; lower versions are never offered")),
    g("strict-sni", Supported),
    g("tcp-ut", Supported),
    g("tfo", Supported),
    g("thread", Partial("only the workers of those threads accept on the line's sockets; threads beyond `nbthread` are left out, and a set naming none of the process's is refused with HAProxy 2.6's message; one thread group (`1/<set>`)")),
    g("tls-ticket-keys", Partial("files of base64 keys (48 or 80 bytes each, at least 3) as HAProxy reads them: the last three decrypt, the penultimate encrypts; tickets are sealed with AES-GCM and resume on Fulcrum processes sharing the file (not on OpenSSL-based ones)")),
    g("transparent", Supported),
    g("uid", Supported),
    g("user", Supported),
    g("v4v6", Supported),
    g("v6only", Supported),
    g("verify", Supported),
];

/// The bind options that take a value (HAProxy's bind keyword table: `skip` 1); the others
/// take none.
const BIND_OPTIONS_WITH_VALUE: &[&str] = &[
    "accept-netscaler-cip",
    "alpn",
    "backlog",
    "ca-file",
    "ca-ignore-err",
    "ca-sign-file",
    "ca-sign-pass",
    "ca-verify-file",
    "ciphers",
    "ciphersuites",
    "crl-file",
    "crt",
    "crt-ignore-err",
    "crt-list",
    "curves",
    "ecdhe",
    "expose-fd",
    "gid",
    "group",
    "id",
    "interface",
    "level",
    "maxconn",
    "mode",
    "mss",
    "name",
    "namespace",
    "nice",
    "npn",
    "process",
    "proto",
    "quic-cc-algo",
    "severity-output",
    "shards",
    "ssl-max-ver",
    "ssl-min-ver",
    "tcp-ut",
    "thread",
    "tls-ticket-keys",
    "uid",
    "user",
    "verify",
];

/// How many words follow bind option `name` as its value (0 or 1).
pub fn bind_option_args(name: &str) -> usize {
    usize::from(BIND_OPTIONS_WITH_VALUE.contains(&name))
}

/// Server and default-server options (manual §5.2).
pub static SERVER_OPTIONS: &[Keyword] = &[
    g("addr", Supported),
    g("agent-addr", Supported),
    g("agent-check", Supported),
    g("agent-inter", Supported),
    g("agent-port", Supported),
    g("agent-send", Supported),
    g("allow-0rtt", Partial("accepted; no early data is sent")),
    g("alpn", Partial("offered as configured; when the server chooses `h2`, its connection speaks HTTP/2 (shared by the worker's transactions, see the HTTP/2 notes); health checks offer the list without `h2` unless `check-alpn` says otherwise")),
    g("backup", Supported),
    g("ca-file", Supported),
    g("check", Supported),
    g("check-alpn", Supported),
    g("check-proto", Partial("h1 and h2 for HTTP checks (`option httpchk`, `http-check`): the server's `proto` by default, as in HAProxy; TCP checks ignore it")),
    g("check-send-proxy", Supported),
    g("check-sni", Supported),
    g("check-ssl", Supported),
    g("check-via-socks4", Supported),
    g("ciphers", Partial("as ssl-default-server-ciphers")),
    g("ciphersuites", Partial("as ssl-default-server-ciphersuites")),
    g("cookie", Supported),
    g("crl-file", Supported),
    g("crt", Supported),
    g("disabled", Supported),
    g("downinter", Supported),
    g("enabled", Supported),
    g("error-limit", Supported),
    g("fall", Supported),
    g("fastinter", Supported),
    g("force-sslv3", Partial("refused at start-up: SSLv3 is not offered")),
    g("force-tlsv10", Partial("refused at start-up: TLS 1.0 is not offered")),
    g("force-tlsv11", Partial("refused at start-up: TLS 1.1 is not offered")),
    g("force-tlsv12", Supported),
    g("force-tlsv13", Supported),
    g("id", Supported),
    g(
        "init-addr",
        Partial("libc, none, <ip>; last is accepted and skipped (no server-state file yet)"),
    ),
    g("inter", Supported),
    g("log-proto", Partial("checked as HAProxy 2.6 checks it; read by a `ring` section's servers only, as in HAProxy")),
    g("max-reuse", Partial("HTTP/1, HTTP/2 and FastCGI connections carry at most `<count>` + 1 requests (HAProxy 2.6 applies it to HTTP/2 and FastCGI connections only)")),
    g("maxconn", Supported),
    g("maxqueue", Supported),
    g("minconn", Supported),
    g("namespace", NotYet),
    g("no-agent-check", Supported),
    g("no-backup", Supported),
    g("no-check", Supported),
    g("no-check-send-proxy", Supported),
    g("no-check-ssl", Supported),
    g("no-send-proxy", Supported),
    g("no-send-proxy-v2", Supported),
    g("no-send-proxy-v2-ssl", Supported),
    g("no-send-proxy-v2-ssl-cn", Supported),
    g("no-ssl", Supported),
    g("no-ssl-reuse", Supported),
    g("no-sslv3", Supported),
    g("no-tfo", Supported),
    g("no-tls-tickets", Supported),
    g("no-tlsv10", Supported),
    g("no-tlsv11", Supported),
    g("no-tlsv12", Supported),
    g("no-tlsv13", Supported),
    g("no-verifyhost", Supported),
    g("non-stick", Supported),
    g("npn", Partial("accepted and ignored (NPN is obsolete; use alpn)")),
    g("observe", Supported),
    g("on-error", Supported),
    g("on-marked-down", Supported),
    g("on-marked-up", Supported),
    g("pool-low-conn", Supported),
    g("pool-max-conn", Supported),
    g("pool-purge-delay", Supported),
    g("port", Supported),
    g("proto", Partial("h2 (HTTP/2 with prior knowledge, one connection shared by the worker's transactions to the server, as many streams as the server allows), h1, and fcgi (one request at a time per connection, kept for the next one with the application's `option keep-conn`; no multiplexing yet; see the `fcgi-app` section's notes)")),
    g("proxy-v2-options", Partial("ssl, cert-cn, ssl-cipher, cert-sig, cert-key, authority, unique-id, crc32c")),
    g("redir", Supported),
    g("resolve-net", NotYet),
    g("resolve-opts", NotYet),
    g("resolve-prefer", NotYet),
    g("resolvers", NotYet),
    g("rise", Supported),
    g("send-proxy", Supported),
    g("send-proxy-v2", Supported),
    g("send-proxy-v2-ssl", Partial("PP2_TYPE_SSL with version, cipher, signature and key algorithms of the client connection")),
    g("send-proxy-v2-ssl-cn", Partial("as send-proxy-v2-ssl, plus the client certificate's CN")),
    g("slowstart", Supported),
    g("sni", Partial("any sample expression the rules know (converters too, not map converters), evaluated on the request that opens the connection; an idle TLS connection is reused only for the same SNI")),
    g("socks4", Partial("an IP address and its port (no host name); the server's own address must be IPv4, as SOCKS4 requires")),
    g("source", Partial("as the proxy keyword, with a port range `<port>-<port>` whose ports are tried in turn, ten at most per connection (HAProxy keeps a list of free ones)")),
    g("ssl", Supported),
    g("ssl-max-ver", Supported),
    g("ssl-min-ver", Partial("TLSv1.2 and TLSv1.3; lower versions are never offered")),
    g("ssl-reuse", Supported),
    g("stick", Supported),
    g("tcp-ut", Partial("TCP_USER_TIMEOUT set once the connection is made (HAProxy sets it before connecting; `timeout connect` bounds that part); not on health checks' connections")),
    g("tfo", Partial("`TCP_FASTOPEN_CONNECT` on the first attempt of a new connection, so its first bytes (a request, a ClientHello) go in the SYN once the server gave a cookie (HAProxy 2.6.12 sets it only when response data is waiting: measured, its requests never go in the SYN)")),
    g("tls-tickets", Supported),
    g("track", Partial("the tracking server follows the tracked one's state (DOWN, UP, stopping, `via be/srv` in its messages) and inherits its maintenance and drain, as HAProxy's `IMAINT`/`IDRAIN`; `show stat` names it in its `tracked` column")),
    g("verify", Supported),
    g("verifyhost", Supported),
    g("weight", Supported),
    g("ws", Supported),
];

/// What `docs/compat.md` says about ACLs, sample expressions and log-format strings.
const SAMPLE_NOTES: &[&str] = &[
    "- Sample fetches: `src`, `src_port`, `dst`, `dst_port`, `path`, `url`, `query`, `method`, `req.ver` (`req_ver`), `url_param([<name>])` (`urlp`), `hdr([<name>[,<occ>]])` (`req.hdr`), `hdr_cnt([<name>])`, `hdr_ip([<name>[,<occ>]])`, `cook([<name>])` (`req.cook`), `nbsrv([<backend>])`, `be_conn([<backend>])`, `be_sess_rate([<backend>])`, `connslots([<backend>])`, `queue([<backend>])`, `avg_queue([<backend>])`, `srv_is_up([<backend>/]<server>)`, `srv_conn([<backend>/]<server>)`, `always_true`, `always_false`, `status`, `res.hdr([<name>[,<occ>]])` (`shdr`), `req.fhdr([<name>[,<occ>]])`, `req.fhdr_cnt([<name>])`, `res.fhdr([<name>[,<occ>]])`, `req.body`, `req.body_len`, `req.body_size`, `req.body_param([<name>])`, `res.body`, `res.body_len`, `res.body_size` (response rules: the body received with the head, or what `http-response wait-for-body` waited for; chunks decoded), `req.hdrs`, `base`, `fc_err` (0); TLS of the client connection: `ssl_fc`, `ssl_fc_sni`, `ssl_fc_has_sni`, `ssl_fc_protocol`, `ssl_fc_cipher` (OpenSSL's names), `ssl_fc_alpn`, `ssl_fc_is_resumed` (0 on clear text, as HAProxy), `ssl_fc_use_keysize`, `ssl_fc_alg_keysize`, `ssl_fc_has_crt`, `ssl_fc_err`, `ssl_c_used`, `ssl_c_verify`, `ssl_c_err`, `ssl_c_ca_err` (0: a certificate that fails verification fails the handshake), `ssl_c_s_dn([<field>[,<occ>]])`, `ssl_c_i_dn(...)`, `ssl_c_serial`, `ssl_c_sha1`, `ssl_c_der`, `ssl_c_notafter`, `ssl_c_notbefore`, `ssl_c_version`, `ssl_c_sig_alg`, `ssl_c_key_alg` (no sample on clear text, as HAProxy); `ssl_f_s_dn`, `ssl_f_i_dn`, `ssl_f_serial`, `ssl_f_sha1`, `ssl_f_der`, `ssl_f_notafter`, `ssl_f_notbefore`, `ssl_f_version`, `ssl_f_sig_alg`, `ssl_f_key_alg` on the certificate the frontend presented (no sample on a resumed session: no certificate was chosen); `ssl_fc_session_id` and `ssl_bc_session_id` (as OpenSSL keeps them: the ServerHello's id in TLS 1.2, the same after a resumption by id; a random 32-byte id per TLS 1.3 session); `ssl_bc`, `ssl_bc_protocol`, `ssl_bc_cipher`, `ssl_bc_alpn`, `ssl_bc_is_resumed`, `ssl_bc_use_keysize`, `ssl_bc_alg_keysize`, `ssl_bc_err` (0), `ssl_bc_err_str` (response rules: the server connection's facts; a log line prints them as `-`); `ssl_s_s_dn`, `ssl_s_i_dn`, `ssl_s_serial`, `ssl_s_sha1`, `ssl_s_der`, `ssl_s_notafter`, `ssl_s_notbefore`, `ssl_s_version`, `ssl_s_sig_alg`, `ssl_s_key_alg` on the server's certificate (accepted everywhere as HAProxy 2.6 declares them; a sample in response rules); `bc_src`, `bc_src_port`, `bc_dst`, `bc_dst_port`, `bc_err` (0), `bc_err_str` (`Success`) in response rules and log lines, `bc_http_major` in response rules (a log line prints `-`); `fc_err_str` (`Success`), `ssl_fc_err_str` (no sample: no error), `ssl_fc_has_early` (0: no early data is taken); with `tune.ssl.capture-buffer-size`, the client's ClientHello as HAProxy 2.6 keeps it for JA3 fingerprints: `ssl_fc_cipherlist_bin([<filter_grease>])`, `ssl_fc_cipherlist_hex(...)`, `ssl_fc_cipherlist_str(...)` (OpenSSL 3.0's suite names, `UNKNOWN(xxxx)` for others), `ssl_fc_cipherlist_xxh`, `ssl_fc_extlist_bin(...)`, `ssl_fc_eclist_bin(...)`, `ssl_fc_ecformats_bin`, `ssl_fc_protocol_hello_id` (the first ClientHello of a connection); `ssl_fc_server_random`; with `tune.ssl.keylog on`, `ssl_fc_client_random`, `ssl_fc_session_key` (TLS 1.2's master secret; no sample over TLS 1.3, where OpenSSL gives its resumption secret), `ssl_fc_client_handshake_traffic_secret`, `ssl_fc_server_handshake_traffic_secret`, `ssl_fc_client_traffic_secret_0`, `ssl_fc_server_traffic_secret_0`, `ssl_fc_exporter_secret` (`ssl_fc_client_early_traffic_secret` and `ssl_fc_early_exporter_secret`: no sample, as no early data is taken); `req.ssl_sni` (`req_ssl_sni`), `req.ssl_alpn`, `req.ssl_hello_type` (`req_ssl_hello_type`), `req.ssl_ver` (`req_ssl_ver`), `req.len` (`req_len`), `req.payload(<offset>,<length>)` (`payload`), `req.payload_lv(<offset1>,<length>[,<offset2>])` (`payload_lv`) on a `mode tcp` connection's first bytes (under `tcp-request inspect-delay` a rule they cannot decide yet waits for more bytes, as HAProxy's do); `res.len`, `res.payload`, `res.payload_lv` (`tcp-response content` in mode http: nothing to read); `wait_end`; `fe_conn` (the current frontend only); `so_name`; `last_rule_file`, `last_rule_line` (the stream's last final `tcp-request content`, `tcp-response content`, `http-request`, `http-response` or `http-after-response` rule); `fc_pp_authority`, `fc_pp_unique_id`, `fc_pp_tlv(<type>)`; `req.cook_cnt([<name>])` (`cook_cnt`), `req.cook_val([<name>])` (`cook_val`), `res.cook([<name>])` (`scook`), `res.ver` (`resp_ver`), `res.comp`, `res.comp_algo` (in response rules and log formats), `date([<offset>[,<unit>]])` (`s`, `ms`, `us`), `date_us`, `rand([<range>])` (not a negative range), `fe_name`, `be_name`, `srv_name`, `unique-id`, `capture.req.hdr(<slot>)`, `capture.res.hdr(<slot>)`, `var(<scope>.<name>[,<default>])`, `str(<s>)`, `int(<n>)`, `bool(<b>)`, `bin(<hex>)`, `pathq`, `srv_id`, `http_first_req`, `uuid([4])`, `ipv4(<addr>)`, `ipv6(<addr>)`, `http_auth(<userlist>)`, `http_auth_group(<userlist>)`, `http_auth_user`, `http_auth_pass`, `http_auth_type`, `capture.req.uri`, `capture.req.method`, `capture.req.ver` (the request line as the rules leave it), `fc_src`, `fc_src_port`, `fc_dst`, `fc_dst_port`; stick counters: every `sc_*(<ctr>[,<table>])`, `sc0_*`..`sc2_*([<table>])` and `src_*([<table>])` fetch of HAProxy 2.6 (`conn_cnt`, `conn_cur`, `conn_rate`, `sess_cnt`, `sess_rate`, `http_req_cnt`, `http_req_rate`, `http_err_cnt`, `http_err_rate`, `http_fail_cnt`, `http_fail_rate`, `bytes_in_rate`, `bytes_out_rate`, `kbytes_in`, `kbytes_out`, `get_gpc0|1`, `gpc0_rate`, `gpc1_rate`, `inc_gpc0|1`, `clr_gpc0|1`, `get_gpt0`, `get_gpc`, `gpc_rate`, `inc_gpc`, `clr_gpc`, `get_gpt`, `tracked`, `trackers`, `src_updt_conn_cnt`), `table_avl([<table>])`, `table_cnt([<table>])`, with HAProxy's answers (nothing tracked: no sample; no entry for the client: 0); `baseq`, `base32`, `base32+src`, `url32`, `url32+src` (HAProxy's hash of the Host and path, and the client's address after it), `url_ip`, `url_port` (an absolute target written with an IPv4 address, as HAProxy 2.6: no name resolved), the integer forms `hdr_val`, `req.hdr_val`, `res.hdr_val` (`shdr_val`), `urlp_val`, `res.cook_val` (`scook_val`) read as HAProxy's `strl2ic` reads them (`cook_val` too), `req.hdr_names([<delim>])`, `res.hdr_names([<delim>])`, `req.hdrs_bin`, `res.hdrs_bin`, `res.hdrs`, `res.hdr_cnt` (`shdr_cnt`), `res.hdr_ip` (`shdr_ip`), `res.fhdr_cnt`, `res.cook_cnt` (`scook_cnt`; `res.cook` and the counts split `Set-Cookie` at commas and read each value's cookies as HAProxy 2.6 does), `capture.res.ver`, `http_auth_bearer([<header>])`, `meth(<method>)`, `req.proto_http` (`req_proto_http`), `rdp_cookie([<name>])` and `rdp_cookie_cnt([<name>])` (`req.` forms too: the RDP connection request's cookie in the first bytes); `env(<name>)`, `hostname`, `thread` (the worker, from 0), `stopping`, `proc` (1), `prio_class` and `prio_offset` (0: no `set-priority-*` action yet), `fe_id`, `fe_defbe`, `fe_client_timeout`, `fe_req_rate`, `fe_sess_rate` (the current frontend only), `so_id`, `dst_conn` (the bind line's connections), `be_id`, `be_conn_free([<backend>])`, `be_server_timeout`, `be_tunnel_timeout`, `cur_server_timeout`, `cur_tunnel_timeout` (0 until the stream connects to a server, as HAProxy 2.6; no `set-timeout` action yet), `srv_queue`, `srv_sess_rate`, `srv_weight`, `srv_iweight`, `srv_uweight`, `srv_conn_free` (`[<backend>/]<server>`), `src_is_local`, `dst_is_local`, `fc_src_is_local`, `fc_dst_is_local`, `fc_http_major`, `fc_rcvd_proxy`, `fc_rtt([<unit>])`, `fc_rttvar([<unit>])` (milliseconds, or `us`), `fc_unacked`, `fc_sacked`, `fc_lost`, `fc_retrans`, `fc_fackets`, `fc_reordering` (the client connection's `TCP_INFO`; no sample on a UNIX socket; an argument to a counter is ignored without HAProxy's warning). In a `mode tcp` proxy every request fetch (`req.proto_http`, `hdr()`, `path`, `method`...) reads the connection's first bytes as an HTTP/1 request, as HAProxy 2.6 does: no sample until they are a whole valid request head, and under `tcp-request inspect-delay` a rule that needs one waits for it (a `tcp-request content` rule or a `use_backend` condition). Other HAProxy fetches are refused with \"fetch method '<name>' is not supported yet\".",
    "- As in HAProxy, `req.body`, `req.body_param()` and `req.hdrs` are binary samples (HAProxy's manual calls the last two strings): an ACL on them must say `-m` (e.g. `-m sub`), or apply a string converter first.",
    "- ACL keywords: `path`, `url`, `urlp`, `hdr`, `cook`, `shdr`, `scook`, `base` with the `_beg`, `_end`, `_sub`, `_reg`, `_dom`, `_dir`, `_len` suffixes, `method`, `req_ver`, `resp_ver`.",
    "- Converters: `hex`, `lower`, `upper`, `field()`, `word()`, `regsub()`, `map()`, `map_str()`, `map_beg()`, `map_end()`, `map_sub()`, `map_dom()`, `map_reg()`, `map_regm()` (`\\1`..`\\9` in values), `map_ip()`, `map_int()` (not the `map_<match>_<output>` forms), `length`, `bytes(<offset>[,<length>])`, `base64`, `b64dec`, `ub64enc`, `ub64dec`, `url_dec([<in_form>])`, `sha1`, `sha2([<bits>])`, `crc32([<avalanche>])`, `crc32c()`, `djb2()`, `sdbm()`, `wt6()`, `xxh32([<seed>])`, `xxh64()`, `xxh3()`, `add()`, `sub()`, `mul()`, `div()`, `mod()`, `and()`, `or()`, `xor()` (an integer or a variable: `add(txn.x)`), `neg`, `cpl`, `bool`, `not`, `odd`, `even`, `hex2i`, `host_only`, `port_only`, `concat([<start>],[<var>],[<end>])`, `in_table(<table>)`, `table_<data>(<table>)` for every data type (`table_gpc(<idx>,<table>)`, `table_gpt()`, `table_gpc_rate()`, `table_trackers` counting its own lookup as HAProxy's does, `table_expire`, `table_idle`), `set-var(<var>[,<condition>...])` (it fails, as HAProxy's, when a condition refuses the store; stores in a session or transaction variable take effect once the condition or expression that holds it has been evaluated). Also `ipmask(<mask4>[,<mask6>])`, `ltime(<format>[,<offset>])`, `utime(...)`, `iif(<true>,<false>)`, `ltrim(<chars>)`, `rtrim(<chars>)`, `cut_crlf`, `json([<input-code>])`, `url_enc([query])`, `htonl`, `be2dec(<sep>,<chunk>[,<truncate>])`, `be2hex([<sep>[,<chunk>[,<truncate>]]])`, `strcmp(<var>)`, `secure_memcmp(<var>)`, `add_item(<delim>,[<var>][,<suffix>])`, `unset-var(<var>)`, `json_query(<path>[,int])` (HAProxy's mjson subset: `$`, `.key`, `[index]`; strings with `\\u00XX` escapes at most, numbers as `%g`), `jwt_header_query([<path>[,int]])`, `jwt_payload_query(...)` and `nbsrv` and `srv_queue` (the backend or `<backend>/<server>` the input names), `digest(<algorithm>)` and `hmac(<algorithm>,<base64 key or variable>)` (md5, sha1, sha224, sha256, sha384, sha512, sha512-256, sha3-256/384/512 in any case: OpenSSL's other digests are refused), `jwt_verify(<alg>,<key>)` (HS256/384/512 with a secret, RS256/384/512 and ES256/384/512 with a PEM public key file read at start-up; either argument may be a variable; the results 1, 0, -1, -2, -3, -5 as HAProxy's), with HAProxy 2.6's messages for their arguments.",
    "- `set-var()` and `set-var-fmt()` actions and the `set-var()` converter take HAProxy 2.6's conditions: `ifexists`, `ifnotexists`, `ifempty`, `ifnotempty`, `ifset`, `ifnotset`, `ifgt`, `iflt` (every `proc.` variable a configuration names exists from the start, as in HAProxy).",
    "- ACL flags `-i`, `-f`, `-m`, `-n`, `-u`, `--`; not `-M`, nor `-i` placed after `-f`. Matching methods: all, `bin` included (hexadecimal patterns). Integer, IP (address, `/len` or dotted mask; no host names) and regex patterns are checked at load time. Regexes run on the `regex` crate (byte-oriented, as PCRE without UTF); one it refuses (back-references, look-around, atomic groups...) runs on PCRE2, HAProxy's own engine.",
    "- Predefined ACLs: all; `HTTP` is `req.proto_http` (always true in HTTP mode; in `mode tcp`, whether the first bytes are an HTTP request).",
    "- Conditions read as HAProxy reads them: `or` in any case and `||` separate AND-groups of terms; a `!` or an `or` that has no term beside it is ignored; an empty condition never applies after `if` and always applies after `unless`.",
    "- As in HAProxy, the `hdr()` sample fetch of a response rule's log-format or `set-var()` reads the response (the model says `res.hdr`), while header ACLs always read the request.",
    "- Log-format: every variable of HAProxy 2.6 (§8.2.4) with its flags (`%{+Q}`, `%{-Q}`, `%{+X}`, `%{+E}`, `%{+M}`, `%o` for all), separators, `%[<expr>]` with converters, and HAProxy's errors and warnings (an HTTP variable in a `mode tcp` proxy falls back as HAProxy's does). In rules (`set-var-fmt`, `add-header`...), stream variables print as absent. HAProxy 2.6 sends a line twice when its format has no variable that needs the end of the transaction (no byte count, no termination state...): Fulcrum sends it once.",
    "- Rules in a `mode tcp` proxy that need HTTP (`http-request`, `http-response`, `http-after-response`, `redirect`), `option forwardfor|originalto|checkcache|http-ignore-probes|http-use-proxy-header|http-pretend-keepalive`, `capture cookie`, `cookie`, `monitor-uri` and layer 7 `balance` algorithms are ignored with HAProxy's warnings.",
    "- `capture ... len <n>`: `<n>` must be a non-negative integer and a cookie capture must spell `len` (HAProxy reads any word with `atol()`); a cookie capture longer than 63 is truncated with HAProxy's warning.",
];

/// Looks a keyword up by exact name.
pub fn find(table: &'static [Keyword], name: &str) -> Option<&'static Keyword> {
    table.iter().find(|k| k.name == name)
}

/// Finds the proxy keyword a line starts with (`words` without any `no`/`default` prefix):
/// the two-word entry (`option redispatch`, `stats uri`) if there is one, else the one-word one.
pub fn find_proxy(words: &[String]) -> Option<&'static Keyword> {
    let first = words.first()?;
    if let (Some(second), Some(third)) = (words.get(1), words.get(2)) {
        if let Some(k) = find(PROXY, &format!("{first} {second} {third}")) {
            return Some(k);
        }
    }
    if let Some(second) = words.get(1) {
        if let Some(k) = find(PROXY, &format!("{first} {second}")) {
            return Some(k);
        }
        // `tcp-check set-var(check.x)`: the action's name is before its parenthesis.
        if let Some((action, _)) = second.split_once('(') {
            if let Some(k) = find(PROXY, &format!("{first} {action}")) {
                return Some(k);
            }
        }
    }
    find(PROXY, first)
}

/// True when `word` starts a family of multi-word proxy keywords (`stats`, `option`, ...).
pub fn is_proxy_family(word: &str) -> bool {
    PROXY.iter().any(|k| k.name.strip_prefix(word).is_some_and(|r| r.starts_with(' ')))
}

fn status_text(s: Status) -> String {
    match s {
        Supported => "supported".into(),
        Partial(how) => format!("partial: {how}"),
        NotYet => "not yet".into(),
        Obsolete(why) => format!("refused (as by HAProxy 2.6): {why}"),
    }
}

fn simple_table(out: &mut String, table: &[Keyword]) {
    out.push_str("| keyword | status |\n|---|---|\n");
    for k in table {
        out.push_str(&format!("| `{}` | {} |\n", k.name, status_text(k.status)));
    }
}

fn mark(k: &Keyword, bit: u8) -> &'static str {
    if k.sections & bit != 0 {
        "X"
    } else {
        "-"
    }
}

/// The text of `docs/compat.md`, generated from the tables above.
pub fn compat_markdown() -> String {
    let mut out = String::new();
    out.push_str("# Fulcrum: HAProxy 2.6 configuration compatibility\n\n");
    out.push_str("<!-- Generated by `UPDATE_COMPAT=1 cargo test -p fulcrum-config --test compat`; do not edit. -->\n\n");
    out.push_str(
        "Fulcrum reads HAProxy's configuration language and follows HAProxy 2.6. Every keyword ",
    );
    out.push_str("HAProxy 2.6 documents is listed below with Fulcrum's status. A keyword marked \"not yet\" ");
    out.push_str(
        "is refused with `'<keyword>' is not supported yet`; a keyword HAProxy does not know is ",
    );
    out.push_str("refused with HAProxy's own `unknown keyword` message.\n\n");
    out.push_str("Notes:\n\n");
    out.push_str("- When `balance` is omitted the algorithm is `roundrobin`, as in HAProxy.\n");
    out.push_str("- `version_atleast()` / `version_before()` compare against `2.6` (missing components are 0). `feature()` is true for CPU_AFFINITY, EPOLL, OPENSSL (the TLS keywords work, through rustls), PCRE2 and PCRE2_JIT (regexes the `regex` crate refuses, such as back-references and look-around, are compiled with PCRE2), REUSEPORT and THREAD; `ssllib_name_startswith()` compares with `rustls`.\n");
    out.push_str("- Command line: `-h`/`--help` prints the usage (a Fulcrum extension: HAProxy has no `-h`). `-W` and `-Ws` (master-worker) are accepted: Fulcrum is one process (two under `chroot`: see below) that reloads itself in place on SIGUSR2 or the runtime API's `reload` (server states, counters, idle server connections and listening sockets kept; live sessions finish on the old configuration), and `-Ws` sends systemd `READY=1`/`RELOADING=1` notifications and stays in the foreground, so Debian's `haproxy.service` (`-Ws ... -S ...`, `ExecReload=kill -USR2`) works unchanged. `-S <socket>[,mode,<m>,user,<u>,group,<g>,level,<l>]` serves the runtime API (admin level) as HAProxy's master CLI: a leading `@<n>` is skipped and `reload` answers `Success=1`/`Success=0`, `--`, then the messages. Under `chroot` in master-worker mode (`-W`, `-Ws`), as in HAProxy, the process that started stays outside the jail as the master (it keeps its user, serves nothing, writes its pid to the pid file, passes signals on, relays systemd notifications, and exits with the worker's status) and the worker is jailed; on each reload the master reads and checks the configuration and every file it draws on (certificates and their directories under `crt-base`/`ca-base`, error files, maps, ACL files, and host names it resolves) and hands them to the worker, which keeps no descriptor of a directory outside its jail; a file that cannot be read fails the reload with its name and the reason. Unlike HAProxy's, the master does not start a new worker: the same worker reloads in place, keeping its server states, counters and idle connections. Without `-W` a chrooted process reads files inside the jail when it reloads (a failed reload says so). A file that cannot be opened (`errorfile`, `http-error`/`return` files, `lf-file`, ACL and map files) is reported with HAProxy's words followed by the system's reason (` : No such file or directory.`), which HAProxy leaves out; `nbthread`, `cpu-map`, global `maxconn`, `user`/`group`, `stats socket` changes wait for a restart (a warning says so).\n");
    out.push_str(
        "- Two `bind` lines on exactly the same address (or unix path, or fd) are an error; ",
    );
    out.push_str("overlapping wildcard and specific addresses (`0.0.0.0:80` and `10.0.0.1:80`) are not checked.\n");
    out.push_str("- As in HAProxy, a `mode tcp` frontend may use `mode http` backends: a connection it hands to one is upgraded to HTTP (the backend's HTTP rules and forwarding apply, each later request picks its backend again, and one that picks a `mode tcp` backend closes the connection). In `mode tcp`, `use_backend` conditions see the connection's addresses, not its payload (HAProxy may also read an HTTP request already received).\n\n");
    out.push_str("## Sections\n\n| section | status |\n|---|---|\n");
    for s in ["global", "defaults", "frontend", "backend", "listen", "http-errors"] {
        out.push_str(&format!("| `{s}` | supported |\n"));
    }
    out.push_str("| `userlist` | supported: `group <name> [users <u>,...]`, `user <name> [password <hash> | insecure-password <text>] [groups <g>,...]`; hashes are checked with the system's crypt(3) (libcrypt.so.1, as HAProxy: DES, `$1$`, `$5$`, `$6$`, `$2b$`, `$y$`...); a user without password never authenticates (HAProxy 2.6.12 crashes on one) |\n");
    out.push_str("| `fcgi-app` | partial: `docroot`, `index`, `path-info`, `acl`, `set-param <name> <fmt> [if|unless <cond>]` (with HAProxy's implicit `REMOTE_USER` and `AUTH_TYPE`; the last matching rule of a name wins), `pass-header <name> [if|unless <cond>]` (conditions over the section's own ACLs, evaluated for each request after the backend's rules, as HAProxy's FastCGI filter does), `log-stderr` (as `log`: `global` or targets; each `STDERR` record one line at level `err`, tagged with the application's name, as HAProxy's `app_log()`), `option keep-conn`, `option get-values` (a new connection first asks the application's `FCGI_MAX_REQS` and `FCGI_MPXS_CONNS`, as HAProxy 2.6 does), `option mpxs-conns` and `option max-reqs` (several requests at once on one connection: as in HAProxy 2.6, a connection serves other transactions of the worker under `http-reuse always` from its start and under `aggressive` once a request on it ended, up to `max-reqs` requests or the application's `FCGI_MAX_REQS` once `GET_VALUES` told it; one at a time when the application says it does not multiplex or answers `FCGI_CANT_MPX_CONN`; requests a client leaves are aborted with `ABORT_REQUEST`); HAProxy's `unset-param` and `hide-header` are compiled out of 2.6: unknown here too. `proto fcgi` servers get HAProxy's CGI parameters (every request header as `HTTP_*` but `Authorization` and the hop-by-hop ones unless `pass-header` names them, `SCRIPT_NAME`/`PATH_INFO` by `path-info` and `index`, the defaults), the body streamed as `STDIN`, the script's `Status:`/`Location:` as the status, `Status` removed and `Date` added as HAProxy's filter does, `100 Continue` said by the proxy; request headers whose name is not letters, digits and `-` deleted unless `option http-restrict-req-hdr-names` says otherwise (HAProxy 2.6's default for such backends); with `option keep-conn` (the default) a connection whose request ended cleanly carries the next one, without it the application closes it. A request's body is awaited (up to a buffer) as the backend is chosen, as HAProxy's FastCGI filter does (`option http-buffer-request`'s wait): a chunked body's data (or an HTTP/2 upload's without a length) is its `CONTENT_LENGTH`, and one that does not end within a buffer gets HAProxy's 400 (`PH`; for an HTTP/2 client HAProxy 2.6 resets the stream instead) |\n");
    out.push_str("| `ring` | partial: `description`, `format`, `maxlen`, `size`, `timeout connect`, `timeout server`, `server <name> <ip>:<port> [log-proto legacy|octet-count]` (TCP, no check or TLS options); written by `log ring@<name>` targets; `show events` on the runtime API not yet |\n");
    out.push_str("| `log-forward` | partial: `bind` (TCP, octet-counted or one message per line), `dgram-bind` (UDP), `log`, `maxconn`, `backlog`, `timeout client`; RFC 3164 and 5424 headers read (level, facility, host, tag and pid kept); started with the process, a reload keeps them as they were |\n");
    out.push_str("| `cache` | supported: `total-max-size`, `max-object-size`, `max-age`, `process-vary`, `max-secondary-entries` (HAProxy 2.6's defaults, limits and messages); used by `http-request cache-use`, `http-response cache-store` and `filter cache` (a proxy's cache filters must come before its compression filter, as in HAProxy) |\n");
    out.push_str("| `mailers` | supported: `mailer <name> <addr>:<port>` (TCP), `timeout mail`; a proxy's `email-alert` settings mail server DOWN, UP and drain events over plain SMTP as HAProxy 2.6 does (HELO, one alert at a time per mailer, no retries) |\n");
    for s in OTHER_SECTIONS {
        out.push_str(&format!("| `{s}` | not yet |\n"));
    }
    out.push_str("\n## Global section\n\n");
    simple_table(&mut out, GLOBAL);
    out.push_str("\n## Proxy sections\n\n");
    out.push_str("| keyword | defaults | frontend | listen | backend | status |\n|---|---|---|---|---|---|\n");
    for k in PROXY {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            k.name,
            mark(k, D),
            mark(k, F),
            mark(k, L),
            mark(k, B),
            status_text(k.status)
        ));
    }
    out.push_str("\n## ACLs, sample fetches, converters and log-format\n\n");
    for line in SAMPLE_NOTES {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("\n## mode http at run time: where Fulcrum deliberately differs\n\n");
    for line in HTTP_DIFFERENCES {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("\n## Compression\n\n");
    for line in COMPRESSION_NOTES {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("\n## Other filters: trace, bandwidth limits\n\n");
    for line in FILTER_NOTES {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("\n## The cache\n\n");
    for line in CACHE_NOTES {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("\n## Statistics, Prometheus and the runtime API\n\n");
    for line in STATS_NOTES {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("\n## Bind options\n\n");
    simple_table(&mut out, BIND_OPTIONS);
    out.push_str("\n## Server and default-server options\n\n");
    simple_table(&mut out, SERVER_OPTIONS);
    out
}

/// What the statistics, the exporter and the runtime API do and do not do yet.
const STATS_NOTES: &[&str] = &[
    "- `show stat`, the page's `;csv` and `show stat typed|json` have HAProxy 2.6's 127 fields in its order, each present or empty as in HAProxy (compared row by row with HAProxy 2.6 by the black-box tests); the TLS module's counters (`ssl_sess` for new sessions, `ssl_reused_sess`, `ssl_failed_handshake`) count a frontend's handshakes with its clients and a backend's and a server's with the servers, as HAProxy's; the `h2` module's count a frontend's client connections and a backend's server connections as HAProxy's (frames received by kind, errors found and the RST_STREAM or GOAWAY sent for them, connections and streams now and in all; `h2_backend_*_streams` count a frontend's streams too, as HAProxy 2.6 does; a health check's connections count nowhere); of the `h1` module's, the connections now and in all (a client connection that turns to HTTP/2 counts once, as in HAProxy) and the streams in all (the requests that were not HTTP/2 streams) count, `h1_bytes_in`/`h1_bytes_out` are the proxy's bytes (HTTP/2's included), `h1_open_streams` counts the HTTP/1 transactions in progress (from a complete head to the end of the exchange; 0 on an idle connection, as HAProxy 2.6 shows it), the spliced bytes are 0 (Fulcrum never splices); the compression counters count (see Compression); `dresp` stays 0 (as HAProxy 2.6 shows it for `http-response deny` in a frontend), a response replaced by `http-response deny` counts in `hrsp_*` with the status sent to the client (HAProxy counts the server's), and the queue/connect/response/total time averages are kept for frontends that log (they read the log's timers).",
    "- `bin`/`bout` of HTTP transactions count what the log's `%U`/`%B` count on frontends that log (HAProxy's internal sizes of heads), the bytes on the wire elsewhere.",
    "- Runtime API commands: `help`, `prompt`, `quit`, `user`, `operator`, `show cli level`, `show version`, `show info [typed|json]` (its TLS fields as HAProxy 2.6 counts them: `CurrSslConns` and `CumSslConns` for every connection with a TLS layer, clients', servers' and checks'; `SslRate` for connections accepted on TLS binds; `SslFrontendKeyRate`/`SslBackendKeyRate` for full handshakes; `SslFrontendSessionReuse_pct` from those; `MaxSslConns` and `SslRateLimit` from `maxsslconn` and `maxsslrate`; the compression rate and pipe fields 0), `show stat [typed|json|up|no-maint] [<iid> <type> <sid>]`, `show backend`, `show servers state [<backend>]`, `show servers conn [<backend>]`, `get weight`, `set weight`, `set server <b>/<s> state|weight|health|agent|addr [port]` (idle connections and checks made for the old address are dropped), `enable|disable server|health|agent|frontend`, `set maxconn frontend|global|server`, `set rate-limit connections|sessions|ssl-sessions|http-compression global` (enforced as `maxconnrate`, `maxsessrate`, `maxsslrate` and `maxcomprate`: accept loops pause for the rest of the second), `clear counters [all]`, `set timeout cli`, `shutdown sessions server` (every session using the server ends; with `on-marked-down shutdown-sessions` they end as if it went down, and log so), `show map [<map>]`, `add|set|del|clear map` (a change rebuilds the map's indexes; not the `@<ver>` and payload forms), `get var proc.<name>`, `experimental-mode on|off` and `set var proc.<name> [expr] <expr>|fmt <format>`, `show env [<var>]`, `shutdown frontend` (the frontend stops accepting; its sockets stay open). `set server ... check-addr|check-port|agent-addr|agent-port|agent-send` (the checks follow at once; `fqdn` answers as HAProxy without resolvers), `reload` (Fulcrum's in-process reload), `show errors [<proxy>] [request|response]` (HAProxy's format and error positions, without its H1 multiplexer's flag lines). `show acl [<acl>]`, `add|del|clear acl` (references numbered as HAProxy numbers them, maps and ACLs together; a change applies to live requests at once; an ACL compiled into a `use_backend` index, which needs inline patterns and several rules in a row on the same sample, refuses changes, and ACLs with `-f` files never join an index). `show sess` (live client connections with HAProxy's leading fields `proto`, `src`, `fe`, `be`, `srv`, `age`; idle keep-alive connections included, which HAProxy does not list), `shutdown session <id>` (the session's task ends and both its connections close; HAProxy answers 502 when no response had begun; no log line). `show activity` (per worker: `loops`, `accepted`, `curr_sess`), `show pools` (Fulcrum has no pools of its own: the allocator's totals), `set profiling tasks on|auto|off` and `show profiling` (per kind of task: HTTP sessions, TCP sessions, health checks; calls, CPU time from the thread's CPU clock, latency as the time since the worker's turn began; `auto` never turns on by itself; memory profiling is not available). `get map|acl <ref> <value>`, `prepare|commit map|acl` with `add|show|clear map|acl @<ver>` (atomic replacement: a committed version replaces the entries and every index at once), `add map <map> <<` with a payload (one `key value` per line, up to an empty line). `add server <b>/<s> <addr> [<keyword>...]` and `del server <b>/<s>` with HAProxy 2.6's rules and messages (dynamic load balancing required; the new server starts in maintenance with its checks off; only a server in maintenance without connections is deleted; `cookie` refused): Fulcrum rebuilds the plan from the configuration in force plus the change, every other server keeping its state, counters and idle connections, and the current frontends retire as on a reload (keep-alive clients reconnect after their current request); a reload from the files forgets these servers, as HAProxy's does. `show sess <id>` lists every session, not one in detail. `show table [<table> [data.<type> <op> <value>]... | key <key>]`, `set table <table> key <key> [data.<type> <value>]...`, `clear table <table> [filters | key <key>]` with HAProxy 2.6's output and messages (HAProxy's `clear table` also leaves an unused entry that precedes one in use: Fulcrum clears it).",
    "- The stats page's layout is Fulcrum's; its columns, colours, legend, options (`;csv`, `;json`, `;up`, `;no-maint`, `;norefresh`) and admin actions are HAProxy's. `stats http-request` takes `allow`, `deny` and `auth [realm]`.",
    "- The Prometheus exporter serves HAProxy 2.6's 187 metric families with its names, types, help texts and labels (compared sample by sample with HAProxy 2.6); `haproxy_process_build_info` carries Fulcrum's version.",
];

/// How `compression` works, against HAProxy 2.6's compression filter.
const COMPRESSION_NOTES: &[&str] = &[
    "- `compression algo identity|gzip|deflate|raw-deflate`, `compression type`, `compression offload` and `filter compression` as HAProxy 2.6 reads them (the same messages; a `defaults` section's algorithms and types are inherited, its `offload` ignored with HAProxy's warning; a proxy with `compression` gets the filter without naming it). The backend's algorithms and types come first, the frontend's where the backend has none.",
    "- The algorithm is chosen as HAProxy chooses it: the `Accept-Encoding` element of the highest `q` (ties to the client's first), `*` for the first of HAProxy's list (the last declared), `identity` when configured and nothing else matches; no compression for old browsers announcing `Mozilla/4` (but MSIE 6 SP2 and MSIE 7+). With `offload`, the request's `Accept-Encoding` headers are removed.",
    "- A response is compressed only as HAProxy compresses it: HTTP/1.1 or later both ways (HTTP/2 included), not HEAD, status 200 to 203, a body of known length (no close-delimited body), no `Content-Encoding` already, no `Cache-Control: no-transform`, at most one `ETag` and a valid one, not `multipart`, and a `Content-Type` starting with a listed type (without case) when types are listed. Then `Content-Encoding` is added (not for identity), `Content-Length` removed and the body sent chunked (HTTP/1) or as DATA frames (HTTP/2), a strong `ETag` made weak, and `Vary: Accept-Encoding` added. Each block of data is compressed and flushed as it comes (a slow server's bytes reach the client at once), from HTTP/1 and HTTP/2 servers to HTTP/1 and HTTP/2 clients, a response beside a request body still arriving over HTTP/2 included.",
    "- gzip and deflate are zlib-rs's (through `flate2`) at `tune.comp.maxlevel` (1 by default, as HAProxy; Debian's HAProxy uses libslz, whose output differs in bytes, not in what it decodes to). The counters `comp_in`, `comp_out`, `comp_byp` (identity) and `comp_rsp` count as HAProxy's, on frontends and backends, in `show stat`, the stats page and Prometheus.",
    "- `res.comp` and `res.comp_algo` answer in the response rules (decided before they run, as HAProxy's) and in log formats (the response's compression as decided: an answer the proxy made logs none, whatever the request accepted).",
    "- **Fulcrum extension**: `compression algo zstd` and `compression algo br` (Zstandard through the reference library, brotli through Dropbox's Rust port; `tune.comp.maxlevel` as their level, brotli with a 4 MB window). `-c` says so with a notice (HAProxy 2.6 refuses them). When the configuration lists one of them, equal `Accept-Encoding` q-values go to the algorithm the configuration lists first (HAProxy's rule takes the client's first, which for browsers always means gzip); without them, HAProxy's rule stays.",
    "- `-vv` lists the algorithms and `-cc 'feature(ZLIB)'` is true (HAProxy's reg-tests ask for ZLIB or SLZ before they run); HAProxy's `compression/basic.vtc` and `compression/etags_conversion.vtc` pass (docs/regtests.md).",
    "- `maxcomprate`: as in HAProxy, a response begins uncompressed while the bytes into the process's compressors over the last second (HAProxy's frequency counter: this second's plus a share of the last one's, counted block by block) are over the limit, and each gzip, deflate or raw-deflate response under way goes one level down after each block while the bytes out of them are over it (down to level 0, stored blocks, whose bytes count as bypassed, `comp_byp`), one level back up after each block while they are not (never above `tune.comp.maxlevel`). `show info` tells `CompressBpsIn`, `CompressBpsOut` and `CompressBpsRateLim`. zstd and br (Fulcrum's own) keep the level they began with.",
    "- `filter cache <name>` (or the implicit cache filter of a `cache-use`/`cache-store` rule) must come before `filter compression`, as HAProxy requires (with its messages).",
    "- `maxcompcpuusage`: a response begins uncompressed while its worker's idle share of the last second (measured from the thread's CPU time once a second; `show info`'s `Idle_pct` is the workers' mean) is under 100 minus the value, as HAProxy's `compress_min_idle`; like `maxcomprate`, the responses under way go one level down per block while it holds (zstd and br keep theirs).",
    "- Not yet: an explicit `filter fcgi-app` (the application's filter is implicit with `use-fcgi-app`).",
];

/// `filter trace` and the bandwidth limitation filters.
const FILTER_NOTES: &[&str] = &[
    "- **SPOE** (`filter spoe [engine <name>] config <file>`): the file is read as HAProxy 2.6 reads it (the `[engine]` scope, or the lines outside any scope without `engine`), with its messages for every error (`-c` shows them with the file's lines, then the `filter` line's). `spoe-agent`: `messages`, `groups`, `use-backend` (a `mode tcp` backend: its servers, chosen by its balancer), `timeout hello|idle|processing`, `option var-prefix|set-on-error|set-process-time|set-total-time|continue-on-error|force-set-var|pipelining|async|dontlog-normal|send-frag-payload` (`async`: an ACK may come on any connection of the engine's agent in the same worker, whose HELLOs carry the worker's `engine-id`, as HAProxy's per-thread one; `send-frag-payload`: a question over the agent's frame size goes in fragments, a NOTIFY then UNSET frames of the frame size less 32 bytes, to an agent that announced `fragmentation`, else error 259; HAProxy 2.6 refuses a first question bigger than the agent's frame size with 259 before it has read the agent's HELLO, Fulcrum fragments it; fragmented frames from the agent are refused, as in 2.6), `maxconnrate`, `maxerrrate`, `max-frame-size` (256 to 16380, HAProxy's default 16380), `max-waiting-frames`, `register-var-names`, `log` (as a proxy's: `global` or targets; each processing's `SPOE: [<agent>] <EVENT:<name>|GROUP:<name>> sid=... st=...` line at `notice`, a failed one at `warning`, only those with `option dontlog-normal`, as HAProxy 2.6 writes them; the idle/open connection and queued/waiting frame counts are the worker's, HAProxy's the process's); `spoe-message`: `args [name=]<sample>...`, `acl`, `event <name> [if|unless <cond>]`; `spoe-group`: `messages`. Events `on-client-session`, `on-frontend-tcp-request`, `on-backend-tcp-request`, `on-frontend-http-request`, `on-backend-http-request` (a `listen`'s become frontend events, as in HAProxy), `on-server-session`, `on-tcp-response` and `on-http-response`; `http-request`, `http-response` and `tcp-request content send-spoe-group <engine> <group>` (HTTP and `mode tcp`). The agent's variables (`<scope>.<prefix>.<name>`; a `proc` one only when it exists, as 2.6) are there for the rules after the question; `option http-buffer-request` gives `req.body` to the messages.",
    "- `option spop-check` in the agents' backend: HAProxy 2.6's HELLO with `healthcheck`, the agent's HELLO checked as the SPOE checks it (`L7OK`; a DISCONNECT or anything else `L7RSP` with the SPOP reason).",
    "- SPOP as HAProxy 2.6 speaks it: HELLO with `supported-versions` 2.0, `max-frame-size` and `pipelining` when `option pipelining` allows it; the agent's HELLO checked as HAProxy checks it (version 2.x, frame size 256 to ours); NOTIFY frames whose stream id is the stream's number and frame id counts the engine's questions in the transaction, as HAProxy's; ACK actions `set-var` and `unset-var` (a 32-bit integer keeps its whole varint, as HAProxy reads it); DISCONNECT both ways with HAProxy's status codes and texts; agent frames of other types ignored, an ACK for no waiting frame without pipelining refused (\"frame-id not found\"). Each worker keeps its own connections to an agent (HAProxy's per-thread applets): one question at a time on a connection, or up to `max-waiting-frames` with pipelining, new connections as needed (`maxconnrate` per second); idle ones close after `timeout idle`, and those of a plan a reload retired close once idle. Writes to an agent that stops reading end its connection within `timeout processing`.",
    "- Errors as HAProxy's: `timeout processing` bounds every question (a slow agent's answer after it is dropped); with no server of the agent's backend up and no connection, or none allowed by `maxconnrate`, error 2 at once; an agent that cannot be reached, is silent or answers garbage leaves the question waiting for another connection (one retry connection at a time, every 100 ms) until that timeout (error 1); a frame over the agent's size is error 3; a connection the agent ends or breaks gives 256 + its SPOP status to the questions it carried. A timeout of 0 is none, as in HAProxy (which warns), less than a millisecond is one. The `set-on-error` variable gets the code (`txn.<prefix>.<name>`), the processing goes on and the user's rules decide; without `option continue-on-error` the engine asks nothing more in that transaction. `set-process-time` and `set-total-time` are milliseconds. `maxerrrate`: over that many errors in a second, questions are skipped, as HAProxy skips them. `option force-set-var` lets the agent create `proc` variables. Compared with HAProxy 2.6 in the tests: a libinjection judge refusing SQL injections and cross-site scripts in queries, bodies and TCP streams, and a slow, dead, silent and garbling agent (HAProxy 2.6.12 does not always stop at `timeout processing` for a slow agent's group; Fulcrum always does).",
    "- Events `on-client-session` (each stream as it starts, before `on-frontend-tcp-request`; in `mode tcp` before the first bytes are awaited), `on-server-session` (once per stream, as its server connection is ready: before the request goes in `mode http`, before the tunnel in `mode tcp`) and `on-tcp-response` (before the backend's `tcp-response content` rules, which see its variables, and `on-http-response`; in `mode tcp` as the server connection is ready, with no response byte yet). A processing refused before it is sent (its messages over the frame size, error 3) is counted and logged as a failure, as in HAProxy. HAProxy 2.6.12 in `mode tcp` asks the last two but its log line does not show their variables; Fulcrum's does. In `mode tcp` each question gets its own stream id (HAProxy's stream's number for all).",
    "- Not yet: a `tcp-request content send-spoe-group` evaluated when nothing more can come (HAProxy 2.6 does not send it then, error 5; Fulcrum asks).",
    "- A stream's filters run in HAProxy's order: the frontend's, then the backend's, each proxy's in declaration order (`filter compression` and the cache filters as the compression and cache notes say).",
    "- `filter trace [name <name>] [quiet] [random-parsing] [random-forwarding] [hexdump]` writes each stream's events on the standard error as HAProxy 2.6's trace filter does, compared line by line in the tests: the filters attached (the frontend's, the backend's once chosen), `trace_stream_set_backend`, each message's head as it goes on (after the rules; field names lower-cased, no `Connection` field, as HAProxy's HTX holds none), each block of payload (`hexdump`: its bytes in HAProxy's layout) and its end, then the detaches. A backend's trace filter attaches when the backend is chosen, whether or not its frontend has one. Differences: a stream is shown as `[strm <n>]` (its log number; HAProxy prints its pointer, number and analyser bits), the analysers' own events (`trace_chn_analyze` and the like) are not written (Fulcrum's analysers are not bit-flagged), a payload's `offset` counts from the body's start (HAProxy's is inside its buffer), the trace sees heads and data as they are before compression and bandwidth limits whatever its place among the filters (HAProxy: as its place says), and `random-forwarding` is accepted without effect. A stream with a trace filter moves its bodies through the filter path (no fast forwarding).",
    "- **Later HAProxy keywords Fulcrum accepts** (HAProxy 2.7's bandwidth limitation; 2.6 refuses them, and `-c` says so with a notice): `filter bwlim-in|bwlim-out <name> default-limit <size> default-period <time> [min-size <size>]` (each stream limited alone) or `... limit <size> key <expr> [table <table>] [min-size <size>]` (every stream with the same key shares the limit, counted in the table's `bytes_in_rate` or `bytes_out_rate`, whose period is the limit's; a key whose type does not convert to the table's is refused with 2.7's message), enabled per stream by `http-request|http-response|tcp-request content|tcp-response content set-bandwidth-limit <name> [limit <size|expr>] [period <time|expr>]` (a later rule for the same filter replaces the earlier; a constant or a sample expression, as later HAProxy versions read them), with 2.7's messages for every error. `bwlim-in` limits the request's payload (uploads), `bwlim-out` the response's; heads are never limited. The rate is HAProxy's `bwlim_apply_limit()` on its frequency counters (no burst at the start beyond what the period allows; `min-size` bytes at least per write but the last), and the shared entry's users are its holders (HAProxy's `ref_cnt`: `show table` shows them in `use`). Stacked limits apply in filter order, each counting only what passed it; a limit before the stream's compression filter counts the plain payload, after it the compressed one (the stream's filters are the frontend's, then the backend's, and the first compression filter among them compresses: a backend's limit after a frontend's compression counts compressed bytes; as in HAProxy, a proxy with `compression` and any other filter but cache must say where its compression filter stands with `filter compression`: HAProxy's message otherwise). A stream's limits end with it (a shared entry's users with them). HTTP/1 and HTTP/2 clients and servers, cache hits included, and `mode tcp` streams and HTTP tunnels (`CONNECT`, upgrades), where every byte of the stream counts; the tests measure the rates clients get.",
    "- A body a `wait-for-body` rule held (HTTP/1 or HTTP/2, whole or in part) goes through the limits and trace filters as it is forwarded, the part held first.",
];

/// How `cache` sections work, against HAProxy 2.6's cache.
const CACHE_NOTES: &[&str] = &[
    "- What is looked up, stored and served follows HAProxy 2.6's `cache.c` (compared beside it in the tests): only GET and HEAD over HTTP/1.1 or later are looked up, not with `Authorization`, request `Cache-Control: no-cache|max-age|max-stale|min-fresh` or `Pragma: no-cache`; the key is the Host (first value) and the target, not the method (HTTP/2's `https://host/path` and HTTP/1's `/path` with that Host share it). Only a 200 to a GET is stored, with `s-maxage`, `max-age` or `Expires`, or an `ETag` or `Last-Modified`, not `private`, `no-cache`, `no-store`, `max-age=0`, `s-maxage=0` or `Pragma: no-cache` (`public` overrides a request's `no-store`); `Set-Cookie` does not prevent it (as 2.6). Its lifetime is `s-maxage`, else `max-age`, else `Expires`, each at most the section's `max-age` (60 s by default); an `Age` is kept and added to, one larger than the response's own freshness, zero or malformed prevents storing (as 2.6). A successful unsafe method (POST, PUT, DELETE...) on the key removes its entries.",
    "- A hit is answered with the head as it was when `cache-store` ran, an `Age` field appended, then the proxies' `http-response` rules, compression (a stored plain body is compressed for a client that accepts it, as HAProxy's filters do), `http-after-response` rules and the log line, whose server is `<CACHE>` (its `Tw`, `Tc`, `Tr` 0, termination `LR`). `If-None-Match` (`*`, or an ETag weakly equal to the entry's) gives `304 Not Modified` with the stored fields; without it, `If-Modified-Since` no earlier than the entry's `Last-Modified` (else its `Date`, else when it was stored). HEAD gets the head alone.",
    "- `process-vary on`: responses that vary on `accept-encoding` and/or `referer` only are stored per secondary key, at most `max-secondary-entries` per URL; the encodings are compared as HAProxy's bitmaps (an entry encoded in a coding the client does not accept is not served to it; `q=0` refuses). A response that varies on anything else, or on anything with `process-vary off`, is not stored.",
    "- Memory: objects are counted as HAProxy counts them (112 bytes of entry, the head's text, the body) in 1 kB blocks, and the blocks in use never exceed `total-max-size` (a test fills a 1 MB cache with 60 kB objects). A body past `max-object-size` passes without being stored, whether its length was announced or not.",
    "- Where Fulcrum chooses differently: the entries are evicted oldest first, each hit since the last pass giving its entry a second chance (HAProxy evicts the least recently released); an entry appears once complete (HAProxy shows one being written, a miss for its readers, and blocks a second store of the same key until it expires); a body received chunked or as HTTP/2 data is stored and replayed with its `Content-Length` (HAProxy replays the chunked framing, on 304s too); `Vary: referer` alone is answered (HAProxy 2.6 stores such entries but never hits them); trailers are not stored (such a response is not cached).",
    "- `show cache` (level admin) prints HAProxy's lines (the cache, its available blocks, each entry's hash, secondary key, size, blocks, readers and seconds left); `cache_lookups` and `cache_hits` count on the frontend for a frontend's (or listen's) rules and on the backend for a backend's, in `show stat`, the stats page and Prometheus; `res.cache_hit` and `res.cache_name` answer in the response rules and log formats.",
    "- A reload starts with empty caches (as HAProxy's new process does).",
];

/// Run-time behaviours of `mode http` where Fulcrum chooses differently from HAProxy 2.6 (each
/// is checked per product by the black-box tests in `crates/fulcrum/tests/http`).
const HTTP_DIFFERENCES: &[&str] = &[
    "- Stricter request parsing (400, nothing reaches a server): exactly one space between the request-line parts (HAProxy accepts runs of spaces and tabs), versions `HTTP/1.0`–`HTTP/1.9` only (HAProxy forwards `HTTP/2.0` as 1.1), obs-fold refused (HAProxy unfolds it), control bytes, NUL and DEL refused in the target and header values (HAProxy forwards them), a second identical `Host` refused (HAProxy merges it), an HTTP/1.1 request without `Host` (unless its target names the host) or with a `Host` holding a blank, a control byte or a delimiter of another URI part (`a b`, `a/b`, `a@b`) refused (RFC 9112 3.2; HAProxy forwards both), chunk extensions held to the RFC grammar.",
    "- Responses get the same scrutiny (502): a status line not starting with `HTTP/1.x`, NUL or control bytes in values, obs-fold.",
    "- Hop-by-hop headers are removed before forwarding: `Connection` and the headers it names, `Keep-Alive`, `Proxy-Connection`, `TE`, and `Upgrade` unless the request is an upgrade. HAProxy 2.6 only removes the `close`/`keep-alive` tokens. As in HAProxy, those two tokens are taken out of an HTTP/1 request's and response's `Connection` fields as they are read (a field left empty goes), so rules, captures and logs never see them.",
    "- A request without body that fails on a reused server connection before any response byte is sent again on a new connection, whatever `retry-on` says (HAProxy closes the client connection silently unless `retry-on empty-response`).",
    "- Chunked bodies are validated; a body in canonical form (sizes in hex without leading zeros or extensions, CRLF line ends) passes as received, any other has its chunk-size lines written again in that form, extensions dropped (HAProxy writes every chunk-size line itself and may merge chunks); `Content-Length`, `Transfer-Encoding` and `Host` in trailers are dropped (HAProxy forwards them).",
    "- `replace-value` keeps the separators between values as they were (HAProxy rebuilds the list and may drop a space).",
    "- Header names reach the server with their case as received (HAProxy lower-cases them).",
    "- Idle server connections are pooled per worker thread; a thread that has none for a server takes one over from another thread, as HAProxy does.",
    "- HTTP/2 from clients (`alpn h2` on TLS binds, prior knowledge on clear-text binds, `proto h2`): each stream is translated to HTTP/1.1 for the transaction, so every rule, fetch, log field and counter works as for HTTP/1 (`req.ver` is `2.0`, `url` and the log's request line carry the absolute URI made of `:scheme`, `:authority` and `:path`, servers get the origin form, every stream counts as a connection's later request as in HAProxy: `http_first_req` is 0 and `http-reuse safe` may reuse); a stream starts with its session's variables and what `tcp-request connection|session` rules track; interim answers (100, 103) go out as interim HEADERS frames; a soft stop or a reload sends GOAWAY and lets the streams in flight finish; trailers go both ways (a request's after its chunked body, a chunked response's as the last HEADERS frame); a request without `:authority` needs no Host; the scheme's default port is dropped from the authority as HAProxy normalises it; a rule that sets or adds Host on such a request (its target is absolute) rewrites the target's authority too, as HAProxy's `http_update_authority` does (an HTTP/1 request in absolute form likewise); WINDOW_UPDATE frames are sent when half a window was read (HAProxy sends one per DATA frame read); CONNECT and extended CONNECT (RFC 8441, WebSocket over HTTP/2, announced in SETTINGS) become tunnels (an extended CONNECT reaches an HTTP/1 server as an `Upgrade` request with a `Sec-WebSocket-Key` made for it, its 101 answers 200); a malformed request (a `:scheme` or `:method` that is not a token, an upper-case field name, a connection-specific field) gets RST_STREAM PROTOCOL_ERROR (RFC 9113 8.1.1) where HAProxy answers 400; a `:path` or `:authority` with bytes the HTTP/1.1 request line or Host would not take (a space) is answered 400 and logged, as over HTTP/1; `tune.h2.*` set what HTTP/2 connections announce (HAProxy 2.6's defaults: 100 streams, 64 kB windows, 16 kB frames, a 4 kB HPACK table).",
    "- HTTP/2 to servers (`server ... proto h2`, or TLS with `alpn h2,...` when the server chooses `h2`): the transaction's HTTP/1.1 request becomes one stream of a connection shared by the worker's transactions to that server (in every `http-reuse` mode but `never`, where a connection carries one transaction, as does one opened with a PROXY header; HAProxy 2.6 opens one per stream that arrives before its first connection is up), new connections opened when a connection's streams reach the server's limit, after GOAWAY or when its stream ids run out; an idle connection closes after 5 s (HAProxy's default `pool-purge-delay`); `:authority` comes from Host (HAProxy 2.6 sends a `host` field instead), connection-specific fields are dropped, `te` kept only as `trailers`; interim answers, trailers both ways, a HEADERS frame that ends the stream answered with `content-length: 0` (HAProxy 2.6: an empty chunked body); an HTTP/2 transaction's request body goes on beside its response (gRPC's bidirectional calls); HTTP health checks speak HTTP/2 with `check-proto h2` or `proto h2`; a response that breaks HTTP/2's rules (a field in upper case or connection-specific, DATA before HEADERS, a body other than its `content-length`) resets its stream and the client gets 502 (or, once the head went out, a cut answer), a PUSH_PROMISE ends the connection (pushes are refused in its SETTINGS); a stream the server refused (REFUSED_STREAM, or above a GOAWAY's last stream id) goes again on a new connection when its connection had carried a request before or `retry-on empty-response` allows it (RFC 9113 8.7), any other stream that fails is answered 502 and never sent twice; a WebSocket upgrade goes as an extended CONNECT (RFC 8441) as `ws` says (HAProxy's choices: `h2`, or `auto` with `proto h2` or an ALPN list of `h2` alone; else over HTTP/1.1, with ALPN offered without `h2`), its 200 answered to the client as 101 with the `Sec-WebSocket-Accept` its key asks for; the `ssl_bc*` fetches read the TLS facts of the stream's connection.",
    "- Stick tables: `bytes_in_*` and `bytes_out_*` count the bytes on the wire (HAProxy counts its internal message sizes), added as each stream ends (there is no `option contstats`); tables are not synchronised between processes (no `peers` sections yet), a reload in place keeps a table declared the same way with its entries; expiry and eviction order follow the last touch to the microsecond (HAProxy's ticks are milliseconds).",
    "- Every rejected request gets 400, as in HAProxy (there is no 414/431).",
    "- A rewrite that would make an invalid message (`set-uri` to an empty or malformed target, `set-path` not starting with `/`, `set-method` with a non-token byte, `set-query` with a space) fails the transaction with 500 under `strict-mode on` (the default) and changes nothing under `strict-mode off`; HAProxy forwards several of these as they are, or keeps part of the rewrite.",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn lookup() {
        let k = find_proxy(&words("option redispatch 5")).expect("known");
        assert_eq!((k.name, k.status), ("option redispatch", Supported));
        let k = find_proxy(&words("stats uri /x")).expect("known");
        assert_eq!((k.name, k.status), ("stats uri", Supported));
        assert_eq!(find_proxy(&words("bind :80")).map(|k| k.sections), Some(F | L));
        assert!(find_proxy(&words("bogus")).is_none());
        assert!(is_proxy_family("stats") && is_proxy_family("option") && !is_proxy_family("bind"));
        assert_eq!(find(GLOBAL, "nbthread").map(|k| k.status), Some(Supported));
        assert_eq!(find(GLOBAL, "wurfl-data-file").map(|k| k.status), Some(NotYet));
        assert_eq!(find(SERVER_OPTIONS, "namespace").map(|k| k.status), Some(NotYet));
        assert_eq!(find(BIND_OPTIONS, "v4v6").map(|k| k.status), Some(Supported));
    }

    #[test]
    fn three_word_keywords_are_found_before_shorter_ones() {
        let k = find_proxy(&words("capture request header Host len 64")).expect("known");
        assert_eq!((k.name, k.sections), ("capture request header", F | L));
        assert!(find_proxy(&words("capture request foo")).is_none());
        assert_eq!(find_proxy(&words("capture cookie")).map(|k| k.name), Some("capture cookie"));
    }

    #[test]
    fn performance_hints_are_not_claimed_as_supported() {
        for name in [
            "option http-no-delay",
            "option splice-auto",
            "option splice-request",
            "option splice-response",
            "option tcp-smart-accept",
            "option tcp-smart-connect",
        ] {
            assert_eq!(find(PROXY, name).map(|k| k.status), Some(Partial("accepted, no effect")));
        }
        for name in ["option log-separate-errors", "option dontlog-normal", "log-format"] {
            assert_eq!(find(PROXY, name).map(|k| k.status), Some(Supported), "{name}");
        }
        assert_eq!(find(PROXY, "option http-ignore-probes").map(|k| k.status), Some(Supported));
    }

    #[test]
    fn no_duplicates() {
        for name in BIND_OPTIONS_WITH_VALUE {
            assert!(find(BIND_OPTIONS, name).is_some(), "{name} is not a bind option");
        }
        for table in [GLOBAL, PROXY, BIND_OPTIONS, SERVER_OPTIONS] {
            for (i, k) in table.iter().enumerate() {
                assert!(table[..i].iter().all(|o| o.name != k.name), "duplicate {}", k.name);
            }
        }
    }
}
