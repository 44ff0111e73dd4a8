//! The §21.8 HTTP routes of `lid serve` (axum): one handler per route, each
//! authenticating the caller, checking scope (§21.4.5), then calling [`Service`] on the
//! blocking pool (engine calls and SQLite are synchronous).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::apierror::ApiError;
use crate::auth::{self, Principal, ReadAccess};
use crate::service::{Actor, ContextQuery, Service};

/// The OpenAPI description of every route.
pub static OPENAPI: &str = include_str!("openapi.json");

/// Request bodies larger than this are refused (413).
pub const BODY_LIMIT: usize = 8 << 20;

type Shared = Arc<Service>;

/// How long a request's body may take to arrive, once its headers have (`lid serve
/// --body-timeout-secs`): a client that announces a body and then stalls is answered 408
/// `request_timeout` and its connection closed, instead of holding a worker forever.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(60);

pub fn router(svc: Shared, body_timeout: Duration, stop: tokio_util::sync::CancellationToken) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/openapi.json", get(openapi))
        .route("/v1/agents/{id}/boot-stub", get(boot_stub))
        .route("/v1/agents/{id}/instruction-manifest", get(get_manifest).put(put_manifest))
        .route("/v1/agents/{id}/instruction-manifest/coverage", get(coverage))
        .route("/v1/agents/{id}/instruction-manifest/cosignatures", post(cosign))
        .route("/v1/agents/{id}/recall-instruction", post(recall))
        .route("/v1/agents/{id}/heartbeat", post(heartbeat))
        .route("/v1/agents/{id}/boot-context", get(boot_context))
        .route("/v1/agents/{id}/handoff", post(handoff))
        .route("/v1/agents/{id}/units/{name}", put(put_unit))
        .route("/v1/agents/{id}/knowledge", get(list_knowledge))
        .route("/v1/agents/{id}/knowledge/{pack}", put(put_knowledge))
        .route("/v1/agents/{id}/federated-facts", post(post_federated).get(list_federated))
        .route("/v1/agents/{id}/facts/promote", post(promote_fact))
        .route("/v1/agents/{id}/service-events", get(service_events))
        .route("/v1/instruction/audit", post(submit_audit))
        .route("/v1/keys", post(create_key).get(list_keys))
        .route("/v1/keys/{key_id}", delete(revoke_key))
        .route("/v1/org-manifest", put(put_org))
        // MCP over streamable HTTP (issue 5): the same service, in-process.
        .merge(crate::mcp::router(svc.clone(), stop))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn_with_state(body_timeout, body_deadline))
        .layer(axum::middleware::from_fn(json_errors))
        .with_state(svc)
}

/// Read the request's body (at most [`BODY_LIMIT`] bytes) within `timeout`, then hand the
/// request on with it: every route reads its whole body anyway.
async fn body_deadline(State(timeout): State<Duration>, req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let (parts, body) = req.into_parts();
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, BODY_LIMIT)).await {
        Ok(Ok(bytes)) => next.run(axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes))).await,
        Ok(Err(e)) if std::error::Error::source(&e).is_some_and(|s| s.is::<http_body_util::LengthLimitError>()) => ApiError::from(lid_shared::Refusal::too_large(BODY_LIMIT)).into_response(),
        Ok(Err(e)) => ApiError::new(400, "invalid_request", format!("the request body could not be read ({e}); nothing was applied")).into_response(),
        Err(_) => {
            let mut res = ApiError::new(408, "request_timeout", format!("the request body did not arrive within {} s of its headers; nothing was applied: send the whole body (its `Content-Length` bytes) at once", timeout.as_secs_f64())).into_response();
            res.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            res
        }
    }
}

