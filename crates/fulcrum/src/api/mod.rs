//! The runtime API on `stats socket` listeners (HAProxy's CLI, management.txt §9.3): the
//! sockets' sessions (this module) and the commands (`commands`, `servers`).
//!
//! A session reads a line, runs the commands on it (several separated by `;`) and answers
//! each with its output and an empty line, then closes (non-interactive mode), unless the
//! client said `prompt`: then it answers each line with `> ` and stays until `quit`, the end
//! of its input or `stats timeout`. Each socket's `level` bounds what its sessions may do.
//! It also applies `stats maxconn`; `reload` asks the main loop.
//!
//! Sessions run on the main thread's event loop, not on the workers: a long `show stat`
//! never delays a request. Every server state change goes through `Backend::change_server`.
//! Must not touch: the workers' sessions (it only reads counters and asks the entry point).

mod commands;
pub mod maps;
pub mod servers;
pub mod tables;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use fulcrum_config::CliLevel;

use crate::shared::Shared;

/// One `stats socket`: its listening socket (opened before privileges were dropped) and
/// its level.
#[derive(Debug)]
pub struct ApiSocket {
    pub socket: socket2::Socket,
    pub level: CliLevel,
    pub unix: bool,
    /// Opened by `-S` (HAProxy's master CLI).
    pub master: bool,
}

/// What every runtime API session shares.
#[derive(Debug)]
pub struct Api {
    /// `stats timeout`.
    pub timeout: Duration,
    /// `stats maxconn` (per socket).
    pub maxconn: u32,
}

/// The current plan's state, as one command sees it.
pub struct View {
    pub shared: Arc<Shared>,
}

/// The state of one session.
pub struct Session {
    pub level: CliLevel,
    pub prompt: bool,
    pub timeout: Duration,
    pub quit: bool,
    /// `reload`, `add server` or `del server` was asked for: the session waits for the main
    /// loop's report.
    pub edit: Option<crate::runtime::Edit>,
    /// A `-S` (master CLI) socket: a leading `@<process>` word is accepted and skipped (this
    /// one process is every worker).
    pub master: bool,
    /// The lines after a command line ending with `<<`, up to an empty line.
    pub payload: Option<String>,
    /// `experimental-mode on`: experimental commands (`set var`) are allowed.
    pub experimental: bool,
}

/// Starts serving the sockets on the current event loop.
pub fn start(api: Arc<Api>, sockets: Vec<ApiSocket>) {
    for s in sockets {
        let api = Arc::clone(&api);
        tokio::spawn(async move {
            let (level, master) = (s.level, s.master);
            let active = Arc::new(AtomicU32::new(0));
            // An accept error (out of descriptors...) pauses the socket; it never ends it.
            let pause = || tokio::time::sleep(Duration::from_millis(100));
            if s.unix {
                let std: std::os::unix::net::UnixListener = s.socket.into();
                let Ok(l) = tokio::net::UnixListener::from_std(std) else { return };
                loop {
                    match l.accept().await {
                        Ok((conn, _)) => spawn(Arc::clone(&api), conn, level, master, &active),
                        Err(_) => pause().await,
                    }
                }
            } else {
                let std: std::net::TcpListener = s.socket.into();
                let Ok(l) = tokio::net::TcpListener::from_std(std) else { return };
                loop {
                    match l.accept().await {
                        Ok((conn, _)) => spawn(Arc::clone(&api), conn, level, master, &active),
                        Err(_) => pause().await,
                    }
                }
            }
        });
    }
}

fn spawn<S>(api: Arc<Api>, conn: S, level: CliLevel, master: bool, active: &Arc<AtomicU32>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + 'static,
{
    // `stats maxconn`: sessions over the limit are closed at once.
    if active.fetch_add(1, Ordering::Relaxed) >= api.maxconn {
        active.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    // The slot is given back however the session ends.
    struct Slot(Arc<AtomicU32>);
    impl Drop for Slot {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::Relaxed);
        }
    }
    let slot = Slot(Arc::clone(active));
    tokio::spawn(async move {
        let _slot = slot;
        serve(&api, conn, level, master).await;
    });
}

/// The longest command line (HAProxy's buffer).
const MAX_LINE: u64 = 16384;

/// Splits a line into commands at unescaped `;` (`\;` is a literal semicolon).
pub fn split_commands(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&';') => {
                out.last_mut().expect("one").push(';');
                chars.next();
            }
            ';' => out.push(String::new()),
            c => out.last_mut().expect("one").push(c),
        }
    }
    out
}

