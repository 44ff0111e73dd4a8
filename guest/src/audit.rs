//! The discovery audit (§21.5): record shape, `audi_`/`audevent_` ids (ULID), and the
//! replay metrics recall@k, hit@k, miss_rate (§21.5.3) and probe-set coverage@k /
//! hit@k (§21.5.4).
//!
//! Ids are ULIDs built from a host-supplied time and entropy, so the engine itself
//! never reads a clock or a random source (determinism, §21.3.4).

use serde::{Deserialize, Serialize};

/// One `recall_instruction` invocation (§21.5.1). Times are Unix ms, as in §21.7.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    pub id: String,
    pub agent_id: String,
    pub heartbeat_id: String,
    pub session_start: u64,
    /// Who made the call ([`crate::recall::RecallContext::caller`]); empty when the host
    /// named no one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub caller: String,
    /// The state the call ran on, as the host named it
    /// ([`crate::recall::RecallContext::corpus_key`]): what a replay cuts the facts at
    /// (`lid audit replay --db`). Empty when the host named none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub corpus_key: String,
    pub intent: String,
    pub loaded_chunks: Vec<String>,
    #[serde(default)]
    pub used_chunks: Vec<String>,
    #[serde(default)]
    pub missed_chunks: Vec<String>,
    pub audit_token: String,
    #[serde(default)]
    pub audit_closed: Option<u64>,
    pub created_at: u64,
    /// `recall_instruction` or `task_type_preload` (§21.1.5 rule 3).
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub manifest_version: String,
    /// The SHA-256 of each loaded chunk's content, in `loaded_chunks` order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunk_sha256: Vec<String>,
    /// The response's `assembly_sha256`: replaying the request must reproduce it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub assembly_sha256: String,
    /// The §21.3.1 request, so the call can be replayed (`lid audit replay`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<serde_json::Value>,
    /// The items of the recall's `content` channel (Spec-13), in response order: what
    /// data the agent was shown beside its instructions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content_served: Vec<ContentServed>,
    /// The response's `content_sha256` when content was served (the assembly digest
    /// covers instructions only).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub content_sha256: String,
    /// A preload's warnings (`preload_unit_unavailable`, `preload_budget_warning`): §21.1.5
    /// rule 4 has them written to the audit table, not only returned or logged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<crate::preload::PreloadWarning>,
    /// The error that aborted a heartbeat's preloads (a `guarantee_load` unit that could
    /// not be read, §21.1.5 rule 4); its record loads nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<crate::preload::PreloadWarning>,
}

/// One content item served, by fact URI and content digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContentServed {
    pub uri: String,
    pub sha256: String,
}

