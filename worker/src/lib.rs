//! # lid-worker: lid on Cloudflare Workers (workers-rs)
//!
//! The same routes, JSON, status codes and error codes as `lid serve` (§21.8; README
//! "The service"), with `lid-core` compiled for `wasm32-unknown-unknown` and linked in:
//! facts in KV (`FACTS`), the §21.7 tables and lid's in D1 (`DB`, created by
//! `migrations/*.sql`), bootstrap admin keys from the `LID_ADMIN_KEYS` secret, the
//! heartbeat trigger key from `LID_HEARTBEAT_SECRET` (HS256) or `LID_HEARTBEAT_PUBLIC_KEY`
//! (EdDSA, see [`jwt`]), the org key that signs and checks every fact from the
//! `LID_ORG_SIGNING_KEY` secret (§21.4.3, see [`store`]). One handler per route; each
//! authenticates, checks scope (§21.4.5) and calls [`service::Service`].
//!
//! The browser preview (`/preview/`) is static: `wrangler.toml` serves `preview/dist/`
//! as assets, computed in the browser by `lid-preview` (this workspace's `preview/`).

pub mod auth;
pub mod error;
pub mod jwt;
pub mod service;
pub mod store;
pub mod util;

use std::collections::BTreeMap;

use serde_json::{json, Value};
use worker::{event, Context, Env, Headers, Request, Response, RouteContext, Router, ScheduleContext, ScheduledEvent};

use crate::auth::{Principal, ReadAccess};
use crate::error::{ApiError, ApiResult};
use crate::service::Service;
use crate::store::Store;

/// The OpenAPI description: the very document `lid serve` serves.
pub static OPENAPI: &str = include_str!("../../host/src/openapi.json");

/// Request bodies larger than this are refused (413), as in `lid serve`.
pub const BODY_LIMIT: usize = 8 << 20;

fn service(env: &Env) -> ApiResult<Service> {
    let text = |name: &str| env.secret(name).map(|s| s.to_string()).or_else(|_| env.var(name).map(|v| v.to_string())).ok().filter(|s| !s.trim().is_empty());
    let org = match text("LID_ORG_SIGNING_KEY") {
        Some(t) => lid_shared::attest::OrgKey::parse(&t).map_err(|e| format!("LID_ORG_SIGNING_KEY is not an org key ({e})")),
        None => Err("the worker has no org key (LID_ORG_SIGNING_KEY is not set)".to_string()),
    };
    // During a rotation: the key before LID_ORG_SIGNING_KEY, whose facts are re-signed.
    let (org, previous) = match text("LID_ORG_SIGNING_KEY_PREVIOUS").map(|t| lid_shared::attest::OrgKey::parse(&t)) {
        None => (org, None),
        Some(Ok(p)) => (org, Some(p)),
        Some(Err(e)) => (Err(format!("LID_ORG_SIGNING_KEY_PREVIOUS is not an org key ({e})")), None),
    };
    let store = Store { db: env.d1("DB").map_err(ApiError::storage)?, kv: env.kv("FACTS").map_err(ApiError::storage)?, org, previous };
    Ok(Service {
        store,
        env_keys: text("LID_ADMIN_KEYS").map(|s| auth::parse_env_keys(&s)).unwrap_or_default(),
        heartbeat_secret: text("LID_HEARTBEAT_SECRET"),
        heartbeat_public_key: text("LID_HEARTBEAT_PUBLIC_KEY"),
        wake_reasons: text("LID_WAKE_REASONS").map(|s| s.split(',').map(|w| w.trim().to_string()).filter(|w| !w.is_empty()).collect()),
    })
}

fn reply(r: ApiResult<Response>) -> worker::Result<Response> {
    match r {
        Ok(r) => Ok(r),
        Err(e) => e.into_response(),
    }
}

fn json_response(v: &Value, status: u16) -> ApiResult<Response> {
    Ok(Response::from_json(v).map_err(ApiError::storage)?.with_status(status))
}

fn raw_json(s: String) -> ApiResult<Response> {
    let h = Headers::new();
    h.set("content-type", "application/json").map_err(ApiError::storage)?;
    Ok(Response::ok(s).map_err(ApiError::storage)?.with_headers(h))
}

