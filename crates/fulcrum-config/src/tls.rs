//! TLS and PROXY-protocol options: those of `bind` lines (`ssl`, `crt`, `crt-list`, `alpn`,
//! versions, ciphers, `verify`...), of `server` and `default-server` lines (`ssl`, `verify`,
//! `sni`, `send-proxy*`...) and the `global` ones (`ssl-default-*`, `crt-base`, `tune.ssl.*`),
//! with HAProxy's messages. Files are not read here: the engine loads them.

use crate::args::Diags;
use crate::lexer::Line;
use crate::model::{
    BindTls, CertSource, GlobalTls, SendProxy, ServerTls, TlsVersion, TlsVersions, Verify,
};

/// `no-tlsv12`, `force-tlsv13`... on `versions`. `None` if `opt` is not one of them.
fn version_flag(opt: &str, versions: &mut TlsVersions) -> Option<()> {
    let (force, name) = if let Some(n) = opt.strip_prefix("no-") {
        (false, n)
    } else {
        (true, opt.strip_prefix("force-")?)
    };
    let v = match name {
        "sslv3" => TlsVersion::Ssl3,
        "tlsv10" => TlsVersion::Tls10,
        "tlsv11" => TlsVersion::Tls11,
        "tlsv12" => TlsVersion::Tls12,
        "tlsv13" => TlsVersion::Tls13,
        _ => return None,
    };
    if force {
        versions.force = Some(v);
    } else {
        versions.disable(v);
    }
    Some(())
}

fn version_word(opt: &str, val: &str) -> Result<TlsVersion, String> {
    TlsVersion::parse(val).ok_or_else(|| {
        format!("'{opt}' : unknown ssl/tls version string '{val}'. Supported versions are: SSLv3, TLSv1.0, TLSv1.1, TLSv1.2, TLSv1.3")
    })
}

fn verify(opt: &str, val: &str) -> Result<Verify, String> {
    match val {
        "none" => Ok(Verify::None),
        "optional" => Ok(Verify::Optional),
        "required" => Ok(Verify::Required),
        _ => Err(format!(
            "'{opt}' : unknown verify method '{val}', only 'none', 'optional', and 'required' are supported"
        )),
    }
}

/// `alpn h2,http/1.1`: HAProxy refuses empty names and names over 255 bytes.
fn alpn(opt: &str, val: &str) -> Result<Vec<String>, String> {
    let list: Vec<String> = val.split(',').map(str::to_string).collect();
    if list.iter().any(|p| p.is_empty() || p.len() > 255) {
        return Err(format!("'{opt}' : ALPN protocol name too long or empty in '{val}'"));
    }
    Ok(list)
}

fn needs_value(opt: &str, val: &str, what: &str) -> Result<(), String> {
    if val.is_empty() {
        return Err(format!("'{opt}' : missing {what}"));
    }
    Ok(())
}

/// Bind options with a value, among the TLS ones.
pub const BIND_WITH_VALUE: &[&str] = &[
    "crt",
    "crt-list",
    "alpn",
    "npn",
    "ssl-min-ver",
    "ssl-max-ver",
    "ciphers",
    "ciphersuites",
    "curves",
    "ecdhe",
    "tls-ticket-keys",
    "verify",
    "ca-file",
    "ca-verify-file",
    "crl-file",
    "ca-ignore-err",
    "crt-ignore-err",
];

/// Is `opt` one of the TLS bind options?
pub fn is_bind_option(opt: &str) -> bool {
    bind_option(opt, "x", &mut BindTls::default()).is_some()
}

/// Is `opt` one of the TLS or PROXY-protocol server options?
pub fn is_server_option(opt: &str) -> bool {
    server_option(opt, "x", &mut ServerTls::default(), &mut SendProxy::default()).is_some()
}

