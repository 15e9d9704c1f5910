//! `ChunkedScanner`: validates a chunked body (RFC 9112 section 7.1) as it streams by, without
//! copying or rewriting it, so the engine forwards the bytes verbatim. Owns only the framing
//! state; must not touch heads or buffers.
//!
//! Lines (chunk-size lines, trailer lines) are accepted whole: a partial line is left to the
//! caller, who calls again with it and more bytes. Chunk data is accepted as it comes.

use crate::chars::{find_lf, is_ows, is_qdtext, is_tchar, is_value};
use crate::error::ChunkError;
use crate::head::check_field_line;
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
                    if size > (i64::MAX as u64) >> 4 {
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

    /// Scans the bytes that follow those already accepted. A partial chunk-size line or
    /// trailer line is not accepted: keep it and call again with more bytes after it. Line
    /// ends may be CRLF or a bare LF (as HAProxy); a CR must be followed by LF. After an error
    /// every call returns the same error.
    pub fn scan(&mut self, input: &[u8]) -> Result<Scan, ChunkError> {
        let mut i = 0;
        loop {
            match self.state {
                State::Failed(e) => return Err(e),
                State::Done => return Ok(Scan { accepted: i, done: true }),
                State::Data(remaining) => {
                    let available = (input.len() - i) as u64;
                    if available == 0 {
                        return Ok(Scan { accepted: i, done: false });
                    }
                    let n = remaining.min(available);
                    // n <= available, which came from a usize.
                    i += n as usize;
                    self.payload += n;
                    self.state =
                        if n == remaining { State::DataEnd } else { State::Data(remaining - n) };
                }
                State::DataEnd => match input.get(i..).unwrap_or_default() {
                    [] | [b'\r'] => return Ok(Scan { accepted: i, done: false }),
                    [b'\n', ..] => {
                        i += 1;
                        self.state = State::SizeLine;
                    }
                    [b'\r', b'\n', ..] => {
                        i += 2;
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
                        return Ok(Scan { accepted: i, done: false });
                    };
                    let line = window[..j].strip_suffix(b"\r").unwrap_or(&window[..j]);
                    if sizes {
                        let size = match size_line(line, true) {
                            Ok(size) => size,
                            Err(e) => return self.fail(e),
                        };
                        if line.len() > MAX_CHUNK_LINE {
                            return self.fail(ChunkError::LineTooLong);
                        }
                        self.state = if size == 0 { State::Trailers } else { State::Data(size) };
                    } else if line.is_empty() {
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
