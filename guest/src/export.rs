//! Exporters: one manifest and its units, written in the formats other tools read, so
//! one source feeds every tool (lid's own, beyond the spec).
//!
//! - `skill`: a SKILL.md tree: `SKILL.md` (front matter `name`, `description`; the
//!   always-applicable and guaranteed units inline; a table of the other units with
//!   when to read them) plus `units/<name>.md`;
//! - `agents-md`: one `AGENTS.md` with every unit as a section, always-applicable and
//!   guaranteed units first;
//! - `cursor-rules`: `.cursor/rules/<name>.mdc`, one per unit, front matter
//!   `description` (the manifest description) and `alwaysApply` (true for guaranteed and
//!   always-applicable units).
//!
//! Content comes from the facts exactly as recall would serve it (latest version,
//! §21.4.2; `path` fallback, §21.6.1); content-typed facts are never exported as
//! instructions (Spec-13). Output is deterministic: manifest order, no clock.

use serde::{Deserialize, Serialize};

use crate::error::EngineError;
use crate::manifest::{Entry, Manifest};
use crate::store::Facts;

/// Formats [`export`] writes.
pub const FORMATS: &[&str] = &["skill", "agents-md", "cursor-rules"];

/// One file of an export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportFile {
    pub path: String,
    pub content: String,
}

/// What was exported, and what could not be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Export {
    pub format: String,
    pub files: Vec<ExportFile>,
    /// Units whose content could not be read (left out, named here).
    pub unavailable: Vec<String>,
}

