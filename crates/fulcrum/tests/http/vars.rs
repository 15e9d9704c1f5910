//! `set-var` conditions (`ifexists`, `ifnotexists`, `ifempty`, `ifnotempty`, `ifset`,
//! `ifnotset`, `ifgt`, `iflt`) on actions and on the `set-var()` converter, for every scope,
//! compared with HAProxy 2.6.

use crate::px::*;

#[test]
fn set_var_conditions_decide_each_store_as_haproxy_does() {
    let srv = server("s1");
    let cfg = format!(
        "{DEFAULTS}frontend fe\n bind {{fe0}}\n default_backend be\n\
         backend be\n server s1 {}\n\
         http-response set-var(txn.a,ifexists) str(no)\n\
         http-response set-var(txn.b) str(one)\n\
         http-response set-var(txn.b,ifnotexists) str(no)\n\
         http-response set-var(txn.c,ifset) str(no)\n\
         http-response set-var(txn.c,ifexists) str(created-by-ifset)\n\
         http-response set-var(txn.d,ifnotset) int(5)\n\
         http-response set-var(txn.d,ifgt) int(7)\n\
         http-response set-var(txn.d,ifgt) int(3)\n\
         http-response set-var(txn.e) int(5)\n\
         http-response set-var(txn.e,iflt) int(2)\n\
         http-response set-var(txn.e,iflt) int(9)\n\
         http-response set-var(txn.f,ifempty) int(0)\n\
         http-response set-var(txn.f,ifempty) str()\n\
         http-response set-var(txn.g,ifnotempty) str()\n\
         http-response set-var(txn.g,ifnotempty) str(full)\n\
         http-response set-var(txn.h) str(text)\n\
         http-response set-var(txn.h,ifgt) int(1)\n\
         http-response set-var(proc.p,ifexists) str(proc-exists)\n\
         http-response unset-var(proc.q)\n\
         http-response set-var(proc.q,ifnotset,ifnotempty) str(q)\n\
         http-response set-var-fmt(txn.i,ifnotexists) \"fmt-%[var(txn.b)]\"\n\
         http-response set-header x-vars \"a=%[var(txn.a)] b=%[var(txn.b)] c=%[var(txn.c)] d=%[var(txn.d)] e=%[var(txn.e)] f=%[var(txn.f)] g=%[var(txn.g)] h=%[var(txn.h)] p=%[var(proc.p)] q=%[var(proc.q)] i=%[var(txn.i)]\"\n\
         http-request deny if {{ req.hdr(x-cust),set-var(sess.cust,ifnotempty,ifnotset),length -m int 0 }}\n\
         http-response set-header x-cust \"%[var(sess.cust)]\"\n",
        srv.addr()
    );
    each(|t| {
        let px = t.start(&cfg);
        let mut cl = px.client();
        let first = cl.request(b"GET / HTTP/1.1\r\nHost: t\r\nX-Cust: foobar\r\n\r\n");
        // The session variable is set now: `ifnotset` keeps it for the next request.
        let second = cl.request(b"GET / HTTP/1.1\r\nHost: t\r\nX-Cust: other\r\n\r\n");
        let empty = px.get_with("/", &["X-Cust: "]);
        [first, second, empty].map(|r| {
            (
                r.status,
                r.header("x-vars").map(str::to_string),
                r.header("x-cust").map(str::to_string),
            )
        })
    });
}

#[test]
fn concat_appends_its_strings_and_a_variable_when_it_exists() {
    let cfg = format!(
        "{DEFAULTS}frontend fe\n bind {{fe0}}\n\
         http-request set-var(txn.mid) str(middle)\n\
         http-request set-var(txn.num) int(42)\n\
         http-request return status 200 content-type text/plain \
         lf-string \"%[path,concat(<,txn.mid,>)] %[str(n),concat(=,txn.num)] \
         %[str(x),concat(,txn.none,!)] %[str(only),concat(-start)]\"\n"
    );
    each(|t| {
        let px = t.start(&cfg);
        let r = px.get("/p");
        assert_eq!((r.status, r.text().as_str()), (200, "/p<middle> n=42 x! only-start"));
        r.text()
    });
}