const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// A ULID (26 Crockford base32 chars) from a 48-bit ms time and 80 bits of entropy.
pub fn ulid(now_ms: u64, entropy: [u8; 10]) -> String {
    let mut v: u128 = ((now_ms as u128) & ((1u128 << 48) - 1)) << 80;
    for (i, b) in entropy.iter().enumerate() {
        v |= (*b as u128) << (8 * (9 - i));
    }
    let mut out = [0u8; 26];
    for (i, o) in out.iter_mut().enumerate().rev() {
        *o = CROCKFORD[(v & 31) as usize];
        v >>= 5;
        let _ = i;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parse up to 20 hex chars into entropy bytes; anything unparsable counts as zero.
pub fn entropy_from_hex(hex: &str) -> [u8; 10] {
    let mut e = [0u8; 10];
    let b = hex.as_bytes();
    for (i, slot) in e.iter_mut().enumerate() {
        let hi = b.get(2 * i).and_then(|c| (*c as char).to_digit(16));
        let lo = b.get(2 * i + 1).and_then(|c| (*c as char).to_digit(16));
        if let (Some(h), Some(l)) = (hi, lo) {
            *slot = (h * 16 + l) as u8;
        }
    }
    e
}

/// The pair of ids of one recall: the audit token handed to the agent and the event id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ids {
    pub audit_token: String,
    pub event_id: String,
}

impl Ids {
    /// Both ids at `now_ms`. The event id takes the first 10 bytes of `entropy_hex` and
    /// the token the next 10, so that the token, which authorises feedback (§21.5.2), is
    /// opaque (§21.3.2) to whoever sees the event id; the hosts give 20 bytes. With 10
    /// bytes or fewer the two share them.
    pub fn new(now_ms: u64, entropy_hex: &str) -> Ids {
        let event = entropy_from_hex(entropy_hex);
        let token = entropy_hex.get(20..).filter(|rest| rest.len() >= 20).map_or(event, entropy_from_hex);
        Ids { audit_token: format!("audi_{}", ulid(now_ms, token)), event_id: format!("audevent_{}", ulid(now_ms, event)) }
    }
}

/// The ms time encoded in an `audi_`/`audevent_` ULID, if well-formed.
pub fn ulid_time(id: &str) -> Option<u64> {
    let u = id.strip_prefix("audi_").or_else(|| id.strip_prefix("audevent_")).unwrap_or(id);
    if u.len() != 26 {
        return None;
    }
    let mut v: u128 = 0;
    for c in u.bytes() {
        let d = CROCKFORD.iter().position(|x| *x == c.to_ascii_uppercase())? as u128;
        v = (v << 5) | d;
    }
    Some((v >> 80) as u64)
}

/// Whether an audit token is well-formed (`audi_` + ULID).
pub fn valid_token(t: &str) -> bool {
    t.starts_with("audi_") && ulid_time(t).is_some()
}

/// Most unit names one feedback list may carry.
pub const MAX_FEEDBACK_UNITS: usize = 512;

/// A §21.5.2 usage-feedback submission, checked for shape: `audit_token` (`audi_` + ULID)
/// and the `used_chunks` / `missed_chunks` unit-name lists (absent or `null` = empty).
/// Whether the token is known, expired or already closed is the host's to decide.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Submission {
    pub audit_token: String,
    pub used_chunks: Vec<String>,
    pub missed_chunks: Vec<String>,
}