/// Applies TLS bind option `opt` (with `val` when it takes one). `None`: not a TLS option.
pub fn bind_option(opt: &str, val: &str, tls: &mut BindTls) -> Option<Result<(), String>> {
    let r = match opt {
        "ssl" => {
            tls.ssl = true;
            Ok(())
        }
        "crt" | "crt-list" => needs_value(opt, val, "certificate location").map(|()| {
            tls.certs.push(if opt == "crt" {
                CertSource::Crt(val.to_string())
            } else {
                CertSource::CrtList(val.to_string())
            });
        }),
        "alpn" => alpn(opt, val).map(|l| tls.alpn = Some(l)),
        "npn" => {
            tls.ignored.push("npn".into());
            Ok(())
        }
        "ssl-min-ver" => version_word(opt, val).map(|v| tls.versions.min = Some(v)),
        "ssl-max-ver" => version_word(opt, val).map(|v| tls.versions.max = Some(v)),
        "ciphers" => needs_value(opt, val, "cipher suite").map(|()| tls.ciphers = Some(val.into())),
        "ciphersuites" => {
            needs_value(opt, val, "cipher suite").map(|()| tls.ciphersuites = Some(val.into()))
        }
        "curves" | "ecdhe" => {
            needs_value(opt, val, "curve list").map(|()| tls.curves = Some(val.into()))
        }
        "no-tls-tickets" => {
            tls.no_tickets = true;
            Ok(())
        }
        "prefer-client-ciphers" => {
            tls.prefer_client_ciphers = true;
            Ok(())
        }
        "allow-0rtt" => {
            tls.allow_0rtt = true;
            Ok(())
        }
        "strict-sni" => {
            tls.strict_sni = true;
            Ok(())
        }
        "no-ca-names" => {
            tls.no_ca_names = true;
            Ok(())
        }
        "tls-ticket-keys" => needs_value(opt, val, "TLS ticket keys file path")
            .map(|()| tls.tls_ticket_keys = Some(val.into())),
        "verify" => verify(opt, val).map(|v| tls.verify = Some(v)),
        "ca-file" => needs_value(opt, val, "CAfile path").map(|()| tls.ca_file = Some(val.into())),
        "ca-verify-file" => needs_value(opt, val, "CAverify file path")
            .map(|()| tls.ca_verify_file = Some(val.into())),
        "crl-file" => {
            needs_value(opt, val, "CRLfile path").map(|()| tls.crl_file = Some(val.into()))
        }
        "ca-ignore-err" | "crt-ignore-err" => {
            tls.ignored.push(opt.to_string());
            Ok(())
        }
        _ => return version_flag(opt, &mut tls.versions).map(Ok),
    };
    Some(r)
}

/// Applies TLS or PROXY-protocol server option `opt`. `None`: not one of them; otherwise how
/// many words it took.
pub fn server_option(
    opt: &str,
    val: &str,
    tls: &mut ServerTls,
    proxy: &mut SendProxy,
) -> Option<Result<usize, String>> {
    let with = |r: Result<(), String>| Some(r.map(|()| 2));
    let flag = |f: &mut dyn FnMut()| {
        f();
        Some(Ok(1))
    };
    match opt {
        "ssl" => flag(&mut || tls.ssl = true),
        "no-ssl" => flag(&mut || tls.ssl = false),
        "verify" => with(verify(opt, val).map(|v| tls.verify = Some(v))),
        "ca-file" => {
            with(needs_value(opt, val, "CAfile path").map(|()| tls.ca_file = Some(val.into())))
        }
        "crl-file" => {
            with(needs_value(opt, val, "CRLfile path").map(|()| tls.crl_file = Some(val.into())))
        }
        "crt" => with(
            needs_value(opt, val, "certificate file path").map(|()| tls.crt = Some(val.into())),
        ),
        "sni" => with(needs_value(opt, val, "sni expression").map(|()| tls.sni = Some(val.into()))),
        "alpn" => with(alpn(opt, val).map(|l| tls.alpn = Some(l))),
        "npn" => with(Ok(())),
        "ssl-min-ver" => with(version_word(opt, val).map(|v| tls.versions.min = Some(v))),
        "ssl-max-ver" => with(version_word(opt, val).map(|v| tls.versions.max = Some(v))),
        "ciphers" => {
            with(needs_value(opt, val, "cipher suite").map(|()| tls.ciphers = Some(val.into())))
        }
        "ciphersuites" => with(
            needs_value(opt, val, "cipher suite").map(|()| tls.ciphersuites = Some(val.into())),
        ),
        "curves" => {
            with(needs_value(opt, val, "curve list").map(|()| tls.curves = Some(val.into())))
        }
        "verifyhost" => with(needs_value(opt, val, "hostname to verify against").map(|()| {
            tls.verifyhost = Some(val.into());
            tls.no_verifyhost = false;
        })),
        "no-verifyhost" => flag(&mut || {
            tls.verifyhost = None;
            tls.no_verifyhost = true;
        }),
        "no-ssl-reuse" => flag(&mut || tls.no_reuse = true),
        "ssl-reuse" => flag(&mut || tls.no_reuse = false),
        "no-tls-tickets" => flag(&mut || tls.no_tickets = true),
        "tls-tickets" => flag(&mut || tls.no_tickets = false),
        "check-ssl" => flag(&mut || tls.check_ssl = true),
        "no-check-ssl" => flag(&mut || tls.check_ssl = false),
        "check-sni" => {
            with(needs_value(opt, val, "SNI").map(|()| tls.check_sni = Some(val.into())))
        }
        "check-alpn" => with(alpn(opt, val).map(|l| tls.check_alpn = Some(l))),
        "allow-0rtt" => flag(&mut || {}),
        "send-proxy" => flag(&mut || proxy.version = 1),
        "send-proxy-v2" => flag(&mut || proxy.version = 2),
        "send-proxy-v2-ssl" => flag(&mut || {
            proxy.version = 2;
            proxy.ssl = true;
        }),
        "send-proxy-v2-ssl-cn" => flag(&mut || {
            proxy.version = 2;
            proxy.ssl = true;
            proxy.ssl_cn = true;
        }),
        "no-send-proxy"
        | "no-send-proxy-v2"
        | "no-send-proxy-v2-ssl"
        | "no-send-proxy-v2-ssl-cn" => flag(&mut || *proxy = SendProxy::default()),
        "proxy-v2-options" => with(proxy_v2_options(val).map(|l| proxy.options = l)),
        _ => version_flag(opt, &mut tls.versions).map(|()| Ok(1)),
    }
}

