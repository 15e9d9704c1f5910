//! Sample fetches and converters at run time: a compiled [`Expr`] turns a transaction
//! ([`Ctx`]) into [`Value`]s. Fetches borrow from the request/response heads; converters write
//! into owned values only when they change something.
//!
//! Must not touch: the heads themselves (read only), sockets.

use std::borrow::Cow;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use fulcrum_config as cfg;
use fulcrum_http::Head;
use fulcrum_pattern::Regsub;

mod conn;
mod cookies;
mod headers;
mod message;
mod state;
mod tls;

pub(crate) use conn::{canonical, rdp_cookie};
pub(crate) use headers::value_at as header_value_at;
pub use message::pathq;

/// A body as `res.body` reads it: the bytes received, still chunk-framed when `chunked` (a
/// fetch decodes them only when asked: most rules never read a body).
#[derive(Clone, Copy, Debug, Default)]
pub struct BodyBytes<'a> {
    pub data: &'a [u8],
    pub chunked: bool,
}

impl<'a> BodyBytes<'a> {
    /// The body's data without framing (`None`: broken chunks).
    pub fn decoded(&self) -> Option<Cow<'a, [u8]>> {
        if !self.chunked {
            return Some(Cow::Borrowed(self.data));
        }
        let (mut data, mut trailers) = (Vec::new(), Vec::new());
        fulcrum_http::ChunkedScanner::new().decode(self.data, &mut data, &mut trailers).ok()?;
        Some(Cow::Owned(data))
    }
}

/// A sample: what a fetch returns and converters transform.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    Str(Cow<'a, [u8]>),
    Int(i64),
    Ip(IpAddr),
    Bool(bool),
}

impl Value<'_> {
    /// The value as text (integers in decimal, addresses as usual, booleans as 1/0).
    pub fn as_bytes(&self) -> Cow<'_, [u8]> {
        match self {
            Value::Str(s) => Cow::Borrowed(s),
            Value::Int(i) => Cow::Owned(i.to_string().into_bytes()),
            Value::Ip(ip) => Cow::Owned(ip.to_string().into_bytes()),
            Value::Bool(b) => Cow::Borrowed(if *b { b"1" } else { b"0" }),
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(i64::from(*b)),
            Value::Str(s) => std::str::from_utf8(s).ok()?.trim().parse().ok(),
            Value::Ip(_) => None,
        }
    }

    pub fn as_ip(&self) -> Option<IpAddr> {
        match self {
            Value::Ip(ip) => Some(*ip),
            Value::Str(s) => std::str::from_utf8(s).ok()?.trim().parse().ok(),
            // HAProxy's cast: the integer is the IPv4 address (`c_int2ip`).
            Value::Int(i) => Some(IpAddr::V4(std::net::Ipv4Addr::from(*i as u32))),
            _ => None,
        }
    }

    pub fn is_true(&self) -> bool {
        match self {
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Str(s) => !s.is_empty(),
            Value::Ip(_) => true,
        }
    }

    pub fn into_owned(self) -> Value<'static> {
        match self {
            Value::Str(s) => Value::Str(Cow::Owned(s.into_owned())),
            Value::Int(i) => Value::Int(i),
            Value::Ip(ip) => Value::Ip(ip),
            Value::Bool(b) => Value::Bool(b),
        }
    }
}

pub use super::vars::{ProcVars, Vars};

