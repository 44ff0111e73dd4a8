//! Agent ids and the org manifest's supervision pairs (§21.4.5, S9: a declared supervisor
//! may read its reports' instructions).

use serde_json::Value;

use crate::Refusal;

/// What `c` is, when it changes how a one-line value reads without being seen or breaks
/// the line where a reader would not: a line break (LF, CR, VT, FF, NEL and the Unicode
/// line and paragraph separators), another control character, a bidirectional control,
/// a variation selector, a tag character, a Hangul filler or another invisible format or
/// default-ignorable character. These are the characters the admission lint refuses in
/// unit text (`guest/src/lint.rs`, which tests this list against Unicode's Cf set),
/// without the lint's allowances for ZWNJ and ZWJ in joining scripts and emoji, for
/// directional marks in right-to-left text and for variation sequences: an id, label or
/// origin is a name, not prose, and a reader comparing two cannot see them.
pub fn hidden_kind(c: char) -> Option<&'static str> {
    Some(match c {
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}' => "a line break",
        c if c.is_control() => "a control character",
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => "a bidirectional control character",
        '\u{200B}'..='\u{200D}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}' | '\u{00AD}' | '\u{180E}' => "a zero-width character",
        '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}' | '\u{180B}'..='\u{180D}' | '\u{180F}' => "a variation selector",
        '\u{E0000}'..='\u{E007F}' => "a Unicode tag character",
        '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' => "a Hangul filler",
        '\u{FFF9}'..='\u{FFFB}' => "an interlinear annotation character",
        // the rest of Cf (but the visible prepended concatenation marks) and of Default_Ignorable_Code_Point
        '\u{034F}' | '\u{17B4}' | '\u{17B5}' | '\u{2065}'..='\u{206F}' | '\u{FFF0}'..='\u{FFF8}' | '\u{13430}'..='\u{1343F}' | '\u{1BCA0}'..='\u{1BCA3}' | '\u{1D173}'..='\u{1D17A}' | '\u{E0080}'..='\u{E00FF}' | '\u{E01F0}'..='\u{E0FFF}' => {
            "an invisible format character"
        }
        _ => return None,
    })
}

/// Whether a one-line value may not hold `c` ([`hidden_kind`]).
pub fn is_hidden(c: char) -> bool {
    hidden_kind(c).is_some()
}

/// The first character of `s` that [`hidden_kind`] names, as "U+XXXX (what it is) at
/// character N" (1-based), for a refusal that says what to remove.
pub fn hidden_in(s: &str) -> Option<String> {
    s.chars().enumerate().find_map(|(i, c)| hidden_kind(c).map(|what| format!("U+{:04X} ({what}) at character {}", c as u32, i + 1)))
}

/// An agent id (or deployment, pack or unit name): 1–128 of `[A-Za-z0-9._-]`, not `.` or `..`.
pub fn check_agent_id(a: &str) -> Result<(), Refusal> {
    let ok = !a.is_empty() && a.len() <= 128 && a.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) && a != "." && a != "..";
    if ok {
        Ok(())
    } else {
        Err(Refusal::invalid_request(format!("agent id {a:?} must be 1-128 characters of letters, digits, '.', '_' or '-'")))
    }
}

