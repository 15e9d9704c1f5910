//! A response body's compression as it streams (HAProxy's compression filter's data side):
//! each block of data in is compressed and flushed at once (a client sees what the server
//! sent as soon as it came, compressed), the stream finished with the body's end. gzip,
//! deflate (zlib) and raw deflate through `flate2`'s raw deflate stream in a wrapper of ours,
//! whose level follows the process's load as HAProxy's does (`maxcomprate`,
//! `maxcompcpuusage`: one level down after each block while over the limit, one up while
//! under, never above `tune.comp.maxlevel`; a new level is a new raw stream after the block's
//! sync flush, which a decoder reads as one);
//! zstd and brotli (Fulcrum's own) through `zstd` and `brotli`, at their first level;
//! identity passes data as it is.
//!
//! Must not touch: heads (`analyse::compress` decides and rewrites them), framing.

use std::io::Write;

use flate2::{Compress, Compression as Level, Crc, FlushCompress, Status};
use fulcrum_config::compression::CompAlgo;

/// One response's encoder; its output collects in a buffer handed back by [`Encoder::push`].
pub struct Encoder {
    kind: Kind,
    /// Data bytes in and bytes out while compressing (HAProxy's `comp_in`/`comp_out`), and
    /// those that passed as they were (`comp_byp`: identity, or a deflate stream brought down
    /// to level 0).
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub bypassed: u64,
}

enum Kind {
    Identity(Vec<u8>),
    /// gzip, zlib or raw deflate.
    Flate(Box<Flate>),
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
    /// (Finished by taking the writer: its last bytes then wait in `last`.)
    Brotli {
        w: Option<Box<brotli::CompressorWriter<Vec<u8>>>>,
        last: Vec<u8>,
    },
}

impl Encoder {
    /// An encoder for `algo` at `level` (`tune.comp.maxlevel`, 1 to 9), deflate's window of
    /// `window` bits (`tune.zlib.windowsize`).
    pub fn new(algo: CompAlgo, level: u32, window: u8) -> Encoder {
        let n = level.clamp(1, 9);
        let level = (Level::new(n), window.clamp(9, 15));
        let out = Vec::new();
        let kind = match algo {
            CompAlgo::Identity => Kind::Identity(out),
            CompAlgo::Gzip => Flate::kind(Wrap::Gzip(Crc::new()), level),
            CompAlgo::Deflate => Flate::kind(Wrap::Zlib(Adler32::default()), level),
            CompAlgo::RawDeflate => Flate::kind(Wrap::Raw, level),
            CompAlgo::Zstd => match zstd::stream::write::Encoder::new(out, n as i32) {
                Ok(e) => Kind::Zstd(e),
                Err(_) => Kind::Identity(Vec::new()),
            },
            // Quality as the level; a 4 MB window (browsers' usual).
            CompAlgo::Brotli => Kind::Brotli {
                w: Some(Box::new(brotli::CompressorWriter::new(out, 16384, n, 22))),
                last: Vec::new(),
            },
        };
        Encoder { kind, bytes_in: 0, bytes_out: 0, bypassed: 0 }
    }

    /// Compresses `data` and flushes (`end`: finishes the stream); the bytes to send, valid
    /// until the next call, and whether they count as compressed (not bypassed).
    /// `pressed`: whether the process is over `maxcomprate` or `maxcompcpuusage` now (the
    /// next block's level goes down one, else up one).
    pub fn push(
        &mut self,
        data: &[u8],
        end: bool,
        pressed: bool,
    ) -> std::io::Result<(&[u8], bool)> {
        let (out, compressed) = Self::encode(&mut self.kind, data, end, pressed)?;
        if compressed {
            self.bytes_in += data.len() as u64;
            self.bytes_out += out.len() as u64;
        } else {
            self.bypassed += data.len() as u64;
        }
        Ok((out, compressed))
    }

