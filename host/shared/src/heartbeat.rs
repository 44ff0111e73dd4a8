//! The heartbeat route's pieces (ours; §21.1 boot stubs, §21.1.5 preloads, S1 signed
//! wake reasons) and the handoff route's addressing check: what both hosts answer, around
//! the trigger verification and the engine calls each host makes its own way.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::Refusal;

/// The claims of a heartbeat trigger (a JWT from the control plane, S1); each host checks
/// the signature, algorithm and expiry with its own JWT code, then [`Trigger::for_agent`].
#[derive(Debug, Clone, Deserialize)]
pub struct Trigger {
    pub sub: String,
    pub wake_reason: String,
    pub heartbeat_id: String,
    #[serde(default)]
    pub session_start: Option<u64>,
    #[serde(deserialize_with = "numeric_date_claim")]
    pub exp: u64,
}

/// A NumericDate claim (RFC 7519 §2: seconds, "non-integer values can be represented")
/// as jsonwebtoken reads `exp` and `nbf` in `lid serve`: a whole number, or a finite
/// non-negative number rounded; anything else (`null`, a string, a negative number) makes
/// the token invalid. A control plane minting `exp` as `time.time() + 300` sends a
/// fraction.
pub fn numeric_date(v: &Value) -> Option<u64> {
    let n = v.as_number()?;
    n.as_u64().or_else(|| n.as_f64().filter(|f| f.is_finite() && *f >= 0.0 && *f < u64::MAX as f64).map(|f| f.round() as u64))
}

/// Why an `exp` claim `v` is refused ([`numeric_date`]), as both hosts say it.
pub fn not_a_numeric_date(v: &Value) -> String {
    format!("`exp` must be a NumericDate (Unix seconds, a non-negative number), not {v}")
}

fn numeric_date_claim<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let v = Value::deserialize(d)?;
    numeric_date(&v).ok_or_else(|| serde::de::Error::custom(not_a_numeric_date(&v)))
}

impl Trigger {
    /// The claims, once the signature is verified, checked for the route's `agent`: issued
    /// for it, with a non-empty wake reason and heartbeat id.
    pub fn for_agent(self, agent: &str) -> Result<Self, Refusal> {
        if self.sub != agent {
            return Err(Refusal::new(401, "heartbeat_trigger_invalid", format!("the trigger was issued for agent {:?}, not {agent:?}", self.sub)));
        }
        if self.wake_reason.trim().is_empty() || self.heartbeat_id.trim().is_empty() {
            return Err(Refusal::new(401, "heartbeat_trigger_invalid", "the trigger must carry a non-empty `wake_reason` and `heartbeat_id`"));
        }
        // The heartbeat id is what this heartbeat's recalls name: held to their rule, so
        // that they can.
        if let Some(problem) = heartbeat_id_problem(&self.heartbeat_id) {
            return Err(Refusal::new(401, "heartbeat_trigger_invalid", format!("the trigger's `heartbeat_id` {problem} (the id this heartbeat's recalls name)")));
        }
        if self.session_start.is_some_and(|ms| ms > SESSION_START_MAX_MS) {
            return Err(Refusal::new(401, "heartbeat_trigger_invalid", "the trigger's `session_start` must be Unix milliseconds (at most 253402300799999, the end of year 9999)"));
        }
        // A start in Unix seconds, as `exp` and `nbf` are, reads as a date in January 1970
        // when taken for milliseconds, and §21.5.1's heartbeat start would be stored so:
        // refused, with the fix, rather than kept wrong.
        if let Some(ms) = self.session_start.filter(|ms| *ms < SESSION_START_MIN_MS) {
            return Err(Refusal::new(
                401,
                "heartbeat_trigger_invalid",
                format!("the trigger's `session_start` {ms} is before 2001-09-09 as Unix milliseconds: it looks like Unix seconds (as `exp` is); sign it in milliseconds ({ms}000)"),
            ));
        }
        Ok(self)
    }
}

/// The agent's current handoff, the boot context's session: the one posted last, in the
/// order the rows were written. Not the newest `created_at`: a clock stepped back (NTP, a
/// resumed VM) dated a new handoff before the old one, and the old one stayed the session
/// until the clock caught up. `max(rowid)` is one seek in `idx_events_agent_kind_rowid`
/// (`migrations/0014_handoff_index.sql`).
pub const LATEST_HANDOFF_SQL: &str = "SELECT detail FROM service_events WHERE rowid = (SELECT max(rowid) FROM service_events WHERE agent_id = ?1 AND kind = 'handoff')";

