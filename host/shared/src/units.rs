//! Unit writes and promotions (`PUT /v1/agents/{id}/units/{name}`, `POST
//! …/facts/promote`): the request read and checked field by field, the version a write
//! without one takes, and the two rules that keep a unit's version chain sound
//! (§21.4.1: versions increase monotonically, `manifest` is the manifest's own URI;
//! Spec-13: content never replaces an instruction). No I/O: each host reads the unit's
//! latest fact and its current manifest, and compares versions with the engine.

use serde_json::Value;

use sha2::Digest;

use crate::Refusal;

/// The unit name §21.4.1 reserves for the manifest's own URI.
pub const RESERVED_NAME: &str = "manifest";

/// The fields a unit write may carry.
const FIELDS: [&str; 4] = ["content", "interpret_as", "version", "deployment"];

/// How a fact is to be read (Spec-13): as instructions, or as data for the content channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Instruction,
    Content,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Instruction => "instruction",
            Kind::Content => "content",
        }
    }

    /// `interpret_as` as sent: absent means `default`; anything but the two names is refused
    /// (a mistyped value must not fall back to the privileged channel).
    pub fn read(v: Option<&Value>, default: Kind) -> Result<Kind, Refusal> {
        match v {
            None => Ok(default),
            Some(Value::String(s)) if s == "instruction" => Ok(Kind::Instruction),
            Some(Value::String(s)) if s == "content" => Ok(Kind::Content),
            Some(other) => Err(Refusal::invalid_request(format!("`interpret_as` must be \"instruction\" or \"content\", not {other}"))),
        }
    }
}

/// A unit name: kebab-case (lowercase letters and digits in `-`-separated words, at most
/// 64 characters, as manifest entry names are), and not the reserved `manifest`.
pub fn check_name(name: &str) -> Result<(), Refusal> {
    let kebab = !name.is_empty() && name.len() <= 64 && name.split('-').all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
    if !kebab {
        return Err(Refusal::invalid_request(format!("unit name {name:?} must be kebab-case (e.g. `release-checklist`), at most 64 characters, as manifest entry names are (§21.2.2)")));
    }
    if name == RESERVED_NAME {
        return Err(Refusal::invalid_request("`manifest` is reserved for the manifest's own URI (§21.4.1): publish manifests with PUT …/instruction-manifest"));
    }
    Ok(())
}

/// A string field, if present; any other JSON type is refused.
fn string_field<'a>(body: &'a serde_json::Map<String, Value>, field: &str) -> Result<Option<&'a str>, Refusal> {
    match body.get(field) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(Refusal::invalid_request(format!("`{field}` must be a string, not {other}"))),
    }
}

/// A `PUT …/units/{name}` body, read.
#[derive(Debug)]
pub struct UnitWrite<'a> {
    pub content: &'a str,
    pub kind: Kind,
    /// The version asked for; `None` takes [`next_version`].
    pub version: Option<&'a str>,
    /// The deployment, for an agent with no manifest yet.
    pub deployment: Option<&'a str>,
}

impl<'a> UnitWrite<'a> {
    /// Read and check `body` for unit `name`: every field known and of its type.
    pub fn read(name: &str, body: &'a Value) -> Result<Self, Refusal> {
        check_name(name)?;
        let Some(obj) = body.as_object() else {
            return Err(Refusal::invalid_request("send the unit as a JSON object: {\"content\": \"…\", \"interpret_as\": \"instruction\"|\"content\", \"version\": \"v2\"}"));
        };
        if let Some(unknown) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(Refusal::invalid_request(format!("unknown field `{unknown}` in a unit write; the fields are {}", FIELDS.join(", "))));
        }
        let kind = Kind::read(obj.get("interpret_as"), Kind::Instruction)?;
        let content = string_field(obj, "content")?.ok_or_else(|| Refusal::invalid_request("send the unit text as {\"content\": \"…\"}"))?;
        if content.trim().is_empty() {
            return Err(Refusal::invalid_request("`content` is empty: a unit version holds the unit's text (to retire a unit, publish a manifest without its entry)"));
        }
        let version = string_field(obj, "version")?;
        if version == Some("") {
            return Err(Refusal::invalid_request("`version` is empty: leave it out to take the next version, or give one such as \"v2\""));
        }
        Ok(UnitWrite { content, kind, version, deployment: string_field(obj, "deployment")? })
    }
}

/// The fields a promotion may carry.
const PROMOTION_FIELDS: [&str; 5] = ["uri", "interpret_as", "name", "version", "deployment"];

/// A `POST …/facts/promote` body, read: which quarantined fact, and the unit name and
/// version it is to take (each optional).
#[derive(Debug)]
pub struct Promotion<'a> {
    pub uri: &'a str,
    pub name: Option<&'a str>,
    pub version: Option<&'a str>,
}

