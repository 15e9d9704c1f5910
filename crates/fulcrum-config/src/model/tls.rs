//! The typed TLS and PROXY-protocol settings of `bind` lines, `server` lines and the `global`
//! section. Paths stay as written (`crt-base`/`ca-base` are applied by the engine when it loads
//! the files); cipher strings stay OpenSSL's text (the engine maps them to what it offers).

/// A protocol version as HAProxy names it (`ssl-min-ver TLSv1.2`, `no-tlsv11`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TlsVersion {
    Ssl3,
    Tls10,
    Tls11,
    Tls12,
    Tls13,
}

impl TlsVersion {
    pub const ALL: [TlsVersion; 5] = [
        TlsVersion::Ssl3,
        TlsVersion::Tls10,
        TlsVersion::Tls11,
        TlsVersion::Tls12,
        TlsVersion::Tls13,
    ];

    /// `SSLv3`, `TLSv1.0`... (HAProxy's words for `ssl-min-ver`).
    pub fn parse(word: &str) -> Option<Self> {
        Some(match word {
            "SSLv3" => TlsVersion::Ssl3,
            "TLSv1.0" => TlsVersion::Tls10,
            "TLSv1.1" => TlsVersion::Tls11,
            "TLSv1.2" => TlsVersion::Tls12,
            "TLSv1.3" => TlsVersion::Tls13,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            TlsVersion::Ssl3 => "SSLv3",
            TlsVersion::Tls10 => "TLSv1.0",
            TlsVersion::Tls11 => "TLSv1.1",
            TlsVersion::Tls12 => "TLSv1.2",
            TlsVersion::Tls13 => "TLSv1.3",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// Which protocol versions a side allows: `ssl-min-ver`/`ssl-max-ver`, `no-*`, `force-*`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TlsVersions {
    pub min: Option<TlsVersion>,
    pub max: Option<TlsVersion>,
    /// `no-sslv3`, `no-tlsv10`...: one bit per version.
    pub disabled: u8,
    /// `force-tlsv12`...: only this version.
    pub force: Option<TlsVersion>,
}

impl TlsVersions {
    pub fn disable(&mut self, v: TlsVersion) {
        self.disabled |= v.bit();
    }

    /// The versions allowed, from `default_min` (HAProxy: TLSv1.2 since 2.2) to TLSv1.3;
    /// settings of this line first, then the `ssl-default-*-options` ones (`inherited`).
    pub fn allowed(&self, inherited: &TlsVersions, default_min: TlsVersion) -> Vec<TlsVersion> {
        let force = self.force.or(inherited.force);
        if let Some(v) = force {
            return vec![v];
        }
        let min = self.min.or(inherited.min).unwrap_or(default_min);
        let max = self.max.or(inherited.max).unwrap_or(TlsVersion::Tls13);
        // Explicit `ssl-min-ver`/`ssl-max-ver` on the line override `no-*` (HAProxy warns).
        let disabled = if self.min.is_some() || self.max.is_some() {
            self.disabled
        } else {
            self.disabled | inherited.disabled
        };
        TlsVersion::ALL
            .into_iter()
            .filter(|v| *v >= min && *v <= max && disabled & v.bit() == 0)
            .collect()
    }
}

/// `verify none|optional|required`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verify {
    None,
    Optional,
    Required,
}

/// Where a bind's certificates come from, in the order written (the first is the default).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CertSource {
    /// `crt <file|dir>`.
    Crt(String),
    /// `crt-list <file>`.
    CrtList(String),
}

/// A bind line's TLS settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BindTls {
    /// `ssl`: the connections are TLS.
    pub ssl: bool,
    pub certs: Vec<CertSource>,
    /// `alpn h2,http/1.1`.
    pub alpn: Option<Vec<String>>,
    pub versions: TlsVersions,
    pub ciphers: Option<String>,
    pub ciphersuites: Option<String>,
    /// `curves` (or the older `ecdhe <curve>`).
    pub curves: Option<String>,
    pub no_tickets: bool,
    pub prefer_client_ciphers: bool,
    pub allow_0rtt: bool,
    pub strict_sni: bool,
    pub tls_ticket_keys: Option<String>,
    pub verify: Option<Verify>,
    pub ca_file: Option<String>,
    pub ca_verify_file: Option<String>,
    pub crl_file: Option<String>,
    pub no_ca_names: bool,
    /// Options accepted and ignored (`npn`...), for one warning each.
    pub ignored: Vec<String>,
}

