//! TLS settings turned into rustls configurations: one `ServerConfig` per `bind ... ssl` line
//! and one `ClientConfig` per `server ... ssl`, built once with the plan and shared by every
//! worker. The byte-moving side is `connection::tls`. This module owns client verification
//! and server verification (`verify`, `verifyhost`, `sni`); an `sni` expression beyond its
//! common forms is compiled and evaluated by the rules ([`SniExpr`], `rules::sample::sni_expr`).
//!
//! Crypto provider: aws-lc-rs. Measured here (rustls 0.23, in-memory full handshakes, server
//! CPU per handshake, 2-core VM): ECDSA P-256 TLS 1.3 79.6 µs with aws-lc-rs vs 90.9 µs with
//! ring, TLS 1.2 54.8 vs 78.3; RSA-2048 TLS 1.3 334 vs 540, TLS 1.2 308 vs 528; X25519-only
//! key exchange 82.8 vs 94.3. aws-lc-rs is faster in every case, most for RSA.
//!
//! What HAProxy's keywords become: versions TLS 1.2 and 1.3 (rustls has no SSLv3, TLS 1.0 or
//! 1.1: asking for them is refused, or warned about when something usable remains); OpenSSL
//! cipher strings map to rustls' suites (`ciphers`); session resumption with tickets whose keys
//! rotate (one ticketer for the process, so tickets stay valid across reloads) and a session
//! cache of `tune.ssl.cachesize` entries shared by all binds.
//!
//! Must not touch: sockets and the handshake's I/O (`connection::tls`), sessions.

pub mod certs;
pub mod ciphers;
pub mod facts;
pub mod hello;
pub mod ocsp;
pub mod tickets;
pub mod x509;

use std::sync::{Arc, OnceLock};

use fulcrum_config as cfg;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ProducesTickets;
use rustls::version::{TLS12, TLS13};
use rustls::{ClientConfig, RootCertStore, ServerConfig, SupportedProtocolVersion};

/// The settings of one side, after `ssl-default-*` were applied.
struct Choice {
    versions: Vec<&'static SupportedProtocolVersion>,
    provider: Arc<CryptoProvider>,
}

/// Versions, suites and groups from a line's settings and the global defaults. `who` starts
/// every message.
#[allow(clippy::too_many_arguments)]
fn choose(
    versions: &cfg::TlsVersions,
    inherited: &cfg::TlsVersions,
    ciphers: Option<&str>,
    ciphersuites: Option<&str>,
    curves: Option<&str>,
    who: &str,
    warnings: &mut Vec<String>,
) -> Result<Choice, String> {
    let allowed = versions.allowed(inherited, cfg::TlsVersion::Tls12);
    let old: Vec<&str> =
        allowed.iter().filter(|v| **v < cfg::TlsVersion::Tls12).map(|v| v.name()).collect();
    let mut tls12 = allowed.contains(&cfg::TlsVersion::Tls12);
    let tls13 = allowed.contains(&cfg::TlsVersion::Tls13);
    if !old.is_empty() {
        if !tls12 && !tls13 {
            return Err(format!(
                "{who} : {} not available (only TLSv1.2 and TLSv1.3 are offered).",
                old.join(", ")
            ));
        }
        warnings
            .push(format!("{who} : {} not offered (only TLSv1.2 and TLSv1.3).", old.join(", ")));
    }
    let mut suites = Vec::new();
    if tls13 {
        match ciphersuites {
            Some(text) => {
                let (s, bad) = ciphers::tls13(text);
                if !bad.is_empty() {
                    warnings.push(format!(
                        "{who} : ciphersuites {} not available: dropped.",
                        bad.join(", ")
                    ));
                }
                suites.extend(s);
            }
            None => suites.extend(ciphers::default_tls13()),
        }
    }
    if tls12 {
        let s = match ciphers {
            Some(text) => {
                let (s, bad) = ciphers::tls12(text);
                if !bad.is_empty() {
                    warnings.push(format!(
                        "{who} : ciphers {} not available (no DHE, RSA key exchange, CBC or 3DES here): dropped.",
                        bad.join(", ")
                    ));
                }
                s
            }
            None => ciphers::default_tls12(),
        };
        if s.is_empty() {
            if !tls13 {
                return Err(format!(
                    "{who} : none of the ciphers '{}' is available.",
                    ciphers.unwrap_or("")
                ));
            }
            warnings.push(format!("{who} : no TLSv1.2 cipher left: only TLSv1.3 is offered."));
            tls12 = false;
        }
        suites.extend(s);
    }
    if suites.is_empty() {
        return Err(format!("{who} : no TLSv1.3 ciphersuite left and TLSv1.2 not allowed."));
    }
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    provider.cipher_suites = suites;
    if let Some(text) = curves {
        let (groups, bad) = ciphers::curves(text);
        if !bad.is_empty() {
            warnings.push(format!("{who} : curves {} not available: dropped.", bad.join(", ")));
        }
        if groups.is_empty() {
            return Err(format!("{who} : none of the curves '{text}' is available."));
        }
        provider.kx_groups = groups;
    }
    let mut versions = Vec::new();
    if tls13 {
        versions.push(&TLS13);
    }
    if tls12 {
        versions.push(&TLS12);
    }
    Ok(Choice { versions, provider: Arc::new(provider) })
}

