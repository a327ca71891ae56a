//! Paths and methods of the endpoint, the bearer-token check and the
//! limits every request is held to. A request for an unknown path or job
//! gets 404, an unsupported method 405, a malformed query or body 400,
//! a missing or wrong token 401, each with Flink's `{"errors": [...]}`;
//! none of them reaches the job.

use std::path::PathBuf;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::Value;
use weir_runtime::exec::handle::VertexView;
use weir_runtime::{CheckpointRecord, JobHandle, JobView};

use crate::{dashboard, shapes};
use crate::{MAX_BODY, REQUEST_TIMEOUT};

/// What every handler gets.
#[derive(Clone)]
struct App {
    handle: JobHandle,
}

type Reply = (StatusCode, Json<Value>);

fn error(status: StatusCode, message: &str) -> Reply {
    (status, Json(shapes::errors(message)))
}

fn ok(v: Value) -> Reply {
    (StatusCode::OK, Json(v))
}

/// The router: every path of docs/REST.md; with `token`, every request
/// must carry `Authorization: Bearer <token>`, except for the dashboard's
/// files ([`crate::dashboard`]), which hold no data of the job.
pub fn router(handle: JobHandle, token: Option<String>) -> Router {
    let app = App { handle };
    let api = Router::new()
        .route("/config", get(config))
        .route("/overview", get(overview))
        .route("/jobs", get(jobs))
        .route("/jobs/overview", get(jobs_overview))
        .route("/jobs/{id}", get(job).patch(patch_job))
        .route("/jobs/{id}/config", get(job_config))
        .route("/jobs/{id}/metrics", get(job_metrics))
        .route("/jobs/{id}/exceptions", get(exceptions))
        .route("/jobs/{id}/checkpoints", get(checkpoints))
        .route("/jobs/{id}/checkpoints/config", get(checkpoint_config))
        .route(
            "/jobs/{id}/checkpoints/details/{cid}",
            get(checkpoint_details),
        )
        .route(
            "/jobs/{id}/checkpoints/details/{cid}/subtasks/{vid}",
            get(checkpoint_subtasks),
        )
        .route("/jobs/{id}/vertices/{vid}", get(vertex))
        .route("/jobs/{id}/vertices/{vid}/backpressure", get(backpressure))
        .route("/jobs/{id}/vertices/{vid}/watermarks", get(watermarks))
        .route("/jobs/{id}/vertices/{vid}/metrics", get(vertex_metrics))
        .route(
            "/jobs/{id}/vertices/{vid}/subtasks/metrics",
            get(aggregated_subtask_metrics),
        )
        .route(
            "/jobs/{id}/savepoints",
            axum::routing::post(trigger_savepoint),
        )
        .route("/jobs/{id}/savepoints/{trigger}", get(savepoint_status))
        .route("/jobs/{id}/stop", axum::routing::post(stop))
        .route("/jobs/{id}/rescaling", axum::routing::any(rescaling))
        .route(
            "/jobs/{id}/rescaling/{trigger}",
            axum::routing::any(rescaling),
        )
        .route(
            "/jobs/{id}/resource-requirements",
            axum::routing::any(rescaling),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(app)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn_with_state(token, authorize));
    api.merge(dashboard::router().method_not_allowed_fallback(method_not_allowed))
        .layer(middleware::from_fn(time_limit))
        .layer(middleware::from_fn(json_errors))
}

/// Longest text of an error answer [`json_errors`] rewrites.
const ERROR_TEXT: usize = 1024;

/// Rewrites an error answer that is not JSON as Flink's `{"errors":
/// [...]}`: axum's own refusals (a path segment that is not UTF-8, a
/// chunked body found longer than [`MAX_BODY`] while read) are plain
/// text, which Flink's clients cannot parse.
pub(crate) async fn json_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if json || !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, ERROR_TEXT)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .unwrap_or_default();
    let text = if text.is_empty() {
        status.canonical_reason().unwrap_or("Error").to_owned()
    } else {
        text.chars().filter(|c| !c.is_control()).collect()
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    let body = serde_json::to_vec(&shapes::errors(&text)).unwrap_or_default();
    Response::from_parts(parts, axum::body::Body::from(body))
}

