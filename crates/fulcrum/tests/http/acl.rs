//! ACLs: every fetch and converter below, matched through `use_backend`. Each table runs in one
//! proxy: row `id` becomes `acl case_<id> req.hdr(x-case) -m str <id>`, `acl t_<id> <acl>` and
//! `use_backend yes if case_<id> t_<id>`, with `default_backend no`; each request carries
//! `X-Case: <id>` and must land on the `yes` or the `no` server.

use std::time::Duration;

use crate::px::*;

/// A request of a table row.
#[derive(Clone, Debug)]
pub struct Req {
    method: &'static str,
    target: String,
    version: &'static str,
    headers: Vec<String>,
}

pub fn rq(target: &str) -> Req {
    Req { method: "GET", target: target.into(), version: "HTTP/1.1", headers: Vec::new() }
}

impl Req {
    pub fn method(mut self, m: &'static str) -> Req {
        self.method = m;
        self
    }
    pub fn v10(mut self) -> Req {
        self.version = "HTTP/1.0";
        self
    }
    pub fn h(mut self, line: &str) -> Req {
        self.headers.push(line.into());
        self
    }
    /// The raw request, with `Host: t` unless a Host is given, and `Connection: close`.
    pub fn raw(&self, case: &str) -> Vec<u8> {
        let mut s = format!("{} {} {}\r\n", self.method, self.target, self.version);
        if !self.headers.iter().any(|h| h.to_ascii_lowercase().starts_with("host:")) {
            s.push_str("Host: t\r\n");
        }
        if !case.is_empty() {
            s.push_str(&format!("X-Case: {case}\r\n"));
        }
        for h in &self.headers {
            s.push_str(h);
            s.push_str("\r\n");
        }
        s.push_str("Connection: close\r\n\r\n");
        s.into_bytes()
    }
}

pub struct Row {
    id: &'static str,
    acl: String,
    yes: Vec<Req>,
    no: Vec<Req>,
}

pub fn row(id: &'static str, acl: &str, yes: Vec<Req>, no: Vec<Req>) -> Row {
    Row { id, acl: acl.into(), yes, no }
}

/// Requests for plain paths.
fn paths(p: &[&str]) -> Vec<Req> {
    p.iter().map(|p| rq(p)).collect()
}

/// Runs a table: `extra` goes into the frontend before the rules, `sections` after the
/// backends, `files` into the scratch directory. Returns where each request went.
fn run_table(
    t: Target,
    rows: &[Row],
    extra: &str,
    sections: &str,
    files: &[(&str, &str)],
) -> Vec<String> {
    let (yes, no) = (server("yes"), server("no"));
    let mut cfg = format!("{DEFAULTS}frontend fe\n bind {{fe0}}\n{extra}");
    for r in rows {
        let id = r.id;
        cfg.push_str(&format!(
            " acl case_{id} req.hdr(x-case) -m str {id}\n acl t_{id} {}\n use_backend yes if case_{id} t_{id}\n",
            r.acl
        ));
    }
    cfg.push_str(&format!(
        " default_backend no\nbackend yes\n server y {}\nbackend no\n server n {}\n{sections}",
        yes.addr(),
        no.addr()
    ));
    let px = t.start_with(&cfg, files);
    let mut wrong = Vec::new();
    let mut seen = Vec::new();
    for r in rows {
        for (want, reqs) in [("yes", &r.yes), ("no", &r.no)] {
            for q in reqs {
                let raw = q.raw(r.id);
                let resp = px.send(&raw);
                let got = match resp.server() {
                    s @ ("yes" | "no") => s,
                    _ => "neither",
                };
                if got != want {
                    wrong.push(format!(
                        "{} `{}`: {} went to {got} (status {}), want {want}",
                        r.id,
                        r.acl,
                        show(&raw).split("\\r\\nConnection").next().unwrap_or(""),
                        resp.status
                    ));
                }
                seen.push(format!("{} {got}", r.id));
            }
        }
    }
    assert!(wrong.is_empty(), "{} wrong:\n{}", wrong.len(), wrong.join("\n"));
    seen
}

