//! `userlist` section lines: `group <name> [users <u>,...]` and `user <name> [password <hash>
//! | insecure-password <text>] [groups <g>,...]`, with HAProxy 2.6's messages. Whether a hash
//! is one crypt(3) knows is checked when the plan is built (this crate does no I/O).

use crate::args::{invalid_char, Diags};
use crate::lexer::Line;
use crate::model::{Password, User, Userlist};

fn list(text: &str) -> Vec<String> {
    text.split(',').filter(|w| !w.is_empty()).map(String::from).collect()
}

pub fn line(u: &mut Userlist, line: &Line, diags: &mut Diags) {
    let kw = line.arg(0);
    match kw {
        "group" => {
            let name = line.arg(1);
            if name.is_empty() {
                return diags.alert(line, "'group' expects <name> as arguments.");
            }
            if let Some(c) = invalid_char(name) {
                let msg = format!("character '{c}' is not permitted in 'group' name '{name}'.");
                return diags.alert(line, msg);
            }
            if u.groups.iter().any(|(g, _)| g == name) {
                let msg = format!("ignoring duplicated group '{name}' in userlist '{}'.", u.name);
                return diags.warning(line, msg);
            }
            let mut users = Vec::new();
            let mut i = 2;
            while !line.arg(i).is_empty() {
                if line.arg(i) != "users" {
                    return diags.alert(line, "'group' only supports 'users' option.");
                }
                users.extend(list(line.arg(i + 1)));
                i += 2;
            }
            u.groups.push((name.to_string(), users));
        }
        "user" => {
            let name = line.arg(1);
            if name.is_empty() {
                return diags.alert(line, "'user' expects <name> as arguments.");
            }
            if u.users.iter().any(|x| x.name == name) {
                let msg = format!("ignoring duplicated user '{name}' in userlist '{}'.", u.name);
                return diags.warning(line, msg);
            }
            let mut user =
                User { name: name.to_string(), password: Password::None, groups: Vec::new() };
            let mut i = 2;
            while !line.arg(i).is_empty() {
                let v = line.arg(i + 1).to_string();
                match line.arg(i) {
                    "password" => user.password = Password::Crypt(v),
                    "insecure-password" => user.password = Password::Clear(v),
                    "groups" => user.groups.extend(list(&v)),
                    _ => {
                        return diags.alert(
                            line,
                            "'user' only supports 'password', 'insecure-password' and 'groups' options.",
                        )
                    }
                }
                i += 2;
            }
            u.users.push(user);
        }
        _ => diags.alert(line, format!("unknown keyword '{kw}' in 'users' section")),
    }
}