/// Read a promotion: `uri` required, every field known and of its type; `interpret_as`
/// defaults to content (Spec-13: promoted knowledge is data unless said otherwise).
pub fn promotion(body: &Value) -> Result<(Kind, Promotion<'_>), Refusal> {
    let Some(obj) = body.as_object() else {
        return Err(Refusal::invalid_request("send {\"uri\": \"quarantine:…\"} (and optionally `interpret_as`, `name`, `version`)"));
    };
    if let Some(unknown) = obj.keys().find(|k| !PROMOTION_FIELDS.contains(&k.as_str())) {
        return Err(Refusal::invalid_request(format!("unknown field `{unknown}` in a promotion; the fields are {}", PROMOTION_FIELDS.join(", "))));
    }
    let uri = string_field(obj, "uri")?.filter(|u| !u.is_empty()).ok_or_else(|| Refusal::invalid_request("`uri` is required: the quarantined fact's URI, as GET …/federated-facts lists it"))?;
    let kind = Kind::read(obj.get("interpret_as"), Kind::Content)?;
    let version = string_field(obj, "version")?;
    if version == Some("") {
        return Err(Refusal::invalid_request("`version` is empty: leave it out to take the next version, or give one such as \"v2\""));
    }
    string_field(obj, "deployment")?;
    Ok((kind, Promotion { uri, name: string_field(obj, "name")?, version }))
}

/// The version after `latest` for a write that names none: `v1` first, then `vN+1`,
/// where N is the latest's major number (`v2`, `2`, `v2.0` and `v2.1.0-rc1` are all
/// followed by `v3`, which comes after each of them by precedence).
pub fn next_version(latest: Option<&str>) -> Result<String, Refusal> {
    let Some(latest) = latest else { return Ok("v1".to_string()) };
    let digits = latest.strip_prefix(['v', 'V']).unwrap_or(latest);
    let end = digits.find(|c: char| !c.is_ascii_digit()).unwrap_or(digits.len());
    let major = (end > 0 && matches!(digits[end..].chars().next(), None | Some('.' | '-' | '+'))).then(|| digits[..end].parse::<u64>().ok()).flatten();
    match major {
        Some(n) => n.checked_add(1).map(|n| format!("v{n}")).ok_or_else(|| Refusal::invalid_request(format!("the unit's latest version {latest:?} has no next: pass `version` explicitly"))),
        None => Err(Refusal::invalid_request(format!("the unit's latest version {latest:?} does not start with a number (vN, N or vN.M…): pass `version` explicitly"))),
    }
}

/// The query (both hosts, one schema) for the first servable fact an agent was given
/// under a deployment: its URI ([`deployment_in`]), for `earlier` in [`deployment`].
pub const FIRST_DEPLOYED_FACT_SQL: &str = "SELECT uri FROM instruction_facts WHERE agent_id = ?1 AND quarantine IS NULL AND (uri LIKE 'instruction:%' OR uri LIKE 'knowledge:%') ORDER BY rowid LIMIT 1";

/// What a write for an agent (`?1`) is checked against, as one value (NULL before it has
/// anything): its current manifest row, whose entries decide review ([`check_reviewed`]),
/// the stub's room and the deployment; else the deployment its first unit set
/// ([`FIRST_DEPLOYED_FACT_SQL`]). A write reads it before its checks and again in its
/// transaction (on D1, a guard statement in its batch): a publish or another first write
/// committed in between makes the write [`basis_moved`], so a retry is checked against
/// what is current, and an agent's units never spread over two deployments.
pub const WRITE_BASIS_SQL: &str = "SELECT coalesce(\
    (SELECT 'manifest:' || id FROM instruction_manifests WHERE agent_id = ?1 AND superseded_at IS NULL ORDER BY created_at DESC, rowid DESC LIMIT 1), \
    (SELECT 'deployment:' || substr(u, 1, instr(u, '/') - 1) FROM (SELECT substr(uri, instr(uri, ':') + 1) AS u FROM instruction_facts \
     WHERE agent_id = ?1 AND quarantine IS NULL AND (uri LIKE 'instruction:%' OR uri LIKE 'knowledge:%') ORDER BY rowid LIMIT 1))) AS basis";

/// The deployment an `instruction:` or `knowledge:` URI names (`instruction:{deployment}/…`).
pub fn deployment_in(uri: &str) -> Option<&str> {
    let rest = uri.strip_prefix("instruction:").or_else(|| uri.strip_prefix("knowledge:"))?;
    rest.split('/').next().filter(|d| !d.is_empty())
}

