//! Mail alerts (`mailers` sections, `email-alert`): a server going DOWN, UP or into drain
//! mailed over plain SMTP as HAProxy 2.6 mails it (`mailers.c`): `HELO <myhostname>`, `MAIL
//! FROM`, `RCPT TO`, `DATA` with `From`, `To`, `Date` and `Subject: [HAProxy Alert] <msg>`,
//! `QUIT`, each answer waited for (`220`, `250`, `354`, `221`); one queue per mailer, one alert
//! at a time, no retry, the whole exchange within `timeout mail`.
//!
//! The exchanges run on a thread of their own (started with the first alert, so after any
//! daemonizing fork), never on a worker: a slow or dead mail server delays only the next alert
//! to it. An alert that cannot be sent is said on stderr (HAProxy drops it silently).
//!
//! Must not touch: server state (it is only told what changed).

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

/// A proxy's alert settings and its queues, one per mailer.
#[derive(Debug)]
pub struct Alerts {
    /// Alerts at this syslog level or more urgent are sent.
    level: u8,
    proxy: String,
    envelope: Arc<Envelope>,
    timeout: Duration,
    queues: Vec<Queue>,
}

/// One mailer's queue: the sending side of its task, started with the first alert.
#[derive(Debug)]
struct Queue {
    name: String,
    addr: SocketAddr,
    /// Each alert's headers and body, dot-terminated.
    tx: OnceLock<UnboundedSender<Arc<str>>>,
}

/// What every alert of a proxy is sent with.
#[derive(Debug)]
struct Envelope {
    helo: String,
    from: String,
    to: String,
}

impl Alerts {
    /// `mailers` are the section's mailers, resolved, in HAProxy's order.
    pub fn new(
        proxy: &str,
        ea: &fulcrum_config::mailers::EmailAlert,
        timeout: Duration,
        mailers: Vec<(String, SocketAddr)>,
    ) -> Alerts {
        Alerts {
            level: ea.level,
            proxy: proxy.to_string(),
            envelope: Arc::new(Envelope {
                helo: ea.myhostname.clone().unwrap_or_else(|| crate::sys::hostname().to_string()),
                from: ea.from.clone().unwrap_or_default(),
                to: ea.to.clone().unwrap_or_default(),
            }),
            timeout,
            queues: mailers
                .into_iter()
                .map(|(name, addr)| Queue { name, addr, tx: OnceLock::new() })
                .collect(),
        }
    }

    /// Mails `msg` (a server state change, without its final full stop) to every mailer when
    /// `level` is at least as urgent as the configured one.
    pub fn send(&self, level: u8, msg: &str) {
        if level > self.level {
            return;
        }
        let date = crate::sys::mail_date(std::time::SystemTime::now());
        let e = &self.envelope;
        let mail: Arc<str> = format!(
            "From: {}\r\nTo: {}\r\nDate: {date}\r\nSubject: [HAProxy Alert] {msg}\r\n\r\n{msg}\r\n\r\n.\r\n",
            e.from, e.to
        )
        .into();
        let Some(rt) = runtime() else { return };
        for q in &self.queues {
            let tx = q.tx.get_or_init(|| self.start(rt, q));
            let _ = tx.send(Arc::clone(&mail));
        }
    }

    /// Starts the task that sends queue `q`'s alerts in order.
    fn start(&self, rt: &tokio::runtime::Handle, q: &Queue) -> UnboundedSender<Arc<str>> {
        let (tx, mut rx) = unbounded_channel::<Arc<str>>();
        let (addr, timeout, envelope) = (q.addr, self.timeout, Arc::clone(&self.envelope));
        let who = format!("Email alert [{}] to mailer '{}' ({addr})", self.proxy, q.name);
        rt.spawn(async move {
            while let Some(mail) = rx.recv().await {
                let sent = tokio::time::timeout(timeout, exchange(addr, &envelope, &mail)).await;
                let why = match sent {
                    Ok(Ok(())) => continue,
                    Ok(Err(e)) => e,
                    Err(_) => "timeout mail expired".to_string(),
                };
                crate::log::warning(&format!("{who} could not be sent: {why}"));
            }
        });
        tx
    }
}

/// The mail thread's event loop, started on first use (`None` if no thread could be).
fn runtime() -> Option<&'static tokio::runtime::Handle> {
    static HANDLE: OnceLock<Option<tokio::runtime::Handle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel();
            let started =
                std::thread::Builder::new().name("fulcrum-mail".into()).spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build();
                    let Ok(rt) = rt else { return };
                    let _ = tx.send(rt.handle().clone());
                    rt.block_on(std::future::pending::<()>());
                });
            let handle = started.ok().and_then(|_| rx.recv().ok());
            if handle.is_none() {
                crate::log::alert("cannot start the mail alert thread: alerts are dropped");
            }
            handle
        })
        .as_ref()
}

/// One SMTP conversation, as HAProxy's tcp-check rules for an alert run it.
async fn exchange(addr: SocketAddr, m: &Envelope, data: &str) -> Result<(), String> {
    let mut s = tokio::net::TcpStream::connect(addr).await.map_err(|e| crate::sys::os_words(&e))?;
    let mut buf = Vec::new();
    expect(&mut s, &mut buf, "220").await?;
    let steps: [(String, &str); 5] = [
        (format!("HELO {}\r\n", m.helo), "250"),
        (format!("MAIL FROM:<{}>\r\n", m.from), "250"),
        (format!("RCPT TO:<{}>\r\n", m.to), "250"),
        ("DATA\r\n".to_string(), "354"),
        (data.to_string(), "250"),
    ];
    for (send, code) in steps {
        s.write_all(send.as_bytes()).await.map_err(|e| crate::sys::os_words(&e))?;
        expect(&mut s, &mut buf, code).await?;
    }
    s.write_all(b"QUIT\r\n").await.map_err(|e| crate::sys::os_words(&e))?;
    expect(&mut s, &mut buf, "221").await
}

/// Reads until a reply line starts with `code` and a space (a multi-line reply's last line);
/// another final code is an error.
async fn expect(
    s: &mut tokio::net::TcpStream,
    buf: &mut Vec<u8>,
    code: &str,
) -> Result<(), String> {
    loop {
        while let Some(end) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line).trim_end().to_string();
            if line.len() >= 4 && line.as_bytes()[3] == b'-' {
                continue;
            }
            if line.starts_with(code) {
                return Ok(());
            }
            return Err(format!("expected {code}, the server answered '{line}'"));
        }
        let mut chunk = [0u8; 1024];
        let n = s.read(&mut chunk).await.map_err(|e| crate::sys::os_words(&e))?;
        if n == 0 {
            return Err(format!("the server closed the connection before answering {code}"));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}