/// What fetches can see of a transaction.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    pub src: Option<SocketAddr>,
    pub dst: Option<SocketAddr>,
    pub req: Option<&'a Head>,
    pub resp: Option<&'a Head>,
    pub vars: &'a Vars,
    pub proc_vars: &'a ProcVars,
    pub frontend: &'a str,
    /// The frontend itself, where there is one (`fe_conn`).
    pub fe: Option<&'a dyn super::view::FrontendView>,
    /// The number of the `bind` line that accepted the connection, from 1 (0: none).
    pub bind_no: u16,
    /// The backend handling the transaction, once chosen.
    pub backend: Option<&'a dyn super::view::BackendView>,
    /// The server that took the request, once chosen.
    pub server: Option<&'a str>,
    /// All backends by name (for `nbsrv(<name>)`, `be_conn(<name>)`).
    pub backends: &'a dyn super::view::Backends,
    /// The body bytes received so far of the message the rules analyse: the request's
    /// (`req.body` after `wait-for-body`), or in response rules the response's (`res.body`;
    /// no request fetch is allowed there).
    pub body: &'a [u8],
    /// `body` is still chunk-framed (a response's not waited for: `res.body` decodes it).
    pub body_chunked: bool,
    /// The client connection, for its TLS facts (`ssl_fc*`, `ssl_c_*`).
    pub client: Option<&'a crate::connection::Stream>,
    /// The client connection's TLS as `fulcrum explain` is told it (no `client` then).
    pub told_tls: Option<&'a crate::tls::facts::Told<'a>>,
    /// The request came over HTTP/2 (`req.ver`, `%HV`).
    pub h2: bool,
    /// The bytes waiting at the start of the connection (`req.ssl_sni`, `req.len`).
    pub payload: &'a [u8],
    /// The PROXY protocol header the connection opened with (`fc_pp_*`).
    pub pp: Option<&'a crate::connection::proxy::Header>,
    /// The server connection, once there is one (`ssl_bc*`).
    pub server_stream: Option<crate::tls::facts::ServerSide<'a>>,
    /// Set while `payload` may still grow (an inspection delay runs): a fetch whose answer
    /// could change with more data (`req.len`, a `req.payload` beyond the bytes there,
    /// `WAIT_END`) marks it, and a rule that does not match then waits (HAProxy's
    /// `SMP_F_MAY_CHANGE`).
    pub more: Option<&'a std::cell::Cell<bool>>,
    /// The algorithm the response is compressed with (`res.comp`, `res.comp_algo`).
    pub comp: Option<fulcrum_config::compression::CompAlgo>,
    /// `mode tcp` inspection: `req` is `None` because the first bytes are not yet a whole
    /// HTTP request head, but may become one (a fetch reading the request then waits).
    pub raw_pending: bool,
}

impl<'a> Ctx<'a> {
    /// What a global `set-var` sees: no connection, no proxy; process variables.
    pub fn process(
        proc_vars: &'a ProcVars,
        backends: &'a dyn super::view::Backends,
        vars: &'a Vars,
    ) -> Self {
        Ctx {
            src: None,
            dst: None,
            req: None,
            resp: None,
            vars,
            proc_vars,
            frontend: "",
            fe: None,
            bind_no: 0,
            backend: None,
            server: None,
            backends,
            body: &[],
            body_chunked: false,
            client: None,
            told_tls: None,
            h2: false,
            payload: &[],
            pp: None,
            server_stream: None,
            more: None,
            comp: None,
            raw_pending: false,
        }
    }

    /// The same context over other variables.
    pub fn with_vars<'v>(&self, vars: &'v Vars) -> Ctx<'v>
    where
        'a: 'v,
    {
        let (src, dst) = vars.addrs.as_ref().map_or((self.src, self.dst), |a| (a.src, a.dst));
        Ctx { vars, src, dst, ..*self }
    }
}

/// A compiled converter.
#[derive(Debug)]
pub enum Conv {
    /// `set-var(<name>[,<conditions>])`: the sample passes on unchanged.
    SetVar {
        scope: cfg::VarScope,
        name: Box<str>,
        conds: u8,
    },
    Hex,
    Lower,
    Upper,
    Field {
        index: i32,
        delims: Box<[u8]>,
        count: Option<i32>,
    },
    Word {
        index: i32,
        delims: Box<[u8]>,
        count: Option<i32>,
    },
    Regsub(Regsub),
    Map {
        map: Arc<super::maps::LiveMap>,
        kind: cfg::MapMatch,
        default: Option<Box<str>>,
    },
    Pure(cfg::PureConv),
    Text(cfg::TextConv),
    Var(cfg::VarConv),
    /// `in_table`, `table_*`.
    Table {
        what: cfg::TableConv,
        table: Arc<crate::stick::Table>,
    },
    /// `concat(...)`.
    Concat {
        start: Box<str>,
        var: Option<(cfg::VarScope, Box<str>)>,
        end: Box<str>,
    },
    /// `add(<var>)` and its siblings.
    ArithVar {
        op: cfg::ArithOp,
        scope: cfg::VarScope,
        name: Box<str>,
    },
}