#[test]
fn path_and_url_fetches_match_as_haproxy() {
    let rows = vec![
        row("path", "path /a/b", paths(&["/a/b", "/a/b?x=1"]), paths(&["/a/b/", "/a", "/A/b"])),
        row("path_i", "path -i /a/b", paths(&["/A/B"]), paths(&["/a/bc"])),
        row("several", "path /a /b", paths(&["/a", "/b"]), paths(&["/c"])),
        row(
            "beg",
            "path_beg /api",
            paths(&["/api", "/api/v1", "/apix"]),
            paths(&["/ap", "/x/api"]),
        ),
        row(
            "end",
            "path_end .jpg",
            paths(&["/a.jpg", "/x/b.jpg?q=1"]),
            paths(&["/a.jpg/x", "/a.JPG"]),
        ),
        row("end_i", "path_end -i .jpg", paths(&["/a.JPG"]), paths(&["/a.png"])),
        row("sub", "path_sub adm", paths(&["/x/admin/y"]), paths(&["/ad/m", "/?adm"])),
        row("reg", "path_reg ^/u/[0-9]+$", paths(&["/u/42"]), paths(&["/u/x", "/u/42/"])),
        row(
            "dir",
            "path_dir api",
            paths(&["/api", "/api/x", "/x/api/y"]),
            paths(&["/apix", "/x/myapi"]),
        ),
        row("len", "path -m len 4", paths(&["/abc", "/abc?long=query"]), paths(&["/ab"])),
        row("found", "query -m found", paths(&["/?x", "/a?b=1"]), paths(&["/"])),
        row("url", "url /a?b=1", paths(&["/a?b=1"]), paths(&["/a", "/a?b=2"])),
        row("url_beg", "url_beg http://", paths(&["http://t/x"]), paths(&["/x"])),
        row(
            "absolute_path",
            "path /x",
            vec![rq("http://t/x"), rq("http://t:80/x?y")],
            paths(&["http://t/y"]),
        ),
        row(
            "param",
            "url_param(id) -m str 7",
            paths(&["/?id=7", "/p?x=1&id=7"]),
            paths(&["/?id=8", "/?xid=7", "/id=7"]),
        ),
        row(
            "param_int",
            "url_param(id) -m int gt 5",
            paths(&["/?id=6"]),
            paths(&["/?id=5", "/?id=x"]),
        ),
        row("query", "query a=1&b=2", paths(&["/?a=1&b=2"]), paths(&["/?a=1", "/a=1&b=2"])),
        row("query_sub", "query -m sub b=2", paths(&["/?a=1&b=2"]), paths(&["/?b=3"])),
        row(
            "method",
            "method POST PUT",
            vec![rq("/").method("POST"), rq("/").method("PUT")],
            vec![rq("/"), rq("/").method("HEAD"), rq("/").method("post")],
        ),
        row("ver", "req.ver 1.0", vec![rq("/").v10()], paths(&["/"])),
        row("ver11", "req.ver 1.1", paths(&["/"]), vec![rq("/").v10()]),
    ];
    each(|t| run_table(t, &rows, "", "", &[]));
}

fn hdrs(lines: &[&str]) -> Vec<Req> {
    lines.iter().map(|l| rq("/").h(l)).collect()
}