fn markdown(s: String, extra: &[(&str, String)]) -> ApiResult<Response> {
    let h = Headers::new();
    h.set("content-type", "text/markdown; charset=utf-8").map_err(ApiError::storage)?;
    for (k, v) in extra {
        h.set(k, v).map_err(ApiError::storage)?;
    }
    Ok(Response::ok(s).map_err(ApiError::storage)?.with_headers(h))
}

/// A path parameter, percent-decoded as `lid serve`'s router decodes it (RFC 3986 §2.1:
/// `release%2Dengineer` is `release-engineer`). Not UTF-8 once decoded: refused, as there.
fn param(ctx: &RouteContext<Head>, name: &str) -> ApiResult<String> {
    let raw = ctx.param(name).map(String::as_str).unwrap_or_default();
    percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| ApiError::bad_request("invalid_request", format!("Invalid URL: Invalid UTF-8 in `{name}`: check the query string and path against GET /openapi.json")))
}

/// The query parameters a route reads (`names`), each at most once: a repeated one is
/// refused, as `lid serve`'s query extractor refuses it, instead of one of its values
/// being picked in silence. Parameters the route does not read are ignored (as there).
fn query(req: &Request, names: &[&str]) -> ApiResult<BTreeMap<String, String>> {
    let url = req.url().map_err(|e| ApiError::bad_request("invalid_request", e.to_string()))?;
    let mut q = BTreeMap::new();
    for (k, v) in url.query_pairs().filter(|(k, _)| names.contains(&k.as_ref())) {
        if q.insert(k.to_string(), v.into_owned()).is_some() {
            return Err(ApiError::bad_request("invalid_request", format!("Failed to deserialize query string: duplicate field `{k}`: check the query string and path against GET /openapi.json")));
        }
    }
    Ok(q)
}

/// Authenticate the caller.
async fn caller(svc: &Service, req: &Request) -> ApiResult<Principal> {
    let h = req.headers().get("authorization").ok().flatten();
    auth::authenticate(&svc.store, &svc.env_keys, h.as_deref()).await
}

/// What a route under `/v1/agents/:id` starts from: the service, the agent id in the
/// path, and the authenticated caller.
async fn agent_route(req: &Request, ctx: &RouteContext<Head>) -> ApiResult<(Service, String, Principal)> {
    let svc = service(&ctx.env)?;
    // the path is read before the key, as `lid serve`'s path extractor runs first
    let id = param(ctx, "id")?;
    let p = caller(&svc, req).await?;
    Ok((svc, id, p))
}

/// The body as text (invalid UTF-8 or over the limit refused).
async fn body_text(req: &mut Request) -> ApiResult<String> {
    let b = req.bytes().await.map_err(ApiError::invalid_json)?;
    if b.len() > BODY_LIMIT {
        return Err(lid_shared::Refusal::too_large(BODY_LIMIT).into());
    }
    String::from_utf8(b).map_err(ApiError::invalid_json)
}

/// The body as one JSON object, each field once ([`lid_shared::json::object`]).
async fn json_body(req: &mut Request) -> ApiResult<Value> {
    Ok(lid_shared::json::object(&body_text(req).await?)?)
}

async fn healthz(_: Request, _: RouteContext<Head>) -> worker::Result<Response> {
    // The engine's lazily built state (the cl100k table, laid out from its compact form in
    // this build) is ready when the worker says it is: `entry.mjs` sends this at start-up.
    // Once per isolate, so later health checks do no engine work.
    static WARM: std::sync::Once = std::sync::Once::new();
    WARM.call_once(lid_core::api::warm);
    Response::from_json(&json!({"status": "ok", "engine": service::info()}))
}

async fn openapi(_: Request, _: RouteContext<Head>) -> worker::Result<Response> {
    reply(raw_json(OPENAPI.to_string()))
}

async fn not_found(_: Request, _: RouteContext<Head>) -> worker::Result<Response> {
    ApiError::new(404, "route_not_found", "no such route; GET /openapi.json lists them").into_response()
}

