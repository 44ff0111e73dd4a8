//! Handoffs: a coordination-protocol handoff message (JSON) composed into the Session
//! layer of the boot context (Markdown), and back.
//!
//! Implements the translation proposed in `../shared/spec/boot-context-discussion.txt`
//! ("Integration with coordination protocols"): `task` → "Current Task", `from_agent` +
//! `task_id` → handoff metadata, `context` → "Context" (paths also listed under
//! "References", loaded on demand), `status` + `created_at` → "Status", plus a log line
//! ("Received handoff: …") and placeholders for open questions and next steps.
//!
//! The mapping is mechanical and reversible: [`parse_session`] of [`render_session`]
//! gives back the same handoff. A scalar that would not survive a Markdown line (a line
//! break, edge whitespace, text that reads as JSON) is written as a JSON string; a
//! context or metadata value that is not a plain string is written as JSON. Derived
//! parts (the log line, references, placeholders) are ignored when parsing.
//!
//! `context` and `metadata` are kept with their keys sorted, at every depth: a JSON
//! object's key order means nothing (RFC 8259), so one handoff sent by two serializers
//! (or by one that iterates a hash map) composes the same Session and boot-context bundle.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Status values a handoff may carry.
pub const STATUSES: &[&str] = &["pending", "accepted", "in-progress", "blocked", "completed", "failed", "rejected", "cancelled"];

const FIELDS: &[&str] = &["task_id", "from_agent", "to_agent", "task", "context", "status", "created_at", "metadata"];

/// A validated handoff message, fields in their canonical order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Handoff {
    pub task_id: String,
    pub from_agent: String,
    pub to_agent: String,
    pub task: String,
    pub context: Map<String, Value>,
    pub status: String,
    pub created_at: String,
    pub metadata: Map<String, Value>,
}

/// One problem with a handoff; every problem is reported at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffProblem {
    pub field: String,
    pub message: String,
}

/// Why a handoff (or a Session document) was rejected: code `handoff_invalid` (400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .problems.iter().map(|p| format!("`{}`: {}", p.field, p.message)).collect::<Vec<_>>().join("; "))]
pub struct HandoffError {
    pub problems: Vec<HandoffProblem>,
}

fn problem(field: &str, message: impl Into<String>) -> HandoffProblem {
    HandoffProblem { field: field.to_string(), message: message.into() }
}

/// RFC 3339, a real date and offset: the manifest's check (`2026-02-31` and `+99:99` are not).
pub use crate::manifest::is_rfc3339;

/// The largest handoff message taken, in bytes of JSON: the Session layer it becomes has a
/// 1000-token budget (`crate::context::SECTIONS`), so far larger messages carry nothing
/// the boot context could show, and cost every boot context that reads them.
pub const HANDOFF_MAX_BYTES: usize = 64 << 10;

/// The longest `task`, in bytes: it is the boot context's default knowledge query, held to
/// the recall intent's limit.
pub const TASK_MAX_BYTES: usize = 8192;

/// Validate a handoff message (JSON text), reporting every problem at once.
pub fn parse_handoff(json: &str) -> Result<Handoff, HandoffError> {
    if json.len() > HANDOFF_MAX_BYTES {
        return Err(HandoffError {
            problems: vec![problem("(body)", format!("the handoff is {} bytes; the limit is {HANDOFF_MAX_BYTES}: the Session layer shows at most 1000 tokens of it, so send a summary and reference large material by path in `context`", json.len()))],
        });
    }
    let v: Value = serde_json::from_str(json).map_err(|e| HandoffError { problems: vec![problem("(body)", format!("not valid JSON: {e}"))] })?;
    from_value(&v)
}

