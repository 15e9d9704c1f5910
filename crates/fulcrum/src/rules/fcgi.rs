//! A FastCGI application's rules (`fcgi-app` with `use-fcgi-app`): its `set-param` values and
//! `pass-header` names, each under an optional condition over the section's own ACLs,
//! compiled once per plan and evaluated for each request as HAProxy's FastCGI filter does
//! (`fcgi_flt_http_headers`: the last matching rule for a name wins).
//!
//! Must not touch: FastCGI's framing (`http::fcgi`), sockets.

use fulcrum_config as cfg;

use super::compile::Compiler;
use super::cond::{holds, Acls, Cond};
use super::format::Format;
use super::Ctx;

/// A backend's FastCGI rules (empty without `use-fcgi-app`).
#[derive(Debug, Default)]
pub struct FcgiRules {
    acls: Acls,
    /// `set-param` (HAProxy's implicit `REMOTE_USER` and `AUTH_TYPE` first).
    params: Vec<(String, Format, Option<Cond>)>,
    /// `pass-header`, lower case.
    pass: Vec<(String, Option<Cond>)>,
}

impl FcgiRules {
    /// The parameters for this request: the last matching rule of each name, empty values
    /// left out.
    #[cold]
    #[inline(never)]
    pub fn params(&self, ctx: &Ctx<'_>) -> Vec<(&str, Vec<u8>)> {
        let mut out: Vec<(&str, Vec<u8>)> = Vec::new();
        for (name, f, cond) in &self.params {
            if !holds(cond, &self.acls, ctx) {
                continue;
            }
            out.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
            out.push((name.as_str(), f.render_vec(ctx)));
        }
        out.retain(|(_, v)| !v.is_empty());
        out
    }

    /// The hidden request headers this request passes (`pass-header` rules that match).
    #[cold]
    #[inline(never)]
    pub fn passed(&self, ctx: &Ctx<'_>) -> Vec<&str> {
        let matching = self.pass.iter().filter(|(_, c)| holds(c, &self.acls, ctx));
        matching.map(|(n, _)| n.as_str()).collect()
    }
}

impl Compiler<'_> {
    /// `use-fcgi-app`: the application's rules; its conditions name its own ACLs, compiled as
    /// a proxy of their own.
    pub fn fcgi_rules(&mut self, config: &cfg::Config) -> FcgiRules {
        let proxy = self.proxy();
        let Some((name, span)) = &proxy.use_fcgi_app else { return FcgiRules::default() };
        let Some(app) = config.fcgi_apps.iter().find(|a| &a.name == name) else {
            return FcgiRules::default();
        };
        let mut own = proxy.clone();
        own.acls = app.acls.clone();
        let mut c = self.nested(&own);
        let mut params = Vec::new();
        for (n, f) in [("REMOTE_USER", "%[http_auth_user]"), ("AUTH_TYPE", "%[http_auth_type]")] {
            if let Ok(lf) = cfg::logformat::parse(f, cfg::sample::Ctx::HttpRequest) {
                params.push((n.to_string(), c.format(&lf, span), None));
            }
        }
        for sp in &app.set_params {
            let cond = c.cond(&sp.cond, span);
            params.push((sp.name.clone(), c.format(&sp.value, span), cond));
        }
        let pass = app.pass_headers.iter().map(|p| (p.name.clone(), c.cond(&p.cond, span)));
        let pass = pass.collect();
        let (acls, found) = c.finish_nested();
        self.merge(found);
        FcgiRules { acls, params, pass }
    }
}