/// Every error answers with lid's JSON error body (README "Error codes"): the refusals
/// axum and the MCP transport write themselves (a wrong method, a body over
/// [`BODY_LIMIT`], a query string or path that does not parse, a wrong content type) come
/// as plain text or with no body, and are rewritten here with a code for their status.
async fn json_errors(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let method = req.method().clone();
    let mcp = req.uri().path() == "/mcp";
    let res = next.run(req).await;
    let status = res.status();
    let is_json = res.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return res;
    }
    let (parts, body) = res.into_parts();
    let text = axum::body::to_bytes(body, 4096).await.map(|b| String::from_utf8_lossy(&b).trim().to_string()).unwrap_or_default();
    let (code, message) = match status {
        // (which methods depends on the protocol version the request names: the `Allow`
        // header the transport sent says it)
        StatusCode::METHOD_NOT_ALLOWED if mcp => {
            let allow = parts.headers.get(header::ALLOW).and_then(|v| v.to_str().ok()).filter(|a| !a.is_empty()).unwrap_or("POST, GET, DELETE");
            ("method_not_allowed", format!("/mcp does not take {method} here: it takes {allow} (POST carries the JSON-RPC messages); it is MCP, not a REST route, so it is not in /openapi.json"))
        }
        StatusCode::METHOD_NOT_ALLOWED => ("method_not_allowed", format!("this route does not take {method}; GET /openapi.json lists each route's methods")),
        StatusCode::PAYLOAD_TOO_LARGE => ("request_too_large", lid_shared::Refusal::too_large(BODY_LIMIT).message),
        // the MCP transport answers a message it cannot read with 415; the body is JSON
        // (`mcp::one_message` refused any that is not), so it is the wrong shape
        StatusCode::UNSUPPORTED_MEDIA_TYPE if text.starts_with("fail to deserialize") => {
            let what = text.trim_start_matches("fail to deserialize request body").trim_start_matches(':').trim();
            return ApiError::bad_request("invalid_request", format!("not a JSON-RPC 2.0 message ({what}): send {{\"jsonrpc\": \"2.0\", \"method\": …}} with an `id` for a request")).into_response();
        }
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ("unsupported_media_type", format!("{text}; send `Content-Type: application/json`")),
        StatusCode::NOT_ACCEPTABLE => ("not_acceptable", format!("{text}; accept `application/json` (and `text/event-stream` on /mcp)")),
        s if s.is_server_error() => ("internal_error", format!("the request failed and nothing was applied: {text}")),
        // the MCP transport's answer for a session it does not hold
        StatusCode::NOT_FOUND if mcp => return crate::mcp::session_not_found().into_response(),
        _ if mcp && text.to_ascii_lowercase().contains("session") => ("invalid_request", format!("{text}: the MCP streamable HTTP transport (README \"MCP server\") wants `Mcp-Session-Id` on every request after `initialize`")),
        _ if mcp => ("invalid_request", format!("{}: see README \"MCP server\" for the streamable HTTP transport lid serves", if text.is_empty() { "the request could not be read" } else { &text })),
        _ => ("invalid_request", if text.is_empty() { "the request could not be read".to_string() } else { format!("{text}: check the query string and path against GET /openapi.json") }),
    };
    let mut out = ApiError::new(status.as_u16(), code, message).into_response();
    // keep what the refusal said beyond its body (`Allow` on a 405, the MCP headers)
    for (name, value) in parts.headers.iter().filter(|(n, _)| *n != header::CONTENT_TYPE && *n != header::CONTENT_LENGTH) {
        out.headers_mut().insert(name.clone(), value.clone());
    }
    out
}

/// Authenticate the caller, then run `f` on the blocking pool (engine calls and SQLite
/// are synchronous); a panic there becomes a 500 `internal_error`, never a crash.
async fn as_caller<T: Send + 'static>(svc: Shared, h: &HeaderMap, f: impl FnOnce(&Service, Principal) -> Result<T, ApiError> + Send + 'static) -> Result<T, ApiError> {
    let key = bearer(h);
    tokio::task::spawn_blocking(move || f(&svc, auth::authenticate(&svc.db, key.as_deref())?))
        .await
        .unwrap_or_else(|e| Err(ApiError::new(500, "internal_error", format!("the request handler failed and nothing was applied: {e}"))))
}

/// The `Authorization` header's text: a header that is not visible ASCII is still a key
/// that was sent (and is then refused as invalid, not as missing).
pub fn bearer(h: &HeaderMap) -> Option<String> {
    header_text(h, header::AUTHORIZATION.as_str())
}

/// A request header's text as the worker's Fetch API gives it, so both hosts decide
/// alike: a header sent twice is its values joined by ", " (a key or trigger sent twice
/// is then refused as invalid, never one copy picked), and bytes that are not ASCII
/// still make a value (refused as invalid, not taken as absent).
pub fn header_text(h: &HeaderMap, name: &str) -> Option<String> {
    let mut values = h.get_all(name).iter().map(|v| String::from_utf8_lossy(v.as_bytes()));
    let first = values.next()?.into_owned();
    Some(values.fold(first, |mut all, v| {
        all.push_str(", ");
        all.push_str(&v);
        all
    }))
}

