//! SPOP, the Stream Processing Offload Protocol, as HAProxy 2.6 speaks it to SPOE agents
//! (`doc/SPOE.txt`, `src/flt_spoe.c`): frames (a 4-byte length, a type, 4 bytes of flags, the
//! stream and frame ids as varints, the payload), HAProxy's varints, typed data, and the
//! frames HAProxy writes (HELLO, NOTIFY, DISCONNECT) and reads (the agent's HELLO, ACK,
//! DISCONNECT) with HAProxy's checks and status codes. Sans-I/O: bytes in, bytes out.
//!
//! Must not touch: sockets, time, samples and variables (the caller turns [`Value`]s into
//! its own).

pub mod fuzzing;

/// Frame types.
pub const FRAME_UNSET: u8 = 0;
pub const FRAME_HAPROXY_HELLO: u8 = 1;
pub const FRAME_HAPROXY_DISCONNECT: u8 = 2;
pub const FRAME_NOTIFY: u8 = 3;
pub const FRAME_AGENT_HELLO: u8 = 101;
pub const FRAME_AGENT_DISCONNECT: u8 = 102;
pub const FRAME_ACK: u8 = 103;

/// Frame flags.
pub const FLAG_FIN: u32 = 1;
pub const FLAG_ABORT: u32 = 2;

/// The smallest `max-frame-size` an agent may announce, and HAProxy's default and greatest
/// (its buffer size, 16384, less the frame's length).
pub const MIN_FRAME_SIZE: u32 = 256;
pub const MAX_FRAME_SIZE: u32 = 16380;
/// The bytes of a NOTIFY frame before its messages that HAProxy keeps room for (type, flags,
/// two varints of up to 5 bytes each).
pub const FRAME_HDR_SIZE: u32 = 32;

/// SPOP status codes (HELLO and DISCONNECT frames), and HAProxy's text for each.
pub mod status {
    pub const NONE: u32 = 0;
    pub const IO: u32 = 1;
    pub const TIMEOUT: u32 = 2;
    pub const TOO_BIG: u32 = 3;
    pub const INVALID: u32 = 4;
    pub const NO_VERSION: u32 = 5;
    pub const NO_FRAME_SIZE: u32 = 6;
    pub const NO_CAPABILITIES: u32 = 7;
    pub const BAD_VERSION: u32 = 8;
    pub const BAD_FRAME_SIZE: u32 = 9;
    pub const FRAG_NOT_SUPPORTED: u32 = 10;
    pub const INTERLACED_FRAMES: u32 = 11;
    pub const FRAME_ID_NOT_FOUND: u32 = 12;
    pub const RESOURCE: u32 = 13;
    pub const UNKNOWN: u32 = 99;

    /// HAProxy's reason for a status code (`spoe_frm_err_reasons`).
    pub fn reason(code: u32) -> &'static str {
        match code {
            NONE => "normal",
            IO => "I/O error",
            TIMEOUT => "a timeout occurred",
            TOO_BIG => "frame is too big",
            INVALID => "invalid frame received",
            NO_VERSION => "version value not found",
            NO_FRAME_SIZE => "max-frame-size value not found",
            NO_CAPABILITIES => "capabilities value not found",
            BAD_VERSION => "unsupported version",
            BAD_FRAME_SIZE => "max-frame-size too big or too small",
            FRAG_NOT_SUPPORTED => "fragmentation not supported",
            INTERLACED_FRAMES => "invalid interlaced frames",
            FRAME_ID_NOT_FOUND => "frame-id not found",
            RESOURCE => "resource allocation error",
            _ => "an unknown error occurred",
        }
    }
}

/// Typed data's types (the low 4 bits of the type byte).
pub const T_NULL: u8 = 0;
pub const T_BOOL: u8 = 1;
pub const T_INT32: u8 = 2;
pub const T_UINT32: u8 = 3;
pub const T_INT64: u8 = 4;
pub const T_UINT64: u8 = 5;
pub const T_IPV4: u8 = 6;
pub const T_IPV6: u8 = 7;
pub const T_STR: u8 = 8;
pub const T_BIN: u8 = 9;
/// A boolean's value, in the type byte's high bits.
const FL_TRUE: u8 = 0x10;