/// 405 `method_not_allowed` with `Allow`, as `lid serve` answers a route asked with a
/// method it does not take (the router's own 405 is plain text).
fn method_not_allowed(method: &str, path: &str) -> worker::Result<Response> {
    let res = ApiError::new(405, "method_not_allowed", format!("this route does not take {method}; GET /openapi.json lists each route's methods")).into_response()?;
    let h = res.headers().clone();
    h.set("allow", &allowed_methods(path).join(","))?;
    Ok(res.with_headers(h))
}

/// The methods the OpenAPI description gives `path` (its `{param}` segments match any
/// one segment), upper-case and sorted.
fn allowed_methods(path: &str) -> Vec<String> {
    let Ok(doc) = serde_json::from_str::<Value>(OPENAPI) else { return Vec::new() };
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    let mut out: Vec<String> = Vec::new();
    for (pattern, ops) in doc["paths"].as_object().into_iter().flatten() {
        let p: Vec<&str> = pattern.split('/').collect();
        let fits = p.len() == segments.len() && p.iter().zip(&segments).all(|(a, b)| (a.starts_with('{') && !b.is_empty()) || a == b);
        if fits {
            out.extend(ops.as_object().into_iter().flatten().map(|(m, _)| m.to_ascii_uppercase()).filter(|m| ["GET", "PUT", "POST", "DELETE", "HEAD", "PATCH"].contains(&m.as_str())));
            // every GET route answers HEAD too (see `fetch`)
            if ops.get("get").is_some() {
                out.push("HEAD".into());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

async fn boot_stub(req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        // (the query is read before the key, as `lid serve`'s query extractor runs first)
        let profile = query(&req, &["profile"])?.remove("profile");
        let (svc, id, p) = agent_route(&req, &ctx).await?;
        p.require_own_read(&id, "boot stub")?;
        let (body, mv, tokens, sv) = svc.boot_stub(&id, profile.as_deref()).await.map_err(|e| {
            if e.code == "manifest_not_found" {
                ApiError::new(404, "boot_stub_not_found", format!("no boot stub for agent {id:?}: {}", e.message))
            } else {
                e
            }
        })?;
        let headers = lid_shared::boot_stub_headers(&body, mv, tokens, sv);
        markdown(body, &headers)
    }
    .await)
}

async fn get_manifest(req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let (svc, id, p) = agent_route(&req, &ctx).await?;
        p.require_read(&svc.store, &id).await?;
        json_response(&svc.get_manifest(&id, p.is_admin()).await?, 200)
    }
    .await)
}

async fn put_manifest(mut req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let (svc, id, p) = agent_route(&req, &ctx).await?;
        p.require_admin()?;
        let body = json_body(&mut req).await?;
        json_response(&svc.publish(&id, &body, &p).await?, 200)
    }
    .await)
}

async fn cosign(mut req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let (svc, id, p) = agent_route(&req, &ctx).await?;
        let body = json_body(&mut req).await?;
        json_response(&svc.cosign(&id, &body, &p).await?, 201)
    }
    .await)
}

async fn coverage(req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let (svc, id, p) = agent_route(&req, &ctx).await?;
        p.require_own_read(&id, "coverage report")?;
        json_response(&svc.coverage(&id, p.is_admin()).await?, 200)
    }
    .await)
}

async fn recall(mut req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let svc = service(&ctx.env)?;
        let id = param(&ctx, "id")?;
        // The key lookup and the snapshot head in one D1 round trip (the hot path).
        let h = req.headers().get("authorization").ok().flatten();
        let (p, head) = auth::authenticate_with_head(&svc.store, &svc.env_keys, h.as_deref(), &id).await?;
        p.require_read(&svc.store, &id).await?;
        let body = body_text(&mut req).await?;
        raw_json(svc.recall(&id, &p.entity_uri, &body, head).await?)
    }
    .await)
}

