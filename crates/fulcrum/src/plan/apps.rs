//! What a plan prepares for the programs around a backend (issue 39): the program its external
//! checks run (`option external-check`), its mail alerts and their mailers' addresses
//! (`email-alert`), and its FastCGI application (`use-fcgi-app`: the settings its requests use
//! its `log-stderr` logger; its rules are `rules::fcgi`).
//!
//! Must not touch: sockets, the run-time state.

use std::sync::Arc;

use fulcrum_config as cfg;

/// `email-alert`: the proxy's alerts and its mailers' addresses (names resolved now, as
/// HAProxy resolves them while reading the configuration).
pub(super) fn mail_alerts(
    p: &cfg::Proxy,
    config: &cfg::Config,
) -> Result<Option<Box<crate::mail::Alerts>>, String> {
    let ea = &p.email_alert;
    let Some(name) = ea.mailers.as_ref().filter(|_| ea.set && ea.complete()) else {
        return Ok(None);
    };
    let Some(section) = config.mailers.iter().find(|m| &m.name == name) else {
        return Ok(None);
    };
    let mut mailers = Vec::new();
    // HAProxy links a section's mailers backwards: the last one declared gets alerts first.
    for m in section.mailers.iter().rev() {
        use std::net::ToSocketAddrs;
        let addr = (m.host.as_str(), m.port).to_socket_addrs().ok().and_then(|mut a| a.next());
        let Some(addr) = addr else {
            return Err(format!(
                "[{}] : 'mailer {}' : could not resolve address '{}'.",
                m.span, m.name, m.host
            ));
        };
        mailers.push((m.name.clone(), addr));
    }
    Ok(Some(Box::new(crate::mail::Alerts::new(&p.name, ea, section.timeout, mailers))))
}

/// What `option external-check` runs, when it is the proxy's check option.
pub(super) fn external_check(
    p: &cfg::Proxy,
    g: &cfg::Global,
) -> Option<Box<crate::backend::ExternalCheck>> {
    let h = &p.health_check;
    let command = h.external.command.clone().filter(|_| h.kind == cfg::CheckKind::External)?;
    let (proxy_addr, proxy_port) = proxy_address(&p.binds);
    Some(Box::new(crate::backend::ExternalCheck {
        command,
        path: h.external.path.clone().unwrap_or_default(),
        proxy_addr,
        proxy_port,
        may_fork: g.insecure_fork_wanted,
        tcp: p.mode == cfg::Mode::Tcp,
    }))
}

/// The proxy's address and port as HAProxy's external checks show them: its first IPv4, IPv6
/// or UNIX `bind`, else `NOT_USED`.
fn proxy_address(binds: &[fulcrum_config::Bind]) -> (String, String) {
    use fulcrum_config::BindAddr;
    for a in binds.iter().flat_map(|b| &b.addrs) {
        match a {
            BindAddr::Inet(sa) => return (sa.ip().to_string(), sa.port().to_string()),
            BindAddr::Unix(p) => {
                return (p.display().to_string(), crate::health::external::NOT_USED.to_string())
            }
            BindAddr::Host { .. } | BindAddr::Fd(_) => {}
        }
    }
    (crate::health::external::NOT_USED.to_string(), crate::health::external::NOT_USED.to_string())
}

/// `use-fcgi-app`: the application, its `path-info` compiled.
pub(super) fn fcgi_app(
    p: &cfg::Proxy,
    config: &cfg::Config,
    logs: &crate::log::syslog::Common,
    errors: &mut Vec<String>,
) -> Option<Arc<crate::http_settings::FcgiApp>> {
    let (name, span) = p.use_fcgi_app.as_ref()?;
    let app = config.fcgi_apps.iter().find(|a| &a.name == name)?;
    let path_info =
        match app.path_info.as_deref().map(|re| fulcrum_pattern::compile_regex(re, false)) {
            Some(Ok(rx)) => Some(rx),
            Some(Err(e)) => {
                errors.push(format!("[{span}] : fcgi-app '{name}' : path-info : {e}"));
                None
            }
            None => None,
        };
    // `log-stderr`: HAProxy's `app_log()` tags the lines with the application's name.
    let stderr = match crate::log::syslog::Logger::build(&app.log_stderr, Some(name), logs) {
        Ok(l) => l,
        Err(e) => {
            errors.push(format!("[{}] : fcgi-app '{name}' : log-stderr : {e}", app.span));
            None
        }
    };
    Some(Arc::new(crate::http_settings::FcgiApp {
        docroot: app.docroot.clone().unwrap_or_default(),
        index: app.index.clone(),
        path_info,
        keep_conn: app.keep_conn,
        get_values: app.get_values,
        mpxs_conns: app.mpxs_conns,
        max_reqs: app.max_reqs,
        stderr,
    }))
}
