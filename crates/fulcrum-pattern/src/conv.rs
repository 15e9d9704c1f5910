//! The string converters `lower`, `upper`, `field` and `word`.
//!
//! Owns: their exact HAProxy semantics (ports of `sample_conv_str2lower`, `_str2upper`,
//! `sample_conv_field` and `sample_conv_word`, edge cases included).
//! Must not touch: argument parsing and checks done at configuration time (HAProxy refuses a
//! zero index and an empty delimiter list when parsing the configuration; here a zero index
//! yields `None` and no delimiter means the whole input is one field).

/// ASCII lower case (`lower`); `out` is cleared first. Other bytes are copied unchanged.
pub fn lower(input: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend(input.iter().map(u8::to_ascii_lowercase));
}

/// ASCII upper case (`upper`); `out` is cleared first. Other bytes are copied unchanged.
pub fn upper(input: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend(input.iter().map(u8::to_ascii_uppercase));
}

/// `field(<index>,<delimiters>[,<count>])`: the `index`-th field (1-based; negative counts
/// from the end) where every delimiter byte separates two fields, so consecutive delimiters
/// surround empty fields. `count` fields are returned with the delimiters between them
/// (default 1; 0 or negative: all the remaining fields in that direction).
///
/// `None` when the field does not exist (or `index` is 0): HAProxy's converter then fails,
/// which is not the same as an empty field (`Some(b"")`).
///
/// `field(-2,_,3)` on `f1_f2_f3__f5` is `f2_f3_`: from the end, the count extends the
/// selection towards the beginning.
pub fn field<'a>(
    input: &'a [u8],
    index: i32,
    delims: &[u8],
    count: Option<i32>,
) -> Option<&'a [u8]> {
    let mut count = count.unwrap_or(1);
    if index == 0 {
        return None;
    }
    let is_delim = |b: u8| delims.contains(&b);
    if index < 0 {
        let mut field = -1;
        let mut end = input.len();
        let mut start = input.len();
        while start > 0 {
            if is_delim(input[start - 1]) {
                if field == index {
                    if count == 1 {
                        return Some(&input[start..end]);
                    } else if count > 1 {
                        count -= 1;
                    }
                } else {
                    end = start - 1;
                    field -= 1;
                }
            }
            start -= 1;
        }
        (field == index).then(|| &input[start..end])
    } else {
        let mut field = 1;
        let mut start = 0;
        let mut end = 0;
        while end < input.len() {
            if is_delim(input[end]) {
                if field == index {
                    if count == 1 {
                        return Some(&input[start..end]);
                    } else if count > 1 {
                        count -= 1;
                    }
                } else {
                    start = end + 1;
                    field += 1;
                }
            }
            end += 1;
        }
        (field == index).then(|| &input[start..end])
    }
}

