//! Certificates for TLS termination: PEM bundles (chain and key in one file, or the key in
//! `<file>.key` as HAProxy looks for it; a DER OCSP response in `<file>.ocsp` is checked by
//! [`super::ocsp`] then stapled),
//! directories of them, `crt-list` files, and the
//! resolver that picks one per handshake: the SNI name exactly, then a wildcard, else the
//! bind's default (its first certificate) unless `strict-sni`; among the certificates of one
//! name, the first whose key the client can use (ECDSA before RSA when the client takes both).
//!
//! Everything is read once when a plan is built and shared by all workers (`Arc`).
//! Must not touch: sockets, the handshake itself.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// One certificate loaded, with the names it serves.
pub struct Loaded {
    pub key: Arc<CertifiedKey>,
    /// Lower-case DNS names (SAN dNSName entries, then the subject's CN); `*.x` wildcards.
    pub names: Vec<String>,
    /// Names excluded by `!name` filters of a crt-list line.
    pub excluded: Vec<String>,
    /// A crt-list line's own SSL options (`[alpn h2 verify required ...]`), applied over the
    /// bind line's: the handshakes for its names use them.
    pub settings: Option<Arc<fulcrum_config::BindTls>>,
}

/// `base` (crt-base / ca-base) before a relative path, as HAProxy does.
pub fn with_base(path: &str, base: Option<&str>) -> PathBuf {
    match base {
        Some(b) if !path.starts_with('/') => Path::new(b).join(path),
        _ => PathBuf::from(path),
    }
}

/// Files of a directory that are certificates (not the companions HAProxy reads beside them).
fn is_companion(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.starts_with('.')
        || [".key", ".ocsp", ".issuer", ".sctl", ".dh"].iter().any(|e| name.ends_with(e))
}

/// Loads `crt <path>`: a file, a directory of files, or HAProxy's multi-cert bundle
/// (`<path>.rsa`, `<path>.ecdsa`, `<path>.dsa` when `<path>` itself does not exist).
pub fn load_crt(path: &Path, warnings: &mut Vec<String>) -> Result<Vec<Loaded>, String> {
    if crate::files::is_dir(path) {
        let mut files = crate::files::list(path)
            .map_err(|e| format!("unable to scan directory '{}' : {e}.", path.display()))?;
        files.sort();
        let mut out = Vec::new();
        for f in files.into_iter().filter(|f| !is_companion(f)) {
            out.push(load_file(&f, warnings)?);
        }
        return Ok(out);
    }
    match load_file(path, warnings) {
        Err(e) if crate::files::read(path).is_err() => {
            let mut out = Vec::new();
            for ext in ["rsa", "ecdsa", "dsa"] {
                let p = PathBuf::from(format!("{}.{ext}", path.display()));
                if crate::files::read(&p).is_ok() {
                    out.push(load_file(&p, warnings)?);
                }
            }
            if out.is_empty() {
                return Err(e);
            }
            Ok(out)
        }
        r => r.map(|l| vec![l]),
    }
}

