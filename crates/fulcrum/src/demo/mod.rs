//! `fulcrum demo`: three test servers on loopback and Fulcrum in front of them with
//! `examples/demo.cfg`, each a child process of this one; prints what to curl and stops them all
//! on Ctrl-C. Owns nothing but those child processes.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const DEMO_CFG: &str = include_str!("../../../../examples/demo.cfg");
/// A self-signed certificate for 127.0.0.1 (demo only: its key is public).
const DEMO_PEM: &str = include_str!("../../../../examples/demo.pem");
const FRONTEND: &str = "127.0.0.1:8080";

struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            // A server paused with SIGSTOP must run again to see SIGTERM.
            let _ = crate::sys::kill(c.id(), libc::SIGCONT);
            let _ = crate::sys::kill(c.id(), libc::SIGTERM);
        }
        for c in &mut self.0 {
            let _ = c.wait();
        }
    }
}

pub fn main(_args: &[String]) -> i32 {
    match run() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("fulcrum demo: {e}");
            1
        }
    }
}

fn config_path() -> Result<PathBuf, String> {
    let local = PathBuf::from("examples/demo.cfg");
    if local.is_file() {
        return Ok(local);
    }
    let path = std::env::temp_dir().join(format!("fulcrum-demo-{}.cfg", std::process::id()));
    let pem = std::env::temp_dir().join(format!("fulcrum-demo-{}.pem", std::process::id()));
    std::fs::write(&pem, DEMO_PEM).map_err(|e| format!("cannot write {}: {e}", pem.display()))?;
    let text = DEMO_CFG.replace("examples/demo.pem", &pem.display().to_string());
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

fn run() -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
    let cfg = config_path()?;
    let mut children = Children(Vec::new());
    let mut pids = Vec::new();
    for (i, port) in [9001, 9002, 9003].iter().enumerate() {
        let mut child = Command::new(&exe)
            .args(["testserver", "-L", &format!("127.0.0.1:{port}"), "-n", &format!("s{}", i + 1)])
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start test server: {e}"))?;
        let out = child.stdout.take();
        pids.push(child.id());
        children.0.push(child);
        let mut line = String::new();
        if let Some(out) = out {
            let _ = BufReader::new(out).read_line(&mut line);
        }
        if !line.starts_with("listening on") {
            return Err(format!("test server on port {port} did not start (port busy?)"));
        }
        println!("test server s{} {}", i + 1, line.trim());
    }
    // A paused server must not stop the demo: Ctrl-C resumes and stops everything.
    let proxy = Command::new(&exe)
        .args(["-db", "-f"])
        .arg(&cfg)
        .spawn()
        .map_err(|e| format!("cannot start fulcrum: {e}"))?;
    let proxy_pid = proxy.id();
    children.0.push(proxy);
    let deadline = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(FRONTEND).is_err() {
        if Instant::now() > deadline {
            return Err(format!("fulcrum did not start listening on {FRONTEND}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("Fulcrum is listening on {FRONTEND} with {} (mode http).", cfg.display());
    println!("Try (Ctrl-C to stop):");
    println!("  curl -si http://{FRONTEND}/?s=64        round robin over s1..s3, weights 1:2:3");
    println!(
        "  curl -si http://{FRONTEND}/api/?s=64    ACL routing to backend 'api' (path rewritten)"
    );
    println!("  curl -si --compressed http://{FRONTEND}/api/?s=4096   the same, compressed (gzip; zstd, br)");
    println!("  curl -si http://{FRONTEND}/static/logo  cached: the second time from the cache (x-cache-hit: 1, <CACHE> in the log)");
    println!("  curl -s -o /dev/null -w '%{{speed_download}} bytes/s\\n' 'http://{FRONTEND}/download/?s=600000'   at most 256 kB/s (a bandwidth limit)");
    println!("  curl -si http://{FRONTEND}/admin        403 from an http-request deny rule");
    println!("  curl -si http://{FRONTEND}/old          301 redirect");
    println!("  curl -si http://{FRONTEND}/health       monitor-uri, answered by Fulcrum");
    println!("  curl -sik https://127.0.0.1:8443/         the same over TLS and HTTP/2 (self-signed demo certificate)");
    println!("  curl -si --http2-prior-knowledge http://{FRONTEND}/   HTTP/2 without TLS");
    println!("  curl -si http://{FRONTEND}/h2/hello      backend 'h2': a server spoken to in HTTP/2 (proto h2)");
    println!(
        "  for i in $(seq 60); do curl -s -o /dev/null -w '%{{http_code}} ' http://{FRONTEND}/; done"
    );
    println!(
        "                                          past 50 requests in 10 s: 429 (stick table)"
    );
    explain_admin(&exe, &cfg);
    println!("Health checks run every second on s1..s3 (pids {pids:?}):");
    println!("  kill -STOP {}    s2 stops answering: marked DOWN below, no traffic", pids[1]);
    println!("  kill -CONT {}    s2 comes back UP; its weight ramps up over 5 s", pids[1]);
    println!("Stats: open http://127.0.0.1:8404/stats in a browser (the form at the bottom of a");
    println!(
        "  backend changes server states); Prometheus metrics: http://127.0.0.1:8404/metrics;"
    );
    println!("  or ask the runtime API:");
    println!("  echo 'show stat' | socat stdio /tmp/fulcrum-demo.sock");
    println!("  echo 'set server servers/s2 state maint' | socat stdio /tmp/fulcrum-demo.sock");
    println!("  echo 'show table demo' | socat stdio /tmp/fulcrum-demo.sock   (the rate limit's counters)");
    println!(
        "  echo 'show cache' | socat stdio /tmp/fulcrum-demo.sock        (what the cache holds)"
    );
    println!("Edit {} and apply it in place (server states and counters stay):", cfg.display());
    println!("  echo reload | socat stdio /tmp/fulcrum-demo.sock     (or: kill -USR2 {proxy_pid})");
    println!(
        "Each request is logged below as HAProxy logs it (option httpslog: TLS fields at the end):"
    );
    wait_for_stop(&mut children)
}

/// Runs `fulcrum explain` once on the demo's `/admin` request and prints what it says: why
/// the request is denied, from the same rules, without sending it.
fn explain_admin(exe: &std::path::Path, cfg: &std::path::Path) {
    let request = "GET /admin HTTP/1.1\nHost: demo\n\n";
    let out = Command::new(exe).arg("explain").arg("-f").arg(cfg).arg(request).output();
    println!(
        "Why is /admin refused? `fulcrum explain` runs the same rules offline, no request sent:"
    );
    println!(
        "  {} explain -f {} $'GET /admin HTTP/1.1\\nHost: demo\\n\\n'",
        exe.display(),
        cfg.display()
    );
    match out {
        Ok(o) if o.status.success() => {
            for line in String::from_utf8_lossy(&o.stdout).lines() {
                println!("    {line}");
            }
        }
        Ok(o) => println!("    (explain failed: {})", String::from_utf8_lossy(&o.stderr).trim()),
        Err(e) => println!("    (explain failed: {e})"),
    }
}

fn wait_for_stop(children: &mut Children) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
        let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
        loop {
            tokio::select! {
                _ = int.recv() => break,
                _ = term.recv() => break,
                _ = tokio::time::sleep(Duration::from_millis(500)) => {
                    for c in &mut children.0 {
                        if let Ok(Some(status)) = c.try_wait() {
                            return Err(format!("a child process exited: {status}"));
                        }
                    }
                }
            }
        }
        println!("\nstopping");
        Ok(())
    })
}
