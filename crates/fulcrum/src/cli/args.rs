//! Command-line flags, spelled as HAProxy spells them (`-f`, `-c`, `-cc`, `-d`, `-D`, `-p`,
//! `-q`, `-v`, `-vv`, `-sf`, `-st`, ...): parsing is pure (a list of strings, no I/O); the
//! texts the flags ask for (`-h`'s usage, `-v`'s version, `-vv`'s build) are here too.

use std::path::PathBuf;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    /// `-f` files or directories, in order (also files after `--`).
    pub configs: Vec<PathBuf>,
    /// `-c`: check the configuration and exit.
    pub check: bool,
    /// `-cc <cond>`: evaluate one `.if` condition and exit.
    pub eval: Option<String>,
    /// `-d`: foreground and debug output.
    pub debug: bool,
    /// `-db`: foreground, no debug output.
    pub foreground: bool,
    /// `-D`: daemon.
    pub daemon: bool,
    /// `-p <pidfile>`.
    pub pidfile: Option<PathBuf>,
    /// `-q`: quiet.
    pub quiet: bool,
    /// `-dW`: warnings make the configuration fail (global `zero-warning`).
    pub zero_warning: bool,
    /// `-v` (1) or `-vv` (2).
    pub version: u8,
    /// `-h` / `--help`: the usage (HAProxy has no such option; a person types it first).
    pub help: bool,
    /// `-sf <pid>...`: tell these processes to finish (soft stop) once bound.
    pub finish_pids: Vec<u32>,
    /// `-st <pid>...`: tell these processes to stop at once.
    pub terminate_pids: Vec<u32>,
    /// `-N <maxconn>`: default process maxconn.
    pub maxconn: Option<u32>,
    /// `-W` / `-Ws`: HAProxy's master-worker mode. Fulcrum is one process that reloads itself
    /// (SIGUSR2), so this changes nothing but `-Ws`'s systemd readiness notifications and
    /// staying in the foreground.
    pub master_worker: bool,
    /// `-Ws`: run under systemd (`Type=notify`): stay in the foreground.
    pub systemd: bool,
    /// `-S <bind>[,<option>...]`: HAProxy's master CLI sockets, served as admin-level runtime
    /// API sockets (with `reload`).
    pub master_sockets: Vec<String>,
    /// HAProxy flags accepted but meaning nothing here (reported under `-d`).
    pub ignored: Vec<String>,
}

/// Parses HAProxy-style arguments (without the program name).
pub fn parse(argv: &[String]) -> Result<Args, String> {
    let mut a = Args::default();
    let mut i = 0;
    let value = |i: &mut usize, flag: &str| -> Result<String, String> {
        *i += 1;
        argv.get(*i).cloned().ok_or_else(|| format!("option '{flag}' expects an argument"))
    };
    while i < argv.len() {
        let arg = argv[i].as_str();
        match arg {
            "-f" => a.configs.push(value(&mut i, arg)?.into()),
            "-c" => a.check = true,
            "-cc" => a.eval = Some(value(&mut i, arg)?),
            "-d" => a.debug = true,
            "-db" => a.foreground = true,
            "-D" => a.daemon = true,
            "-p" => a.pidfile = Some(value(&mut i, arg)?.into()),
            "-q" => a.quiet = true,
            "-v" | "-V" if arg == "-v" => a.version = a.version.max(1),
            "-V" => {}
            "-vv" => a.version = 2,
            "-h" | "--help" => a.help = true,
            "-N" => {
                let v = value(&mut i, arg)?;
                a.maxconn =
                    Some(v.parse().map_err(|_| format!("'-N' expects a number, got '{v}'"))?);
            }
            "-sf" | "-st" => {
                while let Some(next) = argv.get(i + 1).filter(|s| !s.starts_with('-')) {
                    let pid = next
                        .parse()
                        .map_err(|_| format!("'{arg}' expects process ids, got '{next}'"))?;
                    if arg == "-sf" {
                        a.finish_pids.push(pid)
                    } else {
                        a.terminate_pids.push(pid)
                    }
                    i += 1;
                }
            }
            "-x" | "-L" | "-m" | "-n" => {
                let v = value(&mut i, arg)?;
                a.ignored.push(format!("{arg} {v}"));
            }
            "-W" => a.master_worker = true,
            "-Ws" => {
                a.master_worker = true;
                a.systemd = true;
            }
            "-S" => a.master_sockets.push(value(&mut i, arg)?),
            "--" => {
                a.configs.extend(argv[i + 1..].iter().map(PathBuf::from));
                break;
            }
            "-dW" => a.zero_warning = true,
            _ if arg.starts_with("-d") && arg.len() > 2 => a.ignored.push(arg.to_string()),
            _ => return Err(format!("unknown option '{arg}'")),
        }
        i += 1;
    }
    Ok(a)
}

