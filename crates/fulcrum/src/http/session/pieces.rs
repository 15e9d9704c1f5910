//! A body moved as pieces (data blocks, trailers as fields, the end) whenever one of its two
//! sides is HTTP/2: each side's framing is taken apart or written here, by its own driver, and
//! never handed to the other side to be scanned again. Between two HTTP/2 peers DATA frames
//! go to DATA frames (a gRPC call's messages and its `grpc-status` trailers); from an HTTP/1
//! side its bytes are taken apart by their framing (a length, chunks and their trailers, or
//! until close) into pieces for the HTTP/2 stream; to an HTTP/1 side the pieces are framed as
//! its head says (as they come for a length, else as chunks, the trailers after the last).
//! Between two HTTP/1 sides a body keeps `pump`'s byte path (forwarded as it came, HAProxy's
//! fast forwarding). `pump` comes here and returns what this returns.
//!
//! Must not touch: rules, heads (each side's went before the body).

use std::task::{Context, Waker};

use super::*;
use crate::bwlim::Part;
use crate::http::h2::body::trailer_fields;
use crate::http::peer::Piece;

/// Where a body's pieces come from.
pub(super) enum Source<'a> {
    /// An HTTP/2 stream, whose body's length its head gives (`Some`: the body ends there, as
    /// its framing would end it) or its stream's end says.
    Pieces(&'a Peer, Option<u64>),
    /// An HTTP/1 side: the bytes buffered in `buf` first, then those read from `peer`, taken
    /// apart by the framing `body` gives, from where `scanner` stands in a chunked one.
    H1 { peer: &'a Peer, buf: &'a mut RecvBuf, body: Body, scanner: &'a mut ChunkedScanner },
    /// A body held in memory (a cache hit's), its pieces at most 16 KiB each.
    Memory(&'a [u8]),
}

/// What sees a body's data on its way (HAProxy's filters on the payload, in its order: the
/// cache stores what the server sent, then compression encodes it for the client).
#[derive(Default)]
pub(super) struct Filters<'a> {
    pub store: Option<&'a mut crate::cache::Writer>,
    pub enc: Option<&'a mut crate::http::encoder::Encoder>,
    /// The compression filter's place among the stream's filters (`bwlim::Part`).
    pub comp_at: u32,
    /// `maxcomprate`'s and `maxcompcpuusage`'s state: each block compressed is counted in it,
    /// and it says whether the next goes one level down or up.
    pub rate: Option<&'a crate::frontend::rate::CompRate>,
    /// The bandwidth limits of the body's direction (see `crate::bwlim`): the data goes as
    /// they let it, those before the compression filter counting the plain data.
    pub limits: Option<&'a mut [crate::bwlim::Limit]>,
    /// The stream's trace filters, which see the data as it comes (`filter trace`).
    pub trace: Option<(&'a crate::http::trace::Traces, crate::http::trace::Channel)>,
}

/// Where a body's pieces go.
pub(super) enum Sink<'a> {
    /// An HTTP/2 stream, which frames them itself.
    Pieces(&'a Peer),
    /// An HTTP/1 side: `head` (when not sent yet) leaves with the first bytes; the body goes
    /// in chunks when `chunked`, else as it comes.
    H1 { peer: &'a Peer, head: &'a [u8], chunked: bool },
}

/// The next piece a source gave, where its data lies.
enum Next {
    /// `n` bytes at the start of the HTTP/1 side's buffer (consumed once sent).
    Buffered {
        n: usize,
        end: bool,
    },
    /// The bytes in `block` (an HTTP/2 stream's DATA, or chunks' data decoded); `short`: the
    /// body ends with them before its length (they go, then the transfer fails).
    Block {
        end: bool,
        short: bool,
    },
    Trailers(fulcrum_h2::RawHead),
    End,
}

/// Moves the body `from` gives to `to`, as [`pump`] would move its bytes. `watch`, the
/// timeouts and `moved` (data bytes, no framing) as for [`pump`].
/// With `filters.store`, the data is added to a cache entry as it passes (trailers make it
/// fail); with `filters.enc`, it is compressed on its way (flushed piece by piece, finished at
/// the body's end), and `moved` counts the bytes sent.
pub(super) async fn pump(
    mut from: Source<'_>,
    to: Sink<'_>,
    (mut read_timer, read_timeout): (Pin<&mut Timer>, Option<Duration>),
    write_timeout: Option<Duration>,
    mut watch: Option<(&Peer, &mut RecvBuf)>,
    moved: &mut u64,
    filters: Filters<'_>,
) -> Xfer {
    let Filters { mut store, mut enc, comp_at, rate, mut limits, trace } = filters;
    let mut block = Vec::new();
    // A chunked source's trailer lines, and the pieces' HTTP/1 framing for a chunked sink.
    let (mut lines, mut framed) = (Vec::new(), Vec::new());
    let mut head = match &to {
        Sink::H1 { head, .. } => *head,
        Sink::Pieces(_) => &[][..],
    };
    let mut remaining = match &from {
        Source::Pieces(_, sized) => sized.unwrap_or(u64::MAX),
        Source::H1 { body: Body::Length(n), .. } => *n,
        Source::H1 { .. } | Source::Memory(_) => u64::MAX,
    };
    loop {
        let timer = (read_timer.as_mut(), read_timeout);
        let next = match &mut from {
            Source::Pieces(p, sized) => {
                // What came already is taken at once: no timer armed, no waker kept.
                let piece = match p.poll_piece(&mut Context::from_waker(Waker::noop()), &mut block)
                {
                    Poll::Ready(Ok(piece)) => piece,
                    Poll::Ready(Err(_)) => return Xfer::ReadError,
                    Poll::Pending => match wait_piece(p, &mut block, &mut watch, timer).await {
                        Ok(piece) => piece,
                        Err(x) => return x,
                    },
                };
                match h2_next(piece, *sized, &mut remaining, &mut block) {
                    Ok(next) => next,
                    Err(x) => return x,
                }
            }
            Source::H1 { peer, buf, body, scanner } => {
                let at = (&mut remaining, &mut **scanner, &mut block, &mut lines);
                // Out of line: its reads' state would make every body's transfer larger
                // (moved in as it starts), the HTTP/2 ones too.
                match cold(h1_next(peer, buf, *body, at, &mut watch, timer)).await {
                    Ok(next) => next,
                    Err(x) => return x,
                }
            }
            Source::Memory(rest) => {
                // (A buffer's worth at a time, as HAProxy's cache applet gives it: a bandwidth
                // limit lets no larger burst through.)
                let n = rest.len().min(16 * 1024);
                block.clear();
                block.extend_from_slice(&rest[..n]);
                *rest = &rest[n..];
                Next::Block { end: rest.is_empty(), short: false }
            }
        };
        let (data, end): (&[u8], bool) = match &next {
            Next::Buffered { n, end } => match &from {
                Source::H1 { buf, .. } => (&buf.data()[..*n], *end),
                Source::Pieces(..) | Source::Memory(_) => {
                    unreachable!("only an HTTP/1 side buffers")
                }
            },
            Next::Block { end, .. } => (&block, *end),
            Next::Trailers(_) | Next::End => (&[], true),
        };
        if let Some((t, ch)) = trace {
            t.payload(ch, data, end);
        }
        if let Some(w) = store.as_deref_mut() {
            match next {
                Next::Trailers(_) => w.fail(),
                _ => w.push(data),
            }
            if end {
                w.finish();
            }
        }
        let trailers = match &next {
            Next::Trailers(t) => Some(t),
            _ => None,
        };
        let mut out = Out { to: &to, head: &mut head, framed: &mut framed, write_timeout, moved };
        let sent = match (enc.as_deref_mut(), limits.as_deref_mut()) {
            (None, limits) => out.send(data, trailers, end, limits, Part::All).await,
            (Some(e), None) => match compress(e, rate, data, end) {
                Ok(data) => out.send(data, trailers, end, None, Part::All).await,
                Err(_) => Err(Xfer::WriteError),
            },
            (Some(e), Some(limits)) => {
                cold(out.encode_limited((e, rate, comp_at), data, trailers, end, limits)).await
            }
        };
        if let Err(x) = sent {
            return x;
        }
        if let (Next::Buffered { n, .. }, Source::H1 { buf, .. }) = (&next, &mut from) {
            buf.consume(*n);
        }
        if let Next::Block { short: true, .. } = next {
            return Xfer::ReadEof;
        }
        if end {
            return Xfer::Done;
        }
    }
}

impl Filters<'_> {
    /// Nothing sees the body.
    pub fn is_empty(&self) -> bool {
        self.store.is_none() && self.enc.is_none() && self.limits.is_none() && self.trace.is_none()
    }
}

/// One block through the encoder, at the level the process's load allows, counted in the
/// compression rates when it was compressed.
fn compress<'e>(
    e: &'e mut crate::http::encoder::Encoder,
    rate: Option<&crate::frontend::rate::CompRate>,
    data: &[u8],
    end: bool,
) -> std::io::Result<&'e [u8]> {
    let now = crate::clock::now().into_std();
    let pressed = rate.is_some_and(|r| r.pressed(now));
    let (out, compressed) = e.push(data, end, pressed)?;
    if let Some(r) = rate.filter(|_| compressed) {
        r.count(now, data.len() as u64, out.len() as u64);
    }
    Ok(out)
}

