//! The MCP server of lid (issue 5, part 5), on the official Rust MCP SDK (`rmcp`):
//!
//! - tool `recall_instruction`: the §21.3.1 request in, the §21.3.2 response out (as
//!   structured content and as its JSON text);
//! - tool `submit_instruction_audit`: the §21.5.2 usage feedback (`POST /v1/instruction/audit`);
//! - prompt `boot_stub` and resource `lid://agents/{id}/boot-stub`: the §21.8.1 boot stub;
//! - resource `lid://agents/{id}/boot-context`: the composed boot context (JSON, or
//!   Markdown with `?format=markdown`).
//!
//! One handler ([`LidMcp`]) over a small [`Backend`] trait, so every tool, prompt and
//! resource is written once. Two backends: [`HttpBackend`] forwards to a running lid HTTP
//! service with one API key (`lid mcp`, stdio), and [`ServiceBackend`] calls [`Service`]
//! in-process (`/mcp` on `lid serve`, streamable HTTP), where every HTTP request is
//! authenticated from its own `Authorization: Bearer` header as the REST routes are, and
//! each operation makes the REST route's scope check (§21.4.5).
//!
//! lid's API errors (code, status, message, details) become tool results with `isError`
//! (the error body as structured content), or, for prompts and resources, JSON-RPC errors
//! carrying the lid error body in `data`: 4xx as invalid params (-32602; an unknown
//! resource -32002, which rmcp sends as -32602 to peers on protocol 2026-07-28 or later,
//! SEP-2164), 5xx as internal errors (-32603).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::Context as _;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, ErrorCode, GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation, JsonObject,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, Prompt, PromptArgument, PromptMessage, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};

use crate::apierror::ApiError;
use crate::auth::{self, Principal, ReadAccess};
use crate::service::{ContextQuery, Service};

pub const TOOL_RECALL: &str = "recall_instruction";
pub const TOOL_AUDIT: &str = "submit_instruction_audit";
pub const PROMPT_BOOT_STUB: &str = "boot_stub";
/// Resource URIs: `lid://agents/{id}/boot-stub[?profile=P]`,
/// `lid://agents/{id}/boot-context[?format=json|markdown][&profile=P]`.
pub const URI_PREFIX: &str = "lid://agents/";

/// What the MCP handler needs of lid. Calls are blocking (SQLite and the engine in
/// process, or one HTTP request); the handler runs them on tokio's blocking pool.
///
/// `caller` is the principal authenticated from the bearer key of the `/mcp` HTTP request
/// being served; it is `None` on stdio, where the backend's own key speaks.
pub trait Backend: Send + Sync + 'static {
    /// The agent a call acts for when it names none: `--agent` on stdio, the key's own
    /// agent on `/mcp`.
    fn default_agent(&self, caller: Option<&Principal>) -> Result<String, ApiError>;
    /// §21.3 / §21.8.4: the response JSON text; the audit record is written before it
    /// returns.
    fn recall(
        &self,
        caller: Option<&Principal>,
        agent: &str,
        request: &Value,
    ) -> Result<String, ApiError>;
    /// §21.5.2: close an audit record; an identical resubmission succeeds and changes nothing.
    fn submit_audit(&self, caller: Option<&Principal>, body: &Value) -> Result<(), ApiError>;
    /// §21.8.1: the boot stub's Markdown for `profile` (unknown or none: generic).
    fn boot_stub(
        &self,
        caller: Option<&Principal>,
        agent: &str,
        profile: Option<&str>,
    ) -> Result<String, ApiError>;
    /// The composed boot context (`GET /v1/agents/{id}/boot-context`): the JSON bundle, or
    /// its Markdown rendering.
    fn boot_context(
        &self,
        caller: Option<&Principal>,
        agent: &str,
        profile: Option<&str>,
        markdown: bool,
    ) -> Result<String, ApiError>;
}

// ---- the in-process backend (`/mcp` on `lid serve`) ---------------------------------

/// Calls [`Service`] directly, with the REST routes' scope checks.
pub struct ServiceBackend(pub Arc<Service>);

fn principal(caller: Option<&Principal>) -> Result<&Principal, ApiError> {
    // The /mcp middleware authenticates every request, so this only fails if the handler
    // is mounted without it.
    caller.ok_or_else(|| {
        ApiError::new(
            401,
            "api_key_required",
            "send an API key as `Authorization: Bearer <key>`",
        )
    })
}

impl Backend for ServiceBackend {
    fn default_agent(&self, caller: Option<&Principal>) -> Result<String, ApiError> {
        principal(caller)?
            .agent_id
            .clone()
            .ok_or_else(|| ApiError::bad_request("invalid_request", "this API key is not bound to an agent: name the agent with the `agent_id` argument (or in the resource URI)"))
    }

    fn recall(
        &self,
        caller: Option<&Principal>,
        agent: &str,
        request: &Value,
    ) -> Result<String, ApiError> {
        let p = principal(caller)?;
        p.require_read(&self.0.db, agent)?;
        self.0.recall(agent, &p.entity_uri, &request.to_string())
    }

    fn submit_audit(&self, caller: Option<&Principal>, body: &Value) -> Result<(), ApiError> {
        self.0.submit_audit(principal(caller)?, body)
    }

    fn boot_stub(
        &self,
        caller: Option<&Principal>,
        agent: &str,
        profile: Option<&str>,
    ) -> Result<String, ApiError> {
        principal(caller)?.require_own_read(agent, "boot stub")?;
        match self.0.boot_stub(agent, profile) {
            Ok((body, ..)) => Ok(body),
            // As GET /v1/agents/{id}/boot-stub answers (§21.9).
            Err(e) if e.code == "manifest_not_found" => Err(ApiError::new(
                404,
                "boot_stub_not_found",
                format!("no boot stub for agent {agent:?}: {}", e.message),
            )),
            Err(e) => Err(e),
        }
    }

    fn boot_context(
        &self,
        caller: Option<&Principal>,
        agent: &str,
        profile: Option<&str>,
        markdown: bool,
    ) -> Result<String, ApiError> {
        let p = principal(caller)?;
        p.require_boot(agent, false)?;
        let q = ContextQuery {
            profile: profile.map(str::to_string),
            ..ContextQuery::default()
        };
        let v = self.0.boot_context(agent, &p.entity_uri, &q)?;
        Ok(if markdown {
            v["markdown"].as_str().unwrap_or_default().to_string()
        } else {
            v["bundle"].to_string()
        })
    }
}

// ---- the HTTP client backend (`lid mcp`, stdio) -------------------------------------

/// Forwards every call to a lid HTTP service (`lid serve` or the worker) with one key.
pub struct HttpBackend {
    base: String,
    key: String,
    agent: String,
    http: ureq::Agent,
    timeout: Duration,
}

impl HttpBackend {
    /// `base`: the service's base URL (`http://127.0.0.1:8080`, `https://…`); `key`: an
    /// API key; `agent`: the default agent; `timeout`: how long one forwarded request may
    /// take, answer included.
    pub fn new(base: &str, key: &str, agent: &str, timeout: Duration) -> Result<Self, ApiError> {
        let base = base.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(ApiError::bad_request(
                "usage_error",
                format!("--server must be an http:// or https:// base URL, not {base:?}"),
            ));
        }
        if key.trim().is_empty() {
            return Err(ApiError::bad_request(
                "usage_error",
                "the API key is empty: pass --key or set LID_API_KEY",
            ));
        }
        auth::check_agent_id(agent)?;
        let http: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(timeout))
            .build()
            .into();
        Ok(HttpBackend {
            base,
            key: key.trim().to_string(),
            agent: agent.to_string(),
            http,
            timeout,
        })
    }

    /// One request; the response body on 2xx, lid's error otherwise.
    fn call(
        &self,
        method: &str,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Result<String, ApiError> {
        let url = format!("{}{path}", self.base);
        let auth = format!("Bearer {}", self.key);
        let res = match (method, body) {
            ("GET", _) => {
                let mut r = self.http.get(&url).header("Authorization", &auth);
                for (k, v) in query {
                    r = r.query(*k, *v);
                }
                r.call()
            }
            (_, b) => {
                let body = b.map(Value::to_string).unwrap_or_default();
                // Both hosts refuse a body over the limit (`request_too_large`), and may close
                // the connection before it is all sent, which would read here as the service
                // being unreachable: refused before it is sent instead.
                if body.len() > crate::http::BODY_LIMIT {
                    return Err(lid_shared::Refusal::too_large(crate::http::BODY_LIMIT).into());
                }
                self.http.post(&url).header("Authorization", &auth).header("Content-Type", "application/json").send(body)
            }
        };
        let mut r = res.map_err(|e| self.unreachable(method, &url, &e))?;
        let status = r.status().as_u16();
        let text = r
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .map_err(|e| match e {
                ureq::Error::Timeout(_) => self.unreachable(method, &url, &e),
                e => ApiError::new(502, "upstream_error", format!("{method} {url}: reading the answer failed: {e}")),
            })?;
        if (200..300).contains(&status) {
            return Ok(text);
        }
        Err(upstream_error(status, &text))
    }
}

