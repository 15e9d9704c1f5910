//! Public API tests: `load` over several sources, defaults inheritance (including `from`),
//! error aggregation, and `eval_condition` as `fulcrum -cc` uses it.

use std::time::Duration;

use fulcrum_config::*;

fn env(name: &str) -> Option<String> {
    match name {
        "SSL" => Some("yes".into()),
        "ZERO" => Some("0".into()),
        _ => None,
    }
}

fn src(name: &str, text: &str) -> Source {
    Source { name: name.into(), text: text.into() }
}

fn load_ok(sources: &[Source]) -> Loaded {
    load(sources, &env).unwrap_or_else(|d| panic!("load failed: {d:#?}"))
}

const TIMEOUTS: &str = "defaults\n timeout connect 1s\n timeout client 2s\n timeout server 3s\n";

#[test]
fn eval_condition_like_cc() {
    assert_eq!(eval_condition("version_atleast(2.6)", &env), Ok(true));
    assert_eq!(eval_condition("version_atleast(2.7)", &env), Ok(false));
    assert_eq!(eval_condition(r#"streq("$SSL",yes) && !"${ZERO}""#, &env), Ok(true));
    assert_eq!(eval_condition("defined(SSL) || feature(OPENSSL)", &env), Ok(true));
    assert_eq!(eval_condition("", &env), Ok(false));
    assert!(eval_condition("bogus", &env).is_err());
    assert!(eval_condition("\"unterminated", &env).is_err());
}

#[test]
fn defaults_are_copied_then_overridden() {
    let text = format!(
        "{TIMEOUTS} retries 9\n balance leastconn\n default-server weight 4\n\
         defaults named from\n\
         defaults named\n timeout server 10s\n\
         defaults child from named\n retries 1\n\
         frontend fe\n bind :80\n default_backend a\n\
         backend a\n timeout connect 7s\n server s 10.0.0.1:80\n\
         backend b from child\n server s 10.0.0.1:80\n"
    );
    let loaded = load(&[src("d.cfg", &text)], &env);
    // `defaults named from` lacks its name: reported, and the rest still loads.
    let diags = loaded.expect_err("bad from");
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(
        diags[0].to_string(),
        "parsing [d.cfg:8] : 'defaults' expects a defaults section name after 'from'."
    );

    let text = text.replace("defaults named from\n", "");
    let cfg = load_ok(&[src("d.cfg", &text)]).config;
    let a = cfg.proxy("a").expect("a");
    // `a` follows the last defaults above it (`child`), which starts from `named` (fresh,
    // since a new defaults section resets everything) and then sets retries 1.
    assert_eq!(a.retries, 1);
    assert_eq!(a.timeouts.connect, Some(Duration::from_secs(7)));
    assert_eq!(a.timeouts.server, Some(Duration::from_secs(10)));
    assert_eq!(a.timeouts.client, None);
    assert_eq!(a.balance, Balance::RoundRobin);
    assert_eq!(a.servers[0].weight, 1);
    let b = cfg.proxy("b").expect("b");
    assert_eq!((b.retries, b.timeouts.server), (1, Some(Duration::from_secs(10))));
}

#[test]
fn proxy_inherits_balance_and_default_server() {
    let text = format!(
        "{TIMEOUTS} retries 9\n balance leastconn\n default-server weight 4 backup\n\
         listen l\n bind :80\n server s 10.0.0.1:80\n"
    );
    let cfg = load_ok(&[src("i.cfg", &text)]).config;
    let l = cfg.proxy("l").expect("l");
    assert_eq!((l.retries, &l.balance), (9, &Balance::LeastConn));
    assert_eq!((l.servers[0].weight, l.servers[0].backup), (4, true));
    assert_eq!(l.timeouts.client, Some(Duration::from_secs(2)));
}

#[test]
fn several_files_are_one_configuration() {
    let a = src(
        "a.cfg",
        &format!("global\n nbthread 2\n{TIMEOUTS}frontend fe\n bind :80\n default_backend be\n"),
    );
    let b = src("b.cfg", "global\n maxconn 50\nbackend be\n server s 10.0.0.1:80\n");
    let cfg = load_ok(&[a, b]).config;
    assert_eq!((cfg.global.nbthread, cfg.global.maxconn), (Some(2), Some(50)));
    let be = cfg.proxy("be").expect("be");
    assert_eq!(be.timeouts.server, Some(Duration::from_secs(3)), "defaults carry across files");
    assert_eq!(&*be.span.file, "b.cfg");
    assert_eq!(be.span.line, 3);
}

#[test]
fn all_errors_of_all_files_are_reported() {
    let a = src("a.cfg", "global\n bogus1\n nbthread 0\nlisten l\n bind :80\n bogus2\n");
    let b = src("b.cfg", "listen m\n bind :81\n server s 10.0.0.1:80 track x/y\n.if 1\n");
    let diags = load(&[a, b], &env).expect_err("errors");
    let text: Vec<String> = diags.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            "parsing [a.cfg:2] : unknown keyword 'bogus1' in 'global' section",
            "parsing [a.cfg:3] : 'nbthread' value must be between 1 and 64 (was 0)",
            "parsing [a.cfg:6] : unknown keyword 'bogus2' in 'listen' section",
            "parsing [b.cfg:4] : non-terminated '.if' block.",
            "[b.cfg:3] : 'server m/s' : unable to find required proxy 'x' for tracking.",
        ]
    );
    assert!(diags.iter().all(|d| d.severity == Severity::Alert));
}

