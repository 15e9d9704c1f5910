//! The Debian package (`packaging/debian/build-deb`): built once from the test binary into a
//! scratch directory and unpacked with `dpkg-deb -x` and `-e`; its files and modes, control
//! files, systemd unit and default configuration are checked, its manual page rendered, lintian
//! run on it, and the default configuration started as the unit starts it (`-Ws`, a
//! `NOTIFY_SOCKET`, the chroot). Each test is ignored, with the reason, without its tool
//! (crates/fulcrum/build.rs).
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use crate::harness::{api, eventually, haproxy_bin, run, scratch, Proc, BIN};

/// The built package: the .deb, its files (`dpkg-deb -x`) and its control files (`-e`).
struct Package {
    deb: PathBuf,
    root: PathBuf,
    control: PathBuf,
}

/// Builds and unpacks the package once for all the tests here (gzip: xz takes ten seconds).
fn package() -> &'static Package {
    static PACKAGE: OnceLock<Package> = OnceLock::new();
    PACKAGE.get_or_init(|| {
        let dir = scratch("package");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../packaging/debian/build-deb");
        let out = Command::new(script)
            .arg(BIN)
            .arg(dir.join("out"))
            .env("DEB_COMPRESS", "gzip")
            .output()
            .expect("run build-deb");
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "build-deb: {printed}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let deb = PathBuf::from(printed.trim());
        let name = deb.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let arch = command("dpkg", &["--print-architecture"]);
        let version = env!("CARGO_PKG_VERSION");
        assert_eq!(name, format!("fulcrum_{version}-1_{}.deb", arch.trim()));
        let (root, control) = (dir.join("root"), dir.join("control"));
        for (flag, to) in [("-x", &root), ("-e", &control)] {
            let deb = deb.to_str().expect("utf-8");
            command("dpkg-deb", &[flag, deb, to.to_str().expect("utf-8")]);
        }
        Package { deb, root, control }
    })
}