/// The process's ticket keys: shared by all binds and workers, kept across reloads, rotated
/// by rustls (a key encrypts for 6 hours and decrypts for 6 more).
fn ticketer() -> Option<Arc<dyn ProducesTickets>> {
    static T: OnceLock<Option<Arc<dyn ProducesTickets>>> = OnceLock::new();
    T.get_or_init(|| rustls::crypto::aws_lc_rs::Ticketer::new().ok()).clone()
}

/// The TLS 1.2 session-id cache (and TLS 1.3 stateful resumption without tickets), shared.
fn session_cache(size: u32) -> Arc<dyn rustls::server::StoresServerSessions> {
    static C: OnceLock<Arc<rustls::server::ServerSessionMemoryCache>> = OnceLock::new();
    C.get_or_init(|| rustls::server::ServerSessionMemoryCache::new(size.max(1) as usize)).clone()
}

/// A bind's TLS: its configuration, and those of the crt-list lines that have SSL options of
/// their own, chosen by the name the client asks for.
#[derive(Debug)]
pub struct BindTls {
    pub config: Arc<ServerConfig>,
    /// `tune.ssl.capture-buffer-size` (0: nothing of the ClientHello is kept).
    pub capture: usize,
    exact: std::collections::HashMap<String, Arc<ServerConfig>>,
    wildcard: std::collections::HashMap<String, Arc<ServerConfig>>,
}

impl BindTls {
    /// Some crt-list lines have options: the ClientHello is read before choosing.
    pub fn routed(&self) -> bool {
        !self.exact.is_empty() || !self.wildcard.is_empty() || self.capture > 0
    }

    /// The configuration for a client asking for `name`.
    pub fn pick(&self, name: Option<&str>) -> Arc<ServerConfig> {
        let found = name.and_then(|n| {
            let n = n.to_ascii_lowercase();
            self.exact.get(&n).or_else(|| self.wildcard.get(n.split_once('.')?.1)).cloned()
        });
        found.unwrap_or_else(|| Arc::clone(&self.config))
    }
}

