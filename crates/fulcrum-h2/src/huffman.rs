//! HPACK's Huffman code (RFC 7541 5.2, Appendix B): decoding a string literal, and encoding
//! one (Fulcrum's encoder sends literals as they are, as HAProxy's does; the encoder serves
//! the tests and the fuzz targets, and whoever wants shorter blocks later).
//!
//! The decoder reads the next 12 bits and looks them up in a table that gives the one or two
//! whole codes they start with (most letters and digits have codes of 5 to 7 bits, so one
//! lookup usually decodes two symbols); a code longer than 12 bits is found from the code's
//! canonical order (codes of one length are consecutive numbers, in symbol order, after the
//! shorter ones), checked by this module's tests. A string ends with at most 7 bits of padding, all ones (the EOS
//! code's first bits); the EOS symbol itself in a string, or any other padding, is an error.
//!
//! Owns: the code and its two directions. Must not touch: anything else.

/// Each symbol's code (RFC 7541 Appendix B), symbols 0 to 255 then EOS (256), right-aligned.
pub const CODES: [u32; 257] = [
    0x1ff8, 0x7fffd8, 0xfffffe2, 0xfffffe3, 0xfffffe4, 0xfffffe5, 0xfffffe6, 0xfffffe7, 0xfffffe8,
    0xffffea, 0x3ffffffc, 0xfffffe9, 0xfffffea, 0x3ffffffd, 0xfffffeb, 0xfffffec, 0xfffffed,
    0xfffffee, 0xfffffef, 0xffffff0, 0xffffff1, 0xffffff2, 0x3ffffffe, 0xffffff3, 0xffffff4,
    0xffffff5, 0xffffff6, 0xffffff7, 0xffffff8, 0xffffff9, 0xffffffa, 0xffffffb, 0x14, 0x3f8,
    0x3f9, 0xffa, 0x1ff9, 0x15, 0xf8, 0x7fa, 0x3fa, 0x3fb, 0xf9, 0x7fb, 0xfa, 0x16, 0x17, 0x18,
    0x0, 0x1, 0x2, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f, 0x5c, 0xfb, 0x7ffc, 0x20, 0xffb,
    0x3fc, 0x1ffa, 0x21, 0x5d, 0x5e, 0x5f, 0x60, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
    0x69, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f, 0x70, 0x71, 0x72, 0xfc, 0x73, 0xfd, 0x1ffb, 0x7fff0,
    0x1ffc, 0x3ffc, 0x22, 0x7ffd, 0x3, 0x23, 0x4, 0x24, 0x5, 0x25, 0x26, 0x27, 0x6, 0x74, 0x75,
    0x28, 0x29, 0x2a, 0x7, 0x2b, 0x76, 0x2c, 0x8, 0x9, 0x2d, 0x77, 0x78, 0x79, 0x7a, 0x7b, 0x7ffe,
    0x7fc, 0x3ffd, 0x1ffd, 0xffffffc, 0xfffe6, 0x3fffd2, 0xfffe7, 0xfffe8, 0x3fffd3, 0x3fffd4,
    0x3fffd5, 0x7fffd9, 0x3fffd6, 0x7fffda, 0x7fffdb, 0x7fffdc, 0x7fffdd, 0x7fffde, 0xffffeb,
    0x7fffdf, 0xffffec, 0xffffed, 0x3fffd7, 0x7fffe0, 0xffffee, 0x7fffe1, 0x7fffe2, 0x7fffe3,
    0x7fffe4, 0x1fffdc, 0x3fffd8, 0x7fffe5, 0x3fffd9, 0x7fffe6, 0x7fffe7, 0xffffef, 0x3fffda,
    0x1fffdd, 0xfffe9, 0x3fffdb, 0x3fffdc, 0x7fffe8, 0x7fffe9, 0x1fffde, 0x7fffea, 0x3fffdd,
    0x3fffde, 0xfffff0, 0x1fffdf, 0x3fffdf, 0x7fffeb, 0x7fffec, 0x1fffe0, 0x1fffe1, 0x3fffe0,
    0x1fffe2, 0x7fffed, 0x3fffe1, 0x7fffee, 0x7fffef, 0xfffea, 0x3fffe2, 0x3fffe3, 0x3fffe4,
    0x7ffff0, 0x3fffe5, 0x3fffe6, 0x7ffff1, 0x3ffffe0, 0x3ffffe1, 0xfffeb, 0x7fff1, 0x3fffe7,
    0x7ffff2, 0x3fffe8, 0x1ffffec, 0x3ffffe2, 0x3ffffe3, 0x3ffffe4, 0x7ffffde, 0x7ffffdf,
    0x3ffffe5, 0xfffff1, 0x1ffffed, 0x7fff2, 0x1fffe3, 0x3ffffe6, 0x7ffffe0, 0x7ffffe1, 0x3ffffe7,
    0x7ffffe2, 0xfffff2, 0x1fffe4, 0x1fffe5, 0x3ffffe8, 0x3ffffe9, 0xffffffd, 0x7ffffe3, 0x7ffffe4,
    0x7ffffe5, 0xfffec, 0xfffff3, 0xfffed, 0x1fffe6, 0x3fffe9, 0x1fffe7, 0x1fffe8, 0x7ffff3,
    0x3fffea, 0x3fffeb, 0x1ffffee, 0x1ffffef, 0xfffff4, 0xfffff5, 0x3ffffea, 0x7ffff4, 0x3ffffeb,
    0x7ffffe6, 0x3ffffec, 0x3ffffed, 0x7ffffe7, 0x7ffffe8, 0x7ffffe9, 0x7ffffea, 0x7ffffeb,
    0xffffffe, 0x7ffffec, 0x7ffffed, 0x7ffffee, 0x7ffffef, 0x7fffff0, 0x3ffffee, 0x3fffffff,
];
/// Each code's length in bits.
pub const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5,
    5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6,
    6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22,
    23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22,
    21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
    22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19,
    21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22,
    22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

