//! Engine errors: every failure carries a §21.9 code (or a documented lid code), an
//! HTTP status and an actionable message. Hosts serialise [`ErrorBody`] as
//! `{"error": {...}}` and use `status` as the HTTP status.
//!
//! lid's own codes (beyond §21.9): `invalid_json`, `invalid_request`, `manifest_invalid`,
//! `boot_stub_too_large`, `preload_unit_unavailable` (fatal form, §21.1.5 rule 4),
//! `unit_not_found`, `migrate_invalid`, `handoff_invalid`, `corpus_not_prepared` (409: a
//! recall sent without its manifest found nothing prepared), and the knowledge-pack codes
//! (`knowledge_front_matter_invalid`, `knowledge_field_missing`, `knowledge_pack_empty`,
//! `knowledge_pack_id_invalid`, 422). §21.9 codes used here include `intent_required`,
//! `recall_backend_unavailable` and `audit_token_invalid`.

use serde::{Deserialize, Serialize};

/// The wire form of an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: String,
    pub status: u16,
    pub message: String,
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub details: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    /// §21.9 `intent_required`.
    #[error("`intent` is required and must not be empty (§21.3.1)")]
    IntentRequired,
    /// Input that is not JSON (a body of the wrong shape is [`EngineError::InvalidRequest`]).
    #[error("invalid JSON in {what}: {reason}")]
    InvalidJson { what: &'static str, reason: String },
    /// A request field out of range, or of the wrong JSON type.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The manifest failed validation; `details` lists every problem.
    #[error("manifest rejected: {summary}")]
    ManifestRejected { code: String, summary: String, problems: serde_json::Value },
    /// §21.9 `recall_backend_unavailable` (retryable).
    #[error("instruction fact store unavailable, retry later: {0}")]
    BackendUnavailable(String),
    /// Rendered stub body over 500 tokens (§21.1.2).
    #[error("boot stub body is {tokens} tokens; the limit is 500 (§21.1.2): shorten always-applicable units or move them to recall")]
    StubTooLarge { tokens: usize },
    /// §21.1.5 rule 4: a guaranteed preload unit is unavailable; the heartbeat must abort.
    #[error("preload unit {unit:?} is unavailable and has guarantee_load: true; aborting the heartbeat (§21.1.5 rule 4)")]
    PreloadUnitUnavailable { unit: String },
    /// Markdown migration input problems.
    #[error("cannot migrate instructions: {0}")]
    Migrate(String),
    /// §21.9 `audit_token_invalid`: not an `audi_…` token of a recall response.
    #[error("`audit_token` must be the `audi_…` token of a recall_instruction response (§21.5.2): {0}")]
    AuditTokenInvalid(String),
    /// A handoff message or Session document with problems (every one in `details`).
    #[error("invalid handoff: {0}")]
    Handoff(crate::handoff::HandoffError),
    /// A recall sent without its manifest (the host vouching for its `corpus_key`) found
    /// no corpus prepared under that key: the host sends the call again with the manifest.
    #[error("no corpus is prepared under this `corpus_key`: send the recall again with the manifest")]
    CorpusNotPrepared,
    /// An uploaded knowledge pack that cannot be read (its code is the knowledge error's).
    #[error("knowledge pack rejected: {0}")]
    Knowledge(crate::knowledge::KnowledgeError),
}

impl EngineError {
    pub fn code(&self) -> &str {
        match self {
            EngineError::IntentRequired => "intent_required",
            EngineError::InvalidJson { .. } => "invalid_json",
            EngineError::InvalidRequest(_) => "invalid_request",
            EngineError::ManifestRejected { code, .. } => code,
            EngineError::BackendUnavailable(_) => "recall_backend_unavailable",
            EngineError::StubTooLarge { .. } => "boot_stub_too_large",
            EngineError::PreloadUnitUnavailable { .. } => "preload_unit_unavailable",
            EngineError::Migrate(_) => "migrate_invalid",
            EngineError::AuditTokenInvalid(_) => "audit_token_invalid",
            EngineError::Handoff(_) => "handoff_invalid",
            EngineError::CorpusNotPrepared => "corpus_not_prepared",
            EngineError::Knowledge(e) => e.code(),
        }
    }

    pub fn status(&self) -> u16 {
        match self {
            EngineError::BackendUnavailable(_) | EngineError::PreloadUnitUnavailable { .. } => 503,
            EngineError::StubTooLarge { .. } | EngineError::Knowledge(_) => 422,
            EngineError::CorpusNotPrepared => 409,
            _ => 400,
        }
    }

    pub fn body(&self) -> ErrorBody {
        let details = match self {
            EngineError::ManifestRejected { problems, .. } => problems.clone(),
            EngineError::PreloadUnitUnavailable { unit } => serde_json::json!({ "unit": unit }),
            EngineError::StubTooLarge { tokens } => serde_json::json!({ "body_tokens": tokens, "limit": 500 }),
            EngineError::BackendUnavailable(_) => serde_json::json!({ "retryable": true }),
            EngineError::Handoff(e) => serde_json::json!({ "problems": e.problems }),
            _ => serde_json::Value::Null,
        };
        ErrorBody { code: self.code().to_string(), status: self.status(), message: self.to_string(), details }
    }