/// Loads one PEM bundle: certificates (leaf first), and the key from it or `<file>.key`.
pub fn load_file(path: &Path, warnings: &mut Vec<String>) -> Result<Loaded, String> {
    let shown = path.display();
    let pem = crate::files::read(path).map_err(|e| {
        format!(
            "unable to stat SSL certificate from file '{shown}' : {}.",
            crate::sys::os_words(&e)
        )
    })?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("unable to load SSL certificate from PEM file '{shown}' : {e}."))?;
    if certs.is_empty() {
        return Err(format!("unable to load SSL certificate from PEM file '{shown}'."));
    }
    let key = match PrivateKeyDer::from_pem_slice(&pem) {
        Ok(k) => k,
        Err(_) => {
            let key_path = PathBuf::from(format!("{shown}.key"));
            let text = crate::files::read(&key_path)
                .map_err(|_| format!("unable to load SSL private key from PEM file '{shown}'."))?;
            PrivateKeyDer::from_pem_slice(&text).map_err(|_| {
                format!("unable to load SSL private key from PEM file '{}'.", key_path.display())
            })?
        }
    };
    let signer = rustls::crypto::aws_lc_rs::sign::any_supported_type(&key)
        .map_err(|e| format!("unable to load SSL private key from PEM file '{shown}' : {e}."))?;
    let mut ck = CertifiedKey::new(certs, signer);
    // `<file>.ocsp`: a DER OCSP response, checked then stapled to every handshake.
    let ocsp_path = PathBuf::from(format!("{shown}.ocsp"));
    if let Ok(der) = crate::files::read(&ocsp_path) {
        ck.ocsp = ocsp_for(&ck.cert, path, &ocsp_path, der, warnings)?;
    }
    let sctl = PathBuf::from(format!("{shown}.sctl"));
    if crate::files::read(&sctl).is_ok() {
        warnings.push(format!(
            "'{}': Certificate Transparency lists are not sent yet (rustls has no support).",
            sctl.display()
        ));
    }
    // The key's public half against the certificate's (as parsed by x509-parser: rustls'
    // `keys_match` parses with webpki, which refuses the X.509 v1 certificates OpenSSL makes
    // by default and HAProxy serves).
    let leaf_spki = x509_parser::parse_x509_certificate(&ck.cert[0])
        .map(|(_, c)| c.tbs_certificate.subject_pki.raw.to_vec())
        .map_err(|_| format!("unable to parse the certificate of PEM file '{shown}'."))?;
    if ck.key.public_key().is_some_and(|k| k.as_ref() != leaf_spki.as_slice()) {
        return Err(format!(
            "inconsistencies between private key and certificate loaded from PEM file '{shown}'."
        ));
    }
    let info = super::x509::Info::parse(&ck.cert[0])
        .ok_or_else(|| format!("unable to parse the certificate of PEM file '{shown}'."))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    if info.not_after < now {
        let when = crate::log::dates::gmt(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(info.not_after.max(0) as u64),
        );
        warnings.push(format!(
            "certificate '{shown}' expired on {}-{:02}-{:02}.",
            when.year,
            when.month + 1,
            when.day
        ));
    }
    Ok(Loaded { key: Arc::new(ck), names: info.dns_names(), excluded: Vec::new(), settings: None })
}

