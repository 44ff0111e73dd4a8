//! What the two HTTP hosts of lid share — `lid serve` (wasmtime, SQLite) and the
//! Cloudflare worker (workers-rs, KV + D1): the checks a request body must pass and the
//! shapes of rows and entries, none of which does I/O. Each host maps a [`Refusal`] to its
//! own error type (the same `{"error": {code, status, message}}` body, README "Errors").
//!
//! - [`attest`]: the org key's signature on every stored fact, checked on every read (§21.4.3);
//! - [`access`]: who may do what: the caller's role and capabilities, the route checks
//!   (§21.4.4–5, S9, Spec-13);
//! - [`json`]: a request body as one JSON object, each field given once;
//! - [`ids`]: agent ids and the org manifest's supervision pairs (§21.4.5, S9);
//! - [`federation`]: federated facts and promotion requests (Spec-13);
//! - [`publish`]: the coverage gate's verdict and the publish provenance (§21.8.3, S7);
//! - [`recertify`]: re-certifying published manifests through the gate (§21.8.3, S10);
//! - [`heartbeat`]: the heartbeat response (§21.1, §21.1.5, S1) and handoff addressing;
//! - [`coverage`]: the coverage route's report (§21.8.6, S11);
//! - [`audit`]: one `instruction_audit` row as the engine writes it (§21.5.1, §21.7);
//! - [`time`]: Unix ms as the ISO 8601 the APIs print;
//! - [`packs`]: an uploaded knowledge pack's catalog entry (the agent knowledge runtime spec);
//! - [`units`]: unit writes and promotions: the request, the next version, the chain's rules (§21.4.1, Spec-13).

pub mod access;
pub mod attest;
pub mod audit;
pub mod coverage;
pub mod federation;
pub mod heartbeat;
pub mod ids;
pub mod json;
pub mod packs;
pub mod publish;
pub mod recertify;
pub mod time;
pub mod units;

/// A request refused by a check here: an HTTP status, a §21.9 (or documented lid) code and
/// an actionable message.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub status: u16,
    pub code: std::borrow::Cow<'static, str>,
    pub message: String,
    /// JSON the error body carries as `details` (`null` when there is nothing more).
    pub details: Box<serde_json::Value>,
}

impl Refusal {
    pub fn new(status: u16, code: impl Into<std::borrow::Cow<'static, str>>, message: impl Into<String>) -> Self {
        Refusal { status, code: code.into(), message: message.into(), details: Box::default() }
    }

    /// A 400 `invalid_request`.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(400, "invalid_request", message)
    }

    /// A 400 `invalid_json`.
    pub fn invalid_json(e: impl std::fmt::Display) -> Self {
        Self::new(400, "invalid_json", format!("the request body is not the expected JSON: {e}"))
    }

    /// A 404 `manifest_not_found`: the agent has published nothing yet.
    pub fn manifest_not_found(agent: &str) -> Self {
        Self::new(404, "manifest_not_found", format!("agent {agent:?} has no instruction manifest: publish one with PUT /v1/agents/{agent}/instruction-manifest"))
    }

    /// A 503 `storage_unavailable` (retryable): the host's database failed outside the
    /// recall path.
    pub fn storage_unavailable(e: impl std::fmt::Display) -> Self {
        Self::new(503, "storage_unavailable", format!("the database could not be used; retry later ({e})")).with_details(serde_json::json!({"retryable": true}))
    }

    /// A 503 `recall_backend_unavailable` (§21.9, retryable): the facts the engine needs
    /// cannot be read.
    pub fn backend_unavailable(e: impl std::fmt::Display) -> Self {
        Self::new(503, "recall_backend_unavailable", format!("the instruction fact store cannot be read; retry later ({e})")).with_details(serde_json::json!({"retryable": true}))
    }

    /// A 413 `request_too_large`: a body over `limit` bytes (both hosts take 8 MiB).
    pub fn too_large(limit: usize) -> Self {
        Self::new(413, "request_too_large", format!("the request body is over {} MiB; send less (a knowledge pack can be split into packs)", limit >> 20))
    }

    pub fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = Box::new(details);
        self
    }

    /// The error body (README "Errors").
    pub fn body(&self) -> serde_json::Value {
        error_body(self.status, &self.code, &self.message, &self.details)
    }
}

