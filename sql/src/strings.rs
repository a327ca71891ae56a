//! String functions whose rules are Java's library's, as Flink's runtime
//! calls it: IS_DIGIT and IS_ALPHA (every character a digit or a letter,
//! as `StringUtils.isNumeric` / `isAlpha`), IS_DECIMAL (text Java reads
//! as an int, a long or a double), TRANSLATE (characters mapped one to
//! one), and HASH_CODE (`Math.abs(String.hashCode())`).

/// IS_DIGIT of text: not empty, and every character a decimal digit
/// (Unicode's `Nd`, as Java's `Character.isDigit`). Rust has no `Nd`
/// test: a non-ASCII character counts if it is numeric and in a run of
/// ten numeric characters, as every script's digits are (so `½` and `²`
/// do not count; circled numbers and Roman numerals, which also come in
/// runs, do, where Java's test says no).
pub fn is_digit(s: &str) -> bool {
    !s.is_empty() && s.chars().all(decimal_digit)
}

fn decimal_digit(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_digit();
    }
    let numeric = |u: u32| char::from_u32(u).is_some_and(char::is_numeric);
    let u = u32::from(c);
    numeric(u) && (u.saturating_sub(9)..=u).any(|start| (start..start + 10).all(numeric))
}

/// IS_ALPHA of text: not empty, and every character a letter (Java's
/// `Character.isLetter`; Rust's `is_alphabetic`, which also takes the
/// few letter-like marks and numerals Unicode calls alphabetic).
pub fn is_alpha(s: &str) -> bool {
    !s.is_empty() && s.chars().all(char::is_alphabetic)
}