/// `proxy-v2-options <opt>[,<opt>...]` with HAProxy 2.6's option names.
fn proxy_v2_options(val: &str) -> Result<Vec<String>, String> {
    const KNOWN: &[&str] = &[
        "ssl",
        "cert-cn",
        "ssl-cipher",
        "cert-sig",
        "cert-key",
        "authority",
        "crc32c",
        "unique-id",
    ];
    let mut list = Vec::new();
    for o in val.split(',') {
        if !KNOWN.contains(&o) {
            return Err(format!("'proxy-v2-options' : '{o}' : unknown option"));
        }
        list.push(o.to_string());
    }
    Ok(list)
}

/// Server options with a value, among these.
pub const SERVER_WITH_VALUE: &[&str] = &[
    "verify",
    "ca-file",
    "crl-file",
    "crt",
    "sni",
    "alpn",
    "npn",
    "ssl-min-ver",
    "ssl-max-ver",
    "ciphers",
    "ciphersuites",
    "curves",
    "verifyhost",
    "check-sni",
    "check-alpn",
    "proxy-v2-options",
];

/// The global TLS keywords this module reads.
pub fn is_global(kw: &str) -> bool {
    matches!(
        kw,
        "ssl-default-bind-options"
            | "ssl-default-bind-ciphers"
            | "ssl-default-bind-ciphersuites"
            | "ssl-default-bind-curves"
            | "ssl-default-server-options"
            | "ssl-default-server-ciphers"
            | "ssl-default-server-ciphersuites"
            | "ssl-default-server-curves"
            | "ssl-server-verify"
            | "crt-base"
            | "ca-base"
            | "tune.ssl.default-dh-param"
            | "tune.ssl.cachesize"
            | "tune.ssl.lifetime"
            | "tune.ssl.maxrecord"
            | "tune.ssl.force-private-cache"
            | "tune.ssl.keylog"
            | "tune.ssl.capture-buffer-size"
            | "tune.ssl.capture-cipherlist-size"
            | "tune.ssl.ssl-ctx-cache-size"
            | "tune.ssl.hard-maxrecord"
            | "ssl-dh-param-file"
            | "ssl-skip-self-issued-ca"
            | "maxsslconn"
    )
}