fn yaml_str(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

fn always(e: &Entry) -> bool {
    e.guarantee_load || e.always_applicable
}

fn when(e: &Entry) -> String {
    let mut parts: Vec<String> = e.load_triggers.intents.iter().map(|i| format!("\"{i}\"")).collect();
    parts.extend(e.required_by_task_types.iter().map(|t| format!("on `{t}`")));
    if parts.is_empty() {
        e.description.clone()
    } else {
        parts.join("; ")
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// An Agent Skills `name` for an agent id: at most 64 characters of lowercase letters,
/// digits and single hyphens, not starting or ending with one (agent ids also allow
/// capitals, `.` and `_`, and 128 characters).
fn skill_name(agent_id: &str) -> String {
    let mut name = String::new();
    for c in agent_id.chars().map(|c| c.to_ascii_lowercase()) {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() { c } else { '-' };
        if !(c == '-' && (name.is_empty() || name.ends_with('-'))) {
            name.push(c);
        }
    }
    name.truncate(64);
    let name = name.trim_end_matches('-');
    if name.is_empty() { "agent".into() } else { name.to_string() }
}

/// An Agent Skills `description`: at most 1024 characters (a long unit list is cut, and
/// says so).
fn skill_description(d: &str) -> String {
    const MAX: usize = 1024;
    if d.chars().count() <= MAX {
        return d.to_string();
    }
    let cut: String = d.chars().take(MAX - 1).collect();
    format!("{}…", cut.trim_end_matches([',', ' ']))
}

/// Export `m` in `format` (one of [`FORMATS`]).
pub fn export(m: &Manifest, facts: &dyn Facts, format: &str) -> Result<Export, EngineError> {
    if !FORMATS.contains(&format) {
        return Err(EngineError::InvalidRequest(format!("unknown export format {format:?}; use one of {}", FORMATS.join(", "))));
    }
    let mut units: Vec<(&Entry, String)> = Vec::new();
    let mut unavailable = Vec::new();
    for e in &m.entries {
        match crate::recall::resolve_unit(m, e, facts)? {
            Some(r) => units.push((e, r.fact.content.trim_end().to_string())),
            None => unavailable.push(e.name.clone()),
        }
    }
    let title = if m.agent_role.is_empty() { m.agent_id.clone() } else { format!("{} ({})", m.agent_role, m.agent_id) };
    let source = format!("Exported by lid from manifest {} of `{}`; edit the manifest, not this file.", m.manifest_version, m.agent_id);
    let mut files = Vec::new();
    match format {
        "skill" => {
            let description = skill_description(&format!("Instructions of the {title} agent: {}", units.iter().map(|(e, _)| e.name.as_str()).collect::<Vec<_>>().join(", ")));
            let mut md = format!("---\nname: {}\ndescription: {}\n---\n\n# {title}\n\n<!-- {source} -->\n", skill_name(&m.agent_id), yaml_str(&description));
            let (inline, lazy): (Vec<_>, Vec<_>) = units.iter().partition(|(e, _)| always(e));
            if !inline.is_empty() {
                md.push_str("\n## Always applicable\n");
                for (e, c) in &inline {
                    md.push_str(&format!("\n### {}\n\n{c}\n", e.name));
                }
            }
            if !lazy.is_empty() {
                md.push_str("\n## Read when needed\n\n| unit | what | read it when |\n|---|---|---|\n");
                for (e, _) in &lazy {
                    md.push_str(&format!("| [{0}](units/{0}.md) | {1} | {2} |\n", e.name, cell(&e.description), cell(&when(e))));
                }
            }
            files.push(ExportFile { path: "SKILL.md".into(), content: md });
            for (e, c) in &units {
                files.push(ExportFile { path: format!("units/{}.md", e.name), content: format!("{c}\n") });
            }
        }
        "agents-md" => {
            let mut md = format!("# {title}\n\n<!-- {source} -->\n");
            let mut ordered: Vec<&(&Entry, String)> = units.iter().filter(|(e, _)| always(e)).collect();
            ordered.extend(units.iter().filter(|(e, _)| !always(e)));
            for (e, c) in ordered {
                md.push_str(&format!("\n## {}\n\n_{}{}_\n\n{c}\n", e.name, e.description, if always(e) { " (always applies)" } else { "" }));
            }
            files.push(ExportFile { path: "AGENTS.md".into(), content: md });
        }
        _ => {
            for (e, c) in &units {
                files.push(ExportFile {
                    path: format!(".cursor/rules/{}.mdc", e.name),
                    content: format!("---\ndescription: {}\nglobs:\nalwaysApply: {}\n---\n\n<!-- {source} -->\n\n{c}\n", yaml_str(&e.description), always(e)),
                });
            }
        }
    }
    Ok(Export { format: format.into(), files, unavailable })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Fact, InterpretAs, MemoryFacts};

    fn agent() -> (Manifest, MemoryFacts) {
        let e = |name: &str, guaranteed: bool| {
            serde_json::json!({"name": name, "description": format!("The {name} unit | piped."), "required_by_task_types": if guaranteed { vec![] } else { vec!["issue_assigned"] },
                "guarantee_load": guaranteed, "load_triggers": {"intents": [format!("do {name}")], "keywords": [], "task_types": []},
                "fact_uri": format!("instruction:acme/eng/{name}/v1"), "path": null})
        };
        let m = serde_json::json!({"agent_id": "eng", "deployment": "acme", "agent_role": "Engineer", "manifest_version": "v2", "entries": [e("triage", false), e("rules", true), e("secret", false)]});
        let mut facts = MemoryFacts::new();
        facts.insert(Fact { uri: "instruction:acme/eng/triage/v1".into(), content: "Reproduce first.\n".into(), version: "v1".into(), ..Fact::default() });
        facts.insert(Fact { uri: "instruction:acme/eng/rules/v1".into(), content: "Never push to main.".into(), version: "v1".into(), ..Fact::default() });
        facts.insert(Fact { uri: "instruction:acme/eng/secret/v1".into(), content: "data, not an instruction".into(), version: "v1".into(), interpret_as: InterpretAs::Content, ..Fact::default() });
        (crate::manifest::parse(&m.to_string()).unwrap(), facts)
    }

    #[test]
    fn skill_names_and_descriptions_are_what_agent_skills_allows() {
        assert_eq!(skill_name("Release.Eng_2"), "release-eng-2");
        assert_eq!(skill_name("--A..b--"), "a-b");
        assert_eq!(skill_name("..."), "agent");
        assert_eq!(skill_name(&"x".repeat(128)).len(), 64);
        assert!(skill_name(&format!("{}-{}", "a".repeat(63), "b")).len() <= 64);
        assert!(!skill_name(&format!("{}-b", "a".repeat(63))).ends_with('-'));
        let long = skill_description(&format!("Instructions: {}", vec!["unit-name"; 200].join(", ")));
        assert!(long.chars().count() <= 1024 && long.chars().count() > 1000, "{}", long.len());
        assert!(long.ends_with('…'));
        assert_eq!(skill_description("short"), "short");
    }

    #[test]
    fn skill_tree_inlines_guaranteed_units_and_links_the_rest() {
        let (m, f) = agent();
        let x = export(&m, &f, "skill").unwrap();
        let paths: Vec<&str> = x.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["SKILL.md", "units/triage.md", "units/rules.md"]);
        let skill = &x.files[0].content;
        assert!(skill.starts_with("---\nname: eng\ndescription: \"Instructions of the Engineer (eng) agent: triage, rules\"\n---\n"), "{skill}");
        assert!(skill.contains("## Always applicable\n\n### rules\n\nNever push to main.\n"));
        assert!(skill.contains("| [triage](units/triage.md) | The triage unit \\| piped. | \"do triage\"; on `issue_assigned` |"));
        assert_eq!(x.unavailable, ["secret"], "content facts are never exported as instructions");
    }

    #[test]
    fn agents_md_and_cursor_rules() {
        let (m, f) = agent();
        let a = export(&m, &f, "agents-md").unwrap();
        assert_eq!(a.files.len(), 1);
        let md = &a.files[0].content;
        assert!(md.find("## rules").unwrap() < md.find("## triage").unwrap(), "always-applicable units first");
        let c = export(&m, &f, "cursor-rules").unwrap();
        assert_eq!(c.files[1].path, ".cursor/rules/rules.mdc");
        assert!(c.files[1].content.starts_with("---\ndescription: \"The rules unit | piped.\"\nglobs:\nalwaysApply: true\n---\n"));
        assert!(c.files[0].content.contains("alwaysApply: false"));
        assert_eq!(export(&m, &f, "cursor-rules").unwrap(), c, "deterministic");
        assert_eq!(export(&m, &f, "docx").unwrap_err().code(), "invalid_request");
    }
}
