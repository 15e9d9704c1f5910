//! IP patterns: parsing `addr[/mask]` the way HAProxy's `str2net` / `str62net` do, and the
//! index that reproduces `pat_match_ip`.
//!
//! Owns: address and mask syntax, the IPv4 <-> IPv6 mapping rules, and which entry wins.
//! Must not touch: DNS. HAProxy resolves host names in ACL patterns at start-up (unless
//! `-n`); this library only accepts the numeric forms that resolution would give (the
//! abbreviated IPv4 forms such as `127.1` or `10.12/8`, read like `inet_aton`: the last part
//! fills the remaining bytes, a leading `0` means octal). Maps never resolve, so they refuse
//! abbreviated forms, as HAProxy does.
//!
//! Lookup order, as in HAProxy (`pat_match_ip`), each step returning the first entry found:
//! - IPv4 input: longest-prefix match among IPv4 patterns with a contiguous mask; then the
//!   input mapped to `::ffff:a.b.c.d`, longest-prefix match among IPv6 patterns; then the
//!   IPv4 patterns with a non-contiguous dotted mask, in order.
//! - IPv6 input: longest-prefix match among IPv6 patterns; then, if the input is
//!   `::ffff:a.b.c.d`, `::a.b.c.d` or `2002:AABB:CCDD::/16` (6to4), the embedded IPv4 address
//!   goes through the IPv4 longest-prefix match and then the non-contiguous list.
//!
//! Among entries with the same network and prefix length, the first one wins.
//!
//! [`IpIndex::lowest`] answers the other question, "the lowest entry index among all the
//! patterns that match" (for pattern sets used as rule indexes), by probing every prefix
//! table and mask group and keeping the minimum. An address matches a pattern under the
//! same mapping rules as above: an IPv4 pattern matches an IPv6 address that embeds an IPv4
//! one (`v6_to_v4`), an IPv6 pattern matches an IPv4 address as `::ffff:a.b.c.d`.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};

use crate::PatternError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IpPattern {
    V4 { addr: u32, mask: u32 },
    V6 { addr: u128, prefix: u8 },
}

impl IpPattern {
    /// Whether `ip` matches this single pattern, by the same rules as the index (reference
    /// semantics, used by tests and by nothing on the hot path).
    #[cfg(test)]
    pub fn matches(&self, ip: IpAddr) -> bool {
        match (*self, ip) {
            (IpPattern::V4 { addr, mask }, IpAddr::V4(a)) => (u32::from(a) ^ addr) & mask == 0,
            (IpPattern::V4 { addr, mask }, IpAddr::V6(a)) => {
                v6_to_v4(u128::from(a)).is_some_and(|v4| (v4 ^ addr) & mask == 0)
            }
            (IpPattern::V6 { addr, prefix }, ip) => {
                let a = match ip {
                    IpAddr::V4(a) => v4_mapped(u32::from(a)),
                    IpAddr::V6(a) => u128::from(a),
                };
                (a ^ addr) & mask6(prefix) == 0
            }
        }
    }
}

fn invalid(text: &str) -> PatternError {
    PatternError::new(format!("'{text}' is not a valid IPv4 or IPv6 address"))
}

/// Parses `addr[/mask]`. `resolve` allows the abbreviated IPv4 forms that HAProxy obtains
/// through `gethostbyname` (ACL patterns without `-n`).
pub(crate) fn parse_ip(text: &str, resolve: bool) -> Result<IpPattern, PatternError> {
    if let Some(p) = parse_v4_net(text, resolve) {
        return Ok(p);
    }
    parse_v6_net(text).ok_or_else(|| invalid(text))
}

fn split_mask(text: &str) -> (&str, Option<&str>) {
    match text.rfind('/') {
        Some(p) => (&text[..p], Some(&text[p + 1..])),
        None => (text, None),
    }
}

fn decimal(s: &str, max: u32) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u64>().ok().filter(|&v| v <= u64::from(max)).map(|v| v as u32)
}

fn parse_v4_net(text: &str, resolve: bool) -> Option<IpPattern> {
    let (addr, mask) = split_mask(text);
    let mask = match mask {
        None => u32::MAX,
        Some(m) if m.contains('.') => dotted_quad(m)?,
        Some(m) => mask4(decimal(m, 32)? as u8),
    };
    let addr = match dotted_quad(addr) {
        Some(a) => a,
        None if resolve => numeric_host(addr)?,
        None => return None,
    };
    Some(IpPattern::V4 { addr, mask })
}

