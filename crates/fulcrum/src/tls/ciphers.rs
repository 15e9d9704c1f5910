//! OpenSSL's cipher, ciphersuite and curve strings (`ciphers`, `ciphersuites`, `curves`,
//! `ssl-default-*`) turned into what rustls offers, with the names of what was dropped.
//!
//! TLS 1.2 cipher strings are read as OpenSSL reads them, for the suites that exist here:
//! `:`/`,`/space-separated items, `!`/`-` remove, `+` alone moves to the end (order kept),
//! `A+B` is an intersection, aliases (`HIGH`, `ECDHE`, `kEECDH`, `aRSA`, `AESGCM`,
//! `CHACHA20`...). Anything that names only ciphers rustls does not have (DHE, RSA key
//! exchange, CBC, 3DES...) matches nothing: it is reported, not fatal.

use rustls::crypto::aws_lc_rs::{cipher_suite as cs, kx_group};
use rustls::crypto::SupportedKxGroup;
use rustls::SupportedCipherSuite;

/// The TLS 1.2 suites, OpenSSL's name, and the words that select them.
const TLS12: &[(&str, &[&str])] = &[
    ("ECDHE-ECDSA-AES256-GCM-SHA384", &["aECDSA", "ECDSA", "AES256", "AESGCM256", "SHA384"]),
    ("ECDHE-ECDSA-AES128-GCM-SHA256", &["aECDSA", "ECDSA", "AES128", "AESGCM128", "SHA256"]),
    ("ECDHE-ECDSA-CHACHA20-POLY1305", &["aECDSA", "ECDSA", "CHACHA20", "CHACHA20-POLY1305"]),
    ("ECDHE-RSA-AES256-GCM-SHA384", &["aRSA", "RSA", "AES256", "AESGCM256", "SHA384"]),
    ("ECDHE-RSA-AES128-GCM-SHA256", &["aRSA", "RSA", "AES128", "AESGCM128", "SHA256"]),
    ("ECDHE-RSA-CHACHA20-POLY1305", &["aRSA", "RSA", "CHACHA20", "CHACHA20-POLY1305"]),
];

/// Words every TLS 1.2 suite here answers to.
const COMMON: &[&str] = &[
    "ALL",
    "DEFAULT",
    "HIGH",
    "ECDHE",
    "EECDH",
    "kEECDH",
    "kECDHE",
    "ECDH",
    "AEAD",
    "TLSv1.2",
    "SECURE",
    "SUITEB128",
    "FIPS",
];

fn suite12(name: &str) -> Option<SupportedCipherSuite> {
    Some(match name {
        "ECDHE-ECDSA-AES256-GCM-SHA384" => cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        "ECDHE-ECDSA-AES128-GCM-SHA256" => cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        "ECDHE-ECDSA-CHACHA20-POLY1305" => cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        "ECDHE-RSA-AES256-GCM-SHA384" => cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        "ECDHE-RSA-AES128-GCM-SHA256" => cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        "ECDHE-RSA-CHACHA20-POLY1305" => cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        _ => return None,
    })
}

fn matches(word: &str, (name, tags): (&str, &[&str])) -> bool {
    let aes_family = matches!(word, "AES" | "AESGCM") && (name.contains("AES"));
    word == name || tags.contains(&word) || COMMON.contains(&word) || aes_family
}

/// The suites a TLS 1.2 cipher string selects, and the items that selected nothing here
/// (for the warning). Items that only remove are never reported.
pub fn tls12(text: &str) -> (Vec<SupportedCipherSuite>, Vec<String>) {
    let mut chosen: Vec<&str> = Vec::new();
    let mut removed: Vec<&str> = Vec::new();
    let mut unmatched = Vec::new();
    for item in text.split([':', ',', ' ']).filter(|s| !s.is_empty()) {
        let (op, body) = match item.as_bytes()[0] {
            b'!' | b'-' | b'+' => (item.as_bytes()[0], &item[1..]),
            _ => (0, item),
        };
        if body.starts_with('@') {
            continue; // @STRENGTH, @SECLEVEL=n
        }
        let words: Vec<&str> = body.split('+').collect();
        let selected: Vec<&str> =
            TLS12.iter().filter(|s| words.iter().all(|w| matches(w, **s))).map(|s| s.0).collect();
        match op {
            b'!' => removed.extend(&selected),
            b'-' => chosen.retain(|c| !selected.contains(c)),
            b'+' => {
                // Moves the selected ones to the end, in their order.
                let moved: Vec<&str> =
                    chosen.iter().copied().filter(|c| selected.contains(c)).collect();
                chosen.retain(|c| !selected.contains(c));
                chosen.extend(moved);
            }
            _ => {
                if selected.is_empty() {
                    unmatched.push(item.to_string());
                }
                for s in selected {
                    if !chosen.contains(&s) {
                        chosen.push(s);
                    }
                }
            }
        }
    }
    chosen.retain(|c| !removed.contains(c));
    (chosen.into_iter().filter_map(suite12).collect(), unmatched)
}

