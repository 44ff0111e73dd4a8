//! Errors of the HTTP service and the commands that share its code paths: a §21.9 code
//! (or one of lid's documented codes, listed in the README), an HTTP status and an
//! actionable message, serialised as `{"error": {"code", "status", "message", "details"}}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::db::DbError;
use crate::engine::EngineFailure;

lid_shared::host_error!(
    /// An error of `lid serve` (and the CLI commands that share its paths): a
    /// [`lid_shared::Refusal`], answered as an axum response.
    ApiError
);

impl ApiError {
    /// A storage failure outside the recall path.
    pub fn storage(e: DbError) -> Self {
        if let DbError::OrgKeyMismatch(m) = e {
            return Self::org_key_mismatch(m);
        }
        tracing::error!(error = %e, "storage failure");
        lid_shared::Refusal::storage_unavailable(e).into()
    }

    /// 503 `org_key_mismatch` (ours): the store's facts are signed by another org key.
    fn org_key_mismatch(message: String) -> Self {
        tracing::error!(message, "org key mismatch");
        lid_shared::attest::org_key_mismatch(message).into()
    }

    /// A storage failure on a read the engine needs (§21.9 `recall_backend_unavailable`).
    pub fn backend(e: impl std::fmt::Display) -> Self {
        tracing::error!(error = %e, "recall backend unavailable");
        lid_shared::Refusal::backend_unavailable(e).into()
    }

    /// A failed read of an agent's snapshot: its current manifest fact quarantined for its
    /// attestation (§21.4.3) is `manifest_unattested` (ours, 503), anything else
    /// [`ApiError::backend`].
    pub fn snapshot(e: DbError) -> Self {
        match e {
            DbError::ManifestUnattested { agent, uri, reason } => {
                tracing::error!(agent, uri, reason, "manifest unattested");
                lid_shared::attest::manifest_unattested(&agent, &uri, &reason).into()
            }
            DbError::OrgKeyMismatch(m) => Self::org_key_mismatch(m),
            e => Self::backend(e),
        }
    }

    /// A failure of the component itself (trap, interrupt): not the caller's input.
    /// Logged with the whole error (a trap's wasm backtrace included).
    pub fn engine(e: anyhow::Error) -> Self {
        tracing::error!(error = %format!("{e:#}"), "engine call failed");
        Self::engine_ref(&e)
    }

    /// [`ApiError::engine`] of a borrowed error, not logged (the CLI prints it itself). A
    /// trap is told by its kind, without the wasm backtrace.
    pub fn engine_ref(e: &anyhow::Error) -> Self {
        let msg = format!("{e:#}");
        if e.chain().any(|c| c.is::<crate::engine::Interrupted>()) {
            Self::new(503, "engine_interrupted", format!("the engine call ran past its time limit and was stopped; the request was not applied ({msg})")).with_details(json!({"retryable": false}))
        } else if let Some(trap) = e.chain().find_map(|c| c.downcast_ref::<wasmtime::Trap>()) {
            Self::new(500, "engine_failed", format!("the engine component stopped ({trap}) and nothing was written; on a very large input this is the engine running out of memory: give it less at a time"))
        } else {
            Self::new(500, "engine_failed", format!("the engine component failed; nothing was written ({msg})"))
        }
    }

}

impl From<EngineFailure> for ApiError {
    fn from(f: EngineFailure) -> Self {
        ApiError(lid_shared::Refusal { status: f.status, code: f.code.into(), message: f.message, details: f.details })
    }
}

impl From<DbError> for ApiError {
    fn from(e: DbError) -> Self {
        ApiError::storage(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut r = (status, axum::Json(self.body())).into_response();
        // RFC 9110 §11.6.1: a 401 names the scheme that would do (an API key as a bearer token)
        if status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(axum::http::header::WWW_AUTHENTICATE, axum::http::HeaderValue::from_static("Bearer"));
        }
        r
    }
}
