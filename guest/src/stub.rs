//! Boot stub rendering (§21.1): YAML frontmatter + markdown body, per adapter profile.
//!
//! Byte-reproducible: `generated_at` is the manifest's publish time, never the clock.
//! The body is counted with cl100k: over 500 tokens is an error, over 450 a warning
//! (§21.1.2). Units marked `always_applicable` are embedded in the body (§21.1.1).

use serde::{Deserialize, Serialize};

use crate::error::EngineError;
use crate::manifest::Manifest;
use crate::store::Facts;

/// Schema version of the stub layout; bump when rendering changes (§21.1.4).
pub const STUB_VERSION: u32 = 1;
/// Hard body limit (§21.1.2).
pub const BODY_TOKEN_LIMIT: usize = 500;
/// Recommended body target (§21.1.2).
pub const BODY_TOKEN_TARGET: usize = 450;
/// `generated_at` for a manifest without a publish time (never the clock).
pub const UNPUBLISHED_AT: &str = "1970-01-01T00:00:00Z";

/// Built-in adapter profiles (§21.1.3).
pub const PROFILES: &[&str] = &["generic", "paperclip-claude-code", "openai-assistants"];

/// The JSON Schema of the `recall_instruction` tool (§21.3.1), inlined in every stub.
pub fn recall_tool_schema() -> serde_json::Value {
    serde_json::json!({
        "name": "recall_instruction",
        "description": "Load the instruction units relevant to what you are about to do.",
        "input_schema": {
            "type": "object",
            "properties": {
                "intent": {"type": "string", "minLength": 1, "description": "What you are about to do or need help with."},
                "max_chunks": {"type": "integer", "minimum": 1, "maximum": 50, "default": 3},
                "token_budget": {"type": "integer", "minimum": 1, "default": 2000},
                "manifest_hint": {"type": "array", "items": {"type": "string"}, "description": "Unit names from the manifest to load first."}
            },
            "required": ["intent"],
            "additionalProperties": false
        }
    })
}

/// A rendered stub.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stub {
    pub agent_id: String,
    /// The profile actually used (unknown profiles become `generic`, §21.1.3).
    pub adapter_profile: String,
    pub stub_version: u32,
    pub manifest_version: String,
    pub manifest_uri: String,
    pub generated_at: String,
    /// The full document: frontmatter + body.
    pub text: String,
    /// cl100k tokens of the body only (the §21.1.2 limit applies to it).
    pub body_tokens: usize,
    /// cl100k tokens of the whole document.
    pub total_tokens: usize,
    /// Units embedded as always-applicable rules.
    pub embedded_units: Vec<String>,
    pub warnings: Vec<String>,
}

/// Resolve a profile name: unknown profiles are `generic` (§21.1.3).
pub fn resolve_profile(p: Option<&str>) -> &'static str {
    let p = p.unwrap_or("generic");
    PROFILES.iter().copied().find(|k| *k == p).unwrap_or("generic")
}

/// §21.6.1 rule 4: `file` (paths only), `coexistence` (both), `stigmem` (fact URIs only).
pub fn migration_mode(m: &Manifest) -> &'static str {
    let uris = m.entries.iter().any(|e| e.fact_uri.is_some());
    let paths = m.entries.iter().any(|e| e.path.is_some());
    match (uris, paths) {
        (true, true) => "coexistence",
        (false, true) => "file",
        _ => "stigmem",
    }
}

/// The heartbeat procedure's URI (§21.1.1): the manifest's `heartbeat_contract`, else the
/// first unit whose name starts with `heartbeat`; `None` when the manifest names none.
pub fn heartbeat_contract(m: &Manifest) -> Option<String> {
    if let Some(h) = m.heartbeat_contract.as_ref().filter(|h| !h.is_empty()) {
        return Some(h.clone());
    }
    m.entries.iter().find(|e| e.name.starts_with("heartbeat")).and_then(|e| e.fact_uri.clone().or_else(|| e.path.clone()))
}

