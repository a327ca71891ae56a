//! URL_ENCODE and URL_DECODE: text in the `application/x-www-form-urlencoded`
//! form as Java's `URLEncoder.encode` / `URLDecoder.decode` with UTF-8
//! write and read it, which Flink's functions call: letters, digits and
//! `.-*_` stay, a space is `+`, every other character its UTF-8 bytes as
//! `%XX`; decoding takes `+` back to a space and runs of `%XX` as UTF-8
//! (bytes that are not UTF-8 become U+FFFD, as Java's `String` makes
//! them). A `%` without two hex digits after it fails Java's decoder, and
//! Flink's URL_DECODE gives NULL then.

/// URL_ENCODE of `s`.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(char::from(b))
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// URL_DECODE of `s`: `None` where Java's decoder throws.
pub fn decode(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut bytes: Vec<u8> = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '%' {
            let hi = chars.next()?.to_digit(16)?;
            let lo = chars.next()?.to_digit(16)?;
            bytes.push((hi * 16 + lo) as u8);
            if chars.peek() == Some(&'%') {
                continue;
            }
            out.push_str(&String::from_utf8_lossy(&bytes));
            bytes.clear();
        } else {
            out.push(if c == '+' { ' ' } else { c });
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_javas_url_encoder_and_decoder() {
        assert_eq!(encode("a b&c=d/é~"), "a+b%26c%3Dd%2F%C3%A9%7E");
        assert_eq!(encode("A-z_0.9*"), "A-z_0.9*");
        assert_eq!(
            decode("a+b%26c%3dd%2F%C3%A9%7E").as_deref(),
            Some("a b&c=d/é~")
        );
        assert_eq!(decode("100%").as_deref(), None);
        assert_eq!(decode("%zz").as_deref(), None);
        assert_eq!(decode("%C3").as_deref(), Some("\u{FFFD}"));
        assert_eq!(decode("plain").as_deref(), Some("plain"));
    }
}
