//! Mail alerts (`mailers`, `email-alert`) delivered to a real SMTP server (Python's `aiosmtpd`,
//! `smtp_sink.py` beside this file, started here on 127.0.0.1): a server going DOWN is mailed at
//! the default level, its coming back UP only with `email-alert level notice`; every mailer of
//! the section gets every alert; the envelope and headers are HAProxy 2.6's.
//!
//! The scenario runs under HAProxy too when it is installed: the same mails are expected.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::harness::{eventually, haproxy_bin, scratch, start_proxy};

const SINK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/e2e/smtp_sink.py");

/// The SMTP server: killed (by PID) when dropped.
struct Sink {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Sink {
    fn start(dir: &Path) -> Sink {
        let mut child = Command::new("python3")
            .arg(SINK)
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start smtp_sink.py");
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            let _ = BufReader::new(out).read_line(&mut line);
        }
        let port = line.trim().parse().expect("the SMTP server's port");
        Sink { child, port, dir: dir.to_path_buf() }
    }

    /// The messages received so far, in order.
    fn mails(&self) -> Vec<String> {
        let mut n = 1;
        let mut out = Vec::new();
        while let Ok(m) = std::fs::read_to_string(self.dir.join(format!("{n}.eml"))) {
            out.push(m);
            n += 1;
        }
        out
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn targets() -> Vec<&'static str> {
    if haproxy_bin().is_some() {
        vec!["haproxy", "fulcrum"]
    } else {
        vec!["fulcrum"]
    }
}

/// The mails whose subject names this event, e.g. `Server notice/s is UP`.
fn about<'a>(mails: &'a [String], event: &str) -> Vec<&'a String> {
    let subject = format!("\r\nSubject: [HAProxy Alert] {event}");
    mails.iter().filter(|m| m.contains(&subject)).collect()
}

#[test]
#[cfg_attr(
    no_aiosmtpd,
    ignore = "Python's aiosmtpd is not installed (see crates/fulcrum/build.rs)"
)]
fn server_state_changes_are_mailed_to_every_mailer_at_their_level() {
    for target in targets() {
        let dir = scratch(&format!("mail-sink-{target}"));
        let sink = Sink::start(&dir);
        // A port nothing listens on yet: the servers start DOWN, then come UP when it opens.
        let port =
            TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        let cfg = format!(
            "mailers mta\n    mailer smtp1 127.0.0.1:{p}\n    mailer smtp2 127.0.0.1:{p}\n    timeout mail 5s\n\
             defaults\n    mode tcp\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\n\
             \x20   email-alert mailers mta\n    email-alert from lb@example.com\n    email-alert to ops@example.com\n\
             frontend fe\n    bind {{fe0}}\n    default_backend alert\n\
             backend alert\n    server s 127.0.0.1:{port} check inter 200ms rise 1 fall 1\n\
             backend notice\n    email-alert level notice\n    email-alert myhostname lb1.example.com\n\
             \x20   server s 127.0.0.1:{port} check inter 200ms rise 1 fall 1\n",
            p = sink.port
        );
        let Some((p, _, _)) = start_proxy(target, "mail", &cfg) else { continue };
        let down = |who: &str| {
            format!("Server {who}/s is DOWN, reason: Layer4 connection problem, info: \"Connection refused\", check duration: ")
        };
        let both_down = eventually(Duration::from_secs(10), || {
            let m = sink.mails();
            about(&m, &down("alert")).len() == 2 && about(&m, &down("notice")).len() == 2
        });
        assert!(both_down, "{target}: DOWN mails: {:?}\n{}", sink.mails(), p.log_text());
        let _up = TcpListener::bind(("127.0.0.1", port)).expect("open the servers' port");
        let up = |who: &str| {
            format!("Server {who}/s is UP, reason: Layer4 check passed, check duration: ")
        };
        let notice_up =
            eventually(Duration::from_secs(10), || about(&sink.mails(), &up("notice")).len() == 2);
        assert!(notice_up, "{target}: UP mails: {:?}\n{}", sink.mails(), p.log_text());
        assert!(p.log_text().contains("Server alert/s is UP"), "{target}: {}", p.log_text());
        let mails = sink.mails();
        assert!(about(&mails, &up("alert")).is_empty(), "{target}: UP is a notice, not an alert");
        // The envelope and headers, as HAProxy writes them.
        let m = about(&mails, &up("notice"))[0];
        for part in [
            "X-Envelope-Helo: lb1.example.com\r\n",
            "X-Envelope-From: lb@example.com\r\nX-Envelope-To: ops@example.com\r\n",
            "From: lb@example.com\r\nTo: ops@example.com\r\nDate: ",
        ] {
            assert!(m.contains(part), "{target}: no {part:?} in {m}");
        }
        let body = m.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or_default();
        assert!(
            body.starts_with("Server notice/s is UP, reason: Layer4 check passed"),
            "{target}: {m}"
        );
        // Without `myhostname`, HELO says the machine's name.
        let host = Command::new("hostname")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        let a = about(&mails, &down("alert"))[0];
        if let Ok(host) = host {
            assert!(a.contains(&format!("X-Envelope-Helo: {host}\r\n")), "{target}: {a}");
        }
    }
}