/// The TLS 1.3 suites of a `ciphersuites` string, and the names that are not available.
pub fn tls13(text: &str) -> (Vec<SupportedCipherSuite>, Vec<String>) {
    let mut out = Vec::new();
    let mut unknown = Vec::new();
    for name in text.split([':', ',', ' ']).filter(|s| !s.is_empty()) {
        let s = match name {
            "TLS_AES_128_GCM_SHA256" => cs::TLS13_AES_128_GCM_SHA256,
            "TLS_AES_256_GCM_SHA384" => cs::TLS13_AES_256_GCM_SHA384,
            "TLS_CHACHA20_POLY1305_SHA256" => cs::TLS13_CHACHA20_POLY1305_SHA256,
            _ => {
                unknown.push(name.to_string());
                continue;
            }
        };
        if !out.iter().any(|o: &SupportedCipherSuite| o.suite() == s.suite()) {
            out.push(s);
        }
    }
    (out, unknown)
}

/// The key exchange groups of a `curves` string (OpenSSL's names and NIST aliases).
pub fn curves(text: &str) -> (Vec<&'static dyn SupportedKxGroup>, Vec<String>) {
    let mut out: Vec<&'static dyn SupportedKxGroup> = Vec::new();
    let mut unknown = Vec::new();
    for name in text.split([':', ',', ' ']).filter(|s| !s.is_empty()) {
        let g: &'static dyn SupportedKxGroup = match name {
            "X25519" | "x25519" => kx_group::X25519,
            "P-256" | "prime256v1" | "secp256r1" => kx_group::SECP256R1,
            "P-384" | "secp384r1" => kx_group::SECP384R1,
            "X25519MLKEM768" => kx_group::X25519MLKEM768,
            _ => {
                unknown.push(name.to_string());
                continue;
            }
        };
        if !out.iter().any(|o| o.name() == g.name()) {
            out.push(g);
        }
    }
    (out, unknown)
}

/// HAProxy 2.6's default TLS 1.2 ciphers are OpenSSL's; rustls' defaults are the secure
/// subset of them, in a server-preference order: ECDSA before RSA, AES-GCM before ChaCha20.
pub fn default_tls12() -> Vec<SupportedCipherSuite> {
    TLS12.iter().filter_map(|s| suite12(s.0)).collect()
}

pub fn default_tls13() -> Vec<SupportedCipherSuite> {
    vec![
        cs::TLS13_AES_128_GCM_SHA256,
        cs::TLS13_AES_256_GCM_SHA384,
        cs::TLS13_CHACHA20_POLY1305_SHA256,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[SupportedCipherSuite]) -> Vec<String> {
        v.iter().map(|s| format!("{:?}", s.suite())).collect()
    }

    #[test]
    fn mozilla_intermediate_string_keeps_the_ecdhe_gcm_and_chacha_suites() {
        let (s, dropped) = tls12("ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384");
        assert_eq!(s.len(), 6);
        assert_eq!(names(&s)[0], "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256");
        assert_eq!(dropped, vec!["DHE-RSA-AES128-GCM-SHA256", "DHE-RSA-AES256-GCM-SHA384"]);
    }

    #[test]
    fn aliases_intersections_and_removals() {
        let (s, dropped) = tls12("kEECDH+aRSA+AESGCM:!aNULL:!MD5");
        assert_eq!(
            names(&s),
            vec!["TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]
        );
        assert!(dropped.is_empty());
        let (s, _) = tls12("HIGH:!aECDSA:!CHACHA20");
        assert_eq!(s.len(), 2);
        let (s, dropped) = tls12("DHE-RSA-AES256-SHA:AES256-SHA");
        assert!(s.is_empty());
        assert_eq!(dropped.len(), 2);
    }

    #[test]
    fn ciphersuites_and_curves() {
        let (s, bad) = tls13("TLS_AES_128_GCM_SHA256:TLS_AES_128_CCM_SHA256");
        assert_eq!(s.len(), 1);
        assert_eq!(bad, vec!["TLS_AES_128_CCM_SHA256"]);
        let (g, bad) = curves("X25519:prime256v1:secp521r1");
        assert_eq!(g.len(), 2);
        assert_eq!(bad, vec!["secp521r1"]);
    }
}