/// Parses one global TLS line into `g`.
pub fn global_line(kw: &str, line: &Line, g: &mut GlobalTls, diags: &mut Diags) {
    let val = line.arg(1);
    let missing = |diags: &mut Diags| {
        diags.alert(line, format!("global statement '{kw}' expects a string as an argument."));
    };
    match kw {
        "ssl-default-bind-options" | "ssl-default-server-options" => {
            let bind = kw == "ssl-default-bind-options";
            let mut i = 1;
            while i < line.words.len() {
                let w = line.arg(i);
                let (versions, tickets) = if bind {
                    (&mut g.bind_options, &mut g.bind_no_tickets)
                } else {
                    (&mut g.server_options, &mut g.server_no_tickets)
                };
                match w {
                    "ssl-min-ver" | "ssl-max-ver" => {
                        i += 1;
                        match version_word(w, line.arg(i)) {
                            Ok(v) if w == "ssl-min-ver" => versions.min = Some(v),
                            Ok(v) => versions.max = Some(v),
                            Err(m) => diags.alert(line, format!("{kw}: {m}")),
                        }
                    }
                    "no-tls-tickets" => *tickets = true,
                    "prefer-client-ciphers" if bind => g.bind_prefer_client_ciphers = true,
                    // Accepted by HAProxy in these lists; nothing to do here.
                    "no-renegotiation" | "allow-0rtt" | "no-ca-names" | "strict-sni" if bind => {}
                    _ => {
                        if version_flag(w, versions).is_none() {
                            diags.alert(line, format!("{kw}: unknown option '{w}'."));
                        }
                    }
                }
                i += 1;
            }
        }
        _ if val.is_empty()
            && !kw.starts_with("tune.ssl.force")
            && !kw.starts_with("tune.ssl.capture")
            && kw != "tune.ssl.keylog"
            && kw != "maxsslconn" =>
        {
            missing(diags)
        }
        "ssl-default-bind-ciphers" => g.bind_ciphers = Some(val.into()),
        "ssl-default-bind-ciphersuites" => g.bind_ciphersuites = Some(val.into()),
        "ssl-default-bind-curves" => g.bind_curves = Some(val.into()),
        "ssl-default-server-ciphers" => g.server_ciphers = Some(val.into()),
        "ssl-default-server-ciphersuites" => g.server_ciphersuites = Some(val.into()),
        "ssl-default-server-curves" => g.server_curves = Some(val.into()),
        "ssl-server-verify" => match val {
            "none" => g.server_verify = Verify::None,
            "required" => g.server_verify = Verify::Required,
            _ => diags.alert(
                line,
                format!("global statement '{kw}' expects 'none' or 'required' as argument."),
            ),
        },
        "crt-base" => g.crt_base = Some(val.into()),
        "ca-base" => g.ca_base = Some(val.into()),
        "tune.ssl.default-dh-param" => match val.parse::<u32>() {
            Ok(n) if n >= 1024 => g.dh_param = Some(n),
            _ => diags.alert(line, format!("'{kw}' expects an integer argument >= 1024.")),
        },
        "tune.ssl.cachesize" | "tune.ssl.maxrecord" => match val.parse::<u32>() {
            Ok(n) if kw == "tune.ssl.cachesize" => g.cache_size = n,
            Ok(n) => g.max_record = n,
            Err(_) => diags.alert(line, format!("'{kw}' expects an integer argument.")),
        },
        "tune.ssl.lifetime" => match crate::duration::read_time(val) {
            Ok(t) => g.lifetime = t.value,
            Err(_) => diags.alert(line, format!("'{kw}' expects a timeout in seconds.")),
        },
        "tune.ssl.keylog" if crate::args::no_extra(line, 2, kw, diags) => match val {
            "on" => g.keylog = true,
            "off" => g.keylog = false,
            _ => diags.alert(line, format!("'{kw}' expects either 'on' or 'off' but got '{val}'.")),
        },
        "tune.ssl.keylog" => {}
        "tune.ssl.capture-buffer-size" | "tune.ssl.capture-cipherlist-size" => {
            capture_size(kw, line, g, diags)
        }
        "maxsslconn" => {
            if let Some(n) = global_int(kw, line, diags) {
                g.max_conns = n;
            }
        }
        // Accepted, with nothing to tune in this implementation.
        _ => {}
    }
}

/// `tune.ssl.capture-buffer-size <n>` (and its 2.6 alias) as HAProxy 2.6 reads it: `atoi`, once.
fn capture_size(kw: &str, line: &Line, g: &mut GlobalTls, diags: &mut Diags) {
    if kw == "tune.ssl.capture-cipherlist-size" {
        diags.warning(
            line,
            format!("'{kw}' is deprecated and will be removed in version 2.7. Please use 'tune.ssl.capture-buffer-size' instead."),
        );
    }
    let Some(n) = global_int(kw, line, diags) else { return };
    if g.capture_size.is_some() {
        return diags.alert(line, format!("'{kw}' is already configured."));
    }
    g.capture_size = Some(n);
}