/// Where a body's pieces are written, and how (see [`Out::send`]).
struct Out<'o, 'p> {
    to: &'o Sink<'p>,
    /// The head still to go with the first bytes (an HTTP/1 sink's), emptied once it went.
    head: &'o mut &'p [u8],
    /// Room for a chunked sink's framing.
    framed: &'o mut Vec<u8>,
    write_timeout: Option<Duration>,
    /// Data bytes sent, counted part by part (a transfer that fails counts what went).
    moved: &'o mut u64,
}

impl Out<'_, '_> {
    /// Sends `data` (then `trailers`, and the end with `end`) as the sink frames it, in parts
    /// as the bandwidth limits of `part` let them go.
    async fn send(
        &mut self,
        data: &[u8],
        trailers: Option<&fulcrum_h2::RawHead>,
        end: bool,
        mut limits: Option<&mut [crate::bwlim::Limit]>,
        part: Part,
    ) -> Result<(), Xfer> {
        if limits.is_some() && !self.head.is_empty() && !data.is_empty() {
            // The head goes at once: limits count payload only (it would wait with the first
            // bytes otherwise).
            self.write(&[], None, false).await?;
        }
        let mut rest = data;
        loop {
            let n = match limits.as_deref_mut() {
                Some(l) if !rest.is_empty() => crate::bwlim::take(l, part, rest.len(), end).await,
                _ => rest.len(),
            };
            let (now, later) = rest.split_at(n);
            let last = later.is_empty();
            let trailers = if last { trailers } else { None };
            self.write(now, trailers, end && last).await?;
            *self.moved += now.len() as u64;
            if let Some(l) = limits.as_deref_mut() {
                crate::bwlim::passed(l, part, n);
            }
            rest = later;
            if last {
                return Ok(());
            }
        }
    }