#[test]
fn header_and_cookie_fetches_match_as_haproxy() {
    let rows = vec![
        row(
            "hdr",
            "hdr(x-a) v",
            hdrs(&["X-A: v", "x-a: v", "X-A: w, v"]),
            hdrs(&["X-A: vv", "X-B: v", "X-A: V"]),
        ),
        row("hdr_i", "hdr(x-a) -i v", hdrs(&["X-A: V"]), hdrs(&["X-A: w"])),
        row(
            "hdr_two_lines",
            "hdr(x-a) v2",
            vec![rq("/").h("X-A: v1").h("X-A: v2")],
            hdrs(&["X-A: v1"]),
        ),
        row(
            "hdr_beg",
            "hdr_beg(host) www.",
            hdrs(&["Host: www.example.com"]),
            hdrs(&["Host: example.com"]),
        ),
        row(
            "hdr_end",
            "hdr_end(host) .com",
            hdrs(&["Host: a.com"]),
            hdrs(&["Host: a.org", "Host: a.com.org"]),
        ),
        row(
            "hdr_sub",
            "hdr_sub(user-agent) bot",
            hdrs(&["User-Agent: x robot y"]),
            hdrs(&["User-Agent: b-o-t"]),
        ),
        row("hdr_reg", "hdr_reg(x-a) ^[a-c]+$", hdrs(&["X-A: abc"]), hdrs(&["X-A: abd", "X-A: "])),
        row(
            "hdr_dom",
            "hdr_dom(host) example.com",
            hdrs(&["Host: example.com", "Host: www.example.com", "Host: a.example.com.org"]),
            hdrs(&["Host: notexample.com", "Host: example.co"]),
        ),
        row(
            "hdr_cnt",
            "hdr_cnt(x-a) eq 2",
            vec![rq("/").h("X-A: 1").h("X-A: 2"), rq("/").h("X-A: 1, 2")],
            vec![rq("/").h("X-A: 1"), rq("/")],
        ),
        row("hdr_cnt0", "hdr_cnt(x-a) eq 0", paths(&["/"]), hdrs(&["X-A: 1"])),
        row("hdr_len", "hdr_len(x-a) eq 3", hdrs(&["X-A: abc"]), hdrs(&["X-A: ab", "X-A: abcd"])),
        row("hdr_found", "hdr(x-a) -m found", hdrs(&["X-A: 1", "X-A:"]), paths(&["/"])),
        row("req_hdr", "req.hdr(x-a) b", hdrs(&["X-A: a,b", "X-A: b"]), hdrs(&["X-A: a"])),
        row(
            "hdr_ip",
            "hdr_ip(x-forwarded-for) 10.0.0.0/8",
            hdrs(&["X-Forwarded-For: 10.1.2.3", "X-Forwarded-For: 192.168.0.1, 10.0.0.1"]),
            hdrs(&["X-Forwarded-For: 192.168.0.1", "X-Forwarded-For: junk"]),
        ),
        row(
            "hdr_ip_last",
            "hdr_ip(x-forwarded-for,-1) 10.0.0.1",
            hdrs(&["X-Forwarded-For: 192.168.0.1, 10.0.0.1"]),
            hdrs(&["X-Forwarded-For: 10.0.0.1, 192.168.0.1"]),
        ),
        row("hdr_first", "hdr(x-a,1) a", hdrs(&["X-A: a, b"]), hdrs(&["X-A: b, a"])),
        row(
            "cook",
            "cook(sess) abc",
            hdrs(&["Cookie: a=1; sess=abc", "Cookie: sess=abc"]),
            hdrs(&["Cookie: sess=abcd", "Cookie: xsess=abc"]),
        ),
        row(
            "cook_found",
            "cook(sess) -m found",
            hdrs(&["Cookie: a=1; sess=", "Cookie: sess=; a=1", "Cookie: sess =1"]),
            hdrs(&["Cookie: other=1", "X-Cookie: sess=1"]),
        ),
        row(
            "cook_two",
            "cook(b) 2",
            vec![rq("/").h("Cookie: a=1").h("Cookie: b=2")],
            hdrs(&["Cookie: a=2"]),
        ),
    ];
    each(|t| run_table(t, &rows, "", "", &[]));
}

#[test]
fn a_cookie_header_holding_only_an_empty_cookie_yields_no_cookie() {
    // Surprise (HAProxy 2.6 quirk): an empty value is found after or before another cookie, but
    // a Cookie header that is only `sess=` yields nothing at all.
    let rows = vec![row(
        "cook_empty",
        "cook(sess) -m found",
        hdrs(&["Cookie: a=1; sess="]),
        hdrs(&["Cookie: sess="]),
    )];
    each(|t| run_table(t, &rows, "", "", &[]));
}

#[test]
fn req_fhdr_takes_the_whole_line_without_splitting_at_commas() {
    let rows = vec![row("req_fhdr", "req.fhdr(x-a) a,b", hdrs(&["X-A: a,b"]), hdrs(&["X-A: b"]))];
    each(|t| run_table(t, &rows, "", "", &[]));
}

