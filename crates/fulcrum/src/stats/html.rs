//! The statistics page as HTML: one table per proxy with the columns an HAProxy user knows
//! (queue, session rate, sessions, bytes, denied, errors, warnings, server state), rows
//! coloured by server state with HAProxy's colours, the process summary, the legend and,
//! for administrators, a form per backend that changes server states.
//!
//! Built from the same rows as `show stat` (`rows`), so the page, the CSV and the runtime
//! API never disagree.

use std::fmt::Write as _;

use super::{Row, Val};

/// What the page shows besides the rows.
pub struct PageInfo<'a> {
    pub uri: &'a str,
    pub version: Option<&'a str>,
    pub pid: u32,
    pub uptime: std::time::Duration,
    pub node: Option<&'a str>,
    pub description: Option<&'a str>,
    pub maxconn: u32,
    pub ulimit_n: u64,
    pub nbthread: usize,
    pub cur_conns: u32,
    pub refresh: Option<std::time::Duration>,
    pub admin: bool,
    pub show_legends: bool,
    /// `;up`: DOWN servers hidden.
    pub up_only: bool,
    /// `;norefresh`.
    pub norefresh: bool,
    /// `;st=<code>`: the result of the last admin action.
    pub status: Option<&'a str>,
}

/// HTML-escapes `s` into `out`.
pub fn esc(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

/// HAProxy's human-readable durations: `12s`, `3m5s`, `2h10m`, `4d2h`.
pub fn human(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m{s}s"),
        (0, _, _) => format!("{h}h{m}m"),
        _ => format!("{d}d{h}h"),
    }
}