/// Why bytes are not what SPOP allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Invalid;

/// Writes `v` as HAProxy's varint (`encode_varint`): below 240 one byte; else the low 4 bits
/// with the top 4 set, then 7 bits a byte, the high bit saying more follow.
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    if v < 240 {
        out.push(v as u8);
        return;
    }
    out.push((v as u8) | 240);
    let mut v = (v - 240) >> 4;
    while v >= 128 {
        out.push((v as u8) | 128);
        v = (v - 128) >> 7;
    }
    out.push(v as u8);
}

/// Reads a varint (`decode_varint`) from the front of `buf`.
pub fn get_varint(buf: &mut &[u8]) -> Result<u64, Invalid> {
    let (&first, mut rest) = buf.split_first().ok_or(Invalid)?;
    let mut v = u64::from(first);
    if v >= 240 {
        let mut shift = 4u32;
        loop {
            let (&b, r) = rest.split_first().ok_or(Invalid)?;
            rest = r;
            if shift > 63 {
                return Err(Invalid);
            }
            v = v.wrapping_add(u64::from(b) << shift);
            shift += 7;
            if b < 128 {
                break;
            }
        }
    }
    *buf = rest;
    Ok(v)
}

/// Writes a string: its length as a varint, then its bytes.
pub fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// Reads a string (`spoe_decode_buffer`).
pub fn get_str<'a>(buf: &mut &'a [u8]) -> Result<&'a [u8], Invalid> {
    let mut rest = *buf;
    let len = get_varint(&mut rest)?;
    let len = usize::try_from(len).map_err(|_| Invalid)?;
    if len > rest.len() {
        return Err(Invalid);
    }
    let (s, rest) = rest.split_at(len);
    *buf = rest;
    Ok(s)
}

/// One typed datum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    Int32(i32),
    Uint32(u32),
    Int64(i64),
    Uint64(u64),
    Ipv4([u8; 4]),
    Ipv6([u8; 16]),
    Str(&'a [u8]),
    Bin(&'a [u8]),
}

impl Value<'_> {
    /// Writes the datum (`spoe_encode_data`).
    pub fn put(&self, out: &mut Vec<u8>) {
        match *self {
            Value::Null => out.push(T_NULL),
            Value::Bool(b) => out.push(T_BOOL | if b { FL_TRUE } else { 0 }),
            Value::Int32(i) => {
                out.push(T_INT32);
                put_varint(out, i64::from(i) as u64);
            }
            Value::Uint32(u) => {
                out.push(T_UINT32);
                put_varint(out, u64::from(u));
            }
            Value::Int64(i) => {
                out.push(T_INT64);
                put_varint(out, i as u64);
            }
            Value::Uint64(u) => {
                out.push(T_UINT64);
                put_varint(out, u);
            }
            Value::Ipv4(a) => {
                out.push(T_IPV4);
                out.extend_from_slice(&a);
            }
            Value::Ipv6(a) => {
                out.push(T_IPV6);
                out.extend_from_slice(&a);
            }
            Value::Str(s) => {
                out.push(T_STR);
                put_str(out, s);
            }
            Value::Bin(s) => {
                out.push(T_BIN);
                put_str(out, s);
            }
        }
    }

    /// Reads a datum (`spoe_decode_data`): an unknown type reads as `Null` and nothing after
    /// its type byte, as HAProxy's.
    pub fn get<'a>(buf: &mut &'a [u8]) -> Result<Value<'a>, Invalid> {
        let (&ty, mut rest) = buf.split_first().ok_or(Invalid)?;
        let v = match ty & 0x0f {
            T_BOOL => Value::Bool(ty & 0xf0 == FL_TRUE),
            // (HAProxy keeps the whole varint of a 32-bit type.)
            T_INT32 => Value::Int64(get_varint(&mut rest)? as i64),
            T_UINT32 => Value::Uint64(get_varint(&mut rest)?),
            T_INT64 => Value::Int64(get_varint(&mut rest)? as i64),
            T_UINT64 => Value::Uint64(get_varint(&mut rest)?),
            T_IPV4 => {
                let a: [u8; 4] = rest.get(..4).ok_or(Invalid)?.try_into().map_err(|_| Invalid)?;
                rest = &rest[4..];
                Value::Ipv4(a)
            }
            T_IPV6 => {
                let a: [u8; 16] = rest.get(..16).ok_or(Invalid)?.try_into().map_err(|_| Invalid)?;
                rest = &rest[16..];
                Value::Ipv6(a)
            }
            T_STR => Value::Str(get_str(&mut rest)?),
            T_BIN => Value::Bin(get_str(&mut rest)?),
            _ => Value::Null,
        };
        *buf = rest;
        Ok(v)
    }

    /// An integer of any width, as HAProxy takes them (a signed 64-bit sample).
    pub fn as_int(&self) -> Option<i64> {
        match *self {
            Value::Int32(i) => Some(i64::from(i)),
            Value::Uint32(u) => Some(i64::from(u)),
            Value::Int64(i) => Some(i),
            Value::Uint64(u) => Some(u as i64),
            _ => None,
        }
    }
}