/// `s` as a YAML double-quoted scalar: a JSON string, with the characters YAML does not
/// allow unescaped that JSON leaves as they are (DEL, the C1 controls, U+FFFE and
/// U+FFFF) written as `\uXXXX`, which both read alike.
fn q(s: &str) -> String {
    let json = serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    let unprintable = |c: char| matches!(c, '\u{7f}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}');
    if !json.contains(unprintable) {
        return json;
    }
    json.chars().fold(String::with_capacity(json.len() + 8), |mut out, c| {
        if unprintable(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
        out
    })
}

fn profile_section(profile: &str) -> &'static str {
    match profile {
        "paperclip-claude-code" => "\n## Harness\n\nThe Paperclip harness injects its tool definitions after this stub. \
`recall_instruction` is one of them: call it with a JSON object matching `recall_tool_schema`. \
At the end of the heartbeat, submit which recalled units you used with the `audit_token` you received.\n",
        "openai-assistants" => "\n## Tool calls\n\n`recall_instruction` is declared as a function tool: call it with arguments matching \
`recall_tool_schema`; the runtime returns the units as the tool output. Report used units with the `audit_token` at the end of the run.\n",
        _ => "",
    }
}

/// Render the boot stub for `profile` (§21.1.2). Always-applicable units are read from `facts`.
pub fn render(m: &Manifest, profile: Option<&str>, facts: &dyn Facts) -> Result<Stub, EngineError> {
    let profile = resolve_profile(profile);
    let manifest_uri = crate::uri::manifest_uri(&m.deployment, &m.agent_id, &m.manifest_version);
    let mut warnings = Vec::new();
    // The field is required (§21.1.1); without a procedure of its own the manifest is where
    // a heartbeat starts, and the body says so rather than calling the manifest a procedure.
    let procedure = heartbeat_contract(m);
    if procedure.is_none() {
        warnings.push("the manifest names no heartbeat procedure (no `heartbeat_contract`, no `heartbeat*` unit): heartbeat_contract is the manifest's URI".to_string());
    }
    let heartbeat = procedure.clone().unwrap_or_else(|| manifest_uri.clone());
    let generated_at = match m.published_at.as_deref().filter(|t| !t.is_empty()) {
        Some(t) if crate::manifest::is_rfc3339(t) => t.to_string(),
        Some(t) => {
            warnings.push(format!("published_at {t:?} is not an RFC 3339 time; generated_at is {UNPUBLISHED_AT}"));
            UNPUBLISHED_AT.to_string()
        }
        None => {
            warnings.push(format!("manifest has no published_at; generated_at is {UNPUBLISHED_AT}"));
            UNPUBLISHED_AT.to_string()
        }
    };
    // One line, whatever a local directory's manifest says (validation refuses others).
    let role = if m.agent_role.is_empty() { m.agent_id.clone() } else { m.agent_role.split_whitespace().collect::<Vec<_>>().join(" ") };
    let role = role.as_str();
    let schema = serde_json::to_string(&recall_tool_schema()).unwrap_or_default();

    let mut fm = String::new();
    fm.push_str("---\n");
    fm.push_str(&format!("agent_id: {}\n", q(&m.agent_id)));
    fm.push_str(&format!("agent_role: {}\n", q(role)));
    fm.push_str(&format!("heartbeat_contract: {}\n", q(&heartbeat)));
    fm.push_str(&format!("manifest_uri: {}\n", q(&manifest_uri)));
    fm.push_str(&format!("stub_version: {STUB_VERSION}\n"));
    fm.push_str(&format!("generated_at: {}\n", q(&generated_at)));
    fm.push_str(&format!("adapter_profile: {}\n", q(profile)));
    fm.push_str(&format!("migration_mode: {}\n", q(migration_mode(m))));
    fm.push_str(&format!("recall_tool_schema: {schema}\n"));
    fm.push_str("---\n");

    let mut body = String::new();
    body.push_str("\n# Agent Boot Stub\n\n");
    body.push_str(&format!("You are **{role}** (id: `{}`).\n\n", m.agent_id));
    match &procedure {
        Some(h) => body.push_str(&format!("Your heartbeat procedure is at `{h}`.\n")),
        None => body.push_str("No separate heartbeat procedure is published: start each heartbeat from your manifest.\n"),
    }
    body.push_str(&format!("Your instruction manifest is at `{manifest_uri}`.\n\n"));
    body.push_str(
        "Call `recall_instruction(intent)` to load relevant instruction sections before\n\
performing any non-trivial task. The manifest lists available sections and their\n\
triggers to help you decide when to load.\n",
    );

    let mut embedded = Vec::new();
    let always: Vec<_> = m.entries.iter().filter(|e| e.always_applicable).collect();
    if !always.is_empty() {
        body.push_str("\n## Always applicable\n");
        for e in always {
            let content = crate::recall::resolve_unit(m, e, facts)?.map(|r| r.fact.content);
            match content {
                Some(c) => {
                    body.push('\n');
                    body.push_str(c.trim_end());
                    body.push('\n');
                    embedded.push(e.name.clone());
                }
                None => warnings.push(format!("always-applicable unit {:?} is unavailable and was not embedded", e.name)),
            }
        }
    }
    body.push_str(profile_section(profile));

    let body_tokens = crate::tokens::count(&body);
    if body_tokens > BODY_TOKEN_LIMIT {
        return Err(EngineError::StubTooLarge { tokens: body_tokens });
    }
    if body_tokens > BODY_TOKEN_TARGET {
        warnings.push(format!("stub body is {body_tokens} tokens, above the {BODY_TOKEN_TARGET}-token target (§21.1.2)"));
    }
    let text = format!("{fm}{body}");
    let total_tokens = crate::tokens::count(&text);
    Ok(Stub {
        agent_id: m.agent_id.clone(),
        adapter_profile: profile.to_string(),
        stub_version: STUB_VERSION,
        manifest_version: m.manifest_version.clone(),
        manifest_uri,
        generated_at,
        text,
        body_tokens,
        total_tokens,
        embedded_units: embedded,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    /// YAML 1.2's printable set (§5.1): what may appear unescaped in a document.
    fn yaml_printable(c: char) -> bool {
        matches!(c, '\t' | '\n' | '\r' | ' '..='~' | '\u{85}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
    }

    #[test]
    fn frontmatter_values_are_yaml_even_with_characters_json_leaves_unescaped() {
        let role = "Eng\u{7f}ine\u{85}er\u{9f}\u{fffe}\u{ffff} \"q\" \\ é ✓";
        let quoted = super::q(role);
        assert!(quoted.chars().all(|c| yaml_printable(c) && c != '\u{85}'), "{quoted:?}");
        assert_eq!(quoted.matches("\\u").count(), 5, "{quoted}");
        // The escapes read back as the same string (JSON's and YAML's `\uXXXX` agree).
        assert_eq!(serde_json::from_str::<String>(&quoted).unwrap(), role);
        assert_eq!(super::q("plain role"), "\"plain role\"");
        // And a whole stub's frontmatter.
        let m = crate::manifest::Manifest { agent_id: "eng".into(), deployment: "acme".into(), agent_role: role.into(), manifest_version: "v1".into(), ..Default::default() };
        let stub = super::render(&m, None, &crate::store::MemoryFacts::new()).unwrap();
        let frontmatter = stub.text.split("---").nth(1).unwrap();
        assert!(frontmatter.contains("agent_role:"), "{frontmatter}");
        assert!(frontmatter.chars().all(|c| yaml_printable(c) && c != '\u{85}'), "{frontmatter:?}");
    }

    /// §21.1.1: `heartbeat_contract` points at the heartbeat procedure. A manifest without
    /// one still fills the required field (with its own URI) but the body does not call the
    /// manifest a procedure, and the render warns; a `heartbeat*` unit or the manifest's
    /// `heartbeat_contract` is named as the procedure.
    #[test]
    fn heartbeat_contract_is_a_procedure_or_said_to_be_missing() {
        let m = crate::manifest::Manifest { agent_id: "eng".into(), deployment: "acme".into(), agent_role: "Engineer".into(), manifest_version: "v1".into(), ..Default::default() };
        let facts = crate::store::MemoryFacts::new();
        let stub = super::render(&m, None, &facts).unwrap();
        assert!(stub.text.contains("heartbeat_contract: \"instruction:acme/eng/manifest/v1\"\n"), "{}", stub.text);
        assert!(!stub.text.contains("heartbeat procedure is at") && stub.text.contains("No separate heartbeat procedure"), "{}", stub.text);
        assert!(stub.warnings.iter().any(|w| w.contains("no heartbeat procedure")), "{:?}", stub.warnings);
        let mut with = m.clone();
        with.entries.push(crate::manifest::Entry { name: "heartbeat-contract".into(), fact_uri: Some("instruction:acme/eng/heartbeat-contract/v2".into()), ..Default::default() });
        let stub = super::render(&with, None, &facts).unwrap();
        assert!(stub.text.contains("heartbeat_contract: \"instruction:acme/eng/heartbeat-contract/v2\"\n"), "{}", stub.text);
        assert!(stub.text.contains("Your heartbeat procedure is at `instruction:acme/eng/heartbeat-contract/v2`."), "{}", stub.text);
        assert!(stub.warnings.iter().all(|w| !w.contains("heartbeat")), "{:?}", stub.warnings);
        let named = crate::manifest::Manifest { heartbeat_contract: Some("instruction:acme/shared/heartbeat/v3".into()), ..m };
        assert!(super::render(&named, None, &facts).unwrap().text.contains("Your heartbeat procedure is at `instruction:acme/shared/heartbeat/v3`."));
    }

    /// §21.1.1: the stub MUST carry the `recall_instruction` schema inline, so the agent
    /// can call the tool without a fetch; its limits are the ones recall enforces.
    #[test]
    fn the_frontmatter_carries_the_recall_tool_schema_inline() {
        let stub = super::render(&eng(), None, &crate::store::MemoryFacts::new()).unwrap();
        let line = stub.text.lines().find_map(|l| l.strip_prefix("recall_tool_schema: ")).expect("the schema line");
        let schema: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(schema["name"], "recall_instruction");
        assert_eq!(schema["input_schema"]["required"], serde_json::json!(["intent"]));
        let props = &schema["input_schema"]["properties"];
        assert_eq!(props["max_chunks"]["maximum"], crate::recall::MAX_CHUNKS_LIMIT);
        assert_eq!(props["max_chunks"]["default"], crate::recall::DEFAULT_MAX_CHUNKS);
        assert_eq!(props["token_budget"]["default"], crate::recall::DEFAULT_TOKEN_BUDGET);
    }

    fn eng() -> crate::manifest::Manifest {
        crate::manifest::Manifest { agent_id: "eng".into(), deployment: "acme".into(), agent_role: "Engineer".into(), manifest_version: "v1".into(), ..Default::default() }
    }

    fn unit(name: &str, fact_uri: Option<&str>, path: Option<&str>) -> crate::manifest::Entry {
        crate::manifest::Entry { name: name.into(), fact_uri: fact_uri.map(str::to_string), path: path.map(str::to_string), ..Default::default() }
    }

    /// §21.1.3: the built-in profiles are named as they are and add their own section;
    /// an unknown profile "MUST be treated as `generic`", which injects nothing.
    #[test]
    fn unknown_profiles_are_rendered_as_generic_and_known_ones_keep_their_section() {
        let (m, facts) = (eng(), crate::store::MemoryFacts::new());
        let generic = super::render(&m, None, &facts).unwrap();
        assert_eq!(generic.adapter_profile, "generic");
        assert!(generic.text.contains("adapter_profile: \"generic\"\n"), "{}", generic.text);
        let unknown = super::render(&m, Some("my-runtime"), &facts).unwrap();
        assert_eq!(unknown.adapter_profile, "generic");
        assert_eq!(unknown.text, generic.text, "an unknown profile renders exactly as generic");
        for (profile, marker) in [("paperclip-claude-code", "## Harness"), ("openai-assistants", "## Tool calls")] {
            let stub = super::render(&m, Some(profile), &facts).unwrap();
            assert_eq!(stub.adapter_profile, profile);
            assert!(stub.text.contains(&format!("adapter_profile: \"{profile}\"\n")), "{}", stub.text);
            assert!(stub.text.contains(marker), "{profile}: {}", stub.text);
            assert!(!generic.text.contains(marker));
            assert!(stub.body_tokens > generic.body_tokens, "{profile}'s section is in the counted body");
        }
    }

    /// §21.6.1 rule 4: `file` when units are read from paths only, `coexistence` when both
    /// kinds of location are in use, `stigmem` when only fact URIs are.
    #[test]
    fn the_migration_mode_follows_where_the_units_live() {
        let mode = |entries: Vec<crate::manifest::Entry>| {
            let m = crate::manifest::Manifest { entries, ..eng() };
            let stub = super::render(&m, None, &crate::store::MemoryFacts::new()).unwrap();
            assert!(stub.text.contains(&format!("migration_mode: \"{}\"\n", super::migration_mode(&m))), "{}", stub.text);
            super::migration_mode(&m)
        };
        assert_eq!(mode(vec![unit("a", Some("instruction:acme/eng/a/v1"), None)]), "stigmem");
        assert_eq!(mode(vec![unit("a", None, Some("a.md"))]), "file");
        assert_eq!(mode(vec![unit("a", Some("instruction:acme/eng/a/v1"), None), unit("b", None, Some("b.md"))]), "coexistence");
        assert_eq!(mode(vec![]), "stigmem");
    }

    /// `generated_at` is the manifest's publish time when that is an RFC 3339 time, and
    /// otherwise the fixed epoch with a warning: never the clock (byte-reproducible stubs).
    #[test]
    fn generated_at_is_the_publish_time_or_the_epoch_with_a_warning() {
        let facts = crate::store::MemoryFacts::new();
        let at = |published: Option<&str>| {
            let m = crate::manifest::Manifest { published_at: published.map(str::to_string), ..eng() };
            let stub = super::render(&m, None, &facts).unwrap();
            assert!(stub.text.contains(&format!("generated_at: \"{}\"\n", stub.generated_at)), "{}", stub.text);
            (stub.generated_at, stub.warnings.iter().any(|w| w.contains("published_at")))
        };
        assert_eq!(at(Some("2026-11-01T09:30:00Z")), ("2026-11-01T09:30:00Z".to_string(), false));
        assert_eq!(at(Some("last tuesday")), (super::UNPUBLISHED_AT.to_string(), true));
        assert_eq!(at(Some("")), (super::UNPUBLISHED_AT.to_string(), true));
        assert_eq!(at(None), (super::UNPUBLISHED_AT.to_string(), true));
    }

    /// §21.1.1: an always-applicable unit's content is embedded in the body; one that
    /// cannot be read is named in a warning, and a manifest without any has no such section.
    #[test]
    fn always_applicable_units_are_embedded_or_named_as_missing() {
        let mut facts = crate::store::MemoryFacts::new();
        facts.insert(crate::store::Fact { uri: "instruction:acme/eng/never-push-to-main/v1".into(), content: "Never push to main.\n\n".into(), version: "v1".into(), ..Default::default() });
        let always = |name: &str| crate::manifest::Entry { always_applicable: true, ..unit(name, Some(&format!("instruction:acme/eng/{name}/v1")), None) };
        let m = crate::manifest::Manifest { entries: vec![always("never-push-to-main"), always("gone"), unit("lazy", Some("instruction:acme/eng/lazy/v1"), None)], ..eng() };
        let stub = super::render(&m, None, &facts).unwrap();
        assert_eq!(stub.embedded_units, ["never-push-to-main"]);
        assert!(stub.text.contains("## Always applicable\n\nNever push to main.\n"), "{}", stub.text);
        assert!(stub.warnings.iter().any(|w| w.contains("\"gone\"") && w.contains("not embedded")), "{:?}", stub.warnings);
        let plain = super::render(&eng(), None, &facts).unwrap();
        assert!(!plain.text.contains("Always applicable") && plain.embedded_units.is_empty(), "{}", plain.text);
    }

    /// §21.1.2: a body of 500 tokens is served (over the 450 target, with a warning), one
    /// of 501 is refused; a body of exactly 450 tokens draws no warning.
    #[test]
    fn the_body_limit_and_target_are_inclusive() {
        let mut facts = crate::store::MemoryFacts::new();
        let m = crate::manifest::Manifest { entries: vec![crate::manifest::Entry { always_applicable: true, ..unit("rules", Some("instruction:acme/eng/rules/v1"), None) }], ..eng() };
        // The body's token count for `n` padding words, read from the render itself, and
        // whether the render warned (Ok) or refused (Err).
        let mut rendered = Vec::new();
        for n in 0..600 {
            facts.insert(crate::store::Fact { uri: "instruction:acme/eng/rules/v1".into(), content: format!("Rules:{}", " x".repeat(n)), version: "v1".into(), ..Default::default() });
            let r = match super::render(&m, None, &facts) {
                Ok(stub) => (stub.body_tokens, Ok(stub.warnings.iter().any(|w| w.contains("token target")))),
                Err(crate::error::EngineError::StubTooLarge { tokens }) => (tokens, Err(())),
                Err(e) => panic!("{e}"),
            };
            rendered.push(r);
            if r.0 > 501 {
                break;
            }
        }
        let at = |target: usize| rendered.iter().find(|(t, _)| *t == target).unwrap_or_else(|| panic!("no padding gives a body of {target} tokens")).1;
        assert_eq!(at(450), Ok(false));
        assert_eq!(at(451), Ok(true));
        assert_eq!(at(500), Ok(true));
        assert_eq!(at(501), Err(()));
    }
}