/// The (supervisor, report) pairs of an org manifest, `{"agents": [{"agent_id",
/// "supervises": [..]}]}` and/or `{"supervisors": {"boss": ["a", "b"]}}`, in document
/// order; every field of its type, every id checked, nobody supervising itself. The org
/// manifest replaces the supervision in force, so a malformed one is refused whole.
pub fn org_pairs(org: &Value) -> Result<Vec<(String, String)>, Refusal> {
    let shape = |what: &str| Refusal::invalid_request(format!("{what}; an org manifest is {{\"agents\": [{{\"agent_id\": \"boss\", \"supervises\": [\"a\", \"b\"]}}]}} and/or {{\"supervisors\": {{\"boss\": [\"a\", \"b\"]}}}}"));
    let Some(obj) = org.as_object() else {
        return Err(shape("the org manifest must be a JSON object"));
    };
    if let Some(k) = obj.keys().find(|k| !["agents", "supervisors"].contains(&k.as_str())) {
        return Err(shape(&format!("unknown field `{k}`")));
    }
    if obj.is_empty() {
        return Err(shape("the org manifest names no agents"));
    }
    let ids = |v: Option<&Value>, at: &str| -> Result<Vec<String>, Refusal> {
        match v {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => a.iter().map(|r| r.as_str().map(str::to_string).ok_or_else(|| shape(&format!("`{at}` must list agent ids as strings, not {r}")))).collect(),
            Some(other) => Err(shape(&format!("`{at}` must be a list of agent ids, not {other}"))),
        }
    };
    let mut pairs: Vec<(String, String)> = Vec::new();
    match obj.get("agents") {
        None => {}
        Some(Value::Array(agents)) => {
            for (i, a) in agents.iter().enumerate() {
                let Some(entry) = a.as_object() else {
                    return Err(shape(&format!("`agents[{i}]` must be an object, not {a}")));
                };
                if let Some(k) = entry.keys().find(|k| !["agent_id", "supervises"].contains(&k.as_str())) {
                    return Err(shape(&format!("unknown field `agents[{i}].{k}`")));
                }
                let id = entry.get("agent_id").and_then(Value::as_str).ok_or_else(|| shape(&format!("`agents[{i}].agent_id` must be the agent's id")))?;
                pairs.extend(ids(entry.get("supervises"), &format!("agents[{i}].supervises"))?.into_iter().map(|r| (id.to_string(), r)));
            }
        }
        Some(other) => return Err(shape(&format!("`agents` must be a list, not {other}"))),
    }
    match obj.get("supervisors") {
        None => {}
        Some(Value::Object(map)) => {
            for (boss, reports) in map {
                pairs.extend(ids(Some(reports), &format!("supervisors.{boss}"))?.into_iter().map(|r| (boss.clone(), r)));
            }
        }
        Some(other) => return Err(shape(&format!("`supervisors` must be an object, not {other}"))),
    }
    for (s, a) in &pairs {
        check_agent_id(s)?;
        check_agent_id(a)?;
        if s == a {
            return Err(Refusal::invalid_request(format!("agent {s:?} cannot supervise itself")));
        }
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The characters a one-line value may not hold: line breaks and controls, the
    /// lint's invisible set (README "Admission lint"), context-free.
    #[test]
    fn hidden_characters_are_named() {
        for (c, what) in [
            ('\u{2028}', "a line break"),
            ('\u{0B}', "a line break"),
            ('\u{85}', "a line break"),
            ('\u{0}', "a control character"),
            ('\t', "a control character"),
            ('\u{202E}', "a bidirectional control character"),
            ('\u{200F}', "a bidirectional control character"),
            ('\u{200B}', "a zero-width character"),
            ('\u{200D}', "a zero-width character"),
            ('\u{FE0F}', "a variation selector"),
            ('\u{E0100}', "a variation selector"),
            ('\u{E0041}', "a Unicode tag character"),
            ('\u{3164}', "a Hangul filler"),
            ('\u{FFF9}', "an interlinear annotation character"),
            ('\u{206A}', "an invisible format character"),
            ('\u{034F}', "an invisible format character"),
            ('\u{1BCA0}', "an invisible format character"),
            ('\u{FFF0}', "an invisible format character"),
        ] {
            assert_eq!(hidden_kind(c), Some(what), "U+{:04X}", c as u32);
        }
        for c in ['a', 'é', ' ', '日', 'ب', '😀', '\u{0600}', '\u{110BD}', '\u{3000}'] {
            assert!(!is_hidden(c), "U+{:04X}", c as u32);
        }
        assert_eq!(hidden_in("hb-\u{202E}1").as_deref(), Some("U+202E (a bidirectional control character) at character 4"));
        assert_eq!(hidden_in("hb-日本-1"), None);
    }

    #[test]
    fn agent_ids() {
        for ok in ["a", "release-engineer", "A.b_c-9", &"x".repeat(128)] {
            assert!(check_agent_id(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "a/b", "a b", "é", &"x".repeat(129)] {
            let e = check_agent_id(bad).unwrap_err();
            assert_eq!((e.status, e.code.as_ref()), (400, "invalid_request"), "{bad}");
        }
    }

    #[test]
    fn org_manifest_pairs_in_both_shapes() {
        let org = json!({"agents": [{"agent_id": "lead", "supervises": ["a", "b"]}], "supervisors": {"cto": ["lead"]}});
        let pairs = org_pairs(&org).unwrap();
        let want = [("lead", "a"), ("lead", "b"), ("cto", "lead")].map(|(s, a)| (s.to_string(), a.to_string()));
        assert_eq!(pairs, want);
        assert!(org_pairs(&json!({"agents": []})).unwrap().is_empty());
    }

    #[test]
    fn org_manifest_refusals() {
        assert!(org_pairs(&json!({})).unwrap_err().message.contains("names no agents"));
        // malformed manifests are refused whole (they would replace the supervision in force)
        for (bad, needle) in [
            (json!({"agents": "x"}), "`agents` must be a list"),
            (json!({"agents": [{"agent_id": "s", "supervises": "a"}]}), "`agents[0].supervises` must be a list"),
            (json!({"agents": [{"supervises": ["a"]}]}), "`agents[0].agent_id`"),
            (json!({"agents": [5]}), "`agents[0]` must be an object"),
            (json!({"agents": [], "bogus": 1}), "unknown field `bogus`"),
            (json!({"supervisors": ["a"]}), "`supervisors` must be an object"),
            (json!({"supervisors": {"b": "a"}}), "`supervisors.b` must be a list"),
            (json!([1]), "must be a JSON object"),
        ] {
            let e = org_pairs(&bad).unwrap_err();
            assert!(e.code == "invalid_request" && e.message.contains(needle), "{bad}: {}", e.message);
        }
        assert!(org_pairs(&json!({"supervisors": {"a": ["a"]}})).unwrap_err().message.contains("cannot supervise itself"));
        assert!(org_pairs(&json!({"supervisors": {"a": ["../b"]}})).unwrap_err().message.contains("must be 1-128"));
        // a report that is not a string is an empty id, refused
        assert_eq!(org_pairs(&json!({"agents": [{"agent_id": "a", "supervises": [7]}]})).unwrap_err().code, "invalid_request");
    }
}