/// A server's TLS settings (`server ... ssl verify required ca-file ...`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerTls {
    pub ssl: bool,
    pub verify: Option<Verify>,
    pub ca_file: Option<String>,
    pub crl_file: Option<String>,
    /// `crt`: the client certificate presented to the server.
    pub crt: Option<String>,
    /// `sni <expression>`, as written.
    pub sni: Option<String>,
    pub alpn: Option<Vec<String>>,
    pub versions: TlsVersions,
    pub ciphers: Option<String>,
    pub ciphersuites: Option<String>,
    pub curves: Option<String>,
    /// `verifyhost <name>`; `no-verifyhost` clears the name checked.
    pub verifyhost: Option<String>,
    pub no_verifyhost: bool,
    /// `no-ssl-reuse`: no session resumption towards this server.
    pub no_reuse: bool,
    pub no_tickets: bool,
    /// `check-ssl`, `check-sni <name>`, `check-alpn <list>`.
    pub check_ssl: bool,
    pub check_sni: Option<String>,
    pub check_alpn: Option<Vec<String>>,
}

/// `send-proxy`, `send-proxy-v2`, `send-proxy-v2-ssl[-cn]`, `proxy-v2-options`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SendProxy {
    /// 0: none, 1 or 2.
    pub version: u8,
    /// `send-proxy-v2-ssl`: the TLS facts of the client connection as TLVs.
    pub ssl: bool,
    /// `send-proxy-v2-ssl-cn`: also the client certificate's CN.
    pub ssl_cn: bool,
    /// `proxy-v2-options ssl,cert-cn,authority,crc32c,unique-id,...`.
    pub options: Vec<String>,
}

/// The `global` section's TLS settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobalTls {
    /// `ssl-default-bind-options`.
    pub bind_options: TlsVersions,
    pub bind_no_tickets: bool,
    pub bind_prefer_client_ciphers: bool,
    pub bind_ciphers: Option<String>,
    pub bind_ciphersuites: Option<String>,
    pub bind_curves: Option<String>,
    /// `ssl-default-server-options`.
    pub server_options: TlsVersions,
    pub server_no_tickets: bool,
    pub server_ciphers: Option<String>,
    pub server_ciphersuites: Option<String>,
    pub server_curves: Option<String>,
    /// `ssl-server-verify none|required` (HAProxy's default: required).
    pub server_verify: Verify,
    pub crt_base: Option<String>,
    pub ca_base: Option<String>,
    /// `tune.ssl.default-dh-param` (no DHE here: kept for the warning).
    pub dh_param: Option<u32>,
    /// `tune.ssl.cachesize` (sessions; HAProxy's default 20000).
    pub cache_size: u32,
    /// `tune.ssl.lifetime` (HAProxy's default 300 s).
    pub lifetime: std::time::Duration,
    /// `tune.ssl.maxrecord` (0: as large as TLS allows).
    pub max_record: u32,
    /// `tune.ssl.capture-buffer-size`: how many bytes of each ClientHello's lists are kept for
    /// the `ssl_fc_cipherlist_*` fetches (0: none captured); `None` until a line sets it.
    pub capture_size: Option<u32>,
    /// `tune.ssl.keylog on`: each client connection keeps its TLS secrets for the
    /// `ssl_fc_*_secret`, `ssl_fc_client_random` and `ssl_fc_session_key` fetches.
    pub keylog: bool,
    /// `maxsslconn`: connections with a TLS layer at once, clients' and servers' (0: no
    /// limit).
    pub max_conns: u32,
}

impl Default for GlobalTls {
    fn default() -> Self {
        GlobalTls {
            bind_options: TlsVersions::default(),
            bind_no_tickets: false,
            bind_prefer_client_ciphers: false,
            bind_ciphers: None,
            bind_ciphersuites: None,
            bind_curves: None,
            server_options: TlsVersions::default(),
            server_no_tickets: false,
            server_ciphers: None,
            server_ciphersuites: None,
            server_curves: None,
            server_verify: Verify::Required,
            crt_base: None,
            ca_base: None,
            dh_param: None,
            cache_size: 20000,
            lifetime: std::time::Duration::from_secs(300),
            max_record: 0,
            capture_size: None,
            keylog: false,
            max_conns: 0,
        }
    }
}