/// The OCSP response to staple for `certs` (leaf first), if it passes HAProxy's checks (a
/// warning says why not); no issuer for the leaf is an error, as in HAProxy.
fn ocsp_for(
    certs: &[CertificateDer<'static>],
    path: &Path,
    ocsp_path: &Path,
    der: Vec<u8>,
    warnings: &mut Vec<String>,
) -> Result<Option<Vec<u8>>, String> {
    use x509_parser::prelude::{FromDer, X509Certificate};
    let shown = path.display();
    let (_, leaf) = X509Certificate::from_der(&certs[0])
        .map_err(|_| format!("unable to parse the certificate of PEM file '{shown}'."))?;
    let issuer_path = PathBuf::from(format!("{shown}.issuer"));
    let not_issuer = || {
        format!("'{}' is not the issuer of the certificate in '{shown}'.", issuer_path.display())
    };
    let issuer_der = match crate::files::read(&issuer_path) {
        Ok(pem) => Some(CertificateDer::from_pem_slice(&pem).map_err(|_| not_issuer())?),
        Err(_) => None,
    };
    let issuer = match super::ocsp::find_issuer(&leaf, issuer_der.as_deref(), &certs[1..]) {
        Ok(Some(i)) => i,
        Ok(None) => {
            return Err(format!(
                "'{}' is present and activates OCSP, but the issuer of the certificate is \
                 neither in '{shown}' nor in '{}': the OCSP certificate id cannot be computed.",
                ocsp_path.display(),
                issuer_path.display()
            ))
        }
        Err(()) => return Err(not_issuer()),
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    match super::ocsp::check(&der, &leaf, &issuer, now) {
        Ok(()) => Ok(Some(der)),
        Err(why) => {
            warnings.push(format!("'{}': {why}; not stapled.", ocsp_path.display()));
            Ok(None)
        }
    }
}

/// Loads a `crt-list` file: `<crt> [[<options>]] [[!]<sni filter>...]` per line.
pub fn load_crt_list(
    path: &Path,
    crt_base: Option<&str>,
    bind: &fulcrum_config::BindTls,
    warnings: &mut Vec<String>,
) -> Result<Vec<Loaded>, String> {
    let text = crate::files::read_string(path).map_err(|e| {
        format!("unable to open crt-list file '{}' : {}.", path.display(), crate::sys::os_words(&e))
    })?;
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = format!("crt-list file '{}' line {}", path.display(), n + 1);
        let mut rest = line;
        let crt = take_word(&mut rest);
        let mut filters = Vec::new();
        let mut settings = None;
        let rest = rest.trim_start();
        let rest = if let Some(r) = rest.strip_prefix('[') {
            let Some((opts, after)) = r.split_once(']') else {
                return Err(format!("{at} : missing ']' after the SSL options."));
            };
            if !opts.trim().is_empty() {
                settings =
                    Some(Arc::new(line_options(opts, bind).map_err(|e| format!("{at} : {e}"))?));
            }
            after
        } else {
            rest
        };
        filters.extend(rest.split_whitespace().map(str::to_ascii_lowercase));
        let loaded =
            load_crt(&with_base(crt, crt_base), warnings).map_err(|e| format!("{at} : {e}"))?;
        for mut l in loaded {
            let (neg, pos): (Vec<String>, Vec<String>) =
                filters.iter().cloned().partition(|f| f.starts_with('!'));
            if !pos.is_empty() {
                l.names = pos;
            }
            l.excluded = neg.into_iter().map(|f| f[1..].to_string()).collect();
            l.settings = settings.clone();
            out.push(l);
        }
    }
    Ok(out)
}

/// The SSL options of a crt-list line (HAProxy's `ssl_bind_conf` keywords) over the bind's.
fn line_options(
    text: &str,
    bind: &fulcrum_config::BindTls,
) -> Result<fulcrum_config::BindTls, String> {
    const ALLOWED: &[&str] = &[
        "allow-0rtt",
        "alpn",
        "ca-file",
        "ciphers",
        "ciphersuites",
        "crl-file",
        "curves",
        "ecdhe",
        "no-ca-names",
        "npn",
        "verify",
        "ssl-min-ver",
        "ssl-max-ver",
    ];
    let mut t = bind.clone();
    // Certificates come from the line itself.
    t.certs.clear();
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut i = 0;
    while i < words.len() {
        let opt = words[i];
        if !ALLOWED.contains(&opt) {
            return Err(format!("'{opt}' is not a crt-list SSL option."));
        }
        let takes = fulcrum_config::tls::BIND_WITH_VALUE.contains(&opt);
        let val = if takes { words.get(i + 1).copied().unwrap_or("") } else { "" };
        if let Some(Err(e)) = fulcrum_config::tls::bind_option(opt, val, &mut t) {
            return Err(e);
        }
        i += 1 + usize::from(takes);
    }
    Ok(t)
}

fn take_word<'a>(s: &mut &'a str) -> &'a str {
    let t = s.trim_start();
    let end = t.find(char::is_whitespace).unwrap_or(t.len());
    let (w, r) = t.split_at(end);
    *s = r;
    w
}

/// Picks a bind's certificate for each handshake.
#[derive(Debug)]
pub struct Resolver {
    exact: HashMap<String, Vec<Arc<CertifiedKey>>>,
    /// By the part after `*.`.
    wildcard: HashMap<String, Vec<Arc<CertifiedKey>>>,
    /// The first certificate of the bind (and others of its names, for ECDSA/RSA choice).
    default: Vec<Arc<CertifiedKey>>,
    strict_sni: bool,
}