/// A frame as read: its type, flags, ids and payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    pub kind: u8,
    pub flags: u32,
    pub stream_id: u64,
    pub frame_id: u64,
    pub payload: &'a [u8],
}

impl<'a> Frame<'a> {
    /// The frame at the front of `buf`, and the bytes it takes (its 4-byte length included);
    /// `Ok(None)` until it is whole. A frame longer than `max` is `Err(status::TOO_BIG)`; one
    /// too short for its metadata `Err(status::INVALID)`.
    pub fn parse(buf: &'a [u8], max: u32) -> Result<Option<(Frame<'a>, usize)>, u32> {
        let Some(len) = buf.get(..4) else { return Ok(None) };
        let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]);
        if len > max {
            return Err(status::TOO_BIG);
        }
        let total = 4 + len as usize;
        let Some(body) = buf.get(4..total) else { return Ok(None) };
        // TYPE + FLAGS + the two ids (a byte each at least).
        if body.len() < 7 {
            return Err(status::INVALID);
        }
        let kind = body[0];
        let flags = u32::from_be_bytes([body[1], body[2], body[3], body[4]]);
        let mut rest = &body[5..];
        let stream_id = get_varint(&mut rest).map_err(|_| status::INVALID)?;
        let frame_id = get_varint(&mut rest).map_err(|_| status::INVALID)?;
        Ok(Some((Frame { kind, flags, stream_id, frame_id, payload: rest }, total)))
    }
}

/// Starts a frame in `out`: room for its length, its type, flags and ids. [`end_frame`] fills
/// the length in once the payload is written.
pub fn start_frame(
    out: &mut Vec<u8>,
    kind: u8,
    flags: u32,
    stream_id: u64,
    frame_id: u64,
) -> usize {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    out.push(kind);
    out.extend_from_slice(&flags.to_be_bytes());
    put_varint(out, stream_id);
    put_varint(out, frame_id);
    at
}

/// Writes the length of the frame started at `at`.
pub fn end_frame(out: &mut [u8], at: usize) {
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

/// HAProxy's HELLO (`spoe_prepare_hahello_frame`): `supported-versions` "2.0",
/// `max-frame-size`, `capabilities` (those the agent's options allow), `engine-id`.
pub fn haproxy_hello(out: &mut Vec<u8>, max_frame_size: u32, caps: Caps, engine_id: &str) {
    let at = start_frame(out, FRAME_HAPROXY_HELLO, FLAG_FIN, 0, 0);
    put_str(out, b"supported-versions");
    Value::Str(b"2.0").put(out);
    put_str(out, b"max-frame-size");
    Value::Uint32(max_frame_size).put(out);
    put_str(out, b"capabilities");
    let mut list = Vec::new();
    for (on, name) in [(caps.pipelining, "pipelining"), (caps.async_, "async")] {
        if on {
            if !list.is_empty() {
                list.push(b',');
            }
            list.extend_from_slice(name.as_bytes());
        }
    }
    Value::Str(&list).put(out);
    if !engine_id.is_empty() {
        put_str(out, b"engine-id");
        Value::Str(engine_id.as_bytes()).put(out);
    }
    end_frame(out, at);
}

/// HAProxy's DISCONNECT: the status code and its reason.
pub fn haproxy_disconnect(out: &mut Vec<u8>, code: u32) {
    let code = if code > status::UNKNOWN { status::UNKNOWN } else { code };
    let at = start_frame(out, FRAME_HAPROXY_DISCONNECT, FLAG_FIN, 0, 0);
    put_str(out, b"status-code");
    Value::Uint32(code).put(out);
    put_str(out, b"message");
    Value::Str(status::reason(code).as_bytes()).put(out);
    end_frame(out, at);
}

/// Writes one message of a NOTIFY frame's payload: its name, its argument count, then the
/// caller writes each argument with [`put_arg`].
pub fn put_message(out: &mut Vec<u8>, name: &str, nargs: u8) {
    put_str(out, name.as_bytes());
    out.push(nargs);
}

/// One argument of a message: its name (empty for none) and its value.
pub fn put_arg(out: &mut Vec<u8>, name: &str, v: &Value<'_>) {
    put_str(out, name.as_bytes());
    v.put(out);
}

/// The capabilities both sides agreed on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Caps {
    pub pipelining: bool,
    pub async_: bool,
    pub fragmentation: bool,
}