/// A compiled sample expression.
#[derive(Debug)]
pub struct Expr {
    pub fetch: cfg::Fetch,
    pub convs: Vec<Conv>,
    /// The stick table a stick-counter fetch reads (resolved once).
    pub table: Option<Arc<crate::stick::Table>>,
    /// The userlist `http_auth()` and `http_auth_group()` check against.
    pub users: Option<Arc<crate::auth::Userlist>>,
}

impl Expr {
    /// The sample for log-format strings and variables: the last occurrence of multi-valued
    /// fetches, converters applied. `None` when the fetch finds nothing.
    pub fn eval<'a>(&self, ctx: &Ctx<'a>) -> Option<Value<'a>> {
        let mut last = None;
        self.fetch_each(ctx, true, &mut |v| {
            last = Some(v);
            false
        });
        self.convert(last?, ctx)
    }

    /// Calls `f` with each occurrence (ACLs try every occurrence), converters applied, until it
    /// returns true. Returns whether it did.
    pub fn any<'a>(&self, ctx: &Ctx<'a>, f: &mut dyn FnMut(&Value<'_>) -> bool) -> bool {
        self.fetch_each(ctx, false, &mut |v| match self.convert(v, ctx) {
            Some(v) => f(&v),
            None => false,
        })
    }

    fn fetch_each<'a>(
        &self,
        ctx: &Ctx<'a>,
        last_only: bool,
        f: &mut dyn FnMut(Value<'a>) -> bool,
    ) -> bool {
        match &self.fetch {
            cfg::Fetch::Sc(_) | cfg::Fetch::TableSize { .. } => {
                super::stick::fetch(&self.fetch, self.table.as_ref(), ctx).is_some_and(f)
            }
            cfg::Fetch::HttpAuth { .. } | cfg::Fetch::HttpAuthGroup { .. } => {
                let (Some(list), Some(req)) = (&self.users, ctx.req) else { return false };
                let user = req
                    .header(b"authorization")
                    .and_then(crate::auth::basic)
                    .and_then(|(u, p)| list.check(&u, &p).map(|user| user.groups.clone()));
                match (&self.fetch, user) {
                    (cfg::Fetch::HttpAuth { .. }, u) => f(Value::Bool(u.is_some())),
                    (_, Some(groups)) => {
                        groups.into_iter().any(|g| f(Value::Str(Cow::Owned(g.into_bytes()))))
                    }
                    (_, None) => false,
                }
            }
            fetch => fetch_each(fetch, ctx, last_only, f),
        }
    }

    fn convert<'a>(&self, mut v: Value<'a>, ctx: &Ctx<'_>) -> Option<Value<'a>> {
        for c in &self.convs {
            v = match c {
                Conv::Concat { start, var, end } => {
                    let mut out = v.as_bytes().into_owned();
                    out.extend_from_slice(start.as_bytes());
                    if let Some(x) = var.as_ref().and_then(|(sc, n)| var_value(ctx, *sc, n)) {
                        out.extend_from_slice(&x.as_bytes());
                    }
                    out.extend_from_slice(end.as_bytes());
                    Value::Str(Cow::Owned(out))
                }
                Conv::ArithVar { op, scope, name } => {
                    let b = var_value(ctx, *scope, name)?.as_int()?;
                    Value::Int(super::convert::arith(*op, v.as_int()?, b))
                }
                // HAProxy's converter fails when a condition refuses the store.
                Conv::SetVar { scope, name, conds } => {
                    let owned = v.clone().into_owned();
                    if *scope == cfg::VarScope::Proc {
                        if !ctx.proc_vars.set_if(name, owned, *conds) {
                            return None;
                        }
                    } else {
                        let (exists, cur) = ctx.vars.lookup(*scope, name);
                        let (create, store) = super::vars::decide(exists, cur, &owned, *conds);
                        if create || store {
                            let mut q = ctx.vars.pending.try_borrow_mut().ok()?;
                            q.push((*scope, name.clone(), owned, *conds));
                        }
                        if !store {
                            return None;
                        }
                    }
                    v
                }
                Conv::Var(c) => super::convert_text::var_conv(c, v, ctx)?,
                c => convert(c, v)?,
            };
        }
        Some(v)
    }
}

