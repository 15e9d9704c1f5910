//! `ChunkedScanner`: validates a chunked body (RFC 9112 section 7.1) as it streams by. A body
//! already in canonical form (chunk sizes in hex without leading zeros or extensions, CRLF line
//! ends, no framing fields in the trailers) is forwarded verbatim, without a copy; any other
//! is written again in that form ([`ChunkedScanner::render`]), as HAProxy writes every chunk-size
//! line itself: what reaches the peer never depends on how it reads `000…05`, `5 `, `5;x`,
//! a bare LF, or a `Content-Length` in the trailers. Owns only the framing state; must not touch
//! heads or buffers.
//!
//! Lines (chunk-size lines, trailer lines) are accepted whole: a partial line is left to the
//! caller, who calls again with it and more bytes. Chunk data is accepted as it comes.

use crate::chars::{find_lf, is_ows, is_qdtext, is_tchar, is_value};
use crate::error::ChunkError;
use crate::head::lines::check_field_line;
use crate::HeadError;

/// Longest chunk-size line or trailer line, line end excluded.
pub const MAX_CHUNK_LINE: usize = 4096;

/// Most bytes of trailer fields in one body (HAProxy bounds them by its buffer).
pub const MAX_TRAILERS: usize = 16384;

/// What one [`ChunkedScanner::scan`] call found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scan {
    /// Bytes of the input that are valid and may be forwarded now.
    pub accepted: usize,
    /// The body (last chunk, trailers, final line end) ended within them; bytes after
    /// `accepted` belong to the next message.
    pub done: bool,
    /// The accepted bytes are in canonical form and may go as they are; otherwise forward
    /// what [`ChunkedScanner::render`] writes for them.
    pub canonical: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    SizeLine,
    Data(u64),
    DataEnd,
    Trailers,
    Done,
    Failed(ChunkError),
}

/// Validating, zero-copy chunked-body scanner. One per message; [`ChunkedScanner::reset`]
/// before the next.
#[derive(Debug, Clone)]
pub struct ChunkedScanner {
    state: State,
    payload: u64,
    trailer_bytes: usize,
}

impl Default for ChunkedScanner {
    fn default() -> Self {
        ChunkedScanner::new()
    }
}

/// States of the chunk-size line checker.
#[derive(Clone, Copy)]
enum Ext {
    Digits,
    SizeWs,
    SemiWs,
    Name,
    NameWs,
    EqWs,
    Token,
    Quoted,
    QuotedEscape,
    ValueWs,
}

/// Checks a chunk-size line (line end removed) left to right, so that a partial line fails
/// where the complete one would; returns the size when complete. Grammar: 1*HEXDIG, then, as
/// HAProxy, optional SP/HTAB, then `*( BWS ";" BWS token [ BWS "=" BWS ( token /
/// quoted-string ) ] )` (RFC 9112 7.1.1; HAProxy itself skips extensions unchecked).
fn size_line(line: &[u8], complete: bool) -> Result<u64, ChunkError> {
    const MAX_CHUNK_SIZE: u64 = 1 << 52;
    let mut size: u64 = 0;
    let mut digits = 0usize;
    let mut st = Ext::Digits;
    for &b in line {
        if b == b'\r' {
            return Err(ChunkError::BareCr);
        }
        st = match st {
            Ext::Digits => match b {
                _ if b.is_ascii_hexdigit() => {
                    let d = (b as char).to_digit(16).map_or(0, u64::from);
                    // As HAProxy: at most 2^52 - 1 (13 hex digits' worth), so that no size
                    // reaches a peer that reads integers as floats.
                    if size >= MAX_CHUNK_SIZE >> 4 {
                        return Err(ChunkError::SizeOverflow);
                    }
                    size = (size << 4) | d;
                    digits += 1;
                    Ext::Digits
                }
                _ if digits == 0 => return Err(ChunkError::BadSize),
                b' ' | b'\t' => Ext::SizeWs,
                b';' => Ext::SemiWs,
                _ => return Err(ChunkError::BadSize),
            },
            Ext::SizeWs | Ext::ValueWs | Ext::NameWs if b == b';' => Ext::SemiWs,
            Ext::SizeWs | Ext::ValueWs if is_ows(b) => st,
            Ext::SemiWs if is_ows(b) => Ext::SemiWs,
            Ext::SemiWs | Ext::Name if is_tchar(b) => Ext::Name,
            Ext::Name | Ext::NameWs if is_ows(b) => Ext::NameWs,
            Ext::Name | Ext::NameWs if b == b'=' => Ext::EqWs,
            Ext::Name if b == b';' => Ext::SemiWs,
            Ext::EqWs if is_ows(b) => Ext::EqWs,
            Ext::EqWs | Ext::Token if is_tchar(b) => Ext::Token,
            Ext::EqWs if b == b'"' => Ext::Quoted,
            Ext::Token if is_ows(b) => Ext::ValueWs,
            Ext::Token if b == b';' => Ext::SemiWs,
            Ext::Quoted if b == b'"' => Ext::ValueWs,
            Ext::Quoted if b == b'\\' => Ext::QuotedEscape,
            Ext::Quoted if is_qdtext(b) => Ext::Quoted,
            Ext::QuotedEscape if is_value(b) => Ext::Quoted,
            _ => return Err(ChunkError::BadExtension),
        };
    }
    if complete {
        match st {
            Ext::Digits if digits == 0 => return Err(ChunkError::BadSize),
            Ext::SemiWs | Ext::EqWs | Ext::Quoted | Ext::QuotedEscape => {
                return Err(ChunkError::BadExtension)
            }
            _ => {}
        }
    }
    Ok(size)
}

