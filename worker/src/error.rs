//! Errors of the worker's routes: the same §21.9 codes (and lid's documented codes, see
//! the README table), HTTP statuses, messages and JSON body as `lid serve`
//! (`host/src/apierror.rs`): `{"error": {"code", "status", "message", "details"}}`.

use serde_json::Value;
use worker::Response;

#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: u16,
    pub code: String,
    pub message: String,
    /// Boxed: an error stays small, so every `Result` carrying one does too.
    pub details: Box<Value>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl From<lid_shared::Refusal> for ApiError {
    fn from(r: lid_shared::Refusal) -> Self {
        ApiError::new(r.status, &r.code, r.message).with_details(*r.details)
    }
}

impl ApiError {
    pub fn new(status: u16, code: &str, message: impl Into<String>) -> Self {
        ApiError { status, code: code.to_string(), message: message.into(), details: Box::default() }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Box::new(details);
        self
    }

    pub fn bad_request(code: &str, message: impl Into<String>) -> Self {
        Self::new(400, code, message)
    }

    pub fn invalid_json(e: impl std::fmt::Display) -> Self {
        lid_shared::Refusal::invalid_json(e).into()
    }

    pub fn scope_denied(agent: &str) -> Self {
        lid_shared::access::scope_denied(agent).into()
    }

    pub fn manifest_not_found(agent: &str) -> Self {
        lid_shared::Refusal::manifest_not_found(agent).into()
    }

    /// A D1 or KV failure outside the recall path.
    pub fn storage(e: impl std::fmt::Display) -> Self {
        worker::console_error!("storage failure: {e}");
        lid_shared::Refusal::storage_unavailable(e).into()
    }

    /// A failure reading the facts the engine needs (§21.9 `recall_backend_unavailable`).
    pub fn backend(e: impl std::fmt::Display) -> Self {
        worker::console_error!("recall backend unavailable: {e}");
        lid_shared::Refusal::backend_unavailable(e).into()
    }

    /// JSON the engine produced that does not parse (a bug, not the caller's input).
    pub fn engine_json(e: impl std::fmt::Display) -> Self {
        Self::new(500, "engine_failed", format!("the engine returned invalid JSON: {e}"))
    }

    pub fn body(&self) -> Value {
        lid_shared::error_body(self.status, &self.code, &self.message, &self.details)
    }

    pub fn into_response(self) -> worker::Result<Response> {
        let r = Response::from_json(&self.body())?.with_status(self.status);
        // RFC 9110 §11.6.1: a 401 names the scheme that would do (an API key as a bearer token)
        if self.status == 401 {
            let h = r.headers().clone();
            h.set("WWW-Authenticate", "Bearer")?;
            return Ok(r.with_headers(h));
        }
        Ok(r)
    }
}

impl From<lid_core::error::EngineError> for ApiError {
    fn from(e: lid_core::error::EngineError) -> Self {
        let b = e.body();
        ApiError { status: b.status, code: b.code, message: b.message, details: Box::new(b.details) }
    }
}

impl From<worker::Error> for ApiError {
    fn from(e: worker::Error) -> Self {
        ApiError::storage(e)
    }
}

impl From<worker::KvError> for ApiError {
    fn from(e: worker::KvError) -> Self {
        ApiError::storage(e)
    }
}
