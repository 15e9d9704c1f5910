//! External checks (`option external-check`): a real shell script as the check program, its
//! arguments and environment as HAProxy 2.6 gives them, its exit status as the result, a
//! program that overruns killed (and reaped: no zombie), and the program run inside the
//! `chroot` jail as the configured user.
//!
//! The scenario runs under HAProxy too when it is installed: its lines are the expectations.

use std::time::Duration;

use crate::harness::{eventually, haproxy_bin, scratch, start_proxy, Proc};

/// The proxies to run a scenario against.
fn targets() -> Vec<&'static str> {
    if haproxy_bin().is_some() {
        vec!["haproxy", "fulcrum"]
    } else {
        vec!["fulcrum"]
    }
}

/// Waits until a stderr line contains `text`.
fn has_line(p: &Proc, text: &str) -> bool {
    eventually(Duration::from_secs(5), || p.log_text().contains(text))
}

/// The zombie children of `pid` now.
fn zombies(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        // `pid (comm) state ppid ...`: comm may hold spaces, so read after the last ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { continue };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.first() == Some(&"Z") && f.get(1).and_then(|p| p.parse().ok()) == Some(pid) {
            out.extend(e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()));
        }
    }
    out
}

const SCRIPT: &str = "#!/bin/sh\n\
echo \"$@\" > {dir}/args-$HAPROXY_SERVER_NAME\n\
env | sort > {dir}/env-$HAPROXY_SERVER_NAME\n\
case \"$HAPROXY_SERVER_NAME\" in\n  bad) exit 3 ;;\n  slow) exec sleep 5 ;;\nesac\nexit 0\n";

#[test]
fn the_programs_exit_status_decides_with_haproxys_arguments_and_environment() {
    for target in targets() {
        let dir = scratch(&format!("extcheck-script-{target}"));
        let script = dir.join("check.sh");
        std::fs::write(&script, SCRIPT.replace("{dir}", &dir.display().to_string()))
            .expect("script");
        std::process::Command::new("chmod").arg("+x").arg(&script).status().expect("chmod");
        let cfg = format!(
            "global\n    external-check\n    insecure-fork-wanted\n\
             defaults\n    mode tcp\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\n    timeout check 1s\n\
             frontend fe\n    bind {{fe0}}\n    default_backend be\n\
             backend be\n    option log-health-checks\n    option external-check\n\
             \x20   external-check path \"/usr/bin:/bin\"\n    external-check command {}\n\
             \x20   server ok 127.0.0.1:8001 check inter 200ms rise 1 fall 1 maxconn 7\n\
             \x20   server bad 127.0.0.1:8002 check inter 200ms rise 1 fall 1\n\
             \x20   server slow 127.0.0.1:8003 check inter 300ms rise 1 fall 1\n",
            script.display()
        );
        let Some((p, _, _)) = start_proxy(target, "extcheck", &cfg) else { continue };
        for line in [
            "Health check for server be/ok succeeded, reason: External check passed, code: 0, check duration: ",
            "Health check for server be/bad failed, reason: External check error, code: 3, check duration: ",
            "Server be/bad is DOWN. 2 active and 0 backup servers left.",
            "Health check for server be/slow failed, reason: External check timeout, code: 0, check duration: 3",
            "Server be/slow is DOWN. 1 active and 0 backup servers left.",
            ": kill ",
        ] {
            assert!(has_line(&p, line), "{target}: no {line:?} in:\n{}", p.log_text());
        }
        let args = std::fs::read_to_string(dir.join("args-ok")).unwrap_or_default();
        assert_eq!(args, "NOT_USED NOT_USED 127.0.0.1 8001\n", "{target}");
        let env = std::fs::read_to_string(dir.join("env-ok")).unwrap_or_default();
        let mut vars: Vec<&str> = env.lines().filter(|l| !l.starts_with("PWD=")).collect();
        vars.retain(|l| !l.starts_with("SHLVL="));
        assert_eq!(
            vars,
            [
                "HAPROXY_PROXY_ADDR=",
                "HAPROXY_PROXY_ID=2",
                "HAPROXY_PROXY_NAME=be",
                "HAPROXY_PROXY_PORT=",
                "HAPROXY_SERVER_ADDR=127.0.0.1",
                "HAPROXY_SERVER_CURCONN=0",
                "HAPROXY_SERVER_ID=1",
                "HAPROXY_SERVER_MAXCONN=7",
                "HAPROXY_SERVER_NAME=ok",
                "HAPROXY_SERVER_PORT=8001",
                "HAPROXY_SERVER_PROTO=tcp",
                "HAPROXY_SERVER_SSL=0",
                "PATH=/usr/bin:/bin",
            ],
            "{target}: the environment is only HAProxy's variables:\n{env}"
        );
        // Killed programs are reaped: no zombie stays behind (one may exist for an instant
        // between its end and its reaping, so a clean look is waited for).
        let clean = eventually(Duration::from_secs(3), || zombies(p.pid()).is_empty());
        assert!(clean, "{target}: zombies left: {:?}", zombies(p.pid()));
    }
}