/// A variable's value (`proc.` ones from the process's store).
pub(super) fn var_value(ctx: &Ctx<'_>, scope: cfg::VarScope, name: &str) -> Option<Value<'static>> {
    if scope == cfg::VarScope::Proc {
        ctx.proc_vars.get(name)
    } else {
        ctx.vars.get(scope, name).cloned()
    }
}

/// Upper-case hexadecimal digits.
const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// `bytes` in upper-case hexadecimal (the `hex` converter's text).
pub(crate) fn upper_hex(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.extend_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
    }
    out
}

fn convert<'a>(c: &Conv, v: Value<'a>) -> Option<Value<'a>> {
    match c {
        Conv::Pure(p) => return super::convert::pure(p, v),
        Conv::Text(t) => return super::convert_text::text(t, v),
        Conv::Table { what, table } => return super::stick::convert(*what, table, &v),
        _ => {}
    }
    let s = match (c, v) {
        // HAProxy casts an integer to binary as its 8 big-endian bytes.
        (Conv::Hex, Value::Int(i)) => Cow::Owned(i.to_be_bytes().to_vec()),
        (_, Value::Str(s)) => s,
        (_, other) => Cow::Owned(other.as_bytes().into_owned()),
    };
    Some(match c {
        Conv::Hex => Value::Str(Cow::Owned(upper_hex(&s))),
        Conv::Lower => {
            if s.iter().any(u8::is_ascii_uppercase) {
                Value::Str(Cow::Owned(s.to_ascii_lowercase()))
            } else {
                Value::Str(s)
            }
        }
        Conv::Upper => {
            if s.iter().any(u8::is_ascii_lowercase) {
                Value::Str(Cow::Owned(s.to_ascii_uppercase()))
            } else {
                Value::Str(s)
            }
        }
        Conv::Field { index, delims, count } => {
            sub_slice(s, |b| fulcrum_pattern::field(b, *index, delims, *count))?
        }
        Conv::Word { index, delims, count } => {
            sub_slice(s, |b| fulcrum_pattern::word(b, *index, delims, *count))?
        }
        Conv::Regsub(r) => {
            let mut out = Vec::new();
            r.apply(&s, &mut out);
            Value::Str(Cow::Owned(out))
        }
        Conv::Pure(_)
        | Conv::Text(_)
        | Conv::Var(_)
        | Conv::Table { .. }
        | Conv::ArithVar { .. }
        | Conv::SetVar { .. }
        | Conv::Concat { .. } => return None,
        Conv::Map { map, kind, default } => {
            let found = map.with(|map| {
                let v = match kind {
                    cfg::MapMatch::Ip => std::str::from_utf8(&s)
                        .ok()
                        .and_then(|t| t.parse().ok())
                        .and_then(|ip| map.lookup_ip(ip)),
                    cfg::MapMatch::Int => std::str::from_utf8(&s)
                        .ok()
                        .and_then(|t| t.trim().parse().ok())
                        .and_then(|i| map.lookup_int(i)),
                    cfg::MapMatch::Regm => {
                        return map
                            .lookup_regm(&s)
                            .or_else(|| default.as_deref().map(|d| d.as_bytes().to_vec()));
                    }
                    _ => map.lookup(&s),
                };
                v.or(default.as_deref()).map(|out| out.as_bytes().to_vec())
            });
            Value::Str(Cow::Owned(found?))
        }
    })
}

/// Keeps a borrowed sample borrowed when the converter returns a part of it.
fn sub_slice<'a>(
    s: Cow<'a, [u8]>,
    f: impl for<'b> Fn(&'b [u8]) -> Option<&'b [u8]>,
) -> Option<Value<'a>> {
    Some(match s {
        Cow::Borrowed(b) => Value::Str(Cow::Borrowed(f(b)?)),
        Cow::Owned(o) => Value::Str(Cow::Owned(f(&o)?.to_vec())),
    })
}

