//! HAProxy's hash functions (`src/hash.c`), its avalanche (`full_hash`) and the `source` fold.

use crate::HashFunction;

/// Hashes `bytes` as HAProxy's `gen_hash()`: the `hash-type` function, then `full_hash` when
/// the `avalanche` modifier is set.
pub fn hash_key(function: HashFunction, avalanche: bool, bytes: &[u8]) -> u32 {
    let h = match function {
        HashFunction::Sdbm => hash_sdbm(bytes),
        HashFunction::Djb2 => hash_djb2(bytes),
        HashFunction::Wt6 => hash_wt6(bytes),
        HashFunction::Crc32 => hash_crc32(bytes),
    };
    if avalanche {
        full_hash(h)
    } else {
        h
    }
}

/// `balance source`: XOR of the address's big-endian 32-bit words (trailing bytes ignored),
/// then `full_hash` when `avalanche` is set (HAProxy's `get_server_sh`, which ignores the
/// hash function).
pub fn source_hash(avalanche: bool, addr: &[u8]) -> u32 {
    let h =
        addr.chunks_exact(4).fold(0u32, |h, w| h ^ u32::from_be_bytes([w[0], w[1], w[2], w[3]]));
    if avalanche {
        full_hash(h)
    } else {
        h
    }
}

/// `sdbm`: `hash = c + (hash << 6) + (hash << 16) - hash`.
pub fn hash_sdbm(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .fold(0u32, |h, &c| u32::from(c).wrapping_add(h << 6).wrapping_add(h << 16).wrapping_sub(h))
}

/// `djb2`: `hash = hash * 33 + c`, from 5381.
pub fn hash_djb2(bytes: &[u8]) -> u32 {
    bytes.iter().fold(5381u32, |h, &c| (h << 5).wrapping_add(h).wrapping_add(u32::from(c)))
}

/// `wt6`, Willy Tarreau's 6-round hash.
pub fn hash_wt6(bytes: &[u8]) -> u32 {
    let mut h0: u32 = 0xa53c_965a;
    let mut h1: u32 = 0x5ca6_953a;
    let mut step0: u32 = 6;
    let mut step1: u32 = 18;
    for &c in bytes {
        let t = u32::from(c);
        h0 = !(h0 ^ t);
        h1 = !(h1.wrapping_add(t));
        // C's `(x << s) | (x >> (32 - s))` with s in 0..32; s == 0 is undefined in C (a shift
        // by 32) but x86 masks the count, giving `x | x` == x, which is a rotation by 0.
        let t = h1.rotate_left(step0);
        h1 = h0.rotate_left(step1);
        h0 = t;
        let t = ((h0 >> 16) ^ h1) & 0xffff;
        step0 = t & 0x1f;
        step1 = t >> 11;
    }
    h0 ^ h1
}

/// `crc32` (IEEE, reflected polynomial 0xedb88320), bitwise as in HAProxy.
pub fn hash_crc32(bytes: &[u8]) -> u32 {
    let mut h = !0u32;
    for &c in bytes {
        h ^= u32::from(c);
        for _ in 0..8 {
            h = (h >> 1) ^ if h & 1 != 0 { 0xedb8_8320 } else { 0 };
        }
    }
    !h
}

/// HAProxy's `full_hash()`: one of Bob Jenkins' full-avalanche integer hashes, then a multiply
/// by a large prime close to 3/4 of 2^32.
pub fn full_hash(a: u32) -> u32 {
    let mut a = a;
    a = a.wrapping_add(0x7ed5_5d16).wrapping_add(a << 12);
    a = (a ^ 0xc761_c23c) ^ (a >> 19);
    a = a.wrapping_add(0x1656_67b1).wrapping_add(a << 5);
    a = a.wrapping_add(0xd3a2_646c) ^ (a << 9);
    a = a.wrapping_add(0xfd70_46c5).wrapping_add(a << 3);
    a = (a ^ 0xb55a_4f09) ^ (a >> 16);
    a.wrapping_mul(3_221_225_473)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values worked out from HAProxy's C definitions in `src/hash.c` and
    // `include/haproxy/tools.h` (32-bit unsigned arithmetic, wrapping).

    #[test]
    fn sdbm_matches_haproxy() {
        assert_eq!(hash_sdbm(b""), 0);
        assert_eq!(hash_sdbm(b"a"), 97);
        // 'b' + 97 * 65599 (the multiplier behind `(h << 6) + (h << 16) - h`).
        assert_eq!(hash_sdbm(b"ab"), 98 + 97 * 65_599);
        assert_eq!(hash_sdbm(b"123456789"), 0x68a0_7035);
        assert_eq!(hash_sdbm(b"/index.html"), 0x3324_2976);
    }

    #[test]
    fn djb2_matches_haproxy() {
        assert_eq!(hash_djb2(b""), 5381);
        assert_eq!(hash_djb2(b"a"), 5381 * 33 + 97);
        assert_eq!(hash_djb2(b"123456789"), 0x35cd_bb82);
        assert_eq!(hash_djb2(b"/index.html"), 0xe114_b9cf);
    }

    #[test]
    fn wt6_matches_haproxy() {
        assert_eq!(hash_wt6(b""), 0xa53c_965a ^ 0x5ca6_953a);
        assert_eq!(hash_wt6(b"a"), 0x714b_f225);
        assert_eq!(hash_wt6(b"123456789"), 0x84a1_6c1d);
        assert_eq!(hash_wt6(b"hello world"), 0x6f46_a0aa);
    }

    #[test]
    fn crc32_matches_haproxy_and_the_standard_check_value() {
        assert_eq!(hash_crc32(b""), 0);
        assert_eq!(hash_crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(hash_crc32(b"a"), 0xe8b7_be43);
    }

    #[test]
    fn full_hash_matches_haproxy() {
        assert_eq!(full_hash(0), 0xab4e_d927);
        assert_eq!(full_hash(1), 0x3486_81b6);
        assert_eq!(full_hash(0xdead_beef), 0xfff0_eada);
    }

    #[test]
    fn hash_key_applies_the_function_then_the_avalanche() {
        assert_eq!(hash_key(HashFunction::Sdbm, false, b"/index.html"), 0x3324_2976);
        assert_eq!(hash_key(HashFunction::Sdbm, true, b"/index.html"), 0xfb63_160c);
        assert_eq!(hash_key(HashFunction::Djb2, false, b"a"), 5381 * 33 + 97);
        assert_eq!(hash_key(HashFunction::Wt6, false, b"a"), 0x714b_f225);
        assert_eq!(hash_key(HashFunction::Crc32, true, b""), full_hash(0));
    }

    #[test]
    fn source_hash_xors_big_endian_words_like_get_server_sh() {
        assert_eq!(source_hash(false, &[10, 0, 0, 1]), 0x0a00_0001);
        let v6 = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        assert_eq!(source_hash(false, &v6), 0x2001_0db8 ^ 1);
        assert_eq!(source_hash(true, &[0, 0, 0, 1]), full_hash(1));
        // Trailing bytes that do not fill a word are ignored, as in HAProxy.
        assert_eq!(source_hash(false, &[0, 0, 0, 7, 9]), 7);
    }
}