/// Holds every request to [`REQUEST_TIMEOUT`], and refuses a body longer
/// than [`MAX_BODY`] from its declared length, before reading it.
pub(crate) async fn time_limit(request: Request, next: Next) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("Request body too large: at most {MAX_BODY} bytes"),
        )
        .into_response();
    }
    match tokio::time::timeout(REQUEST_TIMEOUT, next.run(request)).await {
        Ok(r) => r,
        Err(_) => error(StatusCode::REQUEST_TIMEOUT, "request timed out").into_response(),
    }
}

/// Checks the bearer token, if one is set (in constant time).
pub(crate) async fn authorize(
    State(token): State<Option<String>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(token) = token {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer)
            .unwrap_or("");
        if !same(given.as_bytes(), token.as_bytes()) {
            let mut r = error(
                StatusCode::UNAUTHORIZED,
                "missing or wrong bearer token (Authorization: Bearer <rest.auth-token>)",
            )
            .into_response();
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
            return r;
        }
    }
    next.run(request).await
}

/// The token of an `Authorization: Bearer <token>` value; the scheme's
/// name in any case, as HTTP's authentication schemes are (RFC 9110
/// 11.1): `bearer <token>` from a client that writes it so is the same.
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("Bearer")
        .then(|| token.trim_start_matches(' '))
}

/// Equal bytes, compared in time that depends only on the lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn not_found() -> Reply {
    error(
        StatusCode::NOT_FOUND,
        "Not found: no such path (see docs/REST.md)",
    )
}

/// Flink's rescaling (`PATCH /jobs/:id/rescaling`, and the adaptive
/// scheduler's `/jobs/:id/resource-requirements`): not served, with the
/// way weir rescales a job named instead of a bare 404.
async fn rescaling() -> Reply {
    error(
        StatusCode::NOT_FOUND,
        "Rescaling a running job is not supported: stop it with a savepoint \
         (POST /jobs/:jobid/stop, weir stop) and restore the savepoint at the new parallelism \
         (--restore <savepoint> --workers <n>)",
    )
}

async fn method_not_allowed() -> Reply {
    error(
        StatusCode::METHOD_NOT_ALLOWED,
        "Method not allowed on this path (see docs/REST.md)",
    )
}

/// The view of job `id`, or 404.
fn view_of(app: &App, id: &str) -> Result<JobView, Reply> {
    match app.handle.view() {
        // Flink reads a job id's hex digits in either case.
        Some(v) if v.job_id.eq_ignore_ascii_case(id) => Ok(v),
        _ => Err(error(
            StatusCode::NOT_FOUND,
            &format!("Job {} not found", printable(id)),
        )),
    }
}

/// `text` cut short and stripped of control characters, for messages.
fn printable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(64).collect()
}

fn vertex_of<'a>(view: &'a JobView, vid: &str) -> Result<&'a VertexView, Reply> {
    let found = view
        .vertices
        .iter()
        .find(|v| v.id.eq_ignore_ascii_case(vid));
    found.ok_or_else(|| {
        error(
            StatusCode::NOT_FOUND,
            &format!("Vertex {} not found in job {}", printable(vid), view.job_id),
        )
    })
}

fn reply(r: Result<Value, Reply>) -> Reply {
    match r {
        Ok(v) => ok(v),
        Err(e) => e,
    }
}

async fn config() -> Reply {
    ok(serde_json::json!({
        "refresh-interval": 3000,
        "timezone-name": "UTC",
        "timezone-offset": 0,
        "flink-version": format!("weir {}", env!("CARGO_PKG_VERSION")),
        "flink-revision": "",
        "features": { "web-submit": false, "web-cancel": true, "web-rescale": false, "web-history": false },
    }))
}

async fn overview(State(app): State<App>) -> Reply {
    ok(shapes::overview(app.handle.view().as_ref()))
}

async fn jobs(State(app): State<App>) -> Reply {
    ok(shapes::jobs(app.handle.view().as_ref()))
}

async fn jobs_overview(State(app): State<App>) -> Reply {
    ok(shapes::jobs_overview(app.handle.view().as_ref()))
}

async fn job(State(app): State<App>, Path(id): Path<String>) -> Reply {
    reply(view_of(&app, &id).map(|v| shapes::job_details(&v)))
}

async fn job_config(State(app): State<App>, Path(id): Path<String>) -> Reply {
    reply(view_of(&app, &id).map(|v| shapes::job_config(&v)))
}