/// A canonical chunk-size line: hex digits only, no leading zero (but for the last chunk's).
fn canonical_size(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_hexdigit) && (line.len() == 1 || line.first() != Some(&b'0'))
}

/// A trailer field that would speak for the message's framing or target (`Content-Length`,
/// `Transfer-Encoding`, `Host`): never forwarded (RFC 9110 6.5.1).
fn framing_trailer(line: &[u8]) -> bool {
    let name = line.split(|&b| b == b':').next().unwrap_or_default();
    [&b"content-length"[..], b"transfer-encoding", b"host"]
        .iter()
        .any(|f| name.eq_ignore_ascii_case(f))
}

/// Where a scan writes what it accepted.
enum Out<'a> {
    None,
    /// The body in canonical form.
    Canonical(&'a mut Vec<u8>),
    /// The chunks' data, and the trailer lines apart.
    Data(&'a mut Vec<u8>, &'a mut Vec<u8>),
}

impl Out<'_> {
    fn data(&mut self, b: &[u8]) {
        match self {
            Out::Canonical(o) | Out::Data(o, _) => o.extend_from_slice(b),
            Out::None => {}
        }
    }

    fn trailer(&mut self, line: &[u8]) {
        match self {
            Out::Canonical(o) | Out::Data(_, o) => {
                o.extend_from_slice(line);
                o.extend_from_slice(b"\r\n");
            }
            Out::None => {}
        }
    }

    fn framing(&mut self, b: &[u8]) {
        if let Out::Canonical(o) = self {
            o.extend_from_slice(b);
        }
    }
}