/// What an agent's HELLO says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentHello {
    pub max_frame_size: u32,
    pub caps: Caps,
}

/// Reads an agent's HELLO as `spoe_handle_agenthello_frame` does: a version of 2.x, a
/// `max-frame-size` between 256 and `ours`, the capabilities listed (unknown items skipped).
/// The error is the SPOP status code HAProxy's DISCONNECT then carries.
pub fn agent_hello(f: &Frame<'_>, ours: u32) -> Result<AgentHello, u32> {
    if f.kind != FRAME_AGENT_HELLO {
        return Err(status::INVALID);
    }
    if f.flags & FLAG_FIN == 0 {
        return Err(status::FRAG_NOT_SUPPORTED);
    }
    if f.stream_id != 0 || f.frame_id != 0 {
        return Err(status::INVALID);
    }
    let (mut version, mut size, mut caps) = (false, 0u32, Caps::default());
    let mut p = f.payload;
    while !p.is_empty() {
        let key = get_str(&mut p).map_err(|_| status::INVALID)?;
        if key.is_empty() {
            return Err(status::INVALID);
        }
        let v = Value::get(&mut p).map_err(|_| status::INVALID)?;
        if key.starts_with(b"version") {
            let Value::Str(s) = v else { return Err(status::INVALID) };
            match parse_version(s) {
                Some(v) if (2000..=2000).contains(&v) => version = true,
                _ => return Err(status::BAD_VERSION),
            }
        } else if key.starts_with(b"max-frame-size") {
            let n = match v {
                Value::Int32(_) | Value::Int64(_) | Value::Uint32(_) | Value::Uint64(_) => {
                    v.as_int().unwrap_or(0) as u64
                }
                _ => return Err(status::INVALID),
            };
            if n < u64::from(MIN_FRAME_SIZE) || n > u64::from(ours) {
                return Err(status::BAD_FRAME_SIZE);
            }
            size = n as u32;
        } else if key.starts_with(b"capabilities") {
            let Value::Str(s) = v else { return Err(status::INVALID) };
            caps = parse_caps(s);
        }
    }
    if !version {
        return Err(status::NO_VERSION);
    }
    if size == 0 {
        return Err(status::NO_FRAME_SIZE);
    }
    Ok(AgentHello { max_frame_size: size, caps })
}

/// `spoe_str_to_vsn`: "M.m" as M*1000+m (a major of 0, no minor, a minor over 999 or
/// anything but spaces after it: none).
fn parse_version(s: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(s).ok()?.trim_start();
    let (maj, min) = s.split_once('.')?;
    let maj: u32 = maj.parse().ok().filter(|m| *m > 0)?;
    let digits = min.bytes().take_while(u8::is_ascii_digit).count();
    let (min, rest) = min.split_at(digits);
    let min: u32 = min.parse().ok().filter(|m| *m <= 999)?;
    if !rest.bytes().all(|b| b.is_ascii_whitespace()) {
        return None;
    }
    maj.checked_mul(1000)?.checked_add(min)
}