async fn exceptions(State(app): State<App>, Path(id): Path<String>) -> Reply {
    reply(view_of(&app, &id).map(|v| shapes::exceptions(&v)))
}

async fn checkpoints(State(app): State<App>, Path(id): Path<String>) -> Reply {
    reply(view_of(&app, &id).map(|v| shapes::checkpoints(&v)))
}

async fn checkpoint_config(State(app): State<App>, Path(id): Path<String>) -> Reply {
    reply(view_of(&app, &id).map(|v| shapes::checkpoint_config(&v)))
}

/// A checkpoint id of the path, or 400.
fn checkpoint_id(text: &str) -> Result<u64, Reply> {
    text.parse().map_err(|_| {
        error(
            StatusCode::BAD_REQUEST,
            &format!("Bad checkpoint id {}: not a number", printable(text)),
        )
    })
}

/// Checkpoint `cid`, in progress or in the job's history, or a 404
/// saying which ids there are.
fn checkpoint_of(view: &JobView, cid: u64) -> Result<&CheckpointRecord, Reply> {
    view.checkpoints_pending
        .iter()
        .chain(&view.checkpoints)
        .find(|r| r.id == cid)
        .ok_or_else(|| {
            let newest = view
                .checkpoints_pending
                .iter()
                .chain(&view.checkpoints)
                .map(|r| r.id)
                .max();
            let why = match newest {
                Some(n) if cid > n => format!("not triggered yet (the newest is {n})"),
                Some(_) => "not kept (the newest 100 that ended are)".to_owned(),
                None => "none was triggered yet".to_owned(),
            };
            error(
                StatusCode::NOT_FOUND,
                &format!("Checkpoint {cid} not found: {why}"),
            )
        })
}

async fn checkpoint_details(
    State(app): State<App>,
    Path((id, cid)): Path<(String, String)>,
) -> Reply {
    reply((|| {
        let view = view_of(&app, &id)?;
        let cid = checkpoint_id(&cid)?;
        let r = checkpoint_of(&view, cid)?;
        Ok(shapes::checkpoint(r, &view))
    })())
}

async fn checkpoint_subtasks(
    State(app): State<App>,
    Path((id, cid, vid)): Path<(String, String, String)>,
) -> Reply {
    reply((|| {
        let view = view_of(&app, &id)?;
        let cid = checkpoint_id(&cid)?;
        let v = vertex_of(&view, &vid)?;
        let r = checkpoint_of(&view, cid)?;
        Ok(shapes::checkpoint_subtasks(r, v))
    })())
}

async fn vertex(State(app): State<App>, Path((id, vid)): Path<(String, String)>) -> Reply {
    reply((|| {
        let view = view_of(&app, &id)?;
        let v = vertex_of(&view, &vid)?;
        Ok(shapes::vertex_details(&view, v))
    })())
}

async fn backpressure(State(app): State<App>, Path((id, vid)): Path<(String, String)>) -> Reply {
    reply((|| {
        let view = view_of(&app, &id)?;
        let v = vertex_of(&view, &vid)?;
        Ok(shapes::backpressure(&view, v))
    })())
}

async fn watermarks(State(app): State<App>, Path((id, vid)): Path<(String, String)>) -> Reply {
    reply((|| {
        let view = view_of(&app, &id)?;
        let v = vertex_of(&view, &vid)?;
        Ok(shapes::watermarks(v))
    })())
}

/// A JSON object body (empty: `{}`), or 400.
fn body_object(body: &Bytes) -> Result<serde_json::Map<String, Value>, Reply> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(serde_json::Map::new());
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(_)) => {}
        Ok(_) => {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "Bad request body: expected a JSON object",
            ))
        }
        Err(e) => {
            return Err(error(
                StatusCode::BAD_REQUEST,
                &format!("Bad request body: not JSON: {e}"),
            ))
        }
    }
    serde_json::from_slice::<UniqueFields>(body)
        .map(|u| u.0)
        .map_err(|e| error(StatusCode::BAD_REQUEST, &format!("Bad request body: {e}")))
}

/// A JSON object whose fields each occur once: `{"target-directory": A,
/// "target-directory": B}` is refused (as Flink's strict parser refuses
/// it) rather than read as whichever came last.
struct UniqueFields(serde_json::Map<String, Value>);