/// Calls `f` for each occurrence the fetch finds (for single-valued fetches, at most once),
/// until `f` returns true. `last_only`: multi-valued fetches give their last occurrence only.
/// Each family of fetches is read by its own module; constants, time and random numbers here.
fn fetch_each<'a>(
    fetch: &cfg::Fetch,
    ctx: &Ctx<'a>,
    last_only: bool,
    f: &mut dyn FnMut(Value<'a>) -> bool,
) -> bool {
    use cfg::Fetch::*;
    if ctx.raw_pending && ctx.req.is_none() {
        if let Some(more) = ctx.more.filter(|_| reads_request(fetch)) {
            // `mode tcp`: the first bytes may still become an HTTP request.
            more.set(true);
            return false;
        }
    }
    match fetch {
        Src | SrcPort | Dst | DstPort | Fc(_) | SoName | Tls(_) | Pp(_) | Payload(_) | WaitEnd
        | FcErr | FcErrStr | Bc(_) | TlsOnly => conn::fetch(fetch, ctx, f),
        IntOf(inner) => {
            fetch_each(inner, ctx, last_only, &mut |v| f(Value::Int(strl2ic(&v.as_bytes()))))
        }
        Meth(m) => f(Value::Str(Cow::Owned(m.as_bytes().to_vec()))),
        Path
        | Url
        | Query
        | Method
        | ReqVer
        | UrlParam { .. }
        | PathQ
        | ReqLine(_)
        | Base
        | Status
        | ResVer
        | ResComp
        | ResCompAlgo
        | ResCacheHit
        | ResCacheName
        | ReqBody
        | ReqBodyLen
        | ReqBodySize
        | ReqBodyParam { .. }
        | ResBody
        | ResBodyLen
        | ResBodySize
        | BaseQ
        | HostPathHash { .. }
        | UrlAddr { .. }
        | ResLineVersion
        | ProtoHttp => message::fetch(fetch, ctx, f),
        Hdr { .. }
        | ResHdr { .. }
        | HdrCnt { .. }
        | HdrIp { .. }
        | Fhdr { .. }
        | ResFhdr { .. }
        | FhdrCnt { .. }
        | ReqHdrs
        | AuthPart(_)
        | ResHdrCnt { .. }
        | ResHdrIp { .. }
        | ResFhdrCnt { .. }
        | ResHdrs
        | HdrNames { .. }
        | HdrsBin { .. }
        | AuthBearer { .. } => headers::fetch(fetch, ctx, last_only, f),
        Cook { .. } | CookCnt { .. } | CookVal { .. } | ResCook { .. } | ResCookCnt { .. } => {
            cookies::fetch(fetch, ctx, f)
        }
        NbSrv { .. }
        | FeConn
        | LastRule { .. }
        | BeConn { .. }
        | BeSessRate { .. }
        | ConnSlots { .. }
        | Queue { .. }
        | AvgQueue { .. }
        | SrvIsUp { .. }
        | SrvConn { .. }
        | Var { .. }
        | SrvId
        | HttpFirstReq
        | FeName
        | BeName
        | SrvName
        | UniqueId
        | Captured { .. }
        | Fe(_)
        | Be { .. }
        | Srv { .. }
        | Env(_)
        | Hostname
        | Thread
        | Stopping => state::fetch(fetch, ctx, f),
        IsLocal { .. } | FcHttpMajor | FcRcvdProxy | TcpInfo { .. } => conn::fetch(fetch, ctx, f),
        DateIn { offset, micro } => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            let t = if *micro { now.as_micros() } else { now.as_millis() } as i64;
            f(Value::Int(t.wrapping_add(*offset)))
        }
        DateUs => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            f(Value::Int(i64::from(now.subsec_micros())))
        }
        AlwaysTrue => f(Value::Bool(true)),
        AlwaysFalse => f(Value::Bool(false)),
        Str(s) => f(Value::Str(Cow::Owned(s.as_bytes().to_vec()))),
        Bin(v) => f(Value::Str(Cow::Owned(v.clone()))),
        Uuid => f(Value::Str(Cow::Owned(crate::random::uuid4()))),
        Int(i) => f(Value::Int(*i)),
        Bool(b) => f(Value::Bool(*b)),
        IpConst(ip) => f(Value::Ip(*ip)),
        HttpAuth { .. } | HttpAuthGroup { .. } => false, // read by `Expr::fetch_each`
        Sc(_) | TableSize { .. } => false,               // read by `Expr::fetch_each`
        Date { offset } => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64);
            f(Value::Int(now + offset))
        }
        Rand { range } => {
            let r = crate::random::u64();
            f(Value::Int(match range {
                Some(n) if *n > 0 => ((u128::from(r as u32) * u128::from(*n)) >> 32) as i64,
                _ => i64::from(r as u32),
            }))
        }
    }
}

