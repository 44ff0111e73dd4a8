//! Who may do what (§21.4.4–5, S9, Spec-13), decided the same way by both hosts: the
//! caller of a request (an API key's role, bound agent and capabilities) and the checks
//! the routes make. Only the supervision lookup (the org manifest's pairs, in SQLite or
//! D1) is left to the host: [`Principal::read_check`] says when it is needed.
//!
//! - An **admin** key (`admin`, `read`) reads every agent and publishes manifests.
//! - An **agent** key is bound to one agent and reads only that agent's stub, manifest,
//!   recall and coverage; a declared supervisor's key also reads its reports' manifest,
//!   recall, packs and boot context (§21.4.5 rule 1), but not their boot stub (§21.8.1:
//!   "the agent itself or an admin") or coverage report (S9: "only an admin API key may
//!   access any agent's coverage report").
//! - Writing instruction facts needs the `instruction:write` capability on top
//!   (Spec-13): admin authority alone is not enough.

use serde::{Deserialize, Serialize};

use crate::Refusal;

pub const CAP_READ: &str = "read";
pub const CAP_ADMIN: &str = "admin";
pub const CAP_INSTRUCTION_WRITE: &str = "instruction:write";
pub const CAPABILITIES: &[&str] = &[CAP_READ, CAP_ADMIN, CAP_INSTRUCTION_WRITE];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Admin,
    Agent,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Agent => "agent",
        }
    }

    /// A stored role name: `admin`, anything else an agent key.
    pub fn from_stored(role: &str) -> Self {
        if role == "admin" {
            Role::Admin
        } else {
            Role::Agent
        }
    }
}

/// The caller of a request.
#[derive(Debug, Clone, Serialize)]
pub struct Principal {
    pub key_id: String,
    pub role: Role,
    pub agent_id: Option<String>,
    pub capabilities: Vec<String>,
    pub entity_uri: String,
}

/// The key in an `Authorization: Bearer <key>` header (the scheme case-insensitive, as
/// RFC 7235 has it), or `None` when the header holds no bearer key.
pub fn bearer_secret(header: &str) -> Option<&str> {
    let (scheme, rest) = header.trim_start().split_once(' ')?;
    let secret = rest.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !secret.is_empty()).then_some(secret)
}

/// 403 `instruction_scope_denied` for acting as `agent` (writing its units, packs or
/// handoffs, submitting its audit): only the agent itself or an admin may (§21.4.5); a
/// supervisor may read, not act.
pub fn act_denied(agent: &str) -> Refusal {
    Refusal::new(
        403,
        "instruction_scope_denied",
        format!("this API key may not act for agent {agent:?} (§21.4.5): use the agent's own key or an admin key; a declared supervisor may read the agent's instructions, not write them or submit its audit"),
    )
}

/// 403 `instruction_scope_denied` (§21.4.5).
pub fn scope_denied(agent: &str) -> Refusal {
    Refusal::new(
        403,
        "instruction_scope_denied",
        format!("this API key may not read agent {agent:?}'s instructions (§21.4.5): use the agent's own key, a declared supervisor's key or an admin key"),
    )
}

impl Principal {
    pub fn is_admin(&self) -> bool {
        self.role == Role::Admin && self.has(CAP_ADMIN)
    }

    pub fn has(&self, cap: &str) -> bool {
        self.capabilities.iter().any(|c| c == cap)
    }

    /// An agent key bound to `agent`.
    pub fn is_agent(&self, agent: &str) -> bool {
        self.role == Role::Agent && self.agent_id.as_deref() == Some(agent)
    }

    /// Every check on an agent's route first refuses an `agent` that is not an agent id
    /// (400 `invalid_request`: no such agent can exist, so "not found" would mislead).
    ///
    /// Reading `agent`'s instructions: `Ok(None)` allowed (admin, or the agent itself);
    /// `Ok(Some(me))` allowed only if the org manifest declares agent `me` a supervisor of
    /// `agent` (the host looks it up; if not, [`scope_denied`]); otherwise refused.
    pub fn read_check(&self, agent: &str) -> Result<Option<&str>, Refusal> {
        crate::ids::check_agent_id(agent)?;
        if !self.has(CAP_READ) && !self.is_admin() {
            return Err(Refusal::new(403, "capability_missing", "this API key lacks the `read` capability"));
        }
        if self.is_admin() || self.is_agent(agent) {
            return Ok(None);
        }
        match self.agent_id.as_deref() {
            Some(me) => Ok(Some(me)),
            None => Err(scope_denied(agent)),
        }
    }

