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
