//! A response body's compression as it streams (HAProxy's compression filter's data side):
//! each block of data in is compressed and flushed at once (a client sees what the server
//! sent as soon as it came, compressed), the stream finished with the body's end. gzip,
//! deflate (zlib) and raw deflate through `flate2`; zstd and brotli (Fulcrum's own) through
//! `zstd` and `brotli`; identity passes data as it is.
//!
//! Must not touch: heads (`analyse::compress` decides and rewrites them), framing.

use std::io::Write;

use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};
use flate2::Compression as Level;
use fulcrum_config::compression::CompAlgo;

/// One response's encoder; its output collects in a buffer handed back by [`Encoder::push`].
pub struct Encoder {
    kind: Kind,
    /// Data bytes in, bytes out (HAProxy's `comp_in`/`comp_out`, or `comp_byp` for identity).
    pub bytes_in: u64,
    pub bytes_out: u64,
}

enum Kind {
    Identity(Vec<u8>),
    Gzip(GzEncoder<Vec<u8>>),
    Zlib(ZlibEncoder<Vec<u8>>),
    Raw(DeflateEncoder<Vec<u8>>),
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
    /// (Finished by taking the writer: its last bytes then wait in `last`.)
    Brotli {
        w: Option<Box<brotli::CompressorWriter<Vec<u8>>>>,
        last: Vec<u8>,
    },
}

impl Encoder {
    /// An encoder for `algo` at `level` (`tune.comp.maxlevel`, 1 to 9).
    pub fn new(algo: CompAlgo, level: u32) -> Encoder {
        let n = level.clamp(1, 9);
        let level = Level::new(n);
        let out = Vec::new();
        let kind = match algo {
            CompAlgo::Identity => Kind::Identity(out),
            CompAlgo::Gzip => Kind::Gzip(GzEncoder::new(out, level)),
            CompAlgo::Deflate => Kind::Zlib(ZlibEncoder::new(out, level)),
            CompAlgo::RawDeflate => Kind::Raw(DeflateEncoder::new(out, level)),
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
        Encoder { kind, bytes_in: 0, bytes_out: 0 }
    }

    /// Compresses `data` and flushes (`end`: finishes the stream); the bytes to send, valid
    /// until the next call.
    pub fn push(&mut self, data: &[u8], end: bool) -> std::io::Result<&[u8]> {
        self.bytes_in += data.len() as u64;
        let out = Self::encode(&mut self.kind, data, end)?;
        self.bytes_out += out.len() as u64;
        Ok(out)
    }

    fn encode<'k>(kind: &'k mut Kind, data: &[u8], end: bool) -> std::io::Result<&'k [u8]> {
        fn step<W: Write>(w: &mut W, data: &[u8], end: bool) -> std::io::Result<()> {
            w.write_all(data)?;
            if !end && !data.is_empty() {
                w.flush()?;
            }
            Ok(())
        }
        // The writers over a `Vec` (flate2's and zstd's): cleared, fed, flushed or finished.
        macro_rules! stream {
            ($e:expr, $finish:ident) => {{
                $e.get_mut().clear();
                step($e, data, end)?;
                if end {
                    $e.$finish()?;
                }
                Ok($e.get_ref())
            }};
        }
        match kind {
            Kind::Identity(out) => {
                out.clear();
                out.extend_from_slice(data);
                Ok(out)
            }
            Kind::Gzip(e) => stream!(e, try_finish),
            Kind::Zlib(e) => stream!(e, try_finish),
            Kind::Raw(e) => stream!(e, try_finish),
            Kind::Zstd(e) => stream!(e, do_finish),
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
                Ok(last)
            }
        }
    }

    /// Whether bytes change (identity's pass as they are: HAProxy counts them as bypassed).
    pub fn compresses(&self) -> bool {
        !matches!(self.kind, Kind::Identity(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn run(algo: CompAlgo, pieces: &[&[u8]]) -> Vec<u8> {
        let mut e = Encoder::new(algo, 1);
        let mut out = Vec::new();
        for (i, p) in pieces.iter().enumerate() {
            out.extend_from_slice(e.push(p, i + 1 == pieces.len()).expect("push"));
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
        let mut e = Encoder::new(CompAlgo::Gzip, 1);
        let first = e.push(text, false).expect("push").to_vec();
        let mut d = flate2::write::GzDecoder::new(Vec::new());
        d.write_all(&first).expect("partial");
        d.flush().expect("flush");
        assert_eq!(d.get_ref(), text);
    }
}
