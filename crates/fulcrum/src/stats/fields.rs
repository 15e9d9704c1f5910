//! The statistics fields of HAProxy 2.6, in its order: the 103 proxy and server fields, then
//! the fields of its statistics modules (TLS, HTTP/2, HTTP/1), which the CSV separates with a
//! `-` column. Scrapers read these by position and name, so both must stay as they are.

/// Every field name, by position.
pub const NAMES: [&str; 127] = [
    "pxname",
    "svname",
    "qcur",
    "qmax",
    "scur",
    "smax",
    "slim",
    "stot",
    "bin",
    "bout",
    "dreq",
    "dresp",
    "ereq",
    "econ",
    "eresp",
    "wretr",
    "wredis",
    "status",
    "weight",
    "act",
    "bck",
    "chkfail",
    "chkdown",
    "lastchg",
    "downtime",
    "qlimit",
    "pid",
    "iid",
    "sid",
    "throttle",
    "lbtot",
    "tracked",
    "type",
    "rate",
    "rate_lim",
    "rate_max",
    "check_status",
    "check_code",
    "check_duration",
    "hrsp_1xx",
    "hrsp_2xx",
    "hrsp_3xx",
    "hrsp_4xx",
    "hrsp_5xx",
    "hrsp_other",
    "hanafail",
    "req_rate",
    "req_rate_max",
    "req_tot",
    "cli_abrt",
    "srv_abrt",
    "comp_in",
    "comp_out",
    "comp_byp",
    "comp_rsp",
    "lastsess",
    "last_chk",
    "last_agt",
    "qtime",
    "ctime",
    "rtime",
    "ttime",
    "agent_status",
    "agent_code",
    "agent_duration",
    "check_desc",
    "agent_desc",
    "check_rise",
    "check_fall",
    "check_health",
    "agent_rise",
    "agent_fall",
    "agent_health",
    "addr",
    "cookie",
    "mode",
    "algo",
    "conn_rate",
    "conn_rate_max",
    "conn_tot",
    "intercepted",
    "dcon",
    "dses",
    "wrew",
    "connect",
    "reuse",
    "cache_lookups",
    "cache_hits",
    "srv_icur",
    "src_ilim",
    "qtime_max",
    "ctime_max",
    "rtime_max",
    "ttime_max",
    "eint",
    "idle_conn_cur",
    "safe_conn_cur",
    "used_conn_cur",
    "need_conn_est",
    "uweight",
    "agg_server_status",
    "agg_server_check_status",
    "agg_check_status",
    // Modules: TLS (3), HTTP/2 (13), HTTP/1 (8).
    "ssl_sess",
    "ssl_reused_sess",
    "ssl_failed_handshake",
    "h2_headers_rcvd",
    "h2_data_rcvd",
    "h2_settings_rcvd",
    "h2_rst_stream_rcvd",
    "h2_goaway_rcvd",
    "h2_detected_conn_protocol_errors",
    "h2_detected_strm_protocol_errors",
    "h2_rst_stream_resp",
    "h2_goaway_resp",
    "h2_open_connections",
    "h2_backend_open_streams",
    "h2_total_connections",
    "h2_backend_total_streams",
    "h1_open_connections",
    "h1_open_streams",
    "h1_total_connections",
    "h1_total_streams",
    "h1_bytes_in",
    "h1_bytes_out",
    "h1_spliced_bytes_in",
    "h1_spliced_bytes_out",
];

/// Where the modules' fields begin (HAProxy's `ST_F_TOTAL_FIELDS`).
pub const MODULES: usize = 103;
/// The TLS module's fields (present on frontends, backends and servers).
pub const TLS: std::ops::Range<usize> = 103..106;
/// The HTTP/2 and HTTP/1 modules' fields (frontends and backends only).
pub const H2_H1: std::ops::Range<usize> = 106..127;

/// Position of a field by name (a table built once: rows set and read fields by name).
pub fn position(name: &str) -> Option<usize> {
    static INDEX: std::sync::OnceLock<std::collections::HashMap<&'static str, usize>> =
        std::sync::OnceLock::new();
    INDEX
        .get_or_init(|| NAMES.iter().enumerate().map(|(i, n)| (*n, i)).collect())
        .get(name)
        .copied()
}

/// The words of a tag letter in `show stat json` (HAProxy's `field_origin`, `field_nature`,
/// `field_scope` names).
pub fn origin_word(c: u8) -> &'static str {
    match c {
        b'M' => "Metric",
        b'S' => "Status",
        b'K' => "Key",
        b'C' => "Config",
        _ => "Product",
    }
}

pub fn nature_word(c: u8) -> &'static str {
    match c {
        b'A' => "Age",
        b'a' => "Avg",
        b'C' => "Counter",
        b'D' => "Duration",
        b'G' => "Gauge",
        b'L' => "Limit",
        b'M' => "Max",
        b'N' => "Name",
        b'O' => "Output",
        b'R' => "Rate",
        _ => "Time",
    }
}

pub fn scope_word(c: u8) -> &'static str {
    match c {
        b'C' => "Cluster",
        b'P' => "Process",
        b'S' => "Service",
        _ => "System",
    }
}