#[test]
fn connection_and_backend_fetches_match_as_haproxy() {
    let rows = vec![
        row("src", "src 127.0.0.1", paths(&["/"]), vec![]),
        row("src_net", "src 10.0.0.0/8 192.168.0.0/16", vec![], paths(&["/"])),
        row("src_port", "src_port gt 1023", paths(&["/"]), vec![]),
        row("src_port_lt", "src_port lt 1024", vec![], paths(&["/"])),
        row("dst", "dst 127.0.0.1", paths(&["/"]), vec![]),
        row("dst_port", "dst_port {port0}", paths(&["/"]), vec![]),
        row("dst_port_other", "dst_port 1", vec![], paths(&["/"])),
        row("true", "always_true", paths(&["/"]), vec![]),
        row("false", "always_false", vec![], paths(&["/"])),
        row("nbsrv", "nbsrv(no) eq 1", paths(&["/"]), vec![]),
        row("nbsrv_down", "nbsrv(down) eq 0", paths(&["/"]), vec![]),
        row("be_conn_idle", "be_conn(down) eq 0", paths(&["/"]), vec![]),
    ];
    each(|t| run_table(t, &rows, "", &format!("backend down\n server d {DEAD} disabled\n"), &[]));
}

#[test]
fn be_conn_counts_sessions_in_progress_on_a_backend() {
    each(|t| {
        let (yes, no, slow) = (server("y"), server("n"), server("slow"));
        let px = t.start(&format!(
            "{DEFAULTS}frontend fe\n bind {{fe0}}\n\
             use_backend slow if {{ path_beg /slow }}\n\
             use_backend yes if {{ be_conn(slow) gt 0 }}\n default_backend no\n\
             backend slow\n server s {}\nbackend yes\n server y {}\nbackend no\n server n {}\n",
            slow.addr(),
            yes.addr(),
            no.addr()
        ));
        assert_eq!(px.get("/").server(), "n");
        let addr = px.addr();
        let busy = std::thread::spawn(move || {
            Client::connect(addr).request(get("/slow?t=800").as_bytes())
        });
        assert!(eventually(Duration::from_secs(2), || slow.counts().requests == 1));
        assert_eq!(px.get("/").server(), "y", "one session in progress on `slow`");
        assert_eq!(busy.join().expect("busy").server(), "slow");
        assert!(eventually(Duration::from_secs(2), || px.get("/").server() == "n"));
    });
}