/// The capabilities of a comma-separated list (spaces before each allowed).
fn parse_caps(s: &[u8]) -> Caps {
    let mut caps = Caps::default();
    for item in s.split(|&b| b == b',') {
        let item = item.trim_ascii_start();
        let word_end = item.iter().position(|b| b.is_ascii_whitespace()).unwrap_or(item.len());
        match &item[..word_end] {
            b"pipelining" => caps.pipelining = true,
            b"async" => caps.async_ = true,
            b"fragmentation" => caps.fragmentation = true,
            _ => {}
        }
    }
    caps
}

/// What an agent's DISCONNECT says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentDisconnect {
    pub status: u32,
    pub message: String,
}

/// Reads an agent's DISCONNECT (`spoe_handle_agentdiscon_frame`).
pub fn agent_disconnect(f: &Frame<'_>) -> Result<AgentDisconnect, u32> {
    if f.kind != FRAME_AGENT_DISCONNECT || f.stream_id != 0 || f.frame_id != 0 {
        return Err(status::INVALID);
    }
    if f.flags & FLAG_FIN == 0 {
        return Err(status::FRAG_NOT_SUPPORTED);
    }
    // (HAProxy's status without a `status-code`: none, 0.)
    let mut d = AgentDisconnect { status: status::NONE, message: String::new() };
    let mut p = f.payload;
    while !p.is_empty() {
        let key = get_str(&mut p).map_err(|_| status::INVALID)?;
        let v = Value::get(&mut p).map_err(|_| status::INVALID)?;
        if key.starts_with(b"status-code") {
            d.status = v.as_int().ok_or(status::INVALID)? as u32;
        } else if key.starts_with(b"message") {
            let Value::Str(s) = v else { return Err(status::INVALID) };
            d.message = String::from_utf8_lossy(s).into_owned();
        }
    }
    Ok(d)
}

/// A variable's scope in an ACK's action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Proc,
    Sess,
    Txn,
    Req,
    Res,
}

impl Scope {
    fn from_byte(b: u8) -> Option<Scope> {
        Some(match b {
            0 => Scope::Proc,
            1 => Scope::Sess,
            2 => Scope::Txn,
            3 => Scope::Req,
            4 => Scope::Res,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Scope::Proc => "proc",
            Scope::Sess => "sess",
            Scope::Txn => "txn",
            Scope::Req => "req",
            Scope::Res => "res",
        }
    }

    fn byte(self) -> u8 {
        self as u8
    }
}

/// One action of an ACK frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action<'a> {
    /// `set-var`: a `Null` value unsets the variable, as in HAProxy.
    SetVar {
        scope: Scope,
        name: &'a [u8],
        value: Value<'a>,
    },
    UnsetVar {
        scope: Scope,
        name: &'a [u8],
    },
}

pub const ACTION_SET_VAR: u8 = 1;
pub const ACTION_UNSET_VAR: u8 = 2;

/// The actions of an ACK's payload, as `spoe_process_actions` reads them: in order, up to
/// the first it cannot read (the rest of the payload is then ignored).
pub fn actions(payload: &[u8]) -> Vec<Action<'_>> {
    let mut out = Vec::new();
    let mut p = payload;
    while let Some(a) = next_action(&mut p) {
        out.push(a);
    }
    out
}

fn next_action<'a>(p: &mut &'a [u8]) -> Option<Action<'a>> {
    let (&kind, rest) = p.split_first()?;
    // (HAProxy wants more than the count and scope bytes after the type.)
    if rest.len() <= 2 {
        return None;
    }
    let (nargs, scope) = (rest[0], Scope::from_byte(rest[1])?);
    let mut r = &rest[2..];
    let a = match (kind, nargs) {
        (ACTION_SET_VAR, 3) => {
            let name = get_str(&mut r).ok()?;
            let value = Value::get(&mut r).ok()?;
            Action::SetVar { scope, name, value }
        }
        (ACTION_UNSET_VAR, 2) => Action::UnsetVar { scope, name: get_str(&mut r).ok()? },
        _ => return None,
    };
    *p = r;
    Some(a)
}