#[test]
fn without_insecure_fork_wanted_haproxy_warns() {
    let (rc, _, err) = crate::harness::check(
        "extcheck-nofork",
        "global\n    external-check\ndefaults\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\n\
         backend be\n    option external-check\n    external-check command /bin/true\n    server s 127.0.0.1:1 check\n",
    );
    assert_ne!(rc, 1, "a warning, not an error: {err}");
    assert!(
        err.contains("Proxy 'be' : 'insecure-fork-wanted' not enabled in the global section, 'option external-check' will likely fail."),
        "{err}"
    );
}

/// As root with `user nobody` and no `insecure-fork-wanted`, HAProxy's process limit stops
/// the program: the check fails with a socket error, and Fulcrum does the same.
#[test]
#[cfg_attr(not_root, ignore = "changing user needs root (see crates/fulcrum/build.rs)")]
fn without_insecure_fork_wanted_a_process_that_gave_up_root_starts_no_program() {
    for target in targets() {
        let cfg = "global
    user nobody
    external-check
             defaults
    mode tcp
    timeout connect 1s
    timeout client 1s
    timeout server 1s
             frontend fe
    bind {fe0}
    default_backend be
             backend be
    option log-health-checks
    option external-check
    external-check command /bin/true
                 server s 127.0.0.1:8001 check inter 200ms rise 1 fall 1
";
        let Some((p, _, _)) = start_proxy(target, "extcheck-nofork", cfg) else { continue };
        for line in [
            "[ALERT]    (",
            ") : Failed to fork process for external health check (likely caused by missing 'insecure-fork-wanted'): Resource temporarily unavailable. Aborting.",
            "Health check for server be/s failed, reason: Socket error, info: \"Resource temporarily unavailable\", check duration: 0ms, status: 0/1 DOWN.",
        ] {
            assert!(has_line(&p, line), "{target}: no {line:?} in:\n{}", p.log_text());
        }
    }
}

/// Copies the shell and the libraries it loads into `jail`, so scripts run inside it.
fn shell_in(jail: &std::path::Path) -> bool {
    let Ok(out) = std::process::Command::new("ldd").arg("/bin/sh").output() else { return false };
    let mut files = vec!["/bin/sh".to_string()];
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        files.extend(l.split_whitespace().find(|w| w.starts_with('/')).map(str::to_string));
    }
    files.iter().all(|f| {
        let to = jail.join(f.trim_start_matches('/'));
        std::fs::create_dir_all(to.parent().expect("parent")).is_ok()
            && std::fs::copy(f, &to).is_ok()
    })
}

#[test]
#[cfg_attr(not_root, ignore = "entering a chroot needs root (see crates/fulcrum/build.rs)")]
fn under_chroot_the_program_runs_inside_the_jail_as_the_configured_user() {
    for target in targets() {
        let jail = scratch(&format!("extcheck-root-{target}"));
        if !shell_in(&jail) {
            panic!("could not copy /bin/sh and its libraries into {}", jail.display());
        }
        let out = jail.join("out");
        std::fs::create_dir_all(&out).expect("out");
        std::process::Command::new("chmod").arg("777").arg(&out).status().expect("chmod");
        // Inside the jail the script is /check.sh and writes /out/ran; outside the jail there
        // is no /check.sh, so a program run outside would fail.
        std::fs::write(
            jail.join("check.sh"),
            "#!/bin/sh\necho \"$HAPROXY_SERVER_NAME\" > /out/ran\nexit 0\n",
        )
        .expect("script");
        std::process::Command::new("chmod")
            .arg("755")
            .arg(jail.join("check.sh"))
            .status()
            .expect("chmod");
        let cfg = format!(
            "global\n    chroot {}\n    user nobody\n    external-check\n    insecure-fork-wanted\n\
             defaults\n    mode tcp\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\n\
             frontend fe\n    bind {{fe0}}\n    default_backend be\n\
             backend be\n    option log-health-checks\n    option external-check\n    external-check command /check.sh\n\
             \x20   server jailed 127.0.0.1:8001 check inter 200ms rise 1 fall 1\n",
            jail.display()
        );
        let Some((p, _, _)) = start_proxy(target, "extcheck-jail", &cfg) else { continue };
        let line =
            "Health check for server be/jailed succeeded, reason: External check passed, code: 0";
        assert!(has_line(&p, line), "{target}: {}", p.log_text());
        let ran = out.join("ran");
        assert_eq!(std::fs::read_to_string(&ran).unwrap_or_default(), "jailed\n", "{target}");
        use std::os::unix::fs::MetadataExt;
        let uid = std::fs::metadata(&ran).map(|m| m.uid()).unwrap_or(0);
        assert_eq!(uid, 65534, "{target}: the program runs as user nobody");
    }
}