async fn heartbeat(mut req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let svc = service(&ctx.env)?;
        let id = param(&ctx, "id")?;
        let md = req.headers().get("accept").ok().flatten().is_some_and(|a| lid_shared::accepts_markdown(a.as_bytes()));
        let p = caller(&svc, &req).await?;
        p.require_boot(&id, true)?;
        let body = json_body(&mut req).await?;
        let v = svc.heartbeat(&id, &p.entity_uri, &body).await?;
        if md {
            // the audit token travels in a header, as the Markdown has no place for it
            return markdown(v["context"].as_str().unwrap_or_default().to_string(), &[("x-audit-token", v["audit_token"].as_str().unwrap_or_default().to_string())]);
        }
        json_response(&v, 200)
    }
    .await)
}

/// The composed boot context: JSON, or Markdown with `?format=markdown` / `Accept:
/// text/markdown`; the wake reason only from a signed `X-Lid-Trigger` (S1).
async fn boot_context(req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let svc = service(&ctx.env)?;
        let id = param(&ctx, "id")?;
        let q = query(&req, &["profile", "budget", "format", "query"])?;
        let md = match q.get("format").map(String::as_str) {
            None => req.headers().get("accept").ok().flatten().is_some_and(|a| lid_shared::accepts_markdown(a.as_bytes())),
            Some("json") => false,
            Some("markdown") => true,
            Some(f) => return Err(ApiError::bad_request("invalid_request", format!("unknown format {f:?}: use json or markdown"))),
        };
        let trigger = req.headers().get("x-lid-trigger").ok().flatten();
        let p = caller(&svc, &req).await?;
        p.require_boot(&id, trigger.is_some())?;
        let head = ctx.data.0;
        let bq = service::BootQuery {
            profile: q.get("profile").map(String::as_str),
            budget: q.get("budget").map(String::as_str),
            query: q.get("query").map(String::as_str),
            trigger: trigger.as_deref(),
            record: !head,
        };
        let v = svc.boot_context(&id, &p.entity_uri, &bq).await?;
        let sha = v["bundle"]["bundle_sha256"].as_str().unwrap_or_default().to_string();
        // the task-type preloads' audit record (§21.5.2), in both formats, as the heartbeat's
        let mut headers = vec![("x-bundle-sha256", sha)];
        if let Some(token) = v["audit_token"].as_str().filter(|t| !head && !t.is_empty()) {
            headers.push(("x-audit-token", token.to_string()));
        }
        if md {
            return markdown(v["markdown"].as_str().unwrap_or_default().to_string(), &headers);
        }
        let mut r = json_response(&v["bundle"], 200)?;
        for (name, value) in &headers {
            r.headers_mut().set(name, value).map_err(ApiError::storage)?;
        }
        Ok(r)
    }
    .await)
}

async fn handoff(mut req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let (svc, id, p) = agent_route(&req, &ctx).await?;
        let body = json_body(&mut req).await?.to_string();
        json_response(&svc.handoff(&id, &body, &p).await?, 201)
    }
    .await)
}

async fn put_unit(mut req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let svc = service(&ctx.env)?;
        let (id, name) = (param(&ctx, "id")?, param(&ctx, "name")?);
        let p = caller(&svc, &req).await?;
        auth::check_agent_id(&id)?;
        let body = json_body(&mut req).await?;
        let v = svc.write_unit(&id, &name, &body, &p).await?;
        let status = if v["unchanged"].as_bool().unwrap_or(false) { 200 } else { 201 };
        json_response(&v, status)
    }
    .await)
}

async fn submit_audit(mut req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let svc = service(&ctx.env)?;
        let p = caller(&svc, &req).await?;
        let body = json_body(&mut req).await?;
        svc.submit_audit(&p, &body).await?;
        Ok(Response::empty().map_err(ApiError::storage)?.with_status(204))
    }
    .await)
}

async fn create_key(mut req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let svc = service(&ctx.env)?;
        let p = caller(&svc, &req).await?;
        p.require_admin()?;
        let req: auth::NewKey = serde_json::from_value(json_body(&mut req).await?).map_err(|e| ApiError::bad_request("invalid_request", format!("a key request is {{\"role\", \"agent_id\"?, \"capabilities\"?, \"entity_uri\"?, \"label\"?}}: {e}")))?;
        let (info, secret) = auth::create_key(&svc.store, &req.issued_by(&p)?).await?;
        json_response(&json!({"key": secret, "info": info}), 201)
    }
    .await)
}