/// The body as one JSON object, each field once ([`lid_shared::json::object`]).
fn json_body(b: &Bytes) -> Result<Value, ApiError> {
    let text = std::str::from_utf8(b).map_err(ApiError::invalid_json)?;
    Ok(lid_shared::json::object(text)?)
}

fn raw_json(s: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], s).into_response()
}

async fn healthz(State(svc): State<Shared>) -> Response {
    Json(json!({"status": "ok", "engine": svc.info})).into_response()
}

async fn openapi() -> Response {
    raw_json(OPENAPI.to_string())
}

async fn not_found() -> ApiError {
    ApiError::new(404, "route_not_found", "no such route; GET /openapi.json lists them")
}

#[derive(Deserialize)]
struct ProfileQuery {
    profile: Option<String>,
}

async fn boot_stub(State(svc): State<Shared>, Path(id): Path<String>, Query(q): Query<ProfileQuery>, h: HeaderMap) -> Result<Response, ApiError> {
    let (body, mv, tokens, sv) = as_caller(svc, &h, move |svc, p| {
        p.require_own_read(&id, "boot stub")?;
        svc.boot_stub(&id, q.profile.as_deref()).map_err(|e| if e.code == "manifest_not_found" { ApiError::new(404, "boot_stub_not_found", format!("no boot stub for agent {id:?}: {}", e.message)) } else { e })
    })
    .await?;
    let headers = lid_shared::boot_stub_headers(&body, mv, tokens, sv);
    let mut r = (StatusCode::OK, body).into_response();
    let hs = r.headers_mut();
    hs.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/markdown; charset=utf-8"));
    for (k, v) in headers {
        if let Ok(v) = HeaderValue::from_str(&v) {
            hs.insert(k, v);
        }
    }
    Ok(r)
}

async fn get_manifest(State(svc): State<Shared>, Path(id): Path<String>, h: HeaderMap) -> Result<Json<Value>, ApiError> {
    as_caller(svc, &h, move |svc, p| {
        p.require_read(&svc.db, &id)?;
        svc.get_manifest(&id, p.is_admin())
    })
    .await
    .map(Json)
}

async fn put_manifest(State(svc): State<Shared>, Path(id): Path<String>, h: HeaderMap, body: Bytes) -> Result<Json<Value>, ApiError> {
    as_caller(svc, &h, move |svc, p| {
        p.require_admin()?;
        svc.publish(&id, &json_body(&body)?, &Actor::from(&p))
    })
    .await
    .map(Json)
}

async fn cosign(State(svc): State<Shared>, Path(id): Path<String>, h: HeaderMap, body: Bytes) -> Result<Response, ApiError> {
    let v = as_caller(svc, &h, move |svc, p| {
        svc.cosign(&id, &json_body(&body)?, &p)
    })
    .await?;
    Ok((StatusCode::CREATED, Json(v)).into_response())
}

async fn coverage(State(svc): State<Shared>, Path(id): Path<String>, h: HeaderMap) -> Result<Json<Value>, ApiError> {
    as_caller(svc, &h, move |svc, p| {
        p.require_own_read(&id, "coverage report")?;
        svc.coverage(&id, p.is_admin())
    })
    .await
    .map(Json)
}

async fn recall(State(svc): State<Shared>, Path(id): Path<String>, h: HeaderMap, body: Bytes) -> Result<Response, ApiError> {
    // Recall is short (well under a millisecond for an agent's manifest) and the hottest
    // route: it runs on the worker thread itself, bounded by the engine's epoch deadline,
    // rather than paying a hand-off to the blocking pool. The key and the agent's head
    // come from memory unless the database changed (see `db::Stamp`); the audit row is
    // group-committed and awaited here, without holding the thread (§21.3.4: it is
    // written before the response returns; if it cannot be, the response still returns).
    let stamp = svc.db.stamp();
    let p = auth::authenticate_at(&svc.db, bearer(&h).as_deref(), stamp)?;
    p.require_read(&svc.db, &id)?;
    let body = std::str::from_utf8(&body).map_err(ApiError::invalid_json)?;
    let (response, audit) = svc.recall_deferred(&id, &p.entity_uri, body, stamp)?;
    Ok(raw_json(match audit.committed().await {
        Ok(()) => response,
        Err(e) => crate::service::with_audit_warning(response, &e),
    }))
}