/// Declares a host's error type: a newtype around [`Refusal`] that dereferences to it,
/// with the constructors both hosts share. A newtype rather than the refusal itself,
/// because each host implements its framework's response conversion for it, which the
/// orphan rule forbids on a type of this crate. The host adds its own constructors (its
/// storage and engine failures) and that conversion.
#[macro_export]
macro_rules! host_error {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name(pub $crate::Refusal);

        impl ::std::ops::Deref for $name {
            type Target = $crate::Refusal;
            fn deref(&self) -> &$crate::Refusal {
                &self.0
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Display::fmt(&self.0, f)
            }
        }

        impl ::std::error::Error for $name {}

        impl ::std::convert::From<$crate::Refusal> for $name {
            fn from(r: $crate::Refusal) -> Self {
                $name(r)
            }
        }

        impl $name {
            pub fn new(status: u16, code: impl ::std::convert::Into<::std::borrow::Cow<'static, str>>, message: impl ::std::convert::Into<String>) -> Self {
                $name($crate::Refusal::new(status, code, message))
            }

            pub fn with_details(self, details: ::serde_json::Value) -> Self {
                $name(self.0.with_details(details))
            }

            /// A 400 with `code`.
            pub fn bad_request(code: impl ::std::convert::Into<::std::borrow::Cow<'static, str>>, message: impl ::std::convert::Into<String>) -> Self {
                Self::new(400, code, message)
            }

            pub fn invalid_json(e: impl ::std::fmt::Display) -> Self {
                $name($crate::Refusal::invalid_json(e))
            }

            pub fn scope_denied(agent: &str) -> Self {
                $name($crate::access::scope_denied(agent))
            }

            pub fn manifest_not_found(agent: &str) -> Self {
                $name($crate::Refusal::manifest_not_found(agent))
            }
        }
    };
}

/// The headers of `GET …/boot-stub` (§21.8.1): `X-Stub-Version`, `X-Manifest-Version` and
/// `X-Token-Count` as the spec names them, and an `ETag` of the body's SHA-256, which
/// changes whenever the text does (an always-applicable unit's new version changes the
/// stub under the same manifest version), so a runtime that caches it can tell.
pub fn boot_stub_headers(body: &str, manifest_version: String, tokens: i64, stub_version: i64) -> [(&'static str, String); 4] {
    use sha2::{Digest, Sha256};
    let etag = format!("\"{}\"", attest::hex(&Sha256::digest(body.as_bytes())));
    [("x-stub-version", stub_version.to_string()), ("x-manifest-version", manifest_version), ("x-token-count", tokens.to_string()), ("etag", etag)]
}

/// Whether an `Accept` header (its bytes, as sent) asks for Markdown: its first media
/// type is `text/markdown`, in any case (RFC 9110 §8.3.1: type and subtype are
/// case-insensitive), whatever bytes follow it (a quoted parameter may hold obs-text,
/// which `lid serve` read as no header at all where the worker read Markdown).
pub fn accepts_markdown(accept: &[u8]) -> bool {
    const MARKDOWN: &[u8] = b"text/markdown";
    let a = accept.trim_ascii_start();
    a.len() >= MARKDOWN.len() && a[..MARKDOWN.len()].eq_ignore_ascii_case(MARKDOWN)
}

/// The error body both hosts answer with (README "Errors"); [`Refusal::body`].
pub fn error_body(status: u16, code: &str, message: &str, details: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({"error": {"code": code, "status": status, "message": message, "details": details}})
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for Refusal {}

/// A list of strings given as a JSON array, or as the JSON text of one (a TEXT column read
/// back from D1); anything else is empty.
pub(crate) fn string_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    use serde::Deserialize;
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => serde_json::from_str(&s).unwrap_or_default(),
        serde_json::Value::Array(a) => a.into_iter().filter_map(|x| x.as_str().map(str::to_string)).collect(),
        _ => vec![],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// README "Errors": `{"error": {code, status, message, details}}`, and the refusal
    /// displayed as its code and message (what the hosts log).
    #[test]
    fn markdown_is_asked_for_by_the_first_media_type_in_any_case_and_with_any_bytes_after_it() {
        for yes in [&b"text/markdown"[..], b"Text/Markdown; charset=utf-8", b"  text/markdown", b"text/markdown; charset=\"\xc3\xa9\"", b"TEXT/MARKDOWN, application/json"] {
            assert!(accepts_markdown(yes), "{}", String::from_utf8_lossy(yes));
        }
        for no in [&b""[..], b"application/json", b"text/mark", b"application/json, text/markdown", b"*/*", b"text/html\xff"] {
            assert!(!accepts_markdown(no), "{}", String::from_utf8_lossy(no));
        }
    }

    #[test]
    fn a_refusal_is_answered_as_the_error_body_and_shown_as_code_and_message() {
        let r = Refusal::new(409, "manifest_version_conflict", "v1 is published").with_details(serde_json::json!({"retryable": true}));
        assert_eq!(r.body(), serde_json::json!({"error": {"code": "manifest_version_conflict", "status": 409, "message": "v1 is published", "details": {"retryable": true}}}));
        assert_eq!(Refusal::invalid_request("x").body()["error"]["details"], serde_json::Value::Null);
        assert_eq!(r.to_string(), "manifest_version_conflict: v1 is published");
    }
}