async fn list_keys(req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let svc = service(&ctx.env)?;
        let p = caller(&svc, &req).await?;
        p.require_admin()?;
        json_response(&json!({"keys": auth::list_keys(&svc.store).await?}), 200)
    }
    .await)
}

async fn revoke_key(req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let svc = service(&ctx.env)?;
        let key_id = param(&ctx, "key_id")?;
        let p = caller(&svc, &req).await?;
        p.require_admin()?;
        if auth::revoke_key(&svc.store, &key_id).await? {
            Ok(Response::empty().map_err(ApiError::storage)?.with_status(204))
        } else {
            Err(ApiError::new(404, "key_not_found", format!("no live key {key_id:?}")))
        }
    }
    .await)
}

async fn put_org(mut req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let svc = service(&ctx.env)?;
        let p = caller(&svc, &req).await?;
        p.require_admin()?;
        let n = auth::load_org_manifest(&svc.store, &json_body(&mut req).await?).await?;
        json_response(&json!({"supervision_pairs": n}), 200)
    }
    .await)
}

// ---- the content channel: knowledge packs and quarantine (Spec-13) ----------------------

async fn put_knowledge(mut req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let svc = service(&ctx.env)?;
        let (id, pack) = (param(&ctx, "id")?, param(&ctx, "pack")?);
        let p = caller(&svc, &req).await?;
        auth::check_agent_id(&id)?;
        let body = json_body(&mut req).await?;
        let (v, created) = svc.upload_knowledge(&id, &pack, &body, &p).await?;
        json_response(&v, if created { 201 } else { 200 })
    }
    .await)
}

async fn list_knowledge(req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let (svc, id, p) = agent_route(&req, &ctx).await?;
        p.require_read(&svc.store, &id).await?;
        json_response(&json!({"agent_id": id, "packs": svc.knowledge_catalog(&id).await?}), 200)
    }
    .await)
}

async fn post_federated(mut req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let (svc, id, p) = agent_route(&req, &ctx).await?;
        auth::check_agent_id(&id)?;
        let body = json_body(&mut req).await?;
        json_response(&svc.receive_federated(&id, &body, &p).await?, 202)
    }
    .await)
}

async fn list_federated(req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let (svc, id, p) = agent_route(&req, &ctx).await?;
        auth::check_agent_id(&id)?;
        p.require_admin()?;
        json_response(&svc.federated_facts(&id).await?, 200)
    }
    .await)
}

async fn promote_fact(mut req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let (svc, id, p) = agent_route(&req, &ctx).await?;
        auth::check_agent_id(&id)?;
        let body = json_body(&mut req).await?;
        json_response(&svc.promote(&id, &body, &p).await?, 201)
    }
    .await)
}

async fn service_events(req: Request, ctx: RouteContext<Head>) -> worker::Result<Response> {
    reply(async {
        let kind = query(&req, &["kind"])?.remove("kind");
        let (svc, id, p) = agent_route(&req, &ctx).await?;
        auth::check_agent_id(&id)?;
        p.require_admin()?;
        json_response(&svc.service_events(&id, kind.as_deref()).await?, 200)
    }
    .await)
}