fn parse_v6_net(text: &str) -> Option<IpPattern> {
    let (addr, mask) = split_mask(text);
    let prefix = match mask {
        None => 128,
        Some(m) => decimal(m, 128)? as u8,
    };
    let addr: Ipv6Addr = addr.parse().ok()?;
    Some(IpPattern::V6 { addr: u128::from(addr), prefix })
}

/// `inet_pton(AF_INET)`: exactly four decimal parts of 1 to 3 digits, no leading zero.
fn dotted_quad(s: &str) -> Option<u32> {
    let mut out: u32 = 0;
    let mut parts = 0;
    for part in s.split('.') {
        parts += 1;
        if parts > 4 || part.len() > 3 || (part.len() > 1 && part.starts_with('0')) {
            return None;
        }
        out = (out << 8) | decimal(part, 255)?;
    }
    (parts == 4).then_some(out)
}

/// What `gethostbyname` gives for a name made of digits and dots (`inet_aton` rules): one
/// to four parts, a leading `0` means octal, the last part fills the remaining bytes.
fn numeric_host(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() > 4 {
        return None;
    }
    let mut out: u32 = 0;
    for (i, part) in parts.iter().enumerate() {
        let value = if part.len() > 1 && part.starts_with('0') {
            u64::from_str_radix(&part[1..], 8).ok()?
        } else {
            part.parse::<u64>().ok()?
        };
        let last = i + 1 == parts.len();
        let bits = if last { 8 * (4 - i as u32) } else { 8 };
        if value >= 1u64 << bits {
            return None;
        }
        out = ((u64::from(out) << bits) | value) as u32;
    }
    Some(out)
}

fn mask4(prefix: u8) -> u32 {
    if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix))
    }
}

fn mask6(prefix: u8) -> u128 {
    if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(prefix))
    }
}

/// The prefix length of a contiguous IPv4 mask.
fn prefix_len4(mask: u32) -> Option<u8> {
    let ones = mask.leading_ones();
    (ones + mask.trailing_zeros() >= 32).then_some(ones as u8)
}

fn v4_mapped(v4: u32) -> u128 {
    0xffff_u128 << 32 | u128::from(v4)
}

/// HAProxy's `v6tov4`: `::ffff:a.b.c.d`, `::a.b.c.d` and 6to4 `2002:AABB:CCDD::`.
pub(crate) fn v6_to_v4(a: u128) -> Option<u32> {
    if a >> 32 == 0xffff || a >> 32 == 0 {
        Some(a as u32)
    } else if a >> 112 == 0x2002 {
        Some((a >> 80) as u32)
    } else {
        None
    }
}

/// Networks of one prefix length, keyed by masked address; values are entry indexes.
#[derive(Debug)]
struct Level<K> {
    prefix: u8,
    nets: HashMap<K, u32>,
}

#[derive(Debug, Default)]
pub(crate) struct IpIndex {
    /// Longest prefix first.
    v4: Vec<Level<u32>>,
    v6: Vec<Level<u128>>,
    /// IPv4 patterns whose dotted mask is not contiguous, one table per distinct mask, keyed
    /// by masked address (the first entry of each network kept). HAProxy keeps them in a
    /// list and takes the first match in order, which is the lowest index over the groups.
    v4_masks: Vec<(u32, HashMap<u32, u32>)>,
}

/// The lower of two optional entry indexes.
fn lower(a: Option<u32>, b: Option<u32>) -> Option<u32> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

impl IpIndex {
    pub fn build(patterns: &[IpPattern]) -> IpIndex {
        let mut v4: HashMap<u8, HashMap<u32, u32>> = HashMap::new();
        let mut v6: HashMap<u8, HashMap<u128, u32>> = HashMap::new();
        let mut v4_masks: Vec<(u32, HashMap<u32, u32>)> = Vec::new();
        for (i, p) in patterns.iter().enumerate() {
            let i = i as u32;
            match *p {
                IpPattern::V4 { addr, mask } => match prefix_len4(mask) {
                    Some(len) => {
                        v4.entry(len).or_default().entry(addr & mask).or_insert(i);
                    }
                    None => {
                        let group = match v4_masks.iter().position(|(m, _)| *m == mask) {
                            Some(g) => g,
                            None => {
                                v4_masks.push((mask, HashMap::new()));
                                v4_masks.len() - 1
                            }
                        };
                        v4_masks[group].1.entry(addr & mask).or_insert(i);
                    }
                },
                IpPattern::V6 { addr, prefix } => {
                    v6.entry(prefix).or_default().entry(addr & mask6(prefix)).or_insert(i);
                }
            }
        }
        let mut v4: Vec<Level<u32>> =
            v4.into_iter().map(|(prefix, nets)| Level { prefix, nets }).collect();
        v4.sort_by_key(|l| std::cmp::Reverse(l.prefix));
        let mut v6: Vec<Level<u128>> =
            v6.into_iter().map(|(prefix, nets)| Level { prefix, nets }).collect();
        v6.sort_by_key(|l| std::cmp::Reverse(l.prefix));
        IpIndex { v4, v6, v4_masks }
    }

