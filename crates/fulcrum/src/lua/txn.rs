//! HAProxy's `txn` class for a script's action: `txn.http` (the request's and the response's
//! headers, method, path, query, URI, status), `txn:set_var`/`get_var`/`unset_var` in every
//! scope, `get_priv`/`set_priv`, `Info`/`log` and kin. The class is Lua (made once per state);
//! each call reaches the transaction through the accessor the action's runner installs for
//! one resume of its coroutine ([`dispatch`]), so nothing of the transaction outlives it.
//!
//! Must not touch: what the rules do with the action's result (`http::analyse::lua`).

use fulcrum_config as cfg;
use fulcrum_http::Head;
use mlua::{Lua, MultiValue, Value};

use crate::rules::sample::{ProcVars, Value as Sample, Vars};

/// What an action may reach of its transaction during one resume.
pub struct Access<'a> {
    pub req: &'a mut Head,
    /// The response, in `http-response` rules.
    pub resp: Option<&'a mut Head>,
    pub vars: &'a mut Vars,
    pub proc_vars: &'a ProcVars,
}

/// The class, in Lua: each method calls the accessor (`fulcrum.access` in the registry) with
/// its operation's name.
const CLASS: &str = r#"
local access = ...
local function call(...) return access()(...) end
local HTTP = {}
HTTP.__index = HTTP
for _, d in ipairs({"req", "res"}) do
  HTTP[d .. "_get_headers"] = function(self) return call("get_headers", d) end
  HTTP[d .. "_set_header"] = function(self, n, v) call("set_header", d, n, v) end
  HTTP[d .. "_add_header"] = function(self, n, v) call("add_header", d, n, v) end
  HTTP[d .. "_del_header"] = function(self, n) call("del_header", d, n) end
end
function HTTP:req_set_method(m) return call("set_method", m) end
function HTTP:req_set_path(p) return call("set_path", p) end
function HTTP:req_set_query(q) return call("set_query", q) end
function HTTP:req_set_uri(u) return call("set_uri", u) end
function HTTP:res_set_status(s, r) return call("set_status", s, r) end
local TXN = {}
TXN.__index = TXN
function TXN:set_var(n, v) return call("set_var", n, v) end
function TXN:get_var(n) return call("get_var", n) end
function TXN:unset_var(n) return call("unset_var", n) end
function TXN:get_priv() return self.__priv end
function TXN:set_priv(v) self.__priv = v end
function TXN:log(l, m) core.log(l, m) end
function TXN:Debug(m) core.Debug(m) end
function TXN:Info(m) core.Info(m) end
function TXN:Warning(m) core.Warning(m) end
function TXN:Alert(m) core.Alert(m) end
return function() return setmetatable({http = setmetatable({}, HTTP)}, TXN) end
"#;

/// Makes the class (`fulcrum.new_txn` in the registry: a function making a `txn` object).
pub fn install(lua: &Lua) -> mlua::Result<()> {
    let access = lua.create_function(|lua, ()| lua.named_registry_value::<Value>(ACCESS))?;
    let new: mlua::Function = lua.load(CLASS).set_name("=txn").call(access)?;
    lua.set_named_registry_value("fulcrum.new_txn", new)
}

/// Where the runner puts the accessor of the resume under way.
pub const ACCESS: &str = "fulcrum.access";

fn arg(args: &[Value], i: usize) -> Option<&Value> {
    args.get(i).filter(|v| !v.is_nil())
}

fn bytes(args: &[Value], i: usize) -> mlua::Result<Vec<u8>> {
    match arg(args, i) {
        Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
        Some(Value::Integer(n)) => Ok(n.to_string().into_bytes()),
        Some(Value::Number(n)) => Ok(n.to_string().into_bytes()),
        Some(v) => {
            Err(mlua::Error::RuntimeError(format!("string expected, got {}", v.type_name())))
        }
        None => Err(mlua::Error::RuntimeError("string expected, got no value".into())),
    }
}