/// The composed boot context: JSON by default; `?format=markdown` (or `Accept:
/// text/markdown`) for the Markdown rendering of the same bundle.
async fn boot_context(State(svc): State<Shared>, method: axum::http::Method, Path(id): Path<String>, Query(mut q): Query<ContextQuery>, h: HeaderMap) -> Result<Response, ApiError> {
    let markdown = match q.format.as_deref() {
        None => h.get(header::ACCEPT).is_some_and(|v| lid_shared::accepts_markdown(v.as_bytes())),
        Some("json") => false,
        Some("markdown") => true,
        Some(f) => return Err(ApiError::bad_request("invalid_request", format!("unknown format {f:?}: use json or markdown"))),
    };
    q.trigger = header_text(&h, "x-lid-trigger");
    let head = method == axum::http::Method::HEAD;
    q.head = head;
    let v = as_caller(svc, &h, move |svc, p| {
        p.require_boot(&id, q.trigger.is_some())?;
        svc.boot_context(&id, &p.entity_uri, &q)
    })
    .await?;
    let sha = v["bundle"]["bundle_sha256"].as_str().and_then(|s| HeaderValue::from_str(s).ok());
    let mut r = if markdown {
        ([(header::CONTENT_TYPE, "text/markdown; charset=utf-8")], v["markdown"].as_str().unwrap_or_default().to_string()).into_response()
    } else {
        Json(v["bundle"].clone()).into_response()
    };
    if let Some(sha) = sha {
        r.headers_mut().insert("x-bundle-sha256", sha);
    }
    // the task-type preloads' audit record (§21.5.2), in both formats, as the heartbeat's
    if let Some(token) = v["audit_token"].as_str().filter(|t| !head && !t.is_empty()).and_then(|t| HeaderValue::from_str(t).ok()) {
        r.headers_mut().insert("x-audit-token", token);
    }
    Ok(r)
}

async fn handoff(State(svc): State<Shared>, Path(id): Path<String>, h: HeaderMap, body: Bytes) -> Result<Response, ApiError> {
    // the key first, as on every route: a caller without one learns nothing of the body
    let v = as_caller(svc, &h, move |svc, p| svc.handoff(&id, &json_body(&body)?.to_string(), &p)).await?;
    Ok((StatusCode::CREATED, Json(v)).into_response())
}

async fn heartbeat(State(svc): State<Shared>, Path(id): Path<String>, h: HeaderMap, body: Bytes) -> Result<Response, ApiError> {
    let markdown = h.get(header::ACCEPT).is_some_and(|v| lid_shared::accepts_markdown(v.as_bytes()));
    let v = as_caller(svc, &h, move |svc, p| {
        p.require_boot(&id, true)?;
        svc.heartbeat(&id, &p.entity_uri, &json_body(&body)?)
    })
    .await?;
    if markdown {
        // the audit token travels in a header, as the Markdown has no place for it
        let token = HeaderValue::from_str(v["audit_token"].as_str().unwrap_or_default()).unwrap_or(HeaderValue::from_static(""));
        return Ok(([(header::CONTENT_TYPE, HeaderValue::from_static("text/markdown; charset=utf-8")), (header::HeaderName::from_static("x-audit-token"), token)], v["context"].as_str().unwrap_or_default().to_string()).into_response());
    }
    Ok(Json(v).into_response())
}

async fn put_unit(State(svc): State<Shared>, Path((id, name)): Path<(String, String)>, h: HeaderMap, body: Bytes) -> Result<Response, ApiError> {
    let v = as_caller(svc, &h, move |svc, p| {
        auth::check_agent_id(&id)?;
        svc.write_unit(&id, &name, &json_body(&body)?, &p)
    })
    .await?;
    let status = if v["unchanged"].as_bool().unwrap_or(false) { StatusCode::OK } else { StatusCode::CREATED };
    Ok((status, Json(v)).into_response())
}