    fn encode<'k>(
        kind: &'k mut Kind,
        data: &[u8],
        end: bool,
        pressed: bool,
    ) -> std::io::Result<(&'k [u8], bool)> {
        fn step<W: Write>(w: &mut W, data: &[u8], end: bool) -> std::io::Result<()> {
            w.write_all(data)?;
            if !end && !data.is_empty() {
                w.flush()?;
            }
            Ok(())
        }
        match kind {
            Kind::Identity(out) => {
                out.clear();
                out.extend_from_slice(data);
                Ok((out, false))
            }
            Kind::Flate(f) => {
                f.out.clear();
                if end || !data.is_empty() {
                    f.push(data, end)?;
                    if !end {
                        f.follow(pressed); // after the flush, as HAProxy's `deflate_flush_or_finish()`
                    }
                }
                // (As HAProxy: counted compressed by the level after the block's flush.)
                Ok((&f.out, f.level > 0))
            }
            Kind::Zstd(e) => {
                e.get_mut().clear();
                step(e, data, end)?;
                if end {
                    e.do_finish()?;
                }
                Ok((e.get_ref(), true))
            }
            Kind::Brotli { w, last } => {
                last.clear();
                if let Some(e) = w.as_mut() {
                    e.get_mut().clear();
                    step(&mut **e, data, end)?;
                    if !end {
                        last.extend_from_slice(e.get_ref());
                    }
                }
                if end {
                    if let Some(e) = w.take() {
                        *last = e.into_inner();
                    }
                }
                Ok((last, true))
            }
        }
    }
}

/// A gzip, zlib or raw deflate stream: raw deflate in the format's wrapper (written as zlib
/// writes it).
struct Flate {
    c: Compress,
    wrap: Wrap,
    /// The wrapper's head went.
    begun: bool,
    /// The first level, also the ceiling (`tune.comp.maxlevel`; the zlib and gzip heads tell
    /// it), and the level now (HAProxy's `cur_lvl`).
    first: u32,
    level: u32,
    /// The window's size in bits (the zlib head tells it).
    window: u8,
    out: Vec<u8>,
}

enum Wrap {
    Gzip(Crc),
    Zlib(Adler32),
    Raw,
}

impl Flate {
    fn kind(wrap: Wrap, (level, window): (Level, u8)) -> Kind {
        let c = Compress::new_with_window_bits(level, false, window);
        let first = level.level();
        let out = Vec::new();
        Kind::Flate(Box::new(Flate { c, wrap, begun: false, first, level: first, window, out }))
    }

    /// After a block's sync flush: one level down while `pressed`, else one up to the first;
    /// a new level goes on as a new raw stream (zlib-rs cannot change a stream's level).
    fn follow(&mut self, pressed: bool) {
        let next = match pressed {
            true => self.level.saturating_sub(1),
            false => (self.level + 1).min(self.first),
        };
        if next != self.level {
            self.c = Compress::new_with_window_bits(Level::new(next), false, self.window);
            self.level = next;
        }
    }

    fn push(&mut self, data: &[u8], end: bool) -> std::io::Result<()> {
        if !self.begun {
            self.begun = true;
            let l = self.first;
            match &self.wrap {
                // zlib's: no name, no time, the OS Unix; XFL 4 (fastest) or 2 (best).
                Wrap::Gzip(_) => {
                    let xfl = if l >= 9 {
                        2
                    } else if l < 2 {
                        4
                    } else {
                        0
                    };
                    self.out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, xfl, 3]);
                }
                Wrap::Zlib(_) => {
                    let flevel: u16 = match l {
                        0 | 1 => 0,
                        2..=5 => 1,
                        6 => 2,
                        _ => 3,
                    };
                    let head = (u16::from(self.window) - 8) << 12 | 0x0800 | flevel << 6;
                    let head = head + 31 - head % 31;
                    self.out.extend_from_slice(&head.to_be_bytes());
                }
                Wrap::Raw => {}
            }
        }
        match &mut self.wrap {
            Wrap::Gzip(crc) => crc.update(data),
            Wrap::Zlib(a) => a.update(data),
            Wrap::Raw => {}
        }
        deflate(&mut self.c, data, &mut self.out, end)?;
        if end {
            match &self.wrap {
                Wrap::Gzip(crc) => {
                    self.out.extend_from_slice(&crc.sum().to_le_bytes());
                    self.out.extend_from_slice(&crc.amount().to_le_bytes());
                }
                Wrap::Zlib(a) => self.out.extend_from_slice(&a.sum().to_be_bytes()),
                Wrap::Raw => {}
            }
        }
        Ok(())
    }
}

