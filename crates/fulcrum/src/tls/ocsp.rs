//! The OCSP response stapled beside a certificate (`<file>.ocsp`), checked when it is loaded as
//! HAProxy checks it: a successful basic response with one single response, whose status is
//! known, that is valid now (5 minutes of clock skew allowed), and whose certificate id names
//! this certificate and its issuer (found in the chain, or in `<file>.issuer`). A response that
//! fails is not stapled (a warning says why); a certificate without an issuer is an error.
//!
//! The few DER structures involved (RFC 6960 §4.2.1) are read by hand: x509-parser has no OCSP
//! support and only the certificate id and the update times are needed.
//!
//! Must not touch: the handshake (rustls staples the bytes it is given).

use x509_parser::prelude::{FromDer, X509Certificate};

/// `id-pkix-ocsp-basic` (1.3.6.1.5.5.7.48.1.1), DER-encoded contents.
const BASIC: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01, 0x01];
/// OpenSSL's `OCSP_MAX_RESPONSE_TIME_SKEW`.
const SKEW: i64 = 300;

/// One DER element: its tag, its contents, and what follows it.
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        (rest[..n].iter().fold(0usize, |a, &b| a << 8 | usize::from(b)), &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The element with `tag` at the start of `input`: its contents and what follows.
fn expect(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (t, body, rest) = tlv(input)?;
    (t == tag).then_some((body, rest))
}

/// A GeneralizedTime (`YYYYMMDDHHMMSS[.f]Z`) in seconds since the epoch.
fn generalized_time(v: &[u8]) -> Option<i64> {
    let d = |r: std::ops::Range<usize>| -> Option<i64> {
        std::str::from_utf8(v.get(r)?).ok()?.parse().ok()
    };
    if v.last() != Some(&b'Z') {
        return None;
    }
    let (y, m, day) = (d(0..4)?, d(4..6)?, d(6..8)?);
    let secs = d(8..10)? * 3600 + d(10..12)? * 60 + d(12..14)?;
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some((era * 146_097 + doe - 719_468) * 86_400 + secs)
}

fn digest_of(alg_oid: &[u8]) -> Option<&'static aws_lc_rs::digest::Algorithm> {
    use aws_lc_rs::digest;
    Some(match alg_oid {
        [0x2b, 0x0e, 0x03, 0x02, 0x1a] => &digest::SHA1_FOR_LEGACY_USE_ONLY,
        [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01] => &digest::SHA256,
        [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02] => &digest::SHA384,
        [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03] => &digest::SHA512,
        _ => return None,
    })
}

fn strip_zeros(v: &[u8]) -> &[u8] {
    let n = v.iter().take_while(|&&b| b == 0).count();
    &v[n.min(v.len().saturating_sub(1))..]
}

/// Does this CertID (its contents) name `leaf` as issued by `issuer`?
fn names(cert_id: &[u8], leaf: &X509Certificate<'_>, issuer: &X509Certificate<'_>) -> bool {
    let matches = || -> Option<bool> {
        let (alg, rest) = expect(cert_id, 0x30)?;
        let (oid, _) = expect(alg, 0x06)?;
        let (name_hash, rest) = expect(rest, 0x04)?;
        let (key_hash, rest) = expect(rest, 0x04)?;
        let (serial, _) = expect(rest, 0x02)?;
        let d = digest_of(oid)?;
        let name = aws_lc_rs::digest::digest(d, leaf.issuer().as_raw());
        let key = aws_lc_rs::digest::digest(d, &issuer.public_key().subject_public_key.data);
        Some(
            name.as_ref() == name_hash
                && key.as_ref() == key_hash
                && strip_zeros(serial) == strip_zeros(leaf.raw_serial()),
        )
    };
    matches().unwrap_or(false)
}