/// The most bits a table lookup reads.
const PEEK: u32 = 12;

/// An entry of `TABLE`: the first symbol (bits 0-7), the second (8-15), how many symbols
/// (bits 16-17: 1, 2, or 0 when the code is longer than `PEEK` bits), and how many bits
/// they take together (bits 24-31).
const ONE: u32 = 1 << 16;
const TWO: u32 = 2 << 16;
const COUNT: u32 = 3 << 16;

/// For each value of the next `PEEK` bits, the one or two whole codes it starts with (see
/// `ONE`): most letters and digits have codes of 5 to 7 bits, so a lookup usually decodes
/// two symbols. 16 kB, made at compile time.
static TABLE: [u32; 1 << PEEK] = {
    let mut t = [0u32; 1 << PEEK];
    let mut a = 0;
    while a < 256 {
        let len1 = LENGTHS[a] as u32;
        if len1 <= PEEK {
            let rest = PEEK - len1;
            let base = (CODES[a] << rest) as usize;
            let mut i = 0;
            while i < 1 << rest {
                t[base + i] = (len1 << 24) | ONE | a as u32;
                i += 1;
            }
            // A second whole code right after the first.
            let mut b = 0;
            while b < 256 {
                let len2 = LENGTHS[b] as u32;
                if len2 <= rest {
                    let rest2 = rest - len2;
                    let base = ((CODES[a] << rest) | (CODES[b] << rest2)) as usize;
                    let mut i = 0;
                    while i < 1 << rest2 {
                        t[base + i] = ((len1 + len2) << 24) | TWO | ((b as u32) << 8) | a as u32;
                        i += 1;
                    }
                }
                b += 1;
            }
        }
        a += 1;
    }
    t
};

/// The canonical code's shape per length (index: length in bits): the first code of that
/// length, how many there are, and where its symbols start in `SORTED`.
struct Canonical {
    first: [u32; 31],
    count: [u32; 31],
    offset: [u16; 31],
    sorted: [u16; 257],
}

static CANON: Canonical = {
    let mut c = Canonical { first: [0; 31], count: [0; 31], offset: [0; 31], sorted: [0; 257] };
    let mut at = 0;
    let mut len = 1;
    while len <= 30 {
        c.offset[len] = at as u16;
        let mut sym = 0;
        while sym < 257 {
            if LENGTHS[sym] as usize == len {
                if c.count[len] == 0 {
                    c.first[len] = CODES[sym];
                }
                c.count[len] += 1;
                c.sorted[at] = sym as u16;
                at += 1;
            }
            sym += 1;
        }
        len += 1;
    }
    c
};