/// zlib's checksum (RFC 1950).
struct Adler32 {
    a: u32,
    b: u32,
}

impl Default for Adler32 {
    fn default() -> Self {
        Adler32 { a: 1, b: 0 }
    }
}

impl Adler32 {
    fn update(&mut self, data: &[u8]) {
        const MOD: u32 = 65521;
        // (5552 bytes at most between reductions: the sums cannot overflow.)
        for part in data.chunks(5552) {
            for &x in part {
                self.a += u32::from(x);
                self.b += self.a;
            }
            self.a %= MOD;
            self.b %= MOD;
        }
    }

    fn sum(&self) -> u32 {
        self.b << 16 | self.a
    }
}

/// Feeds `data` to a deflate stream and flushes it (`end`: finishes it), into `out`.
fn deflate(c: &mut Compress, mut data: &[u8], out: &mut Vec<u8>, end: bool) -> std::io::Result<()> {
    let flush = if end { FlushCompress::Finish } else { FlushCompress::Sync };
    loop {
        if out.capacity() - out.len() < 64 {
            out.reserve((data.len() / 2).max(4096));
        }
        let before = c.total_in();
        let st = c.compress_vec(data, out, flush).map_err(std::io::Error::other)?;
        data = &data[(c.total_in() - before) as usize..];
        match st {
            Status::StreamEnd => return Ok(()),
            // Done once all is in and the flush left room (it completed).
            _ if !end && data.is_empty() && out.len() < out.capacity() => return Ok(()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn run(algo: CompAlgo, pieces: &[&[u8]]) -> Vec<u8> {
        let mut e = Encoder::new(algo, 1, 15);
        let mut out = Vec::new();
        for (i, p) in pieces.iter().enumerate() {
            out.extend_from_slice(e.push(p, i + 1 == pieces.len(), false).expect("push").0);
        }
        out
    }

    #[test]
    fn each_algorithm_round_trips_and_flushes_each_block() {
        let text: &[u8] = b"<html><body>hello hello hello hello</body></html>\n";
        let pieces = [text, text, b""];
        let gz = run(CompAlgo::Gzip, &pieces);
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut back).expect("gunzip");
        assert_eq!(back, [text, text].concat());
        let z = run(CompAlgo::Deflate, &pieces);
        let mut back = Vec::new();
        flate2::read::ZlibDecoder::new(&z[..]).read_to_end(&mut back).expect("inflate");
        assert_eq!(back, [text, text].concat());
        let raw = run(CompAlgo::RawDeflate, &pieces);
        let mut back = Vec::new();
        flate2::read::DeflateDecoder::new(&raw[..]).read_to_end(&mut back).expect("inflate");
        assert_eq!(back, [text, text].concat());
        assert_eq!(run(CompAlgo::Identity, &pieces), [text, text].concat());
        let z = run(CompAlgo::Zstd, &pieces);
        assert_eq!(zstd::stream::decode_all(&z[..]).expect("unzstd"), [text, text].concat());
        let br = run(CompAlgo::Brotli, &pieces);
        let mut back = Vec::new();
        brotli::Decompressor::new(&br[..], 4096).read_to_end(&mut back).expect("unbrotli");
        assert_eq!(back, [text, text].concat());
        // A first block alone is complete data (sync flush): a reader gets it at once.
        let mut e = Encoder::new(CompAlgo::Gzip, 1, 15);
        let first = e.push(text, false, false).expect("push").0.to_vec();
        let mut d = flate2::write::GzDecoder::new(Vec::new());
        d.write_all(&first).expect("partial");
        d.flush().expect("flush");
        assert_eq!(d.get_ref(), text);
    }

    /// `maxcomprate`/`maxcompcpuusage` pressing: each block flushed under pressure brings the
    /// next one level down (to stored blocks at 0, counted as bypassed), each without it one
    /// back up; the stream decodes whole, whatever its levels.
    #[test]
    fn the_level_follows_the_pressure_block_by_block() {
        let text = b"hello hello hello hello hello hello hello ".repeat(100);
        let decode = |algo: CompAlgo, b: &[u8]| {
            let mut back = Vec::new();
            match algo {
                CompAlgo::Gzip => flate2::read::GzDecoder::new(b).read_to_end(&mut back),
                CompAlgo::Deflate => flate2::read::ZlibDecoder::new(b).read_to_end(&mut back),
                _ => flate2::read::DeflateDecoder::new(b).read_to_end(&mut back),
            }
            .expect("decodes");
            back
        };
        for algo in [CompAlgo::Gzip, CompAlgo::Deflate, CompAlgo::RawDeflate] {
            let mut e = Encoder::new(algo, 1, 15);
            let (mut out, mut sizes, mut compressed) = (Vec::new(), Vec::new(), Vec::new());
            for i in 0..6 {
                let (o, c) = e.push(&text, false, i == 1 || i == 2).expect("push");
                out.extend_from_slice(o);
                sizes.push(o.len());
                compressed.push(c);
            }
            out.extend_from_slice(e.push(b"", true, false).expect("end").0);
            assert_eq!(decode(algo, &out), text.repeat(6), "{algo:?}");
            assert_eq!(compressed, [true, false, false, true, true, true], "{algo:?}");
            assert!(sizes[2] > text.len() && sizes[3] > text.len(), "stored: {sizes:?}");
            assert!(sizes[4] < text.len() / 4, "compressed again: {sizes:?}");
            assert_eq!(e.bypassed, 2 * text.len() as u64);
            assert_eq!(e.bytes_in, 4 * text.len() as u64);
        }
        // The heads zlib writes, so clients see what HAProxy's zlib sends.
        let mut z = Encoder::new(CompAlgo::Deflate, 1, 15);
        assert_eq!(&z.push(b"x", true, false).expect("zlib").0[..2], [0x78, 0x01]);
        let mut g = Encoder::new(CompAlgo::Gzip, 1, 15);
        assert_eq!(
            &g.push(b"x", true, false).expect("gzip").0[..10],
            [31, 139, 8, 0, 0, 0, 0, 0, 4, 3]
        );
    }

    #[test]
    fn the_window_is_tune_zlib_windowsize() {
        // A text whose repeats are 8 kB apart: a 4 kB window cannot reach them.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let unit: Vec<u8> = (0..8192)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        let text = [unit.clone(), unit.clone(), unit].concat();
        let mut sizes = Vec::new();
        for window in [12, 15] {
            let mut z = Encoder::new(CompAlgo::Deflate, 9, window);
            let out = z.push(&text, true, false).expect("zlib").0.to_vec();
            // zlib's head names the window (CINFO), and the stream decodes.
            assert_eq!(out[0], (window - 8) << 4 | 8);
            assert_eq!(u16::from_be_bytes([out[0], out[1]]) % 31, 0);
            let mut back = Vec::new();
            flate2::read::ZlibDecoder::new(&out[..]).read_to_end(&mut back).expect("decodes");
            assert_eq!(back, text);
            sizes.push(out.len());
        }
        assert!(sizes[0] > 2 * sizes[1], "a smaller window finds fewer repeats: {sizes:?}");
    }
}