    /// Compresses `data` in parts as the limits before the compression filter let them go,
    /// each part's output sent as those after it let it go.
    async fn encode_limited(
        &mut self,
        (e, rate, at): (
            &mut crate::http::encoder::Encoder,
            Option<&crate::frontend::rate::CompRate>,
            u32,
        ),
        data: &[u8],
        trailers: Option<&fulcrum_h2::RawHead>,
        end: bool,
        limits: &mut [crate::bwlim::Limit],
    ) -> Result<(), Xfer> {
        let mut rest = data;
        loop {
            let n = match rest.is_empty() {
                true => 0,
                false => crate::bwlim::take(limits, Part::BeforeComp(at), rest.len(), end).await,
            };
            let (now, later) = rest.split_at(n);
            let last = later.is_empty();
            let out = compress(e, rate, now, end && last).map_err(|_| Xfer::WriteError)?;
            let trailers = if last { trailers } else { None };
            self.send(out, trailers, end && last, Some(&mut *limits), Part::AfterComp(at)).await?;
            crate::bwlim::passed(limits, Part::BeforeComp(at), n);
            rest = later;
            if last {
                return Ok(());
            }
        }
    }

    /// Writes one part as the sink frames it.
    async fn write(
        &mut self,
        data: &[u8],
        trailers: Option<&fulcrum_h2::RawHead>,
        end: bool,
    ) -> Result<(), Xfer> {
        match self.to {
            Sink::Pieces(p) => to_pieces(p, data, trailers, end, self.write_timeout).await,
            Sink::H1 { peer, chunked, .. } => {
                let out = match chunked {
                    true => frame_chunk(self.framed, data, trailers, end),
                    false => data,
                };
                if out.is_empty() && self.head.is_empty() {
                    return Ok(());
                }
                let r = send_within(*peer, self.head, out, self.write_timeout, false).await;
                *self.head = &[];
                r.map_err(|e| match e.kind() {
                    std::io::ErrorKind::TimedOut => Xfer::WriteTimeout,
                    _ => Xfer::WriteError,
                })
            }
        }
    }
}