impl HttpBackend {
    /// `upstream_unavailable`: the service could not be reached, or did not answer within
    /// `--timeout-secs` (what it was sent may still land; retrying is safe, since the
    /// one write forwarded, an audit submission, is idempotent).
    fn unreachable(&self, method: &str, url: &str, e: &ureq::Error) -> ApiError {
        let message = match e {
            ureq::Error::Timeout(_) => format!(
                "{method} {url}: the lid service did not answer within {} s; it may still be working on it (each engine call may take up to lid serve's --call-timeout-ms): retry, raise lid mcp's --timeout-secs, or check the service",
                self.timeout.as_secs()
            ),
            e => format!("cannot reach the lid service at {}: {e}; check --server and that the service is running", self.base),
        };
        ApiError::new(503, "upstream_unavailable", message).with_details(json!({"retryable": true}))
    }
}

/// The lid error of a non-2xx answer (`{"error": {code, status, message, details}}`).
fn upstream_error(status: u16, body: &str) -> ApiError {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let e = &v["error"];
    match (e["code"].as_str(), e["message"].as_str()) {
        (Some(code), Some(message)) => ApiError::new(
            e["status"]
                .as_u64()
                .and_then(|s| u16::try_from(s).ok())
                .unwrap_or(status),
            code.to_string(),
            message,
        )
        .with_details(e["details"].clone()),
        _ => {
            let head: String = body.chars().take(200).collect();
            ApiError::new(
                502,
                "upstream_error",
                format!(
                    "the lid service answered HTTP {status} without a lid error body: {head:?}"
                ),
            )
        }
    }
}

impl Backend for HttpBackend {
    fn default_agent(&self, _: Option<&Principal>) -> Result<String, ApiError> {
        Ok(self.agent.clone())
    }

    fn recall(
        &self,
        _: Option<&Principal>,
        agent: &str,
        request: &Value,
    ) -> Result<String, ApiError> {
        self.call(
            "POST",
            &format!("/v1/agents/{agent}/recall-instruction"),
            &[],
            Some(request),
        )
    }

    fn submit_audit(&self, _: Option<&Principal>, body: &Value) -> Result<(), ApiError> {
        self.call("POST", "/v1/instruction/audit", &[], Some(body))
            .map(|_| ())
    }

    fn boot_stub(
        &self,
        _: Option<&Principal>,
        agent: &str,
        profile: Option<&str>,
    ) -> Result<String, ApiError> {
        let q: Vec<(&str, &str)> = profile.map(|p| ("profile", p)).into_iter().collect();
        self.call("GET", &format!("/v1/agents/{agent}/boot-stub"), &q, None)
    }

    fn boot_context(
        &self,
        _: Option<&Principal>,
        agent: &str,
        profile: Option<&str>,
        markdown: bool,
    ) -> Result<String, ApiError> {
        let mut q = vec![("format", if markdown { "markdown" } else { "json" })];
        if let Some(p) = profile {
            q.push(("profile", p));
        }
        self.call("GET", &format!("/v1/agents/{agent}/boot-context"), &q, None)
    }
}

// ---- the handler ----------------------------------------------------------------------

/// The MCP server: tools, prompts and resources over one [`Backend`].
#[derive(Clone)]
pub struct LidMcp {
    backend: Arc<dyn Backend>,
}

impl LidMcp {
    pub fn new(backend: Arc<dyn Backend>) -> Self {
        LidMcp { backend }
    }

    /// Run `f` with the backend on the blocking pool; a panic there is an `internal_error`.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn Backend) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let b = self.backend.clone();
        tokio::task::spawn_blocking(move || f(b.as_ref()))
            .await
            .unwrap_or_else(|e| {
                Err(ApiError::new(
                    500,
                    "internal_error",
                    format!("the MCP request handler failed and nothing was applied: {e}"),
                ))
            })
    }
}

/// The principal the `/mcp` middleware authenticated for this HTTP request (none on stdio).
fn caller(ctx: &RequestContext<RoleServer>) -> Option<Principal> {
    ctx.extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.extensions.get::<Principal>())
        .cloned()
}

/// The agent named by `agent_id` (checked as a path segment), else the backend's default.
fn agent_of(
    b: &dyn Backend,
    caller: Option<&Principal>,
    named: Option<&str>,
) -> Result<String, ApiError> {
    let agent = match named {
        Some(a) => a.to_string(),
        None => b.default_agent(caller)?,
    };
    auth::check_agent_id(&agent)?;
    Ok(agent)
}

/// A string argument, if present; anything else there is a 400 naming it.
fn str_arg<'a>(args: &'a JsonObject, name: &str) -> Result<Option<&'a str>, ApiError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ApiError::bad_request(
            "invalid_request",
            format!("`{name}` must be a string"),
        )),
    }
}

/// A tool's failure, visible to the caller: `isError` with the lid error body.
fn tool_error(e: &ApiError) -> CallToolResult {
    let mut r = CallToolResult::structured_error(e.body());
    let mut text = format!("{} ({}): {}", e.code, e.status, e.message);
    if !e.details.is_null() {
        text.push_str(&format!("\ndetails: {}", e.details));
    }
    r.content = vec![ContentBlock::text(text)];
    r
}

/// A prompt or resource failure as a JSON-RPC error with the lid error body in `data`.
fn rpc_error(e: &ApiError, resource: bool) -> McpError {
    let code = match e.status {
        404 if resource => ErrorCode::RESOURCE_NOT_FOUND,
        400..=499 => ErrorCode::INVALID_PARAMS,
        _ => ErrorCode::INTERNAL_ERROR,
    };
    McpError::new(code, format!("{}: {}", e.code, e.message), Some(e.body()))
}

/// The OpenAPI component schemas, parsed once (`host/src/openapi.json`).
fn schemas() -> &'static Map<String, Value> {
    static S: OnceLock<Map<String, Value>> = OnceLock::new();
    S.get_or_init(|| {
        let v: Value = serde_json::from_str(crate::http::OPENAPI).unwrap_or(Value::Null);
        v["components"]["schemas"]
            .as_object()
            .cloned()
            .unwrap_or_default()
    })
}