#[test]
fn warnings_come_back_with_a_loaded_config() {
    let loaded = load_ok(&[src("w.cfg", "listen l\n bind :80\n contimeout 5s\n")]);
    let msgs: Vec<&str> = loaded.diagnostics.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert!(msgs[0]
        .starts_with("'contimeout' was removed in HAProxy 2.1; accepted as 'timeout connect 5s'"));
    assert!(msgs[1].starts_with("missing timeouts for proxy 'l'."));
    let l = loaded.config.proxy("l").expect("l");
    assert_eq!(l.timeouts.connect, Some(Duration::from_secs(5)));
    assert_eq!(l.binds[0].addrs, [BindAddr::Inet("0.0.0.0:80".parse().expect("addr"))]);
}

#[test]
fn cpus_for_thread_is_exported() {
    let text =
        format!("global\n nbthread 4\n cpu-map auto:1/1-4 4-7\n{TIMEOUTS}listen l\n bind :80\n");
    let cfg = load_ok(&[src("c.cfg", &text)]).config;
    let pins: Vec<_> = (1..=4).map(|t| cpus_for_thread(&cfg.global.cpu_map, t, 4)).collect();
    assert_eq!(pins, [Some(vec![4]), Some(vec![5]), Some(vec![6]), Some(vec![7])]);
}

#[test]
fn a_proxy_backlog_comes_from_defaults_and_splice_settings_load_without_effect() {
    let text = format!(
        "global\n nosplice\n maxpipes 1024\n tune.pipesize 65536\n nokqueue\n noevports\n\
         {TIMEOUTS} backlog 2048\n\
         frontend a\n bind :80\n default_backend b\n\
         frontend c\n backlog 10\n bind :81 backlog 5\n default_backend b\n\
         backend b\n server s 10.0.0.1:80\n"
    );
    let cfg = load_ok(&[src("b.cfg", &text)]).config;
    let a = cfg.proxy("a").expect("a");
    let c = cfg.proxy("c").expect("c");
    assert_eq!((a.backlog, a.binds[0].backlog), (Some(2048), None));
    assert_eq!((c.backlog, c.binds[0].backlog), (Some(10), Some(5)));
    // HAProxy's messages for what they lack or have too much of, all reported at once.
    let bad = "global\n maxpipes\n nosplice 1\n\
               defaults\n backlog\n\
               frontend f\n bind :80\n backlog x\n";
    let diags = load(&[src("x.cfg", bad)], &env).expect_err("bad lines");
    let got: Vec<String> = diags.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        got,
        [
            "parsing [x.cfg:2] : 'maxpipes' expects an integer argument.",
            "parsing [x.cfg:3] : 'nosplice' cannot handle unexpected argument '1'.",
            "parsing [x.cfg:5] : 'backlog' expects an integer argument.",
            "parsing [x.cfg:8] : 'backlog' expects an integer argument.",
        ]
    );
}

#[test]
fn http_send_name_header_needs_its_header_name() {
    let ok = format!(
        "{TIMEOUTS} mode http\nfrontend f\n bind :80\n default_backend b\n\
         backend b\n http-send-name-header X-Srv\n server s 10.0.0.1:80\n"
    );
    let cfg = load_ok(&[src("n.cfg", &ok)]).config;
    assert_eq!(cfg.proxy("b").expect("b").send_name_header.as_deref(), Some("X-Srv"));
    let bad = ok.replace(" X-Srv", "");
    let diags = load(&[src("n.cfg", &bad)], &env).expect_err("no header name");
    assert_eq!(
        diags[0].to_string(),
        "parsing [n.cfg:10] : 'http-send-name-header' requires a header string."
    );
}