#[test]
fn converters_transform_samples_as_haproxy() {
    let files = [
        ("hosts.map", "# host to name\napi.example.com api\nwww.example.com www\n"),
        ("prefix.map", "/static/ static\n/api/ api\n"),
        ("dom.map", "corp.example corp\n"),
        ("reg.map", "\\.(png|jpg)$ img\n^/u/[0-9]+ user\n"),
    ];
    let rows = vec![
        row(
            "lower",
            "req.hdr(host),lower -m str example.com",
            hdrs(&["Host: EXAMPLE.com"]),
            hdrs(&["Host: example.org"]),
        ),
        row(
            "upper",
            "req.hdr(x-a),upper -m str ABC",
            hdrs(&["X-A: abc", "X-A: aBc"]),
            hdrs(&["X-A: abd"]),
        ),
        row(
            "field",
            "req.hdr(x-a),field(2,:) -m str b",
            hdrs(&["X-A: a:b:c"]),
            hdrs(&["X-A: b:a", "X-A: ab"]),
        ),
        row(
            "field_neg",
            "req.hdr(x-a),field(-1,:) -m str c",
            hdrs(&["X-A: a:b:c"]),
            hdrs(&["X-A: c:b"]),
        ),
        row(
            "word",
            "req.hdr(x-a),word(2,/) -m str b",
            hdrs(&["X-A: /a//b/c"]),
            hdrs(&["X-A: b/a"]),
        ),
        row(
            "regsub",
            "req.hdr(x-a),regsub(-,_,g) -m str a_b_c",
            hdrs(&["X-A: a-b-c"]),
            hdrs(&["X-A: a-b"]),
        ),
        row(
            "regsub_first",
            "req.hdr(x-a),regsub(-,_) -m str a_b-c",
            hdrs(&["X-A: a-b-c"]),
            hdrs(&["X-A: a_b_c"]),
        ),
        row(
            "regsub_i",
            "req.hdr(x-a),regsub(X,y,gi) -m str aya",
            hdrs(&["X-A: axa", "X-A: aXa"]),
            hdrs(&["X-A: aza"]),
        ),
        row(
            "chain",
            "req.hdr(host),lower,field(1,.) -m str api",
            hdrs(&["Host: API.Example.com"]),
            hdrs(&["Host: www.api.com"]),
        ),
        row(
            "map",
            "req.hdr(host),lower,map({dir}/hosts.map) -m str api",
            hdrs(&["Host: API.example.com"]),
            hdrs(&["Host: api.example.org"]),
        ),
        row(
            "map_default",
            "req.hdr(host),map({dir}/hosts.map,none) -m str none",
            hdrs(&["Host: other"]),
            hdrs(&["Host: www.example.com"]),
        ),
        row(
            "map_beg",
            "path,map_beg({dir}/prefix.map) -m str static",
            paths(&["/static/x.css", "/static/"]),
            paths(&["/static", "/x/static/"]),
        ),
        row(
            "map_dom",
            "req.hdr(host),map_dom({dir}/dom.map) -m str corp",
            hdrs(&["Host: corp.example", "Host: www.corp.example"]),
            hdrs(&["Host: xcorp.example"]),
        ),
        row(
            "map_reg",
            "path,map_reg({dir}/reg.map) -m str img",
            paths(&["/a/b.png", "/x.jpg"]),
            paths(&["/a.png/x", "/u/1.gif"]),
        ),
        row(
            "map_reg2",
            "path,map_reg({dir}/reg.map) -m str user",
            paths(&["/u/12/x"]),
            paths(&["/u/x"]),
        ),
    ];
    each(|t| run_table(t, &rows, "", "", &files));
}

#[test]
fn pattern_files_with_thousands_of_entries_match() {
    let mut paths_lst = String::from("# one path per line\n");
    let mut nets = String::new();
    let mut hosts = String::new();
    for i in 0..5000 {
        paths_lst.push_str(&format!("/p{i}\n"));
        nets.push_str(&format!("10.{}.{}.0/24\n", i / 256, i % 256));
        hosts.push_str(&format!("host{i}.example.com\n"));
    }
    nets.push_str("127.0.0.0/8\n");
    let files = [
        ("paths.lst", paths_lst.as_str()),
        ("nets.lst", nets.as_str()),
        ("hosts.lst", hosts.as_str()),
    ];
    let rows = vec![
        row(
            "paths",
            "path -f {dir}/paths.lst",
            paths(&["/p0", "/p2500", "/p4999"]),
            paths(&["/p5000", "/p", "/p1/x"]),
        ),
        row(
            "prefixes",
            "path_beg -f {dir}/paths.lst",
            paths(&["/p4999/x", "/p50000"]),
            paths(&["/q1"]),
        ),
        row("nets", "src -f {dir}/nets.lst", paths(&["/"]), vec![]),
        row(
            "hosts",
            "hdr(host) -i -f {dir}/hosts.lst",
            hdrs(&["Host: HOST4321.example.com"]),
            hdrs(&["Host: host5000.example.com"]),
        ),
    ];
    each(|t| run_table(t, &rows, "", "", &files));
}

#[test]
fn dynamic_use_backend_takes_its_name_from_a_map() {
    each(|t| {
        let (api, www, dflt) = (server("api"), server("www"), server("default"));
        let px = t.start_with(
            &format!(
                "{DEFAULTS}frontend fe\n bind {{fe0}}\n\
                 use_backend %[req.hdr(host),lower,map({{dir}}/hosts.map,b_www)]\n\
                 default_backend b_default\n\
                 backend b_api\n server a {}\nbackend b_www\n server w {}\nbackend b_default\n server d {}\n",
                api.addr(),
                www.addr(),
                dflt.addr()
            ),
            &[("hosts.map", "api.example.com b_api\nghost.example.com b_ghost\n")],
        );
        let to = |host: &str| {
            px.send(
                format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
            )
        };
        assert_eq!(to("API.example.com").server(), "api");
        assert_eq!(to("other.example.com").server(), "www");
        // A name that is no backend: the rule is skipped and the default backend serves.
        assert_eq!(to("ghost.example.com").server(), "default");
    });
}