/// The OpenAPI schema `name` with its `#/components/schemas/…` references inlined, so an
/// MCP client can validate against it alone (`{"type": "object"}` if it is missing).
fn schema(name: &str) -> Map<String, Value> {
    fn inline(v: &Value, depth: usize) -> Value {
        match v {
            Value::Object(m) => {
                if let Some(target) = m
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix("#/components/schemas/"))
                {
                    if depth < 8 {
                        if let Some(s) = schemas().get(target) {
                            return inline(s, depth + 1);
                        }
                    }
                    return json!({"type": "object"});
                }
                Value::Object(
                    m.iter()
                        .map(|(k, v)| (k.clone(), inline(v, depth)))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(|v| inline(v, depth)).collect()),
            v => v.clone(),
        }
    }
    match schemas().get(name).map(|s| inline(s, 0)) {
        Some(Value::Object(m)) => m,
        _ => json!({"type": "object"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    }
}

fn describe(schema: &mut Map<String, Value>, field: &str, text: &str) {
    if let Some(Value::Object(p)) = schema.get_mut("properties").and_then(|p| p.get_mut(field)) {
        p.entry("description").or_insert_with(|| json!(text));
    }
}

const AGENT_ID_DOC: &str =
    "The agent whose instructions to use; default: the agent of the API key (or `lid mcp --agent`)";

/// The two tools; their schemas are the REST API's (`RecallRequest`, `RecallResponse`,
/// `AuditSubmission` in openapi.json) plus `agent_id`.
pub fn tools() -> Vec<Tool> {
    let mut recall = schema("RecallRequest");
    for (f, d) in [
        (
            "intent",
            "What you are about to do or need help with (§21.3.1; required)",
        ),
        (
            "max_chunks",
            "Maximum number of instruction units to return (default 3)",
        ),
        (
            "token_budget",
            "Soft token budget for the combined content (default 2000)",
        ),
        (
            "manifest_hint",
            "Unit names from the manifest to load first, before ranked retrieval",
        ),
    ] {
        describe(&mut recall, f, d);
    }
    if let Some(Value::Object(p)) = recall.get_mut("properties") {
        p.insert(
            "agent_id".into(),
            json!({"type": "string", "description": AGENT_ID_DOC}),
        );
    }
    let mut audit = schema("AuditSubmission");
    for (f, d) in [
        (
            "audit_token",
            "The audit_token of the recall_instruction response (§21.5.2)",
        ),
        (
            "used_chunks",
            "Names of the returned units you actually used",
        ),
        (
            "missed_chunks",
            "Names of units you needed but that were not returned",
        ),
    ] {
        describe(&mut audit, f, d);
    }
    let recorded = json!({"type": "object", "required": ["recorded", "audit_token"], "properties": {"recorded": {"type": "boolean"}, "audit_token": {"type": "string"}}});
    vec![
        Tool::new(
            TOOL_RECALL,
            "Load the instruction units relevant to what you are about to do (lid §21.3 recall_instruction): ranked chunks with their content, tokens, versions, and an audit_token to pass to submit_instruction_audit at the end of the task.",
            recall,
        )
        .with_title("Recall instructions")
        .with_raw_output_schema(Arc::new(schema("RecallResponse")))
        .with_annotations(ToolAnnotations::new().read_only(false).destructive(false).open_world(false)),
        Tool::new(
            TOOL_AUDIT,
            "Report which recalled instruction units you used and which you missed (lid §21.5.2). Send it once per recall at task end; an identical resubmission is accepted and changes nothing.",
            audit,
        )
        .with_title("Submit instruction audit")
        .with_raw_output_schema(Arc::new(recorded.as_object().cloned().unwrap_or_default()))
        .with_annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(true).open_world(false)),
    ]
}

/// What a `lid://agents/{id}/…` URI names.
#[derive(Debug, PartialEq)]
enum LidResource {
    BootStub {
        agent: String,
        profile: Option<String>,
    },
    BootContext {
        agent: String,
        profile: Option<String>,
        markdown: bool,
    },
}

fn parse_uri(uri: &str) -> Result<LidResource, ApiError> {
    let not_found = || {
        ApiError::new(404, "resource_not_found", format!("no resource {uri:?}: lid serves lid://agents/{{id}}/boot-stub[?profile=P] and lid://agents/{{id}}/boot-context[?format=json|markdown][&profile=P]"))
    };
    let rest = uri.strip_prefix(URI_PREFIX).ok_or_else(not_found)?;
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (agent, kind) = path.split_once('/').ok_or_else(not_found)?;
    auth::check_agent_id(agent)?;
    let (mut profile, mut format) = (None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let twice = |name: &str| ApiError::bad_request("invalid_request", format!("the query parameter {name:?} is given twice in {uri:?}: give it once"));
        match pair.split_once('=') {
            Some(("profile", v)) if !v.is_empty() => {
                if profile.replace(v.to_string()).is_some() {
                    return Err(twice("profile"));
                }
            }
            Some(("format", v)) if kind == "boot-context" => {
                if format.replace(v).is_some() {
                    return Err(twice("format"));
                }
            }
            _ => {
                return Err(ApiError::bad_request(
                    "invalid_request",
                    format!("unknown query parameter {pair:?} in {uri:?}"),
                ))
            }
        }
    }
    let agent = agent.to_string();
    match kind {
        "boot-stub" => Ok(LidResource::BootStub { agent, profile }),
        "boot-context" => match format {
            None | Some("json") => Ok(LidResource::BootContext {
                agent,
                profile,
                markdown: false,
            }),
            Some("markdown") => Ok(LidResource::BootContext {
                agent,
                profile,
                markdown: true,
            }),
            Some(f) => Err(ApiError::bad_request(
                "invalid_request",
                format!("unknown format {f:?}: use json or markdown"),
            )),
        },
        _ => Err(not_found()),
    }
}

fn uri(agent: &str, kind: &str) -> String {
    format!("{URI_PREFIX}{agent}/{kind}")
}

/// lid lists everything in one page (no `nextCursor`), so any cursor is one it never gave:
/// -32602, as the MCP pagination rules want for an invalid cursor.
fn no_cursor(params: Option<&PaginatedRequestParams>) -> Result<(), McpError> {
    match params.and_then(|p| p.cursor.as_deref()) {
        None => Ok(()),
        Some(c) => Err(McpError::invalid_params(format!("invalid cursor {c:?}: lid lists everything in one page and gives no nextCursor, so send no cursor"), None)),
    }
}

/// The MCP requests a client sends a server (MCP 2025-11-25, with the 2026-07-28 drafts the
/// SDK knows): one of these that reaches [`ServerHandler::on_custom_request`] came with
/// params the SDK could not read, which is invalid params (-32602), not an unknown method.
const MCP_METHODS: &[&str] = &[
    "initialize", "ping", "completion/complete", "logging/setLevel", "prompts/get", "prompts/list",
    "resources/list", "resources/templates/list", "resources/read", "resources/subscribe", "resources/unsubscribe",
    "tools/call", "tools/list", "tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "server/discover",
];

/// The MCP requests lid serves (all of them in [`MCP_METHODS`]).
const SERVED: &[&str] = &["initialize", "ping", "tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list", "resources/templates/list", "resources/read", "server/discover"];

/// -32601 for an MCP method lid does not serve, naming those it does (the SDK's own
/// answer is the method's name alone).
fn not_served(method: &str) -> McpError {
    McpError::new(ErrorCode::METHOD_NOT_FOUND, not_served_message(method), None)
}

fn not_served_message(method: &str) -> String {
    format!("method {method:?} is an MCP method lid does not serve: lid serves {}", SERVED.join(", "))
}

/// The MCP methods lid does not serve that the SDK refuses itself, by its task-capability
/// check, before lid's handler sees them, with the method's name alone as the message:
/// lid answers them as [`not_served`] before the SDK reads them, on both transports (so,
/// on `/mcp`, without the SDK's protocol-version check, and without refreshing the
/// session's idle timer).
const REFUSED_BY_THE_SDK: &[&str] = &["tasks/get", "tasks/cancel"];

/// [`not_served`]'s answer to a request in [`REFUSED_BY_THE_SDK`], as a JSON-RPC message.
fn not_served_reply(id: &Value, method: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": ErrorCode::METHOD_NOT_FOUND.0, "message": not_served_message(method)}})
}

/// What is wrong with a known method's params, in serde's words where lid can say more.
fn params_problem(req: &CustomRequest) -> String {
    fn problem<T: serde::de::DeserializeOwned>(v: &Value) -> Option<String> {
        serde_json::from_value::<T>(v.clone()).err().map(|e| e.to_string())
    }
    let Some(params) = &req.params else {
        return "the request has no params".to_string();
    };
    let said = match req.method.as_str() {
        "tools/call" => problem::<CallToolRequestParams>(params),
        "prompts/get" => problem::<GetPromptRequestParams>(params),
        "resources/read" => problem::<ReadResourceRequestParams>(params),
        "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" => problem::<PaginatedRequestParams>(params),
        _ => None,
    };
    said.unwrap_or_else(|| format!("params {params} are not the shape the MCP specification gives"))
}

/// The argument names a prompt takes; any other is refused (-32602) rather than ignored.
fn check_prompt_args(args: &JsonObject) -> Result<(), McpError> {
    match args.keys().find(|k| !matches!(k.as_str(), "profile" | "agent_id")) {
        None => Ok(()),
        Some(k) => Err(McpError::invalid_params(format!("prompt {PROMPT_BOOT_STUB} has no argument {k:?}: it takes profile and agent_id"), None)),
    }
}

impl ServerHandler for LidMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_prompts().enable_resources().build())
            .with_server_info(Implementation::new("lid", env!("CARGO_PKG_VERSION")).with_title("lid: Lazy Instruction Discovery"))
            .with_instructions(
                "Your instructions are loaded on demand. Read the boot stub (prompt boot_stub) once; before each task call recall_instruction with what you are about to do, follow the returned units, and at the end call submit_instruction_audit with the audit_token and the units you used and missed.",
            )
    }

    async fn list_tools(
        &self,
        params: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        no_cursor(params.as_ref())?;
        Ok(ListToolsResult::with_all_items(tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.unwrap_or_default();
        let who = caller(&ctx);
        let result = match request.name.as_ref() {
            TOOL_RECALL => {
                self.blocking(move |b| {
                    let agent = agent_of(b, who.as_ref(), str_arg(&args, "agent_id")?)?;
                    let mut body = args.clone();
                    body.remove("agent_id");
                    let text = b.recall(who.as_ref(), &agent, &Value::Object(body))?;
                    serde_json::from_str(&text).map_err(|e| {
                        ApiError::new(
                            500,
                            "internal_error",
                            format!("the recall response is not JSON: {e}"),
                        )
                    })
                })
                .await
            }
            TOOL_AUDIT => {
                self.blocking(move |b| {
                    let body = Value::Object(args);
                    b.submit_audit(who.as_ref(), &body)?;
                    Ok(json!({"recorded": true, "audit_token": body["audit_token"]}))
                })
                .await
            }
            other => {
                return Err(McpError::invalid_params(
                    format!("unknown tool {other:?}: lid has {TOOL_RECALL} and {TOOL_AUDIT}"),
                    None,
                ))
            }
        };
        Ok(match result {
            Ok(v) => CallToolResult::structured(v),
            Err(e) => tool_error(&e),
        }
        .into())
    }

    async fn list_prompts(
        &self,
        params: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        no_cursor(params.as_ref())?;
        let args = vec![
            PromptArgument::new("profile").with_description("Adapter profile: generic, paperclip-claude-code or openai-assistants (default generic)").with_required(false),
            PromptArgument::new("agent_id").with_description(AGENT_ID_DOC).with_required(false),
        ];
        let p = Prompt::new(PROMPT_BOOT_STUB, Some("The agent's boot stub (lid §21.1, §21.8.1): who it is, how to recall its instructions, and the always-on rules"), Some(args))
            .with_title("Boot stub");
        Ok(ListPromptsResult::with_all_items(vec![p])
            .with_ttl_ms(0)
            .with_cache_scope(CacheScope::Private))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if request.name != PROMPT_BOOT_STUB {
            return Err(McpError::invalid_params(
                format!(
                    "unknown prompt {:?}: lid has {PROMPT_BOOT_STUB}",
                    request.name
                ),
                None,
            ));
        }
        let args = request.arguments.unwrap_or_default();
        check_prompt_args(&args)?;
        let who = caller(&ctx);
        let (agent, stub) = self
            .blocking(move |b| {
                let agent = agent_of(b, who.as_ref(), str_arg(&args, "agent_id")?)?;
                let stub = b.boot_stub(who.as_ref(), &agent, str_arg(&args, "profile")?)?;
                Ok((agent, stub))
            })
            .await
            .map_err(|e| rpc_error(&e, false))?;
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, stub)])
                .with_description(format!("Boot stub of agent {agent}"))
                .into(),
        )
    }

    async fn list_resources(
        &self,
        params: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        no_cursor(params.as_ref())?;
        // The caller's own agent; a key bound to none (an admin's) lists nothing and
        // reads any agent through the templates.
        let who = caller(&ctx);
        let agent = self
            .blocking(move |b| b.default_agent(who.as_ref()))
            .await
            .ok();
        let resources = agent
            .map(|a| {
                vec![
                    Resource::new(uri(&a, "boot-stub"), format!("{a} boot stub")).with_title("Boot stub").with_description("The agent's boot stub (§21.8.1)").with_mime_type("text/markdown"),
                    Resource::new(uri(&a, "boot-context"), format!("{a} boot context"))
                        .with_title("Composed boot context")
                        .with_description("Identity, session, task and knowledge sections, each within its budget, with provenance (JSON; ?format=markdown for text)")
                        .with_mime_type("application/json"),
                ]
            })
            .unwrap_or_default();
        Ok(ListResourcesResult::with_all_items(resources)
            .with_ttl_ms(0)
            .with_cache_scope(CacheScope::Private))
    }

    async fn list_resource_templates(
        &self,
        params: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        no_cursor(params.as_ref())?;
        let t = vec![
            ResourceTemplate::new(
                format!("{URI_PREFIX}{{agent_id}}/boot-stub{{?profile}}"),
                "boot stub",
            )
            .with_description("An agent's boot stub (§21.8.1)")
            .with_mime_type("text/markdown"),
            ResourceTemplate::new(
                format!("{URI_PREFIX}{{agent_id}}/boot-context{{?format,profile}}"),
                "boot context",
            )
            .with_description("An agent's composed boot context: JSON, or format=markdown")
            .with_mime_type("application/json"),
        ];
        Ok(ListResourceTemplatesResult::with_all_items(t))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let what = parse_uri(&uri).map_err(|e| rpc_error(&e, true))?;
        let who = caller(&ctx);
        let (text, mime) = self
            .blocking(move |b| match what {
                LidResource::BootStub { agent, profile } => Ok((
                    b.boot_stub(who.as_ref(), &agent, profile.as_deref())?,
                    "text/markdown",
                )),
                LidResource::BootContext {
                    agent,
                    profile,
                    markdown,
                } => Ok((
                    b.boot_context(who.as_ref(), &agent, profile.as_deref(), markdown)?,
                    if markdown {
                        "text/markdown"
                    } else {
                        "application/json"
                    },
                )),
            })
            .await
            .map_err(|e| rpc_error(&e, true))?;
        Ok(
            ReadResourceResult::new(vec![ResourceContents::text(text, uri).with_mime_type(mime)])
                .with_ttl_ms(0)
                .with_cache_scope(CacheScope::Private)
                .into(),
        )
    }

    async fn complete(&self, _: rmcp::model::CompleteRequestParams, _: RequestContext<RoleServer>) -> Result<rmcp::model::CompleteResult, McpError> {
        Err(not_served("completion/complete"))
    }

    // (logging is deprecated in MCP, and lid never offered it)
    #[allow(deprecated)]
    async fn set_level(&self, _: rmcp::model::SetLevelRequestParams, _: RequestContext<RoleServer>) -> Result<(), McpError> {
        Err(not_served("logging/setLevel"))
    }

    /// A request the SDK could not read: a method lid serves with params it could not
    /// parse (-32602, saying what is wrong), an MCP method lid does not serve (`tasks/list`,
    /// …; -32601 whatever its params), or a method MCP does not have (-32601, naming it).
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        let method = request.method.as_str();
        if SERVED.contains(&method) {
            return Err(McpError::invalid_params(format!("invalid params for {method}: {}", params_problem(&request)), None));
        }
        if MCP_METHODS.contains(&method) {
            return Err(not_served(method));
        }
        Err(McpError::new(ErrorCode::METHOD_NOT_FOUND, format!("method {:?} not found: lid serves {}", request.method, SERVED.join(", ")), None))
    }
}

