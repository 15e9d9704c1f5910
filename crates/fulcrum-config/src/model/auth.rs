//! `userlist` sections: users with their passwords and groups, for `http_auth()`,
//! `http_auth_group()` and `http-request auth`.

use super::Span;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Userlist {
    pub name: String,
    pub span: Span,
    /// Groups in declaration order, with the users their `users` option lists.
    pub groups: Vec<(String, Vec<String>)>,
    pub users: Vec<User>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub password: Password,
    /// Groups its `groups` option names.
    pub groups: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Password {
    /// No password: the user can never authenticate.
    None,
    /// `insecure-password <text>`.
    Clear(String),
    /// `password <hash>`: checked with the system's crypt(3), as HAProxy does.
    Crypt(String),
}

/// What `http_auth_user`, `http_auth_pass` and `http_auth_type` read of the `Authorization`
/// header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthPart {
    User,
    Pass,
    Type,
}
