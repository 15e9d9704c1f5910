//! Server-state files (`server-state-file`, `server-state-base`, `load-server-state-from-file`,
//! `server-state-file-name`): at start-up, the states another process saved with `show servers
//! state` are read and applied to the servers of the same backend and name, through the
//! state entry point (`Backend::change_server`), before traffic starts: administrative state
//! (maintenance, drain), runtime weight, checks turned off, a server that was DOWN, and the
//! time of its last change.
//!
//! Addresses and ports stay as the configuration says (HAProxy 2.6 may take them from the
//! file, which sent traffic to old addresses after a configuration change). Must not touch:
//! sockets.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use fulcrum_config as cfg;

use crate::backend::status::Change;
use crate::backend::Backend;
use crate::server::state::Admin;

/// One server's line of a state file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedServer {
    pub backend: String,
    pub server: String,
    pub op_state: u8,
    pub admin: u8,
    pub uweight: u32,
    pub iweight: u32,
    pub since_change: u64,
    pub check_health: u32,
    pub check_state: u8,
    pub agent_state: u8,
}

/// Parses a state file (version 1, as `show servers state` writes it); lines it cannot read
/// are skipped and counted.
pub fn parse(text: &str) -> (Vec<SavedServer>, usize) {
    let mut out = Vec::new();
    let mut bad = 0;
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some("1") {
        return (out, text.lines().count());
    }
    for line in lines {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let w: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| w.get(i).and_then(|v| v.parse::<u64>().ok());
        let small = |i: usize| num(i).and_then(|v| u8::try_from(v).ok());
        // HAProxy's bounds: weights up to 256; anything else makes the line unreadable.
        let weight = |i: usize| num(i).filter(|&v| v <= 256).map(|v| v as u32);
        let parsed = (|| {
            Some(SavedServer {
                backend: w.get(1)?.to_string(),
                server: w.get(3)?.to_string(),
                op_state: small(5).filter(|&v| v <= 3)?,
                admin: small(6)?,
                uweight: weight(7)?,
                iweight: weight(8)?,
                since_change: num(9)?.min(u64::from(u32::MAX)),
                check_health: num(12).and_then(|v| u32::try_from(v).ok())?,
                check_state: small(13)?,
                agent_state: small(14)?,
            })
        })();
        match parsed {
            Some(s) => out.push(s),
            None => bad += 1,
        }
    }
    (out, bad)
}

fn resolve(base: Option<&Path>, file: &Path) -> PathBuf {
    match base {
        Some(b) if file.is_relative() => b.join(file),
        _ => file.to_path_buf(),
    }
}

/// Applies the state files the configuration asks for; returns warnings to print.
pub fn load(
    global: &cfg::Global,
    proxies: &[cfg::Proxy],
    backends: &[Arc<Backend>],
) -> Vec<String> {
    let mut warnings = Vec::new();
    let base = global.server_state_base.as_deref();
    let mut global_file: Option<Vec<SavedServer>> = None;
    for p in proxies {
        let Some(be) = backends.iter().find(|b| b.name == p.name) else { continue };
        let saved = match p.load_server_state {
            cfg::ServerStateLoad::None => continue,
            cfg::ServerStateLoad::Global => {
                let Some(path) = &global.server_state_file else {
                    warnings.push(format!("backend '{}': 'load-server-state-from-file global' without a global 'server-state-file': nothing loaded.", p.name));
                    continue;
                };
                if global_file.is_none() {
                    global_file = Some(read(&resolve(base, path), &mut warnings));
                }
                global_file.clone().unwrap_or_default()
            }
            cfg::ServerStateLoad::Local => {
                let name = p.server_state_file_name.as_deref().unwrap_or(&p.name);
                read(&resolve(base, Path::new(name)), &mut warnings)
            }
        };
        apply(be, saved.iter().filter(|s| s.backend == be.name));
    }
    warnings
}

fn read(path: &Path, warnings: &mut Vec<String>) -> Vec<SavedServer> {
    match crate::files::read_string(path) {
        Ok(text) => {
            let (saved, bad) = parse(&text);
            if bad > 0 {
                warnings.push(format!(
                    "server-state file '{}': {bad} line(s) could not be read and were skipped.",
                    path.display()
                ));
            }
            saved
        }
        // As HAProxy: a missing file is not an error (the first start has none).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            warnings.push(format!("Can't open server state file '{}': {e}", path.display()));
            Vec::new()
        }
    }
}

/// Applies the saved lines of one backend.
pub fn apply<'a>(be: &Backend, saved: impl Iterator<Item = &'a SavedServer>) {
    for s in saved {
        let Some(idx) = be.server_index(&s.server) else { continue };
        let (iweight, has_check, has_agent) = {
            let r = be.servers[idx].state();
            (r.iweight, r.check.is_some(), r.agent.is_some())
        };
        if s.admin & Admin::FMAINT != 0 {
            be.change_server(idx, Change::SetAdmin { flag: Admin::FMAINT, cause: String::new() });
        }
        if s.admin & Admin::FDRAIN != 0 {
            be.change_server(idx, Change::SetAdmin { flag: Admin::FDRAIN, cause: String::new() });
        }
        // A weight changed at run time, when the configuration's is still the one saved.
        if s.iweight == iweight && s.uweight != iweight {
            be.change_server(idx, Change::Weight(s.uweight));
        }
        // Check state bits (HAProxy's): 0x2 configured, 0x4 enabled.
        if has_check && s.check_state & 0x2 != 0 && s.check_state & 0x4 == 0 {
            be.change_server(idx, Change::CheckEnabled { agent: false, on: false });
        }
        if has_agent && s.agent_state & 0x2 != 0 && s.agent_state & 0x4 == 0 {
            be.change_server(idx, Change::CheckEnabled { agent: true, on: false });
        }
        be.change_server(
            idx,
            Change::Restore {
                down: s.op_state == 0,
                health: s.check_health,
                since: Duration::from_secs(s.since_change),
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn show_servers_state_output_reads_back() {
        let text = "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port\n\
                    3 be 1 s1 127.0.0.1 0 0 1 1 7 8 2 0 6 0 0 0 - 18081 - 0 0 - - 0\n\
                    3 be 2 s2 127.0.0.1 2 1 3 5 0 1 0 2 0 0 0 0 - 18082 - 0 0 - - 0\n\
                    3 be 3 s3 127.0.0.1 2 0 999 5 0 1 0 2 0 0 0 0 - 18082 - 0 0 - - 0\n\
                    garbage line\n";
        let (saved, bad) = parse(text);
        assert_eq!(bad, 2, "a weight over 256 and a garbage line");
        assert_eq!(saved.len(), 2);
        assert_eq!((saved[0].op_state, saved[0].check_health, saved[0].check_state), (0, 0, 6));
        assert_eq!((saved[1].admin, saved[1].uweight, saved[1].iweight), (1, 3, 5));
        assert!(parse("2\n3 be 1 s1").0.is_empty(), "only version 1 is read");
    }

    #[test]
    fn relative_names_are_found_in_the_base_directory() {
        assert_eq!(
            resolve(Some(Path::new("/var/state")), Path::new("be")),
            PathBuf::from("/var/state/be")
        );
        assert_eq!(resolve(Some(Path::new("/var/state")), Path::new("/x")), PathBuf::from("/x"));
        assert_eq!(resolve(None, Path::new("be")), PathBuf::from("be"));
    }
}