/// IS_DECIMAL of text: whether Java's `Integer.parseInt`,
/// `Long.parseLong` or `Double.parseDouble` reads it, so the double
/// syntax decides: blanks around it, a sign, digits with an optional
/// point and exponent and an optional `f`/`d` suffix, `NaN`,
/// `Infinity`, or a hexadecimal `0x1.8p1`.
pub fn is_decimal(s: &str) -> bool {
    // Java's `String.trim`: any character up to U+0020.
    let t = s.trim_matches(|c: char| c <= ' ');
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    if t == "NaN" || t == "Infinity" {
        return true;
    }
    let b = t.as_bytes();
    let body = match b.last() {
        Some(b'f' | b'F' | b'd' | b'D') => &b[..b.len() - 1],
        _ => b,
    };
    if let Some(hex) = body
        .strip_prefix(b"0x")
        .or_else(|| body.strip_prefix(b"0X"))
    {
        return hex_float(hex);
    }
    if b.is_empty() {
        return false;
    }
    let digits = |from: usize| {
        let n = body[from..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        (n, from + n)
    };
    let (whole, mut i) = digits(0);
    let mut frac = 0;
    if body.get(i) == Some(&b'.') {
        (frac, i) = digits(i + 1);
    }
    if whole + frac == 0 {
        return false;
    }
    if matches!(body.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(body.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let (n, end) = digits(i);
        if n == 0 {
            return false;
        }
        i = end;
    }
    i == body.len()
}

/// Text as Java's `Double.parseDouble` reads it, which Flink's CAST
/// to DOUBLE and its CSV and JSON formats call: the syntax of
/// [`is_decimal`] (`NaN` and `Infinity` spelt so, an `f`/`d` suffix, a
/// hexadecimal `0x1.8p1`); `None` for other text (Rust's own parser also
/// takes `inf`, `nan` and `infinity` in any case, and refuses `1d`).
pub fn parse_java_double(s: &str) -> Option<f64> {
    java_number(s, |t| t.parse::<f64>().ok())
}

/// As [`parse_java_double`], Java's `Float.parseFloat` (rounded once,
/// to the nearest `f32`).
pub fn parse_java_float(s: &str) -> Option<f32> {
    java_number(s, |t| t.parse::<f32>().ok()).map(|v| v as f32)
}

/// The number Java's parsers read from `s`, `decimal` reading the
/// decimal text left once the sign, the suffix and the special names are
/// dealt with.
fn java_number<T: Into<f64>>(s: &str, decimal: impl Fn(&str) -> Option<T>) -> Option<f64> {
    if !is_decimal(s) {
        return None;
    }
    let t = s.trim_matches(|c: char| c <= ' ');
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let v: f64 = match t {
        "NaN" => f64::NAN,
        "Infinity" => f64::INFINITY,
        _ => {
            let body = t.strip_suffix(['f', 'F', 'd', 'D']).unwrap_or(t);
            match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
                Some(hex) => hex_value(hex)?,
                None => decimal(body)?.into(),
            }
        }
    };
    Some(if neg { -v } else { v })
}

/// The value of a hexadecimal double after its `0x` ([`hex_float`]'s
/// syntax): its digits times 2 to the power of its exponent.
fn hex_value(hex: &str) -> Option<f64> {
    let (mantissa, exp) = hex.split_once(['p', 'P'])?;
    let exp: i32 = exp.parse().ok()?;
    let (whole, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut v = 0f64;
    for c in whole.chars().chain(frac.chars()) {
        v = v * 16.0 + f64::from(c.to_digit(16)?);
    }
    let shift = exp.checked_sub(4 * i32::try_from(frac.len()).ok()?)?;
    Some(v * 2f64.powi(shift))
}

/// A hexadecimal double after its `0x`: hex digits with an optional
/// point (some digit on either side), then a binary exponent `p`, which
/// Java requires.
fn hex_float(b: &[u8]) -> bool {
    let Some(p) = b.iter().position(|&c| c == b'p' || c == b'P') else {
        return false;
    };
    let (mantissa, exp) = (&b[..p], &b[p + 1..]);
    let exp = exp
        .strip_prefix(b"+")
        .or(exp.strip_prefix(b"-"))
        .unwrap_or(exp);
    let mut parts = mantissa.splitn(2, |&c| c == b'.');
    let whole = parts.next().unwrap_or(b"");
    let frac = parts.next().unwrap_or(b"");
    !exp.is_empty()
        && exp.iter().all(u8::is_ascii_digit)
        && whole.len() + frac.len() > 0
        && whole.iter().chain(frac).all(u8::is_ascii_hexdigit)
}

/// TRANSLATE(s, from, to): each character of `s` that is in `from` (its
/// first place there) becomes the character at that place in `to`, or is
/// dropped when `to` is shorter; other characters stay.
pub fn translate(s: &str, from: &str, to: &str) -> String {
    let to: Vec<char> = to.chars().collect();
    s.chars()
        .filter_map(|c| match from.chars().position(|f| f == c) {
            Some(i) => to.get(i).copied(),
            None => Some(c),
        })
        .collect()
}

/// HASH_CODE of text: Java's `String.hashCode` (over UTF-16 code units,
/// `h * 31 + unit`, wrapping) made non-negative by `Math.abs`, which
/// leaves `Integer.MIN_VALUE` as it is.
pub fn hash_code(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)))
        .wrapping_abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_and_letters_as_java_reads_them() {
        assert!(is_digit("0123"));
        assert!(is_digit("١٢٣")); // Arabic-Indic digits are `Nd`
        for s in ["", "12a", "-1", "1.5", " 1", "½", "²"] {
            assert!(!is_digit(s), "{s}");
        }
        assert!(is_alpha("abcÉß"));
        for s in ["", "ab1", "a b", "a-b"] {
            assert!(!is_alpha(s), "{s}");
        }
    }

    #[test]
    fn decimals_as_javas_double_parser_reads_them() {
        for s in [
            "1",
            "-1",
            "+1.5",
            "1.",
            ".5",
            "1e5",
            "1E-5",
            " 2.5 ",
            "1.5f",
            "2d",
            "NaN",
            "-Infinity",
            "0x1.8p1",
            "0X10P-2",
            "123456789012345678901234567890",
        ] {
            assert!(is_decimal(s), "{s}");
        }
        for s in [
            "", " ", ".", "e5", "1e", "1.5.5", "abc", "1,5", "0x10", "nan", "inf", "1 2", "--1",
            "f",
        ] {
            assert!(!is_decimal(s), "{s}");
        }
    }

    #[test]
    fn doubles_and_floats_as_javas_parsers_read_them() {
        let d = parse_java_double;
        assert_eq!(d(" 2.5 "), Some(2.5));
        assert_eq!(d("1d"), Some(1.0));
        assert_eq!(d("-1.5F"), Some(-1.5));
        assert_eq!(d("0x1.8p1"), Some(3.0));
        assert_eq!(d("-0X10P-2"), Some(-4.0));
        assert_eq!(d("+Infinity"), Some(f64::INFINITY));
        assert!(d("-NaN").is_some_and(f64::is_nan));
        assert_eq!(d("1e400"), Some(f64::INFINITY));
        // Rust's parser takes these; Java's does not.
        for bad in [
            "inf", "infinity", "nan", "INFINITY", "NAN", "", "1e", "0x10",
        ] {
            assert_eq!(d(bad), None, "{bad}");
        }
        assert_eq!(parse_java_float("0.1"), Some(0.1f32));
        assert_eq!(parse_java_float("3f"), Some(3.0));
        assert_eq!(parse_java_float("nan"), None);
    }

    #[test]
    fn translate_maps_drops_and_keeps() {
        assert_eq!(translate("AaBbCc", "abc", "123"), "A1B2C3");
        assert_eq!(translate("AaBbCc", "abc", "1"), "A1BC");
        assert_eq!(translate("AaBbCc", "abc", ""), "ABC");
        assert_eq!(translate("aaa", "aa", "xy"), "xxx"); // the first place
        assert_eq!(translate("héllo", "é", "e"), "hello");
    }

    #[test]
    fn hash_codes_are_javas() {
        assert_eq!(hash_code(""), 0);
        assert_eq!(hash_code("a"), 97);
        assert_eq!(hash_code("hello"), 99_162_322);
        // "polygenelubricants".hashCode() is Integer.MIN_VALUE.
        assert_eq!(hash_code("polygenelubricants"), i32::MIN);
        // "zzzzzzzzzz".hashCode() is negative: made positive.
        assert_eq!(hash_code("zzzzzzzzzz"), 1_580_979_136);
    }
}
