//! `s SIMILAR TO pattern [ESCAPE c]`: the pattern translated to a regular
//! expression as Calcite's `Like.sqlToRegexSimilar` does, which Flink
//! calls, and matched against the whole text. `_` is any character and
//! `%` any run of characters (neither spanning a line end, as Java's `.`);
//! `|`, `*`, `+`, `?`, `{m,n}`, `( )` and `[ ]` are the regex operators,
//! and so is `.` (Calcite passes it through, unlike the SQL standard);
//! `$` and `\` are literal. The escape character makes the next special
//! character (or itself) literal. `[:ALPHA:]`-style classes are refused.

/// The characters an escape may make literal (Calcite's
/// `SQL_SIMILAR_SPECIALS`).
const SPECIALS: &str = "[]()|^-+*_%?{}";

/// The regular expression of a SIMILAR TO pattern, anchored at both
/// ends; `Err` says why the pattern is refused.
pub fn to_regex(pattern: &str, escape: Option<char>) -> Result<String, String> {
    let mut out = String::from(r"\A(?:");
    let mut inside = false;
    let mut it = pattern.chars().peekable();
    while let Some(c) = it.next() {
        if Some(c) == escape {
            match it.next() {
                Some(n) if SPECIALS.contains(n) || Some(n) == escape => {
                    out.push_str(&regex::escape(&n.to_string()))
                }
                _ => {
                    return Err(format!(
                        "an invalid escape in the SIMILAR TO pattern `{pattern}`"
                    ))
                }
            }
            continue;
        }
        match c {
            '_' if !inside => out.push('.'),
            '%' if !inside => out.push_str(".*"),
            '[' if inside => return Err(format!("a `[` inside `[..]` in `{pattern}`")),
            '[' => {
                if it.peek() == Some(&':') {
                    return Err(format!(
                        "the character class `[:..:]` of the SIMILAR TO pattern `{pattern}`"
                    ));
                }
                inside = true;
                out.push('[');
            }
            ']' if inside => {
                inside = false;
                out.push(']');
            }
            ']' => return Err(format!("a `]` without `[` in `{pattern}`")),
            '\\' | '$' => out.push_str(&regex::escape(&c.to_string())),
            other => out.push(other),
        }
    }
    if inside {
        return Err(format!("a `[` without `]` in `{pattern}`"));
    }
    out.push_str(r")\z");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::to_regex;

    fn matches(s: &str, pattern: &str, escape: Option<char>) -> bool {
        regex::Regex::new(&to_regex(pattern, escape).unwrap())
            .unwrap()
            .is_match(s)
    }

    #[test]
    fn as_calcites_similar() {
        assert!(matches("abc", "abc", None));
        assert!(!matches("abcd", "abc", None));
        assert!(matches("abc", "%(b|d)%", None));
        assert!(matches("abd", "a_d", None));
        assert!(matches("aaab", "a+b", None));
        assert!(matches("ab", "[a-c]{2}", None));
        assert!(!matches("ad", "[a-c]{2}", None));
        // `.` is any character in Calcite's translation; `$` is literal.
        assert!(matches("a1", "a.", None));
        assert!(matches("5$", "5$", None));
        // The escape makes `%` and `_` literal.
        assert!(matches("10%", "10!%", Some('!')));
        assert!(!matches("100", "10!%", Some('!')));
        assert!(to_regex("a!b", Some('!')).is_err());
        assert!(to_regex("[:ALPHA:]", None).is_err());
        assert!(to_regex("a]", None).is_err());
    }
}
