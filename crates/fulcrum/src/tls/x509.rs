//! The certificate fields Fulcrum needs, read with `x509-parser`: names for SNI selection,
//! expiry for start-up warnings, and what `ssl_c_*`/`ssl_f_*` fetches return, in HAProxy's
//! formats (DNs as `/C=FR/O=Example/CN=name`, times as the certificate's `YYMMDDhhmmssZ`).

use x509_parser::prelude::*;

/// What one certificate says.
pub struct Info {
    pub subject: String,
    pub issuer: String,
    pub serial: Vec<u8>,
    pub not_after: i64,
    pub not_after_text: Option<String>,
    pub not_before_text: Option<String>,
    pub version: u32,
    pub sig_alg: String,
    pub key_alg: String,
    cn: Option<String>,
    sans: Vec<String>,
}

/// OpenSSL's short names for the attributes seen in DNs.
fn short_name(oid: &str) -> &str {
    match oid {
        "2.5.4.3" => "CN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.5" => "serialNumber",
        "2.5.4.4" => "SN",
        "2.5.4.42" => "GN",
        "2.5.4.12" => "title",
        "1.2.840.113549.1.9.1" => "emailAddress",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        other => other,
    }
}

fn dn(name: &X509Name<'_>) -> String {
    let mut s = String::new();
    for attr in name.iter_attributes() {
        let oid = attr.attr_type().to_id_string();
        s.push('/');
        s.push_str(short_name(&oid));
        s.push('=');
        s.push_str(attr.as_str().unwrap_or(""));
    }
    s
}

/// `ssl_c_notafter`'s text: `YYMMDDhhmmssZ`, as HAProxy prints certificate times (the
/// two-digit year of UTCTime, or GeneralizedTime without its century). HAProxy gives no value
/// outside 2000-2099; neither does this.
pub fn asn1_time(secs: i64) -> Option<String> {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(u64::try_from(secs).ok()?);
    let g = crate::log::dates::gmt(t);
    let (y, m, d) = (i64::from(g.year), g.month + 1, g.day);
    let (h, mi, s) = (g.hour, g.min, g.sec);
    (2000..2100).contains(&y).then(|| format!("{:02}{m:02}{d:02}{h:02}{mi:02}{s:02}Z", y % 100))
}

fn sig_name(oid: &str) -> String {
    match oid {
        "1.2.840.113549.1.1.11" => "RSA-SHA256",
        "1.2.840.113549.1.1.12" => "RSA-SHA384",
        "1.2.840.113549.1.1.13" => "RSA-SHA512",
        "1.2.840.113549.1.1.5" => "RSA-SHA1",
        "1.2.840.113549.1.1.10" => "RSASSA-PSS",
        "1.2.840.10045.4.3.2" => "ecdsa-with-SHA256",
        "1.2.840.10045.4.3.3" => "ecdsa-with-SHA384",
        "1.2.840.10045.4.3.4" => "ecdsa-with-SHA512",
        "1.3.101.112" => "ED25519",
        other => other,
    }
    .to_string()
}

fn key_name(oid: &str) -> String {
    match oid {
        "1.2.840.113549.1.1.1" => "rsaEncryption",
        "1.2.840.10045.2.1" => "id-ecPublicKey",
        "1.3.101.112" => "ED25519",
        other => other,
    }
    .to_string()
}

impl Info {
    pub fn parse(der: &[u8]) -> Option<Info> {
        let (_, cert) = X509Certificate::from_der(der).ok()?;
        let v = cert.validity();
        let sans = match cert.subject_alternative_name() {
            Ok(Some(ext)) => ext
                .value
                .general_names
                .iter()
                .filter_map(|g| match g {
                    GeneralName::DNSName(n) => Some(n.to_ascii_lowercase()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        let cn = cert
            .subject()
            .iter_common_name()
            .next()
            .and_then(|a| a.as_str().ok())
            .map(str::to_ascii_lowercase);
        Some(Info {
            subject: dn(cert.subject()),
            issuer: dn(cert.issuer()),
            serial: cert.raw_serial().to_vec(),
            not_after: v.not_after.timestamp(),
            not_after_text: asn1_time(v.not_after.timestamp()),
            not_before_text: asn1_time(v.not_before.timestamp()),
            version: cert.version().0 + 1,
            sig_alg: sig_name(&cert.signature_algorithm.algorithm.to_id_string()),
            key_alg: key_name(&cert.public_key().algorithm.algorithm.to_id_string()),
            cn,
            sans,
        })
    }

    /// The names a certificate serves: its SAN DNS names, and its CN (HAProxy adds both).
    pub fn dns_names(&self) -> Vec<String> {
        let mut v = self.sans.clone();
        if let Some(cn) = &self.cn {
            if !v.contains(cn) && !cn.contains(' ') {
                v.push(cn.clone());
            }
        }
        v
    }

    /// One field of a DN (`ssl_c_s_dn(CN)`), the `occ`-th occurrence (1 = first, -1 = last).
    pub fn dn_field(dn: &str, field: &str, occ: i32) -> Option<String> {
        let values: Vec<&str> = dn
            .split('/')
            .filter_map(|p| p.split_once('='))
            .filter(|(k, _)| *k == field)
            .map(|(_, v)| v)
            .collect();
        let idx = match occ {
            0 | 1 => 0,
            n if n > 0 => n as usize - 1,
            n => values.len().checked_sub(n.unsigned_abs() as usize)?,
        };
        values.get(idx).map(|s| s.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asn1_times_read_as_in_certificates() {
        assert_eq!(asn1_time(0), None, "1970: HAProxy gives no value before 2000");
        assert_eq!(asn1_time(1_700_000_000).as_deref(), Some("231114221320Z"));
        assert_eq!(asn1_time(2_556_143_999).as_deref(), Some("501231235959Z"));
        assert_eq!(asn1_time(4_102_444_800), None, "2100");
    }

    #[test]
    fn dn_fields_by_occurrence() {
        let dn = "/C=FR/OU=a/OU=b/CN=x";
        assert_eq!(Info::dn_field(dn, "OU", 1).as_deref(), Some("a"));
        assert_eq!(Info::dn_field(dn, "OU", -1).as_deref(), Some("b"));
        assert_eq!(Info::dn_field(dn, "OU", 3), None);
        assert_eq!(Info::dn_field(dn, "CN", 0).as_deref(), Some("x"));
    }
}