/// The buffer pieces were read into, given back to the peer they came from when the body
/// is done (its connection's next streams take it instead of allocating).
struct GiveBack<'p> {
    peer: &'p Peer,
    buf: Vec<u8>,
}

impl Drop for GiveBack<'_> {
    fn drop(&mut self) {
        // (No piece read, no buffer: the connection is not looked up for nothing.)
        if self.buf.capacity() > 0 {
            self.peer.give_buf(std::mem::take(&mut self.buf));
        }
    }
}

/// Between two HTTP/2 peers, DATA to DATA, as [`pump`] moves a body in general: a loop of its
/// own for this one case, the gRPC calls' (the general one's state is larger than the worker's
/// memory classes hold, and its steps cost about 100 instructions more per piece). `remaining`
/// is what is left of a sized body (`sized`), else `u64::MAX`.
#[allow(clippy::too_many_arguments)]
pub(super) async fn between_h2(
    from: &Peer,
    to: &Peer,
    (sized, mut remaining): (bool, u64),
    (mut read_timer, read_timeout): (Pin<&mut Timer>, Option<Duration>),
    write_timeout: Option<Duration>,
    mut watch: Option<(&Peer, &mut RecvBuf)>,
    moved: &mut u64,
) -> Xfer {
    let mut back = GiveBack { peer: from, buf: Vec::new() };
    let buf = &mut back.buf;
    loop {
        // What came already is taken at once: no timer armed, no waker kept.
        let piece = match from.poll_piece(&mut Context::from_waker(Waker::noop()), buf) {
            Poll::Ready(Ok(piece)) => piece,
            Poll::Ready(Err(_)) => return Xfer::ReadError,
            Poll::Pending => {
                match wait_piece(from, buf, &mut watch, (read_timer.as_mut(), read_timeout)).await {
                    Ok(piece) => piece,
                    Err(x) => return x,
                }
            }
        };
        if let Err(e) = writable(to, write_timeout).await {
            return match e.kind() {
                std::io::ErrorKind::TimedOut => Xfer::WriteTimeout,
                _ => Xfer::WriteError,
            };
        }
        if let Some(x) = relay_piece(piece, buf, to, sized, &mut remaining, moved) {
            return x;
        }
    }
}

/// [`between_h2`]'s usual case without a transfer set up: the pieces that came already, while
/// the other side takes them (a gRPC call's bodies come whole with their heads). `None` when
/// one must be waited for: the rest is `between_h2`'s, from `remaining` on.
pub(super) fn relay_ready(
    from: &Peer,
    to: &Peer,
    sized: bool,
    remaining: &mut u64,
    moved: &mut u64,
) -> Option<Xfer> {
    let cx = &mut Context::from_waker(Waker::noop());
    let mut back = GiveBack { peer: from, buf: Vec::new() };
    loop {
        // Taken only when it can go at once: nothing is held back for `between_h2`.
        if !matches!(to.poll_write_ready(cx), Poll::Ready(Ok(()))) {
            return None;
        }
        let piece = match from.poll_piece(cx, &mut back.buf) {
            Poll::Ready(Ok(piece)) => piece,
            Poll::Ready(Err(_)) => return Some(Xfer::ReadError),
            Poll::Pending => return None,
        };
        if let Some(x) = relay_piece(piece, &back.buf, to, sized, remaining, moved) {
            return Some(x);
        }
    }
}

/// Sends one piece of a body between two HTTP/2 peers (its data in `buf`), the other side
/// ready for it; the transfer's end if it ends here.
fn relay_piece(
    piece: Piece,
    buf: &[u8],
    to: &Peer,
    sized: bool,
    remaining: &mut u64,
    moved: &mut u64,
) -> Option<Xfer> {
    let (data, short): (&[u8], bool) = match &piece {
        Piece::Data { end } => {
            let n = (buf.len() as u64).min(*remaining) as usize;
            *remaining -= n as u64;
            (&buf[..n], *end && sized && *remaining > 0)
        }
        _ => (&[], sized && *remaining > 0),
    };
    let end = match &piece {
        Piece::Data { end } => (*end && !short) || (sized && *remaining == 0),
        _ => !short,
    };
    if short && data.is_empty() {
        return Some(Xfer::ReadEof); // the body ended before its length
    }
    let sent = match &piece {
        Piece::Trailers(fields) if end => to.send_trailers(fields),
        _ => to.send_data(data, end),
    };
    if sent.is_err() {
        return Some(Xfer::WriteError);
    }
    *moved += data.len() as u64;
    if short {
        return Some(Xfer::ReadEof);
    }
    end.then_some(Xfer::Done)
}

