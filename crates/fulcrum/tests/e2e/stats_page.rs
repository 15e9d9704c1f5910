//! The statistics page (`stats enable`, `stats uri`, `stats auth`, `stats admin`...): its
//! CSV compared with HAProxy 2.6's on the same configuration, Basic authentication, and the
//! HTML page in a real browser (headless Chromium, when installed): rows coloured by server
//! state, and the admin form changing a server's state, seen in live traffic.

use std::time::Duration;

use super::harness::*;

fn get(addr: std::net::SocketAddr, path: &str, extra: &str) -> (u16, String, String) {
    get_with(addr, path, extra)
}
use super::runtime_api::{csv_rows, field, same, shape};

const CSV_CFG: &str = "
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {fe0}
    default_backend be
backend be
    server up LIVE check inter 200ms
    server dead DEAD check inter 200ms
    server off LIVE disabled
listen stats
    bind {fe1}
    stats uri /st
    stats auth admin:s3cret
    stats auth ops:other
    stats realm Ops\\ area
";

#[test]
fn the_page_s_csv_is_haproxy_s_behind_basic_authentication() {
    let live = testserver("http", "live");
    let cfg =
        CSV_CFG.replace("LIVE", &live.addr.to_string()).replace("DEAD", &dead_addr().to_string());
    let mut seen = Vec::new();
    for which in ["fulcrum", "haproxy"] {
        let Some((_p, addrs, _)) = start_proxy(which, "stats-csv", &cfg) else { continue };
        let page = addrs[1];
        // No credentials, wrong ones: 401 in the configured realm.
        let (code, head, _) = get(page, "/st;csv", "");
        assert_eq!(code, 401, "{which}: {head}");
        let lower = head.to_ascii_lowercase();
        assert!(lower.contains("www-authenticate: basic realm=\"ops area\""), "{which}: {head}");
        let wrong = "Authorization: Basic YWRtaW46d3Jvbmc=\r\n"; // admin:wrong
        assert_eq!(get(page, "/st;csv", wrong).0, 401, "{which}");
        let auth = "Authorization: Basic b3BzOm90aGVy\r\n"; // ops:other
        let down = eventually(Duration::from_secs(5), || {
            get(page, "/st;csv", auth)
                .2
                .lines()
                .any(|l| l.starts_with("be,dead,") && l.contains(",DOWN,"))
        });
        assert!(down, "{which}: the dead server is seen DOWN");
        for _ in 0..2 {
            assert_eq!(http_get(addrs[0], "/").map(|r| r.0), Some(200));
        }
        // A proxy counts a response once its stream has ended, which may be just after the
        // client read it (HAProxy sometimes showed one 2xx of the two): the page is read until
        // both are counted.
        let mut last = (0, String::new(), String::new());
        let counted = eventually(Duration::from_secs(5), || {
            last = get(page, "/st;csv;norefresh", auth);
            let (_, rows) = csv_rows(&last.2);
            rows.iter().any(|r| {
                field(r, "pxname") == Some("fe")
                    && field(r, "svname") == Some("FRONTEND")
                    && field(r, "hrsp_2xx") == Some("2")
            })
        });
        assert!(counted, "{which}: both 2xx counted: {}", last.2);
        let (code, head, csv) = last;
        assert_eq!(code, 200, "{which}");
        assert!(head.to_ascii_lowercase().contains("content-type: text/plain"), "{which}: {head}");
        let (header, rows) = csv_rows(&csv);
        let off = rows.iter().find(|r| field(r, "svname") == Some("off")).expect("off row");
        assert_eq!(field(off, "status"), Some("MAINT"), "{which}");
        let (_, _, html) = get(page, "/st", auth);
        assert!(html.contains("<table") && html.contains("dead"), "{which}: an HTML page");
        // The page's own proxy counts the polls above, which depend on timing: left out.
        let csv: String =
            csv.lines().filter(|l| !l.starts_with("stats,")).map(|l| format!("{l}\n")).collect();
        seen.push((header, shape(&csv)));
    }
    if let Some(h) = seen.get(1) {
        assert_eq!(seen[0].0, h.0, "the page's CSV header is HAProxy's");
        same(&seen[0].1, &h.1, "the page's CSV rows have HAProxy's fields");
    }
}

#[test]
fn stats_settings_come_from_defaults_with_haproxy_s_default_uri() {
    let live = testserver("http", "live");
    let cfg = format!(
        "
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
    stats enable
    stats scope app
listen app
    bind {{fe0}}
    server s1 {}
listen other
    bind {{fe1}}
    server s2 {}
",
        live.addr, live.addr
    );
    let (_p, addrs, _) = start_proxy("fulcrum", "stats-defaults", &cfg).expect("starts");
    let (code, _, csv) = get(addrs[0], "/haproxy?stats;csv", "");
    assert_eq!(code, 200);
    let (_, rows) = csv_rows(&csv);
    assert!(rows.iter().all(|r| field(r, "pxname") == Some("app")), "only the scope: {csv}");
    assert!(rows.len() == 3, "{csv}");
    // Any other path goes to the servers.
    assert_eq!(get(addrs[0], "/", "").0, 200);
}