// ---- /mcp on lid serve ----------------------------------------------------------------

/// `/mcp`: the streamable-HTTP MCP endpoint, calling `svc` in-process. Every request
/// (POST, GET stream, DELETE) must carry a valid `Authorization: Bearer` key, checked as
/// the REST routes check it (401 with lid's error body otherwise); the principal rides
/// in the request's extensions to the handler, which makes each operation's scope check.
/// `stop` is cancelled when `lid serve` begins its graceful shutdown (SIGINT or SIGTERM):
/// open SSE streams then end, so a client's long-lived GET does not hold the stop up.
pub fn router<S: Clone + Send + Sync + 'static>(svc: Arc<Service>, stop: tokio_util::sync::CancellationToken) -> axum::Router<S> {
    let backend: Arc<dyn Backend> = Arc::new(ServiceBackend(svc.clone()));
    let ct = stop;
    // Every request needs a bearer key, so a DNS-rebinding page (which has none) gets
    // nothing: the Host allow-list (loopback by default) is not needed, and would refuse
    // a service deployed behind a hostname.
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_cancellation_token(ct)
        .with_max_request_body_bytes(crate::http::BODY_LIMIT);
    let manager = Arc::new(LocalSessionManager::default());
    let service = StreamableHttpService::new(move || Ok(LidMcp::new(backend.clone())), manager.clone(), config);
    let sessions = Sessions { owners: Arc::default(), in_flight: Arc::default(), manager };
    axum::Router::new()
        .route_service("/mcp", service)
        .route_layer(axum::middleware::from_fn_with_state((svc, sessions), authenticate))
}

/// The MCP sessions `/mcp` opened, each with the id of the key that opened it: a session
/// is used (or closed) with that key only. The SDK's session manager says which are still
/// open (a session also ends after [`SESSION_IDLE`] without a request): `owners` forgets
/// the others whenever a session opens, so it never outgrows the open sessions.
#[derive(Clone)]
struct Sessions {
    owners: Arc<std::sync::Mutex<Owners>>,
    in_flight: InFlight,
    manager: Arc<LocalSessionManager>,
}