pub const USAGE: &str = "\
Usage : fulcrum [-f <cfgfile|cfgdir>]* [ -vdVD ] [ -n <maxconn> ] [ -N <maxpconn> ]
        [ -p <pidfile> ] [ -q ] [ -c ] [ -cc <cond> ] [ -sf/-st <pid>* ]
        [ -W | -Ws ] [ -S <socket>[,<option>]* ]
        fulcrum testserver [-L <addr:port>]... [-n <name>] [-t <threads>] [--mode http|echo|sink]
        fulcrum demo
        fulcrum explain -f <cfgfile> [--frontend NAME] [--src IP:PORT] [--dst IP:PORT]
                [--tls-sni NAME] [--down SRV,...] [--state-file FILE] [--map REF=FILE]
                [--acl REF=FILE] REQUEST   (REQUEST: HTTP/1.1 text, a file, or - for stdin)
        -h prints this help (a Fulcrum extension: HAProxy has no -h).
        -v displays version ; -vv shows known build options.
        -d enters debug mode (foreground, one line per session on stderr) ;
        -db only disables background mode ; -D goes daemon ; -q quiet mode
        -c check mode : only check config files and exit
        -cc check condition : evaluate a condition and exit (0 true, 1 false)
        -p writes pids of all children to this file
        -sf/-st [pid ]* finishes/terminates old pids once the new process listens
        -W/-Ws accepted (-Ws: systemd notify, foreground); SIGUSR2 reloads in place
        -S binds an admin runtime API socket (HAProxy's master CLI; `reload` works there)
";

/// `-v`, `-vv`: the version, then (`-vv`) the build as HAProxy lists its own.
pub fn print_version(level: u8) {
    println!(
        "Fulcrum version {} - reads HAProxy {} configuration",
        super::VERSION,
        fulcrum_config::HAPROXY_COMPAT_VERSION
    );
    if level > 1 {
        println!("Running on: {} {}", std::env::consts::OS, std::env::consts::ARCH);
        println!("Build options :");
        println!("  Rust edition 2021, tokio (current-thread per worker), socket2");
        println!(
            "Feature list : {}",
            fulcrum_config::FEATURES.iter().map(|f| format!("+{f}")).collect::<Vec<_>>().join(" ")
        );
        // HAProxy's line, with Fulcrum's own algorithms.
        println!("Built with zlib-rs (zlib in Rust), zstd and brotli for compression.");
        println!(
            "Compression algorithms supported : identity(\"identity\"), deflate(\"deflate\"), \
             raw-deflate(\"deflate\"), gzip(\"gzip\"), zstd(\"zstd\"), br(\"br\")"
        );
        // HAProxy 2.6's lines for the multiplexers Fulcrum has (no `proto none`).
        println!("Available multiplexer protocols :");
        println!("(protocols marked as <default> cannot be specified using 'proto' keyword)");
        println!("       fcgi : mode=HTTP  side=BE     mux=FCGI  flags=HTX|HOL_RISK|NO_UPG");
        println!("         h2 : mode=HTTP  side=FE|BE  mux=H2    flags=HTX|HOL_RISK|NO_UPG");
        println!("  <default> : mode=HTTP  side=FE|BE  mux=H1    flags=HTX");
        println!("         h1 : mode=HTTP  side=FE|BE  mux=H1    flags=HTX|NO_UPG");
        println!("  <default> : mode=TCP   side=FE|BE  mux=PASS  flags=");
        println!();
        println!("Available polling systems :");
        println!("      epoll : pref=300,  test result OK");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Args, String> {
        parse(&s.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn several_config_files_and_check() {
        let a = p("-f a.cfg -f dir -c -q").expect("parses");
        assert_eq!(a.configs, vec![PathBuf::from("a.cfg"), PathBuf::from("dir")]);
        assert!(a.check && a.quiet);
    }

    #[test]
    fn sf_takes_pids_until_next_flag() {
        let a = p("-f x.cfg -sf 10 11 -d").expect("parses");
        assert_eq!(a.finish_pids, vec![10, 11]);
        assert!(a.debug);
        let a = p("-st 7").expect("parses");
        assert_eq!(a.terminate_pids, vec![7]);
    }

    #[test]
    fn haproxy_debug_flags_are_accepted_and_noted() {
        let a = p("-d -dM -dI -dW").expect("parses");
        assert_eq!(a.ignored, vec!["-dM", "-dI"]);
        assert!(a.zero_warning);
    }

    #[test]
    fn bad_flags_are_refused() {
        assert!(p("-Z").is_err());
        assert!(p("-f").is_err());
        assert!(p("-sf abc").is_err());
        assert!(p("-S").is_err(), "-S needs a socket");
    }

    #[test]
    fn master_worker_flags_of_systemd_units() {
        let a =
            p("-Ws -f /etc/haproxy/haproxy.cfg -p /run/haproxy.pid -S /run/haproxy-master.sock")
                .expect("parses");
        assert!(a.master_worker && a.systemd);
        assert_eq!(a.master_sockets, vec!["/run/haproxy-master.sock"]);
        let a = p("-W -c -q").expect("parses");
        assert!(a.master_worker && !a.systemd && a.check);
    }

    #[test]
    fn versions() {
        assert_eq!(p("-v").expect("parses").version, 1);
        assert_eq!(p("-vv").expect("parses").version, 2);
        assert!(p("-h").expect("parses").help && p("--help").expect("parses").help);
    }
}
