//! The dashboard's files as a browser gets them from a real endpoint:
//! types, security headers, revalidation, 404s, and the token rule (files
//! without a token, data only with it).

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::Duration;

use weir_runtime::JobHandle;

use super::*;
use crate::{RestServer, RestSettings};

const TOKEN: &str = "dashboard-test-token-0123";

fn server(token: Option<&str>) -> RestServer {
    let settings = RestSettings {
        address: IpAddr::from([127, 0, 0, 1]),
        port: 0,
        token: token.map(str::to_owned),
    };
    RestServer::start(&settings, JobHandle::new()).expect("start an endpoint")
}

/// A response: status, headers (names lower-cased), body.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends one raw HTTP/1.1 request (as written, so that paths reach the
/// server unnormalised) and reads the whole response.
fn request(addr: SocketAddr, method: &str, path: &str, extra: &[(&str, &str)]) -> Reply {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read");
    let raw = String::from_utf8(raw).expect("a text response");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head");
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Reply {
        status,
        headers,
        body: body.to_owned(),
    }
}

fn get(addr: SocketAddr, path: &str) -> Reply {
    request(addr, "GET", path, &[])
}

#[test]
fn page_and_files_are_served_with_their_types_and_a_strict_policy() {
    let s = server(None);
    for (path, ty, needle) in [
        (
            "/",
            "text/html; charset=utf-8",
            "<script src=\"/web/dashboard.js\"",
        ),
        (
            "/web/dashboard.js",
            "text/javascript; charset=utf-8",
            "function drawJobGraph",
        ),
        (
            "/web/dashboard.css",
            "text/css; charset=utf-8",
            "data-backpressure=\"HIGH\"",
        ),
        ("/web/favicon.svg", "image/svg+xml", "<svg"),
    ] {
        let r = get(s.local_addr(), path);
        assert_eq!(r.status, 200, "GET {path}: {}", r.body);
        assert_eq!(r.header("content-type"), Some(ty), "GET {path}");
        assert!(r.body.contains(needle), "GET {path}: no {needle}");
        assert_eq!(
            r.header("content-security-policy"),
            Some(CONTENT_SECURITY_POLICY)
        );
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(r.header("cache-control"), Some("no-cache"));
        assert!(r.header("etag").is_some_and(|e| e.starts_with('"')));
    }
    assert!(!CONTENT_SECURITY_POLICY.contains("unsafe"));
    assert!(CONTENT_SECURITY_POLICY.starts_with("default-src 'none'"));
}

#[test]
fn a_browser_revalidates_with_the_etag() {
    let s = server(None);
    let first = get(s.local_addr(), "/web/dashboard.js");
    let etag = first.header("etag").expect("an etag").to_owned();
    let again = request(
        s.local_addr(),
        "GET",
        "/web/dashboard.js",
        &[("If-None-Match", &etag)],
    );
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    let other = request(
        s.local_addr(),
        "GET",
        "/web/dashboard.js",
        &[("If-None-Match", "\"0000000000000000\"")],
    );
    assert_eq!(other.status, 200);
}

#[test]
fn unknown_files_and_hostile_paths_get_a_404() {
    let s = server(None);
    for path in [
        "/web/nope.js",
        "/web/",
        "/web/dashboard.js/x",
        "/web/../Cargo.toml",
        "/web/%2e%2e%2fsrc%2flib.rs",
        "/web/..%2f..%2fCargo.toml",
        "/index.html",
    ] {
        let r = get(s.local_addr(), path);
        assert_eq!(r.status, 404, "GET {path}: {}", r.body);
        assert!(r.body.contains("\"errors\""), "GET {path}: {}", r.body);
    }
    let post = request(s.local_addr(), "POST", "/", &[("Content-Length", "0")]);
    assert_eq!(post.status, 405, "{}", post.body);
    let delete = request(s.local_addr(), "DELETE", "/web/dashboard.js", &[]);
    assert_eq!(delete.status, 405, "{}", delete.body);
}

#[test]
fn files_need_no_token_but_data_does() {
    let s = server(Some(TOKEN));
    for path in ["/", "/web/dashboard.js", "/web/dashboard.css"] {
        assert_eq!(get(s.local_addr(), path).status, 200, "GET {path}");
    }
    assert_eq!(get(s.local_addr(), "/web/nope.js").status, 404);
    let no_token = get(s.local_addr(), "/jobs/overview");
    assert_eq!(no_token.status, 401, "{}", no_token.body);
    let bearer = format!("Bearer {TOKEN}");
    let with_token = request(
        s.local_addr(),
        "GET",
        "/jobs/overview",
        &[("Authorization", &bearer)],
    );
    assert_eq!(with_token.status, 200, "{}", with_token.body);
    let lower = format!("bearer {TOKEN}");
    let lower = request(
        s.local_addr(),
        "GET",
        "/jobs/overview",
        &[("Authorization", &lower)],
    );
    assert_eq!(lower.status, 200, "the scheme in any case: {}", lower.body);
    // The page holds no data of the job: nothing but its own markup.
    let page = get(s.local_addr(), "/");
    assert!(!page.body.contains(TOKEN));
}

/// The policy forbids inline script and style: the page must need none,
/// or a browser would refuse to run it.
#[test]
fn the_page_has_no_inline_script_or_style() {
    let page = std::str::from_utf8(INDEX.body).unwrap();
    for (i, _) in page.match_indices("<script") {
        assert!(
            page[i..].starts_with("<script src=\"/web/"),
            "an inline script at byte {i}"
        );
    }
    assert!(!page.contains("<style"), "an inline style sheet");
    assert!(!page.contains(" style="), "an inline style attribute");
    let handler = page.match_indices(" on").any(|(i, _)| {
        let name: String = page[i + 1..]
            .chars()
            .take_while(char::is_ascii_alphabetic)
            .collect();
        page[i + 1 + name.len()..].starts_with('=')
    });
    assert!(!handler, "an inline event handler");
    let js = std::str::from_utf8(ASSETS[0].body).unwrap();
    assert!(!js.contains("innerHTML"), "the script writes HTML");
    assert!(!js.contains("setAttribute(\"style\""));
}

/// Every element the script looks up by id is on the page.
#[test]
fn the_script_finds_every_element_it_draws_into() {
    let page = std::str::from_utf8(INDEX.body).unwrap();
    let js = std::str::from_utf8(ASSETS[0].body).unwrap();
    let mut ids = Vec::new();
    for pattern in ["getElementById(\"", "querySelector(\"#"] {
        for (i, _) in js.match_indices(pattern) {
            let rest = &js[i + pattern.len()..];
            let end = rest.find(['"', ' ']).expect("a closing quote");
            ids.push(&rest[..end]);
        }
    }
    assert!(ids.len() > 10, "found only {ids:?}");
    for id in ids {
        assert!(
            page.contains(&format!("id=\"{id}\"")),
            "the script draws into #{id}, which the page lacks"
        );
    }
}