/// What the next piece of an HTTP/2 stream's body is for the transfer (see
/// [`Source::Pieces`]); a sized body whose stream ends before its length is `ReadEof`.
fn h2_next(
    piece: Piece,
    sized: Option<u64>,
    remaining: &mut u64,
    block: &mut Vec<u8>,
) -> Result<Next, Xfer> {
    Ok(match piece {
        Piece::Data { end } => {
            let n = (block.len() as u64).min(*remaining) as usize;
            block.truncate(n);
            *remaining -= n as u64;
            // The stream ended before the length its head gave: its last data still goes,
            // then the transfer fails.
            let short = end && sized.is_some() && *remaining > 0;
            if short && n == 0 {
                return Err(Xfer::ReadEof);
            }
            Next::Block { end: !short && (end || (sized.is_some() && *remaining == 0)), short }
        }
        _ if sized.is_some() && *remaining > 0 => return Err(Xfer::ReadEof),
        Piece::Trailers(t) => Next::Trailers(t),
        Piece::End => Next::End,
    })
}

/// The next piece of an HTTP/1 side's body (see [`Source::H1`]): `remaining` of a sized one,
/// chunks' data decoded into `block` and their trailer lines gathered in `lines`.
async fn h1_next(
    from: &Peer,
    buf: &mut RecvBuf,
    body: Body,
    (remaining, scanner, block, lines): (&mut u64, &mut ChunkedScanner, &mut Vec<u8>, &mut Vec<u8>),
    watch: &mut Option<(&Peer, &mut RecvBuf)>,
    (mut timer, timeout): (Pin<&mut Timer>, Option<Duration>),
) -> Result<Next, Xfer> {
    loop {
        if !buf.is_empty() {
            match body {
                Body::Length(_) => {
                    let n = (buf.len() as u64).min(*remaining) as usize;
                    *remaining -= n as u64;
                    return Ok(Next::Buffered { n, end: *remaining == 0 });
                }
                Body::Chunked => {
                    block.clear();
                    let s = scanner.decode(buf.data(), block, lines).map_err(|_| Xfer::Invalid)?;
                    buf.consume(s.accepted);
                    if s.done && !block.is_empty() && !lines.is_empty() {
                        // The trailers come next, from the scanner's lines (the scanner
                        // returns `done` again with no more bytes).
                        return Ok(Next::Block { end: false, short: false });
                    }
                    if s.done && block.is_empty() && !lines.is_empty() {
                        return Ok(Next::Trailers(trailer_fields(lines)));
                    }
                    if s.done || !block.is_empty() {
                        return Ok(Next::Block { end: s.done, short: false });
                    }
                    if s.accepted == 0 && buf.is_full() {
                        return Err(Xfer::Invalid); // a line longer than a buffer
                    }
                }
                _ => return Ok(Next::Buffered { n: buf.len(), end: false }),
            }
        } else if body == Body::Chunked && scanner.is_done() && !lines.is_empty() {
            return Ok(Next::Trailers(trailer_fields(lines)));
        }
        match fill_watching(buf, from, watch, (timer.as_mut(), timeout)).await? {
            0 if body == Body::UntilClose => return Ok(Next::End),
            0 => return Err(Xfer::ReadEof),
            _ => {}
        }
    }
}