impl Resolver {
    pub fn new(loaded: Vec<Loaded>, strict_sni: bool) -> Self {
        let mut exact: HashMap<String, Vec<Arc<CertifiedKey>>> = HashMap::new();
        let mut wildcard: HashMap<String, Vec<Arc<CertifiedKey>>> = HashMap::new();
        let first_names = loaded.first().map(|l| l.names.clone()).unwrap_or_default();
        let mut default = Vec::new();
        for (i, l) in loaded.iter().enumerate() {
            if i == 0 || l.names.iter().any(|n| first_names.contains(n)) {
                default.push(Arc::clone(&l.key));
            }
            for name in l.names.iter().filter(|n| !l.excluded.contains(n)) {
                let (map, key) = match name.strip_prefix("*.") {
                    Some(rest) => (&mut wildcard, rest.to_string()),
                    None => (&mut exact, name.clone()),
                };
                let list = map.entry(key).or_default();
                if !list.iter().any(|k| Arc::ptr_eq(k, &l.key)) {
                    list.push(Arc::clone(&l.key));
                }
            }
        }
        Resolver { exact, wildcard, default, strict_sni }
    }

    /// The certificates for `name` (already lower-case), if any matches.
    fn find(&self, name: &str) -> Option<&[Arc<CertifiedKey>]> {
        if let Some(l) = self.exact.get(name) {
            return Some(l);
        }
        let parent = name.split_once('.')?.1;
        self.wildcard.get(parent).map(Vec::as_slice)
    }
}

impl ResolvesServerCert for Resolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let found = hello.server_name().and_then(|n| {
            let lower = n.to_ascii_lowercase();
            self.find(lower.trim_end_matches('.'))
        });
        let list = match found {
            Some(l) => l,
            None if self.strict_sni => return None,
            None => &self.default,
        };
        let schemes = hello.signature_schemes();
        let chosen = list
            .iter()
            .find(|k| k.key.choose_scheme(schemes).is_some())
            .or_else(|| list.first())
            .cloned();
        crate::connection::tls::CHOSEN.with(|c| c.borrow_mut().chosen = chosen.clone());
        chosen
    }
}

/// Reads CA certificates (`ca-file`, `ca-verify-file`); `@system-ca` is the system's bundle.
pub fn load_cas(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let path = if path == Path::new("@system-ca") {
        Path::new("/etc/ssl/certs/ca-certificates.crt")
    } else {
        path
    };
    let pem = crate::files::read(path).map_err(|e| {
        format!("unable to load CA file '{}' : {}.", path.display(), crate::sys::os_words(&e))
    })?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("unable to load CA file '{}' : {e}.", path.display()))?;
    if certs.is_empty() {
        return Err(format!("unable to load CA file '{}' : no certificate in it.", path.display()));
    }
    Ok(certs)
}

/// Reads a `crl-file`.
pub fn load_crls(
    path: &Path,
) -> Result<Vec<rustls::pki_types::CertificateRevocationListDer<'static>>, String> {
    let pem = crate::files::read(path)
        .map_err(|e| format!("unable to load CRL file '{}' : {e}.", path.display()))?;
    rustls::pki_types::CertificateRevocationListDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("unable to load CRL file '{}' : {e}.", path.display()))
}

/// A client certificate with its key (`server ... crt`), for origination.
pub fn load_client_cert(
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let l = load_file(path, warnings)?;
    let pem = crate::files::read(path).map_err(|e| e.to_string())?;
    let key = PrivateKeyDer::from_pem_slice(&pem)
        .or_else(|_| {
            let kp = PathBuf::from(format!("{}.key", path.display()));
            let t = crate::files::read(&kp).map_err(|e| e.to_string())?;
            PrivateKeyDer::from_pem_slice(&t).map_err(|e| e.to_string())
        })
        .map_err(|e| {
            format!("unable to load SSL private key from PEM file '{}' : {e}.", path.display())
        })?;
    Ok((l.key.cert.clone(), key))
}