impl<'de> serde::Deserialize<'de> for UniqueFields {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = UniqueFields;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> Result<UniqueFields, M::Error> {
                let mut fields = serde_json::Map::new();
                while let Some((name, value)) = map.next_entry::<String, Value>()? {
                    if fields.contains_key(&name) {
                        return Err(serde::de::Error::custom(format!(
                            "field {} given twice",
                            printable(&name)
                        )));
                    }
                    fields.insert(name, value);
                }
                Ok(UniqueFields(fields))
            }
        }
        d.deserialize_map(Fields)
    }
}

/// An optional string field of a body, or 400.
fn string_field(
    body: &serde_json::Map<String, Value>,
    name: &str,
) -> Result<Option<String>, Reply> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
        Some(_) => Err(error(
            StatusCode::BAD_REQUEST,
            &format!("Bad request body: {name} must be a non-empty string"),
        )),
    }
}

/// A bool field of a body, or 400.
fn bool_field(body: &serde_json::Map<String, Value>, name: &str) -> Result<bool, Reply> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(error(
            StatusCode::BAD_REQUEST,
            &format!("Bad request body: {name} must be true or false"),
        )),
    }
}

/// Refuses a body field the request does not take, as Flink's strict
/// parsing does: a misspelt one (`targetDirectory` for a savepoint's
/// `target-directory`) would otherwise be ignored, and the savepoint
/// written where nobody asked.
fn known_fields(body: &serde_json::Map<String, Value>, known: &[&str]) -> Result<(), Reply> {
    match body.keys().find(|k| !known.contains(&k.as_str())) {
        None => Ok(()),
        Some(unknown) => Err(error(
            StatusCode::BAD_REQUEST,
            &format!(
                "Bad request body: unknown field {}: this request takes {}",
                printable(unknown),
                known.join(", ")
            ),
        )),
    }
}

/// Flink's `formatType`: weir's savepoints are all `CANONICAL`, so any
/// other is 400 rather than a savepoint of another format than asked.
fn canonical_format(body: &serde_json::Map<String, Value>) -> Result<(), Reply> {
    match string_field(body, "formatType")? {
        None => Ok(()),
        Some(f) if f.eq_ignore_ascii_case("CANONICAL") => Ok(()),
        Some(f) => Err(error(
            StatusCode::BAD_REQUEST,
            &format!(
                "formatType {} is not supported: weir's savepoints are CANONICAL",
                printable(&f)
            ),
        )),
    }
}

/// Flink's `triggerId`: the id to give the operation (32 hex digits), so
/// that a client may send its request again without a second one.
fn trigger_id(body: &serde_json::Map<String, Value>) -> Result<Option<String>, Reply> {
    match string_field(body, "triggerId")? {
        None => Ok(None),
        Some(t) if t.len() == 32 && t.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Ok(Some(t.to_ascii_lowercase()))
        }
        Some(t) => Err(error(
            StatusCode::BAD_REQUEST,
            &format!(
                "Bad request body: triggerId {} is not 32 hex digits",
                printable(&t)
            ),
        )),
    }
}

/// A target directory given as body field `field`: a path or a `file://`
/// URI.
fn target_dir(field: &str, text: Option<String>) -> Result<Option<PathBuf>, Reply> {
    let Some(t) = text else { return Ok(None) };
    let path = t.strip_prefix("file://").unwrap_or(&t);
    if path.is_empty() || path.contains('\0') {
        return Err(error(
            StatusCode::BAD_REQUEST,
            &format!("Bad request body: {field} is not a local path"),
        ));
    }
    if t.contains("://") && !t.starts_with("file://") {
        return Err(error(
            StatusCode::BAD_REQUEST,
            &format!("Bad request body: {field}: only local paths and file:// URIs are supported"),
        ));
    }
    Ok(Some(PathBuf::from(path)))
}

fn accepted(trigger: String) -> Reply {
    (
        StatusCode::ACCEPTED,
        Json(serde_json::json!({ "request-id": trigger })),
    )
}

fn conflict(why: String) -> Reply {
    error(StatusCode::CONFLICT, &why)
}