/// The JSON-RPC requests being answered, as (session, id): the id as JSON text, so `7`
/// and `"7"` are two ids as JSON-RPC has them. MCP says a client never reuses an id in a
/// session; the SDK keeps one answer channel per id, so a second request with an id
/// already in flight got no answer at all, its event stream kept open by pings until
/// the session ended. lid refuses it instead ([`Sessions::begin`]).
type InFlight = Arc<std::sync::Mutex<std::collections::HashSet<(String, String)>>>;

/// A request's place in [`InFlight`], given back when its answer has been sent (the
/// response body is dropped), or when the request failed before.
struct Answering {
    in_flight: InFlight,
    key: (String, String),
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.key);
    }
}

/// Each open session's key, and per key the `initialize` calls admitted and not yet
/// answered: [`Sessions::admit`] counts both, so that calls racing each other cannot all
/// pass the caps before any is recorded.
#[derive(Default)]
struct Owners {
    by_session: std::collections::HashMap<String, String>,
    pending: std::collections::HashMap<String, usize>,
}

/// An admitted `initialize`'s place under the caps, given back when dropped (after
/// [`Sessions::opened`] recorded the session, or when the call failed).
struct Admitted {
    owners: Arc<std::sync::Mutex<Owners>>,
    key_id: String,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut o = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = o.pending.get_mut(&self.key_id) {
            *n -= 1;
            if *n == 0 {
                o.pending.remove(&self.key_id);
            }
        }
    }
}

/// How long an MCP session lives without a request: the SDK's default, which the README
/// and [`session_not_found`] state.
const SESSION_IDLE: Duration = rmcp::transport::streamable_http_server::session::local::SessionConfig::DEFAULT_KEEP_ALIVE;

impl Sessions {
    fn owners(&self) -> std::sync::MutexGuard<'_, Owners> {
        self.owners.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn is_open(&self, sid: &str) -> bool {
        self.manager.sessions.read().await.contains_key(sid)
    }

    /// Whether `key_id` may open one more session: at most [`SESSIONS_PER_KEY`] of its
    /// own and [`SESSIONS_OPEN`] in all are open at once, counting the `initialize` calls
    /// admitted and not yet answered. Each holds tens of kilobytes until it is closed or
    /// idles out, so without a bound a flood of `initialize` calls (any key may make them)
    /// grew the server's memory without end.
    async fn admit(&self, key_id: &str) -> Result<Admitted, ApiError> {
        let open = self.manager.sessions.read().await;
        let mut owners = self.owners();
        owners.by_session.retain(|s, _| open.contains_key(s.as_str()));
        let idle = SESSION_IDLE.as_secs() / 60;
        let pending = |k: &str| owners.pending.get(k).copied().unwrap_or(0);
        if owners.by_session.values().filter(|k| k.as_str() == key_id).count() + pending(key_id) >= SESSIONS_PER_KEY {
            return Err(ApiError::new(429, "mcp_sessions_exhausted", format!("this key has {SESSIONS_PER_KEY} MCP sessions open, the most one key may hold: close one you no longer use (DELETE /mcp with its Mcp-Session-Id), or wait for one to end after {idle} minutes without a request")));
        }
        // the sessions the manager holds that are not recorded yet are among the pending
        let unrecorded = open.len().saturating_sub(owners.by_session.len());
        if open.len() + owners.pending.values().sum::<usize>().saturating_sub(unrecorded) >= SESSIONS_OPEN {
            return Err(ApiError::new(503, "mcp_sessions_exhausted", format!("the server has {SESSIONS_OPEN} MCP sessions open, the most it holds: retry once sessions close or end after {idle} minutes without a request")).with_details(json!({"retryable": true})));
        }
        *owners.pending.entry(key_id.to_string()).or_insert(0) += 1;
        Ok(Admitted { owners: self.owners.clone(), key_id: key_id.to_string() })
    }

    /// Note the request `id` of session `sid` as being answered, or refuse it when a
    /// request with that id is still being answered in the session.
    fn begin(&self, sid: &str, id: &Value) -> Result<Answering, ApiError> {
        let key = (sid.to_string(), id.to_string());
        if !self.in_flight.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone()) {
            return Err(ApiError::bad_request("invalid_request", format!("a request with id {id} is still being answered in this MCP session (JSON-RPC -32600): an id must not be reused within a session; send this request with an id of its own")).with_details(json!({"jsonrpc": {"code": -32600, "id": id}})));
        }
        Ok(Answering { in_flight: self.in_flight.clone(), key })
    }

    /// Record `sid` as `key_id`'s, forgetting the sessions that have ended.
    async fn opened(&self, sid: &str, key_id: String) {
        let open = self.manager.sessions.read().await;
        let mut owners = self.owners();
        owners.by_session.retain(|s, _| open.contains_key(s.as_str()));
        owners.by_session.insert(sid.to_string(), key_id);
    }
}

const SESSION_HEADER: &str = "mcp-session-id";
/// The most MCP sessions one key holds open at once.
pub const SESSIONS_PER_KEY: usize = 16;
/// The most MCP sessions the server holds open at once.
pub const SESSIONS_OPEN: usize = 1024;

/// The refusal for a session that is unknown, closed, or another key's (the same answer,
/// so a session id tells a caller nothing about other callers).
pub fn session_not_found() -> ApiError {
    ApiError::new(404, "session_not_found", format!("no such MCP session for this key (a session ends when it is closed with DELETE, after {} minutes without a request, or when lid serve restarts, and belongs to the key that opened it): start a new one with `initialize`", SESSION_IDLE.as_secs() / 60))
}

async fn authenticate(State((svc, sessions)): State<(Arc<Service>, Sessions)>, mut req: Request, next: Next) -> Response {
    let key = crate::http::bearer(req.headers());
    let p = match auth::authenticate(&svc.db, key.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            let mut r = e.into_response();
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return r;
        }
    };
    let key_id = p.key_id.clone();
    let asked = req.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
    let closing = req.method() == axum::http::Method::DELETE;
    if let Some(sid) = &asked {
        let foreign = sessions.owners().by_session.get(sid).is_some_and(|owner| *owner != key_id);
        // (the SDK answers a DELETE of a session it does not hold with 202; the transport
        // wants 404 for a session that has ended, as every other request gets)
        if foreign || (closing && !sessions.is_open(sid).await) {
            return session_not_found().into_response();
        }
    }
    let mut admitted = None;
    let mut answering = None;
    if req.method() == axum::http::Method::POST {
        let message;
        (req, message) = match one_message(req).await {
            Ok(r) => r,
            Err(e) => return e.into_response(),
        };
        if let (true, Some(sid)) = (message.opens, &asked) {
            // (MCP: an `initialize` is sent without a session id, and starts a session; a
            // second one in a live session was answered again, as if it had started one)
            if sessions.is_open(sid).await {
                return ApiError::bad_request("invalid_request", "this MCP session is already initialized (JSON-RPC -32600): send requests in it, or send `initialize` without an Mcp-Session-Id header to start a new session").into_response();
            }
        }
        if message.opens && asked.is_none() {
            match sessions.admit(&key_id).await {
                Ok(a) => admitted = Some(a),
                Err(e) => return e.into_response(),
            }
        }
        if let (Some(sid), Some(id)) = (&asked, &message.request_id) {
            if let Some(method) = message.refused_by_the_sdk {
                if sessions.is_open(sid).await {
                    return ([(header::CONTENT_TYPE, "application/json")], not_served_reply(id, method).to_string()).into_response();
                }
            }
            match sessions.begin(sid, id) {
                Ok(a) => {
                    // held by the request (which the SDK hands its handler) and by the
                    // answer's body: the id is free once both are done, so a client that
                    // drops its stream cannot reuse the id while the handler still runs
                    let a = Arc::new(a);
                    req.extensions_mut().insert(a.clone());
                    answering = Some(a);
                }
                Err(e) => return e.into_response(),
            }
        }
    }
    req.extensions_mut().insert(p);
    if let Some(admitted) = admitted {
        // The session the SDK opens is recorded as this key's even when the client drops
        // the connection before the answer (a dropped request future would skip it, and
        // the session would count against no key's cap): the call runs to its end apart.
        let sessions = sessions.clone();
        let run = tokio::spawn(async move {
            let res = next.run(req).await;
            if let Some(opened) = res.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).filter(|_| res.status().is_success()) {
                sessions.opened(opened, key_id).await;
            }
            drop(admitted);
            res
        });
        return run.await.unwrap_or_else(|_| ApiError::new(500, "internal_error", "the MCP initialize call failed; retry it").into_response());
    }
    let mut res = next.run(req).await;
    if let Some(sid) = &asked {
        if closing && res.status().is_success() {
            sessions.owners().by_session.remove(sid);
            // the SDK answers 202; a session's end has no body to accept later, and the
            // MCP SDKs' clients take 200 or 204 as a clean close
            *res.status_mut() = axum::http::StatusCode::NO_CONTENT;
        } else if res.status().is_server_error() && !sessions.is_open(sid).await {
            // a request racing its session's DELETE: the SDK's "session service
            // terminated" 500 is the 404 every request to an ended session gets
            return session_not_found().into_response();
        }
    }
    match answering {
        // the id stays taken until the answer's stream has been sent whole (or dropped)
        Some(answering) => res.map(|body| {
            use http_body_util::BodyExt as _;
            axum::body::Body::new(body.map_frame(move |frame| {
                let _held = &answering;
                frame
            }))
        }),
        None => res,
    }
}