/// Writes an action (what an agent sends: the tests' and fuzzers' side).
pub fn put_action(out: &mut Vec<u8>, a: &Action<'_>) {
    match a {
        Action::SetVar { scope, name, value } => {
            out.extend_from_slice(&[ACTION_SET_VAR, 3, scope.byte()]);
            put_str(out, name);
            value.put(out);
        }
        Action::UnsetVar { scope, name } => {
            out.extend_from_slice(&[ACTION_UNSET_VAR, 2, scope.byte()]);
            put_str(out, name);
        }
    }
}

/// The messages of a NOTIFY payload (an agent's side, for tests): each name with its
/// arguments.
pub type Messages<'a> = Vec<(&'a [u8], Vec<(&'a [u8], Value<'a>)>)>;

/// Reads a NOTIFY payload's messages.
pub fn messages(payload: &[u8]) -> Result<Messages<'_>, Invalid> {
    let mut out = Vec::new();
    let mut p = payload;
    while !p.is_empty() {
        let name = get_str(&mut p)?;
        let (&n, rest) = p.split_first().ok_or(Invalid)?;
        p = rest;
        let mut args = Vec::with_capacity(usize::from(n));
        for _ in 0..n {
            let k = get_str(&mut p)?;
            args.push((k, Value::get(&mut p)?));
        }
        out.push((name, args));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_as_haproxy_writes_them() {
        // Values from HAProxy's SPOE.txt ("Variable-length integer").
        for (v, bytes) in [
            (0u64, &[0u8][..]),
            (239, &[239]),
            (240, &[240, 0]),
            (2287, &[255, 127]),
            (2288, &[240, 128, 0]),
            (264431, &[255, 255, 127]),
            (264432, &[240, 128, 128, 0]),
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out, bytes, "{v}");
            let mut b = bytes;
            assert_eq!(get_varint(&mut b), Ok(v));
            assert!(b.is_empty());
        }
        let mut cut: &[u8] = &[240, 128];
        assert_eq!(get_varint(&mut cut), Err(Invalid));
        for v in [u64::MAX, u64::MAX - 1, 1 << 40, i64::MIN as u64] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(get_varint(&mut &out[..]), Ok(v));
        }
    }

    #[test]
    fn hello_frame_bytes() {
        let mut out = Vec::new();
        haproxy_hello(
            &mut out,
            16380,
            Caps { pipelining: true, async_: true, ..Caps::default() },
            "",
        );
        let (f, n) = Frame::parse(&out, MAX_FRAME_SIZE).expect("valid").expect("whole");
        assert_eq!((n, f.kind, f.flags, f.stream_id, f.frame_id), (out.len(), 1, 1, 0, 0));
        let mut p = f.payload;
        assert_eq!(get_str(&mut p), Ok(&b"supported-versions"[..]));
        assert_eq!(Value::get(&mut p), Ok(Value::Str(b"2.0")));
        assert_eq!(get_str(&mut p), Ok(&b"max-frame-size"[..]));
        assert_eq!(Value::get(&mut p), Ok(Value::Uint64(16380)));
        assert_eq!(get_str(&mut p), Ok(&b"capabilities"[..]));
        assert_eq!(Value::get(&mut p), Ok(Value::Str(b"pipelining,async")));
        assert!(p.is_empty());
        // Not whole one byte short.
        assert_eq!(Frame::parse(&out[..out.len() - 1], MAX_FRAME_SIZE), Ok(None));
        assert_eq!(Frame::parse(&out, 8), Err(status::TOO_BIG));
    }

    fn agent(payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let at = start_frame(&mut out, FRAME_AGENT_HELLO, FLAG_FIN, 0, 0);
        out.extend_from_slice(payload);
        end_frame(&mut out, at);
        out
    }

    fn kv(items: &[(&str, Value<'_>)]) -> Vec<u8> {
        let mut p = Vec::new();
        for (k, v) in items {
            put_str(&mut p, k.as_bytes());
            v.put(&mut p);
        }
        p
    }

    #[test]
    fn agent_hello_checks() {
        let ok = kv(&[
            ("version", Value::Str(b"2.0")),
            ("max-frame-size", Value::Uint32(16380)),
            ("capabilities", Value::Str(b" pipelining ,async,other")),
            ("extra", Value::Int64(-5)),
        ]);
        let bytes = agent(&ok);
        let (f, _) = Frame::parse(&bytes, MAX_FRAME_SIZE).expect("valid").expect("whole");
        let h = agent_hello(&f, MAX_FRAME_SIZE).expect("ok");
        assert_eq!(h.max_frame_size, 16380);
        assert!(h.caps.pipelining && h.caps.async_ && !h.caps.fragmentation);
        let cases: [(&[(&str, Value<'_>)], u32); 5] = [
            (&[("max-frame-size", Value::Uint32(16380))], status::NO_VERSION),
            (&[("version", Value::Str(b"2.0"))], status::NO_FRAME_SIZE),
            (&[("version", Value::Str(b"1.0"))], status::BAD_VERSION),
            (
                &[("version", Value::Str(b"2.0")), ("max-frame-size", Value::Uint32(100))],
                status::BAD_FRAME_SIZE,
            ),
            (&[("version", Value::Int32(2))], status::INVALID),
        ];
        for (items, code) in cases {
            let bytes = agent(&kv(items));
            let (f, _) = Frame::parse(&bytes, MAX_FRAME_SIZE).expect("valid").expect("whole");
            assert_eq!(agent_hello(&f, MAX_FRAME_SIZE), Err(code), "{items:?}");
        }
        let big = agent(&kv(&[
            ("version", Value::Str(b"2.0")),
            ("max-frame-size", Value::Uint32(20000)),
        ]));
        let (f, _) = Frame::parse(&big, MAX_FRAME_SIZE).expect("valid").expect("whole");
        assert_eq!(agent_hello(&f, MAX_FRAME_SIZE), Err(status::BAD_FRAME_SIZE));
    }

    #[test]
    fn ack_actions_and_values() {
        let mut p = Vec::new();
        let acts = [
            Action::SetVar { scope: Scope::Txn, name: b"ip_score", value: Value::Uint64(42) },
            Action::SetVar { scope: Scope::Sess, name: b"who", value: Value::Str(b"bot") },
            Action::SetVar { scope: Scope::Req, name: b"ip", value: Value::Ipv4([10, 0, 0, 1]) },
            Action::UnsetVar { scope: Scope::Res, name: b"x" },
            Action::SetVar { scope: Scope::Txn, name: b"t", value: Value::Bool(true) },
        ];
        for a in &acts {
            put_action(&mut p, a);
        }
        assert_eq!(actions(&p), acts.to_vec());
        // A 32-bit type keeps its whole varint, as in HAProxy.
        let mut wide = Vec::new();
        wide.push(T_UINT32);
        put_varint(&mut wide, 1 << 40);
        assert_eq!(Value::get(&mut &wide[..]), Ok(Value::Uint64(1 << 40)));
        // An action it cannot read ends the list.
        p.extend_from_slice(&[9, 3, 2]);
        put_str(&mut p, b"nope");
        assert_eq!(actions(&p).len(), acts.len());
    }

    #[test]
    fn notify_messages_read_back() {
        let mut p = Vec::new();
        put_message(&mut p, "check-client-ip", 2);
        put_arg(&mut p, "ip", &Value::Ipv6([0; 16]));
        put_arg(&mut p, "", &Value::Int64(-1));
        let m = messages(&p).expect("ok");
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].0, b"check-client-ip");
        assert_eq!(m[0].1, vec![(&b"ip"[..], Value::Ipv6([0; 16])), (&b""[..], Value::Int64(-1))]);
    }

    #[test]
    fn disconnect_frames() {
        let mut out = Vec::new();
        haproxy_disconnect(&mut out, status::TIMEOUT);
        let (f, _) = Frame::parse(&out, MAX_FRAME_SIZE).expect("valid").expect("whole");
        assert_eq!(f.kind, FRAME_HAPROXY_DISCONNECT);
        let mut again = Vec::new();
        let at = start_frame(&mut again, FRAME_AGENT_DISCONNECT, FLAG_FIN, 0, 0);
        again.extend_from_slice(f.payload);
        end_frame(&mut again, at);
        let (g, _) = Frame::parse(&again, MAX_FRAME_SIZE).expect("valid").expect("whole");
        let d = agent_disconnect(&g).expect("ok");
        assert_eq!((d.status, d.message.as_str()), (2, "a timeout occurred"));
    }
}