/// HAProxy 2.6's `ssl_parse_global_int`: one argument read by `atoi`, not negative.
fn global_int(kw: &str, line: &Line, diags: &mut Diags) -> Option<u32> {
    if !crate::args::no_extra(line, 2, kw, diags) {
        return None;
    }
    let val = line.arg(1);
    if val.is_empty() {
        diags.alert(line, format!("'{kw}' expects an integer argument."));
        return None;
    }
    let n = crate::args::atol(val) as i32;
    if n < 0 {
        diags.alert(line, format!("'{kw}' expects a positive numeric value."));
        return None;
    }
    Some(n as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_allowed_follow_min_max_and_no_flags() {
        let v = TlsVersions::default();
        assert_eq!(
            v.allowed(&TlsVersions::default(), TlsVersion::Tls12),
            vec![TlsVersion::Tls12, TlsVersion::Tls13]
        );
        let mut inherited = TlsVersions::default();
        inherited.disable(TlsVersion::Tls12);
        assert_eq!(v.allowed(&inherited, TlsVersion::Tls12), vec![TlsVersion::Tls13]);
        let mut own = TlsVersions { min: Some(TlsVersion::Tls12), ..Default::default() };
        assert_eq!(
            own.allowed(&inherited, TlsVersion::Tls12),
            vec![TlsVersion::Tls12, TlsVersion::Tls13],
            "an explicit ssl-min-ver on the line overrides inherited no-* flags"
        );
        own.force = Some(TlsVersion::Tls13);
        assert_eq!(own.allowed(&inherited, TlsVersion::Tls12), vec![TlsVersion::Tls13]);
    }

    #[test]
    fn bind_options_fill_the_settings() {
        let mut t = BindTls::default();
        for (o, v) in [
            ("ssl", ""),
            ("crt", "/a.pem"),
            ("crt-list", "/l.txt"),
            ("alpn", "h2,http/1.1"),
            ("no-tlsv12", ""),
            ("verify", "optional"),
            ("strict-sni", ""),
        ] {
            assert_eq!(bind_option(o, v, &mut t), Some(Ok(())), "{o}");
        }
        assert!(t.ssl && t.strict_sni);
        assert_eq!(
            t.certs,
            vec![CertSource::Crt("/a.pem".into()), CertSource::CrtList("/l.txt".into())]
        );
        assert_eq!(t.alpn, Some(vec!["h2".into(), "http/1.1".into()]));
        assert_eq!(t.verify, Some(Verify::Optional));
        assert_eq!(t.versions.disabled, 1 << TlsVersion::Tls12 as u8);
        assert!(bind_option("verify", "sometimes", &mut t).is_some_and(|r| r.is_err()));
        assert!(bind_option("ssl-min-ver", "TLSv9", &mut t).is_some_and(|r| r.is_err()));
        assert_eq!(bind_option("backlog", "10", &mut t), None);
    }

    #[test]
    fn server_options_take_their_words() {
        let (mut t, mut p) = (ServerTls::default(), SendProxy::default());
        assert_eq!(server_option("ssl", "verify", &mut t, &mut p), Some(Ok(1)));
        assert_eq!(server_option("verify", "none", &mut t, &mut p), Some(Ok(2)));
        assert_eq!(server_option("sni", "req.hdr(host)", &mut t, &mut p), Some(Ok(2)));
        assert_eq!(server_option("send-proxy-v2-ssl-cn", "", &mut t, &mut p), Some(Ok(1)));
        assert!(t.ssl && p.ssl_cn && p.version == 2);
        assert_eq!(t.sni.as_deref(), Some("req.hdr(host)"));
        assert!(
            server_option("proxy-v2-options", "bogus", &mut t, &mut p).is_some_and(|r| r.is_err())
        );
        assert_eq!(server_option("no-send-proxy", "", &mut t, &mut p), Some(Ok(1)));
        assert_eq!(p, SendProxy::default());
        assert_eq!(server_option("weight", "1", &mut t, &mut p), None);
    }
}