/// Why a JSON-RPC message's text is not one message lid takes.
enum Unread {
    /// Not JSON (serde's reason).
    NotJson(String),
    /// JSON, but not one object (a batch, or a scalar).
    NotOneObject,
    /// Well-formed JSON lid refuses (a field given twice, a string escaping half a
    /// surrogate pair): lid's refusal, and the message's `id` (null when it has none or
    /// cannot be read). Boxed: the refusal is large beside the other reasons.
    Twice(Box<lid_shared::Refusal>, Value),
}

/// One JSON-RPC message, read as lid reads every JSON body ([`lid_shared::json::object`]:
/// a byte-order mark skipped, each field given once), for `/mcp` and `lid mcp` alike.
fn read_message(text: &str) -> Result<Value, Unread> {
    lid_shared::json::object(text).map_err(|refusal| match serde_json::from_str::<Value>(lid_shared::json::without_bom(text)) {
        Ok(v) if v.is_object() => Unread::Twice(Box::new(refusal), v["id"].clone()),
        Ok(_) => Unread::NotOneObject,
        // a lone surrogate (`"\ud83d"`, half an emoji a client cut): answered with the
        // request's id, read past it, so that the client's call ends
        Err(_) if refusal.code == "invalid_request" => {
            let id = serde_json::from_str::<Value>(&lone_surrogates_replaced(lid_shared::json::without_bom(text))).map(|v| v["id"].clone()).unwrap_or(Value::Null);
            Unread::Twice(Box::new(refusal), id)
        }
        Err(e) => Unread::NotJson(e.to_string()),
    })
}