const STYLE: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Arial,sans-serif;font-size:12px;color:#1b1b1b;background:#fff;margin:12px 16px}
h1{font-size:20px;margin:0 0 4px 0;color:#4b1d8f}
h1 small{font-size:12px;color:#666;font-weight:normal}
h2{font-size:14px;margin:14px 0 4px 0}
.top{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start;margin-bottom:10px}
.box{border:1px solid #ccc;border-radius:6px;padding:6px 10px;background:#fafafa}
.box b{display:inline-block;min-width:90px}
table.lgd td{padding:1px 6px;border:1px solid #bbb}
a{color:#1a56c4}
.opts a{margin-right:12px}
table.tbl{border-collapse:collapse;margin-bottom:14px}
table.tbl th,table.tbl td{border:1px solid #a8a8a8;padding:2px 5px;white-space:nowrap}
table.tbl td{text-align:right}
table.tbl td.l{text-align:left}
table.tbl th{background:#e8e8e8;font-weight:600}
table.tbl caption{text-align:left;font-weight:bold;font-size:13px;padding:3px 6px;background:#9b1140;color:#ffff70;border-radius:4px 4px 0 0}
tr.frontend,tr.backend{background:#e8e8d0;font-weight:600}
.active_down,.backup_down{background:#ff9090}
.active_going_up{background:#ffd020}.active_going_down{background:#ffffa0}
.active_up{background:#c0ffc0}.active_nolb,.active_draining{background:#20a0ff}
.active_no_check,.backup_no_check{background:#e0e0e0}
.backup_going_up{background:#ff80ff}.backup_going_down{background:#c060ff}
.backup_up{background:#b0d0ff}.backup_nolb{background:#90b0e0}.backup_draining{background:#cc9900}
.maintain{background:#c07820}
.msg{padding:6px 10px;border-radius:6px;margin:8px 0;display:inline-block}
.msg.ok{background:#c0ffc0}.msg.bad{background:#ff9090}
form.act{margin:-8px 0 16px 0}
@media (prefers-color-scheme: dark){
body{background:#131516;color:#e8e6e3}h1{color:#a77de8}.box{background:#1d2022;border-color:#444}
table.tbl th{background:#2a2d2f}tr.frontend,tr.backend{background:#2f3437}
.active_down,.backup_down{background:#760000}.active_going_up{background:#b99200}
.active_going_down{background:#6c6c00}.active_up{background:#165900}
.active_nolb,.active_draining{background:#006ab9}.active_no_check,.backup_no_check{background:#2a2d2f}
.backup_going_up{background:#7f007f}.backup_going_down{background:#580092}.backup_up{background:#2e3234}
.backup_nolb{background:#1e3c6a}.backup_draining{background:#a37a00}.maintain{background:#9a601a}
a{color:#6ea8ff}
}";

/// The CSS class of a server row, from its `status` text (HAProxy's classes).
pub fn server_class(status: &str, backup: bool) -> String {
    if status.starts_with("MAINT") {
        return "maintain".into();
    }
    let state = if status == "no check" {
        "no_check"
    } else if status.starts_with("DRAIN") {
        "draining"
    } else if status.starts_with("NOLB") {
        if status.contains('/') {
            "going_down"
        } else {
            "nolb"
        }
    } else if let Some(rest) = status.strip_prefix("UP") {
        if rest.contains('/') {
            "going_down"
        } else {
            "up"
        }
    } else if let Some(rest) = status.strip_prefix("DOWN") {
        if rest.contains('/') {
            "going_up"
        } else {
            "down"
        }
    } else {
        "down"
    };
    format!("{}_{state}", if backup { "backup" } else { "active" })
}

fn v(r: &Row, name: &str) -> String {
    match r.get(name) {
        Some(Val::Str(s)) => s.clone(),
        Some(x) => x.to_string(),
        None => String::new(),
    }
}

fn num(r: &Row, name: &str) -> u64 {
    match r.get(name) {
        Some(Val::U32(n)) => u64::from(*n),
        Some(Val::U64(n)) => *n,
        Some(Val::S32(n)) => (*n).max(0) as u64,
        _ => 0,
    }
}

fn cell(out: &mut String, text: &str) {
    out.push_str("<td>");
    esc(out, text);
    out.push_str("</td>");
}

/// Bytes as HAProxy's page prints them (exact figure; hovering is for the legends).
fn bytes(n: u64) -> String {
    n.to_string()
}

fn header(out: &mut String, admin: bool) {
    out.push_str("<tr>");
    if admin {
        out.push_str("<th rowspan=2></th>");
    }
    out.push_str("<th rowspan=2></th><th colspan=3>Queue</th><th colspan=3>Session rate</th><th colspan=6>Sessions</th><th colspan=2>Bytes</th><th colspan=2>Denied</th><th colspan=3>Errors</th><th colspan=2>Warnings</th><th colspan=9>Server</th></tr>\n<tr><th>Cur</th><th>Max</th><th>Limit</th><th>Cur</th><th>Max</th><th>Limit</th><th>Cur</th><th>Max</th><th>Limit</th><th>Total</th><th>LbTot</th><th>Last</th><th>In</th><th>Out</th><th>Req</th><th>Resp</th><th>Req</th><th>Conn</th><th>Resp</th><th>Retr</th><th>Redis</th><th>Status</th><th>LastChk</th><th>Wght</th><th>Act</th><th>Bck</th><th>Chk</th><th>Dwn</th><th>Dwntme</th><th>Thrtle</th></tr>\n");
}

/// One table row, in the columns of [`header`].
fn row(out: &mut String, r: &Row, class: &str, label: &str, admin_box: Option<&str>, admin: bool) {
    let _ = write!(out, "<tr class=\"{class}\">");
    if admin {
        match admin_box {
            Some(name) => {
                out.push_str("<td><input type=checkbox name=s value=\"");
                esc(out, name);
                out.push_str("\"></td>");
            }
            None => out.push_str("<td></td>"),
        }
    }
    out.push_str("<td class=l>");
    esc(out, label);
    out.push_str("</td>");
    for name in [
        "qcur", "qmax", "qlimit", "rate", "rate_max", "rate_lim", "scur", "smax", "slim", "stot",
        "lbtot",
    ] {
        cell(out, &v(r, name));
    }
    let last = match r.get("lastsess") {
        Some(Val::S32(n)) if *n >= 0 => human(*n as u64),
        Some(_) => "?".into(),
        None => String::new(),
    };
    cell(out, &last);
    cell(out, &r.get("bin").map(|_| bytes(num(r, "bin"))).unwrap_or_default());
    cell(out, &r.get("bout").map(|_| bytes(num(r, "bout"))).unwrap_or_default());
    for name in ["dreq", "dresp", "ereq", "econ", "eresp", "wretr", "wredis"] {
        cell(out, &v(r, name));
    }
    // Server block.
    let status = v(r, "status");
    let lastchg = r.get("lastchg").map(|_| human(num(r, "lastchg")));
    let status_text = match (r.obj, lastchg) {
        (super::ObjType::Frontend, _) | (_, None) => status.clone(),
        (_, Some(t)) => format!("{t} {status}"),
    };
    out.push_str("<td class=l>");
    esc(out, &status_text);
    out.push_str("</td>");
    let lastchk = match r.get("check_status") {
        Some(Val::Str(st)) => {
            let mut t = st.clone();
            if let Some(code) = r.get("check_code") {
                let _ = write!(t, "/{code}");
            }
            if let Some(d) = r.get("check_duration") {
                let _ = write!(t, " in {d}ms");
            }
            t
        }
        _ => String::new(),
    };
    out.push_str("<td class=l title=\"");
    esc(out, &v(r, "last_chk"));
    out.push_str("\">");
    esc(out, &lastchk);
    out.push_str("</td>");
    let weight = match r.get("uweight") {
        Some(u) if r.obj == super::ObjType::Server && v(r, "weight") != u.to_string() => {
            format!("{}/{u}", v(r, "weight"))
        }
        _ => v(r, "weight"),
    };
    cell(out, &weight);
    let yn = |n: &str| match r.get(n) {
        Some(Val::U32(1)) if r.obj == super::ObjType::Server => "Y".to_string(),
        Some(Val::U32(0)) if r.obj == super::ObjType::Server => "-".to_string(),
        Some(x) => x.to_string(),
        None => String::new(),
    };
    cell(out, &yn("act"));
    cell(out, &yn("bck"));
    cell(out, &v(r, "chkfail"));
    cell(out, &v(r, "chkdown"));
    cell(out, &r.get("downtime").map(|_| human(num(r, "downtime"))).unwrap_or_default());
    cell(out, &r.get("throttle").map(|t| format!("{t} %")).unwrap_or_else(|| "-".into()));
    out.push_str("</tr>\n");
}

/// The admin form's actions (HAProxy's values and labels).
const ACTIONS: &[(&str, &str)] = &[
    ("ready", "Set state to READY"),
    ("drain", "Set state to DRAIN"),
    ("maint", "Set state to MAINT"),
    ("dhlth", "Health: disable checks"),
    ("ehlth", "Health: enable checks"),
    ("hrunn", "Health: force UP"),
    ("hnolb", "Health: force NOLB"),
    ("hdown", "Health: force DOWN"),
    ("dagent", "Agent: disable checks"),
    ("eagent", "Agent: enable checks"),
    ("arunn", "Agent: force UP"),
    ("adown", "Agent: force DOWN"),
    ("shutdown", "Kill Sessions"),
];

/// What an admin action's result code says (`;st=`).
fn status_message(code: &str) -> Option<(bool, &'static str)> {
    Some(match code {
        "DONE" => (true, "Action processed successfully."),
        "PART" => (true, "Action partially processed."),
        "NONE" => (false, "Nothing has changed."),
        "DENY" => (false, "Action denied."),
        "ERRP" => (false, "Action not processed because of invalid parameters."),
        "EXCD" => (false, "Action not processed: the buffer couldn't store all the data."),
        _ => return None,
    })
}

/// The whole page. `rows` are grouped by proxy id, each proxy's rows in HAProxy's order
/// (frontend, servers, backend).
pub fn page(out: &mut String, info: &PageInfo<'_>, rows: &[Row]) {
    out.push_str(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Statistics Report for Fulcrum",
    );
    if let Some(n) = info.node {
        out.push_str(" on ");
        esc(out, n);
    }
    out.push_str("</title>\n<link rel=\"icon\" href=\"data:,\">\n");
    if let (Some(r), false) = (info.refresh, info.norefresh) {
        let _ = writeln!(out, "<meta http-equiv=\"refresh\" content=\"{}\">", r.as_secs().max(1));
    }
    let _ = write!(out, "<style>{STYLE}</style></head>\n<body>\n<h1>Fulcrum statistics");
    if let Some(ver) = info.version {
        out.push_str(" <small>version ");
        esc(out, ver);
        out.push_str("</small>");
    }
    out.push_str("</h1>\n");
    if let Some(d) = info.description {
        out.push_str("<div>");
        esc(out, d);
        out.push_str("</div>\n");
    }
    if let Some((ok, text)) = info.status.and_then(status_message) {
        let _ = writeln!(out, "<div class=\"msg {}\">{text}</div>", if ok { "ok" } else { "bad" });
    }
    out.push_str("<div class=top>\n<div class=box>");
    let _ = write!(
        out,
        "<b>pid</b> {}<br><b>uptime</b> {}<br><b>threads</b> {}<br><b>ulimit-n</b> {}<br><b>maxconn</b> {}<br><b>current conns</b> {}",
        info.pid,
        human(info.uptime.as_secs()),
        info.nbthread,
        info.ulimit_n,
        info.maxconn,
        info.cur_conns
    );
    if let Some(n) = info.node {
        out.push_str("<br><b>node</b> ");
        esc(out, n);
    }
    out.push_str("</div>\n<table class=lgd>");
    let legend: [(&str, &str, &str); 8] = [
        ("active_up", "active UP", "backup_up"),
        ("active_going_down", "active UP, going down", "backup_going_down"),
        ("active_going_up", "active DOWN, going up", "backup_going_up"),
        ("active_down", "active or backup DOWN", "backup_down"),
        ("active_draining", "active or backup DRAIN", "backup_draining"),
        ("active_nolb", "active or backup SOFT STOPPED", "backup_nolb"),
        ("maintain", "active or backup MAINT", "maintain"),
        ("active_no_check", "not checked", "backup_no_check"),
    ];
    for (a, text, b) in legend {
        let _ = write!(out, "<tr><td class={a}>&nbsp;&nbsp;</td><td class={b}>&nbsp;&nbsp;</td><td>{text}</td></tr>");
    }
    out.push_str("</table>\n<div class=\"box opts\">");
    let base = info.uri;
    let up = if info.up_only {
        format!("<a href=\"{}\">Show all servers</a>", attr(base))
    } else {
        format!("<a href=\"{};up\">Hide DOWN servers</a>", attr(base))
    };
    out.push_str(&up);
    let _ = write!(out, "<a href=\"{}\">Refresh now</a>", attr(base));
    if info.refresh.is_some() {
        let _ = write!(out, "<a href=\"{};norefresh\">Disable refresh</a>", attr(base));
    }
    let _ = write!(
        out,
        "<a href=\"{0};csv\">CSV export</a><a href=\"{0};json\">JSON export</a></div>\n</div>\n",
        attr(base)
    );
    let mut i = 0;
    while i < rows.len() {
        let iid = rows[i].iid;
        let end = rows[i..].iter().position(|r| r.iid != iid).map_or(rows.len(), |n| i + n);
        proxy(out, info, &rows[i..end]);
        i = end;
    }
    if info.show_legends {
        out.push_str("<p>Queue: sessions waiting for a server slot. Session rate: new sessions per second. LbTot: times a server was chosen. Denied/Errors/Warnings: requests and responses refused, failed, retried or redispatched. Chk/Dwn: failed checks and DOWN transitions.</p>\n");
    }
    out.push_str("</body></html>\n");
}

fn attr(s: &str) -> String {
    let mut out = String::new();
    esc(&mut out, s);
    out
}

fn proxy(out: &mut String, info: &PageInfo<'_>, rows: &[Row]) {
    let Some(first) = rows.first() else { return };
    let name = v(first, "pxname");
    let servers = rows.iter().any(|r| r.obj == super::ObjType::Server);
    let admin = info.admin && servers;
    if admin {
        let _ = write!(out, "<form class=act method=post action=\"{}\">", attr(info.uri));
    }
    out.push_str("<table class=tbl><caption>");
    esc(out, &name);
    out.push_str("</caption>\n");
    header(out, admin);
    for r in rows {
        match r.obj {
            super::ObjType::Frontend => row(out, r, "frontend", "Frontend", None, admin),
            super::ObjType::Backend => row(out, r, "backend", "Backend", None, admin),
            super::ObjType::Listener => row(out, r, "socket", &v(r, "svname"), None, admin),
            super::ObjType::Server => {
                let status = v(r, "status");
                let backup = matches!(r.get("bck"), Some(Val::U32(1)));
                if info.up_only && !(status.starts_with("UP") || status == "no check") {
                    continue;
                }
                let sv = v(r, "svname");
                row(out, r, &server_class(&status, backup), &sv, Some(&sv), admin);
            }
        }
    }
    out.push_str("</table>\n");
    if admin {
        out.push_str("Choose the action to perform on the checked servers: <select name=action><option value=\"\"></option>");
        for (val, label) in ACTIONS {
            let _ = write!(out, "<option value=\"{val}\">{label}</option>");
        }
        let _ = writeln!(
            out,
            "</select><input type=hidden name=b value=\"#{}\"> <input type=submit value=\"Apply\"></form>",
            first.iid
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_haproxy_prints_them() {
        assert_eq!(human(5), "5s");
        assert_eq!(human(65), "1m5s");
        assert_eq!(human(7300), "2h1m");
        assert_eq!(human(90000), "1d1h");
    }

    #[test]
    fn server_rows_take_haproxy_s_classes() {
        assert_eq!(server_class("UP", false), "active_up");
        assert_eq!(server_class("UP 1/3", false), "active_going_down");
        assert_eq!(server_class("DOWN 1/2", true), "backup_going_up");
        assert_eq!(server_class("DOWN", false), "active_down");
        assert_eq!(server_class("MAINT", false), "maintain");
        assert_eq!(server_class("DRAIN", false), "active_draining");
        assert_eq!(server_class("no check", true), "backup_no_check");
    }

    #[test]
    fn text_is_escaped() {
        let mut s = String::new();
        esc(&mut s, "<a href=\"x\">&'");
        assert_eq!(s, "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
    }
}
