//! `unix-bind` (global): the defaults of the UNIX sockets that proxies' `bind` lines create:
//! a path prefix, the file's mode and owner, read as HAProxy 2.6 reads them
//! (`cfg_parse_global()`, its messages), then applied to every proxy's UNIX `bind` that does
//! not set its own (not to `stats socket`, as in HAProxy). Names are looked up when the socket
//! is made.

use crate::args::{atol, Diags};
use crate::lexer::Line;
use crate::model::{BindAddr, Config, Global, UnixPerms, UserSpec};

/// The `unix-bind` settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnixBind {
    /// `prefix <path>`: put before every UNIX `bind` path.
    pub prefix: Option<String>,
    /// `mode`, `uid`/`user`, `gid`/`group`.
    pub perms: UnixPerms,
}

/// `unix-bind [prefix <p>] [mode <m>] [uid <n>] [gid <n>] [user <u>] [group <g>]`.
pub fn parse(g: &mut Global, line: &Line, diags: &mut Diags) {
    let u = &mut g.unix_bind;
    let mut i = 1;
    while i < line.words.len() {
        let val = line.arg(i + 1);
        match line.arg(i) {
            "prefix" if u.prefix.is_some() => {
                diags.alert_continue(line, "unix-bind 'prefix' already specified. Continuing.");
            }
            "prefix" if val.is_empty() => {
                return diags.alert(line, "unix_bind 'prefix' expects a path as an argument.");
            }
            "prefix" => u.prefix = Some(val.to_string()),
            // As HAProxy reads them (`strtol(.., 8)`, `atol`): what does not parse is 0.
            "mode" => u.perms.mode = Some(octal(val)),
            "uid" => u.perms.owner = Some(UserSpec::Id(atol(val).clamp(0, u32::MAX.into()) as u32)),
            "gid" => u.perms.group = Some(UserSpec::Id(atol(val).clamp(0, u32::MAX.into()) as u32)),
            "user" => u.perms.owner = Some(UserSpec::Name(val.to_string())),
            "group" => u.perms.group = Some(UserSpec::Name(val.to_string())),
            _ => {
                return diags.alert(line, "'unix-bind' only supports the 'prefix', 'mode', 'uid', 'gid', 'user' and 'group' options.")
            }
        }
        i += 2;
    }
}

/// The leading octal digits of `text` (`strtol(text, NULL, 8)`), 0 without any.
fn octal(text: &str) -> u32 {
    let t = text.trim_start();
    let digits: String = t.chars().take_while(|c| ('0'..='7').contains(c)).collect();
    u32::from_str_radix(&digits, 8).unwrap_or(0) & 0o7777
}

/// Applies the global `unix-bind` settings to the proxies' UNIX binds.
pub fn apply(config: &mut Config) {
    let u = config.global.unix_bind.clone();
    if u == UnixBind::default() {
        return;
    }
    for b in config.proxies.iter_mut().flat_map(|p| p.binds.iter_mut()) {
        if !b.addrs.iter().any(|a| matches!(a, BindAddr::Unix(_))) {
            continue;
        }
        if let Some(prefix) = &u.prefix {
            for a in b.addrs.iter_mut() {
                if let BindAddr::Unix(path) = a {
                    *path = format!("{prefix}{}", path.display()).into();
                }
            }
        }
        b.unix.mode = b.unix.mode.or(u.perms.mode);
        b.unix.owner = b.unix.owner.clone().or_else(|| u.perms.owner.clone());
        b.unix.group = b.unix.group.clone().or_else(|| u.perms.group.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::octal;

    #[test]
    fn modes_read_as_strtol_reads_them() {
        assert_eq!(octal("660"), 0o660);
        assert_eq!(octal("0770x"), 0o770);
        assert_eq!(octal("x"), 0);
        assert_eq!(octal("9"), 0);
    }
}