/// The earliest `session_start` a trigger may carry, in Unix ms: 2001-09-09T01:46:40Z,
/// the first 13-digit value. Every start in Unix seconds up to year 33658 is below it, and
/// no heartbeat ran before it.
pub const SESSION_START_MIN_MS: u64 = 1_000_000_000_000;

/// The latest `session_start` a trigger may carry, in Unix ms: 9999-12-31T23:59:59.999Z.
pub const SESSION_START_MAX_MS: u64 = 253_402_300_799_999;

/// The adapter profiles a stub is rendered and cached for at publish (§21.1.3); any other
/// name is served as `generic`.
pub const PROFILES: &[&str] = &["generic", "paperclip-claude-code", "openai-assistants"];

/// The longest `heartbeat_id`, in characters.
const HEARTBEAT_ID_MAX_CHARS: usize = 256;

/// What is wrong with a heartbeat id, if anything, as the end of a sentence naming it: over
/// [`HEARTBEAT_ID_MAX_CHARS`] characters, or holding a line break, a control or an
/// invisible character ([`crate::ids::hidden_kind`], named with where it is).
fn heartbeat_id_problem(s: &str) -> Option<String> {
    let n = s.chars().count();
    if n > HEARTBEAT_ID_MAX_CHARS {
        return Some(format!("is {n} characters; the limit is {HEARTBEAT_ID_MAX_CHARS}"));
    }
    crate::ids::hidden_in(s).map(|found| format!("must be one line without control or invisible characters, and holds {found}: remove it"))
}

/// A recall request's `heartbeat_id` (§21.5.1: the run the recall belongs to, kept in
/// its audit record): absent or null is none; otherwise one line of at most 256
/// characters without control or invisible characters, so that a mistyped id is refused
/// rather than recorded as none, with what is wrong ([`heartbeat_id_problem`]).
pub fn recall_heartbeat_id(v: Option<&serde_json::Value>) -> Result<&str, Refusal> {
    match v {
        None | Some(serde_json::Value::Null) => Ok(""),
        Some(serde_json::Value::String(s)) => match heartbeat_id_problem(s) {
            None => Ok(s),
            Some(problem) => Err(Refusal::invalid_request(format!("`heartbeat_id` {problem}"))),
        },
        Some(other) => Err(Refusal::invalid_request(format!("`heartbeat_id` must be a string (the run's id), not {other}"))),
    }
}

/// A recall body for the engine (after a UTF-8 byte-order mark, if any:
/// [`crate::json::without_bom`]) and its `heartbeat_id` ([`recall_heartbeat_id`]), read
/// without parsing the rest: the engine reads and checks the whole request, so a host
/// reads only this field (and a deeply nested value elsewhere gets the engine's
/// field-named refusal, not a parser's depth limit).
pub fn recall_body(body: &str) -> Result<(&str, String), Refusal> {
    #[derive(Deserialize)]
    struct Head {
        #[serde(default)]
        heartbeat_id: Value,
    }
    let body = crate::json::without_bom(body);
    if body.trim().is_empty() {
        return Err(Refusal::invalid_json("the body is empty"));
    }
    if !body.trim_start().starts_with('{') {
        return Err(Refusal::invalid_json("expected a JSON object"));
    }
    let head: Head = serde_json::from_str(body).map_err(Refusal::invalid_json)?;
    Ok((body, recall_heartbeat_id(Some(&head.heartbeat_id))?.to_string()))
}

/// The profile a stub request is served with.
pub fn profile_or_generic(profile: Option<&str>) -> &str {
    profile.filter(|p| PROFILES.contains(p)).unwrap_or("generic")
}

/// The signed trigger (a JWT) of a heartbeat body `{"trigger": "<JWT>"}`, or the 401:
/// a wake reason anywhere else is never taken (S1).
pub fn trigger_token(body: &Value) -> Result<&str, Refusal> {
    body.get("trigger")
        .and_then(Value::as_str)
        .ok_or_else(|| Refusal::new(401, "heartbeat_trigger_invalid", "send the control plane's signed trigger as {\"trigger\": \"<JWT>\"}; unsigned wake reasons are not accepted (S1)"))
}

