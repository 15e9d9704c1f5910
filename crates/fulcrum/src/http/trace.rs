//! `filter trace` (HAProxy 2.6's `flt_trace.c`): each stream's events as its trace filters
//! see them, one line each on the standard error, in HAProxy's words: the filters attached
//! (the frontend's at the start, the backend's once it is chosen), each message's head as it
//! goes on (after the rules), each block of its payload (with `hexdump`, its bytes), its end,
//! and the stream's end. Unlike HAProxy's lines, a stream is shown
//! by its number (`[strm <n>]`, no pointer or analyser bits), a payload's offset counts from
//! the body's start, and `random-forwarding` changes nothing (accepted, as `random-parsing`).
//!
//! Must not touch: what it traces (heads and data are only read).

use std::fmt::Write as _;
use std::sync::Arc;

use fulcrum_config::filters::TraceFilter;
use fulcrum_http::Head;

/// A message's direction, as the trace lines name it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Channel {
    Request,
    Response,
}

impl Channel {
    fn label(self) -> &'static str {
        match self {
            Channel::Request => "REQUEST",
            Channel::Response => "RESPONSE",
        }
    }
}

/// The trace filters attached to one stream.
#[derive(Debug)]
pub struct Traces {
    /// Each filter and whether it is a backend's.
    filters: Vec<(Arc<TraceFilter>, bool)>,
    stream: u64,
    /// The backend is chosen (the lines then say `backend`).
    on_backend: bool,
    /// The heads traced already (a request sent again on another try is not traced twice).
    heads: [bool; 2],
    /// Payload bytes traced so far, per channel.
    /// (Cells: an HTTP/2 exchange's two bodies go at once, each seen through a shared
    /// borrow.)
    offset: [std::cell::Cell<u64>; 2],
}

impl Traces {
    /// A stream of a frontend whose trace filters are `filters` (`None` without any).
    pub fn start(filters: &[Arc<TraceFilter>], stream: u64) -> Option<Box<Traces>> {
        if filters.is_empty() {
            return None;
        }
        let mut t = Traces::empty(stream);
        t.filters = filters.iter().map(|f| (Arc::clone(f), false)).collect();
        for (f, _) in &t.filters {
            t.line(f, format_args!("{:<25}: filter-type=frontend", "trace_attach"));
        }
        for (f, _) in &t.filters {
            t.line(f, format_args!("{:<25}", "trace_stream_start"));
        }
        Some(t)
    }

    /// A stream whose frontend has no trace filter (its backend's attach when it is chosen).
    pub fn empty(stream: u64) -> Box<Traces> {
        Box::new(Traces {
            filters: Vec::new(),
            stream,
            on_backend: false,
            heads: [false; 2],
            offset: Default::default(),
        })
    }

    /// The backend `name` is chosen, with its own trace filters (`filters`: none when it is
    /// the frontend itself, a `listen`).
    pub fn set_backend(&mut self, name: &str, filters: &[Arc<TraceFilter>]) {
        for f in filters {
            self.line(f, format_args!("{:<25}: filter-type=backend", "trace_attach"));
            self.filters.push((Arc::clone(f), true));
        }
        for (f, _) in &self.filters {
            self.line(f, format_args!("{:<25}: backend={name}", "trace_stream_set_backend"));
        }
        self.on_backend = true;
    }

    /// A message's head as it goes on (once per channel: false when it was already).
    pub fn headers(&mut self, ch: Channel, head: &Head) -> bool {
        let seen = &mut self.heads[ch as usize];
        if std::mem::replace(seen, true) {
            return false;
        }
        let start = start_line(head);
        for (f, _) in &self.filters {
            let what = self.what("trace_http_headers", ch);
            self.line(f, format_args!("{what}\t{start}"));
            // (`Connection` is the connection's, not the message's: HAProxy's HTX never holds
            // it, its connection layer writes it.)
            let fields = head.headers().filter(|(n, _)| !n.eq_ignore_ascii_case(b"connection"));
            for (name, value) in fields {
                let n = String::from_utf8_lossy(name).to_ascii_lowercase();
                let v = String::from_utf8_lossy(value);
                self.line(f, format_args!("\t{n}: {v}"));
            }
        }
        true
    }