    /// Read what only `agent` itself or an admin may read (`what`: the boot stub,
    /// §21.8.1; the coverage report, S9): a supervisor's key is refused too.
    pub fn require_own_read(&self, agent: &str, what: &str) -> Result<(), Refusal> {
        crate::ids::check_agent_id(agent)?;
        if !self.has(CAP_READ) && !self.is_admin() {
            return Err(Refusal::new(403, "capability_missing", "this API key lacks the `read` capability"));
        }
        if self.is_admin() || self.is_agent(agent) {
            Ok(())
        } else {
            Err(Refusal::new(403, "instruction_scope_denied", format!("this API key may not read agent {agent:?}'s {what}: only the agent's own key or an admin key may (a declared supervisor reads its manifest and recalls, §21.4.5)")))
        }
    }

    /// The boot context, or a heartbeat (which answers with the boot stub and the preloads):
    /// what [`Principal::require_own_read`] allows, as their identity section is the boot
    /// stub (§21.8.1, so a supervisor is refused), and with `acting` (a signed trigger, or a
    /// heartbeat) only the agent itself or an admin, as [`Principal::require_self`].
    pub fn require_boot(&self, agent: &str, acting: bool) -> Result<(), Refusal> {
        if acting {
            self.require_self(agent)?;
        }
        self.require_own_read(agent, "boot context (its identity section is the boot stub)")
    }

    /// Act as the agent (heartbeats): the agent itself or an admin.
    pub fn require_self(&self, agent: &str) -> Result<(), Refusal> {
        crate::ids::check_agent_id(agent)?;
        if self.is_admin() || self.is_agent(agent) {
            Ok(())
        } else {
            Err(act_denied(agent))
        }
    }

    pub fn require_admin(&self) -> Result<(), Refusal> {
        if self.is_admin() {
            Ok(())
        } else {
            Err(Refusal::new(403, "admin_required", "only an admin API key may do this: use an admin key (lid keys create --role admin)"))
        }
    }

    /// Write content-typed facts into `agent`'s instruction garden (`PUT …/units/{name}`
    /// with `interpret_as: content`): an administrator. The agent itself has read-only
    /// access to its garden (§21.4.4); its own data goes in a knowledge pack
    /// (`PUT …/knowledge/{pack}`, `knowledge:` facts outside the garden).
    pub fn require_content_write(&self, agent: &str) -> Result<(), Refusal> {
        crate::ids::check_agent_id(agent)?;
        if self.is_admin() {
            return Ok(());
        }
        if !self.is_agent(agent) {
            return Err(act_denied(agent));
        }
        Err(Refusal::new(
            403,
            "admin_required",
            "an agent's key writes nothing into its instruction garden (§21.4.4: the agent itself has read-only access): an administrator writes its units (instructions with a key that holds `instruction:write`); the agent's own data goes in a knowledge pack (PUT /v1/agents/{id}/knowledge/{pack})",
        ))
    }

    /// Write instruction-typed facts for `agent`: what [`Principal::require_content_write`]
    /// allows (an administrator, §21.4.4), with `instruction:write` (Spec-13: general write
    /// or admin authority is not enough).
    pub fn require_instruction_write(&self, agent: &str) -> Result<(), Refusal> {
        self.require_content_write(agent)?;
        if !self.has(CAP_INSTRUCTION_WRITE) {
            return Err(Refusal::new(
                403,
                "instruction_write_required",
                "writing instruction facts needs the `instruction:write` capability (Spec-13); general write or admin authority is not enough: create a key with it",
            ));
        }
        Ok(())
    }
}

