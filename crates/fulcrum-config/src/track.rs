//! `server ... track [<backend>/]<server>`: which server a tracking server follows, checked
//! once every section is read, in HAProxy 2.6's order and words (`srv_apply_track()`): the
//! backend and the server must exist, the tracked one must be checked (or track another),
//! and no chain may loop. Disabled proxies are not checked, as in HAProxy.

use crate::diag::Diagnostic;
use crate::model::{Config, Proxy, Server, Span};

/// The server `text` (`[<backend>/]<server>`, written in proxy `p`) names: its proxy's index
/// in `config.proxies` and its own index, or HAProxy's message.
pub fn resolve(config: &Config, p: &Proxy, text: &str) -> Result<(usize, usize), String> {
    let (pname, sname) = match text.rsplit_once('/') {
        Some((px, s)) => (Some(px), s),
        None => (None, text),
    };
    let px = match pname {
        Some(name) => config
            .proxies
            .iter()
            .position(|q| q.kind.is_backend() && q.name == name)
            .ok_or_else(|| format!("unable to find required proxy '{name}' for tracking."))?,
        None => config.proxies.iter().position(|q| std::ptr::eq(q, p)).unwrap_or(0),
    };
    let idx = config.proxies[px]
        .servers
        .iter()
        .position(|s| s.name == sname)
        .ok_or_else(|| format!("unable to find required server '{sname}' for tracking."))?;
    Ok((px, idx))
}

/// Every `track` of the configuration, with HAProxy's alerts.
pub fn check(config: &Config, out: &mut Vec<Diagnostic>) {
    // The links resolved so far, as HAProxy's `srv->track` while it walks the proxies.
    let mut resolved: Vec<Vec<Option<(usize, usize)>>> =
        config.proxies.iter().map(|p| vec![None; p.servers.len()]).collect();
    for (pi, p) in config.proxies.iter().enumerate() {
        if p.disabled || !p.kind.is_backend() {
            continue;
        }
        for (si, s) in p.servers.iter().enumerate() {
            let Some(text) = &s.track else { continue };
            match link(config, &resolved, p, (pi, si), text) {
                Ok(to) => resolved[pi][si] = Some(to),
                Err(msg) => out.push(alert(p, s, &msg)),
            }
        }
    }
}

fn link(
    config: &Config,
    resolved: &[Vec<Option<(usize, usize)>>],
    p: &Proxy,
    me: (usize, usize),
    text: &str,
) -> Result<(usize, usize), String> {
    let (px, idx) = resolve(config, p, text)?;
    let q = &config.proxies[px];
    let target = &q.servers[idx];
    if !target.check.enabled && !target.agent.enabled && target.track.is_none() {
        return Err(format!(
            "unable to use {}/{} for tracking as it does not have any check nor agent enabled.",
            q.name, target.name
        ));
    }
    // Along the links already made from the tracked server: back to this one is a loop.
    let mut at = resolved[px][idx];
    let mut steps = 0;
    while let Some(next) = at.filter(|n| *n != me) {
        at = resolved[next.0][next.1];
        steps += 1;
        if steps > resolved.len() * 64 {
            break;
        }
    }
    if (px, idx) == me || at == Some(me) {
        let looped = if (px, idx) == me { &target.name } else { &p.servers[me.1].name };
        return Err(format!(
            "unable to track {}/{} as it belongs to a tracking chain looping back to {}/{looped}.",
            q.name, target.name, q.name
        ));
    }
    Ok((px, idx))
}

/// HAProxy's post-parse form: `[file:line] : 'server be/srv' : ...` (no "parsing").
fn alert(p: &Proxy, s: &Server, msg: &str) -> Diagnostic {
    let at: &Span = &s.span;
    Diagnostic::alert(None, format!("[{at}] : 'server {}/{}' : {msg}", p.name, s.name))
}
