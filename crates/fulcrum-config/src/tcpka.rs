//! TCP keep-alive probes: `option tcpka` (both sides), `option clitcpka`, `option srvtcpka`, and
//! the probes' settings `clitcpka-cnt|idle|intvl`, `srvtcpka-cnt|idle|intvl`, with HAProxy's
//! messages. Times count in seconds by default, as in HAProxy.

use crate::args::{atol, no_extra, Diags};
use crate::duration::{parse_time_in, TimeError, TimeUnit};
use crate::lexer::Line;
use crate::model::{Proxy, TcpKeepAlive};

/// Parses `name` (one of this module's keywords) into `p`; false for another keyword.
pub fn parse(p: &mut Proxy, line: &Line, name: &str, negated: bool, diags: &mut Diags) -> bool {
    let sides: &[fn(&mut Proxy) -> &mut TcpKeepAlive] = match name {
        "option tcpka" => &[cli, srv],
        "option clitcpka" => &[cli],
        "option srvtcpka" => &[srv],
        _ => return setting(p, line, name, diags),
    };
    if no_extra(line, 2 + usize::from(negated), name, diags) {
        for side in sides {
            side(p).on = !negated;
        }
    }
    true
}

fn cli(p: &mut Proxy) -> &mut TcpKeepAlive {
    &mut p.cli_tcpka
}

fn srv(p: &mut Proxy) -> &mut TcpKeepAlive {
    &mut p.srv_tcpka
}

/// `clitcpka-cnt <n>`, `clitcpka-idle <time>`, `clitcpka-intvl <time>` and the `srv` ones.
fn setting(p: &mut Proxy, line: &Line, name: &str, diags: &mut Diags) -> bool {
    let Some((side, what)) = name.split_once("tcpka-") else { return false };
    let ka = match side {
        "cli" => &mut p.cli_tcpka,
        "srv" => &mut p.srv_tcpka,
        _ => return false,
    };
    let value = line.arg(1);
    if value.is_empty() {
        diags.alert(line, format!("'{name}' expects an integer value"));
        return true;
    }
    if !no_extra(line, 2, name, diags) {
        return true;
    }
    match what {
        "cnt" => ka.cnt = Some(atol(value).clamp(0, i64::from(u32::MAX)) as u32),
        "idle" | "intvl" => match parse_time_in(value, TimeUnit::S) {
            Ok(t) => {
                let secs = Some(t.value.as_secs() as u32);
                if what == "idle" {
                    ka.idle = secs;
                } else {
                    ka.intvl = secs;
                }
            }
            Err(TimeError::Overflow) => diags.alert(
                line,
                format!("timer overflow in argument '{value}' to '{name}' (maximum value is 2147483647 ms or ~24.8 days)"),
            ),
            Err(TimeError::BadChar(c)) => {
                diags.alert(line, format!("unexpected character '{c}' in argument to <{name}>."))
            }
            Err(TimeError::Missing) => {
                diags.alert(line, format!("'{name}' expects an integer value"))
            }
        },
        _ => return false,
    }
    true
}