/// `POST /jobs/:id/savepoints` `{"target-directory": D, "cancel-job": false}`.
async fn trigger_savepoint(State(app): State<App>, Path(id): Path<String>, body: Bytes) -> Reply {
    reply((|| {
        view_of(&app, &id)?;
        let body = body_object(&body)?;
        known_fields(
            &body,
            &["target-directory", "cancel-job", "formatType", "triggerId"],
        )?;
        canonical_format(&body)?;
        if bool_field(&body, "cancel-job")? {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "cancel-job is not supported: stop the job with POST /jobs/:id/stop",
            ));
        }
        let dir = target_dir("target-directory", string_field(&body, "target-directory")?)?;
        let trigger = app
            .handle
            .trigger_savepoint(dir, trigger_id(&body)?.as_deref())
            .map_err(conflict)?;
        Err(accepted(trigger))
    })())
}

/// `POST /jobs/:id/stop` `{"targetDirectory": D, "drain": false}`: stop
/// with a savepoint, into a directory of `D` (default
/// `state.savepoints.dir`).
async fn stop(State(app): State<App>, Path(id): Path<String>, body: Bytes) -> Reply {
    reply((|| {
        view_of(&app, &id)?;
        let body = body_object(&body)?;
        known_fields(
            &body,
            &["targetDirectory", "drain", "formatType", "triggerId"],
        )?;
        canonical_format(&body)?;
        if bool_field(&body, "drain")? {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "drain is not supported: a stop keeps the job's timers and windows in the savepoint",
            ));
        }
        let dir = target_dir("targetDirectory", string_field(&body, "targetDirectory")?)?;
        let trigger = app
            .handle
            .stop_with_savepoint(dir, trigger_id(&body)?.as_deref())
            .map_err(conflict)?;
        Err(accepted(trigger))
    })())
}

/// `GET /jobs/:id/savepoints/:triggerid`.
async fn savepoint_status(
    State(app): State<App>,
    Path((id, trigger)): Path<(String, String)>,
) -> Reply {
    reply((|| {
        view_of(&app, &id)?;
        let status = app
            .handle
            .savepoint_status(&trigger.to_ascii_lowercase())
            .ok_or_else(|| {
                error(
                    StatusCode::NOT_FOUND,
                    &format!("Savepoint trigger {} not found", printable(&trigger)),
                )
            })?;
        Ok(shapes::savepoint_status(&status))
    })())
}

/// The `get` and `agg` parameters of a metrics query (`%2C` read as a
/// comma), or 400 for any other parameter.
struct MetricsQuery {
    get: Option<String>,
    agg: Vec<String>,
}

impl MetricsQuery {
    fn parse(query: Option<&str>, aggregating: bool) -> Result<Self, Reply> {
        let mut q = MetricsQuery {
            get: None,
            agg: Vec::new(),
        };
        for kv in query.unwrap_or("").split('&') {
            let decoded = |v: &str| v.replace("%2C", ",").replace("%2c", ",");
            match kv.split_once('=') {
                Some(("get", v)) => q.get = Some(decoded(v)),
                Some(("agg", v)) => {
                    for a in decoded(v).split(',').filter(|a| !a.is_empty()) {
                        if !["min", "max", "avg", "sum"].contains(&a) {
                            return Err(error(
                                StatusCode::BAD_REQUEST,
                                &format!(
                                    "Bad aggregation {}: one of min, max, avg, sum",
                                    printable(a)
                                ),
                            ));
                        }
                        // Only aggregated subtask metrics aggregate; Flink
                        // ignores `agg` elsewhere.
                        if aggregating {
                            q.agg.push(a.to_owned());
                        }
                    }
                }
                None if kv.is_empty() => {}
                _ => {
                    return Err(error(
                        StatusCode::BAD_REQUEST,
                        &format!(
                            "Bad query parameter {}: only get and agg are supported",
                            printable(kv)
                        ),
                    ))
                }
            }
        }
        Ok(q)
    }

    /// The metric names asked for, if any.
    fn wanted(&self) -> Option<Vec<&str>> {
        self.get.as_deref().map(|g| g.split(',').collect())
    }
}