/// Writes a chunk-size line in canonical form (lowercase hex, CRLF).
pub fn write_size(out: &mut Vec<u8>, size: u64) {
    let mut digits = [0u8; 16];
    let mut i = digits.len();
    let mut n = size;
    loop {
        i -= 1;
        digits[i] = b"0123456789abcdef"[(n & 0xf) as usize];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
    out.extend_from_slice(b"\r\n");
}

fn trailer_line(line: &[u8], complete: bool) -> Result<(), ChunkError> {
    match check_field_line(line, complete) {
        Ok(_) => Ok(()),
        Err(HeadError::BareCr) => Err(ChunkError::BareCr),
        Err(_) => Err(ChunkError::BadTrailer),
    }
}

impl ChunkedScanner {
    /// A scanner at the start of a body.
    pub fn new() -> Self {
        ChunkedScanner { state: State::SizeLine, payload: 0, trailer_bytes: 0 }
    }

    /// Back to the start of a body.
    pub fn reset(&mut self) {
        *self = ChunkedScanner::new();
    }

    /// Data bytes seen so far (chunk framing and trailers excluded).
    pub fn payload(&self) -> u64 {
        self.payload
    }

    /// True once the whole body was accepted.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Between chunks: what was accepted ends a chunk (or nothing was), and the next bytes
    /// start a chunk-size line. A body may then go on as data blocks instead of its framing.
    pub fn at_chunk_start(&self) -> bool {
        self.state == State::SizeLine
    }

    /// Scans the bytes that follow those already accepted. A partial chunk-size line or
    /// trailer line is not accepted: keep it and call again with more bytes after it. Line
    /// ends may be CRLF or a bare LF (as HAProxy); a CR must be followed by LF. After an error
    /// every call returns the same error.
    pub fn scan(&mut self, input: &[u8]) -> Result<Scan, ChunkError> {
        self.run(input, Out::None)
    }

    /// Writes to `out` the canonical form of `input`, which a scanner in this same state
    /// accepted (a copy of it taken before [`ChunkedScanner::scan`], given exactly the accepted
    /// bytes): chunk sizes in lowercase hex, CRLF line ends, extensions and framing trailer
    /// fields left out.
    pub fn render(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let _ = self.run(input, Out::Canonical(out));
    }

    /// Scans as [`ChunkedScanner::scan`] and appends the chunks' data (no framing) to `data`
    /// and the trailer lines (each with CRLF, framing fields left out) to `trailers`: the body
    /// as HTTP/2 carries it in DATA frames and a final HEADERS frame.
    pub fn decode(
        &mut self,
        input: &[u8],
        data: &mut Vec<u8>,
        trailers: &mut Vec<u8>,
    ) -> Result<Scan, ChunkError> {
        self.run(input, Out::Data(data, trailers))
    }

    fn run(&mut self, input: &[u8], mut out: Out<'_>) -> Result<Scan, ChunkError> {
        let mut i = 0;
        let mut canonical = true;
        loop {
            match self.state {
                State::Failed(e) => return Err(e),
                State::Done => return Ok(Scan { accepted: i, done: true, canonical }),
                State::Data(remaining) => {
                    let available = (input.len() - i) as u64;
                    if available == 0 {
                        return Ok(Scan { accepted: i, done: false, canonical });
                    }
                    let n = remaining.min(available);
                    out.data(&input[i..i + n as usize]);
                    // n <= available, which came from a usize.
                    i += n as usize;
                    self.payload += n;
                    self.state =
                        if n == remaining { State::DataEnd } else { State::Data(remaining - n) };
                }
                State::DataEnd => match input.get(i..).unwrap_or_default() {
                    [] | [b'\r'] => return Ok(Scan { accepted: i, done: false, canonical }),
                    [b'\n', ..] => {
                        i += 1;
                        canonical = false;
                        out.framing(b"\r\n");
                        self.state = State::SizeLine;
                    }
                    [b'\r', b'\n', ..] => {
                        i += 2;
                        out.framing(b"\r\n");
                        self.state = State::SizeLine;
                    }
                    [b'\r', ..] => return self.fail(ChunkError::BareCr),
                    _ => return self.fail(ChunkError::MissingCrlf),
                },
                State::SizeLine | State::Trailers => {
                    let end = input.len().min(i + MAX_CHUNK_LINE + 2);
                    let window = &input[i..end];
                    let sizes = self.state == State::SizeLine;
                    let Some(j) = find_lf(window) else {
                        let part = window.strip_suffix(b"\r").unwrap_or(window);
                        let checked = if sizes {
                            size_line(part, false).map(|_| ())
                        } else if part.is_empty() {
                            Ok(())
                        } else {
                            trailer_line(part, false)
                        };
                        if let Err(e) = checked {
                            return self.fail(e);
                        }
                        if window.len() == MAX_CHUNK_LINE + 2 {
                            return self.fail(ChunkError::LineTooLong);
                        }
                        return Ok(Scan { accepted: i, done: false, canonical });
                    };
                    let line = window[..j].strip_suffix(b"\r").unwrap_or(&window[..j]);
                    // A bare LF ends the line: not canonical.
                    canonical &= line.len() < j;
                    if sizes {
                        let size = match size_line(line, true) {
                            Ok(size) => size,
                            Err(e) => return self.fail(e),
                        };
                        if line.len() > MAX_CHUNK_LINE {
                            return self.fail(ChunkError::LineTooLong);
                        }
                        canonical &= canonical_size(line);
                        if let Out::Canonical(out) = &mut out {
                            write_size(out, size);
                        }
                        self.state = if size == 0 { State::Trailers } else { State::Data(size) };
                    } else if line.is_empty() {
                        out.framing(b"\r\n");
                        self.state = State::Done;
                    } else {
                        if let Err(e) = trailer_line(line, true) {
                            return self.fail(e);
                        }
                        if line.len() > MAX_CHUNK_LINE {
                            return self.fail(ChunkError::LineTooLong);
                        }
                        self.trailer_bytes += j + 1;
                        if self.trailer_bytes > MAX_TRAILERS {
                            return self.fail(ChunkError::TrailersTooLarge);
                        }
                        if framing_trailer(line) {
                            canonical = false;
                        } else {
                            out.trailer(line);
                        }
                    }
                    i += j + 1;
                }
            }
        }
    }

    fn fail(&mut self, e: ChunkError) -> Result<Scan, ChunkError> {
        self.state = State::Failed(e);
        Err(e)
    }
}
