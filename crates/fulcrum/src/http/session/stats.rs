//! The statistics page inside a transaction: a request for a proxy's `stats uri` after that
//! proxy's rules ran (HAProxy's order) passes the `stats http-request` rules and `stats
//! auth`, is an administrator's when a `stats admin` condition holds, and is answered by
//! `stats::page` (a GET gets the page, a POST applies the admin form).

use std::sync::Arc;
use std::time::Duration;

use fulcrum_config::StatsAction;
use fulcrum_http::{Body, Method};

use super::txn::body_view;
use super::{Next, Session};
use crate::backend::Backend;
use crate::outcome::{Cause, Phase};
use crate::rules::{ProxyRules, StatsRules};
use crate::stats::page;

impl Session<'_> {
    /// The proxy's statistics page, when the request asks for it.
    pub(super) async fn stats_page(
        &mut self,
        rules: &ProxyRules,
        be: Option<&Arc<Backend>>,
        info: &fulcrum_http::Info,
    ) -> Option<Next> {
        let st: &StatsRules = rules.stats.as_deref()?;
        if !page::matches(&st.page, self.t.req.target()) {
            return None;
        }
        let (admin, verdict) = {
            let base = self.base(be.map(|b| &**b));
            let ctx = base.ctx(&self.t.req, None, &self.t.vars);
            let authorized = page::authorized(&st.page, self.t.req.header(b"authorization"));
            let mut verdict = None;
            for (action, cond) in &st.http_request {
                if cond.as_ref().is_some_and(|c| !c.eval(&rules.acls, &ctx)) {
                    continue;
                }
                match action {
                    StatsAction::Allow => {
                        verdict = Some(Ok(()));
                        break;
                    }
                    StatsAction::Deny => {
                        verdict = Some(Err(None));
                        break;
                    }
                    StatsAction::Auth(realm) if !authorized => {
                        verdict = Some(Err(Some(realm.clone().or_else(|| st.page.realm.clone()))));
                        break;
                    }
                    StatsAction::Auth(_) => {}
                }
            }
            // `stats auth` users: without valid credentials, ask for them.
            let verdict = verdict.unwrap_or(if !st.page.auth.is_empty() && !authorized {
                Err(Some(st.page.realm.clone()))
            } else {
                Ok(())
            });
            (st.admin.iter().any(|c| c.eval(&rules.acls, &ctx)), verdict)
        };
        self.t.o.end(Cause::Local, Phase::Request);
        let msg = match verdict {
            Err(None) => {
                self.t.o.end(Cause::Proxy, Phase::Request);
                return Some(self.answer(403, info, be).await);
            }
            Err(Some(realm)) => page::unauthorized(realm.as_deref()),
            Ok(()) => {
                let name = be.map_or(self.fe.name.as_str(), |b| b.name.as_str());
                let here = page::Here { proxy: name, page: &st.page, admin };
                if self.t.req.method() == Method::Post {
                    if info.body != Body::None {
                        self.wait_for_body(info, Duration::from_secs(10), None).await;
                    }
                    let body = body_view(&self.t.held, &self.cbuf, info.body).to_vec();
                    page::post(self.shared, &here, self.t.req.target(), &body)
                } else {
                    page::get_offloaded(&st.page, name, admin, self.t.req.target()).await
                }
            }
        };
        Some(self.answer_bytes(msg, info, be).await)
    }
}
