//! The web dashboard (what Flink's web UI shows of a running job): a page
//! at `/` and its script, style sheet and icon under `/web/`, embedded in
//! the binary from `rest/web/` (plain HTML, CSS and JavaScript: no
//! framework, no build step, nothing fetched from elsewhere, so it works
//! offline). The page draws what it reads from the JSON routes of
//! [`crate::routes`], polling them from the browser once a second.
//!
//! These files hold no data of the job, so they are served without the
//! bearer token; every request the page makes for data carries it (the
//! page takes it from a `#token=...` fragment or asks for it). Every file
//! goes out with its content type, `X-Content-Type-Options: nosniff`, a
//! `Content-Security-Policy` that allows only this origin's own script,
//! style and requests (the page has no inline script or style), and
//! `Cache-Control: no-cache` with an `ETag` (a browser revalidates, and
//! gets the new files as soon as the binary changes).

use axum::extract::Path;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};

use crate::shapes;

/// What the dashboard's files may load and do: scripts, styles, images
/// and requests of this origin only; no inline script or style, no
/// plugins, no forms sent anywhere, not framed by another page.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// One embedded file.
struct Asset {
    /// Its name under `/web/` (the page's is `index.html`, served at `/`).
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
    /// A hash of `body`, its entity tag.
    hash: u64,
}

impl Asset {
    const fn new(name: &'static str, content_type: &'static str, body: &'static [u8]) -> Self {
        Self {
            name,
            content_type,
            body,
            hash: fnv1a(body),
        }
    }

    /// The file, or 304 if `request` holds its entity tag already.
    fn serve(&self, request: &HeaderMap) -> Response {
        let etag = format!("\"{:016x}\"", self.hash);
        let fresh = request
            .get_all(header::IF_NONE_MATCH)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|tag| tag.trim() == etag || tag.trim() == "*");
        let mut response = if fresh {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            (StatusCode::OK, self.body).into_response()
        };
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(self.content_type),
        );
        if let Ok(v) = HeaderValue::from_str(&etag) {
            headers.insert(header::ETAG, v);
        }
        secure(headers);
        response
    }
}

/// The page.
const INDEX: Asset = Asset::new(
    "index.html",
    "text/html; charset=utf-8",
    include_bytes!("../web/index.html"),
);

/// The files under `/web/`.
const ASSETS: [Asset; 3] = [
    Asset::new(
        "dashboard.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../web/dashboard.js"),
    ),
    Asset::new(
        "dashboard.css",
        "text/css; charset=utf-8",
        include_bytes!("../web/dashboard.css"),
    ),
    Asset::new(
        "favicon.svg",
        "image/svg+xml",
        include_bytes!("../web/favicon.svg"),
    ),
];

/// FNV-1a over `bytes`, at compile time.
const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    h
}

/// The headers every dashboard response carries, a 404 too.
fn secure(headers: &mut HeaderMap) {
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
}

/// The dashboard's routes: `GET /` and `GET /web/{file}` (no token).
pub fn router() -> Router {
    Router::new()
        .route("/", get(index))
        .route("/web/{file}", get(asset))
}

async fn index(headers: HeaderMap) -> Response {
    INDEX.serve(&headers)
}

async fn asset(Path(file): Path<String>, headers: HeaderMap) -> Response {
    match ASSETS.iter().find(|a| a.name == file) {
        Some(a) => a.serve(&headers),
        None => {
            let mut r = (
                StatusCode::NOT_FOUND,
                Json(shapes::errors(
                    "Not found: no such dashboard file (see docs/REST.md)",
                )),
            )
                .into_response();
            secure(r.headers_mut());
            r
        }
    }
}

#[cfg(test)]
mod tests;
