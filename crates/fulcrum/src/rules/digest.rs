//! The `digest` and `hmac` converters' algorithms: the SHA-1, SHA-2 and SHA-3 families from
//! aws-lc-rs, MD5 written here (RFC 1321: OpenSSL knows it, aws-lc-rs does not offer it), and
//! HMAC (RFC 2104) over any of them.
//!
//! Must not touch: samples, variables (the converters hand bytes in and take bytes out).

use aws_lc_rs::digest as d;
use fulcrum_config::DigestAlg;

/// The digest of `data`.
pub fn digest(alg: DigestAlg, data: &[u8]) -> Vec<u8> {
    match aws(alg) {
        Some(a) => d::digest(a, data).as_ref().to_vec(),
        None => md5(&[data]).to_vec(),
    }
}

/// HMAC of `data` under `key`.
pub fn hmac(alg: DigestAlg, key: &[u8], data: &[u8]) -> Vec<u8> {
    let block = aws(alg).map_or(64, d::Algorithm::block_len);
    let mut k = if key.len() > block { digest(alg, key) } else { key.to_vec() };
    k.resize(block, 0);
    let pad = |x: u8| k.iter().map(|b| b ^ x).collect::<Vec<u8>>();
    let (ipad, opad) = (pad(0x36), pad(0x5c));
    let inner = hash_parts(alg, &[&ipad, data]);
    hash_parts(alg, &[&opad, &inner])
}

fn hash_parts(alg: DigestAlg, parts: &[&[u8]]) -> Vec<u8> {
    match aws(alg) {
        Some(a) => {
            let mut c = d::Context::new(a);
            for p in parts {
                c.update(p);
            }
            c.finish().as_ref().to_vec()
        }
        None => md5(parts).to_vec(),
    }
}

fn aws(alg: DigestAlg) -> Option<&'static d::Algorithm> {
    use DigestAlg::*;
    Some(match alg {
        Md5 => return None,
        Sha1 => &d::SHA1_FOR_LEGACY_USE_ONLY,
        Sha224 => &d::SHA224,
        Sha256 => &d::SHA256,
        Sha384 => &d::SHA384,
        Sha512 => &d::SHA512,
        Sha512_256 => &d::SHA512_256,
        Sha3_256 => &d::SHA3_256,
        Sha3_384 => &d::SHA3_384,
        Sha3_512 => &d::SHA3_512,
    })
}

/// MD5 of the concatenated `parts` (RFC 1321).
fn md5(parts: &[&[u8]]) -> [u8; 16] {
    const S: [u32; 64] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5,
        9, 14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10,
        15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ];
    let k: [u32; 64] =
        std::array::from_fn(|i| ((i as f64 + 1.0).sin().abs() * 4_294_967_296.0) as u32);
    let mut msg: Vec<u8> = parts.concat();
    let bits = (msg.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bits.to_le_bytes());
    let mut h: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];
    for chunk in msg.chunks_exact(64) {
        let m: [u32; 16] = std::array::from_fn(|i| {
            u32::from_le_bytes(chunk[i * 4..i * 4 + 4].try_into().unwrap_or_default())
        });
        let [mut a, mut b, mut c, mut dd] = h;
        for i in 0..64 {
            let (f, g) = match i / 16 {
                0 => ((b & c) | (!b & dd), i),
                1 => ((dd & b) | (!dd & c), (5 * i + 1) % 16),
                2 => (b ^ c ^ dd, (3 * i + 5) % 16),
                _ => (c ^ (b | !dd), (7 * i) % 16),
            };
            let t = dd;
            dd = c;
            c = b;
            let sum = a.wrapping_add(f).wrapping_add(k[i]).wrapping_add(m[g]);
            b = b.wrapping_add(sum.rotate_left(S[i]));
            a = t;
        }
        for (x, y) in h.iter_mut().zip([a, b, c, dd]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 16];
    for (i, w) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn digests_and_hmacs_match_the_reference_vectors() {
        assert_eq!(hex(&digest(DigestAlg::Md5, b"")), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(
            hex(&digest(DigestAlg::Md5, b"The quick brown fox jumps over the lazy dog")),
            "9e107d9d372bb6826bd81d3542a419d6"
        );
        // RFC 2202 (HMAC-MD5 test 2) and RFC 4231 (HMAC-SHA-256 test 2).
        assert_eq!(
            hex(&hmac(DigestAlg::Md5, b"Jefe", b"what do ya want for nothing?")),
            "750c783e6ab0b503eaa86e310a5db738"
        );
        assert_eq!(
            hex(&hmac(DigestAlg::Sha256, b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let long = vec![0xaa; 131];
        // RFC 4231 test 6: a key longer than the block.
        assert_eq!(
            hex(&hmac(
                DigestAlg::Sha256,
                &long,
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }
}