/// The page a browser loads to drive the stats page from the same origin: it reads each
/// server row's class and colour, ticks server `b`, chooses "Set state to MAINT", submits,
/// and reads the rows again once the page comes back.
const DRIVER: &str = r#"<!DOCTYPE html><html><body><pre id=result></pre>
<iframe id=f src="/stats" width=1200 height=700></iframe>
<script>
const out = [];
const f = document.getElementById('f');
let step = 0;
function rows() {
  return [...f.contentDocument.querySelectorAll('tr')]
    .filter(tr => tr.querySelector('input[type=checkbox]'))
    .map(tr => tr.querySelector('input').value + ' ' + tr.className + ' ' + getComputedStyle(tr).backgroundColor);
}
f.onload = () => {
  step++;
  if (step == 1) {
    out.push('before|' + rows().join('|'));
    const box = [...f.contentDocument.querySelectorAll('input[type=checkbox]')].find(i => i.value == 'b');
    box.checked = true;
    box.form.querySelector('select[name=action]').value = 'maint';
    box.form.submit();
  } else {
    out.push('after|' + f.contentWindow.location.pathname + '|' + rows().join('|'));
    document.getElementById('result').textContent = out.join('\n');
  }
};
</script></body></html>"#;

fn chromium() -> Option<&'static str> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
}

#[test]
#[cfg_attr(no_chromium, ignore = "Chromium is not installed (see crates/fulcrum/build.rs)")]
fn in_a_browser_rows_show_state_colours_and_the_admin_form_takes_a_server_out_of_traffic() {
    let browser = chromium().expect("a Chromium");
    let a = testserver("http", "a");
    let b = testserver("http", "b");
    let cfg = format!(
        "
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {{fe0}}
    default_backend be
backend be
    server a {a} check inter 200ms
    server b {b} check inter 200ms
    server dead {dead} check inter 200ms
    server off {a} disabled
listen stats
    bind {{fe1}}
    stats enable
    stats uri /stats
    stats admin if {{ src 127.0.0.1 }}
    http-request return status 200 content-type text/html file {{dir}}/driver.html if {{ path /driver }}
",
        a = a.addr,
        b = b.addr,
        dead = dead_addr()
    );
    let dir = scratch("stats-browser-driver");
    let cfg = cfg.replace("{dir}", &dir.display().to_string());
    std::fs::write(dir.join("driver.html"), DRIVER).expect("driver page");
    let (_p, addrs, _) = start_proxy("fulcrum", "stats-browser", &cfg).expect("starts");
    let settled = eventually(Duration::from_secs(5), || {
        let csv = get(addrs[1], "/stats;csv", "").2;
        csv.lines().any(|l| l.starts_with("be,dead,") && l.contains(",DOWN,"))
            && csv.lines().any(|l| l.starts_with("be,b,") && l.contains(",UP,"))
    });
    assert!(settled, "checks settle: dead DOWN, b UP");
    let before = servers_of(addrs[0], 8);
    assert!(count(&before, "b") >= 3, "b takes traffic before: {before:?}");

    let url = format!("http://{}/driver", addrs[1]);
    let out = std::process::Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000"])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .args(["--dump-dom", &url])
        .stderr(std::process::Stdio::null())
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&out.stdout);
    let result = dom
        .split("<pre id=\"result\">")
        .nth(1)
        .and_then(|r| r.split("</pre>").next())
        .unwrap_or_default()
        .to_string();
    let lines: Vec<&str> = result.lines().collect();
    assert_eq!(lines.len(), 2, "the driver page ran both steps: {dom}");
    let before: Vec<&str> = lines[0].split('|').collect();
    assert_eq!(
        before[1..],
        [
            "a active_up rgb(192, 255, 192)",
            "b active_up rgb(192, 255, 192)",
            "dead active_down rgb(255, 144, 144)",
            "off maintain rgb(192, 120, 32)",
        ],
        "HAProxy's colours: UP green, DOWN red, MAINT brown"
    );
    let after: Vec<&str> = lines[1].split('|').collect();
    assert_eq!(after[1], "/stats;st=DONE", "the form's POST answers with HAProxy's redirect");
    assert_eq!(after[3], "b maintain rgb(192, 120, 32)", "b is in maintenance: {after:?}");
    // And out of traffic.
    let names = servers_of(addrs[0], 8);
    assert_eq!(count(&names, "b"), 0, "b takes nothing after the admin action: {names:?}");
    assert_eq!(count(&names, "a"), 8, "{names:?}");
}