    /// A message without payload: its (empty) payload and end, as HAProxy traces them.
    pub fn no_payload(&self, ch: Channel) {
        for (f, _) in &self.filters {
            let what = self.what("trace_http_payload", ch);
            self.line(f, format_args!("{what} - offset=0 - len=0 - forward=0"));
        }
        self.payload(ch, &[], true);
    }

    /// A block of a message's payload going on; with `end`, the message ends after it.
    pub fn payload(&self, ch: Channel, data: &[u8], end: bool) {
        let offset = self.offset[ch as usize].get();
        if !data.is_empty() {
            for (f, _) in &self.filters {
                let what = self.what("trace_http_payload", ch);
                let len = data.len();
                self.line(f, format_args!("{what} - offset={offset} - len={len} - forward={len}"));
                if f.hexdump && !f.quiet {
                    eprint!("{}", hexdump(data));
                }
            }
            self.offset[ch as usize].set(offset + data.len() as u64);
        }
        if end {
            for (f, _) in &self.filters {
                self.line(f, format_args!("{}", self.what("trace_http_end", ch)));
            }
        }
    }

    /// The stream ends: the backend's filters are detached, then the frontend's stop and are
    /// detached (HAProxy's order).
    fn stop(&self) {
        for (f, _) in self.filters.iter().filter(|(_, backend)| *backend) {
            self.line(f, format_args!("{:<25}: filter-type=backend", "trace_detach"));
        }
        for (f, _) in self.filters.iter().filter(|(_, backend)| !*backend) {
            self.line(f, format_args!("{:<25}", "trace_stream_stop"));
            self.line(f, format_args!("{:<25}: filter-type=frontend", "trace_detach"));
        }
    }

    fn pos(&self) -> &'static str {
        if self.on_backend {
            "backend"
        } else {
            "frontend"
        }
    }

    fn what(&self, event: &str, ch: Channel) -> String {
        format!("{event:<25}: channel={:<10} - mode={:<5} ({})", ch.label(), "HTTP", self.pos())
    }

    /// One line of filter `f` (HAProxy's `FLT_STRM_TRACE`), unless it is `quiet`.
    fn line(&self, f: &TraceFilter, msg: std::fmt::Arguments<'_>) {
        if f.quiet {
            return;
        }
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let (s, us) = (now.as_secs(), now.subsec_micros());
        eprintln!("{s}.{us:06} [{:<20}] [strm {}] {msg}", f.name, self.stream);
    }
}

/// A stream's trace ends when it goes (its transaction logged, or the session dropped on the
/// way: a client gone, a shutdown).
impl Drop for Traces {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A head's start line as HAProxy's trace shows its three parts.
fn start_line(h: &Head) -> String {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let version = std::str::from_utf8(h.version().as_bytes()).unwrap_or("");
    match h.is_request() {
        true => format!("{} {} {version}", text(h.method_bytes()), text(h.target())),
        false => format!("{version} {} {}", h.status(), text(h.reason())),
    }
}

/// HAProxy's `trace_hexdump()`: 16 bytes a line, in two groups of 8, then the printable ones.
pub fn hexdump(data: &[u8]) -> String {
    let mut out = String::new();
    for (i, row) in data.chunks(16).enumerate() {
        let _ = write!(out, "\t0x{:06x}: ", i * 16);
        for j in 0..16 {
            if j == 8 {
                out.push_str("  ");
            }
            match row.get(j) {
                Some(b) => {
                    let _ = write!(out, "{b:02x} ");
                }
                None => out.push_str("   "),
            }
        }
        out.push_str("  |");
        out.extend(
            row.iter().map(|&b| if b.is_ascii_graphic() || b == b' ' { b as char } else { '.' }),
        );
        out.push_str("|\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hexdump_is_haproxy_s() {
        let d = hexdump(b"GET / HTTP/1.1\r\nHost: x\r\n");
        let want =
            "\t0x000000: 47 45 54 20 2f 20 48 54   54 50 2f 31 2e 31 0d 0a   |GET / HTTP/1.1..|\n\
                    \t0x000010: 48 6f 73 74 3a 20 78 0d   0a                        |Host: x..|\n";
        assert_eq!(d, want);
    }
}
