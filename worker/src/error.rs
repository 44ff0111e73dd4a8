//! Errors of the worker's routes: the same §21.9 codes (and lid's documented codes, see
//! the README table), HTTP statuses, messages and JSON body as `lid serve`
//! (`host/src/apierror.rs`): `{"error": {"code", "status", "message", "details"}}`.

use worker::Response;

lid_shared::host_error!(
    /// An error of the worker's routes: a [`lid_shared::Refusal`], answered as a
    /// workers-rs response.
    ApiError
);

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
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
        ApiError(lid_shared::Refusal { status: b.status, code: b.code.into(), message: b.message, details: Box::new(b.details) })
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