/// Whether a fetch reads the request (`mode tcp`: parsed from the first bytes).
#[cold]
fn reads_request(fetch: &cfg::Fetch) -> bool {
    use cfg::sample::Avail;
    matches!(cfg::acl::fetch_avail(fetch), Avail::Request | Avail::Method | Avail::Message)
}

/// HAProxy's `strl2ic`: an optional `-`, then each byte's distance from `0` accumulated in
/// base 10 until one is above `9` (bytes below `0` are not a stop: HAProxy adds them too), in
/// 32-bit arithmetic.
pub(crate) fn strl2ic(s: &[u8]) -> i64 {
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    let mut i: i32 = 0;
    for &c in digits {
        let j = i32::from(c as i8) - i32::from(b'0');
        if j > 9 {
            break;
        }
        let k = i.wrapping_mul(10);
        i = if neg { k.wrapping_sub(j) } else { k.wrapping_add(j) };
    }
    i64::from(i)
}

/// What a fetch calls with each value it finds, until it returns true.
type Each<'f, 'a> = dyn FnMut(Value<'a>) -> bool + 'f;

/// Calls `f` with the value of a single-valued fetch, if it found one.
fn one<'a>(v: Option<Value<'a>>, f: &mut dyn FnMut(Value<'a>) -> bool) -> bool {
    match v {
        Some(v) => f(v),
        None => false,
    }
}

/// A sample borrowing bytes of the transaction.
fn borrowed(x: &[u8]) -> Value<'_> {
    Value::Str(Cow::Borrowed(x))
}

/// Loads (once) the map file a converter names.
pub type MapLoader<'a> =
    dyn FnMut(&std::path::Path, cfg::MapMatch) -> Result<Arc<super::maps::LiveMap>, String> + 'a;

/// Finds a stick table by name (`None`: the proxy's own).
pub type TableFinder<'a> = dyn Fn(Option<&str>) -> Result<Arc<crate::stick::Table>, String> + 'a;