/// Builds a bind's TLS configuration: certificates, versions, suites, ALPN, client
/// verification, and one configuration per crt-list line with options. `who` is the bind line
/// for messages.
pub fn server_config(
    t: &cfg::BindTls,
    g: &cfg::GlobalTls,
    who: &str,
    warnings: &mut Vec<String>,
) -> Result<Arc<BindTls>, Vec<String>> {
    let mut errors = Vec::new();
    let mut loaded = Vec::new();
    for src in &t.certs {
        let r = match src {
            cfg::CertSource::Crt(p) => {
                certs::load_crt(&certs::with_base(p, g.crt_base.as_deref()), warnings)
            }
            cfg::CertSource::CrtList(p) => certs::load_crt_list(
                &certs::with_base(p, g.crt_base.as_deref()),
                g.crt_base.as_deref(),
                t,
                warnings,
            ),
        };
        match r {
            Ok(l) => loaded.extend(l),
            Err(e) => errors.push(format!("{who} : {e}")),
        }
    }
    if loaded.is_empty() && errors.is_empty() {
        errors.push(format!("{who} : no SSL certificate specified (use 'crt' or 'crt-list')."));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // Lines with options of their own: a configuration each, for their names.
    let (mut exact, mut wildcard) =
        (std::collections::HashMap::new(), std::collections::HashMap::new());
    for l in loaded.iter().filter(|l| l.settings.is_some()) {
        let Some(settings) = &l.settings else { continue };
        let own = certs::Loaded {
            key: Arc::clone(&l.key),
            names: l.names.clone(),
            excluded: l.excluded.clone(),
            settings: None,
        };
        let config = build_config(settings, g, who, warnings, vec![own])?;
        for name in l.names.iter().filter(|n| !l.excluded.contains(n)) {
            match name.strip_prefix("*.") {
                Some(rest) => {
                    wildcard.entry(rest.to_string()).or_insert_with(|| Arc::clone(&config))
                }
                None => exact.entry(name.clone()).or_insert_with(|| Arc::clone(&config)),
            };
        }
    }
    let config = build_config(t, g, who, warnings, loaded)?;
    let capture = g.capture_size.unwrap_or(0) as usize;
    Ok(Arc::new(BindTls { config, capture, exact, wildcard }))
}

/// One rustls configuration from settings and certificates.
fn build_config(
    t: &cfg::BindTls,
    g: &cfg::GlobalTls,
    who: &str,
    warnings: &mut Vec<String>,
    loaded: Vec<certs::Loaded>,
) -> Result<Arc<ServerConfig>, Vec<String>> {
    let mut errors = Vec::new();
    for w in &t.ignored {
        warnings.push(format!("{who} : '{w}' is ignored (not supported: use 'alpn')."));
    }
    let inherited = &g.bind_options;
    let choice = match choose(
        &t.versions,
        inherited,
        t.ciphers.as_deref().or(g.bind_ciphers.as_deref()),
        t.ciphersuites.as_deref().or(g.bind_ciphersuites.as_deref()),
        t.curves.as_deref().or(g.bind_curves.as_deref()),
        who,
        warnings,
    ) {
        Ok(c) => Some(c),
        Err(e) => {
            errors.push(e);
            None
        }
    };
    let verifier = client_verifier(t, g, who).map_err(|e| errors.push(e)).ok();
    let (Some(choice), Some(verifier), true) = (choice, verifier, errors.is_empty()) else {
        return Err(errors);
    };
    let builder = match ServerConfig::builder_with_provider(choice.provider)
        .with_protocol_versions(&choice.versions)
    {
        Ok(b) => b,
        Err(e) => return Err(vec![format!("{who} : {e}")]),
    };
    let resolver = certs::Resolver::new(loaded, t.strict_sni);
    let mut sc = builder.with_client_cert_verifier(verifier).with_cert_resolver(Arc::new(resolver));
    if let Some(list) = &t.alpn {
        sc.alpn_protocols = list.iter().map(|p| p.clone().into_bytes()).collect();
    }
    sc.ignore_client_order = !(t.prefer_client_ciphers || g.bind_prefer_client_ciphers);
    sc.session_storage = session_cache(g.cache_size);
    if g.keylog {
        sc.key_log = Arc::new(crate::connection::keylog::Collector);
    }
    if !(t.no_tickets || g.bind_no_tickets) {
        if let Some(path) = &t.tls_ticket_keys {
            let path = certs::with_base(path, g.crt_base.as_deref());
            let shown = path.display().to_string();
            let text = crate::files::read_string(&path).map_err(|e| {
                vec![format!(
                    "{who} : failed to load keys from '{shown}' : {}.",
                    crate::sys::os_words(&e)
                )]
            })?;
            let lifetime = g.lifetime.as_secs().min(u64::from(u32::MAX)) as u32;
            let tk = tickets::FileTicketer::parse(&text, &shown, lifetime)
                .map_err(|e| vec![format!("{who} : tls-ticket-keys {e}")])?;
            sc.ticketer = Arc::new(tk);
        } else if let Some(tk) = ticketer() {
            sc.ticketer = tk;
        }
    }
    sc.max_early_data_size = 0;
    Ok(Arc::new(sc))
}

/// `verify`, `ca-file`, `ca-verify-file`, `crl-file` of a bind.
fn client_verifier(
    t: &cfg::BindTls,
    g: &cfg::GlobalTls,
    who: &str,
) -> Result<Arc<dyn rustls::server::danger::ClientCertVerifier>, String> {
    let verify = t.verify.unwrap_or(cfg::Verify::None);
    if verify == cfg::Verify::None {
        return Ok(rustls::server::WebPkiClientVerifier::no_client_auth());
    }
    let Some(ca) = &t.ca_file else {
        return Err(format!("{who} : verify is enabled but no CA file specified."));
    };
    let base = g.ca_base.as_deref();
    let mut roots = RootCertStore::empty();
    let hint = certs::load_cas(&certs::with_base(ca, base)).map_err(|e| format!("{who} : {e}"))?;
    let hint_names: Vec<_> = hint.iter().filter_map(|c| subject_of(c)).collect();
    for c in hint {
        roots.add(c).map_err(|e| format!("{who} : ca-file '{ca}' : {e}"))?;
    }
    if let Some(v) = &t.ca_verify_file {
        for c in certs::load_cas(&certs::with_base(v, base)).map_err(|e| format!("{who} : {e}"))? {
            roots.add(c).map_err(|e| format!("{who} : ca-verify-file '{v}' : {e}"))?;
        }
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut b =
        rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .clear_root_hint_subjects();
    if !t.no_ca_names {
        b = b.add_root_hint_subjects(hint_names);
    }
    if let Some(crl) = &t.crl_file {
        b = b.with_crls(
            certs::load_crls(&certs::with_base(crl, base)).map_err(|e| format!("{who} : {e}"))?,
        );
    }
    if verify == cfg::Verify::Optional {
        b = b.allow_unauthenticated();
    }
    b.build().map_err(|e| format!("{who} : {e}"))
}

fn subject_of(c: &CertificateDer<'_>) -> Option<rustls::DistinguishedName> {
    let (_, cert) = x509_parser::parse_x509_certificate(c).ok()?;
    Some(rustls::DistinguishedName::from(cert.subject().as_raw().to_vec()))
}

/// A server's TLS side: its configuration, and the name its certificate must carry.
#[derive(Debug)]
pub struct Origin {
    pub config: Arc<ClientConfig>,
    /// `config` offering ALPN without `h2` (WebSocket upgrades over HTTP/1.1).
    pub config_h1: Arc<ClientConfig>,
    /// `sni <expr>`: what the connection's SNI is.
    pub sni: Option<Sni>,
    /// For health checks: `check-sni`.
    pub check_sni: Option<String>,
    pub check_config: Arc<ClientConfig>,
    /// Checks use TLS (`check-ssl`, or the server's `ssl` without its own check port/addr).
    pub check_ssl: bool,
    /// Traffic uses TLS (`ssl`); without it this side serves health checks only.
    pub ssl: bool,
}

/// Builds a server's TLS side.
pub fn origin(
    t: &cfg::ServerTls,
    g: &cfg::GlobalTls,
    check_elsewhere: bool,
    connect_ssl: bool,
    who: &str,
    warnings: &mut Vec<String>,
    sni_expr: SniCompiler<'_>,
) -> Result<Option<Arc<Origin>>, String> {
    let check_ssl = t.check_ssl || (t.ssl && !check_elsewhere);
    if !t.ssl && !check_ssl && !connect_ssl {
        return Ok(None);
    }
    let verify = t.verify.unwrap_or(g.server_verify);
    let choice = choose(
        &t.versions,
        &g.server_options,
        t.ciphers.as_deref().or(g.server_ciphers.as_deref()),
        t.ciphersuites.as_deref().or(g.server_ciphersuites.as_deref()),
        t.curves.as_deref().or(g.server_curves.as_deref()),
        who,
        warnings,
    )?;
    let verifier: Arc<dyn rustls::client::danger::ServerCertVerifier> = match verify {
        cfg::Verify::None => Arc::new(NoVerify(Arc::clone(&choice.provider))),
        _ => {
            let Some(ca) = &t.ca_file else {
                return Err(format!("{who} : verify is enabled by default but no CA file specified. If you're running on a LAN where you're certain to trust the server's certificate, please set an explicit 'verify none' statement on the 'server' line, or use 'ssl-server-verify none' in the global section to disable server-side verifications by default."));
            };
            let mut roots = RootCertStore::empty();
            for c in certs::load_cas(&certs::with_base(ca, g.ca_base.as_deref()))
                .map_err(|e| format!("{who} : {e}"))?
            {
                roots.add(c).map_err(|e| format!("{who} : ca-file '{ca}' : {e}"))?;
            }
            let mut b = rustls::client::WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots),
                Arc::clone(&choice.provider),
            );
            if let Some(crl) = &t.crl_file {
                b = b.with_crls(
                    certs::load_crls(&certs::with_base(crl, g.ca_base.as_deref()))
                        .map_err(|e| format!("{who} : {e}"))?,
                );
            }
            let inner = b.build().map_err(|e| format!("{who} : {e}"))?;
            let host = match (&t.verifyhost, t.no_verifyhost) {
                (Some(h), false) => Some(
                    ServerName::try_from(h.clone())
                        .map_err(|e| format!("{who} : verifyhost '{h}' : {e}"))?,
                ),
                _ => None,
            };
            // Without verifyhost, the name checked is the SNI sent, if any (HAProxy).
            let by_sni = host.is_none() && t.sni.is_some() && !t.no_verifyhost;
            Arc::new(NameCheck { inner, host, by_sni })
        }
    };
    let client_cert = match &t.crt {
        Some(p) => Some(
            certs::load_client_cert(&certs::with_base(p, g.crt_base.as_deref()), warnings)
                .map_err(|e| format!("{who} : {e}"))?,
        ),
        None => None,
    };
    let build = |alpn: &Option<Vec<String>>| -> Result<Arc<ClientConfig>, String> {
        let b = ClientConfig::builder_with_provider(Arc::clone(&choice.provider))
            .with_protocol_versions(&choice.versions)
            .map_err(|e| format!("{who} : {e}"))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::clone(&verifier));
        let mut c = match &client_cert {
            Some((chain, key)) => b
                .with_client_auth_cert(chain.clone(), key.clone_key())
                .map_err(|e| format!("{who} : crt : {e}"))?,
            None => b.with_no_client_auth(),
        };
        if let Some(list) = alpn {
            c.alpn_protocols = list.iter().map(|p| p.clone().into_bytes()).collect();
        }
        if t.no_reuse {
            c.resumption = rustls::client::Resumption::disabled();
        } else if t.no_tickets || g.server_no_tickets {
            c.resumption = rustls::client::Resumption::default()
                .tls12_resumption(rustls::client::Tls12Resumption::SessionIdOnly);
        }
        c.enable_sni = true;
        Ok(Arc::new(c))
    };
    let config = build(&t.alpn)?;
    // The list less `h2`: for WebSocket upgrades that go over HTTP/1.1, and for health
    // checks without `check-alpn` (HAProxy would run an HTTP check over HTTP/2 then).
    let config_h1 = if t.alpn.as_ref().is_some_and(|l| l.iter().any(|p| p == "h2")) {
        let mut l = t.alpn.clone().unwrap_or_default();
        l.retain(|p| p != "h2");
        build(&Some(l).filter(|l| !l.is_empty()))?
    } else {
        Arc::clone(&config)
    };
    let check_config = match &t.check_alpn {
        Some(_) => build(&t.check_alpn)?,
        None => Arc::clone(&config_h1),
    };
    let sni = match t.sni.as_deref() {
        Some(e) => Some(Sni::parse(e, sni_expr).map_err(|m| format!("{who} : sni '{e}' : {m}"))?),
        None => None,
    };
    Ok(Some(Arc::new(Origin {
        config,
        config_h1,
        sni,
        check_sni: t.check_sni.clone(),
        check_config,
        check_ssl,
        ssl: t.ssl,
    })))
}