/// Checks a DER OCSP response for `leaf` issued by `issuer` at time `now`; the error is
/// HAProxy's words for what is wrong.
pub fn check(
    der: &[u8],
    leaf: &X509Certificate<'_>,
    issuer: &X509Certificate<'_>,
    now: i64,
) -> Result<(), String> {
    let (resp, _) = expect(der, 0x30).ok_or("Unable to parse OCSP response")?;
    let (status, rest) = expect(resp, 0x0a).ok_or("Unable to parse OCSP response")?;
    if status != [0] {
        return Err("OCSP response status not successful".into());
    }
    let basic = || -> Option<&[u8]> {
        let (bytes, _) = expect(rest, 0xa0)?;
        let (seq, _) = expect(bytes, 0x30)?;
        let (oid, seq) = expect(seq, 0x06)?;
        let (basic, _) = expect(seq, 0x04)?;
        if oid != BASIC {
            return None;
        }
        let (basic, _) = expect(basic, 0x30)?;
        let (tbs, _) = expect(basic, 0x30)?;
        // version [0] (optional), responderID [1] or [2], producedAt, responses.
        let mut tbs = tbs;
        if tbs.first() == Some(&0xa0) {
            tbs = tlv(tbs)?.2;
        }
        let (_, _, tbs) = tlv(tbs).filter(|(t, ..)| matches!(t, 0xa1 | 0xa2))?;
        let (_, tbs) = expect(tbs, 0x18)?;
        Some(expect(tbs, 0x30)?.0)
    };
    let responses = basic().ok_or("Failed to get basic response from OCSP Response")?;
    let mut singles = Vec::new();
    let mut rest = responses;
    while !rest.is_empty() {
        let (single, next) =
            expect(rest, 0x30).ok_or("Failed to get basic response from OCSP Response")?;
        singles.push(single);
        rest = next;
    }
    if singles.len() > 1 {
        return Err(format!(
            "OCSP response ignored because contains multiple single responses ({})",
            singles.len()
        ));
    }
    let single = singles.first().ok_or("Failed to get OCSP single response")?;
    let parts = || -> Option<(&[u8], u8, i64, Option<i64>)> {
        let (cert_id, rest) = expect(single, 0x30)?;
        let (status, _, rest) = tlv(rest)?;
        let (this, rest) = expect(rest, 0x18)?;
        let next = match expect(rest, 0xa0) {
            Some((next, _)) => Some(generalized_time(expect(next, 0x18)?.0)?),
            None => None,
        };
        Some((cert_id, status, generalized_time(this)?, next))
    };
    let (cert_id, status, this_update, next_update) =
        parts().ok_or("Failed to get OCSP single response")?;
    // good: [0] IMPLICIT NULL, revoked: [1] constructed, unknown: [2].
    if !matches!(status, 0x80 | 0xa1) {
        return Err("OCSP single response: certificate status is unknown".into());
    }
    let next_update = next_update.ok_or("OCSP single response: missing nextupdate")?;
    if this_update > now + SKEW || next_update < now - SKEW || next_update < this_update {
        return Err("OCSP single response: no longer valid".into());
    }
    if !names(cert_id, leaf, issuer) {
        return Err(
            "OCSP single response: Certificate ID does not match certificate and issuer".into()
        );
    }
    Ok(())
}