/// Parse and check an audit submission body (§21.5.2). Errors: `invalid_json`,
/// `invalid_request` (a list is not an array of at most 512 strings) and
/// `audit_token_invalid` (missing or malformed token).
pub fn parse_submission(body: &str) -> Result<Submission, crate::error::EngineError> {
    use crate::error::EngineError;
    let v: serde_json::Value = serde_json::from_str(body).map_err(|e| EngineError::json::<serde_json::Value>("audit submission", body, e))?;
    let obj = v.as_object().ok_or_else(|| EngineError::InvalidRequest("the audit submission must be a JSON object".into()))?;
    // A mistyped field would otherwise close the record with empty feedback, for good
    // (a corrected resubmission is then other feedback for a closed record).
    if let Some(k) = obj.keys().find(|k| !matches!(k.as_str(), "audit_token" | "used_chunks" | "missed_chunks")) {
        let shown: String = k.chars().take(80).collect();
        return Err(EngineError::InvalidRequest(format!("unknown field {shown:?}: an audit submission has only `audit_token`, `used_chunks` and `missed_chunks` (§21.5.2); nothing was recorded")));
    }
    let list = |k: &str| -> Result<Vec<String>, EngineError> {
        match obj.get(k) {
            None | Some(serde_json::Value::Null) => Ok(vec![]),
            Some(serde_json::Value::Array(a)) if a.len() <= MAX_FEEDBACK_UNITS => a
                .iter()
                .map(|v| v.as_str().map(str::to_string).ok_or_else(|| EngineError::InvalidRequest(format!("`{k}` must be an array of unit names"))))
                .collect(),
            Some(_) => Err(EngineError::InvalidRequest(format!("`{k}` must be an array of at most {MAX_FEEDBACK_UNITS} unit names"))),
        }
    };
    // sets of unit names (§21.5.3 counts units): a name given twice is kept once, where it
    // first stands, so a repeat never weighs a unit twice in recall@k or the miss rate
    let once = |mut names: Vec<String>| {
        let mut seen = std::collections::BTreeSet::new();
        names.retain(|n| seen.insert(n.clone()));
        names
    };
    let (used_chunks, missed_chunks) = (once(list("used_chunks")?), once(list("missed_chunks")?));
    for (k, names) in [("used_chunks", &used_chunks), ("missed_chunks", &missed_chunks)] {
        if let Some(bad) = names.iter().find(|n| !crate::manifest::is_kebab(n)) {
            let shown: String = bad.chars().take(80).collect();
            return Err(EngineError::InvalidRequest(format!("`{k}` holds {shown:?}, which is not a unit name (kebab-case, at most 64 characters, as the manifest names units)")));
        }
    }
    if let Some(both) = used_chunks.iter().find(|n| missed_chunks.contains(n)) {
        return Err(EngineError::InvalidRequest(format!("{both:?} is in both `used_chunks` and `missed_chunks`: a missed unit is one the agent needed and did not receive (§21.5.1)")));
    }
    let audit_token = match obj.get("audit_token") {
        Some(serde_json::Value::String(t)) if valid_token(t) => t.clone(),
        Some(serde_json::Value::String(t)) => return Err(EngineError::AuditTokenInvalid(format!("{t:?} is not `audi_` followed by a ULID"))),
        Some(other) => return Err(EngineError::AuditTokenInvalid(format!("`audit_token` must be the token string of a recall response, not {other}"))),
        None => return Err(EngineError::AuditTokenInvalid("the field is missing".into())),
    };
    // Without either list the record would close with no feedback, for good.
    if ["used_chunks", "missed_chunks"].iter().all(|k| obj.get(*k).is_none_or(serde_json::Value::is_null)) {
        return Err(EngineError::InvalidRequest("the audit submission names neither `used_chunks` nor `missed_chunks`: say which units were applied and which were needed but missing (§21.5.2; an empty list is feedback too); nothing was recorded".into()));
    }
    Ok(Submission { audit_token, used_chunks, missed_chunks })
}

/// §21.5.2: tokens older than 24 h are expired.
pub const TOKEN_TTL_MS: u64 = 24 * 60 * 60 * 1000;

/// Live-audit metrics over a set of closed records (§21.5.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditMetrics {
    /// The agent's own events: its recalls and preloads, made with its own key or an
    /// admin's (a scheduler's); see [`AuditRecord::by_supervisor`].
    pub events: usize,
    /// Events a supervisor made with its own key (another agent's), left out of every
    /// figure here: looking at what an agent would be given is not the agent's session.
    #[serde(default)]
    pub supervisor_events: usize,
    pub closed_events: usize,
    pub k: usize,
    /// Over closed events: Σ|used ∩ loaded[..k]| / Σ|used| (§21.5.3, pooled as `miss_rate` is).
    pub recall_at_k: Option<f64>,
    /// Fraction of heartbeats (of those with closed events naming used or missed chunks)
    /// where some used chunk is in the loaded[..k] of one of their events (§21.5.3:
    /// "fraction of heartbeats"): a heartbeat whose feedback names only missed chunks is
    /// one where no used chunk was loaded, a miss. An event with no `heartbeat_id` counts
    /// as a heartbeat of its own.
    pub hit_at_k: Option<f64>,
    /// The heartbeats `hit_at_k` is over.
    pub heartbeats: usize,
    /// Σ|missed| / Σ(|used| + |missed|).
    pub miss_rate: Option<f64>,
    /// `miss_rate > 0.15` over at least 100 events (§21.5.3).
    pub alert: bool,
}

fn r4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