async fn submit_audit(State(svc): State<Shared>, h: HeaderMap, body: Bytes) -> Result<StatusCode, ApiError> {
    as_caller(svc, &h, move |svc, p| {
        svc.submit_audit(&p, &json_body(&body)?)
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn create_key(State(svc): State<Shared>, h: HeaderMap, body: Bytes) -> Result<Response, ApiError> {
    let v = as_caller(svc, &h, move |svc, p| {
        p.require_admin()?;
        let req: auth::NewKey = serde_json::from_value(json_body(&body)?).map_err(|e| ApiError::bad_request("invalid_request", format!("a key request is {{\"role\", \"agent_id\"?, \"capabilities\"?, \"entity_uri\"?, \"label\"?}}: {e}")))?;
        let (info, secret) = auth::create_key(&svc.db, &req.issued_by(&p)?)?;
        Ok(json!({"key": secret, "info": info}))
    })
    .await?;
    Ok((StatusCode::CREATED, Json(v)).into_response())
}

async fn list_keys(State(svc): State<Shared>, h: HeaderMap) -> Result<Json<Value>, ApiError> {
    as_caller(svc, &h, move |svc, p| {
        p.require_admin()?;
        Ok(json!({"keys": auth::list_keys(&svc.db)?}))
    })
    .await
    .map(Json)
}

async fn revoke_key(State(svc): State<Shared>, Path(key_id): Path<String>, h: HeaderMap) -> Result<StatusCode, ApiError> {
    as_caller(svc, &h, move |svc, p| {
        p.require_admin()?;
        if auth::revoke_key(&svc.db, &key_id)? {
            Ok(StatusCode::NO_CONTENT)
        } else {
            Err(ApiError::new(404, "key_not_found", format!("no live key {key_id:?}")))
        }
    })
    .await
}

async fn put_org(State(svc): State<Shared>, h: HeaderMap, body: Bytes) -> Result<Json<Value>, ApiError> {
    as_caller(svc, &h, move |svc, p| {
        p.require_admin()?;
        let n = auth::load_org_manifest(&svc.db, &json_body(&body)?)?;
        Ok(json!({"supervision_pairs": n}))
    })
    .await
    .map(Json)
}

// ---- the content channel: knowledge packs and quarantine (Spec-13) ----------------------

async fn put_knowledge(State(svc): State<Shared>, Path((id, pack)): Path<(String, String)>, h: HeaderMap, body: Bytes) -> Result<Response, ApiError> {
    let (v, created) = as_caller(svc, &h, move |svc, p| {
        auth::check_agent_id(&id)?;
        svc.upload_knowledge(&id, &pack, &json_body(&body)?, &p)
    })
    .await?;
    Ok((if created { StatusCode::CREATED } else { StatusCode::OK }, Json(v)).into_response())
}

async fn list_knowledge(State(svc): State<Shared>, Path(id): Path<String>, h: HeaderMap) -> Result<Json<Value>, ApiError> {
    as_caller(svc, &h, move |svc, p| {
        p.require_read(&svc.db, &id)?;
        Ok(json!({"agent_id": id, "packs": svc.knowledge_catalog(&id)?}))
    })
    .await
    .map(Json)
}

async fn post_federated(State(svc): State<Shared>, Path(id): Path<String>, h: HeaderMap, body: Bytes) -> Result<Response, ApiError> {
    let v = as_caller(svc, &h, move |svc, p| {
        auth::check_agent_id(&id)?;
        svc.receive_federated(&id, &json_body(&body)?, &p)
    })
    .await?;
    Ok((StatusCode::ACCEPTED, Json(v)).into_response())
}

async fn list_federated(State(svc): State<Shared>, Path(id): Path<String>, h: HeaderMap) -> Result<Json<Value>, ApiError> {
    as_caller(svc, &h, move |svc, p| {
        auth::check_agent_id(&id)?;
        p.require_admin()?;
        svc.federated_facts(&id)
    })
    .await
    .map(Json)
}

async fn promote_fact(State(svc): State<Shared>, Path(id): Path<String>, h: HeaderMap, body: Bytes) -> Result<Response, ApiError> {
    let v = as_caller(svc, &h, move |svc, p| {
        auth::check_agent_id(&id)?;
        svc.promote(&id, &json_body(&body)?, &p)
    })
    .await?;
    Ok((StatusCode::CREATED, Json(v)).into_response())
}

#[derive(Deserialize)]
struct KindQuery {
    kind: Option<String>,
}

async fn service_events(State(svc): State<Shared>, Path(id): Path<String>, Query(q): Query<KindQuery>, h: HeaderMap) -> Result<Json<Value>, ApiError> {
    as_caller(svc, &h, move |svc, p| {
        auth::check_agent_id(&id)?;
        p.require_admin()?;
        svc.service_events(&id, q.kind.as_deref())
    })
    .await
    .map(Json)
}