/// The deployment a write for `agent` goes to: that of its current manifest (`current`);
/// with none yet, that of the units written before it (`earlier`, so that an agent's
/// units never spread over two deployments only one manifest can name), else the body's
/// `deployment`. A `deployment` in the body that differs is refused.
pub fn deployment(agent: &str, current: Option<String>, earlier: Option<&str>, body: &Value) -> Result<String, Refusal> {
    let given = match body.get("deployment") {
        None | Some(Value::Null) => None,
        Some(Value::String(d)) => Some(d.as_str()),
        Some(other) => return Err(Refusal::invalid_request(format!("`deployment` must be a string, not {other}"))),
    };
    match (current, earlier, given) {
        (Some(d), _, Some(g)) if g != d => Err(Refusal::invalid_request(format!("agent {agent:?} is deployed as {d:?} (its current manifest's `deployment`), not {g:?}: leave `deployment` out, or publish a manifest under the other deployment first"))),
        (Some(d), _, _) => Ok(d),
        (None, Some(e), Some(g)) if g != e => Err(Refusal::invalid_request(format!("agent {agent:?} has units under deployment {e:?} already (written before its first manifest), not {g:?}: leave `deployment` out, or give {e:?}"))),
        (None, Some(e), _) => Ok(e.to_string()),
        (None, None, Some(d)) => match crate::ids::check_agent_id(d) {
            Ok(()) => Ok(d.to_string()),
            Err(_) => Err(Refusal::invalid_request(format!("`deployment` {d:?} must be 1-128 characters of letters, digits, '.', '_' or '-' (it becomes part of the instruction: URI)"))),
        },
        (None, None, None) => Err(Refusal::invalid_request(format!("agent {agent:?} has no manifest yet: pass `deployment` with the first write"))),
    }
}

/// The entry of unit `name` in a manifest document, if it names the unit.
pub fn manifest_entry(manifest_json: &str, name: &str) -> Option<Value> {
    let m: Value = serde_json::from_str(manifest_json).ok()?;
    m["entries"].as_array()?.iter().find(|e| e["name"].as_str() == Some(name)).cloned()
}

/// Whether a write of `kind` to `entry`'s unit changes the boot stub: an instruction for
/// an always-applicable unit, which the stub embeds (§21.1.1).
pub fn changes_stub(kind: Kind, entry: Option<&Value>) -> bool {
    kind == Kind::Instruction && entry.is_some_and(|e| e["always_applicable"] == Value::Bool(true))
}

/// An instruction written to a unit whose text was approved with the manifest: a
/// `force_position: "prepend"` unit (§21.3.3 rule 1: "explicit content review at manifest
/// publish time … a distinct admin approval record") or a `guarantee_load` one (rule 5:
/// "explicit administrator approval"). A unit write carries no approval, so the new text
/// goes through a publish that does (`units` and `approvals` in the manifest's `PUT`,
/// `lid publish --approve`); written here, it would be prepended to every recall
/// unreviewed.
pub fn check_reviewed(name: &str, kind: Kind, entry: Option<&Value>) -> Result<(), Refusal> {
    let Some(e) = entry.filter(|_| kind == Kind::Instruction) else { return Ok(()) };
    let (code, what, approval) = if e["force_position"].as_str() == Some("prepend") {
        ("force_position_approval_required", "force_position \"prepend\" (§21.3.3 rule 1: reviewed at manifest publish time)", format!("\"approvals\": {{\"force_position\": [\"{name}\"]}}"))
    } else if e["guarantee_load"] == Value::Bool(true) {
        ("guarantee_approval_required", "guarantee_load (§21.3.3 rule 5: approved by an administrator)", "\"approvals\": {\"guarantee_load\": true}".to_string())
    } else {
        return Ok(());
    };
    Err(Refusal::new(
        400,
        code,
        format!("unit {name:?} has {what}, so its text is approved with the manifest, not written alone: publish a new manifest version with the new text in `units` and {approval} (`lid publish --approve`)"),
    ))
}

/// `source_trust` of a fact `who` writes (§21.4.3: facts authored by verified human
/// administrators SHOULD have `source_trust >= 0.9`): an admin's 0.9, an agent's own 0.7.
pub fn source_trust(who: &crate::access::Principal) -> f64 {
    if who.is_admin() {
        0.9
    } else {
        0.7
    }
}

/// `source_trust` of a promoted federated fact: an admin let it in, but another
/// organisation wrote it (Spec-13).
pub const PROMOTED_TRUST: f64 = 0.5;

/// `authored_by` of a promoted fact: the organisation or peer it came from, or, for a
/// fact quarantined for its attestation (§21.4.3, no origin), the admin who promoted it
/// and so vouches for its text.
pub fn promoted_author<'a>(origin: &'a str, promoted_by: &'a str) -> &'a str {
    if origin.is_empty() {
        promoted_by
    } else {
        origin
    }
}

/// What a unit write brings, for [`plan_version`]: its text, its kind and its writer's
/// entity URI.
pub struct Rewrite<'a> {
    pub content: &'a str,
    pub kind: Kind,
    pub author: &'a str,
}