fn from_value(v: &Value) -> Result<Handoff, HandoffError> {
    let Some(obj) = v.as_object() else {
        return Err(HandoffError { problems: vec![problem("(body)", "a handoff must be a JSON object")] });
    };
    let mut problems = Vec::new();
    for k in obj.keys() {
        if !FIELDS.contains(&k.as_str()) {
            let field = if k.is_empty() { "\"\"" } else { k.as_str() };
            problems.push(problem(field, format!("unknown field; a handoff has exactly {}", FIELDS.join(", "))));
        }
    }
    let mut text = |k: &str| -> String {
        match obj.get(k) {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(Value::String(_)) => {
                problems.push(problem(k, "must not be empty"));
                String::new()
            }
            None | Some(Value::Null) => {
                problems.push(problem(k, "is required"));
                String::new()
            }
            Some(_) => {
                problems.push(problem(k, "must be a string"));
                String::new()
            }
        }
    };
    let (task_id, from_agent, to_agent, task, status, created_at) = (text("task_id"), text("from_agent"), text("to_agent"), text("task"), text("status"), text("created_at"));
    if !status.is_empty() && !STATUSES.contains(&status.as_str()) {
        problems.push(problem("status", format!("{status:?} is not one of {}", STATUSES.join(", "))));
    }
    if !created_at.is_empty() && !is_rfc3339(&created_at) {
        problems.push(problem("created_at", format!("{created_at:?} is not an RFC 3339 time such as 2026-02-01T10:00:00Z")));
    }
    let mut object = |k: &str| match obj.get(k) {
        None | Some(Value::Null) => Map::new(),
        // keys in order, at every depth: see the module doc
        Some(Value::Object(m)) => {
            let mut v = Value::Object(m.clone());
            v.sort_all_objects();
            match v {
                Value::Object(m) => m,
                _ => Map::new(),
            }
        }
        Some(_) => {
            problems.push(problem(k, "must be a JSON object"));
            Map::new()
        }
    };
    let (context, metadata) = (object("context"), object("metadata"));
    if task.len() > TASK_MAX_BYTES {
        problems.push(problem("task", format!("is {} bytes; the limit is {TASK_MAX_BYTES} (it is the boot context's default query): state the task in a few sentences and put the details in `context`", task.len())));
    }
    // The admission lint's rule for units (README "Admission lint"): a handoff is shown to
    // the receiving agent in its boot context as it is.
    for (k, t) in [("task_id", &task_id), ("from_agent", &from_agent), ("to_agent", &to_agent), ("task", &task), ("status", &status), ("created_at", &created_at)] {
        if let Some(p) = hidden_in(k, t) {
            problems.push(p);
        }
    }
    for (k, m) in [("context", &context), ("metadata", &metadata)] {
        if let Some(p) = m.iter().find_map(|(key, v)| hidden_in(&format!("{k}.{key}"), key).or_else(|| hidden_in_value(&format!("{k}.{key}"), v))) {
            problems.push(p);
        }
    }
    if !problems.is_empty() {
        return Err(HandoffError { problems });
    }
    Ok(Handoff { task_id, from_agent, to_agent, task, context, status, created_at, metadata })
}

/// `field`'s text holding a character the admission lint refuses in units
/// ([`crate::lint::hidden_character`]), as a problem naming it and where it is.
fn hidden_in(field: &str, text: &str) -> Option<HandoffProblem> {
    let (at, c, what) = crate::lint::hidden_character(text)?;
    Some(problem(field, format!("holds {what} (U+{:04X}, character {at}): remove it; the handoff is shown to the receiving agent as it is, and units are refused for the same characters", c as u32)))
}

/// The first string (key or value) in `v` that [`hidden_in`] refuses.
fn hidden_in_value(field: &str, v: &Value) -> Option<HandoffProblem> {
    match v {
        Value::String(s) => hidden_in(field, s),
        Value::Array(a) => a.iter().find_map(|x| hidden_in_value(field, x)),
        Value::Object(o) => o.iter().find_map(|(k, x)| hidden_in(field, k).or_else(|| hidden_in_value(field, x))),
        _ => None,
    }
}

/// A scalar written as is when it reads back the same from one Markdown line.
fn plain(s: &str) -> bool {
    !s.is_empty() && s.trim() == s && !s.contains(['\n', '\r']) && !s.starts_with('"') && serde_json::from_str::<Value>(s).is_err()
}

fn scalar(s: &str) -> String {
    if plain(s) {
        s.to_string()
    } else {
        Value::String(s.to_string()).to_string()
    }
}

fn unscalar(s: &str) -> Result<String, String> {
    if s.starts_with('"') {
        serde_json::from_str::<String>(s).map_err(|e| format!("{s:?} is not a JSON string: {e}"))
    } else {
        Ok(s.to_string())
    }
}

fn key(k: &str) -> String {
    if !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/')) {
        k.to_string()
    } else {
        Value::String(k.to_string()).to_string()
    }
}