/// `server ... sni <expr>`: the forms of real configurations read without the rules' machinery,
/// any other sample expression compiled as rules compile it.
#[derive(Debug)]
pub enum Sni {
    /// `str(<name>)`.
    Fixed(String),
    /// `req.hdr(host)` / `hdr(host)`: the request's Host, without its port when followed by
    /// `,field(1,:)`, lower-cased with `,lower`.
    Host { strip_port: bool, lower: bool },
    /// `ssl_fc_sni`: the name the client asked for.
    FromClient,
    /// Any other expression, evaluated on the request (its fetches and converters): compiled
    /// and evaluated by the rules (`rules::sample::sni_expr`).
    Expr(Box<dyn SniExpr>),
}

/// An `sni` expression the rules compiled: its value for a connection being opened.
pub trait SniExpr: std::fmt::Debug + Send + Sync {
    fn value(&self, open: &crate::connection::Opening<'_>) -> Option<String>;
}

/// Compiles an `sni` expression (`rules::sample::sni_expr`: the rules' compiler; TLS does not
/// know samples).
pub type SniCompiler<'a> = &'a dyn Fn(&str) -> Result<Box<dyn SniExpr>, String>;

impl Sni {
    pub fn parse(expr: &str, compile: SniCompiler<'_>) -> Result<Sni, String> {
        if let Some(s) = Self::parse_common(expr) {
            return Ok(s);
        }
        Ok(Sni::Expr(compile(expr)?))
    }