/// The version a write takes: the one asked for, which must come after the unit's latest
/// (§21.4.1; the latest itself is left to the ledger's same-content check), or else the
/// next `vN`. A unit write passes what it brings as `write`: when the latest is the same
/// writer's same text as the same kind, served, a write that names no version takes the
/// latest, which it answers as unchanged, so a retry of a write whose answer was lost
/// stores no second copy (a promotion passes `None`: it always writes a version of its
/// own). `order` is the engine's `version-order` (an error for a version that is not one;
/// else -1, 0 or 1 against the latest).
pub fn plan_version<E: From<Refusal>>(requested: Option<&str>, latest: Option<&Latest>, write: Option<Rewrite<'_>>, order: impl FnOnce(&str, Option<&str>) -> Result<i8, E>) -> Result<String, E> {
    if let (None, Some(l), Some(w)) = (requested, latest, write) {
        if !l.quarantined && l.interpret_as == w.kind.as_str() && l.authored_by == w.author && l.sha256 == crate::attest::hex(&sha2::Sha256::digest(w.content.as_bytes())) {
            return Ok(l.version.clone());
        }
    }
    let version = match requested {
        Some(v) => {
            // A `vN` must leave room for the next write's version (`next_version`).
            let digits = v.strip_prefix(['v', 'V']).filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if digits.is_some_and(|n| n.parse::<u64>().map_or(true, |n| n == u64::MAX)) {
                return Err(Refusal::invalid_request(format!("version {v:?} is too large: a unit's versions go up to v{} so that a next one exists", u64::MAX - 1)).into());
            }
            v.to_string()
        }
        None => next_version(latest.map(|l| l.version.as_str()))?,
    };
    let o = order(&version, latest.map(|l| l.version.as_str()))?;
    match latest {
        Some(l) if o <= 0 && l.version != version => Err(not_newer(&format!("{}/{version}", l.uri.rsplit_once('/').map_or("", |x| x.0)), l).into()),
        _ => Ok(version),
    }
}

/// New content a manifest publish brings for a unit at `uri` (the entry's `fact_uri`, of
/// version `version`) must come after the unit's latest version (§21.4.1): else 409
/// `fact_version_conflict`. The latest's own version is left to the same-content check, as
/// in [`plan_version`].
pub fn check_published_version<E: From<Refusal>>(uri: &str, version: &str, latest: Option<&Latest>, order: impl FnOnce(&str, Option<&str>) -> Result<i8, E>) -> Result<(), E> {
    let Some(l) = latest.filter(|l| l.version != version) else {
        return Ok(());
    };
    if order(version, Some(&l.version))? > 0 {
        return Ok(());
    }
    Err(Refusal::new(
        409,
        "fact_version_conflict",
        format!("{uri}: the unit's latest version is {:?}, and new content takes a version after it (§21.4.1): name a later version in the entry's fact_uri", l.version),
    )
    .into())
}

/// A unit's latest fact, as the host's ledger holds it ([`LATEST_SQL`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Latest {
    pub uri: String,
    pub version: String,
    pub interpret_as: String,
    /// SHA-256 of its content (lowercase hex).
    pub sha256: String,
    /// Who wrote it (the writer's entity URI).
    pub authored_by: String,
    /// Held back for its attestation (§21.4.3): not served.
    pub quarantined: bool,
}

/// The query (both hosts, one schema) for a unit's [`Latest`] fact: its columns in the
/// struct's order, `?1` the unit key (`instruction:{deployment}/{agent}/{unit}`).
pub const LATEST_SQL: &str = "SELECT uri, version, interpret_as, sha256, authored_by, quarantine IS NOT NULL AS quarantined FROM instruction_facts
     WHERE unit_key = ?1 AND valid_until IS NULL ORDER BY created_at DESC, rowid DESC LIMIT 1";

/// Spec-13: a content write never supersedes an instruction. A unit whose latest fact is
/// an instruction, or that the current manifest names, keeps its chain of instructions
/// (writing content there would take the instruction out of recall, the stub and the
/// preloads without `instruction:write`).
pub fn check_kind(name: &str, kind: Kind, latest: Option<&Latest>, in_manifest: bool) -> Result<(), Refusal> {
    if kind != Kind::Content {
        return Ok(());
    }
    let why = if in_manifest {
        "the agent's manifest names it"
    } else if latest.is_some_and(|l| l.interpret_as == "instruction") {
        "its latest version is an instruction"
    } else {
        return Ok(());
    };
    Err(Refusal::new(409, "unit_kind_conflict", format!("unit {name:?} holds instructions ({why}): content cannot replace it (Spec-13); write the content under another name")))
}

/// 409 `fact_version_conflict`: `version` does not come after the unit's latest.
pub fn not_newer(uri: &str, latest: &Latest) -> Refusal {
    Refusal::new(
        409,
        "fact_version_conflict",
        format!("{uri}: version is not newer than the unit's latest {:?}; versions increase monotonically (§21.4.1): leave `version` out to take the next one", latest.version),
    )
}

