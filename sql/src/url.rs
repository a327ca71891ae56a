//! PARSE_URL: the parts of a URL as Java's `java.net.URL` splits them,
//! which Flink's PARSE_URL reads them from: the protocol before the first
//! `:`, the ref after the first `#`, the query after the first `?` before
//! it, the authority after `//` up to the next `/`, and the path after.
//! Text Java refuses (no protocol, one without a handler in the JDK, a
//! port that is not a number) gives NULL, as Flink's does.

/// The parts of a URL, each `None` where `java.net.URL` gives null.
#[derive(Debug, PartialEq, Eq)]
struct Url<'a> {
    protocol: String,
    authority: Option<&'a str>,
    user_info: Option<&'a str>,
    host: &'a str,
    path: &'a str,
    query: Option<&'a str>,
    reference: Option<&'a str>,
}

/// The protocols the JDK has handlers for; `new URL` refuses others.
const PROTOCOLS: [&str; 8] = [
    "http", "https", "ftp", "file", "jar", "mailto", "jmod", "jrt",
];

fn parse(spec: &str) -> Option<Url<'_>> {
    // Java trims blanks (anything up to U+0020) around the text.
    let spec = spec.trim_matches(|c: char| c <= ' ');
    let colon = spec.find(':')?;
    let scheme = &spec[..colon];
    let valid = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let protocol = scheme.to_ascii_lowercase();
    if !valid || !PROTOCOLS.contains(&protocol.as_str()) {
        return None;
    }
    let mut rest = &spec[colon + 1..];
    let mut reference = None;
    if let Some(h) = rest.find('#') {
        reference = Some(&rest[h + 1..]);
        rest = &rest[..h];
    }
    let mut query = None;
    if let Some(q) = rest.find('?') {
        query = Some(&rest[q + 1..]);
        rest = &rest[..q];
    }
    let (mut authority, mut user_info, mut host) = (None, None, "");
    if let Some(after) = rest.strip_prefix("//") {
        let end = after.find('/').unwrap_or(after.len());
        let auth = &after[..end];
        rest = &after[end..];
        authority = Some(auth);
        let mut host_port = auth;
        if let Some(at) = auth.find('@') {
            if auth.rfind('@') == Some(at) {
                user_info = Some(&auth[..at]);
                host_port = &auth[at + 1..];
            } else {
                // More than one `@`: not a server-based authority.
                host_port = "";
            }
        }
        host = host_port;
        // A port after the host (after `]` for an IPv6 address) must be
        // digits.
        let port_from = host_port.rfind(']').map_or(0, |b| b + 1);
        if let Some(c) = host_port[port_from..].find(':') {
            let port = &host_port[port_from + c + 1..];
            if !port.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            host = &host_port[..port_from + c];
        }
    }
    Some(Url {
        protocol,
        authority,
        user_info,
        host,
        path: rest,
        query,
        reference,
    })
}

/// PARSE_URL(url, part): `HOST`, `PATH`, `QUERY`, `REF`, `PROTOCOL`,
/// `FILE` (the path and `?query`), `AUTHORITY` or `USERINFO` (the part
/// names as written, upper case); NULL for another part, a part the URL
/// has not, or text that is not a URL.
pub fn parse_url(url: &str, part: &str) -> Option<String> {
    let u = parse(url)?;
    match part {
        "HOST" => Some(u.host.to_owned()),
        "PATH" => Some(u.path.to_owned()),
        "QUERY" => u.query.map(str::to_owned),
        "REF" => u.reference.map(str::to_owned),
        "PROTOCOL" => Some(u.protocol),
        "FILE" => Some(match u.query {
            Some(q) => format!("{}?{q}", u.path),
            None => u.path.to_owned(),
        }),
        "AUTHORITY" => u.authority.map(str::to_owned),
        "USERINFO" => u.user_info.map(str::to_owned),
        _ => None,
    }
}

/// PARSE_URL(url, 'QUERY', key): the value of the query's first `key=`
/// at its start or after a `&`, up to the next `&`; NULL for another part
/// than `QUERY` or no such key.
pub fn parse_url_key(url: &str, part: &str, key: &str) -> Option<String> {
    if part != "QUERY" {
        return None;
    }
    let query = parse(url)?.query?;
    let wanted = format!("{key}=");
    let mut from = 0;
    while let Some(i) = query[from..].find(&wanted) {
        let at = from + i;
        if at == 0 || query.as_bytes()[at - 1] == b'&' {
            let value = &query[at + wanted.len()..];
            return Some(value[..value.find('&').unwrap_or(value.len())].to_owned());
        }
        from = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_as_java_url_gives_them() {
        let u = "http://user:pw@facebook.com:8080/path/p1.php?k1=v1&k2=v2#Ref1";
        let part = |p| parse_url(u, p);
        assert_eq!(part("HOST").as_deref(), Some("facebook.com"));
        assert_eq!(part("PATH").as_deref(), Some("/path/p1.php"));
        assert_eq!(part("QUERY").as_deref(), Some("k1=v1&k2=v2"));
        assert_eq!(part("REF").as_deref(), Some("Ref1"));
        assert_eq!(part("PROTOCOL").as_deref(), Some("http"));
        assert_eq!(part("FILE").as_deref(), Some("/path/p1.php?k1=v1&k2=v2"));
        assert_eq!(
            part("AUTHORITY").as_deref(),
            Some("user:pw@facebook.com:8080")
        );
        assert_eq!(part("USERINFO").as_deref(), Some("user:pw"));
        assert_eq!(part("host"), None);
        assert_eq!(part("PORT"), None);
        let u = "https://example.com";
        assert_eq!(parse_url(u, "PATH").as_deref(), Some(""));
        assert_eq!(parse_url(u, "QUERY"), None);
        assert_eq!(parse_url(u, "REF"), None);
        assert_eq!(parse_url(u, "USERINFO"), None);
        assert_eq!(
            parse_url("HTTP://a.b/c", "PROTOCOL").as_deref(),
            Some("http")
        );
        assert_eq!(parse_url("file:/tmp/x", "AUTHORITY"), None);
        assert_eq!(parse_url("file:/tmp/x", "PATH").as_deref(), Some("/tmp/x"));
        for bad in [
            "facebook.com/x",
            "foo://a/b",
            "http://a:x/b",
            "",
            "1http://a",
        ] {
            assert_eq!(parse_url(bad, "HOST"), None, "{bad}");
        }
    }

    #[test]
    fn query_values_by_key() {
        let u = "http://a.com/p?k1=v1&k2=v2&xk1=no&empty=#r";
        let key = |k| parse_url_key(u, "QUERY", k);
        assert_eq!(key("k1").as_deref(), Some("v1"));
        assert_eq!(key("k2").as_deref(), Some("v2"));
        assert_eq!(key("xk1").as_deref(), Some("no"));
        assert_eq!(key("empty").as_deref(), Some(""));
        assert_eq!(key("k3"), None);
        assert_eq!(parse_url_key(u, "HOST", "k1"), None);
        assert_eq!(parse_url_key("http://a.com/p", "QUERY", "k1"), None);
    }
}