/// Compiles a sample expression; `load_map` loads (once) the map file a converter names,
/// `table` finds the stick tables it reads.
pub fn compile(
    e: &cfg::SampleExpr,
    load_map: &mut MapLoader<'_>,
    table: &TableFinder<'_>,
    userlist: &dyn Fn(&str) -> Result<Arc<crate::auth::Userlist>, String>,
) -> Result<Expr, String> {
    let mut convs = Vec::with_capacity(e.converters.len());
    for c in &e.converters {
        convs.push(match c {
            cfg::Converter::Hex => Conv::Hex,
            cfg::Converter::Lower => Conv::Lower,
            cfg::Converter::Upper => Conv::Upper,
            cfg::Converter::Field { index, delims, count } => {
                Conv::Field { index: *index, delims: delims.as_bytes().into(), count: *count }
            }
            cfg::Converter::Word { index, delims, count } => {
                Conv::Word { index: *index, delims: delims.as_bytes().into(), count: *count }
            }
            cfg::Converter::Regsub { regex, subst, flags } => Conv::Regsub(
                Regsub::new(regex, subst, flags)
                    .map_err(|err| format!("invalid regex '{regex}' in regsub: {err}"))?,
            ),
            cfg::Converter::Map { kind, file, default } => Conv::Map {
                map: load_map(file, *kind)?,
                kind: *kind,
                default: default.as_deref().map(Into::into),
            },
            cfg::Converter::Pure(p) => Conv::Pure(*p),
            cfg::Converter::Text(t) => Conv::Text(t.clone()),
            cfg::Converter::Var(t) => {
                // `jwt_verify`'s key file, read now (HAProxy's `jwt_tree_load_cert()`).
                if let cfg::VarConv::JwtVerify { key: cfg::LitOrVar::Lit(path), .. } = t {
                    super::jwt::load_key(path);
                }
                Conv::Var(t.clone())
            }
            cfg::Converter::Concat { start, var, end } => Conv::Concat {
                start: start.as_str().into(),
                var: var.as_ref().map(|(sc, n)| (*sc, n.as_str().into())),
                end: end.as_str().into(),
            },
            cfg::Converter::ArithVar { op, scope, name } => {
                Conv::ArithVar { op: *op, scope: *scope, name: name.as_str().into() }
            }
            cfg::Converter::SetVar { scope, name, conds } => {
                Conv::SetVar { scope: *scope, name: name.as_str().into(), conds: *conds }
            }
            cfg::Converter::Table { what, table: name } => {
                Conv::Table { what: *what, table: table(Some(name))? }
            }
        });
    }
    let table = match &e.fetch {
        cfg::Fetch::TableSize { table: t, .. }
        | cfg::Fetch::Sc(cfg::ScFetch { src: cfg::ScSource::Src { table: t }, .. }) => {
            Some(table(t.as_deref())?)
        }
        cfg::Fetch::Sc(cfg::ScFetch {
            src: cfg::ScSource::Slot { table: Some(t), .. }, ..
        }) => Some(table(Some(t))?),
        _ => None,
    };
    let users = match &e.fetch {
        cfg::Fetch::HttpAuth { userlist: u } | cfg::Fetch::HttpAuthGroup { userlist: u } => {
            Some(userlist(u)?)
        }
        _ => None,
    };
    Ok(Expr { fetch: e.fetch.clone(), convs, table, users })
}

/// A server's `sni` expression beyond the forms `tls::Sni` reads itself, compiled as rules
/// compile it (no maps, stick tables or userlists) and evaluated on the connection being
/// opened: its request, addresses and client connection.
pub fn sni_expr(expr: &str) -> Result<Box<dyn crate::tls::SniExpr>, String> {
    let (parsed, end) = cfg::sample::parse(expr, cfg::sample::End::Input).map_err(|e| e.plain())?;
    if end != expr.len() {
        return Err(format!("unexpected text after the expression: '{}'", &expr[end..]));
    }
    let compiled = compile(
        &parsed.expr,
        &mut |_, _| Err("maps are not supported in 'sni'".to_string()),
        &|_| Err("stick tables are not supported in 'sni'".to_string()),
        &|_| Err("userlists are not supported in 'sni'".to_string()),
    )?;
    Ok(Box::new(CompiledSni(compiled)))
}

#[derive(Debug)]
struct CompiledSni(Expr);

impl crate::tls::SniExpr for CompiledSni {
    fn value(&self, open: &crate::connection::Opening<'_>) -> Option<String> {
        static PROC: std::sync::OnceLock<ProcVars> = std::sync::OnceLock::new();
        let vars = Vars::default();
        let ctx = Ctx {
            src: open.src,
            dst: open.dst,
            req: open.req,
            client: open.client,
            ..Ctx::process(PROC.get_or_init(ProcVars::default), &super::view::NoBackends, &vars)
        };
        let v = self.0.eval(&ctx)?;
        let text = String::from_utf8_lossy(&v.as_bytes()).into_owned();
        (!text.is_empty()).then_some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::strl2ic;

    #[test]
    fn strl2ic_reads_integers_as_haproxy_including_its_quirks() {
        assert_eq!(strl2ic(b"12abc"), 12);
        assert_eq!(strl2ic(b"-12x"), -12);
        assert_eq!(strl2ic(b""), 0);
        assert_eq!(strl2ic(b"-"), 0);
        // Bytes below '0' do not stop HAProxy's loop: they add their (negative) distance.
        assert_eq!(strl2ic(b" 5"), -155);
        assert_eq!(strl2ic(b"+3"), -47);
        // 32-bit arithmetic, wrapping as HAProxy's `int`.
        assert_eq!(strl2ic(b"4294967297"), 1);
    }
}