impl AuditRecord {
    /// Whether another agent made this call with its own key (a supervisor reading what
    /// the agent would be given, §21.4.5), rather than the agent or an admin for it.
    pub fn by_supervisor(&self) -> bool {
        self.caller.strip_prefix("agent:").is_some_and(|id| id != self.agent_id)
    }
}

/// Compute §21.5.3 metrics over `records` (the caller selects the 7-day window): the
/// agent's own events, not a supervisor's.
pub fn metrics(records: &[AuditRecord], k: usize) -> AuditMetrics {
    let (supervised, records): (Vec<&AuditRecord>, Vec<&AuditRecord>) = records.iter().partition(|r| r.by_supervisor());
    let closed: Vec<&AuditRecord> = records.iter().copied().filter(|r| r.audit_closed.is_some()).collect();
    let with_feedback: Vec<&&AuditRecord> = closed.iter().filter(|r| !r.used_chunks.is_empty() || !r.missed_chunks.is_empty()).collect();
    // §21.5.3: "fraction of `used_chunks` that appear in `loaded_chunks` within rank k",
    // pooled over the records (as the miss rate is), not a mean of per-record fractions
    let (mut found_total, mut used_total) = (0usize, 0usize);
    // heartbeat id -> whether one of its events loaded a used chunk within k; a record
    // that names no heartbeat (a recall sent without `heartbeat_id`) is a heartbeat of its
    // own, keyed by its event id, not one shared by every such record
    let mut heartbeats = std::collections::BTreeMap::<(bool, &str), bool>::new();
    for r in &with_feedback {
        let top: Vec<&String> = r.loaded_chunks.iter().take(k).collect();
        let found = r.used_chunks.iter().filter(|u| top.contains(u)).count();
        found_total += found;
        used_total += r.used_chunks.len();
        let key = if r.heartbeat_id.is_empty() { (false, r.id.as_str()) } else { (true, r.heartbeat_id.as_str()) };
        *heartbeats.entry(key).or_default() |= found > 0;
    }
    let hits = heartbeats.values().filter(|h| **h).count();
    let (missed, used): (usize, usize) = closed.iter().fold((0, 0), |(m, u), r| (m + r.missed_chunks.len(), u + r.used_chunks.len()));
    let miss_rate = if missed + used > 0 { Some(r4(missed as f64 / (missed + used) as f64)) } else { None };
    let n = with_feedback.len();
    AuditMetrics {
        events: records.len(),
        supervisor_events: supervised.len(),
        closed_events: closed.len(),
        k,
        recall_at_k: (used_total > 0).then(|| r4(found_total as f64 / used_total as f64)),
        hit_at_k: (n > 0).then(|| r4(hits as f64 / heartbeats.len() as f64)),
        heartbeats: heartbeats.len(),
        miss_rate,
        alert: closed.len() >= 100 && miss_rate.map(|m| m > 0.15).unwrap_or(false),
    }
}

/// A probe (§21.5.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeOutcome {
    pub probe_id: String,
    pub required_units: Vec<String>,
    /// What recall returned, best first.
    pub ranked: Vec<String>,
    #[serde(default = "default_k")]
    pub k: usize,
}

fn default_k() -> usize {
    3
}

/// Probe-set metrics (§21.5.4): mean coverage@k and hit@k.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeMetrics {
    pub probes: usize,
    pub coverage_at_k: Option<f64>,
    pub hit_at_k: Option<f64>,
}

