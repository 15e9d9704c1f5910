//! What a nested compiler (`Compiler::nested`: an `fcgi-app`'s or a SPOE message's own ACLs,
//! compiled as a proxy of their own) hands back to the proxy's compiler: its errors, and what
//! its expressions read (a `set-param X %[dst]` needs the connection's local address as much
//! as a rule does).
//!
//! Must not touch: evaluation, sockets.

use super::compile::Compiler;
use super::cond::Acls;

/// A nested compiler's errors and needs, for [`Compiler::merge`].
pub struct Found {
    errors: Vec<String>,
    uses: (bool, bool, bool),
}

impl Compiler<'_> {
    /// The nested compiler's ACLs, and what its parent takes of it.
    pub fn finish_nested(mut self) -> (Acls, Found) {
        let errors = std::mem::take(&mut self.errors);
        let uses = (self.uses_dst, self.uses_payload, self.uses_http_req);
        (self.finish(), Found { errors, uses })
    }

    /// Takes a nested compiler's errors and needs.
    pub fn merge(&mut self, f: Found) {
        self.errors.extend(f.errors);
        self.uses_dst |= f.uses.0;
        self.uses_payload |= f.uses.1;
        self.uses_http_req |= f.uses.2;
    }
}