fn value(v: &Value) -> String {
    match v {
        Value::String(s) if plain(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A context value that names a file to load on demand (the Reference layer).
fn reference(v: &Value) -> Option<&str> {
    let s = v.as_str()?;
    let looks_like_path = !s.contains(char::is_whitespace) && !s.contains("://") && (s.contains('/') || s.rsplit_once('.').is_some_and(|(a, e)| !a.is_empty() && (1..=5).contains(&e.len()) && e.bytes().all(|b| b.is_ascii_alphanumeric())));
    looks_like_path.then_some(s)
}

fn map_lines(out: &mut String, m: &Map<String, Value>) {
    if m.is_empty() {
        out.push_str("- (none)\n");
    }
    for (k, v) in m {
        out.push_str(&format!("- {}: {}\n", key(k), value(v)));
    }
}

/// The Session Markdown for a handoff (deterministic; see the module doc).
pub fn render_session(h: &Handoff) -> String {
    let mut out = String::from("# Session\n\n## Current Task\n");
    out.push_str(&format!("Handoff from: {}\nHandoff to: {}\nTask ID: {}\nTask: {}\n", scalar(&h.from_agent), scalar(&h.to_agent), scalar(&h.task_id), scalar(&h.task)));
    out.push_str("\n## Context\n");
    map_lines(&mut out, &h.context);
    let refs: Vec<(&String, &str)> = h.context.iter().filter_map(|(k, v)| reference(v).map(|p| (k, p))).collect();
    if !refs.is_empty() {
        out.push_str("\n## References\n");
        for (k, p) in refs {
            out.push_str(&format!("- {p} (from context `{}`, load on demand)\n", key(k)));
        }
    }
    out.push_str(&format!("\n## Status\nReceived handoff at {}\nStatus: {}\n", scalar(&h.created_at), scalar(&h.status)));
    out.push_str("\n## Metadata\n");
    map_lines(&mut out, &h.metadata);
    out.push_str(&format!("\n## Log\n- {} Received handoff: {} from {}\n", scalar(&h.created_at), scalar(&h.task_id), scalar(&h.from_agent)));
    out.push_str("\n## Open Questions\n- (none yet)\n\n## Next Steps\n- (to be decided by the receiving agent)\n");
    out
}

/// Read a Session document written by [`render_session`] back into the handoff.
pub fn parse_session(markdown: &str) -> Result<Handoff, HandoffError> {
    let mut obj = Map::new();
    let mut problems = Vec::new();
    let mut section = "";
    let mut maps: [(&str, Map<String, Value>); 2] = [("context", Map::new()), ("metadata", Map::new())];
    for (n, line) in markdown.lines().enumerate() {
        let at = |m: String| problem(&format!("line {}", n + 1), m);
        if let Some(h) = line.strip_prefix("## ") {
            section = h.trim();
            continue;
        }
        let mut set = |field: &str, raw: &str, problems: &mut Vec<HandoffProblem>| match unscalar(raw) {
            Ok(s) => {
                obj.insert(field.to_string(), Value::String(s));
            }
            Err(e) => problems.push(at(e)),
        };
        match section {
            "Current Task" => {
                for (prefix, field) in [("Handoff from: ", "from_agent"), ("Handoff to: ", "to_agent"), ("Task ID: ", "task_id"), ("Task: ", "task")] {
                    if let Some(rest) = line.strip_prefix(prefix) {
                        set(field, rest, &mut problems);
                    }
                }
            }
            "Status" => {
                if let Some(rest) = line.strip_prefix("Received handoff at ") {
                    set("created_at", rest, &mut problems);
                } else if let Some(rest) = line.strip_prefix("Status: ") {
                    set("status", rest, &mut problems);
                }
            }
            "Context" | "Metadata" => {
                let Some(item) = line.strip_prefix("- ") else { continue };
                if item == "(none)" {
                    continue;
                }
                let parsed = if item.starts_with('"') {
                    // A quoted key: the JSON string, then `: `.
                    let mut de = serde_json::Deserializer::from_str(item).into_iter::<String>();
                    match de.next() {
                        Some(Ok(k)) => item[de.byte_offset()..].strip_prefix(": ").map(|v| (k, v)),
                        _ => None,
                    }
                } else {
                    item.split_once(": ").map(|(k, v)| (k.to_string(), v))
                };
                let Some((k, raw)) = parsed else {
                    problems.push(at(format!("{item:?} is not `- key: value`")));
                    continue;
                };
                let v = serde_json::from_str::<Value>(raw).unwrap_or_else(|_| Value::String(raw.to_string()));
                let slot = if section == "Context" { &mut maps[0].1 } else { &mut maps[1].1 };
                slot.insert(k, v);
            }
            _ => {}
        }
    }
    for (field, m) in maps {
        obj.insert(field.to_string(), Value::Object(m));
    }
    if !problems.is_empty() {
        return Err(HandoffError { problems });
    }
    from_value(&Value::Object(obj))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Value {
        json!({
            "task_id": "abc-123", "from_agent": "researcher", "to_agent": "reviewer",
            "task": "Review security implications of API changes",
            "context": {"analysis_doc": "research/api-analysis.md", "priority": 2, "notes": "line one\nline two", "odd key: x": [1, {"a": null}], "quoted": "\"hi\"", "number-like": "42", "blank": ""},
            "status": "pending", "created_at": "2026-02-01T10:00:00Z", "metadata": {"trace": {"id": "t-1"}}
        })
    }

    #[test]
    fn json_to_markdown_to_json_is_the_same_object() {
        let h = from_value(&sample()).expect("valid");
        let md = render_session(&h);
        assert!(md.contains("## Current Task\nHandoff from: researcher\n"), "{md}");
        assert!(md.contains("Task: Review security implications of API changes\n"));
        assert!(md.contains("- analysis_doc: research/api-analysis.md\n"));
        assert!(md.contains("## References\n- research/api-analysis.md (from context `analysis_doc`, load on demand)\n"));
        assert!(md.contains("- 2026-02-01T10:00:00Z Received handoff: abc-123 from researcher\n"));
        assert!(md.contains("- number-like: \"42\"\n"), "strings that read as JSON are quoted: {md}");
        let back = parse_session(&md).expect("parses back");
        assert_eq!(back, h);
        assert_eq!(serde_json::to_value(&back).unwrap(), sample());
        assert_eq!(render_session(&back), md, "rendering is deterministic");
    }

    /// The same handoff with its objects' keys in another order renders byte for byte the
    /// same Session, its keys sorted at every depth.
    #[test]
    fn key_order_does_not_reach_the_session() {
        let forward = sample();
        let reversed = |m: &Value| Value::Object(m.as_object().unwrap().iter().rev().map(|(k, v)| (k.clone(), v.clone())).collect());
        let mut backward = forward.clone();
        backward["context"] = reversed(&forward["context"]);
        backward["metadata"] = json!({"trace": {"z": 1, "id": "t-1"}, "a": 0});
        let mut forward2 = forward.clone();
        forward2["metadata"] = json!({"a": 0, "trace": {"id": "t-1", "z": 1}});
        let (a, b) = (render_session(&from_value(&forward2).unwrap()), render_session(&from_value(&backward).unwrap()));
        assert_eq!(a, b);
        assert!(a.contains("## Context\n- analysis_doc: research/api-analysis.md\n- blank: \"\"\n- notes: "), "{a}");
        assert!(a.contains("- a: 0\n- trace: {\"id\":\"t-1\",\"z\":1}\n"), "{a}");
    }

    #[test]
    fn floats_survive_the_round_trip() {
        // Fuzz regression: without correctly rounded float parsing, 2.555555555555555e+90
        // re-read from its printed form was a different f64, so Markdown → JSON differed.
        let mut v = sample();
        v["context"] = serde_json::from_str(r#"{"n": [0, 2.555555555555555e+90, 0.1, 1e-300, 123456789.123456789]}"#).unwrap();
        let h = from_value(&v).expect("valid");
        assert_eq!(parse_session(&render_session(&h)).expect("parses"), h);
    }

    #[test]
    fn multi_line_and_edge_whitespace_scalars_survive() {
        let mut v = sample();
        v["task"] = json!("  Fix it\n\nthen report ");
        v["to_agent"] = json!("Reviewer: Alice");
        v["context"] = json!({});
        v["metadata"] = json!({});
        let h = from_value(&v).expect("valid");
        let md = render_session(&h);
        assert!(md.contains("## Context\n- (none)\n"));
        assert_eq!(parse_session(&md).expect("parses"), h);
    }

    #[test]
    fn every_problem_is_reported_with_its_field() {
        let err = parse_handoff(r#"{"task_id":"","from_agent":3,"task":"x","status":"done","created_at":"yesterday","context":[],"extra":1}"#).unwrap_err();
        let fields: Vec<&str> = err.problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, vec!["extra", "task_id", "from_agent", "to_agent", "status", "created_at", "context"]);
        assert!(err.to_string().contains("`to_agent`: is required"));
        assert!(parse_handoff("nope").is_err());
        // Fuzz regression: an empty unknown key is still named.
        let empty_key = parse_handoff(r#"{"":1}"#).unwrap_err();
        assert_eq!(empty_key.problems[0].field, "\"\"");
        assert!(parse_handoff("[]").is_err());
    }

    #[test]
    fn hidden_characters_and_oversized_handoffs_are_refused() {
        let mut v = sample();
        v["task"] = json!("Roll back \u{202e}gnirts\u{202c} now");
        v["context"] = json!({"note": ["ok", {"deep": "x\u{2066}y"}], "tab\tkey": "fine\tand\nlines"});
        v["metadata"] = json!({"z\u{200b}w": 1});
        let err = from_value(&v).unwrap_err();
        let fields: Vec<&str> = err.problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, vec!["task", "context.note", "metadata.z\u{200b}w"], "{err}");
        assert!(err.problems[0].message.contains("U+202E, character 11"), "{err}");
        // tabs and line breaks stay allowed, as in units
        let mut ok = sample();
        ok["task"] = json!("Fix it\n\tthen report");
        assert!(from_value(&ok).is_ok());

        let mut long = sample();
        long["task"] = json!("word ".repeat(TASK_MAX_BYTES / 5 + 1));
        assert_eq!(from_value(&long).unwrap_err().problems[0].field, "task");
        let mut huge = sample();
        huge["context"] = json!({"blob": "x".repeat(HANDOFF_MAX_BYTES)});
        let err = parse_handoff(&huge.to_string()).unwrap_err();
        assert!(err.problems[0].field == "(body)" && err.problems[0].message.contains("the limit is 65536"), "{err}");
    }

    #[test]
    fn rfc3339_times() {
        for ok in ["2026-02-01T10:00:00Z", "2026-02-01T10:00:00.123+02:00", "2026-12-31t23:59:60z"] {
            assert!(is_rfc3339(ok), "{ok}");
        }
        for bad in ["2026-02-01", "2026-13-01T10:00:00Z", "2026-02-01T10:00:00", "2026-02-01T10:00:00.Z", "2026-02-01T10:00:00+0200", "2026-02-01T10:00:00Zjunk", "2026-02-31T10:00:00Z", "2026-01-01T10:00:00+99:99"] {
            assert!(!is_rfc3339(bad), "{bad}");
        }
    }

    #[test]
    fn a_broken_session_document_is_an_error_not_a_guess() {
        let md = render_session(&from_value(&sample()).unwrap()).replace("- priority: 2", "- priority 2");
        let err = parse_session(&md).unwrap_err();
        assert!(err.problems[0].field.starts_with("line "), "{err}");
        let missing = render_session(&from_value(&sample()).unwrap()).replace("Task ID: abc-123\n", "");
        assert_eq!(parse_session(&missing).unwrap_err().problems[0].field, "task_id");
    }

    /// The limits are inclusive: a message of exactly 64 KiB and a `task` of exactly
    /// 8192 bytes are taken; a byte more is refused.
    #[test]
    fn a_handoff_of_exactly_64_kib_and_a_task_of_exactly_8192_bytes_are_taken() {
        let mut v = sample();
        v["context"] = json!({"blob": ""});
        let pad = HANDOFF_MAX_BYTES - v.to_string().len();
        v["context"]["blob"] = json!("x".repeat(pad));
        assert_eq!(v.to_string().len(), HANDOFF_MAX_BYTES);
        assert!(parse_handoff(&v.to_string()).is_ok());
        v["context"]["blob"] = json!("x".repeat(pad + 1));
        assert_eq!(parse_handoff(&v.to_string()).unwrap_err().problems[0].field, "(body)");
        let mut t = sample();
        t["task"] = json!("x".repeat(TASK_MAX_BYTES));
        assert!(from_value(&t).is_ok());
        t["task"] = json!("x".repeat(TASK_MAX_BYTES + 1));
        assert_eq!(from_value(&t).unwrap_err().problems[0].field, "task");
    }

    /// A context value is listed under References (loaded on demand) when it reads as a
    /// path: one token, no URL, with a `/` or a short alphanumeric extension.
    #[test]
    fn context_values_that_read_as_paths_are_references() {
        for yes in ["docs/login.md", "README.md", "archive.tar.gz", "src/", "notes.txt5"] {
            assert_eq!(reference(&json!(yes)), Some(yes), "{yes}");
        }
        for no in ["https://example.com/a.md", "see docs/login.md", "notes.markdown", ".env", "a.b-c", "plain words", "nodot"] {
            assert_eq!(reference(&json!(no)), None, "{no}");
        }
        assert_eq!(reference(&json!(2)), None);
        let mut v = sample();
        v["context"] = json!({"spec": "docs/login.md", "url": "https://example.com/a.md", "why": "it broke"});
        let md = render_session(&from_value(&v).unwrap());
        assert!(md.contains("## References\n- docs/login.md (from context `spec`, load on demand)\n\n## Status"), "{md}");
        v["context"] = json!({"why": "it broke"});
        assert!(!render_session(&from_value(&v).unwrap()).contains("## References"));
    }
}