/// 409 `fact_version_conflict` for a write whose URI another write took first: retryable
/// ([`written_concurrently`]) when the version was planned (the request named none: a
/// retry plans the next one), else the version the caller named is taken for good.
pub fn version_taken(uri: &str, asked: Option<&str>) -> Refusal {
    match asked {
        None => written_concurrently(uri),
        Some(_) => Refusal::new(409, "fact_version_conflict", format!("{uri} already exists with other content; versions are immutable (§21.4.2): write a new version")),
    }
}

/// 409 `fact_version_conflict`: the unit gained a version while this write was planned.
pub fn written_concurrently(uri: &str) -> Refusal {
    Refusal::new(409, "fact_version_conflict", format!("{uri}: the unit gained a new version while this write was being made; retry")).with_details(serde_json::json!({"retryable": true}))
}

/// The manifest row a write basis ([`WRITE_BASIS_SQL`]) names, if it names one.
pub fn basis_manifest(basis: &str) -> Option<&str> {
    basis.strip_prefix("manifest:")
}

/// 409 `fact_version_conflict` (retryable): the agent's manifest, or the deployment its
/// first unit set, changed while this write was being checked ([`WRITE_BASIS_SQL`]).
pub fn basis_moved(agent: &str) -> Refusal {
    Refusal::new(409, "fact_version_conflict", format!("agent {agent:?} got a new manifest (or its first unit) while this write was being checked; retry: it is checked against the current one"))
        .with_details(serde_json::json!({"retryable": true}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_kebab_case_and_not_the_manifest() {
        for ok in ["ground-rules", "a", "v2-notes", &"x".repeat(64)] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Bad_Name", "-a", "a-", "a--b", "tab_cr", "ün", &"x".repeat(65), "manifest"] {
            assert_eq!(check_name(bad).map_err(|r| r.code), Err("invalid_request".into()), "{bad}");
        }
    }

    #[test]
    fn a_write_goes_to_the_agents_deployment() {
        let body = |d: Value| json!({"content": "x", "deployment": d});
        // with a manifest: its deployment; the same one named is fine, another refused
        assert_eq!(deployment("eng", Some("acme".into()), None, &json!({"content": "x"})).unwrap(), "acme");
        assert_eq!(deployment("eng", Some("acme".into()), None, &body(json!("acme"))).unwrap(), "acme");
        let e = deployment("eng", Some("acme".into()), None, &body(json!("other"))).unwrap_err();
        assert!(e.message.contains("deployed as \"acme\""), "{}", e.message);
        // without one: the named deployment, checked, or a request for it
        assert_eq!(deployment("eng", None, None, &body(json!("acme"))).unwrap(), "acme");
        let e = deployment("eng", None, None, &body(json!("bad dep"))).unwrap_err();
        assert!(e.message.contains("`deployment` \"bad dep\""), "{}", e.message);
        let e = deployment("eng", None, None, &json!({"content": "x"})).unwrap_err();
        assert!(e.message.contains("pass `deployment`"), "{}", e.message);
        assert!(deployment("eng", None, None, &body(json!(5))).unwrap_err().message.contains("must be a string"));
        // no manifest yet, but units written: theirs, and no other
        assert_eq!(deployment("eng", None, Some("acme"), &json!({"content": "x"})).unwrap(), "acme");
        assert_eq!(deployment("eng", None, Some("acme"), &body(json!("acme"))).unwrap(), "acme");
        let e = deployment("eng", None, Some("acme"), &body(json!("d2"))).unwrap_err();
        assert!(e.message.contains("under deployment \"acme\" already"), "{}", e.message);
        assert_eq!(deployment_in("instruction:acme/eng/notes/v1"), Some("acme"));
        assert_eq!(deployment_in("knowledge:acme/eng/pack/v1/units/a.md"), Some("acme"));
        assert_eq!((deployment_in("path:units/a.md"), deployment_in("instruction:/eng")), (None, None));
    }

    #[test]
    fn a_write_is_read_field_by_field() {
        let body = json!({"content": "# x", "interpret_as": "content", "version": "v3"});
        let w = UnitWrite::read("notes", &body).unwrap();
        assert_eq!((w.content, w.kind, w.version, w.deployment), ("# x", Kind::Content, Some("v3"), None));
        assert_eq!(UnitWrite::read("notes", &json!({"content": "x"})).unwrap().kind, Kind::Instruction);
        // a mistyped interpret_as never falls back to the instruction channel
        for bad in [json!({"content": "x", "interpret_as": null}), json!({"content": "x", "interpret_as": 5}), json!({"content": "x", "interpret_as": "Content"})] {
            let e = UnitWrite::read("notes", &bad).unwrap_err();
            assert!(e.message.contains("interpret_as"), "{bad}: {}", e.message);
        }
        for (bad, field) in [(json!({"content": "x", "version": 5}), "version"), (json!({"content": "x", "version": ""}), "version"), (json!({"content": 1}), "content"), (json!({"content": "x", "extra": 1}), "extra"), (json!({"content": "x", "deployment": 7}), "deployment"), (json!({"content": ""}), "content"), (json!({"content": " \n\t"}), "content")] {
            let e = UnitWrite::read("notes", &bad).unwrap_err();
            assert_eq!(e.code, "invalid_request");
            assert!(e.message.contains(field), "{bad}: {}", e.message);
        }
        assert!(UnitWrite::read("notes", &json!(["x"])).is_err());
    }

    #[test]
    fn a_promotion_names_its_fact() {
        let body = json!({"uri": "quarantine:d/a/x/v1"});
        let (kind, p) = promotion(&body).unwrap();
        assert_eq!((kind, p.uri, p.name, p.version), (Kind::Content, "quarantine:d/a/x/v1", None, None));
        for (bad, field) in [(json!({}), "uri"), (json!({"uri": ""}), "uri"), (json!({"uri": 5}), "uri"), (json!({"uri": "q", "interpret_as": 1}), "interpret_as"), (json!({"uri": "q", "trust": 1}), "trust")] {
            let e = promotion(&bad).unwrap_err();
            assert_eq!(e.code, "invalid_request");
            assert!(e.message.contains(field), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn versions_follow_the_latest() {
        assert_eq!(next_version(None).unwrap(), "v1");
        assert_eq!(next_version(Some("v9")).unwrap(), "v10");
        assert_eq!(next_version(Some("V2")).unwrap(), "v3");
        for (latest, next) in [("1.2.0", "v2"), ("v2.0", "v3"), ("2", "v3"), ("v1.5", "v2"), ("v2.1.0-rc1", "v3"), ("v7+build", "v8")] {
            assert_eq!(next_version(Some(latest)).unwrap(), next, "{latest}");
        }
        for odd in ["release-a", "v", "vx2", "2a", "v18446744073709551616"] {
            assert!(next_version(Some(odd)).unwrap_err().message.contains("pass `version` explicitly"), "{odd}");
        }
        assert!(next_version(Some("v18446744073709551615")).unwrap_err().message.contains("has no next"));
    }

    #[test]
    fn a_write_takes_a_version_after_the_latest() {
        let latest = Latest { uri: "instruction:d/a/u/v10".into(), version: "v10".into(), interpret_as: "instruction".into(), sha256: String::new(), authored_by: "admin:alice".into(), quarantined: false };
        // a stand-in for the engine's order: by the number after the `v`
        let order = |v: &str, than: Option<&str>| -> Result<i8, Refusal> {
            let n = |s: &str| s.trim_start_matches('v').parse::<i64>().map_err(|_| Refusal::invalid_request("not a version"));
            let a = n(v)?;
            match than {
                None => Ok(1),
                Some(t) => Ok((a - n(t)?).signum() as i8),
            }
        };
        assert_eq!(plan_version(None, Some(&latest), Some(Rewrite { content: "new text", kind: Kind::Instruction, author: "admin:alice" }), order).unwrap(), "v11");
        assert_eq!(plan_version(Some("v12"), Some(&latest), Some(Rewrite { content: "new text", kind: Kind::Instruction, author: "admin:alice" }), order).unwrap(), "v12");
        assert_eq!(plan_version(Some("v10"), Some(&latest), Some(Rewrite { content: "new text", kind: Kind::Instruction, author: "admin:alice" }), order).unwrap(), "v10", "the latest itself: the ledger decides");
        let e = plan_version(Some("v9"), Some(&latest), Some(Rewrite { content: "new text", kind: Kind::Instruction, author: "admin:alice" }), order).unwrap_err();
        assert!(e.code == "fact_version_conflict" && e.message.starts_with("instruction:d/a/u/v9:"), "{}", e.message);
        assert_eq!(plan_version(Some("vx"), None, Some(Rewrite { content: "new text", kind: Kind::Instruction, author: "admin:alice" }), order).unwrap_err().code, "invalid_request");
        assert_eq!(plan_version(None, None, Some(Rewrite { content: "new text", kind: Kind::Instruction, author: "admin:alice" }), order).unwrap(), "v1");
        // the latest's own text again, as its own kind: the latest (a retried write), not v11
        let same = Latest { sha256: crate::attest::hex(&sha2::Sha256::digest(b"the text")), ..latest.clone() };
        assert_eq!(plan_version(None, Some(&same), Some(Rewrite { content: "the text", kind: Kind::Instruction, author: "admin:alice" }), order).unwrap(), "v10");
        assert_eq!(plan_version(None, Some(&same), Some(Rewrite { content: "the text", kind: Kind::Content, author: "admin:alice" }), order).unwrap(), "v11", "another kind is a new version");
        assert_eq!(plan_version(None, Some(&same), Some(Rewrite { content: "the text.", kind: Kind::Instruction, author: "admin:alice" }), order).unwrap(), "v11");
        assert_eq!(plan_version(None, Some(&same), None, order).unwrap(), "v11", "a promotion writes a version of its own");
        let by_bob = Some(Rewrite { content: "the text", kind: Kind::Instruction, author: "admin:bob" });
        assert_eq!(plan_version(None, Some(&same), by_bob, order).unwrap(), "v11", "another writer's own version");
        let held = Latest { quarantined: true, ..same.clone() };
        assert_eq!(plan_version(None, Some(&held), Some(Rewrite { content: "the text", kind: Kind::Instruction, author: "admin:alice" }), order).unwrap(), "v11", "a quarantined latest is not served: the text is written again");
        // a version with no next is refused before anything is written
        for huge in ["v18446744073709551615", "v18446744073709551616", "v99999999999999999999999"] {
            assert!(plan_version(Some(huge), None, Some(Rewrite { content: "new text", kind: Kind::Instruction, author: "admin:alice" }), order).unwrap_err().message.contains("is too large"), "{huge}");
        }
        assert_eq!(plan_version(Some("v18446744073709551614"), None, Some(Rewrite { content: "new text", kind: Kind::Instruction, author: "admin:alice" }), |_, _| Ok::<i8, Refusal>(1)).unwrap(), "v18446744073709551614");
    }

    #[test]
    fn published_content_takes_a_version_after_the_latest() {
        let latest = Latest { uri: "instruction:d/a/u/v10".into(), version: "v10".into(), interpret_as: "instruction".into(), sha256: String::new(), authored_by: "admin:alice".into(), quarantined: false };
        let order = |v: &str, than: Option<&str>| -> Result<i8, Refusal> {
            let n = |s: &str| s.trim_start_matches('v').parse::<i64>().unwrap_or(0);
            Ok(than.map_or(1, |t| (n(v) - n(t)).signum() as i8))
        };
        assert!(check_published_version::<Refusal>("instruction:d/a/u/v11", "v11", Some(&latest), order).is_ok());
        assert!(check_published_version::<Refusal>("instruction:d/a/u/v10", "v10", Some(&latest), order).is_ok(), "the latest itself: the same-content check decides");
        assert!(check_published_version::<Refusal>("instruction:d/a/u/v1", "v1", None, order).is_ok(), "a unit's first version");
        for older in ["v9", "v2"] {
            let e = check_published_version::<Refusal>(&format!("instruction:d/a/u/{older}"), older, Some(&latest), order).unwrap_err();
            assert_eq!((e.status, &*e.code), (409, "fact_version_conflict"));
            assert!(e.message.contains("\"v10\"") && e.message.contains("fact_uri"), "{}", e.message);
        }
    }

    #[test]
    fn a_taken_version_is_retryable_only_when_it_was_planned() {
        let planned = version_taken("instruction:d/a/u/v3", None);
        assert_eq!((planned.status, planned.code.as_ref(), planned.details["retryable"].as_bool()), (409, "fact_version_conflict", Some(true)));
        let named = version_taken("instruction:d/a/u/v3", Some("v3"));
        assert!(named.details.is_null() && named.message.contains("versions are immutable"), "{}", named.message);
    }

    #[test]
    fn content_never_replaces_an_instruction() {
        let latest = |ia: &str| Latest { uri: "instruction:d/a/u/v1".into(), version: "v1".into(), interpret_as: ia.into(), sha256: String::new(), authored_by: "admin:alice".into(), quarantined: false };
        assert_eq!(check_kind("u", Kind::Content, Some(&latest("instruction")), false).unwrap_err().code, "unit_kind_conflict");
        assert_eq!(check_kind("u", Kind::Content, None, true).unwrap_err().code, "unit_kind_conflict");
        assert!(check_kind("u", Kind::Content, Some(&latest("content")), false).is_ok());
        assert!(check_kind("u", Kind::Content, None, false).is_ok());
        // an instruction write (which needs instruction:write) may take over a content chain
        assert!(check_kind("u", Kind::Instruction, Some(&latest("content")), true).is_ok());
    }

    #[test]
    fn a_reviewed_unit_takes_new_text_only_through_a_publish() {
        let prepend = serde_json::json!({"name": "rules", "force_position": "prepend", "guarantee_load": true});
        let guaranteed = serde_json::json!({"name": "rules", "guarantee_load": true});
        let plain = serde_json::json!({"name": "rules", "guarantee_load": false});
        let e = check_reviewed("rules", Kind::Instruction, Some(&prepend)).unwrap_err();
        assert_eq!((e.status, &*e.code), (400, "force_position_approval_required"));
        assert!(e.message.contains("publish a new manifest version"), "{}", e.message);
        assert_eq!(check_reviewed("rules", Kind::Instruction, Some(&guaranteed)).unwrap_err().code, "guarantee_approval_required");
        assert!(check_reviewed("rules", Kind::Instruction, Some(&plain)).is_ok());
        assert!(check_reviewed("rules", Kind::Instruction, None).is_ok(), "a unit the manifest does not name");
        assert!(check_reviewed("rules", Kind::Content, Some(&prepend)).is_ok(), "content is refused by check_kind");
    }

    #[test]
    fn interpret_as_instruction_is_taken_as_sent_whatever_the_default() {
        let body = json!({"content": "x", "interpret_as": "instruction"});
        assert_eq!(UnitWrite::read("notes", &body).unwrap().kind, Kind::Instruction);
        // a promotion defaults to content (Spec-13) but may ask for an instruction
        let (kind, _) = promotion(&json!({"uri": "quarantine:d/a/x/v1", "interpret_as": "instruction"})).unwrap();
        assert_eq!(kind, Kind::Instruction);
        assert_eq!(Kind::read(Some(&json!("content")), Kind::Instruction).unwrap(), Kind::Content);
    }

    #[test]
    fn a_units_entry_is_found_by_its_name_in_the_manifest() {
        let m = r#"{"entries": [{"name": "rules", "guarantee_load": true}, {"name": "style", "always_applicable": true}]}"#;
        assert_eq!(manifest_entry(m, "style"), Some(json!({"name": "style", "always_applicable": true})));
        assert_eq!(manifest_entry(m, "rules").unwrap()["guarantee_load"], true);
        assert_eq!(manifest_entry(m, "notes"), None, "a unit the manifest does not name");
        assert_eq!(manifest_entry("not json", "rules"), None);
        assert_eq!(manifest_entry(r#"{"entries": {}}"#, "rules"), None);
    }

    /// §21.1.1: the boot stub embeds always-applicable units, so an instruction written to
    /// one changes the stub; content, or a unit that is not always applicable, does not.
    #[test]
    fn only_an_instruction_to_an_always_applicable_unit_changes_the_stub() {
        let always = json!({"name": "style", "always_applicable": true});
        assert!(changes_stub(Kind::Instruction, Some(&always)));
        assert!(!changes_stub(Kind::Content, Some(&always)));
        for other in [json!({"name": "style"}), json!({"name": "style", "always_applicable": false}), json!({"name": "style", "always_applicable": "true"})] {
            assert!(!changes_stub(Kind::Instruction, Some(&other)), "{other}");
        }
        assert!(!changes_stub(Kind::Instruction, None));
    }

    /// §21.4.3: facts authored by verified administrators SHOULD have `source_trust >= 0.9`;
    /// an agent's own 0.7, and an agent-role key holding `admin` is no administrator.
    #[test]
    fn an_admins_facts_are_trusted_more_than_an_agents() {
        use crate::access::{Principal, Role, CAP_ADMIN, CAP_READ};
        let key = |role, caps: &[&str]| Principal { key_id: "k".into(), role, agent_id: None, capabilities: caps.iter().map(|c| c.to_string()).collect(), entity_uri: "e".into() };
        assert_eq!(source_trust(&key(Role::Admin, &[CAP_ADMIN, CAP_READ])), 0.9);
        assert_eq!(source_trust(&key(Role::Agent, &[CAP_READ])), 0.7);
        assert_eq!(source_trust(&key(Role::Agent, &[CAP_ADMIN, CAP_READ])), 0.7);
    }

    #[test]
    fn a_promoted_fact_is_authored_by_its_origin_else_by_the_admin_who_promoted_it() {
        assert_eq!(promoted_author("org:other-co", "admin:alice"), "org:other-co");
        assert_eq!(promoted_author("", "admin:alice"), "admin:alice", "quarantined for its attestation: no origin");
    }

    #[test]
    fn a_requested_version_that_is_not_a_plain_vn_is_left_to_the_engines_order() {
        let after = |_: &str, _: Option<&str>| Ok::<i8, Refusal>(1);
        for v in ["v2.0", "v2.1.0-rc1", "v", "release-a"] {
            assert_eq!(plan_version(Some(v), None, None, after).unwrap(), v, "{v}");
        }
    }

    /// §21.4.1: versions increase monotonically; a version of the same precedence as the
    /// latest (`v10+build` against `v10`) is not after it.
    #[test]
    fn published_content_of_the_latests_precedence_is_not_newer() {
        let latest = Latest { uri: "instruction:d/a/u/v10".into(), version: "v10".into(), interpret_as: "instruction".into(), sha256: String::new(), authored_by: "admin:alice".into(), quarantined: false };
        let e = check_published_version::<Refusal>("instruction:d/a/u/v10+build", "v10+build", Some(&latest), |_, _| Ok(0)).unwrap_err();
        assert_eq!((e.status, &*e.code), (409, "fact_version_conflict"));
    }

    #[test]
    fn a_write_basis_names_a_manifest_row_or_a_first_deployment() {
        assert_eq!(basis_manifest("manifest:man_01"), Some("man_01"));
        assert_eq!(basis_manifest("deployment:acme"), None);
        assert_eq!(basis_manifest(""), None);
    }
}