/// A heartbeat body's signed trigger ([`trigger_token`]) and the profile its stub is
/// rendered for. `profile`, when given, is a string (one of [`PROFILES`], or any other
/// name, served as `generic`, as for `GET …/boot-stub`); a `wake_reason` is allowed and
/// ignored (the trigger's is the one taken, S1); any other field is `invalid_request`, so
/// a mistyped `profile` is said, not served as `generic`.
pub fn heartbeat_request(body: &Value) -> Result<(&str, Option<&str>), Refusal> {
    if let Some(k) = body.as_object().and_then(|o| o.keys().find(|k| !matches!(k.as_str(), "trigger" | "profile" | "wake_reason"))) {
        let shown: String = k.chars().take(80).collect();
        return Err(Refusal::invalid_request(format!("unknown field {shown:?}: a heartbeat body has `trigger` (the signed JWT) and optionally `profile`")));
    }
    let profile = match body.get("profile") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) => Some(p.as_str()),
        Some(other) => return Err(Refusal::invalid_request(format!("`profile` must be a string (an adapter profile such as {:?}), not {other}", PROFILES[0]))),
    };
    Ok((trigger_token(body)?, profile))
}

/// What a verified heartbeat produced.
pub struct Heartbeat<'a> {
    pub agent: &'a str,
    pub trigger: &'a Trigger,
    pub manifest_version: &'a str,
    pub stub: &'a str,
    pub stub_tokens: i64,
    pub profile: Option<&'a str>,
    /// The engine's preload answer (`{units: [{name, version, source, content}], audit_token, ..}`).
    pub preloads: Value,
}

impl Heartbeat<'_> {
    /// The response: the stub and the preloads, and `context`, the text an agent runtime
    /// injects — the stub, then each preload unit under a provenance comment.
    pub fn response(self) -> Value {
        let mut context = self.stub.to_string();
        for u in self.preloads["units"].as_array().into_iter().flatten() {
            context.push_str(&format!("\n\n<!-- preload: {} {} ({}) -->\n", u["name"].as_str().unwrap_or(""), u["version"].as_str().unwrap_or(""), u["source"].as_str().unwrap_or("")));
            context.push_str(u["content"].as_str().unwrap_or("").trim_end());
            context.push('\n');
        }
        let audit_token = self.preloads["audit_token"].clone();
        json!({
            "agent_id": self.agent,
            "heartbeat_id": self.trigger.heartbeat_id,
            "wake_reason": self.trigger.wake_reason,
            "manifest_version": self.manifest_version,
            "boot_stub": {"text": self.stub, "token_count": self.stub_tokens, "profile": profile_or_generic(self.profile)},
            "preloads": self.preloads,
            "audit_token": audit_token,
            "context": context,
        })
    }
}

/// The `(to_agent, from_agent)` of an engine-checked handoff posted to `agent`'s route,
/// refused (400 `handoff_invalid`) when it is addressed to another agent.
pub fn handoff_parties<'a>(handoff: &'a Value, agent: &str) -> Result<(&'a str, &'a str), Refusal> {
    let (to, from) = (handoff["to_agent"].as_str().unwrap_or_default(), handoff["from_agent"].as_str().unwrap_or_default());
    if to != agent {
        return Err(Refusal::new(400, "handoff_invalid", format!("the handoff is addressed to {to:?} but was posted to agent {agent:?}: post it to /v1/agents/{to}/handoff")));
    }
    if let Err(e) = crate::ids::check_agent_id(from) {
        return Err(Refusal::new(400, "handoff_invalid", format!("`from_agent`: {}", e.message)));
    }
    Ok((to, from))
}

/// A handoff posted by its sending agent (the key is `from_agent`'s, not the receiver's
/// nor an admin's) goes between two agents of one deployment: the session it writes is
/// shown unfenced in the receiver's boot context, so an agent of another deployment may
/// not write it. `receiver` and `sender` are the deployments of their current manifests
/// (`None`: no manifest). An unknown receiver is refused alike, so a sender learns nothing
/// about the agents of other deployments.
pub fn sender_may_hand_off(agent: &str, from: &str, receiver: Option<&str>, sender: Option<&str>) -> Result<(), Refusal> {
    match (receiver, sender) {
        (Some(r), Some(s)) if r == s => Ok(()),
        _ => Err(Refusal::new(
            403,
            "instruction_scope_denied",
            format!("agent {from:?} may hand off only to an agent of its own deployment, and {agent:?} is none (§21.4.5): post the handoff with the receiving agent's key or an admin key"),
        )),
    }
}