/// An agent key asked for with `instruction:write`: refused whoever asks (§21.4.4).
fn agent_writer() -> Refusal {
    Refusal::invalid_request("an agent key cannot hold `instruction:write`: the agent itself has read-only access to its instruction garden (§21.4.4); administrators write it, with an admin key that holds `instruction:write`")
}

/// A key as listed (never the secret).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KeyInfo {
    pub id: String,
    pub role: String,
    pub agent_id: Option<String>,
    #[serde(deserialize_with = "crate::string_list")]
    pub capabilities: Vec<String>,
    pub entity_uri: String,
    pub label: String,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

/// A request to create a key. A field it does not have is refused: a mistyped
/// `capabilities` would otherwise mint a key with the default ones.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewKey {
    pub role: String,
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub capabilities: Option<Vec<String>>,
    #[serde(default)]
    pub entity_uri: Option<String>,
    #[serde(default)]
    pub label: Option<String>,
}

impl NewKey {
    /// This request as `creator` (an admin, over HTTP) may make it: an admin key holds the
    /// creator's own identity (`entity_uri` left out or the same), so that one admin cannot
    /// mint a second administrator and co-sign for two (S7: "two distinct administrators");
    /// keys of other administrators come from the operator (`lid keys create` on the
    /// database, the worker's `LID_ADMIN_KEYS`). Likewise an agent key holds the agent's
    /// identity (`agent:{agent_id}`), so that what it writes is never authored under
    /// someone else's name. And a key made here holds `instruction:write` only when its
    /// creator's does: admin authority alone never writes instructions (Spec-13), not
    /// even by minting a key that may.
    pub fn issued_by(mut self, creator: &Principal) -> Result<NewKey, Refusal> {
        self.check_text()?;
        if self.role == "agent" && self.capabilities.as_ref().is_some_and(|c| c.iter().any(|c| c == CAP_INSTRUCTION_WRITE)) {
            return Err(agent_writer());
        }
        let given = self.entity_uri.as_deref().map(str::trim).filter(|e| !e.is_empty()).map(str::to_string);
        if self.role == "admin" {
            match given {
                None => self.entity_uri = Some(creator.entity_uri.clone()),
                Some(e) if e == creator.entity_uri => {}
                Some(e) => {
                    return Err(Refusal::new(
                        403,
                        "entity_uri_denied",
                        format!("an admin key created over HTTP holds its creator's identity ({:?}), not {e:?}: another administrator's key is created by the operator (`lid keys create`, or the worker's LID_ADMIN_KEYS), so that two co-signatures are two people (S7)", creator.entity_uri),
                    ))
                }
            }
        } else if let (Some(e), Some(agent)) = (given, self.agent_id.as_deref().map(str::trim).filter(|a| !a.is_empty())) {
            let own = format!("agent:{agent}");
            if e != own {
                return Err(Refusal::new(
                    403,
                    "entity_uri_denied",
                    format!("an agent key created over HTTP holds its agent's identity ({own:?}), not {e:?}: leave `entity_uri` out, or have the operator create the key (`lid keys create --entity-uri`)"),
                ));
            }
        }
        if self.capabilities.as_ref().is_some_and(|c| c.iter().any(|c| c == CAP_INSTRUCTION_WRITE)) && !creator.has(CAP_INSTRUCTION_WRITE) {
            return Err(Refusal::new(
                403,
                "instruction_write_required",
                "a key created over HTTP holds `instruction:write` only when its creator's key does: admin authority alone never writes instructions (Spec-13). Create it with a key that holds `instruction:write`, or as the operator (`lid keys create --cap instruction:write`)",
            ));
        }
        Ok(self)
    }


    /// An `entity_uri` and a `label` are each one line of at most 256 characters, without
    /// control characters: they are listed one key a line, and logged.
    fn check_text(&self) -> Result<(), Refusal> {
        for (field, value) in [("entity_uri", &self.entity_uri), ("label", &self.label)] {
            let Some(v) = value.as_deref() else { continue };
            if v.chars().count() > 256 || v.chars().any(crate::ids::is_hidden) {
                let shown: String = v.chars().take(80).collect();
                return Err(Refusal::invalid_request(format!("`{field}` must be one line of at most 256 characters without control or invisible characters, not {shown:?}{}", if shown.len() < v.len() { "…" } else { "" })));
            }
        }
        Ok(())
    }