    fn tree4(&self, a: u32) -> Option<u32> {
        self.v4.iter().find_map(|l| l.nets.get(&(a & mask4(l.prefix))).copied())
    }

    fn tree6(&self, a: u128) -> Option<u32> {
        self.v6.iter().find_map(|l| l.nets.get(&(a & mask6(l.prefix))).copied())
    }

    /// The first non-contiguous IPv4 pattern in order that matches `a`.
    fn list4(&self, a: u32) -> Option<u32> {
        self.v4_masks
            .iter()
            .fold(None, |best, (mask, nets)| lower(best, nets.get(&(a & mask)).copied()))
    }

    /// The lowest entry index among the IPv4 patterns matching `a`.
    fn lowest4(&self, a: u32) -> Option<u32> {
        self.v4
            .iter()
            .fold(self.list4(a), |best, l| lower(best, l.nets.get(&(a & mask4(l.prefix))).copied()))
    }

    /// The lowest entry index among the IPv6 patterns matching `a`.
    fn lowest6(&self, a: u128) -> Option<u32> {
        self.v6
            .iter()
            .fold(None, |best, l| lower(best, l.nets.get(&(a & mask6(l.prefix))).copied()))
    }

    /// The winning entry for `ip`, following `pat_match_ip`.
    pub fn find(&self, ip: IpAddr) -> Option<u32> {
        match ip {
            IpAddr::V4(a) => {
                let a = u32::from(a);
                self.tree4(a).or_else(|| self.tree6(v4_mapped(a))).or_else(|| self.list4(a))
            }
            IpAddr::V6(a) => {
                let a = u128::from(a);
                self.tree6(a).or_else(|| {
                    let v4 = v6_to_v4(a)?;
                    self.tree4(v4).or_else(|| self.list4(v4))
                })
            }
        }
    }

    /// The lowest entry index among all the patterns matching `ip`, whatever their prefix
    /// length or family. It is `Some` exactly when [`IpIndex::find`] is.
    pub fn lowest(&self, ip: IpAddr) -> Option<u32> {
        match ip {
            IpAddr::V4(a) => {
                let a = u32::from(a);
                lower(self.lowest4(a), self.lowest6(v4_mapped(a)))
            }
            IpAddr::V6(a) => {
                let a = u128::from(a);
                lower(self.lowest6(a), v6_to_v4(a).and_then(|v4| self.lowest4(v4)))
            }
        }
    }
}