/// Asks the main loop for a reload or a server edit. A reload reports as HAProxy's master CLI
/// does: `Success=1` or `Success=0`, a `--` line, then its messages; an edit with HAProxy's
/// words.
async fn edit_report(edit: crate::runtime::Edit, out: &mut String) {
    let files = matches!(edit, crate::runtime::Edit::Files);
    let report = match crate::runtime::request_reload(edit) {
        Some(rx) => rx.await.unwrap_or_else(|_| Err(vec!["The reload was interrupted.".into()])),
        None => Err(vec!["The process is not running yet.".into()]),
    };
    if !files {
        match report {
            Ok(l) | Err(l) => l.iter().for_each(|m| out.push_str(m)),
        }
        return;
    }
    let (ok, lines) = match report {
        Ok(l) => (1, l),
        Err(l) => (0, l),
    };
    out.push_str(&format!("Success={ok}\n--\n"));
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
}

/// Reads and drops the rest of a refused line (at most 1 MiB, each read within `limit`):
/// closing with it unread would reset the connection, and the client would lose the answer.
async fn drain_line<R: tokio::io::AsyncBufRead + Unpin>(rd: &mut R, limit: std::time::Duration) {
    use tokio::io::AsyncBufReadExt as _;
    let mut left: usize = 1 << 20;
    while left > 0 {
        let Ok(Ok(buf)) = tokio::time::timeout(limit, rd.fill_buf()).await else { return };
        if buf.is_empty() {
            return;
        }
        let (n, end) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        rd.consume(n);
        if end {
            return;
        }
        left = left.saturating_sub(n);
    }
}

async fn serve<S>(api: &Api, conn: S, level: CliLevel, master: bool)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite,
{
    let (rd, mut wr) = tokio::io::split(conn);
    let mut rd = BufReader::new(rd);
    let mut sess = Session {
        level,
        prompt: false,
        timeout: api.timeout,
        quit: false,
        edit: None,
        master,
        payload: None,
        experimental: false,
    };
    let mut line = Vec::new();
    loop {
        line.clear();
        // At most a buffer's worth: a line that does not end there is refused.
        let mut limited = (&mut rd).take(MAX_LINE + 1);
        let read = tokio::time::timeout(sess.timeout, limited.read_until(b'\n', &mut line)).await;
        let n = match read {
            Ok(Ok(n)) => n,
            _ => return, // timed out, or the client left
        };
        if n == 0 {
            return;
        }
        // Lines longer than a buffer are refused as HAProxy refuses them.
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        let mut out = String::new();
        if line.len() as u64 > MAX_LINE {
            out.push_str("Command line too big.\n\n");
            let _ = tokio::time::timeout(sess.timeout, wr.write_all(out.as_bytes())).await;
            let _ = tokio::time::timeout(sess.timeout, wr.shutdown()).await;
            drain_line(&mut rd, sess.timeout).await;
            return;
        }
        // `<<` ends a command line that a payload follows, up to an empty line.
        let mut text = text.to_string();
        sess.payload = None;
        if let Some(head) = text.trim_end().strip_suffix("<<") {
            text = head.trim_end().to_string();
            let mut payload = String::new();
            loop {
                let mut l = Vec::new();
                let mut limited = (&mut rd).take(MAX_LINE + 1);
                match tokio::time::timeout(sess.timeout, limited.read_until(b'\n', &mut l)).await {
                    Ok(Ok(n)) if n > 0 => {}
                    _ => break,
                }
                let l = String::from_utf8_lossy(&l);
                let l = l.trim_end_matches(['\n', '\r']);
                if l.is_empty() {
                    break;
                }
                payload.push_str(l);
                payload.push('\n');
            }
            sess.payload = Some(payload);
        }
        for cmd in split_commands(&text) {
            let mut cmd = cmd.trim();
            if sess.master && cmd.starts_with('@') {
                cmd = cmd.split_once(' ').map_or("", |(_, rest)| rest.trim_start());
            }
            commands::run(&mut sess, cmd, &mut out);
            if let Some(edit) = sess.edit.take() {
                edit_report(edit, &mut out).await;
            }
            if sess.quit {
                let _ = tokio::time::timeout(sess.timeout, wr.write_all(out.as_bytes())).await;
                return;
            }
            // Each answer ends with an empty line, and the prompt in prompt mode.
            out.push_str(if sess.prompt { "\n> " } else { "\n" });
        }
        // A client that stops reading is dropped after `stats timeout`, as one that stops
        // writing is.
        let written = tokio::time::timeout(sess.timeout, wr.write_all(out.as_bytes())).await;
        if !matches!(written, Ok(Ok(()))) {
            return;
        }
        // Without a prompt, the session ends once the lines the client sent are answered.
        if !sess.prompt && rd.buffer().is_empty() {
            let _ = tokio::time::timeout(sess.timeout, wr.shutdown()).await;
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_split_at_unescaped_semicolons() {
        assert_eq!(split_commands("show info;show stat"), ["show info", "show stat"]);
        assert_eq!(split_commands("add map m a\\;b 1"), ["add map m a;b 1"]);
        assert_eq!(split_commands("help"), ["help"]);
    }
}