    /// The key this request creates, checked (role, binding, capabilities), and its
    /// secret `lid_{role}_{secret_hex}` (shown once; only its SHA-256 is stored). The id is
    /// `key_{id_hex}`; the hosts draw both hex strings from their system randomness.
    pub fn mint(&self, id_hex: &str, secret_hex: &str, now_ms: i64) -> Result<(KeyInfo, String), Refusal> {
        self.check_text()?;
        let role = match self.role.as_str() {
            "admin" => Role::Admin,
            "agent" => Role::Agent,
            other => return Err(Refusal::invalid_request(format!("`role` must be \"admin\" or \"agent\", not {other:?}"))),
        };
        let agent_id = self.agent_id.clone().filter(|a| !a.trim().is_empty());
        match (role, &agent_id) {
            (Role::Agent, None) => return Err(Refusal::invalid_request("an agent key needs `agent_id` (`--agent` on `lid keys create`): the one agent it is bound to")),
            (Role::Admin, Some(_)) => return Err(Refusal::invalid_request("an admin key is not bound to an agent: drop `agent_id`")),
            _ => {}
        }
        if let Some(a) = &agent_id {
            crate::ids::check_agent_id(a)?;
        }
        let mut caps = self.capabilities.clone().unwrap_or_else(|| match role {
            Role::Admin => vec![CAP_ADMIN.into(), CAP_READ.into()],
            Role::Agent => vec![CAP_READ.into()],
        });
        for c in &caps {
            if !CAPABILITIES.contains(&c.as_str()) {
                return Err(Refusal::invalid_request(format!("unknown capability {c:?}; known: {}", CAPABILITIES.join(", "))));
            }
        }
        if role == Role::Agent && caps.iter().any(|c| c == CAP_ADMIN) {
            return Err(Refusal::invalid_request("the `admin` capability belongs to admin keys only"));
        }
        if role == Role::Agent && caps.iter().any(|c| c == CAP_INSTRUCTION_WRITE) {
            return Err(agent_writer());
        }
        if role == Role::Admin && !caps.iter().any(|c| c == CAP_ADMIN) {
            caps.insert(0, CAP_ADMIN.into());
        }
        caps.sort();
        caps.dedup();
        let id = format!("key_{id_hex}");
        let secret = format!("lid_{}_{secret_hex}", role.as_str());
        // stored trimmed, as `issued_by` compares it: " admin:x" is admin:x, so one
        // administrator cannot hold two identities and co-sign for both (S7)
        let entity_uri = self.entity_uri.as_deref().map(str::trim).filter(|e| !e.is_empty()).map(str::to_string).unwrap_or_else(|| match &agent_id {
            Some(a) => format!("agent:{a}"),
            None => format!("admin:{id}"),
        });
        let info = KeyInfo { id, role: role.as_str().into(), agent_id, capabilities: caps, entity_uri, label: self.label.clone().unwrap_or_default(), created_at: now_ms, revoked_at: None };
        Ok((info, secret))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_keys_with_any_case_of_the_scheme() {
        assert_eq!(bearer_secret("Bearer k1"), Some("k1"));
        assert_eq!(bearer_secret("bearer  k1 "), Some("k1"));
        assert_eq!(bearer_secret("BEARER k1"), Some("k1"));
        for none in ["Bearer", "Bearer ", "Basic k1", "k1", ""] {
            assert_eq!(bearer_secret(none), None, "{none:?}");
        }
    }

    #[test]
    fn an_admin_mints_admin_keys_only_in_its_own_name() {
        let carol = Principal { key_id: "k".into(), role: Role::Admin, agent_id: None, capabilities: vec![CAP_ADMIN.into()], entity_uri: "user:carol".into() };
        let req = |v: serde_json::Value| serde_json::from_value::<NewKey>(v).unwrap();
        assert_eq!(req(serde_json::json!({"role": "admin"})).issued_by(&carol).unwrap().entity_uri.as_deref(), Some("user:carol"));
        // S7: the identity a key holds is the one compared, spaces and all
        for spaced in [" user:carol", "user:carol  ", " user:carol "] {
            let k = req(serde_json::json!({"role": "admin", "entity_uri": spaced})).issued_by(&carol);
            let k = k.and_then(|k| k.mint("01", "02", 0));
            assert_eq!(k.map(|(info, _)| info.entity_uri), Ok("user:carol".to_string()), "{spaced:?}");
        }
        assert!(req(serde_json::json!({"role": "admin", "entity_uri": "user:carol"})).issued_by(&carol).is_ok());
        assert_eq!(req(serde_json::json!({"role": "admin", "entity_uri": "user:bob"})).issued_by(&carol).unwrap_err().code, "entity_uri_denied");
        // an agent key holds its agent's identity, never another principal's
        assert_eq!(req(serde_json::json!({"role": "agent", "agent_id": "a", "entity_uri": "agent:a"})).issued_by(&carol).unwrap().entity_uri.as_deref(), Some("agent:a"));
        assert_eq!(req(serde_json::json!({"role": "agent", "agent_id": "a"})).issued_by(&carol).unwrap().entity_uri, None);
        for other in ["bot:a", "admin:second", "agent:b", "user:carol"] {
            assert_eq!(req(serde_json::json!({"role": "agent", "agent_id": "a", "entity_uri": other})).issued_by(&carol).unwrap_err().code, "entity_uri_denied", "{other}");
        }
        assert_eq!(req(serde_json::json!({"role": "agent", "agent_id": "a", "entity_uri": "x\ny"})).issued_by(&carol).unwrap_err().code, "invalid_request");
        // instruction:write only from a creator that holds it (Spec-13), and never for an
        // agent key, whoever asks (§21.4.4)
        let writer = Principal { capabilities: vec![CAP_ADMIN.into(), CAP_INSTRUCTION_WRITE.into()], ..carol.clone() };
        let mut r = serde_json::json!({"role": "admin", "capabilities": ["read", "instruction:write"]});
        assert_eq!(req(r.clone()).issued_by(&carol).unwrap_err().code, "instruction_write_required", "{r}");
        assert!(req(r.clone()).issued_by(&writer).is_ok(), "{r}");
        r["capabilities"] = serde_json::json!(["read"]);
        assert!(req(r.clone()).issued_by(&carol).is_ok(), "{r}");
        let agent = serde_json::json!({"role": "agent", "agent_id": "a", "capabilities": ["read", "instruction:write"]});
        for creator in [&carol, &writer] {
            let e = req(agent.clone()).issued_by(creator).unwrap_err();
            assert_eq!((e.status, &*e.code), (400, "invalid_request"), "{}", e.message);
        }
        assert!(req(serde_json::json!({"role": "agent", "agent_id": "a", "capabilities": ["read"]})).issued_by(&carol).is_ok());
    }

    #[test]
    fn minting_keys() {
        let req = |v: serde_json::Value| serde_json::from_value::<NewKey>(v).unwrap();
        let (info, secret) = req(serde_json::json!({"role": "agent", "agent_id": "eng", "capabilities": ["read", "read"]})).mint("ab", "cd", 7).unwrap();
        assert_eq!((info.id.as_str(), secret.as_str(), info.entity_uri.as_str(), info.created_at), ("key_ab", "lid_agent_cd", "agent:eng", 7));
        assert_eq!(info.capabilities, ["read"]);
        let (writer, _) = req(serde_json::json!({"role": "admin", "capabilities": ["read", "instruction:write", "read"]})).mint("ef", "01", 7).unwrap();
        assert_eq!(writer.capabilities, ["admin", "instruction:write", "read"]);
        let typo = serde_json::from_value::<NewKey>(serde_json::json!({"role": "agent", "agent_id": "eng", "capabilites": ["read", "instruction:write"]})).unwrap_err();
        assert!(typo.to_string().contains("unknown field `capabilites`"), "a mistyped field is refused, not defaulted: {typo}");
        let (admin, _) = req(serde_json::json!({"role": "admin", "capabilities": ["read"], "label": "ops"})).mint("01", "02", 0).unwrap();
        assert_eq!((admin.capabilities.clone(), admin.entity_uri.as_str(), admin.label.as_str()), (vec!["admin".to_string(), "read".to_string()], "admin:key_01", "ops"));
        for (bad, needle) in [
            (serde_json::json!({"role": "root"}), "`role` must be"),
            (serde_json::json!({"role": "agent"}), "needs `agent_id`"),
            (serde_json::json!({"role": "admin", "agent_id": "eng"}), "not bound to an agent"),
            (serde_json::json!({"role": "agent", "agent_id": "eng", "capabilities": ["admin"]}), "admin keys only"),
            (serde_json::json!({"role": "agent", "agent_id": "eng", "capabilities": ["write"]}), "unknown capability"),
            (serde_json::json!({"role": "agent", "agent_id": "eng", "capabilities": ["read", "instruction:write"]}), "read-only access to its instruction garden (§21.4.4)"),
            (serde_json::json!({"role": "agent", "agent_id": "../x"}), "must be 1-128"),
            (serde_json::json!({"role": "admin", "entity_uri": "x\ny"}), "`entity_uri` must be one line"),
            (serde_json::json!({"role": "admin", "label": "evil\u{1b}[31m"}), "`label` must be one line"),
            (serde_json::json!({"role": "admin", "label": "x".repeat(300)}), "\u{2026}"),
        ] {
            let e = req(bad.clone()).mint("a", "b", 0).unwrap_err();
            assert!(e.status == 400 && e.message.contains(needle), "{bad}: {}", e.message);
        }
        // D1 gives capabilities back as JSON text
        let stored: KeyInfo = serde_json::from_value(serde_json::json!({"id": "k", "role": "agent", "agent_id": "a", "capabilities": "[\"read\"]", "entity_uri": "e", "label": "", "created_at": 1, "revoked_at": null})).unwrap();
        assert_eq!(stored.capabilities, ["read"]);
    }

    fn key(role: Role, agent: Option<&str>, caps: &[&str]) -> Principal {
        Principal { key_id: "k".into(), role, agent_id: agent.map(str::to_string), capabilities: caps.iter().map(|c| c.to_string()).collect(), entity_uri: "e".into() }
    }

    #[test]
    fn the_access_matrix() {
        let admin = key(Role::Admin, None, &[CAP_ADMIN, CAP_READ]);
        let own = key(Role::Agent, Some("a"), &[CAP_READ]);
        let writer = key(Role::Admin, None, &[CAP_ADMIN, CAP_READ, CAP_INSTRUCTION_WRITE]);
        // a key stored before agent keys were refused `instruction:write`
        let agent_writer = key(Role::Agent, Some("a"), &[CAP_READ, CAP_INSTRUCTION_WRITE]);
        let boss = key(Role::Agent, Some("boss"), &[CAP_READ]);
        let no_read = key(Role::Agent, Some("a"), &[]);
        let fake_admin = key(Role::Agent, None, &[CAP_ADMIN, CAP_READ]);

        assert_eq!(admin.read_check("a").unwrap(), None);
        assert_eq!(own.read_check("a").unwrap(), None);
        assert_eq!(boss.read_check("a").unwrap(), Some("boss"), "a supervisor needs the org lookup");
        assert_eq!(no_read.read_check("a").unwrap_err().code, "capability_missing");
        assert_eq!(fake_admin.read_check("a").unwrap_err().code, "instruction_scope_denied", "an agent-role key with `admin` is no admin");
        // the boot stub (§21.8.1) and the coverage report (S9): the agent or an admin only
        assert!(admin.require_own_read("a", "boot stub").is_ok() && own.require_own_read("a", "boot stub").is_ok());
        let e = boss.require_own_read("a", "coverage report").unwrap_err();
        assert_eq!((e.status, &*e.code), (403, "instruction_scope_denied"));
        assert!(e.message.contains("coverage report"), "{}", e.message);
        assert_eq!(no_read.require_own_read("a", "boot stub").unwrap_err().code, "capability_missing");
        assert_eq!(fake_admin.require_own_read("a", "boot stub").unwrap_err().code, "instruction_scope_denied");

        assert!(admin.require_self("a").is_ok() && own.require_self("a").is_ok());
        assert_eq!(boss.require_self("a").unwrap_err().code, "instruction_scope_denied");
        assert!(admin.require_admin().is_ok());
        assert_eq!(own.require_admin().unwrap_err().code, "admin_required");
        // Spec-13: admin authority alone does not write instructions
        assert_eq!(admin.require_instruction_write("a").unwrap_err().code, "instruction_write_required");
        // §21.4.4: the agent itself only reads its instruction garden, whatever its key holds
        for agent_key in [&own, &agent_writer] {
            let e = agent_key.require_instruction_write("a").unwrap_err();
            assert_eq!((e.status, &*e.code), (403, "admin_required"));
            assert!(e.message.contains("§21.4.4"), "{}", e.message);
        }
        assert_eq!(agent_writer.require_instruction_write("b").unwrap_err().code, "instruction_scope_denied");
        assert!(writer.require_instruction_write("a").is_ok() && writer.require_instruction_write("b").is_ok());
        // content in the garden: admins only; the agent's data goes in a knowledge pack
        assert!(admin.require_content_write("a").is_ok());
        let e = own.require_content_write("a").unwrap_err();
        assert!(e.code == "admin_required" && e.message.contains("knowledge pack"), "{}", e.message);
        assert_eq!(boss.require_content_write("a").unwrap_err().code, "instruction_scope_denied");
        assert_eq!((Role::from_stored("admin"), Role::from_stored("agent"), Role::Agent.as_str()), (Role::Admin, Role::Agent, "agent"));
        // a route for an id no agent can have is refused as such, for every caller
        for bad in ["a b", "..", &"x".repeat(129)] {
            assert_eq!(admin.read_check(bad).unwrap_err().code, "invalid_request", "{bad}");
            assert_eq!(admin.require_own_read(bad, "boot stub").unwrap_err().status, 400);
            assert_eq!(admin.require_self(bad).unwrap_err().code, "invalid_request");
            assert_eq!(writer.require_instruction_write(bad).unwrap_err().code, "invalid_request");
        }
    }

    /// The boot context's identity section is the boot stub (§21.8.1: the agent itself or
    /// an admin), so a supervisor is refused it; acting (a signed trigger, a heartbeat) is
    /// the agent's own or an admin's (§21.4.5).
    #[test]
    fn the_boot_context_is_the_agents_own_or_an_admins() {
        let admin = key(Role::Admin, None, &[CAP_ADMIN, CAP_READ]);
        let own = key(Role::Agent, Some("a"), &[CAP_READ]);
        let boss = key(Role::Agent, Some("boss"), &[CAP_READ]);
        let no_read = key(Role::Agent, Some("a"), &[]);
        for acting in [false, true] {
            assert!(admin.require_boot("a", acting).is_ok() && own.require_boot("a", acting).is_ok(), "{acting}");
            assert_eq!(boss.require_boot("a", acting).unwrap_err().code, "instruction_scope_denied", "{acting}");
            assert_eq!(no_read.require_boot("a", acting).unwrap_err().code, "capability_missing", "{acting}");
            assert_eq!(admin.require_boot("a b", acting).unwrap_err().code, "invalid_request", "{acting}");
        }
        assert!(boss.require_boot("a", false).unwrap_err().message.contains("boot context"));
        assert!(boss.require_boot("a", true).unwrap_err().message.contains("may not act for agent"));
    }

    #[test]
    fn a_label_or_entity_uri_may_be_256_characters_and_no_more() {
        let req = |v: serde_json::Value| serde_json::from_value::<NewKey>(v).unwrap();
        for field in ["label", "entity_uri"] {
            let (info, _) = req(serde_json::json!({"role": "admin", field: "é".repeat(256)})).mint("01", "02", 0).unwrap();
            assert_eq!(if field == "label" { &info.label } else { &info.entity_uri }.chars().count(), 256, "{field}");
            let e = req(serde_json::json!({"role": "admin", field: "x".repeat(257)})).mint("01", "02", 0).unwrap_err();
            assert!(e.message.contains(&format!("`{field}` must be one line of at most 256 characters")), "{}", e.message);
        }
    }
}