/// `word(<index>,<delimiters>[,<count>])`: like [`field`] but runs of delimiters count as
/// one and delimiters at both ends of the input are ignored. `count` as for [`field`].
///
/// `None` when the word does not exist (or `index` is 0), as HAProxy's converter fails.
pub fn word<'a>(
    input: &'a [u8],
    index: i32,
    delims: &[u8],
    count: Option<i32>,
) -> Option<&'a [u8]> {
    let mut count = count.unwrap_or(1);
    if index == 0 {
        return None;
    }
    let is_delim = |b: u8| delims.contains(&b);
    let mut word = 0;
    let mut inword = false;
    if index < 0 {
        let mut end = input.len();
        let mut start = input.len();
        while start > 0 {
            let sep = is_delim(input[start - 1]);
            if !inword {
                if !sep {
                    if word != index {
                        word -= 1;
                        end = start;
                    }
                    inword = true;
                }
            } else if sep {
                if word == index {
                    if count == 1 {
                        return Some(&input[start..end]);
                    } else if count > 1 {
                        count -= 1;
                    }
                }
                inword = false;
            }
            start -= 1;
        }
        (word == index).then(|| &input[start..end])
    } else {
        let mut start = 0;
        let mut end = 0;
        while end < input.len() {
            let sep = is_delim(input[end]);
            if !inword {
                if !sep {
                    if word != index {
                        word += 1;
                        start = end;
                    }
                    inword = true;
                }
            } else if sep {
                if word == index {
                    if count == 1 {
                        return Some(&input[start..end]);
                    } else if count > 1 {
                        count -= 1;
                    }
                }
                inword = false;
            }
            end += 1;
        }
        (word == index).then(|| &input[start..end])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(input: &str, index: i32, delims: &str, count: Option<i32>) -> Option<String> {
        field(input.as_bytes(), index, delims.as_bytes(), count)
            .map(|s| String::from_utf8_lossy(s).into_owned())
    }

    fn w(input: &str, index: i32, delims: &str, count: Option<i32>) -> Option<String> {
        word(input.as_bytes(), index, delims.as_bytes(), count)
            .map(|s| String::from_utf8_lossy(s).into_owned())
    }

    #[test]
    fn lower_and_upper_change_only_ascii_letters() {
        let mut out = b"junk".to_vec();
        lower("AbC-É".as_bytes(), &mut out);
        assert_eq!(out, "abc-É".as_bytes());
        upper(b"abc-1", &mut out);
        assert_eq!(out, b"ABC-1");
    }

    #[test]
    fn the_manual_field_examples_hold() {
        let s = "f1_f2_f3__f5";
        assert_eq!(f(s, 5, "_", None).as_deref(), Some("f5"));
        assert_eq!(f(s, 2, "_", Some(0)).as_deref(), Some("f2_f3__f5"));
        assert_eq!(f(s, 2, "_", Some(2)).as_deref(), Some("f2_f3"));
        assert_eq!(f(s, -2, "_", Some(3)).as_deref(), Some("f2_f3_"));
        assert_eq!(f(s, -3, "_", Some(0)).as_deref(), Some("f1_f2_f3"));
    }

    #[test]
    fn field_edge_cases_follow_haproxy() {
        assert_eq!(f("f1_f2_f3__f5", 4, "_", None).as_deref(), Some(""));
        assert_eq!(f("f1_f2", 3, "_", None), None);
        assert_eq!(f("f1_f2", -3, "_", None), None);
        assert_eq!(f("f1_f2", 0, "_", None), None);
        assert_eq!(f("", 1, "_", None).as_deref(), Some(""));
        assert_eq!(f("abc", 1, "", None).as_deref(), Some("abc"));
        assert_eq!(f("a,b;c", 2, ",;", None).as_deref(), Some("b"));
        assert_eq!(f("a_b_c", 2, "_", Some(5)).as_deref(), Some("b_c"));
        assert_eq!(f("a_b_c", -1, "_", None).as_deref(), Some("c"));
        assert_eq!(f("baaac", 2, "a", None).as_deref(), Some(""));
        assert_eq!(f("aab", 3, "a", None).as_deref(), Some("b"));
    }

    #[test]
    fn the_manual_word_examples_hold() {
        let s = "f1_f2_f3__f5";
        assert_eq!(w(s, 4, "_", None).as_deref(), Some("f5"));
        assert_eq!(w(s, 2, "_", Some(0)).as_deref(), Some("f2_f3__f5"));
        assert_eq!(w(s, 3, "_", Some(2)).as_deref(), Some("f3__f5"));
        assert_eq!(w(s, -2, "_", Some(3)).as_deref(), Some("f1_f2_f3"));
        assert_eq!(w(s, -3, "_", Some(0)).as_deref(), Some("f1_f2"));
        assert_eq!(w("/f1/f2/f3/f4", 1, "/", None).as_deref(), Some("f1"));
    }

    #[test]
    fn word_edge_cases_follow_haproxy() {
        assert_eq!(w("baaac", 2, "a", None).as_deref(), Some("c"));
        assert_eq!(w("__a__", 1, "_", None).as_deref(), Some("a"));
        assert_eq!(w("__a__", -1, "_", None).as_deref(), Some("a"));
        assert_eq!(w("__a__", 2, "_", None), None);
        assert_eq!(w("____", 1, "_", None), None);
        assert_eq!(w("", 1, "_", None), None);
        assert_eq!(w("a b", 0, " ", None), None);
    }
}