/// `text` with each `\uXXXX` escape of a lone surrogate (one not in a high-low pair)
/// replaced by `\uFFFD`, which JSON can read; escaped backslashes and pairs are kept.
fn lone_surrogates_replaced(text: &str) -> String {
    let surrogate = |s: &str| -> Option<u16> { s.get(2..6).filter(|_| s.starts_with("\\u")).and_then(|h| u16::from_str_radix(h, 16).ok()).filter(|u| (0xD800..0xE000).contains(u)) };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(u) = surrogate(rest) else {
            // any other escape, `\\` included, whole
            let n = rest[1..].chars().next().map_or(1, |c| 1 + c.len_utf8());
            out.push_str(&rest[..n]);
            rest = &rest[n..];
            continue;
        };
        match surrogate(&rest[6..]) {
            Some(low) if (0xD800..0xDC00).contains(&u) && (0xDC00..0xE000).contains(&low) => {
                out.push_str(&rest[..12]);
                rest = &rest[12..];
            }
            _ => {
                out.push_str("\\uFFFD");
                rest = &rest[6..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// A POST's body read as lid reads every JSON body ([`lid_shared::json::object`]): a
/// byte-order mark skipped, a body that is not JSON `invalid_json`, a field given twice
/// `invalid_request` (the SDK would keep the last silently), and JSON that is not one
/// object (a batch) `invalid_request`. The SDK then reads the JSON-RPC message itself.
/// With the request: what [`Message`] says of it.
async fn one_message(req: Request) -> Result<(Request, Message), ApiError> {
    let (mut parts, body) = req.into_parts();
    // (`body_deadline` has read the body into memory, within the body limit)
    let bytes = axum::body::to_bytes(body, crate::http::BODY_LIMIT).await.map_err(|e| ApiError::bad_request("invalid_request", format!("the request body could not be read ({e})")))?;
    let text = std::str::from_utf8(&bytes).map_err(ApiError::invalid_json)?;
    let message = match read_message(text) {
        Ok(m) if m["method"] == "initialize" => {
            // the SDK would take an `initialize` it cannot read for some other request, and
            // ask for a session id the client cannot have yet
            let params = m.get("params").cloned().unwrap_or(Value::Null);
            if let Err(e) = serde_json::from_value::<rmcp::model::InitializeRequestParams>(params) {
                return Err(ApiError::bad_request("invalid_request", format!("invalid params for initialize (-32602): {e}; send protocolVersion, capabilities and clientInfo")).with_details(json!({"jsonrpc": {"code": -32602, "id": m["id"]}})));
            }
            Message { opens: true, request_id: None, refused_by_the_sdk: None }
        }
        // a request (a method and an id); a notification has no id, a response no method
        Ok(m) => Message {
            opens: false,
            request_id: m.get("method").and(m.get("id")).filter(|id| !id.is_null()).cloned(),
            refused_by_the_sdk: REFUSED_BY_THE_SDK.iter().copied().find(|r| m["method"] == *r),
        },
        Err(Unread::NotJson(why)) => return Err(ApiError::invalid_json(why)),
        Err(Unread::NotOneObject) => return Err(ApiError::bad_request("invalid_request", not_one_object(text))),
        Err(Unread::Twice(refusal, _)) => return Err((*refusal).into()),
    };
    let skip = text.len() - lid_shared::json::without_bom(text).len();
    if skip > 0 {
        parts.headers.insert(header::CONTENT_LENGTH, HeaderValue::from(bytes.len() - skip));
    }
    Ok((Request::from_parts(parts, axum::body::Body::from(bytes.slice(skip..))), message))
}

/// What `/mcp`'s middleware needs of a POST's JSON-RPC message.
struct Message {
    /// An `initialize`, which opens a session.
    opens: bool,
    /// A request's id (not an `initialize`'s, which has no session yet).
    request_id: Option<Value>,
    /// Its method, when it is one of [`REFUSED_BY_THE_SDK`].
    refused_by_the_sdk: Option<&'static str>,
}

// ---- lid mcp (stdio) ------------------------------------------------------------------

#[derive(clap::Args, Debug, Clone)]
pub struct McpArgs {
    /// Base URL of a running lid service: `lid serve` (http://127.0.0.1:8080) or the worker
    #[arg(long)]
    pub server: String,
    /// API key for the service (default: the LID_API_KEY environment variable, which
    /// keeps the key out of the process list)
    #[arg(long)]
    pub key: Option<String>,
    /// The agent the tools, prompt and resources act for when a call names none
    #[arg(long)]
    pub agent: String,
    /// How long one request forwarded to the service may take, its answer included, in
    /// seconds (1 to 3600); one that takes longer is answered `upstream_unavailable`
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub timeout_secs: u64,
}

/// `lid mcp`: serve MCP on stdin/stdout until the client closes it. Logs go to stderr.
///
/// Each line from the client passes [`screen`] before the SDK reads it, and the SDK's
/// lines and the screen's answers reach stdout one whole line at a time: a line that is
/// not JSON gets a -32700 parse error (the SDK would skip it and leave the client waiting),
/// a field given twice -32600 (as `/mcp` and the REST routes refuse it), and a
/// notification or response before the session starts is dropped, where the SDK would
/// stop the server.
pub fn run_stdio(args: &McpArgs) -> anyhow::Result<i32> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let key = args
        .key
        .clone()
        .or_else(|| std::env::var("LID_API_KEY").ok())
        .unwrap_or_default();
    let backend = HttpBackend::new(&args.server, &key, &args.agent, Duration::from_secs(args.timeout_secs)).map_err(anyhow::Error::new)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let result = rt.block_on(async move {
        // client → screen → `feed` → the SDK; the SDK → `from_server` → `lines` → stdout
        let (server_in, mut feed) = tokio::io::duplex(1 << 16);
        let (from_server, server_out) = tokio::io::duplex(1 << 16);
        let (lines, mut out) = tokio::sync::mpsc::unbounded_channel::<String>();
        let writer = tokio::spawn(async move {
            let mut stdout = tokio::io::stdout();
            while let Some(line) = out.recv().await {
                stdout.write_all(line.as_bytes()).await?;
                stdout.write_all(b"\n").await?;
                stdout.flush().await?;
            }
            Ok::<_, std::io::Error>(())
        });
        let to_client = lines.clone();
        let pump = tokio::spawn(async move {
            let mut from_server = BufReader::new(from_server);
            let mut line = Vec::new();
            while matches!(from_server.read_until(b'\n', &mut line).await, Ok(n) if n > 0) {
                let text = String::from_utf8_lossy(&line);
                let _ = to_client.send(text.trim_end_matches(['\n', '\r']).to_string());
                line.clear();
            }
        });
        let started = Arc::new(AtomicBool::new(false));
        let began = started.clone();
        let reader = tokio::spawn(async move {
            let mut stdin = BufReader::new(tokio::io::stdin());
            let mut line = Vec::new();
            while matches!(stdin.read_until(b'\n', &mut line).await, Ok(n) if n > 0) {
                match screen(&line, began.load(Ordering::SeqCst)) {
                    Screened::Forward { starts } => {
                        began.fetch_or(starts, Ordering::SeqCst);
                        if !line.ends_with(b"\n") {
                            line.push(b'\n');
                        }
                        let message = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(&line);
                        if feed.write_all(message).await.is_err() {
                            break;
                        }
                    }
                    Screened::Reply(answer) => {
                        let _ = lines.send(answer.to_string());
                    }
                    Screened::Drop(why) => tracing::warn!("lid mcp: dropped a message from the client: {why}"),
                }
                line.clear();
            }
            // end of input: the SDK sees it and stops
            let _ = feed.shutdown().await;
        });
        let served = match LidMcp::new(Arc::new(backend)).serve((server_in, server_out)).await {
            Ok(running) => running.waiting().await.map(drop).context("the MCP server stopped"),
            // a client that closed its end without `initialize` asked for nothing
            Err(_) if !started.load(Ordering::SeqCst) => Ok(()),
            Err(e) => Err(anyhow::Error::new(e).context("starting the MCP server on stdio")),
        };
        // every line the SDK wrote, then the screen's last answers, reach stdout
        let _ = pump.await;
        reader.abort();
        let _ = reader.await;
        let _ = writer.await;
        served
    });
    // (a stdin read still blocked on its thread must not hold up the exit)
    rt.shutdown_background();
    result?;
    Ok(0)
}

/// Why `text` (JSON, but not one object) is not a JSON-RPC message.
fn not_one_object(text: &str) -> String {
    if lid_shared::json::without_bom(text).trim_start().starts_with('[') {
        "a JSON-RPC message is one JSON object: lid takes no batches, send each request on its own".into()
    } else {
        "a JSON-RPC message is one JSON object, not a number, a string or null".into()
    }
}

/// What [`run_stdio`] does with one line from the client.
#[derive(Debug, PartialEq)]
enum Screened {
    /// To the SDK (`starts`: a request that starts its lifecycle, such as `initialize`).
    Forward { starts: bool },
    /// Answered here, with this JSON-RPC message.
    Reply(Value),
    /// Not answered: a notification or response before the session starts, or a blank line.
    Drop(&'static str),
}

/// Screen one line from a stdio client (see [`run_stdio`]); `started`: a request that
/// starts the session (`initialize`, or one with the 2026-07-28 metadata) has gone to the SDK.
fn screen(line: &[u8], started: bool) -> Screened {
    let rpc_error = |id: &Value, code: i32, message: String| Screened::Reply(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}));
    let Ok(text) = std::str::from_utf8(line) else {
        return rpc_error(&Value::Null, -32700, "Parse error: the line is not UTF-8".to_string());
    };
    let text = text.trim_end_matches(['\n', '\r']);
    if text.trim().is_empty() {
        return Screened::Drop("a blank line");
    }
    let msg = match read_message(text) {
        Ok(v) => v,
        Err(Unread::NotJson(why)) => return rpc_error(&Value::Null, -32700, format!("Parse error: the line is not JSON ({why}): send one JSON-RPC message per line")),
        Err(Unread::NotOneObject) => return rpc_error(&Value::Null, -32600, format!("Invalid request: {}", not_one_object(text))),
        // answered with the request's id, which can be read
        Err(Unread::Twice(refusal, id)) => {
            let id = if id.is_string() || id.is_i64() || id.is_u64() { id } else { Value::Null };
            return rpc_error(&id, -32600, format!("Invalid request: {}", refusal.message));
        }
    };
    // The SDK answers a message it cannot read with no `id` at all, which leaves the client
    // waiting on its request: such messages are answered here, with the id when MCP can
    // carry it (a string or an integer) and null when it cannot.
    let raw_id = msg.get("id");
    let id = raw_id.filter(|id| id.is_string() || id.is_i64() || id.is_u64()).cloned();
    let answer = |code: i32, message: &str| rpc_error(id.as_ref().unwrap_or(&Value::Null), code, message.to_string());
    if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return answer(-32600, "Invalid request: `jsonrpc` must be \"2.0\"");
    }
    if raw_id.is_some() && id.is_none() {
        return answer(-32600, "Invalid request: `id` must be a string or an integer (MCP)");
    }
    let method = match msg.get("method") {
        None => None,
        Some(Value::String(m)) => Some(m.as_str()),
        Some(_) => return answer(-32600, "Invalid request: `method` must be a string"),
    };
    if method.is_none() && !(msg.get("result").is_some() || msg.get("error").is_some()) {
        return answer(-32600, "Invalid request: a message has a `method` (a request or notification), or a `result` or `error` (a response)");
    }
    if method.is_some() && msg.get("params").is_some_and(|p| !p.is_object() && !p.is_null()) {
        return match id {
            Some(_) => answer(-32602, "Invalid params: `params` must be an object (MCP)"),
            None => Screened::Drop("a notification whose params are not an object"),
        };
    }
    if started {
        return match (method, &id) {
            (Some(m), Some(id)) if REFUSED_BY_THE_SDK.contains(&m) => Screened::Reply(not_served_reply(id, m)),
            _ => Screened::Forward { starts: false },
        };
    }
    // The SDK answers every request before the lifecycle starts itself (ping, discover,
    // a request without the 2026-07-28 metadata), and takes `initialize` or a request
    // with that metadata as its start; a notification or response there stops it.
    match (method, id) {
        (Some(m), Some(_)) => Screened::Forward { starts: !matches!(m, "ping" | "server/discover") },
        (Some(_), None) => Screened::Drop("a notification before the session started (send `initialize` first)"),
        (None, _) => Screened::Drop("a response before the session started"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_uris() {
        assert_eq!(
            parse_uri("lid://agents/a-1/boot-stub").unwrap(),
            LidResource::BootStub {
                agent: "a-1".into(),
                profile: None
            }
        );
        assert_eq!(
            parse_uri("lid://agents/a/boot-stub?profile=openai-assistants").unwrap(),
            LidResource::BootStub {
                agent: "a".into(),
                profile: Some("openai-assistants".into())
            }
        );
        assert_eq!(
            parse_uri("lid://agents/a/boot-context?format=markdown").unwrap(),
            LidResource::BootContext {
                agent: "a".into(),
                profile: None,
                markdown: true
            }
        );
        assert_eq!(
            parse_uri("lid://agents/a/boot-context").unwrap(),
            LidResource::BootContext {
                agent: "a".into(),
                profile: None,
                markdown: false
            }
        );
        assert_eq!(parse_uri("lid://agents/a/other").unwrap_err().status, 404);
        assert_eq!(parse_uri("file:///etc/passwd").unwrap_err().status, 404);
        assert_eq!(
            parse_uri("lid://agents/../boot-stub").unwrap_err().code,
            "invalid_request"
        );
        assert_eq!(
            parse_uri("lid://agents/a/boot-stub?format=markdown")
                .unwrap_err()
                .code,
            "invalid_request"
        );
        assert_eq!(
            parse_uri("lid://agents/a/boot-context?format=xml")
                .unwrap_err()
                .code,
            "invalid_request"
        );
        // a parameter given twice is refused, as the REST routes refuse it, not resolved
        for twice in ["lid://agents/a/boot-stub?profile=generic&profile=openai-assistants", "lid://agents/a/boot-context?format=json&format=markdown"] {
            let e = parse_uri(twice).unwrap_err();
            assert_eq!((e.status, &*e.code), (400, "invalid_request"), "{twice}");
            assert!(e.message.contains("given twice"), "{}", e.message);
        }
    }

    /// Only lone surrogate escapes are replaced: a high-low pair, an escaped backslash
    /// before `u` and other escapes stay as they are.
    #[test]
    fn lone_surrogates_are_replaced_and_nothing_else() {
        for (text, want) in [
            (r#""\ud83d""#, r#""\uFFFD""#),
            (r#""\udc00\ud83d""#, r#""\uFFFD\uFFFD""#),
            (r#""\ud83d\ude00""#, r#""\ud83d\ude00""#),
            (r#""\ud83d\ud83d\ude00x""#, r#""\uFFFD\ud83d\ude00x""#),
            (r#""\\ud83d""#, r#""\\ud83d""#),
            (r#""\n\u0041\"é\ud8""#, r#""\n\u0041\"é\ud8""#),
            ("\\", "\\"),
            ("end\\", "end\\"),
        ] {
            assert_eq!(lone_surrogates_replaced(text), want, "{text}");
        }
    }

    /// The stdio screen (`run_stdio`): what the SDK would skip or stop on is answered.
    #[test]
    fn the_stdio_screen_answers_what_the_sdk_would_not() {
        let error = |s: Screened| match s {
            Screened::Reply(v) => (v["id"].clone(), v["error"]["code"].as_i64().unwrap_or_default(), v["error"]["message"].as_str().unwrap_or_default().to_string()),
            other => panic!("not an error reply: {other:?}"),
        };
        let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
        assert_eq!(screen(init, false), Screened::Forward { starts: true });
        assert_eq!(screen(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n", true), Screened::Forward { starts: false });
        // before the session starts: requests go to the SDK (which answers them), ping and
        // discover without starting it; notifications and responses are dropped
        assert_eq!(screen(br#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#, false), Screened::Forward { starts: true });
        assert_eq!(screen(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#, false), Screened::Forward { starts: false });
        assert!(matches!(screen(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, false), Screened::Drop(_)));
        assert!(matches!(screen(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#, false), Screened::Drop(_)));
        assert!(matches!(screen(b"  \r\n", true), Screened::Drop(_)));
        // not JSON, not UTF-8: a parse error (id null), at any time
        for bad in [&b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"\n"[..], &b"\xff\xfe"[..]] {
            for started in [false, true] {
                let (id, code, _) = error(screen(bad, started));
                assert_eq!((id, code), (Value::Null, -32700), "{bad:?}");
            }
        }
        // valid JSON of the wrong shape: invalid request, with the id where it can be read
        let (id, code, msg) = error(screen(br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"arguments":{"intent":"a","intent":"b"}}}"#, true));
        assert_eq!((id, code), (json!(6), -32600));
        assert!(msg.contains("`intent` twice"), "{msg}");
        assert_eq!(error(screen(br#"{"jsonrpc":"1.0","id":5,"method":"ping"}"#, true)).0, json!(5));
        // a lone surrogate (half an emoji a client cut) is refused with the request's id,
        // read past it, so the client's call ends; an id MCP cannot carry is null
        let (id, code, msg) = error(screen(br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"recall_instruction","arguments":{"intent":"roll back \ud83d"}}}"#, true));
        assert_eq!((id, code), (json!(42), -32600), "{msg}");
        assert!(msg.contains("surrogate"), "{msg}");
        assert_eq!(error(screen(br#"{"jsonrpc":"2.0","id":"\udc00a","method":"ping"}"#, true)).0, json!("\u{fffd}a"));
        assert_eq!(error(screen(br#"{"jsonrpc":"2.0","id":{"x":"\ud800"},"method":"ping"}"#, true)).0, Value::Null);
        assert_eq!(error(screen(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, true)).1, -32600);
        assert!(error(screen(b"5", true)).2.contains("not a number, a string or null"));
        // what the SDK would answer with no id at all is answered here: with the id when
        // MCP can carry it, else with null
        for (line, id, code) in [
            (&br#"{"jsonrpc":"2.0","id":8,"method":"ping","params":[]}"#[..], json!(8), -32602),
            (br#"{"jsonrpc":"2.0","id":"x","method":5}"#, json!("x"), -32600),
            (br#"{"jsonrpc":"2.0","id":9}"#, json!(9), -32600),
            (br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, Value::Null, -32600),
            (br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, Value::Null, -32600),
            (br#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#, Value::Null, -32600),
            (br#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#, Value::Null, -32600),
        ] {
            for started in [false, true] {
                match screen(line, started) {
                    Screened::Reply(v) => {
                        assert!(v.as_object().is_some_and(|o| o.contains_key("id")), "the id member is always there: {v}");
                        assert_eq!((v["id"].clone(), v["error"]["code"].as_i64()), (id.clone(), Some(code.into())), "{}", String::from_utf8_lossy(line));
                    }
                    other => panic!("{}: {other:?}", String::from_utf8_lossy(line)),
                }
            }
        }
        assert!(matches!(screen(br#"{"jsonrpc":"2.0","method":"notifications/initialized","params":[]}"#, true), Screened::Drop(_)));
        assert_eq!(screen(br#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m"}}"#, true), Screened::Forward { starts: false });
        // a byte-order mark is skipped, as on /mcp and the REST routes
        assert_eq!(screen("\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}".as_bytes(), false), Screened::Forward { starts: true });
    }

    #[test]
    fn unreadable_params_are_invalid_params_and_unknown_methods_not_found() {
        let problem = |method: &str, params: Option<Value>| params_problem(&CustomRequest::new(method, params));
        assert_eq!(problem("tools/call", None), "the request has no params");
        assert!(problem("tools/call", Some(json!({}))).contains("missing field `name`"));
        assert!(problem("prompts/get", Some(json!({"name": 5}))).contains("invalid type"));
        assert!(problem("resources/read", Some(json!({"uri": 5}))).contains("invalid type"));
        assert!(MCP_METHODS.contains(&"tools/call") && !MCP_METHODS.contains(&"nope/x"));
        assert!(no_cursor(None).is_ok());
        assert!(no_cursor(Some(&PaginatedRequestParams::default())).is_ok());
        let e = no_cursor(Some(&PaginatedRequestParams::default().with_cursor(Some("bogus".into())))).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        let mut args = JsonObject::new();
        args.insert("profile".into(), json!("generic"));
        assert!(check_prompt_args(&args).is_ok());
        args.insert("foo".into(), json!("x"));
        assert_eq!(check_prompt_args(&args).unwrap_err().code, ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn tool_schemas_come_from_the_openapi_description() {
        let t = tools();
        let recall = &t[0].input_schema;
        assert_eq!(recall["required"], json!(["intent"]));
        // the limits the service enforces are the schema's, so a client validates them
        let p = &recall["properties"];
        assert_eq!((p["token_budget"]["maximum"].as_u64(), p["intent"]["maxLength"].as_u64(), p["heartbeat_id"]["maxLength"].as_u64()), (Some(u32::MAX.into()), Some(8192), Some(256)));
        assert_eq!((p["manifest_hint"]["maxItems"].as_u64(), p["manifest_hint"]["items"]["maxLength"].as_u64()), (Some(256), Some(256)));
        for f in [
            "intent",
            "max_chunks",
            "token_budget",
            "manifest_hint",
            "agent_id",
        ] {
            assert!(
                recall["properties"].get(f).is_some(),
                "{f} missing from {recall:?}"
            );
        }
        let out = t[0].output_schema.as_ref().expect("recall output schema");
        assert!(out["required"]
            .as_array()
            .unwrap()
            .contains(&json!("audit_token")));
        assert_eq!(t[1].input_schema["required"], json!(["audit_token"]));
    }

    #[test]
    fn lid_errors_keep_their_code() {
        let e = ApiError::new(403, "instruction_scope_denied", "no");
        let r = tool_error(&e);
        assert_eq!(r.is_error, Some(true));
        assert_eq!(
            r.structured_content.unwrap()["error"]["code"],
            "instruction_scope_denied"
        );
        let j = rpc_error(&e, true);
        assert_eq!(j.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(j.data.unwrap()["error"]["status"], 403);
        assert_eq!(
            rpc_error(&ApiError::new(404, "boot_stub_not_found", "x"), true).code,
            ErrorCode::RESOURCE_NOT_FOUND
        );
        assert_eq!(
            rpc_error(&ApiError::new(503, "upstream_unavailable", "x"), false).code,
            ErrorCode::INTERNAL_ERROR
        );
        let u = upstream_error(418, "<html>teapot</html>");
        assert_eq!((u.status, &*u.code), (502, "upstream_error"));
        let u = upstream_error(
            404,
            r#"{"error":{"code":"manifest_not_found","status":404,"message":"m","details":null}}"#,
        );
        assert_eq!(
            (u.status, &*u.code, u.message.as_str()),
            (404, "manifest_not_found", "m")
        );
    }
}