/// The boot stubs rendered from one verified snapshot of an agent, by profile and stub
/// version: what `GET …/boot-stub` and the heartbeat serve. The `boot_stubs` table (§21.7)
/// is written as the record of what was rendered but never read back to serve: a row is
/// not signed, so text changed there would reach the agent (§21.4.3: only what the org
/// key signed is served). A snapshot is rebuilt on every write, so its stubs go with it.
#[derive(Default)]
pub struct StubMemo(std::sync::Mutex<Vec<(String, i64, String, i64)>>);

impl StubMemo {
    /// The stub (text, tokens) rendered for `profile` at stub version `sv`, if any.
    pub fn get(&self, profile: &str, sv: i64) -> Option<(String, i64)> {
        let m = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        m.iter().find(|e| e.0 == profile && e.1 == sv).map(|e| (e.2.clone(), e.3))
    }

    /// Keep a rendered stub whose record was written; `false` when one was already kept.
    pub fn put(&self, profile: &str, sv: i64, body: &str, tokens: i64) -> bool {
        let mut m = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if m.iter().any(|e| e.0 == profile && e.1 == sv) {
            return false;
        }
        m.push((profile.to_string(), sv, body.to_string(), tokens));
        true
    }
}

/// A boot-context request's session source (issue 5): the agent's latest stored handoff,
/// none, or the reason it could not be read, which degrades the bundle with a
/// `source_unavailable` warning instead of failing it.
pub fn session_source<E: std::fmt::Display>(req: &mut Value, latest: Result<Option<Value>, E>) {
    match latest {
        Ok(Some(h)) => {
            req["handoff"] = h;
            req["handoff_stored"] = Value::Bool(true);
        }
        Ok(None) => {}
        Err(e) => req["unavailable"] = serde_json::json!([{"source": "session", "reason": e.to_string()}]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sending_agent_hands_off_within_its_deployment_only() {
        assert!(sender_may_hand_off("to", "from", Some("demo"), Some("demo")).is_ok());
        for (receiver, sender) in [(Some("demo"), Some("other")), (None, Some("demo")), (Some("demo"), None), (None, None)] {
            let e = sender_may_hand_off("to", "from", receiver, sender).unwrap_err();
            assert_eq!((e.status, e.code.as_ref()), (403, "instruction_scope_denied"), "{receiver:?} {sender:?}");
        }
        // the same words whether the receiver exists or not
        assert_eq!(sender_may_hand_off("to", "from", None, Some("demo")).unwrap_err().message, sender_may_hand_off("to", "from", Some("x"), Some("demo")).unwrap_err().message);
    }

    #[test]
    fn a_recalls_heartbeat_id_is_a_string_or_nothing() {
        use serde_json::json;
        assert_eq!(recall_heartbeat_id(None).unwrap(), "");
        assert_eq!(recall_heartbeat_id(Some(&json!(null))).unwrap(), "");
        assert_eq!(recall_heartbeat_id(Some(&json!("run_1"))).unwrap(), "run_1");
        for bad in [json!(5), json!("a\nb"), json!("x".repeat(257)), json!("a\u{2028}b"), json!("run\u{202e}1")] {
            assert_eq!(recall_heartbeat_id(Some(&bad)).unwrap_err().code, "invalid_request", "{bad}");
        }
        assert_eq!(recall_heartbeat_id(Some(&json!("x".repeat(256)))).unwrap().len(), 256);
        assert_eq!(recall_heartbeat_id(Some(&json!("hb-日本-👩\u{200D}💻"))).ok(), None, "a joiner is refused in an id, even in an emoji");
        assert_eq!(recall_heartbeat_id(Some(&json!("hb-日本-é"))).unwrap(), "hb-日本-é");
    }

    /// The refusal says what is wrong: the length, or the character and where it is
    /// (audit finding 14: bidi, zero-width and NUL were refused as "not one line of at
    /// most 256 characters").
    #[test]
    fn a_heartbeat_ids_refusal_names_what_is_wrong() {
        use serde_json::json;
        let message = |id: &str| recall_heartbeat_id(Some(&json!(id))).unwrap_err().message;
        assert_eq!(message("hb-\u{202e}1"), "`heartbeat_id` must be one line without control or invisible characters, and holds U+202E (a bidirectional control character) at character 4: remove it");
        assert!(message("hb-\u{200b}1").contains("holds U+200B (a zero-width character) at character 4"));
        assert!(message("hb-\u{0}1").contains("holds U+0000 (a control character) at character 4"));
        assert!(message("hb-\u{2028}1").contains("holds U+2028 (a line break) at character 4"));
        assert!(message("hb-\u{E0041}1").contains("holds U+E0041 (a Unicode tag character) at character 4"));
        assert_eq!(message(&"h".repeat(257)), "`heartbeat_id` is 257 characters; the limit is 256");
        let t = Trigger { sub: "eng".into(), wake_reason: "incident".into(), heartbeat_id: "hb-\u{202e}1".into(), session_start: None, exp: 9 };
        let e = t.for_agent("eng").unwrap_err();
        assert_eq!((e.status, e.code.as_ref()), (401, "heartbeat_trigger_invalid"));
        assert_eq!(e.message, "the trigger's `heartbeat_id` must be one line without control or invisible characters, and holds U+202E (a bidirectional control character) at character 4: remove it (the id this heartbeat's recalls name)");
    }

    #[test]
    fn heartbeat_response_and_context() {
        let preloads = json!({"units": [{"name": "deploy", "version": "v2", "source": "task_type_preload", "content": "Roll back first.\n\n"}], "audit_token": "tok"});
        let trigger = Trigger { sub: "eng".into(), wake_reason: "incident".into(), heartbeat_id: "hb1".into(), session_start: None, exp: 0 };
        let hb = Heartbeat { agent: "eng", trigger: &trigger, manifest_version: "v3", stub: "STUB", stub_tokens: 42, profile: Some("nope"), preloads };
        let v = hb.response();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["agent_id", "heartbeat_id", "wake_reason", "manifest_version", "boot_stub", "preloads", "audit_token", "context"]);
        assert_eq!(v["context"], "STUB\n\n<!-- preload: deploy v2 (task_type_preload) -->\nRoll back first.\n");
        assert_eq!((v["audit_token"].as_str(), v["boot_stub"]["profile"].as_str(), v["boot_stub"]["token_count"].as_i64()), (Some("tok"), Some("generic"), Some(42)));
        assert_eq!(profile_or_generic(Some("openai-assistants")), "openai-assistants");
    }

    #[test]
    fn trigger_claims() {
        let t = |sub: &str, wake: &str, hb: &str| Trigger { sub: sub.into(), wake_reason: wake.into(), heartbeat_id: hb.into(), session_start: Some(SESSION_START_MIN_MS), exp: 9 };
        assert_eq!(t("eng", "incident", "h").for_agent("eng").unwrap().wake_reason, "incident");
        assert!(t("peer", "incident", "h").for_agent("eng").unwrap_err().message.contains("issued for agent \"peer\""));
        for (w, h) in [(" ", "h"), ("incident", ""), ("incident", "a\u{7}b"), ("incident", &"h".repeat(257))] {
            assert_eq!(t("eng", w, h).for_agent("eng").unwrap_err().status, 401, "{w:?} {h:?}");
        }
        let late = Trigger { session_start: Some(SESSION_START_MAX_MS + 1), ..t("eng", "incident", "h") };
        assert!(late.for_agent("eng").unwrap_err().message.contains("Unix milliseconds"));
        let last = Trigger { session_start: Some(SESSION_START_MAX_MS), ..t("eng", "incident", "h") };
        assert!(last.for_agent("eng").is_ok());
        // a start in seconds (2026-12-08 here) is refused with the fix; none is not
        let seconds = Trigger { session_start: Some(1_796_690_000), ..t("eng", "incident", "h") };
        let e = seconds.for_agent("eng").unwrap_err();
        assert!(e.message.contains("looks like Unix seconds") && e.message.contains("1796690000000"), "{}", e.message);
        assert_eq!(e.code, "heartbeat_trigger_invalid");
        let early = Trigger { session_start: Some(SESSION_START_MIN_MS - 1), ..t("eng", "incident", "h") };
        assert!(early.for_agent("eng").is_err());
        assert!(Trigger { session_start: None, ..t("eng", "incident", "h") }.for_agent("eng").is_ok());
    }

    #[test]
    fn a_recall_body_is_read_for_its_heartbeat_id_only() {
        let id = |b: &str| recall_body(b).map(|(_, id)| id);
        assert_eq!(id(r#"{"intent": "x", "heartbeat_id": "run_1"}"#).unwrap(), "run_1");
        assert_eq!(id(r#"{"intent": "x"}"#).unwrap(), "");
        let deep = format!(r#"{{"intent": "x", "manifest_hint": {}1{}}}"#, "[".repeat(200), "]".repeat(200));
        assert_eq!(id(&deep).unwrap(), "", "the rest is the engine's to check");
        assert_eq!(recall_body("\u{feff}{\"intent\": \"x\"}").unwrap(), ("{\"intent\": \"x\"}", String::new()), "the engine gets the body after the mark");
        for (bad, code) in [("[1]", "invalid_json"), ("", "invalid_json"), (r#"{"heartbeat_id": 5}"#, "invalid_request")] {
            assert_eq!(id(bad).unwrap_err().code, code, "{bad}");
        }
    }

    #[test]
    fn triggers_and_handoffs() {
        assert_eq!(trigger_token(&json!({"trigger": "a.b.c"})).unwrap(), "a.b.c");
        assert_eq!(heartbeat_request(&json!({"trigger": "a.b.c", "profile": "openai-assistants", "wake_reason": "manual"})).unwrap(), ("a.b.c", Some("openai-assistants")));
        assert_eq!(heartbeat_request(&json!({"trigger": "a.b.c", "profile": null})).unwrap(), ("a.b.c", None));
        for bad in [json!({"trigger": "a.b.c", "profile": 5}), json!({"trigger": "a.b.c", "profile": ["generic"]}), json!({"trigger": "a.b.c", "bogus": 1})] {
            let e = heartbeat_request(&bad).unwrap_err();
            assert_eq!((e.status, &*e.code), (400, "invalid_request"), "{bad}");
        }
        assert_eq!(heartbeat_request(&json!({"profile": "generic"})).unwrap_err().code, "heartbeat_trigger_invalid");
        let e = trigger_token(&json!({"wake_reason": "incident"})).unwrap_err();
        assert_eq!((e.status, e.code.as_ref()), (401, "heartbeat_trigger_invalid"));
        let h = json!({"to_agent": "b", "from_agent": "a"});
        assert_eq!(handoff_parties(&h, "b").unwrap(), ("b", "a"));
        assert!(handoff_parties(&h, "c").unwrap_err().message.contains("post it to /v1/agents/b/handoff"));
        let bad = handoff_parties(&json!({"to_agent": "b", "from_agent": "Bad Agent"}), "b").unwrap_err();
        assert_eq!((bad.status, bad.code.as_ref()), (400, "handoff_invalid"));
        assert!(bad.message.starts_with("`from_agent`: agent id \"Bad Agent\""), "{}", bad.message);
    }

    /// A snapshot's stubs are kept by profile and stub version: each is found only under
    /// both, and the first one kept stays.
    #[test]
    fn a_stub_is_kept_once_per_profile_and_stub_version() {
        let memo = StubMemo::default();
        assert_eq!(memo.get("generic", 1), None);
        assert!(memo.put("generic", 1, "STUB", 42));
        assert!(!memo.put("generic", 1, "OTHER", 7), "one was kept already");
        assert_eq!(memo.get("generic", 1), Some(("STUB".to_string(), 42)));
        assert_eq!((memo.get("generic", 2), memo.get("openai-assistants", 1)), (None, None));
        assert!(memo.put("openai-assistants", 1, "OPENAI", 40));
        assert!(memo.put("generic", 2, "STUB2", 43));
        assert_eq!(memo.get("openai-assistants", 1), Some(("OPENAI".to_string(), 40)));
        assert_eq!(memo.get("generic", 2), Some(("STUB2".to_string(), 43)));
        assert_eq!(memo.get("generic", 1), Some(("STUB".to_string(), 42)));
    }

    /// The boot context's session source: the latest handoff, none, or why it could not be
    /// read (a `source_unavailable` degradation, not a failure).
    #[test]
    fn the_session_source_is_the_latest_handoff_or_why_it_is_unavailable() {
        let mut req = json!({"intent": "x"});
        session_source(&mut req, Ok::<_, String>(Some(json!({"summary": "done"}))));
        assert_eq!(req, json!({"intent": "x", "handoff": {"summary": "done"}, "handoff_stored": true}));
        let mut req = json!({"intent": "x"});
        session_source(&mut req, Ok::<_, String>(None));
        assert_eq!(req, json!({"intent": "x"}));
        session_source(&mut req, Err::<Option<Value>, _>("disk I/O error"));
        assert_eq!(req["unavailable"], json!([{"source": "session", "reason": "disk I/O error"}]));
    }
}