/// A Huffman-coded string that breaks RFC 7541 5.2: it holds EOS, or ends with more than 7
/// bits, or with bits that are not all ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidHuffman;

/// The symbol and code length at the start of `acc` (left-aligned bits) for a code longer
/// than the table's reach.
#[inline(never)]
fn long_code(acc: u64) -> (u16, u32) {
    let mut len = PEEK + 1;
    while len <= 30 {
        let code = (acc >> (64 - len)) as u32;
        let l = len as usize;
        if code.wrapping_sub(CANON.first[l]) < CANON.count[l] {
            return (
                CANON.sorted[CANON.offset[l] as usize + (code - CANON.first[l]) as usize],
                len,
            );
        }
        len += 1;
    }
    // Unreachable for a complete code (its lengths' Kraft sum is 1, as a test checks).
    (256, 30)
}

/// Decodes `src` and appends the symbols to `out`: how many were appended.
pub fn decode_append(src: &[u8], out: &mut Vec<u8>) -> Result<usize, InvalidHuffman> {
    let start = out.len();
    // The shortest code is 5 bits: at most 8/5 symbols per byte.
    out.reserve(src.len() * 8 / 5 + 1);
    // Bits not decoded yet, left-aligned; `n` of them.
    let mut acc: u64 = 0;
    let mut n: u32 = 0;
    let mut rest = src;
    loop {
        if n <= 32 {
            // Four bytes at once where there are four.
            if let Some((four, more)) = rest.split_first_chunk::<4>() {
                acc |= u64::from(u32::from_be_bytes(*four)) << (32 - n);
                n += 32;
                rest = more;
            } else {
                while n <= 56 {
                    let Some((&b, more)) = rest.split_first() else { break };
                    acc |= u64::from(b) << (56 - n);
                    n += 8;
                    rest = more;
                }
            }
        }
        if n == 0 {
            break;
        }
        let e = TABLE[(acc >> (64 - PEEK)) as usize];
        let bits = e >> 24;
        if e & COUNT != 0 && bits <= n {
            out.push(e as u8);
            if e & COUNT == TWO {
                out.push((e >> 8) as u8);
            }
            acc <<= bits;
            n -= bits;
            continue;
        }
        // A long code, or the last bits of the string.
        let (sym, len) = match e & COUNT {
            0 => long_code(acc),
            _ => ((e & 0xff) as u16, u32::from(LENGTHS[(e & 0xff) as usize])),
        };
        if len > n {
            // The input is all read (else `n` > 32): what is left must be padding.
            break;
        }
        if sym == 256 {
            out.truncate(start);
            return Err(InvalidHuffman);
        }
        out.push(sym as u8);
        acc <<= len;
        n -= len;
    }
    if n > 7 || (n > 0 && acc >> (64 - n) != (1 << n) - 1) {
        out.truncate(start);
        return Err(InvalidHuffman);
    }
    Ok(out.len() - start)
}

/// The encoded length of `src` in bytes.
pub fn encoded_len(src: &[u8]) -> usize {
    let bits: usize = src.iter().map(|&b| usize::from(LENGTHS[usize::from(b)])).sum();
    bits.div_ceil(8)
}