pub fn probe_metrics(outcomes: &[ProbeOutcome]) -> ProbeMetrics {
    let scored: Vec<&ProbeOutcome> = outcomes.iter().filter(|o| !o.required_units.is_empty()).collect();
    if scored.is_empty() {
        return ProbeMetrics { probes: outcomes.len(), coverage_at_k: None, hit_at_k: None };
    }
    let (mut cov, mut hit) = (0.0, 0usize);
    for o in &scored {
        let top: Vec<&String> = o.ranked.iter().take(o.k).collect();
        let found = o.required_units.iter().filter(|u| top.contains(u)).count();
        cov += found as f64 / o.required_units.len() as f64;
        if found > 0 {
            hit += 1;
        }
    }
    let n = scored.len() as f64;
    ProbeMetrics { probes: outcomes.len(), coverage_at_k: Some(r4(cov / n)), hit_at_k: Some(r4(hit as f64 / n)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(loaded: &[&str], used: &[&str], missed: &[&str], closed: bool) -> AuditRecord {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        AuditRecord {
            id: "audevent_x".into(),
            agent_id: "a".into(),
            heartbeat_id: "h".into(),
            session_start: 0,
            caller: String::new(),
            corpus_key: String::new(),
            intent: "i".into(),
            loaded_chunks: s(loaded),
            used_chunks: s(used),
            missed_chunks: s(missed),
            audit_token: "audi_x".into(),
            audit_closed: closed.then_some(1),
            created_at: 0,
            source: "recall_instruction".into(),
            manifest_version: "v1".into(),
            chunk_sha256: vec![],
            assembly_sha256: String::new(),
            request: None,
            content_served: vec![],
            content_sha256: String::new(),
            warnings: vec![],
            error: None,
        }
    }

    #[test]
    fn a_supervisors_calls_are_recorded_but_not_the_agents_metrics() {
        let by = |caller: &str, used: &[&str], missed: &[&str]| AuditRecord { caller: caller.into(), id: format!("audevent_{caller}"), heartbeat_id: String::new(), ..rec(&["a"], used, missed, true) };
        let own = by("agent:a", &["a"], &[]);
        let admin = by("admin:ops", &["a"], &[]);
        let supervisor = by("agent:boss", &[], &["z"]);
        let unnamed = by("", &["a"], &[]);
        assert!(supervisor.by_supervisor() && !own.by_supervisor() && !admin.by_supervisor() && !unnamed.by_supervisor());
        let m = metrics(&[own.clone(), admin, supervisor.clone(), unnamed], 3);
        assert_eq!((m.events, m.supervisor_events, m.closed_events), (3, 1, 3));
        assert_eq!(m.miss_rate, Some(0.0), "the supervisor's missed unit is not the agent's miss");
        // the caller goes into the record as the engine writes it, and back
        let json = serde_json::to_string(&supervisor).unwrap();
        assert!(json.contains(r#""caller":"agent:boss""#), "{json}");
        assert_eq!(serde_json::from_str::<AuditRecord>(&json).unwrap(), supervisor);
        assert!(!serde_json::to_string(&rec(&["a"], &[], &[], false)).unwrap().contains("caller"), "no caller named, no field");
    }

    #[test]
    fn submissions_are_checked_for_shape() {
        let token = Ids::new(1_700_000_000_000, "00112233445566778899").audit_token;
        let ok = parse_submission(&format!(r#"{{"audit_token":"{token}","used_chunks":["a"],"missed_chunks":null}}"#)).expect("valid");
        assert_eq!(ok, Submission { audit_token: token.clone(), used_chunks: vec!["a".into()], missed_chunks: vec![] });
        let code = |body: &str| parse_submission(body).err().map(|e| e.code().to_string());
        assert_eq!(code("not json").as_deref(), Some("invalid_json"));
        assert_eq!(code("[1]").as_deref(), Some("invalid_request"));
        assert_eq!(code(r#"{"used_chunks":[]}"#).as_deref(), Some("audit_token_invalid"));
        assert_eq!(code(r#"{"audit_token":"audi_nope"}"#).as_deref(), Some("audit_token_invalid"));
        assert_eq!(code(&format!(r#"{{"audit_token":"{token}","used_chunks":[1]}}"#)).as_deref(), Some("invalid_request"));
        let many = serde_json::to_string(&vec!["u"; MAX_FEEDBACK_UNITS + 1]).unwrap();
        assert_eq!(code(&format!(r#"{{"audit_token":"{token}","missed_chunks":{many}}}"#)).as_deref(), Some("invalid_request"));
        // names are unit names, and a unit is not both used and missed (§21.5.1)
        for lists in [r#""used_chunks":[""]"#.to_string(), format!(r#""missed_chunks":["{}"]"#, "x".repeat(65)), r#""used_chunks":["Bad Name"]"#.into(), r#""used_chunks":["a"],"missed_chunks":["a"]"#.into()] {
            assert_eq!(code(&format!(r#"{{"audit_token":"{token}",{lists}}}"#)).as_deref(), Some("invalid_request"), "{lists}");
        }
        // neither list: the record would close with no feedback; an empty list is feedback
        for lists in ["", r#","used_chunks":null,"missed_chunks":null"#] {
            assert_eq!(code(&format!(r#"{{"audit_token":"{token}"{lists}}}"#)).as_deref(), Some("invalid_request"), "{lists}");
        }
        assert!(parse_submission(&format!(r#"{{"audit_token":"{token}","missed_chunks":[]}}"#)).is_ok());
        // a name given twice counts once (sets of units, §21.5.3), in first-seen order
        let twice = parse_submission(&format!(r#"{{"audit_token":"{token}","used_chunks":["b","a","b","b"],"missed_chunks":["c","c"]}}"#)).expect("valid");
        assert_eq!((twice.used_chunks, twice.missed_chunks), (vec!["b".to_string(), "a".into()], vec!["c".to_string()]));
        let e = parse_submission(r#"{"audit_token":5}"#).unwrap_err();
        assert!(e.to_string().contains("must be the token string"), "{e}");
    }

    #[test]
    fn ulid_round_trips_time_and_sorts_by_time() {
        let a = Ids::new(1_700_000_000_000, "00112233445566778899");
        let b = Ids::new(1_700_000_000_001, "00000000000000000000");
        assert_eq!(a.audit_token.len(), 5 + 26);
        assert!(a.event_id.starts_with("audevent_"));
        assert_eq!(ulid_time(&a.audit_token), Some(1_700_000_000_000));
        assert!(a.audit_token < b.audit_token);
        assert!(valid_token(&a.audit_token));
        assert!(!valid_token("audi_nope"));
        // Same inputs, same ids (the engine has no hidden clock).
        assert_eq!(a, Ids::new(1_700_000_000_000, "00112233445566778899"));
        assert_ne!(a, Ids::new(1_700_000_000_000, "ff112233445566778899"));
        // With 20 bytes the token is not the event id's ULID: it cannot be derived from it.
        let wide = Ids::new(1_700_000_000_000, "00112233445566778899aabbccddeeff00112233");
        assert_eq!(wide.event_id, a.event_id);
        assert_ne!(wide.audit_token.strip_prefix("audi_"), wide.event_id.strip_prefix("audevent_"));
        assert_eq!(ulid_time(&wide.audit_token), Some(1_700_000_000_000));
        assert!(valid_token(&wide.audit_token));
    }

    #[test]
    fn metrics_follow_section_21_5_3() {
        let rs = vec![
            rec(&["a", "b", "c"], &["a"], &[], true),      // recall 1, hit
            rec(&["a", "b", "c"], &["c", "d"], &["d"], true), // recall 0.5 at k=3, hit
            rec(&["x", "y", "z"], &["q"], &["q"], true),   // recall 0, miss
            rec(&["a"], &[], &[], false),                  // open: ignored
        ];
        let rs: Vec<AuditRecord> = rs.into_iter().enumerate().map(|(i, r)| AuditRecord { heartbeat_id: format!("h{i}"), ..r }).collect();
        let m = metrics(&rs, 3);
        assert_eq!(m.events, 4);
        assert_eq!(m.closed_events, 3);
        assert_eq!(m.recall_at_k, Some(0.5));
        assert_eq!(m.hit_at_k, Some(0.6667));
        // missed 2 / (used 4 + missed 2)
        assert_eq!(m.miss_rate, Some(0.3333));
        assert!(!m.alert, "fewer than 100 events never alert");
        let many: Vec<_> = (0..100).map(|_| rec(&["a"], &["a"], &["b"], true)).collect();
        assert!(metrics(&many, 3).alert);
        // pooled over used chunks, not a mean of per-record fractions: 1 of 4, not (1 + 0) / 2
        let pooled = metrics(&[rec(&["a"], &["a"], &[], true), rec(&["x"], &["b", "c", "d"], &[], true)], 3);
        assert_eq!(pooled.recall_at_k, Some(0.25));
        let k1 = metrics(&rs[1..2], 1);
        assert_eq!(k1.recall_at_k, Some(0.0));
        // A heartbeat whose feedback names only a missed chunk used nothing it was given:
        // a miss in hit@k, not a heartbeat left out.
        let mut with_missed = rs.clone();
        with_missed.push(AuditRecord { heartbeat_id: "h9".into(), ..rec(&["a"], &[], &["z"], true) });
        let m = metrics(&with_missed, 3);
        assert_eq!((m.heartbeats, m.hit_at_k, m.recall_at_k), (4, Some(0.5), Some(0.5)));
        // Hit@k is over heartbeats: a heartbeat whose second recall loaded a used chunk
        // is one hit, however many of its recalls did not.
        let one = |hb: &str, loaded: &[&str], used: &[&str]| AuditRecord { heartbeat_id: hb.into(), ..rec(loaded, used, &[], true) };
        let m = metrics(&[one("h1", &["x"], &["a"]), one("h1", &["a"], &["a"]), one("h1", &["y"], &["a"]), one("h2", &["x"], &["a"])], 3);
        assert_eq!((m.heartbeats, m.hit_at_k), (2, Some(0.5)));
        assert_eq!(m.recall_at_k, Some(0.25), "recall@k stays per event");
        // Recalls that name no heartbeat are a heartbeat each: one hit in four is 0.25, not
        // one shared heartbeat with a hit.
        let alone = |id: &str, loaded: &[&str]| AuditRecord { id: id.into(), heartbeat_id: String::new(), ..rec(loaded, &["a"], &[], true) };
        let m = metrics(&[alone("e1", &["a"]), alone("e2", &["x"]), alone("e3", &["y"]), alone("e4", &["z"])], 3);
        assert_eq!((m.heartbeats, m.hit_at_k), (4, Some(0.25)));
    }

    #[test]
    fn probe_metrics_follow_section_21_5_4() {
        let o = |req: &[&str], ranked: &[&str]| ProbeOutcome {
            probe_id: "p".into(),
            required_units: req.iter().map(|s| s.to_string()).collect(),
            ranked: ranked.iter().map(|s| s.to_string()).collect(),
            k: 3,
        };
        let m = probe_metrics(&[o(&["a", "b"], &["a", "x", "y", "b"]), o(&["c"], &["c"])]);
        assert_eq!(m.coverage_at_k, Some(0.75));
        assert_eq!(m.hit_at_k, Some(1.0));
    }

    /// §21.5.3: with no feedback to pool there is no rate at all (not a 0/0): closed
    /// records that name neither used nor missed units give no recall@k, hit@k or miss rate.
    #[test]
    fn closed_records_without_feedback_give_no_rates() {
        let m = metrics(&[rec(&["a"], &[], &[], true), rec(&["b"], &[], &[], true)], 3);
        assert_eq!((m.closed_events, m.heartbeats), (2, 0));
        assert_eq!((m.recall_at_k, m.hit_at_k, m.miss_rate), (None, None, None));
        // only missed units: a miss rate, but no recall@k (no used unit to find)
        let m = metrics(&[rec(&["a"], &[], &["b"], true)], 3);
        assert_eq!((m.recall_at_k, m.miss_rate), (None, Some(1.0)));
    }

    /// §21.5.3: "alert when `miss_rate > 0.15` over 100+ events": exactly 0.15 does not.
    #[test]
    fn a_miss_rate_of_exactly_0_15_does_not_alert() {
        // 3 missed of 20 named units in every event: 0.15
        let used: Vec<String> = (0..17).map(|i| format!("u{i}")).collect();
        let used: Vec<&str> = used.iter().map(String::as_str).collect();
        let at = |missed: &[&str]| metrics(&vec![rec(&used, &used, missed, true); 100], 3);
        let m = at(&["m1", "m2", "m3"]);
        assert_eq!(m.miss_rate, Some(0.15));
        assert!(!m.alert);
        assert!(at(&["m1", "m2", "m3", "m4"]).alert);
    }

    /// §21.8.3: a probe's k defaults to 3 when the outcome does not give one.
    #[test]
    fn a_probe_without_k_is_scored_at_3() {
        let o: ProbeOutcome = serde_json::from_str(r#"{"probe_id": "p", "required_units": ["c"], "ranked": ["a", "b", "c", "d"]}"#).unwrap();
        assert_eq!(o.k, 3);
        assert_eq!(probe_metrics(&[o]).hit_at_k, Some(1.0));
    }

    /// §21.3.2: audit tokens and event ids are ULIDs: the 48-bit ms time then the 80
    /// entropy bits, big-endian, in Crockford base32 (26 characters); the entropy is read
    /// from hex, two digits a byte. (Expected values computed independently of this code.)
    #[test]
    fn ulids_encode_the_time_then_the_entropy_in_crockford_base32() {
        assert_eq!(ulid(0, [0; 10]), "00000000000000000000000000");
        assert_eq!(ulid((1 << 48) - 1, [255; 10]), "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
        assert_eq!(entropy_from_hex("00112233445566778899"), [0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99]);
        assert_eq!(entropy_from_hex("0a1B2c3D4e5f60718293"), [0x0a, 0x1b, 0x2c, 0x3d, 0x4e, 0x5f, 0x60, 0x71, 0x82, 0x93]);
        // short or unparsable input: the bytes it does not give are zero
        assert_eq!(entropy_from_hex("ff0g"), [0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(ulid(1_700_000_000_000, entropy_from_hex("00112233445566778899")), "01HF7YAT00008J4CT4ANK7F24S");
        assert_eq!(ulid(1_700_000_000_000, entropy_from_hex("0a1b2c3d4e5f60718293")), "01HF7YAT0018DJRFAEBXG730MK");
        let wide = Ids::new(1_700_000_000_000, "00112233445566778899aabbccddeeff00112233");
        assert_eq!((wide.event_id.as_str(), wide.audit_token.as_str()), ("audevent_01HF7YAT00008J4CT4ANK7F24S", "audi_01HF7YAT00NAXWSQFEZW0128HK"));
        // the time read back from any well-formed id, in either case; anything else is none
        assert_eq!(ulid_time("audi_7ZZZZZZZZZZZZZZZZZZZZZZZZZ"), Some((1 << 48) - 1));
        assert_eq!(ulid_time("audevent_01hf7yat00008j4ct4ank7f24s"), Some(1_700_000_000_000));
        assert_eq!(ulid_time("01HF7YAT00008J4CT4ANK7F24S"), Some(1_700_000_000_000));
        assert_eq!(ulid_time("audi_01HF7YAT00008J4CT4ANK7F24"), None);
        assert_eq!(ulid_time("audi_01HF7YAT00008J4CT4ANK7F24SS"), None);
        assert_eq!(ulid_time("audi_01HF7YAT00008J4CT4ANK7F24U"), None, "U is not Crockford base32");
    }

    /// §21.5.2: an audit token expires after 24 hours.
    #[test]
    fn tokens_live_24_hours() {
        assert_eq!(TOKEN_TTL_MS, 86_400_000);
    }

}