/// One operation of the class on the transaction.
pub fn dispatch(lua: &Lua, a: &mut Access<'_>, args: MultiValue) -> mlua::Result<Value> {
    let args: Vec<Value> = args.into_iter().collect();
    let op = String::from_utf8_lossy(&bytes(&args, 0)?).into_owned();
    let failed = |e: fulcrum_http::EditError| mlua::Error::RuntimeError(format!("{e:?}"));
    match op.as_str() {
        "get_headers" => {
            let h = head_ref(a, &bytes(&args, 1)?)?;
            let t = lua.create_table()?;
            for (name, value) in h.headers() {
                let name = lua.create_string(name.to_ascii_lowercase())?;
                let list: mlua::Table = match t.get::<Value>(&name)? {
                    Value::Table(l) => l,
                    _ => {
                        let l = lua.create_table()?;
                        t.set(&name, &l)?;
                        l
                    }
                };
                list.raw_set(
                    list.raw_len() as i64 + i64::from(list.contains_key(0)?),
                    lua.create_string(value)?,
                )?;
            }
            Ok(Value::Table(t))
        }
        "set_header" | "add_header" | "del_header" => {
            let target = head_mut(a, &bytes(&args, 1)?)?;
            let name = bytes(&args, 2)?;
            match op.as_str() {
                "set_header" => target.set_header(&name, &bytes(&args, 3)?).map_err(failed)?,
                "add_header" => target.add_header(&name, &bytes(&args, 3)?).map_err(failed)?,
                _ => {
                    target.remove_header(&name);
                }
            }
            Ok(Value::Nil)
        }
        "set_method" => edited(a.req.set_method(&bytes(&args, 1)?)),
        "set_path" => edited(a.req.set_path(&bytes(&args, 1)?)),
        "set_query" => edited(a.req.set_query(Some(&bytes(&args, 1)?))),
        "set_uri" => edited(a.req.set_target(&bytes(&args, 1)?)),
        "set_status" => {
            let code = match arg(&args, 1) {
                Some(Value::Integer(n)) => *n,
                Some(Value::Number(n)) => *n as i64,
                _ => return Ok(Value::Boolean(false)),
            };
            let reason = arg(&args, 2).map(|_| bytes(&args, 2)).transpose()?;
            match (a.resp.as_deref_mut(), u16::try_from(code)) {
                (Some(r), Ok(c)) if (100..=999).contains(&c) => {
                    edited(r.set_status(c, reason.as_deref()))
                }
                _ => Ok(Value::Boolean(false)),
            }
        }
        "set_var" | "get_var" | "unset_var" => var(lua, a, &op, &args),
        _ => Err(mlua::Error::RuntimeError(format!("unknown operation '{op}'"))),
    }
}

fn edited(r: Result<(), fulcrum_http::EditError>) -> mlua::Result<Value> {
    Ok(Value::Boolean(r.is_ok()))
}

fn head_ref<'b>(a: &'b Access<'_>, d: &[u8]) -> mlua::Result<&'b Head> {
    match (d, a.resp.as_deref()) {
        (b"res", Some(r)) => Ok(r),
        (b"res", None) => Err(mlua::Error::RuntimeError("no response yet".into())),
        _ => Ok(&*a.req),
    }
}

fn head_mut<'b>(a: &'b mut Access<'_>, d: &[u8]) -> mlua::Result<&'b mut Head> {
    match (d, a.resp.as_deref_mut()) {
        (b"res", Some(r)) => Ok(r),
        (b"res", None) => Err(mlua::Error::RuntimeError("no response yet".into())),
        _ => Ok(&mut *a.req),
    }
}

/// `txn:set_var(name, value)`, `get_var(name)`, `unset_var(name)`: a name with its scope
/// (`txn.x`), as HAProxy's.
fn var(lua: &Lua, a: &mut Access<'_>, op: &str, args: &[Value]) -> mlua::Result<Value> {
    let name = String::from_utf8_lossy(&bytes(args, 1)?).into_owned();
    let Ok((scope, short)) = cfg::sample::parse_var_name(&name) else {
        return Ok(Value::Nil);
    };
    match op {
        "set_var" => {
            let v = match arg(args, 2) {
                Some(Value::Integer(n)) => Sample::Int(*n),
                Some(Value::Number(n)) => Sample::Int(*n as i64),
                Some(Value::Boolean(b)) => Sample::Bool(*b),
                Some(Value::String(s)) => Sample::Str(s.as_bytes().to_vec().into()),
                _ => return Ok(Value::Nil),
            };
            if scope == cfg::VarScope::Proc {
                a.proc_vars.set(&short, v);
            } else {
                a.vars.set_if(scope, &short, v, 0);
            }
            Ok(Value::Boolean(true))
        }
        "unset_var" => {
            if scope == cfg::VarScope::Proc {
                a.proc_vars.unset(&short);
            } else {
                a.vars.unset(scope, &short);
            }
            Ok(Value::Boolean(true))
        }
        _ => {
            let v = match scope {
                cfg::VarScope::Proc => a.proc_vars.get(&short),
                _ => a.vars.get(scope, &short).cloned(),
            };
            to_lua(lua, v.as_ref())
        }
    }
}

fn to_lua(lua: &Lua, v: Option<&Sample<'_>>) -> mlua::Result<Value> {
    Ok(match v {
        None => Value::Nil,
        Some(Sample::Int(n)) => Value::Integer(*n),
        Some(Sample::Bool(b)) => Value::Boolean(*b),
        Some(Sample::Str(s)) => Value::String(lua.create_string(&**s)?),
        Some(Sample::Ip(ip)) => Value::String(lua.create_string(ip.to_string())?),
    })
}