    /// The error of reading `input` as the JSON of `what`: `invalid_json` (with the line
    /// and column) when it is not JSON, `invalid_request` naming the field and the JSON
    /// type it takes when it is JSON of the wrong shape ([`crate::json_input`]).
    /// `T` is the type read: the message is placed by reading it again from a probe.
    pub(crate) fn json<T: serde::de::DeserializeOwned>(what: &'static str, input: &str, e: serde_json::Error) -> Self {
        match crate::json_input::classify(what, input, e, &|probe| serde_json::from_str::<T>(probe).err()) {
            crate::json_input::Problem::Syntax(e) => EngineError::InvalidJson { what, reason: e.to_string() },
            crate::json_input::Problem::Shape(message) => EngineError::InvalidRequest(message),
        }
    }
}

impl From<crate::store::StoreError> for EngineError {
    fn from(e: crate::store::StoreError) -> Self {
        EngineError::BackendUnavailable(e.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read<T: serde::de::DeserializeOwned>(what: &'static str, input: &str) -> EngineError {
        EngineError::json::<T>(what, input, serde_json::from_str::<T>(input).err().expect("an error"))
    }

    #[test]
    fn not_json_is_invalid_json_with_its_position() {
        let e = read::<crate::recall::RecallRequest>("recall request", r#"{"intent": "x", "max_chunks": 3"#);
        assert_eq!((e.code(), e.status()), ("invalid_json", 400));
        assert!(e.to_string().starts_with("invalid JSON in recall request: EOF while parsing an object at line 1 column"), "{e}");
    }

    #[test]
    fn well_formed_json_of_the_wrong_shape_is_an_invalid_request_in_json_terms() {
        let e = read::<crate::recall::RecallRequest>("recall request", r#"{"intent":"x","max_chunks":"3"}"#);
        assert_eq!((e.code(), e.status()), ("invalid_request", 400));
        assert_eq!(e.to_string(), "invalid request: `max_chunks` in the recall request must be a whole number from 1 to 50, not a string");
        // the tool schema's range, not the storage type's, whatever was given
        for (body, given) in [(r#"{"intent":"x","max_chunks":-1}"#, "-1"), (r#"{"intent":"x","max_chunks":2.5}"#, "2.5"), (r#"{"intent":"x","max_chunks":4294967296}"#, "4294967296")] {
            let e = read::<crate::recall::RecallRequest>("recall request", body);
            assert_eq!(e.to_string(), format!("invalid request: `max_chunks` in the recall request must be a whole number from 1 to 50, not {given}"), "{body}");
        }
        let e = read::<crate::recall::RecallRequest>("recall request", r#"{"intent":"x","max_content":-3}"#);
        assert_eq!(e.to_string(), "invalid request: `max_content` in the recall request must be a whole number from 0 to 50, not -3");
        // null is the default, as before
        let r: crate::recall::RecallRequest = serde_json::from_str(r#"{"intent":"x","max_chunks":null,"max_content":null}"#).unwrap();
        assert_eq!((r.max_chunks, r.max_content), (None, None));
        let r: crate::recall::RecallRequest = serde_json::from_str(r#"{"intent":"x","max_chunks":7,"max_content":0}"#).unwrap();
        assert_eq!((r.max_chunks, r.max_content), (Some(7), Some(0)));
        let e = read::<crate::manifest::ValidateOptions>("validate options", r#"{"approvals":"all"}"#);
        assert_eq!(e.code(), "invalid_request");
        assert_eq!(e.to_string(), "invalid request: `approvals` in the validate options must be an object, not a string");
        let e = read::<crate::manifest::ValidateOptions>("validate options", r#"{"approvals":{"guarantee_load":"yes"}}"#);
        assert_eq!(e.to_string(), "invalid request: `approvals.guarantee_load` in the validate options must be true or false, not a string");
        // a deserializer's own message keeps its advice; an untagged form names no Rust enum
        let e = read::<crate::context::ContextRequest>("boot context request", r#"{"budgets": "task=lots"}"#);
        assert_eq!(e.to_string(), "invalid request: `budgets` in the boot context request: budget \"task=lots\": use SECTION=TOKENS, e.g. task=1500");
        let e = read::<crate::context::ContextRequest>("boot context request", r#"{"budgets": 5}"#);
        assert_eq!(e.to_string(), "invalid request: `budgets` in the boot context request is in none of the accepted forms");
        let e = read::<crate::manifest::ValidateOptions>("validate options", r#"{"approvals":{"guarantee_load":"yes"}}"#);
        let body = e.body();
        assert_eq!((body.code.as_str(), body.status), ("invalid_request", 400));
        assert!(!body.message.contains("line") && !body.message.contains("struct") && !body.message.contains("bool"), "{}", body.message);
    }
}