/// Runs a command that must succeed; its standard output.
fn command(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().expect(cmd);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{cmd} {args:?}: {err}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o7777
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every path the package installs (files and directories), from the .deb's listing.
fn listing(p: &Package) -> Vec<String> {
    let text = command("dpkg-deb", &["-c", p.deb.to_str().expect("utf-8")]);
    text.lines()
        .filter_map(|l| l.split_whitespace().last())
        .map(|p| p.trim_start_matches('.').trim_end_matches('/').to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

#[test]
#[cfg_attr(no_dpkg_deb, ignore = "dpkg-deb is not installed (see crates/fulcrum/build.rs)")]
fn the_package_installs_the_binary_the_service_and_its_configuration() {
    let p = package();
    let file = |rel: &str| p.root.join(rel);
    // The binary, stripped (no .symtab), runs.
    let bin = file("usr/sbin/fulcrum");
    assert_eq!(mode(&bin), 0o755);
    let version = command(bin.to_str().expect("utf-8"), &["-v"]);
    assert!(version.contains(env!("CARGO_PKG_VERSION")), "{version}");
    let sections = command("readelf", &["-S", "-W", bin.to_str().expect("utf-8")]);
    assert!(!sections.contains(".symtab"), "not stripped");
    for (rel, want) in [
        ("usr/share/man/man1/fulcrum.1.gz", 0o644),
        ("usr/share/doc/fulcrum/copyright", 0o644),
        ("usr/share/doc/fulcrum/changelog.Debian.gz", 0o644),
        ("usr/share/doc/fulcrum/README.md.gz", 0o644),
        ("usr/share/doc/fulcrum/compat.md.gz", 0o644),
        ("lib/systemd/system/fulcrum.service", 0o644),
        ("usr/lib/tmpfiles.d/fulcrum.conf", 0o644),
        ("etc/default/fulcrum", 0o644),
        ("etc/fulcrum/fulcrum.cfg", 0o644),
    ] {
        assert_eq!(mode(&file(rel)), want, "{rel}");
    }
    let copyright = read(&file("usr/share/doc/fulcrum/copyright"));
    assert!(copyright.starts_with("Format: https://www.debian.org/doc/packaging-manuals/"));
    assert!(copyright.contains("\nLicense: Apache-2.0\n"), "the workspace's license");

    // The manual page: every placeholder filled, compat.md's counts among them.
    let man = command("zcat", &[file("usr/share/man/man1/fulcrum.1.gz").to_str().expect("utf-8")]);
    for placeholder in ["@VERSION@", "@DATE@", "@SUPPORTED@", "@PARTIAL@", "@NOTYET@", "@REFUSED@"]
    {
        assert!(!man.contains(placeholder), "{placeholder} left: {man}");
    }
    assert!(man.contains(".SH COMPATIBILITY") && man.contains(" are supported,"), "{man}");
    for section in ["NAME", "SYNOPSIS", "OPTIONS", "COMMANDS", "SIGNALS", "FILES", "EXIT STATUS"] {
        assert!(man.contains(&format!(".SH {section}")), "{section}");
    }

    // Control files: conffiles, md5sums of the rest, maintainer scripts.
    let control = read(&p.control.join("control"));
    for field in ["Package: fulcrum\n", "Section: net\n", "Priority: optional\n", "Depends: libc6"]
    {
        assert!(control.contains(field), "{field}: {control}");
    }
    assert!(control.contains(", adduser\n"), "postinst runs adduser: {control}");
    let conffiles = read(&p.control.join("conffiles"));
    assert_eq!(conffiles, "/etc/default/fulcrum\n/etc/fulcrum/fulcrum.cfg\n");
    let md5sums = read(&p.control.join("md5sums"));
    assert!(md5sums.contains("  usr/sbin/fulcrum\n"), "{md5sums}");
    for script in ["postinst", "prerm", "postrm"] {
        let path = p.control.join(script);
        assert_eq!(mode(&path), 0o755, "{script}");
        let text = read(&path);
        assert!(text.starts_with("#!/bin/sh\n") && text.contains("\nset -e\n"), "{script}");
        assert!(!text.contains("#DEBHELPER#"), "{script}");
    }
    let postinst = read(&p.control.join("postinst"));
    assert!(postinst.contains("getent passwd haproxy"), "the user is made only if missing");
    assert!(postinst.contains("--home /var/lib/haproxy"), "as the haproxy package makes it");
    let postrm = read(&p.control.join("postrm"));
    assert!(!postrm.contains("deluser") && !postrm.contains("delgroup"), "haproxy's user stays");

    // The unit: Debian 12's haproxy.service with Fulcrum's names.
    let unit = read(&file("lib/systemd/system/fulcrum.service"));
    for line in [
        "Type=notify",
        "Environment=\"CONFIG=/etc/fulcrum/fulcrum.cfg\" \"PIDFILE=/run/fulcrum.pid\" \
         \"EXTRAOPTS=-S /run/fulcrum-master.sock\"",
        "EnvironmentFile=-/etc/default/fulcrum",
        "ExecStart=/usr/sbin/fulcrum -Ws -f $CONFIG -p $PIDFILE $EXTRAOPTS",
        "ExecReload=/usr/sbin/fulcrum -Ws -f $CONFIG -c -q $EXTRAOPTS",
        "ExecReload=/bin/kill -USR2 $MAINPID",
        "KillMode=mixed",
        "Restart=always",
        "SuccessExitStatus=143",
        "BindReadOnlyPaths=/dev/log:/var/lib/fulcrum/dev/log",
        "After=network-online.target rsyslog.service",
        "Wants=network-online.target",
        "WantedBy=multi-user.target",
    ] {
        assert!(unit.lines().any(|l| l == line), "{line}: {unit}");
    }
    let tmpfiles = read(&file("usr/lib/tmpfiles.d/fulcrum.conf"));
    assert!(tmpfiles.contains("\nd /run/fulcrum 2775 haproxy haproxy -\n"), "{tmpfiles}");

    // Beside the haproxy package: no path in common (its chroot, sockets and pid file are
    // /var/lib/haproxy, /run/haproxy*, Fulcrum's named after Fulcrum).
    let paths = listing(p);
    assert!(paths.iter().all(|p| !p.contains("haproxy")), "{paths:?}");
    assert!(!control.contains("Conflicts") && !control.contains("Replaces"), "{control}");
    if let Ok(theirs) = std::fs::read_to_string("/var/lib/dpkg/info/haproxy.list") {
        for path in theirs.lines().filter(|p| !Path::new(p).is_dir()) {
            assert!(!paths.iter().any(|ours| ours == path), "haproxy installs {path} too");
        }
    }

    // The default configuration passes `-c` as it is (its stats socket is a listener, as for
    // HAProxy 2.6, which says the same of it when installed).
    let cfg = file("etc/fulcrum/fulcrum.cfg");
    let (code, out, err) = run(&["-c", "-f", cfg.to_str().expect("utf-8")]);
    assert_eq!((code, out.as_str()), (0, "Configuration file is valid\n"), "{err}");
    if let Some(haproxy) = haproxy_bin() {
        let out = Command::new(haproxy).args(["-c", "-f"]).arg(&cfg).output().expect("haproxy");
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
#[cfg_attr(no_dpkg_deb, ignore = "dpkg-deb is not installed (see crates/fulcrum/build.rs)")]
#[cfg_attr(no_man, ignore = "man is not installed (see crates/fulcrum/build.rs)")]
fn the_manual_page_renders_without_warnings() {
    let page = package().root.join("usr/share/man/man1/fulcrum.1.gz");
    let out = Command::new("man")
        .args(["--warnings", "-E", "UTF-8", "-l"])
        .arg(&page)
        .env("LC_ALL", "C.UTF-8")
        .env("MANWIDTH", "80")
        .output()
        .expect("man");
    let (text, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && err.is_empty(), "man: {err}");
    assert!(text.contains("COMPATIBILITY") && text.contains("/usr/share/doc/fulcrum/compat.md.gz"));
}

#[test]
#[cfg_attr(no_dpkg_deb, ignore = "dpkg-deb is not installed (see crates/fulcrum/build.rs)")]
#[cfg_attr(no_lintian, ignore = "lintian is not installed (see crates/fulcrum/build.rs)")]
fn lintian_finds_no_error_in_the_package() {
    let deb = &package().deb;
    let out = Command::new("lintian").arg(deb).output().expect("lintian");
    let text = String::from_utf8_lossy(&out.stdout);
    let errors: Vec<&str> = text.lines().filter(|l| l.starts_with("E:")).collect();
    assert!(errors.is_empty(), "lintian: {text}{}", String::from_utf8_lossy(&out.stderr));
}

/// The default configuration run as `fulcrum.service` runs it (`-Ws -f $CONFIG -p $PIDFILE -S
/// ...`, under a `NOTIFY_SOCKET`), its chroot, sockets and user moved to a scratch directory:
/// systemd hears READY=1 from the jailed worker through its master, RELOADING=1 then READY=1
/// on a reload, and SIGTERM (systemctl stop) ends it with status 0.
#[test]
#[cfg_attr(no_dpkg_deb, ignore = "dpkg-deb is not installed (see crates/fulcrum/build.rs)")]
#[cfg_attr(not_root, ignore = "needs root for chroot and user (see crates/fulcrum/build.rs)")]
fn the_default_configuration_starts_under_systemd_as_the_unit_runs_it() {
    let p = package();
    let dir = scratch("package-service");
    let jail = dir.join("jail");
    std::fs::create_dir_all(jail.join("dev")).expect("jail");
    let text = read(&p.root.join("etc/fulcrum/fulcrum.cfg"))
        .replace("chroot /var/lib/fulcrum", &format!("chroot {}", jail.display()))
        .replace("/run/fulcrum/admin.sock", &dir.join("admin.sock").display().to_string())
        .replace("user haproxy", "user nobody")
        .replace("group haproxy", "group nogroup");
    let cfg = dir.join("fulcrum.cfg");
    std::fs::write(&cfg, text).expect("cfg");
    // systemd's side: a datagram socket the process must reach after chroot and setuid.
    let notify_path = dir.join("notify");
    let notify = crate::harness::Notify::bind(&notify_path);
    let recv = || notify.next();
    let (pidfile, master) = (dir.join("fulcrum.pid"), dir.join("master.sock"));
    let child = Command::new(BIN)
        .args(["-Ws", "-f"])
        .arg(&cfg)
        .arg("-p")
        .arg(&pidfile)
        .arg("-S")
        .arg(&master)
        .env("NOTIFY_SOCKET", &notify_path)
        .spawn()
        .expect("start fulcrum");
    let mut proc = Proc { child, log: None, explain: None };
    assert_eq!(recv(), "READY=1", "ready, from inside the chroot (through the master)");
    // The pid file and systemd know the master, which stays outside the jail; its worker is in.
    assert_eq!(read(&pidfile).trim(), proc.pid().to_string());
    let worker = crate::harness::child_of(proc.pid()).expect("a worker");
    let root = |pid: u32| std::fs::read_link(format!("/proc/{pid}/root")).expect("root");
    assert_eq!(root(worker), jail.canonicalize().expect("jail"));
    assert_eq!(root(proc.pid()), std::path::PathBuf::from("/"));
    assert!(eventually(Duration::from_secs(5), || master.exists()));
    let out = api(&master, "reload");
    assert!(out.starts_with("Success=1\n"), "{out}");
    assert!(recv().starts_with("RELOADING=1\n"), "reloading");
    assert_eq!(recv(), "READY=1", "ready again");
    proc.signal(libc::SIGTERM);
    let status = proc.wait_exit(Duration::from_secs(5)).expect("stopped");
    assert_eq!(status.code(), Some(0));
}