/// The routes of `lid serve` (`host/src/http.rs`), one handler each.
pub fn router(head: bool) -> Router<'static, Head> {
    Router::with_data(Head(head))
        .get_async("/healthz", healthz)
        .get_async("/openapi.json", openapi)
        .get_async("/v1/agents/:id/boot-stub", boot_stub)
        .get_async("/v1/agents/:id/instruction-manifest", get_manifest)
        .put_async("/v1/agents/:id/instruction-manifest", put_manifest)
        .get_async("/v1/agents/:id/instruction-manifest/coverage", coverage)
        .post_async("/v1/agents/:id/instruction-manifest/cosignatures", cosign)
        .post_async("/v1/agents/:id/recall-instruction", recall)
        .post_async("/v1/agents/:id/heartbeat", heartbeat)
        .get_async("/v1/agents/:id/boot-context", boot_context)
        .post_async("/v1/agents/:id/handoff", handoff)
        .put_async("/v1/agents/:id/units/:name", put_unit)
        .get_async("/v1/agents/:id/knowledge", list_knowledge)
        .put_async("/v1/agents/:id/knowledge/:pack", put_knowledge)
        .post_async("/v1/agents/:id/federated-facts", post_federated)
        .get_async("/v1/agents/:id/federated-facts", list_federated)
        .post_async("/v1/agents/:id/facts/promote", promote_fact)
        .get_async("/v1/agents/:id/service-events", service_events)
        .post_async("/v1/instruction/audit", submit_audit)
        .post_async("/v1/keys", create_key)
        .get_async("/v1/keys", list_keys)
        .delete_async("/v1/keys/:key_id", revoke_key)
        .put_async("/v1/org-manifest", put_org)
        .or_else_any_method_async("/*rest", not_found)
        .or_else_any_method_async("/", not_found)
}

/// Whether the request is a HEAD that `fetch` turned into a GET: the router's data, for
/// the routes whose GET writes something a HEAD must not (the boot context's preload
/// audit record). Not a header: a client could send that on a GET.
#[derive(Clone, Copy)]
pub struct Head(pub bool);

#[event(fetch)]
pub async fn fetch(req: Request, env: Env, _ctx: Context) -> worker::Result<Response> {
    let (method, path) = (req.method().to_string(), req.path());
    // HEAD is GET without the body (RFC 9110 §9.3.2), as `lid serve` answers it: the same
    // authentication, checks, status and headers.
    let head = req.method() == worker::Method::Head;
    let req = if head {
        let mut init = worker::RequestInit::new();
        init.with_method(worker::Method::Get).with_headers(req.headers().clone());
        Request::new_with_init(req.url()?.as_ref(), &init)?
    } else {
        req
    };
    // A body declared over the limit is refused before anything else, as `lid serve`
    // refuses it while reading the body, before routing and authentication.
    let declared = req.headers().get("content-length").ok().flatten().and_then(|n| n.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > BODY_LIMIT as u64) {
        return ApiError::from(lid_shared::Refusal::too_large(BODY_LIMIT)).into_response();
    }
    // A body that declares no length (chunked) is measured here too, before routing and the
    // key, as `lid serve` measures it while reading: read through a clone (the request
    // keeps its own copy of the stream for the route).
    if declared.is_none() && matches!(req.method(), worker::Method::Post | worker::Method::Put | worker::Method::Patch | worker::Method::Delete) {
        let size = req.clone()?.bytes().await.map(|b| b.len()).unwrap_or(0);
        if size > BODY_LIMIT {
            return ApiError::from(lid_shared::Refusal::too_large(BODY_LIMIT)).into_response();
        }
    }
    let res = router(head).run(req, env).await?;
    if res.status_code() == 405 {
        return method_not_allowed(&method, &path);
    }
    if head {
        return Ok(Response::empty()?.with_status(res.status_code()).with_headers(res.headers().clone()));
    }
    Ok(res)
}

/// The Cron Trigger (`wrangler.toml` `[triggers]`, hourly): re-certify the manifests that
/// fell due (§21.8.3 after a ranker change, S10 a week after a gate bypass), as `lid serve`
/// does at start and hourly. One log line per manifest (`lid_shared::recertify::line`);
/// a run that cannot read D1 is logged and retried by the next trigger.
#[event(scheduled)]
pub async fn scheduled(_event: ScheduledEvent, env: Env, _ctx: ScheduleContext) {
    let run = async { service(&env)?.recertify(util::now_ms()).await };
    match run.await {
        Ok(done) => {
            for r in &done {
                let line = lid_shared::recertify::line(r);
                if r["passed"] == true {
                    worker::console_log!("{line}");
                } else {
                    worker::console_warn!("recertification_failed: {line}");
                }
            }
        }
        Err(e) => worker::console_error!("re-certification could not run: {}: {}", e.code, e.message),
    }
}