#[test]
fn use_backend_rules_apply_in_order_and_without_a_match_or_default_the_answer_is_503() {
    each(|t| {
        let (a, b) = (server("a"), server("b"));
        let px = t.start(&format!(
            "{DEFAULTS}frontend fe\n bind {{fe0}}\n\
             acl is_a path_beg /a\n acl is_ab path_beg /ab\n\
             use_backend ba if is_a\n use_backend bb if is_ab || {{ hdr(x-b) -m found }}\n\
             use_backend bb unless {{ path_beg / }}\n\
             backend ba\n server a {}\nbackend bb\n server b {}\n",
            a.addr(),
            b.addr()
        ));
        assert_eq!(px.get("/ab").server(), "a", "first match wins");
        assert_eq!(px.get_with("/x", &["X-B: 1"]).server(), "b");
        assert_eq!(px.get("http://t/x").server(), "", "absolute-form: path is /x");
        let r = px.get("/x");
        assert_eq!(r.status, 503);
        assert_eq!((a.counts().requests, b.counts().requests), (1, 1));
    });
}

#[test]
fn acl_conditions_combine_with_or_not_and_anonymous_acls() {
    each(|t| {
        let (yes, no) = (server("y"), server("n"));
        // `if a b` is AND; `!` negates; `||` is OR; a name used twice in `acl` lines ORs them.
        let px = t.start(&format!(
            "{DEFAULTS}frontend fe\n bind {{fe0}}\n\
             acl two path /x\n acl two path /y\n acl hx hdr(x) 1\n\
             use_backend yes if two hx\n use_backend yes if {{ path /z }} !hx\n default_backend no\n\
             backend yes\n server y {}\nbackend no\n server n {}\n",
            yes.addr(),
            no.addr()
        ));
        let go = |p: &str, x: bool| {
            let h: &[&str] = if x { &["X: 1"] } else { &[] };
            px.get_with(p, h).server().to_string()
        };
        assert_eq!(go("/x", true), "y");
        assert_eq!(go("/y", true), "y");
        assert_eq!(go("/x", false), "n", "AND");
        assert_eq!(go("/z", false), "y");
        assert_eq!(go("/z", true), "n", "negation");
    });
}

#[test]
fn request_acls_in_response_rules_never_match_as_in_haproxy() {
    // HAProxy warns that these "will never match", and at run time their fetches fail: the
    // request has left the buffer. `!` of such an ACL is then true; `method` (kept with the
    // transaction) still works, and a named ACL with one usable line matches by that line.
    let srv = server("s1");
    let cfg = format!(
        "{DEFAULTS}listen li\n bind {{fe0}}\n server s1 {}\n\
         acl isr path_beg /r\n acl mixed path_beg /r\n acl mixed status 200\n\
         http-response set-header x-a yes if {{ hdr(x-server) -m found }}\n\
         http-response set-header x-b yes if {{ path_beg /r }}\n\
         http-response set-header x-c yes if !{{ path_beg /r }}\n\
         http-response set-header x-d yes if isr\n\
         http-response set-header x-e yes if mixed\n\
         http-response set-header x-f yes if {{ method GET }}\n\
         http-response set-header x-g yes if {{ url_param(s) 5 }}\n\
         http-response set-header x-h yes if {{ req.hdr(host) -m found }}\n",
        srv.addr()
    );
    each(|t| {
        let px = t.start(&cfg);
        let r = px.get("/r1?s=5");
        assert_eq!(r.status, 200);
        let set: Vec<&str> = ["x-a", "x-b", "x-c", "x-d", "x-e", "x-f", "x-g", "x-h"]
            .into_iter()
            .filter(|h| r.has(h))
            .collect();
        assert_eq!(set, ["x-c", "x-e", "x-f"]);
        set.join(",")
    });
}