/// `GET /jobs/:id/metrics[?get=a,b]` (Flink's job metrics).
async fn job_metrics(
    State(app): State<App>,
    Path(id): Path<String>,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Reply {
    reply((|| {
        let view = view_of(&app, &id)?;
        let q = MetricsQuery::parse(query.as_deref(), false)?;
        let metrics = shapes::job_metrics(&view);
        Ok(shapes::metrics_reply(&metrics, q.wanted().as_deref()))
    })())
}

/// `GET /jobs/:id/vertices/:vid/metrics[?get=0.numRecordsIn,..]`.
async fn vertex_metrics(
    State(app): State<App>,
    Path((id, vid)): Path<(String, String)>,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Reply {
    reply((|| {
        let view = view_of(&app, &id)?;
        let v = vertex_of(&view, &vid)?;
        let q = MetricsQuery::parse(query.as_deref(), false)?;
        let metrics = shapes::vertex_metrics(v);
        Ok(shapes::metrics_reply(&metrics, q.wanted().as_deref()))
    })())
}

/// `GET /jobs/:id/vertices/:vid/subtasks/metrics[?get=..&agg=..]`.
async fn aggregated_subtask_metrics(
    State(app): State<App>,
    Path((id, vid)): Path<(String, String)>,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Reply {
    reply((|| {
        let view = view_of(&app, &id)?;
        let v = vertex_of(&view, &vid)?;
        let q = MetricsQuery::parse(query.as_deref(), true)?;
        let aggs: Vec<&str> = q.agg.iter().map(String::as_str).collect();
        Ok(shapes::aggregated_subtask_metrics(
            v,
            q.wanted().as_deref(),
            &aggs,
        ))
    })())
}

/// `PATCH /jobs/:id?mode=cancel`.
async fn patch_job(
    State(app): State<App>,
    Path(id): Path<String>,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Reply {
    reply((|| {
        view_of(&app, &id)?;
        let mode = query
            .as_deref()
            .unwrap_or("")
            .split('&')
            .find_map(|kv| kv.strip_prefix("mode="));
        match mode {
            None => {}
            Some(m) if m.eq_ignore_ascii_case("cancel") => {}
            Some(m) => {
                return Err(error(
                    StatusCode::BAD_REQUEST,
                    &format!("Bad mode {}: only mode=cancel is supported", printable(m)),
                ))
            }
        }
        app.handle.cancel().map_err(conflict)?;
        Err((StatusCode::ACCEPTED, Json(serde_json::json!({}))))
    })())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"0123456789abcdef", b"0123456789abcdef"));
        assert!(!same(b"0123456789abcdef", b"0123456789abcdeF"));
        assert!(!same(b"0123456789abcdef", b"0123456789abcde"));
        assert!(!same(b"", b"x"));
    }

    #[test]
    fn a_body_field_given_twice_is_refused() {
        let body = |text: &str| body_object(&Bytes::from(text.to_owned()));
        let (status, Json(reply)) =
            body(r#"{"target-directory": "/a", "target-directory": "/b"}"#).expect_err("refused");
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(
            reply["errors"][0]
                .as_str()
                .is_some_and(|e| e.contains("field target-directory given twice")),
            "{reply}"
        );
        let once = body(r#"{"a": {"x": 1, "y": 2}, "b": null}"#).ok().unwrap();
        assert_eq!(once.len(), 2);
        assert!(body("  ").ok().unwrap().is_empty());
        assert!(body("[1]").is_err());
    }

    #[test]
    fn the_bearer_scheme_is_read_in_any_case() {
        for value in ["Bearer t0k", "bearer t0k", "BEARER  t0k"] {
            assert_eq!(bearer(value), Some("t0k"), "{value}");
        }
        for value in ["Basic t0k", "Bearert0k", "t0k", ""] {
            assert_eq!(bearer(value), None, "{value}");
        }
    }

    #[test]
    fn target_directories_are_local_paths() {
        assert_eq!(
            target_dir("target-directory", Some("file:///tmp/sp".into()))
                .ok()
                .flatten(),
            Some(PathBuf::from("/tmp/sp"))
        );
        assert_eq!(
            target_dir("target-directory", Some("/tmp/sp".into()))
                .ok()
                .flatten(),
            Some(PathBuf::from("/tmp/sp"))
        );
        assert!(target_dir("target-directory", Some("s3://bucket/sp".into())).is_err());
        assert!(target_dir("target-directory", Some("file://".into())).is_err());
        assert!(target_dir("target-directory", None).is_ok_and(|d| d.is_none()));
    }
}
