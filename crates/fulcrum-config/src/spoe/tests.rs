use super::*;

const CFG: &str = "\
frontend web
    mode http
    bind :8080
    filter spoe engine waf config /etc/waf.conf
    http-request send-spoe-group waf checks
    http-request deny if { var(txn.waf.block) -m bool }
    default_backend app
backend app
    mode http
    server s1 127.0.0.1:8000
backend agents
    mode tcp
    server a1 127.0.0.1:12345
";

fn load_with(conf: &str, spoe: &str) -> (Config, Vec<Diagnostic>) {
    let src = crate::Source { name: "h.cfg".into(), text: conf.into() };
    let mut c = crate::load(&[src], &|_| None).expect("loads").config;
    let spoe = spoe.to_string();
    let d = load_files(
        &mut c,
        &|f| {
            if f == "/etc/waf.conf" {
                Ok(spoe.clone())
            } else {
                Err("No such file or directory".into())
            }
        },
        &|_| None,
    );
    (c, d)
}

fn agent(c: &Config) -> &SpoeAgent {
    let p = c.proxies.iter().find(|p| p.name == "web").expect("web");
    p.filters
        .iter()
        .find_map(|f| match f {
            crate::cache::Filter::Spoe(s) => s.agent.as_deref(),
            _ => None,
        })
        .expect("an agent")
}

const SPOE: &str = "\
[other]
spoe-agent nope
    use-backend missing

[waf]
spoe-agent waf-agent
    messages check-ip
    groups checks
    option var-prefix waf
    option set-on-error err
    option set-process-time ptime
    no option async
    timeout hello 2s
    timeout idle  2m
    timeout processing 10ms
    use-backend agents
    max-frame-size 1024
    log global

spoe-message check-ip
    args ip=src path
    acl local src 127.0.0.1
    event on-frontend-http-request if local

spoe-message check-body
    args body=req.body method=method

spoe-group checks
    messages check-body
";

#[test]
fn a_file_for_its_engine() {
    let (c, d) = load_with(CFG, SPOE);
    assert!(d.iter().all(|d| !d.is_error()), "{d:?}");
    let a = agent(&c);
    assert_eq!(
        (a.name.as_str(), a.backend.as_str(), a.var_prefix.as_str()),
        ("waf-agent", "agents", "waf")
    );
    assert_eq!((a.on_error.as_deref(), a.process_time.as_deref()), (Some("err"), Some("ptime")));
    assert!(a.pipelining && !a.async_ && a.logs == [crate::model::LogEntry::Global]);
    assert_eq!(
        (a.timeout_hello, a.timeout_idle, a.timeout_processing),
        (Some(2000), Some(120000), Some(10))
    );
    assert_eq!(a.max_frame_size, 1024);
    assert_eq!(a.on_event, vec![0]);
    let m = &a.messages[0];
    assert_eq!((m.args[0].name.as_str(), m.args[1].name.as_str()), ("ip", ""));
    assert_eq!(m.event, Some(SpoeEvent::FrontendHttpRequest));
    assert!(m.cond.is_some() && m.acls.len() == 1);
    assert_eq!(a.groups.len(), 1);
    assert_eq!(a.messages[a.groups[0].messages[0]].name, "check-body");
}

fn errors(conf: &str, spoe: &str) -> Vec<String> {
    let (_, d) = load_with(conf, spoe);
    d.iter().filter(|d| d.is_error()).map(|d| d.to_string()).collect()
}