    fn parse_common(expr: &str) -> Option<Sni> {
        // Converters are split at commas outside parentheses (`field(1,:)` is one).
        let mut items = Vec::new();
        let (mut depth, mut start) = (0i32, 0);
        for (i, c) in expr.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                ',' if depth == 0 => {
                    items.push(&expr[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        items.push(&expr[start..]);
        let mut parts = items.into_iter();
        let first = parts.next()?;
        let (mut strip_port, mut lower) = (false, false);
        for conv in parts {
            match conv {
                "field(1,:)" => strip_port = true,
                "lower" => lower = true,
                _ => return None,
            }
        }
        if let Some(name) = first.strip_prefix("str(").and_then(|r| r.strip_suffix(')')) {
            return (!strip_port && !lower).then(|| Sni::Fixed(name.to_string()));
        }
        match first.to_ascii_lowercase().as_str() {
            "req.hdr(host)" | "hdr(host)" | "req.hdr(host,1)" | "hdr(host,1)" => {
                Some(Sni::Host { strip_port, lower })
            }
            "ssl_fc_sni" => Some(Sni::FromClient),
            _ => None,
        }
    }

    /// The value for one connection, from the request's Host and the client's SNI (and, for
    /// other expressions, what `open` knows of the stream).
    pub fn value(
        &self,
        host: Option<&[u8]>,
        client_sni: Option<&str>,
        open: &crate::connection::Opening<'_>,
    ) -> Option<String> {
        match self {
            Sni::Expr(e) => e.value(open),
            Sni::Fixed(s) => Some(s.clone()),
            Sni::FromClient => client_sni.map(str::to_string),
            Sni::Host { strip_port, lower } => {
                let h = std::str::from_utf8(host?).ok()?;
                let h = if *strip_port { h.split(':').next().unwrap_or(h) } else { h };
                Some(if *lower { h.to_ascii_lowercase() } else { h.to_string() })
            }
        }
    }
}

/// The name given to rustls for a server connection: the SNI if one is sent (`sni`), else
/// the server's address (rustls then sends no SNI).
pub fn server_name(sni: Option<&str>, addr: std::net::IpAddr) -> ServerName<'static> {
    sni.and_then(|s| ServerName::try_from(s.to_string()).ok())
        .unwrap_or_else(|| ServerName::IpAddress(addr.into()))
}

/// `verify required`: the chain against `ca-file`, and the name `verifyhost` says, else the
/// SNI sent, else no name (HAProxy checks no name when neither is set).
#[derive(Debug)]
struct NameCheck {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    host: Option<ServerName<'static>>,
    by_sni: bool,
}

impl rustls::client::danger::ServerCertVerifier for NameCheck {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        let name = self.host.as_ref().unwrap_or(server_name);
        let r = self.inner.verify_server_cert(end_entity, intermediates, name, ocsp, now);
        let checks_name =
            self.host.is_some() || self.by_sni && matches!(server_name, ServerName::DnsName(_));
        match r {
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName))
            | Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForNameContext { .. },
            )) if !checks_name => Ok(rustls::client::danger::ServerCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// `verify none`: any certificate is accepted; the handshake's signatures are still checked.
#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sni_expressions_of_real_configurations() {
        let open = crate::connection::Opening::default();
        let fixed =
            Sni::parse("str(api.example.com)", &crate::rules::sample::sni_expr).expect("str");
        assert!(matches!(&fixed, Sni::Fixed(n) if n == "api.example.com"));
        let host =
            Sni::parse("req.hdr(host),field(1,:)", &crate::rules::sample::sni_expr).expect("host");
        assert_eq!(
            host.value(Some(b"Example.com:8443"), None, &open).as_deref(),
            Some("Example.com")
        );
        let lower = Sni::parse("hdr(Host),lower", &crate::rules::sample::sni_expr).expect("lower");
        assert_eq!(lower.value(Some(b"Example.com"), None, &open).as_deref(), Some("example.com"));
        let from = Sni::parse("ssl_fc_sni", &crate::rules::sample::sni_expr).expect("sni");
        assert_eq!(from.value(None, Some("a.b"), &open).as_deref(), Some("a.b"));
        // Anything else the rules know is compiled as they compile it.
        let other = Sni::parse("str(x.example),upper", &crate::rules::sample::sni_expr)
            .expect("any expression");
        assert!(matches!(other, Sni::Expr(_)));
        assert_eq!(other.value(None, None, &open).as_deref(), Some("X.EXAMPLE"));
        assert!(Sni::parse("nosuchfetch", &crate::rules::sample::sni_expr).is_err());
        assert!(Sni::parse("str(a) junk", &crate::rules::sample::sni_expr).is_err());
    }
}