/// For tests: `a.b.c.d` as an address.
#[cfg(test)]
pub(crate) fn v4(s: &str) -> IpAddr {
    use std::net::Ipv4Addr;
    IpAddr::V4(s.parse::<Ipv4Addr>().unwrap_or(Ipv4Addr::UNSPECIFIED))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<IpPattern, String> {
        parse_ip(s, true).map_err(|e| e.to_string())
    }

    fn net4(a: &str, mask: u32) -> IpPattern {
        let IpAddr::V4(a) = v4(a) else { unreachable!() };
        IpPattern::V4 { addr: u32::from(a), mask }
    }

    #[test]
    fn ipv4_patterns_take_bit_counts_or_dotted_masks() {
        assert_eq!(p("10.0.0.0/8"), Ok(net4("10.0.0.0", 0xff00_0000)));
        assert_eq!(p("192.168.0.0/255.255.0.255"), Ok(net4("192.168.0.0", 0xffff_00ff)));
        assert_eq!(p("1.2.3.4"), Ok(net4("1.2.3.4", u32::MAX)));
        assert_eq!(p("0.0.0.0/0"), Ok(net4("0.0.0.0", 0)));
    }

    #[test]
    fn abbreviated_ipv4_forms_fill_from_the_last_part_and_only_when_resolving() {
        assert_eq!(p("127.1"), Ok(net4("127.0.0.1", u32::MAX)));
        assert_eq!(p("10.12/8"), Ok(net4("10.0.0.12", 0xff00_0000)));
        assert_eq!(p("192.168.1/22"), Ok(net4("192.168.0.1", 0xffff_fc00)));
        assert_eq!(p("10/8"), Ok(net4("0.0.0.10", 0xff00_0000)));
        assert_eq!(p("010.1"), Ok(net4("8.0.0.1", u32::MAX)));
        assert!(parse_ip("127.1", false).is_err());
        assert!(parse_ip("010.0.0.1", false).is_err());
    }

    #[test]
    fn ipv6_patterns_take_bit_counts_only() {
        assert_eq!(
            p("2001:db8::/32"),
            Ok(IpPattern::V6 { addr: 0x2001_0db8_u128 << 96, prefix: 32 })
        );
        assert_eq!(
            p("::ffff:10.0.0.0/104"),
            Ok(IpPattern::V6 { addr: v4_mapped(0x0a00_0000), prefix: 104 })
        );
        assert!(p("2001:db8::/ffff::").is_err());
    }

    #[test]
    fn bad_addresses_get_the_haproxy_message() {
        assert_eq!(p("1.2.3.4/40"), Err("'1.2.3.4/40' is not a valid IPv4 or IPv6 address".into()));
        assert!(p("::1/129").is_err());
        assert!(p("localhost").is_err());
        assert!(p("1.2.3.4/").is_err());
        assert!(p("256.1.1.1").is_err());
        assert!(p("1.2.3.4 ").is_err());
    }

    #[test]
    fn lookups_follow_the_haproxy_order_between_trees_and_list() {
        let pats: Vec<IpPattern> = [
            "10.0.0.0/8",
            "10.1.0.0/16",
            "10.1.0.0/16",
            "10.1.2.3",
            "::ffff:10.1.2.0/120",
            "2001:db8::/32",
            "192.168.0.0/255.255.0.255",
        ]
        .iter()
        .map(|s| parse_ip(s, false).unwrap_or(IpPattern::V4 { addr: 0, mask: 0 }))
        .collect();
        let idx = IpIndex::build(&pats);
        let six = |s: &str| IpAddr::V6(s.parse().unwrap_or(Ipv6Addr::UNSPECIFIED));
        assert_eq!(idx.find(v4("10.1.2.3")), Some(3));
        assert_eq!(idx.find(v4("10.1.2.4")), Some(1));
        assert_eq!(idx.find(v4("10.2.0.1")), Some(0));
        assert_eq!(idx.find(six("::ffff:10.1.2.3")), Some(4));
        assert_eq!(idx.find(six("::ffff:10.1.3.3")), Some(1));
        assert_eq!(idx.find(six("::10.1.3.3")), Some(1));
        assert_eq!(idx.find(six("2002:a01:303::")), Some(1));
        assert_eq!(idx.find(six("2001:db8::1")), Some(5));
        assert_eq!(idx.find(v4("192.168.7.0")), Some(6));
        assert_eq!(idx.find(six("::ffff:192.168.7.0")), Some(6));
        assert_eq!(idx.find(v4("127.0.0.1")), None);
        assert_eq!(idx.find(six("2001:db9::1")), None);
        // The lowest index among all matching patterns ignores prefix lengths and families.
        assert_eq!(idx.lowest(v4("10.1.2.3")), Some(0));
        assert_eq!(idx.lowest(six("::ffff:10.1.2.3")), Some(0));
        assert_eq!(idx.lowest(six("2002:a01:203::")), Some(0));
        assert_eq!(idx.lowest(six("2001:db8::1")), Some(5));
        assert_eq!(idx.lowest(v4("192.168.7.0")), Some(6));
        assert_eq!(idx.lowest(v4("127.0.0.1")), None);
        assert_eq!(idx.lowest(six("2001:db9::1")), None);
    }

    #[test]
    fn non_contiguous_masks_are_grouped_by_mask_and_keep_their_order() {
        let pats: Vec<IpPattern> = [
            "192.168.0.0/255.255.0.255",
            "192.0.0.7/255.0.0.255",
            "192.168.0.0/255.255.0.255",
            "192.168.0.7/255.255.0.255",
            "::ffff:192.168.1.7",
        ]
        .iter()
        .map(|s| parse_ip(s, false).unwrap_or(IpPattern::V4 { addr: 0, mask: 0 }))
        .collect();
        let idx = IpIndex::build(&pats);
        assert_eq!(idx.find(v4("192.168.5.0")), Some(0));
        assert_eq!(idx.find(v4("192.1.2.7")), Some(1));
        assert_eq!(idx.find(v4("192.168.2.7")), Some(1));
        assert_eq!(idx.find(v4("192.168.1.7")), Some(4));
        assert_eq!(idx.lowest(v4("192.168.1.7")), Some(1));
        assert_eq!(idx.find(v4("192.169.2.8")), None);
        assert_eq!(idx.lowest(v4("192.169.2.8")), None);
    }
}
