//! Agent ids and the org manifest's supervision pairs (§21.4.5, S9: a declared supervisor
//! may read its reports' instructions).

use serde_json::Value;

use crate::Refusal;

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
/// order; every id checked, nobody supervising itself.
pub fn org_pairs(org: &Value) -> Result<Vec<(String, String)>, Refusal> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    if let Some(agents) = org.get("agents").and_then(Value::as_array) {
        for a in agents {
            let id = a.get("agent_id").and_then(Value::as_str).unwrap_or_default();
            for r in a.get("supervises").and_then(Value::as_array).into_iter().flatten() {
                pairs.push((id.to_string(), r.as_str().unwrap_or_default().to_string()));
            }
        }
    }
    if let Some(map) = org.get("supervisors").and_then(Value::as_object) {
        for (boss, reports) in map {
            for r in reports.as_array().into_iter().flatten() {
                pairs.push((boss.clone(), r.as_str().unwrap_or_default().to_string()));
            }
        }
    }
    if org.get("agents").is_none() && org.get("supervisors").is_none() {
        return Err(Refusal::invalid_request("an org manifest needs `agents: [{agent_id, supervises: [..]}]` or `supervisors: {id: [..]}`"));
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
        assert!(org_pairs(&json!({})).unwrap_err().message.contains("needs `agents"));
        assert!(org_pairs(&json!({"supervisors": {"a": ["a"]}})).unwrap_err().message.contains("cannot supervise itself"));
        assert!(org_pairs(&json!({"supervisors": {"a": ["../b"]}})).unwrap_err().message.contains("must be 1-128"));
        // a report that is not a string is an empty id, refused
        assert_eq!(org_pairs(&json!({"agents": [{"agent_id": "a", "supervises": [7]}]})).unwrap_err().code, "invalid_request");
    }
}