/// The issuer of `leaf` for OCSP: `<file>.issuer` when given (it must have issued the
/// certificate), else the first certificate of the chain that did.
pub fn find_issuer<'a>(
    leaf: &X509Certificate<'_>,
    issuer_file: Option<&'a [u8]>,
    chain: &'a [rustls::pki_types::CertificateDer<'static>],
) -> Result<Option<X509Certificate<'a>>, ()> {
    let issued = |c: &X509Certificate<'_>| c.subject().as_raw() == leaf.issuer().as_raw();
    if let Some(der) = issuer_file {
        return match X509Certificate::from_der(der) {
            Ok((_, c)) if issued(&c) => Ok(Some(c)),
            _ => Err(()),
        };
    }
    Ok(chain.iter().filter_map(|d| X509Certificate::from_der(d).ok()).map(|(_, c)| c).find(issued))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generalized_times_read_as_unix_seconds() {
        assert_eq!(generalized_time(b"19700101000000Z"), Some(0));
        assert_eq!(generalized_time(b"20261126020858Z"), Some(1_795_658_938));
        assert_eq!(generalized_time(b"20000301000000Z"), Some(951_868_800));
        assert_eq!(generalized_time(b"2026112602085"), None);
    }

    #[test]
    fn der_lengths_short_and_long() {
        assert_eq!(tlv(&[0x04, 0x02, 1, 2, 9]), Some((0x04, &[1u8, 2][..], &[9u8][..])));
        let mut long = vec![0x30, 0x81, 0x80];
        long.extend([7u8; 0x80]);
        assert_eq!(tlv(&long).map(|t| t.1.len()), Some(0x80));
        assert_eq!(tlv(&[0x30, 0x05, 1]), None);
        assert_eq!(tlv(&[0x30, 0x80]), None);
    }

    fn der(tag: u8, parts: &[&[u8]]) -> Vec<u8> {
        let body = parts.concat();
        let mut out = vec![tag];
        if body.len() < 0x80 {
            out.push(body.len() as u8);
        } else {
            out.extend([0x82, (body.len() >> 8) as u8, body.len() as u8]);
        }
        out.extend(body);
        out
    }

    /// A basic response with one single response (a certificate id that names nothing).
    fn response(status: &[u8], this: &[u8], next: Option<&[u8]>) -> Vec<u8> {
        let cert_id = der(
            0x30,
            &[
                &der(0x30, &[&der(0x06, &[&[0x2b, 0x0e, 3, 2, 0x1a]])]),
                &der(0x04, &[&[0; 20]]),
                &der(0x04, &[&[0; 20]]),
                &der(0x02, &[&[1]]),
            ],
        );
        let next = next.map(|n| der(0xa0, &[&der(0x18, &[n])])).unwrap_or_default();
        let single = der(0x30, &[&cert_id, status, &der(0x18, &[this]), &next]);
        let tbs = der(
            0x30,
            &[&der(0xa2, &[&der(0x04, &[&[0; 20]])]), &der(0x18, &[this]), &der(0x30, &[&single])],
        );
        let basic = der(0x30, &[&tbs, &der(0x30, &[]), &der(0x03, &[&[0]])]);
        let bytes = der(0x30, &[&der(0x06, &[BASIC]), &der(0x04, &[&basic])]);
        der(0x30, &[&der(0x0a, &[&[0]]), &der(0xa0, &[&bytes])])
    }

    #[test]
    fn single_responses_are_checked_in_haproxys_order() {
        let mut p = rcgen::CertificateParams::new(vec!["a.test".to_string()]).expect("params");
        p.distinguished_name.push(rcgen::DnType::CommonName, "a.test");
        let key = rcgen::KeyPair::generate().expect("key");
        let a = p.self_signed(&key).expect("cert").der().to_vec();
        let (_, c) = X509Certificate::from_der(&a).expect("parse");
        let now = generalized_time(b"20261126000000Z").expect("now");
        let good = [0x80, 0x00];
        let check = |r: Vec<u8>| check(&r, &c, &c, now).err();
        let this = b"20261125000000Z";
        assert_eq!(
            check(response(&[0x82, 0x00], this, Some(b"20261201000000Z"))).as_deref(),
            Some("OCSP single response: certificate status is unknown")
        );
        assert_eq!(
            check(response(&good, this, None)).as_deref(),
            Some("OCSP single response: missing nextupdate")
        );
        assert_eq!(
            check(response(&good, this, Some(b"20261125120000Z"))).as_deref(),
            Some("OCSP single response: no longer valid")
        );
        assert_eq!(
            check(response(&good, b"20261127000000Z", Some(b"20261201000000Z"))).as_deref(),
            Some("OCSP single response: no longer valid"),
            "not valid yet"
        );
        assert_eq!(
            check(response(&good, this, Some(b"20261201000000Z"))).as_deref(),
            Some("OCSP single response: Certificate ID does not match certificate and issuer"),
            "valid, but for another certificate"
        );
    }

    #[test]
    fn responses_without_a_basic_part_are_refused_with_haproxys_words() {
        let now = 1_800_000_000;
        let self_signed = |cn: &str| {
            let mut p = rcgen::CertificateParams::new(vec![cn.to_string()]).expect("params");
            p.distinguished_name.push(rcgen::DnType::CommonName, cn);
            let key = rcgen::KeyPair::generate().expect("key");
            p.self_signed(&key).expect("cert").der().to_vec()
        };
        let (a, b) = (self_signed("a.test"), self_signed("b.test"));
        let (_, c) = X509Certificate::from_der(&a).expect("parse");
        assert_eq!(
            check(&[0x30, 0x03, 0x0a, 0x01, 0x00], &c, &c, now),
            Err("Failed to get basic response from OCSP Response".to_string())
        );
        assert_eq!(
            check(&[0x30, 0x03, 0x0a, 0x01, 0x06], &c, &c, now),
            Err("OCSP response status not successful".to_string())
        );
        assert_eq!(check(b"hello", &c, &c, now), Err("Unable to parse OCSP response".to_string()));
        // A self-signed certificate is its own issuer.
        assert!(find_issuer(&c, Some(&a), &[]).is_ok_and(|i| i.is_some()));
        assert!(find_issuer(&c, Some(&b), &[]).is_err());
    }
}
