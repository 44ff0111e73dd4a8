//! Federated facts and promotion requests (Spec-13, "Federation boundary": a fact from
//! another organisation or a federation peer arrives as content, in quarantine, and only
//! an admin's promotion can make it trusted).

use serde_json::Value;

use crate::ids::check_agent_id;
use crate::Refusal;

/// The schemes a federated fact's `origin` may have: another organisation, a federation peer.
pub const ORIGIN_SCHEMES: &[&str] = &["org", "federation"];

/// The `(name, content, origin)` of a federated fact submission.
pub fn federated_fields(body: &Value) -> Result<(&str, &str, &str), Refusal> {
    let s = |k: &str| body.get(k).and_then(Value::as_str).unwrap_or_default();
    let (name, content, origin) = (s("name"), s("content"), s("origin"));
    const SHAPE: &str = "send {\"name\": \"<unit-name>\", \"content\": \"…\", \"origin\": \"org:<sender>\"}";
    if check_agent_id(name).is_err() {
        return Err(Refusal::invalid_request(format!("`name` must be a unit name of 1-128 characters of [A-Za-z0-9._-]: {SHAPE}")));
    }
    if content.is_empty() {
        return Err(Refusal::invalid_request(format!("`content` must be the fact's text, a non-empty string: {SHAPE}")));
    }
    // Only the schemes of senders outside this service: an origin such as `user:bob`,
    // `admin:…` or `agent:…` would name a local principal, and a promoted fact's
    // `authored_by` (its origin, §21.4.3) would then say that principal wrote it.
    if origin.is_empty() || origin.len() > 256 || origin.chars().any(|c| c.is_whitespace() || crate::ids::is_hidden(c)) || !origin.split_once(':').is_some_and(|(scheme, name)| ORIGIN_SCHEMES.contains(&scheme) && !name.is_empty()) {
        return Err(Refusal::invalid_request("`origin` must name the sending organisation (\"org:<name>\") or federation peer (\"federation:<name>\"), without spaces or invisible characters: a federated fact comes from outside this service, so it cannot name one of its principals (user:, admin:, agent:)"));
    }
    Ok((name, content, origin))
}

/// The fields of a request body that ask for more trust than a federated fact has
/// (promotion, leaving quarantine, instruction interpretation, a trust score).
pub fn promotion_claims(body: &Value) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    for (k, v) in body.as_object().into_iter().flatten() {
        let asks = match k.as_str() {
            "promote" | "promoted" | "trusted" => v.as_bool() != Some(false) && !v.is_null(),
            "quarantine" | "quarantined" => v.as_bool() != Some(true),
            "interpret_as" => v.as_str() != Some("content"),
            "trust" | "source_trust" => !v.is_null(),
            _ => false,
        };
        if asks {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

/// The `fact_received_again` service event: the quarantined fact `uri` (identical text)
/// sent again from `origin`, another origin than the one it is held under (`held`). The
/// fact keeps its first origin, and the answer names that one; the event keeps who else
/// sent it, so no sender is lost from the record.
pub fn received_again(uri: &str, origin: &str, held: &str, entity_uri: &str) -> serde_json::Value {
    serde_json::json!({"uri": uri, "origin": origin, "held_origin": held, "entity_uri": entity_uri})
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn federated_submissions() {
        let ok = json!({"name": "tips", "content": "text", "origin": "org:other-co"});
        assert_eq!(federated_fields(&ok).unwrap(), ("tips", "text", "org:other-co"));
        for bad in [
            json!({"name": "a/b", "content": "x", "origin": "org:o"}),
            json!({"name": "a", "content": "", "origin": "org:o"}),
            json!({"name": "a", "content": "x", "origin": "no-scheme"}),
            json!({"name": "a", "content": "x", "origin": "org:two words"}),
            json!({"name": "a", "content": "x", "origin": "org:"}),
            json!({"name": "a", "content": "x", "origin": ":other-co"}),
            json!({"name": "a", "content": "x", "origin": "user:bob"}),
            json!({"name": "a", "content": "x", "origin": "agent:release-engineer"}),
            json!({"name": "a", "content": "x", "origin": "admin:key_01"}),
            json!({"name": "a", "content": "x", "origin": "ORG:other-co"}),
            json!({"name": "a", "content": "x", "origin": "org:oc-\u{202e}rehto"}),
            json!({"name": "a", "content": "x", "origin": "org:other\u{200b}-co"}),
            json!({"name": "a", "content": "x"}),
        ] {
            assert_eq!(federated_fields(&bad).unwrap_err().status, 400, "{bad}");
        }
    }

    #[test]
    fn promotion_claims_name_only_what_asks_for_trust() {
        let body = json!({"promote": true, "quarantined": false, "interpret_as": "instruction", "trust": 0.9, "name": "x", "trusted": false, "quarantine": true});
        let claims = promotion_claims(&body);
        assert_eq!(claims.keys().collect::<Vec<_>>(), ["promote", "quarantined", "interpret_as", "trust"]);
        assert!(promotion_claims(&json!({"interpret_as": "content", "promote": null})).is_empty());
        assert!(promotion_claims(&json!("not an object")).is_empty());
    }

    #[test]
    fn an_origin_may_be_256_characters_and_no_more() {
        let origin = |n: usize| format!("org:{}", "x".repeat(n - 4));
        let at_most = json!({"name": "tips", "content": "text", "origin": origin(256)});
        assert_eq!(federated_fields(&at_most).unwrap().2.len(), 256);
        let over = json!({"name": "tips", "content": "text", "origin": origin(257)});
        assert_eq!(federated_fields(&over).unwrap_err().code, "invalid_request");
    }

    /// The identical fact sent again from another origin: the event names both origins and
    /// who sent it, so no sender is lost from the record.
    #[test]
    fn a_fact_received_again_records_both_origins() {
        assert_eq!(
            received_again("quarantine:d/a/tips/v1", "org:b", "org:a", "admin:key_01"),
            json!({"uri": "quarantine:d/a/tips/v1", "origin": "org:b", "held_origin": "org:a", "entity_uri": "admin:key_01"})
        );
    }
}