#[test]
fn haproxys_messages() {
    let e = errors(
        CFG,
        "[waf]\nspoe-agent a\n    bogus 1\n    timeout hello 2x\n    max-frame-size 10\n",
    );
    assert!(e[0].ends_with("unknown keyword 'bogus' in spoe-agent section."), "{e:?}");
    assert!(e[1].ends_with("unexpected character 'x' in 'timeout hello'."), "{e:?}");
    assert!(e[2].ends_with(
        "'max-frame-size' expects a positive integer argument in the range [256, 16380]."
    ));
    assert!(
        e[3].contains("[h.cfg:4]")
            && e[3].ends_with("'filter' : 'Error(s) found in configuration file /etc/waf.conf'"),
        "{e:?}"
    );
    let e = errors(CFG, "spoe-agent a\n    use-backend agents\n");
    assert!(e.iter().any(|m| m.ends_with("No SPOE agent found in file /etc/waf.conf'")), "{e:?}");
    let e = errors(CFG, "[waf]\nspoe-agent a\n    messages m\n");
    assert!(
        e[0].ends_with("No backend declared for SPOE agent 'a' declared at /etc/waf.conf:2'"),
        "{e:?}"
    );
    let e = errors(CFG, "[waf]\nspoe-agent a\n    messages m\n    use-backend agents\n");
    assert!(
        e[0].ends_with("SPOE agent 'a' try to use undefined SPOE message 'm' at /etc/waf.conf:2'"),
        "{e:?}"
    );
    let e = errors(
        CFG,
        "[waf]\nspoe-agent waf\n    use-backend app\n    groups checks\nspoe-group checks\n",
    );
    assert!(e[0].ends_with("Proxy web : backend 'app' used by SPOE agent 'waf' declared at /etc/waf.conf:2 does not support HTTP mode."), "{e:?}");
    let e = errors(CFG, "[waf]\nspoe-agent waf\n    use-backend agents\n");
    assert!(
        e[0].ends_with("unable to find SPOE group 'checks' into SPOE engine 'waf' configuration"),
        "{e:?}"
    );
    let conf = CFG.replace("engine waf config", "config");
    let e = errors(&conf, "spoe-agent other\n    use-backend agents\n");
    assert!(
        e[0].ends_with("unable to find SPOE engine 'waf' used by the send-spoe-group 'checks'"),
        "{e:?}"
    );
    let conf = CFG.replace("/etc/waf.conf", "/nonexistent");
    let e = errors(&conf, "");
    assert!(e[0].ends_with("'filter' : 'Could not open configuration file /nonexistent : No such file or directory'"), "{e:?}");
}

#[test]
fn filter_and_action_words() {
    let bad = |line: &str| {
        let conf = CFG
            .replace("    filter spoe engine waf config /etc/waf.conf\n", &format!("    {line}\n"));
        let src = crate::Source { name: "h.cfg".into(), text: conf };
        crate::load(&[src], &|_| None)
            .expect_err("refused")
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
    };
    assert!(bad("filter spoe engine waf")
        .iter()
        .any(|m| m.ends_with("'filter' : ''spoe' : missing config file'")));
    assert!(bad("filter spoe config")
        .iter()
        .any(|m| m.ends_with("'filter' : ''spoe' : 'config' option without value'")));
    assert!(bad("filter spoe foo bar")
        .iter()
        .any(|m| m.ends_with("'filter' : 'unknown keyword 'foo''")));
    let e = bad("http-request send-spoe-group waf");
    assert!(e.iter().any(|m| m.contains("expects 2 arguments: <engine-id> <group-id>")), "{e:?}");
}

#[test]
fn warnings_are_haproxys() {
    let (_, d) = load_with(CFG, "[waf]\nspoe-agent waf\n    use-backend agents\n    messages m\n    groups checks\nspoe-group checks\nspoe-message m\n    args src\n    foo\n");
    let w: Vec<String> = d.iter().map(|d| d.to_string()).collect();
    assert!(w.iter().any(|m| m.contains("missing timeouts for SPOE agent 'waf'")), "{w:?}");
    assert!(w.iter().any(|m| m.contains("Ignore SPOE message 'm' without event")), "{w:?}");
    assert!(w.iter().any(|m| m.contains("unknown keyword 'foo' in spoe-message section")), "{w:?}");
}

#[test]
fn timeouts_as_haproxy_reads_them() {
    let spoe = "[waf]\nspoe-agent waf\n    use-backend agents\n    groups checks\n    timeout hello 500us\n    timeout idle 0s\n    timeout processing 0\nspoe-group checks\n";
    let (c, d) = load_with(CFG, spoe);
    assert!(d.iter().all(|d| !d.is_error()), "{d:?}");
    let a = agent(&c);
    // Less than a millisecond is one; 0 is none (and HAProxy's warning).
    assert_eq!((a.timeout_hello, a.timeout_idle, a.timeout_processing), (Some(1), None, None));
    assert!(d.iter().any(|d| d.message.contains("missing timeouts")), "{d:?}");
    let e = errors(CFG, "[waf\nspoe-agent a\n");
    assert!(e.iter().any(|m| m.ends_with("empty scope name is forbidden.")), "{e:?}");
    let e = errors(CFG, "[w/af]\nspoe-agent a\n");
    assert!(
        e.iter().any(|m| m.ends_with("character '/' is not permitted in a scope name.")),
        "{e:?}"
    );
}