/// Encodes `src` and appends the code to `out`, padded with ones to a whole byte.
pub fn encode_append(src: &[u8], out: &mut Vec<u8>) {
    let mut acc: u64 = 0;
    let mut n: u32 = 0;
    out.reserve(encoded_len(src));
    for &b in src {
        let (code, len) = (u64::from(CODES[usize::from(b)]), u32::from(LENGTHS[usize::from(b)]));
        acc = (acc << len) | code;
        n += len;
        while n >= 8 {
            n -= 8;
            out.push((acc >> n) as u8);
        }
    }
    if n > 0 {
        out.push(((acc << (8 - n)) | ((1 << (8 - n)) - 1)) as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    fn decode(src: &[u8]) -> Result<Vec<u8>, InvalidHuffman> {
        let mut out = b"x".to_vec();
        decode_append(src, &mut out).map(|n| {
            assert_eq!(n + 1, out.len());
            out[1..].to_vec()
        })
    }

    #[test]
    fn the_code_is_complete_and_canonical() {
        // Kraft: a complete prefix code's lengths sum to exactly 1 (in units of 2^-30).
        let sum: u64 = LENGTHS.iter().map(|&l| 1u64 << (30 - l)).sum();
        assert_eq!(sum, 1 << 30);
        // Canonical: ordered by (length, symbol), each code is the previous plus one,
        // shifted to its length.
        let mut order: Vec<usize> = (0..257).collect();
        order.sort_by_key(|&s| (LENGTHS[s], s));
        let mut code = 0u32;
        for w in order.windows(2) {
            let (a, b) = (w[0], w[1]);
            assert_eq!(CODES[a], code, "symbol {a}");
            code = (code + 1) << (LENGTHS[b] - LENGTHS[a]);
        }
        assert_eq!(CODES[256], 0x3fff_ffff);
        assert_eq!(LENGTHS[256], 30);
    }

    #[test]
    fn rfc7541_examples() {
        // C.4.1 to C.4.3 and C.6.1: Huffman-coded strings and what they decode to.
        for (code, text) in [
            ("f1e3 c2e5 f23a 6ba0 ab90 f4ff", "www.example.com"),
            ("a8eb 1064 9cbf", "no-cache"),
            ("25a8 49e9 5ba9 7d7f", "custom-key"),
            ("25a8 49e9 5bb8 e8b4 bf", "custom-value"),
            ("6402", "302"),
            ("aec3 771a 4b", "private"),
            ("d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff", "Mon, 21 Oct 2013 20:13:21 GMT"),
            ("9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3", "https://www.example.com"),
            (
                "94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
                "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
            ),
        ] {
            assert_eq!(decode(&hex(code)), Ok(text.as_bytes().to_vec()), "{text}");
            let mut enc = Vec::new();
            encode_append(text.as_bytes(), &mut enc);
            assert_eq!(enc, hex(code), "{text}");
            assert_eq!(encoded_len(text.as_bytes()), enc.len());
        }
    }

    #[test]
    fn every_byte_and_sequence_round_trips() {
        let all: Vec<u8> = (0..=255).collect();
        for s in [&all[..], b"", b"0", b"00000000", b"\xff\xfe\x00\x01<>\\^{}|~"] {
            let mut enc = Vec::new();
            encode_append(s, &mut enc);
            assert_eq!(decode(&enc).as_deref(), Ok(s));
        }
        for b in 0..=255u8 {
            for c in [b'a', b'0', 0, 255] {
                let s = [b, c, b, b];
                let mut enc = Vec::new();
                encode_append(&s, &mut enc);
                assert_eq!(decode(&enc).as_deref(), Ok(&s[..]));
            }
        }
    }

    #[test]
    fn bad_padding_and_eos_are_refused() {
        // 'a' is 00011 (5 bits): padded with ones it is 0x1f; with zeros, refused.
        assert_eq!(decode(&[0x1f]).as_deref(), Ok(&b"a"[..]));
        assert_eq!(decode(&[0x18]), Err(InvalidHuffman));
        // A whole byte of padding (8 bits of ones) is more than 7 bits.
        assert_eq!(decode(&[0x1f, 0xff]), Err(InvalidHuffman));
        assert_eq!(decode(&[0xff]), Err(InvalidHuffman));
        // EOS (30 ones) in a string, then two bits of padding; after a symbol too, which is
        // not kept.
        assert_eq!(decode(&[0xff, 0xff, 0xff, 0xff]), Err(InvalidHuffman));
        let mut out = Vec::new();
        assert!(decode_append(&[0x1f, 0xff, 0xff, 0xff, 0xff], &mut out).is_err());
        assert_eq!(out, b"");
        // A failed decode leaves nothing behind.
        let mut out = b"kept".to_vec();
        assert!(decode_append(&[0x1f, 0x00], &mut out).is_err());
        assert_eq!(out, b"kept");
        assert_eq!(decode(&[]).as_deref(), Ok(&b""[..]));
    }
}
