//! Probes the tools some tests drive (a real gRPC client and server, Python's Prometheus
//! parser and SMTP server, a SPOE agent's library, PHP-FPM, flup, a browser, OpenSSL and curl, `ss`, the Debian package's `dpkg-deb`,
//! `lintian` and `man`), whether the system accepts TCP Fast Open on servers, and whether the tests run as root: for each one missing, a `cfg` flag, under which its
//! tests are ignored with the reason, so `cargo test` shows them as ignored, never as passed
//! without having run. The binary does not use these flags.
//!
//! The probe runs again when `PATH` or `FULCRUM_PROBE_TOOLS` changes, or this file does:
//! after installing a tool, `touch crates/fulcrum/build.rs` (or set `FULCRUM_PROBE_TOOLS`).

use std::process::{Command, Stdio};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PATH");
    println!("cargo:rerun-if-env-changed=FULCRUM_PROBE_TOOLS");
    let python = |module: &str| runs("python3", &["-c", &format!("import {module}")]);
    let browser = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .iter()
        .any(|p| std::path::Path::new(p).exists());
    let flags = [
        ("no_grpcio", python("grpc")),
        ("no_prometheus_client", python("prometheus_client.parser")),
        // Python's zlib: the independent decoder of compressed responses.
        ("no_python_zlib", python("zlib")),
        // A real PHP-FPM for the FastCGI tests (Debian's, any PHP version).
        ("no_php_fpm", php_fpm()),
        // A real multiplexing FastCGI server (Python's flup).
        ("no_flup", python("flup.server.fcgi")),
        // A real SMTP server for the mail alerts.
        ("no_aiosmtpd", python("aiosmtpd.smtp")),
        // A SPOE agent written with a public SPOP library, judging with libinjection.
        ("no_spoa", python("haproxyspoa.spoa_server, libinjection")),
        ("no_chromium", browser),
        ("no_openssl", runs("openssl", &["version"])),
        ("no_curl", runs("curl", &["--version"])),
        ("no_ss", runs("ss", &["-V"])),
        ("no_dpkg_deb", runs("dpkg-deb", &["--version"])),
        ("no_lintian", runs("lintian", &["--version"])),
        ("no_man", runs("man", &["--version"])),
        // TCP Fast Open to a server needs the system's server side (`net.ipv4.tcp_fastopen` bit 2).
        ("no_tfo_server", tfo_server()),
        // `chroot` and a change of user need root.
        ("not_root", output("id", &["-u"]).is_some_and(|uid| uid.trim() == "0")),
    ];
    for (flag, found) in flags {
        println!("cargo:rustc-check-cfg=cfg({flag})");
        if !found {
            println!("cargo:rustc-cfg={flag}");
        }
    }
}

/// The system accepts TCP Fast Open on listening sockets.
fn tfo_server() -> bool {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_fastopen")
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .is_some_and(|v| v & 2 != 0)
}

/// Debian's PHP-FPM is installed (`/usr/sbin/php-fpm<version>`).
fn php_fpm() -> bool {
    std::fs::read_dir("/usr/sbin").is_ok_and(|d| {
        d.flatten().any(|e| e.file_name().to_str().is_some_and(|n| n.starts_with("php-fpm")))
    })
}

/// What the command prints, when it runs and succeeds.
fn output(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).stderr(Stdio::null()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The command runs and succeeds.
fn runs(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