/// A piece in HTTP/1's chunked framing, written into `out`: the data as one chunk, then, at the
/// end, the last chunk and the trailers.
fn frame_chunk<'o>(
    out: &'o mut Vec<u8>,
    data: &[u8],
    trailers: Option<&fulcrum_h2::RawHead>,
    end: bool,
) -> &'o [u8] {
    out.clear();
    if !data.is_empty() {
        fulcrum_http::write_chunk_size(out, data.len() as u64);
        out.extend_from_slice(data);
        out.extend_from_slice(b"\r\n");
    }
    if end {
        out.extend_from_slice(b"0\r\n");
        if let Some(t) = trailers {
            crate::http::h2::body::write_fields(out, t.fields());
        }
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Gives a piece to an HTTP/2 stream once it takes more, within `limit` of inactivity.
async fn to_pieces(
    to: &Peer,
    data: &[u8],
    trailers: Option<&fulcrum_h2::RawHead>,
    end: bool,
    limit: Option<Duration>,
) -> Result<(), Xfer> {
    if let Err(e) = writable(to, limit).await {
        return Err(match e.kind() {
            std::io::ErrorKind::TimedOut => Xfer::WriteTimeout,
            _ => Xfer::WriteError,
        });
    }
    let sent = match trailers {
        Some(fields) => to.send_trailers(fields),
        None => to.send_data(data, end),
    };
    sent.map_err(|_| Xfer::WriteError)
}

/// Waits for the next piece `from` gives, within the read timeout of inactivity; with
/// `watch`, stops as soon as the watched side has something to say (see `pump`).
async fn wait_piece(
    from: &Peer,
    buf: &mut Vec<u8>,
    watch: &mut Option<(&Peer, &mut RecvBuf)>,
    (read_timer, read_timeout): (Pin<&mut Timer>, Option<Duration>),
) -> Result<Piece, Xfer> {
    let mut said = Said::Nothing;
    let next = poll_fn(|cx| {
        if let Poll::Ready(r) = from.poll_piece(cx, buf) {
            return Poll::Ready(r.map(Some));
        }
        match watched(watch, cx, &mut said) {
            true => Poll::Ready(Ok(None)),
            false => Poll::Pending,
        }
    });
    match timer::within_io(read_timer, read_timeout, next).await {
        Ok(Some(piece)) => Ok(piece),
        Ok(None) => Err(said.into_xfer()),
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => Err(Xfer::ReadTimeout),
        Err(_) => Err(Xfer::ReadError),
    }
}

/// Reads more of an HTTP/1 side's bytes into `buf` (`Ok(0)`: its end), within the read
/// timeout of inactivity; with `watch`, stops as soon as the watched side has something to
/// say (see `pump`).
pub(super) async fn fill_watching(
    buf: &mut RecvBuf,
    from: &Peer,
    watch: &mut Option<(&Peer, &mut RecvBuf)>,
    (read_timer, read_timeout): (Pin<&mut Timer>, Option<Duration>),
) -> Result<usize, Xfer> {
    let r = match watch {
        None => timer::within_io(read_timer, read_timeout, buf.fill_streaming(from)).await,
        Some(_) => {
            let mut said = Said::Nothing;
            let fill = buf.fill_streaming(from);
            tokio::pin!(fill);
            let r = timer::within_io(
                read_timer,
                read_timeout,
                poll_fn(|cx| {
                    if let Poll::Ready(r) = fill.as_mut().poll(cx) {
                        return Poll::Ready(r.map(Some));
                    }
                    match watched(watch, cx, &mut said) {
                        true => Poll::Ready(Ok(None)),
                        false => Poll::Pending,
                    }
                }),
            )
            .await;
            match r {
                Ok(None) => return Err(said.into_xfer()),
                Ok(Some(n)) => Ok(n),
                Err(e) => Err(e),
            }
        }
    };
    match r {
        Ok(n) => Ok(n),
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => Err(Xfer::ReadTimeout),
        Err(_) => Err(Xfer::ReadError),
    }
}

/// What the watched side (the server, during an upload) did.
enum Said {
    Nothing,
    /// It sent something (or its response head is ready).
    Something,
    /// It closed or failed.
    Gone,
}

impl Said {
    fn into_xfer(self) -> Xfer {
        match self {
            Said::Gone => Xfer::WriteError,
            _ => Xfer::Interrupted,
        }
    }
}

/// Whether the watched side has something to say (bytes read into its buffer, a response
/// head that came built, left for `exchange` to take as it is, or its end), noted in `said`.
/// Readiness may be stale: it is confirmed with a non-blocking read.
fn watched(
    watch: &mut Option<(&Peer, &mut RecvBuf)>,
    cx: &mut Context<'_>,
    said: &mut Said,
) -> bool {
    let Some((other, obuf)) = watch.as_mut() else { return false };
    while other.poll_read_ready(cx).is_ready() {
        if other.has_response_head() {
            *said = Said::Something;
            return true;
        }
        match obuf.try_fill(*other) {
            Ok(None) => continue, // spurious; readiness now cleared
            Ok(Some(0)) | Err(_) => *said = Said::Gone,
            Ok(Some(_)) => *said = Said::Something,
        }
        return true;
    }
    false
}

/// Waits until `to` takes more of a body, within `limit` of inactivity (no timer unless it
/// must wait).
async fn writable(to: &Peer, limit: Option<Duration>) -> std::io::Result<()> {
    if let Poll::Ready(r) = to.poll_write_ready(&mut Context::from_waker(Waker::noop())) {
        return r;
    }
    let wait = poll_fn(|cx| to.poll_write_ready(cx));
    match limit {
        Some(d) => tokio::time::timeout(d, wait)
            .await
            .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into())),
        None => wait.await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(h: &fulcrum_h2::RawHead) -> Vec<(String, String)> {
        let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        h.fields().map(|(n, v)| (s(n), s(v))).collect()
    }

    /// Pieces written for an HTTP/1 side that takes chunks: each block one chunk, the end the
    /// last chunk with the trailers; an empty block writes nothing.
    #[test]
    fn pieces_become_chunks_and_trailers_for_http1() {
        let mut out = Vec::new();
        assert_eq!(frame_chunk(&mut out, b"hello", None, false), b"5\r\nhello\r\n");
        assert_eq!(frame_chunk(&mut out, &[0u8; 26], None, false)[..4], *b"1a\r\n");
        assert_eq!(frame_chunk(&mut out, b"", None, false), b"");
        assert_eq!(frame_chunk(&mut out, b"", None, true), b"0\r\n\r\n");
        let mut t = fulcrum_h2::RawHead::new();
        t.push(b"grpc-status", b"0");
        t.push(b"grpc-message", b"ok");
        assert_eq!(
            frame_chunk(&mut out, b"xy", Some(&t), true),
            b"2\r\nxy\r\n0\r\ngrpc-status: 0\r\ngrpc-message: ok\r\n\r\n"
        );
    }

    /// An HTTP/1 body's trailer lines become HTTP/2 fields: names in lower case, values
    /// trimmed, the fields of one HTTP/1 connection left out.
    #[test]
    fn http1_trailer_lines_become_fields() {
        let mut lines = b"X-Sum: 42 \r\nConnection: close\r\nGrpc-Status:0\r\n".to_vec();
        let t = trailer_fields(&mut lines);
        let want = [("x-sum", "42"), ("grpc-status", "0")].map(|(n, v)| (n.into(), v.into()));
        assert_eq!(fields(&t), want);
        assert!(lines.is_empty(), "the lines are taken");
    }

    /// An HTTP/2 stream's pieces for a sized body: its length ends the body (data beyond it
    /// dropped), and a stream that ends short fails the transfer after its last data.
    #[test]
    fn a_sized_bodys_pieces_end_at_its_length() {
        let sized = Some(5);
        let (mut remaining, mut block) = (5, b"hel".to_vec());
        let next = h2_next(Piece::Data { end: false }, sized, &mut remaining, &mut block);
        assert!(matches!(next, Ok(Next::Block { end: false, short: false })));
        block = b"lo and more".to_vec();
        let next = h2_next(Piece::Data { end: false }, sized, &mut remaining, &mut block);
        assert!(matches!(next, Ok(Next::Block { end: true, short: false })));
        assert_eq!(block, b"lo", "cut at the length");
        // Short: 2 of 5 bytes, then the stream's end.
        let (mut remaining, mut block) = (5, b"ab".to_vec());
        let next = h2_next(Piece::Data { end: true }, sized, &mut remaining, &mut block);
        assert!(matches!(next, Ok(Next::Block { short: true, .. })));
        let (mut remaining, mut block) = (3, Vec::new());
        assert!(matches!(
            h2_next(Piece::End, sized, &mut remaining, &mut block),
            Err(Xfer::ReadEof)
        ));
        // Without a length, the stream says where it ends; trailers end it too.
        let mut remaining = u64::MAX;
        let next = h2_next(Piece::Data { end: true }, None, &mut remaining, &mut block);
        assert!(matches!(next, Ok(Next::Block { end: true, short: false })));
        let t = fulcrum_h2::RawHead::new();
        let next = h2_next(Piece::Trailers(t), None, &mut remaining, &mut block);
        assert!(matches!(next, Ok(Next::Trailers(_))));
    }
}
