//! The `lid` CLI end to end: the real binary, which runs every command through the
//! engine component under wasmtime (§21.1–§21.3, §21.6.3, §21.8.3, §21.9).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

fn lid(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lid")).args(args).output().expect("run lid")
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("stdout is not JSON ({e}): {}\nstderr: {}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    })
}

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/demo-agent")
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn codes(v: &Value) -> Vec<(String, String, String)> {
    v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let f = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            (f("code"), f("entry"), f("field"))
        })
        .collect()
}

#[test]
fn validate_reports_every_problem_at_once_and_exits_1() {
    let d = scratch("validate-bad");
    let bad = d.join("bad.json");
    let manifest = json!({"agent_id": "x", "deployment": "d", "entries": [
        {"name": "Bad Name", "description": "d", "fact_uri": "instruction:d/x/bad/v1"},
        {"name": "both", "description": "x", "fact_uri": "instruction:d/x/both/v1", "path": "p.md"},
        {"name": "dup", "description": "x", "fact_uri": "instruction:d/x/dup/v1"},
        {"name": "dup", "description": "y", "fact_uri": "instruction:d/x/dup/v2"},
        {"name": "long", "description": "z".repeat(121), "fact_uri": "instruction:d/x/long/latest"},
    ]});
    std::fs::write(&bad, manifest.to_string()).unwrap();
    let out = lid(&["--json", "validate", s(&bad)]);
    assert_eq!(out.status.code(), Some(1), "invalid manifest exits 1");
    let v = json_of(&out);
    assert_eq!(v["ok"], false);
    let c = codes(&v);
    let has = |entry: &str, field: &str| c.iter().any(|(code, e, f)| code == "manifest_entry_invalid" && e == entry && f == field);
    assert!(has("Bad Name", "name"), "{c:?}");
    assert!(has("both", "fact_uri") || has("both", "path"), "{c:?}");
    assert!(has("dup", "name"), "duplicate names are reported: {c:?}");
    assert!(has("long", "description"), "{c:?}");
    assert!(has("long", "fact_uri"), "floating alias `latest` is rejected (§21.4): {c:?}");
    // Text mode names the codes too.
    let text = lid(&["validate", s(&bad)]);
    assert_eq!(text.status.code(), Some(1));
    let all = String::from_utf8_lossy(&text.stdout).to_string() + &String::from_utf8_lossy(&text.stderr);
    assert!(all.contains("manifest_entry_invalid"), "{all}");
}

#[test]
fn validate_counts_the_canonical_manifest_and_enforces_the_cap() {
    let ok = lid(&["--json", "validate", s(&demo())]);
    assert_eq!(ok.status.code(), Some(0), "{}", String::from_utf8_lossy(&ok.stderr));
    let v = json_of(&ok);
    assert_eq!(v["ok"], true);
    let n = v["token_count"].as_u64().unwrap();
    assert!(n > 100 && n <= 1000, "{n}");

    // 40 verbose entries: far over the 1000-token cap (§21.2.1).
    let d = scratch("validate-large");
    let entries: Vec<Value> = (0..40)
        .map(|i| json!({"name": format!("unit-{i}"), "description": "A deliberately long description that uses up tokens quickly.",
            "load_triggers": {"intents": ["one intent that is long enough", "and another one here"], "keywords": ["alpha", "beta"]},
            "fact_uri": format!("instruction:d/x/unit-{i}/v1")}))
        .collect();
    let big = d.join("manifest.json");
    std::fs::write(&big, json!({"agent_id": "x", "deployment": "d", "entries": entries}).to_string()).unwrap();
    let out = lid(&["--json", "validate", s(&big)]);
    assert_eq!(out.status.code(), Some(1));
    let v = json_of(&out);
    assert!(v["token_count"].as_u64().unwrap() > 1000);
    assert!(codes(&v).iter().any(|(c, ..)| c == "manifest_too_large"), "{v}");
}

#[test]
fn stub_is_reproducible_bounded_and_profiled() {
    let a = lid(&["--json", "stub", s(&demo())]);
    let b = lid(&["--json", "stub", s(&demo())]);
    assert_eq!(a.status.code(), Some(0), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(a.stdout, b.stdout, "byte-reproducible (§21.1)");
    let v = json_of(&a);
    let text = v["text"].as_str().unwrap();
    assert!(text.contains("generated_at: \"2026-11-01T00:00:00Z\""), "publish time, never the clock");
    assert!(text.contains("recall_tool_schema:"));
    assert!(text.contains("Never push to `main` directly"), "always-applicable rules are embedded");
    let body = v["body_tokens"].as_u64().unwrap();
    assert!(body > 0 && body <= 500, "{body}");
    let unknown = json_of(&lid(&["--json", "stub", s(&demo()), "--profile", "no-such-profile"]));
    assert!(unknown["text"].as_str().unwrap().contains("adapter_profile: \"generic\""));
    let openai = json_of(&lid(&["--json", "stub", s(&demo()), "--profile", "openai-assistants"]));
    assert!(openai["text"].as_str().unwrap().contains("adapter_profile: \"openai-assistants\""));

    // An always-applicable unit that takes the body over 500 tokens: `lid validate` on the
    // agent directory refuses it as `stub` does (it can render the stub); the manifest
    // alone, without its units, is valid.
    let d = scratch("stub-too-large");
    let copy = demo_agents(&d);
    std::fs::write(copy.join("units/ground-rules.md"), "## Ground rules\n\n".to_string() + &"Never deploy on Fridays without the on-call lead approving the window.\n".repeat(40)).unwrap();
    assert_eq!(json_of(&lid(&["--json", "stub", s(&copy)]))["error"]["code"], "boot_stub_too_large");
    let out = lid(&["--json", "validate", s(&copy)]);
    assert_eq!(out.status.code(), Some(1));
    let v = json_of(&out);
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["errors"].as_array().map(|e| e.iter().filter(|e| e["code"] == "boot_stub_too_large").count()), Some(1), "once, not per profile: {v}");
    let said = v["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(lid_shared::heartbeat::PROFILES.iter().all(|p| said.contains(&format!("boot stub ({p})"))), "every profile over the limit named: {said}");
    assert_eq!(lid(&["validate", s(&copy.join("manifest.json"))]).status.code(), Some(0));
    assert_eq!(lid(&["validate", s(&demo())]).status.code(), Some(0), "the demo's stub fits");
}

#[test]
fn recall_ranks_audits_and_names_what_the_budget_dropped() {
    let d = scratch("recall");
    let audit = d.join("audit.jsonl");
    let out = lid(&["--json", "recall", s(&demo()), "production is broken after the deploy", "--audit", s(&audit)]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json_of(&out);
    let chunks = v["chunks"].as_array().unwrap();
    let ranked: Vec<&str> = chunks.iter().filter(|c| c["selected_by"] == "ranked").map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(ranked.first(), Some(&"rollback-procedure"), "{v}");
    assert!(chunks.iter().any(|c| c["name"] == "ground-rules" && c["selected_by"] == "guarantee_load"));
    let token = v["audit_token"].as_str().unwrap();
    assert!(token.starts_with("audi_"), "{token}");
    let log = std::fs::read_to_string(&audit).unwrap();
    assert_eq!(log.lines().count(), 1);
    assert!(log.contains(token), "the audit row carries the response's token");

    let tight = json_of(&lid(&["--json", "recall", s(&demo()), "cut a release", "--token-budget", "120", "--max-chunks", "3", "--audit", s(&audit)]));
    assert_eq!(tight["truncated"], true);
    assert!(!tight["omitted"].as_array().unwrap().is_empty(), "dropped units are named: {tight}");
    assert!(tight["chunks"].as_array().unwrap().iter().any(|c| c["name"] == "ground-rules"), "guaranteed never to zero");
}

#[test]
fn bad_requests_exit_1_with_their_code() {
    let d = scratch("bad-requests");
    let out = lid(&["--json", "recall", s(&demo()), "   ", "--audit", s(&d.join("a.jsonl"))]);
    assert_eq!(out.status.code(), Some(1));
    let all = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(all.contains("intent_required"), "{all}");
    let missing = lid(&["recall", s(&d.join("nope")), "x"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(!String::from_utf8_lossy(&missing.stderr).is_empty());
    let notjson = d.join("m.json");
    std::fs::write(&notjson, "{ not json").unwrap();
    let out = lid(&["validate", s(&notjson)]);
    assert_eq!(out.status.code(), Some(1));
    // Usage errors exit 1 too (clap's 2 is what `lid coverage` says for a failed gate),
    // and with --json they are JSON with a code.
    for args in [
        &["--json", "recall", s(&demo())][..],
        &["--json", "recall", s(&demo()), "x", "--max-chunks", "abc"],
        &["--json", "preload", s(&demo())],
        // a NaN minimum would read as no minimum; k = 0 would quietly become 1
        &["--json", "recall", s(&demo()), "x", "--min-score", "NaN"],
        &["--json", "coverage", s(&demo()), "--k", "0"],
        &["--json", "audit", "report", "--file", s(&d.join("a.jsonl")), "--k", "0"],
        // flag values that do not parse are caught with the command line
        &["--json", "context", s(&demo()), "--budget", "task=abc"],
        &["--json", "validate", s(&demo()), "--approve", "bogus"],
        &["--json", "publish", s(&demo()), "--approve", "task-types:"],
        &["--json", "validate", s(&demo()), "--wake-reason", ""],
        &["--json", "validate", s(&demo()), "--wake-reason", "a\nb"],
        &["--json", "serve", "--memory-mib", "17592186044416"],
        &["--json", "serve", "--call-timeout-ms", "0"],
        &["--json", "context", s(&demo()), "--query", "q"],
    ] {
        let out = lid(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let v = json_of(&out);
        assert_eq!((v["error"]["code"].as_str(), v["error"]["status"].as_u64()), (Some("usage_error"), Some(400)), "{v}");
        assert!(v["error"]["message"].as_str().unwrap().starts_with("error: "), "clap's own words: {v}");
    }
    let text = lid(&["recall", s(&demo())]);
    assert_eq!(text.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&text.stderr);
    assert!(stderr.contains("<INTENT>") && stderr.starts_with("error: usage_error: "), "the code, as every error says it: {stderr}");
    assert_eq!(lid(&["--version"]).status.code(), Some(0));
    // A command that runs the service's code path reports the service's code, status
    // and details, not a catch-all.
    let db = d.join("publish.db");
    let v = json_of(&lid(&["--json", "publish", s(&demo()), "--db", s(&db), "--skip-coverage-gate"]));
    assert_eq!(v["error"]["code"], "guarantee_approval_required", "{v}");
    assert_eq!(v["error"]["status"], 400);
    assert_eq!(v["error"]["details"]["errors"][0]["entry"], "ground-rules", "{v}");
    assert!(!db.exists() && !d.join("publish.db-wal").exists(), "a refused first publish leaves no database it made");
    // an existing database is kept as it was when a publish is refused
    assert_eq!(lid(&["keys", "create", "--role", "admin", "--db", s(&db)]).status.code(), Some(0));
    assert_eq!(json_of(&lid(&["--json", "publish", s(&demo()), "--db", s(&db), "--skip-coverage-gate"]))["error"]["code"], "guarantee_approval_required");
    assert!(db.exists());
    assert_eq!(json_of(&lid(&["--json", "keys", "list", "--db", s(&db)]))["keys"].as_array().map(Vec::len), Some(1), "its key is still there");
    // §21.4.4: an agent key never holds instruction:write; refused before the database is made
    let other = d.join("agent-writer.db");
    let v = json_of(&lid(&["--json", "keys", "create", "--role", "agent", "--agent", "release-engineer", "--cap", "read", "--cap", "instruction:write", "--db", s(&other)]));
    assert_eq!(v["error"]["code"], "invalid_request", "{v}");
    assert!(v["error"]["message"].as_str().is_some_and(|m| m.contains("§21.4.4")), "{v}");
    assert!(!other.exists(), "nothing made for a refused key");
    // `lid publish` refuses what `lid validate` refuses in the document itself, though it
    // sends the service only the manifest's fields (an unknown one would be dropped).
    let extra = d.join("extra");
    std::fs::create_dir_all(extra.join("units")).unwrap();
    for f in std::fs::read_dir(demo().join("units")).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), extra.join("units").join(f.file_name())).unwrap();
    }
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(demo().join("manifest.json")).unwrap()).unwrap();
    m["owner"] = "ops".into();
    std::fs::write(extra.join("manifest.json"), m.to_string()).unwrap();
    let v = json_of(&lid(&["--json", "publish", s(&extra), "--db", s(&d.join("extra.db")), "--skip-coverage-gate", "--approve", "guarantee-load"]));
    assert_eq!((v["error"]["code"].as_str(), v["error"]["details"]["errors"][0]["field"].as_str()), (Some("manifest_invalid"), Some("owner")), "{v}");
    assert_eq!(lid(&["validate", s(&extra)]).status.code(), Some(1));
    // A manifest that is not JSON is `invalid_json` wherever the CLI reads it.
    std::fs::write(extra.join("manifest.json"), "{ not json").unwrap();
    let v = json_of(&lid(&["--json", "stub", s(&extra)]));
    assert_eq!(v["error"]["code"], "invalid_json", "{v}");
    // so is a request, a handoff or a probe line that is not JSON, named with its line
    let (request, probes) = (d.join("request.json"), d.join("probes.jsonl"));
    std::fs::write(&request, "{").unwrap();
    std::fs::write(&probes, "{\"id\":\"x\",\"agent_id\":\"ceo\"").unwrap();
    for (args, needle) in [
        (vec!["--json", "context", s(&demo()), "--request", s(&request)], format!("{} is not JSON: EOF", request.display())),
        (vec!["--json", "context", s(&demo()), "--handoff", s(&request)], format!("{} is not JSON: EOF", request.display())),
        (vec!["--json", "eval", "--agents", s(&d), "--probes", s(&probes)], format!("{}:1 is not JSON: EOF", probes.display())),
    ] {
        let v = json_of(&lid(&args));
        assert!(v["error"]["code"] == "invalid_json" && v["error"]["message"].as_str().unwrap().starts_with(&needle), "{args:?}: {v}");
    }
    // A file the CLI cannot read is its own error, with a status too.
    let v = json_of(&lid(&["--json", "tokens", s(&d.join("missing.txt"))]));
    assert_eq!((v["error"]["code"].as_str(), v["error"]["status"].as_u64()), (Some("cli_error"), Some(400)), "{v}");
}

#[test]
fn preload_follows_the_wake_reason() {
    let v = json_of(&lid(&["--json", "preload", s(&demo()), "--wake-reason", "issue_assigned"]));
    let list = |v: &Value| -> Vec<String> {
        v["units"].as_array().or(v["chunks"].as_array()).or(v["preloads"].as_array()).unwrap_or_else(|| panic!("{v}")).iter().map(|u| u["name"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(list(&v), ["triage-incoming"], "{v}");
    let none = json_of(&lid(&["--json", "preload", s(&demo()), "--wake-reason", "heartbeat_timer"]));
    assert!(list(&none).is_empty(), "{none}");
}

#[test]
fn an_audit_file_is_reported_over_the_same_rolling_window_as_the_database() {
    // §21.5.3: "over a rolling 7-day window": a file's records older than --days are
    // left out, as the database's rows are.
    let d = scratch("audit-window");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let rec = |n: u32, at: u64, used: &[&str], missed: &[&str]| {
        json!({"id": format!("audevent_{n:026}"), "agent_id": "a", "heartbeat_id": format!("h{n}"), "session_start": at, "intent": "x",
            "loaded_chunks": ["a", "b"], "used_chunks": used, "missed_chunks": missed, "audit_token": format!("audi_{n:026}"), "audit_closed": at, "created_at": at})
        .to_string()
    };
    let file = d.join("audit.jsonl");
    std::fs::write(&file, [rec(1, now, &["a"], &[]), rec(2, now - 1000, &["b"], &["c"]), rec(3, now - 10 * 86_400_000, &["q"], &["r", "s"])].join("\n")).unwrap();
    let week = json_of(&lid(&["--json", "audit", "report", "--file", s(&file)]));
    assert_eq!((week["events"].as_u64(), week["miss_rate"].as_f64()), (Some(2), Some(0.3333)), "{week}");
    let month = json_of(&lid(&["--json", "audit", "report", "--file", s(&file), "--days", "30"]));
    assert_eq!((month["events"].as_u64(), month["miss_rate"].as_f64()), (Some(3), Some(0.5)), "{month}");
    assert_eq!(month["hit_at_k"].as_f64(), Some(0.6667), "{month}");
}

#[test]
fn preload_problems_are_written_to_the_audit_log() {
    // §21.1.5 rule 4: a missing preload unit's warning, and the error when the unit is
    // guaranteed (the heartbeat is aborted), are written to the audit, not only printed.
    let d = scratch("preload-audit");
    std::fs::create_dir_all(d.join("units")).unwrap();
    for f in std::fs::read_dir(demo().join("units")).unwrap() {
        let f = f.unwrap();
        if f.file_name() != "triage-incoming.md" {
            std::fs::copy(f.path(), d.join("units").join(f.file_name())).unwrap();
        }
    }
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(demo().join("manifest.json")).unwrap()).unwrap();
    std::fs::write(d.join("manifest.json"), m.to_string()).unwrap();
    let log = d.join(".lid/audit.jsonl");
    let v = json_of(&lid(&["--json", "preload", s(&d), "--wake-reason", "issue_assigned"]));
    assert_eq!(v["warnings"][0]["code"], "preload_unit_unavailable", "{v}");
    let rec: Value = serde_json::from_str(std::fs::read_to_string(&log).unwrap().lines().last().unwrap()).unwrap();
    assert_eq!(rec["warnings"][0]["code"], "preload_unit_unavailable", "{rec}");
    assert_eq!(rec["warnings"][0]["unit"], "triage-incoming");
    // A recall says so too, in its response: the unit was not ranked.
    let v = json_of(&lid(&["--json", "recall", s(&d), "triage a new ticket", "--audit", s(&d.join("recall.jsonl"))]));
    let warnings: Vec<&str> = v["warnings"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(warnings.iter().any(|w| w.contains("\"triage-incoming\" could not be read")), "{v}");
    for e in m["entries"].as_array_mut().unwrap() {
        if e["name"] == "triage-incoming" {
            e["guarantee_load"] = true.into();
        }
    }
    std::fs::write(d.join("manifest.json"), m.to_string()).unwrap();
    let out = lid(&["--json", "preload", s(&d), "--wake-reason", "issue_assigned"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json_of(&out)["error"]["code"], "preload_unit_unavailable");
    let rows: Vec<Value> = std::fs::read_to_string(&log).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["error"]["code"], "preload_unit_unavailable", "{}", rows[1]);
    assert_eq!(rows[1]["error"]["unit"], "triage-incoming");
    assert_eq!(rows[1]["loaded_chunks"], json!([]));
}

/// A file that is not UTF-8 is refused with where it stops being UTF-8 and how to fix it.
#[test]
fn a_file_that_is_not_utf8_is_refused_with_its_place() {
    let d = scratch("not-utf8");
    let md = d.join("AGENTS.md");
    std::fs::write(&md, b"## Deploying\n\nRun the d\xe9ploy script.\n").unwrap();
    let out = lid(&["migrate-instructions", s(&md), "--deployment", "acme", "--agent", "builder", "--out", s(&d.join("out"))]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not UTF-8 text: byte 23 (line 3, byte 10 of the line) is 0xE9") && err.contains("iconv"), "{err}");
    assert!(!d.join("out").exists(), "nothing written");
    std::fs::write(&md, [0xFF, 0xFE, b'#', 0]).unwrap();
    let err = String::from_utf8_lossy(&lid(&["migrate-instructions", s(&md), "--deployment", "acme", "--agent", "builder", "--out", s(&d.join("out"))]).stderr).to_string();
    assert!(err.contains("it is UTF-16"), "{err}");
}

#[test]
fn migrate_writes_units_and_a_draft_that_validates() {
    let d = scratch("migrate");
    let md = d.join("AGENTS.md");
    std::fs::write(&md, "# Agent\n\nIntro text.\n\n## Deploying\n\nRun the deploy script.\n\n### Hotfixes\n\nPatch the bug, then deploy the hotfix.\n\n## Testing\n\nRun `cargo test`.\n").unwrap();
    let out_dir = d.join("out");
    let out = lid(&["migrate-instructions", s(&md), "--deployment", "acme", "--agent", "builder", "--out", s(&out_dir)]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    for unit in ["deploying", "hotfixes", "testing"] {
        let body = std::fs::read_to_string(out_dir.join("units").join(format!("{unit}.md"))).unwrap();
        assert!(!body.trim().is_empty());
    }
    let draft: Value = serde_json::from_str(&std::fs::read_to_string(out_dir.join("manifest.draft.json")).unwrap()).unwrap();
    let testing = draft["entries"].as_array().unwrap().iter().find(|e| e["name"] == "testing").unwrap();
    assert_eq!(testing["fact_uri"], "instruction:acme/builder/testing/v1");
    assert!(testing["token_estimate"].as_u64().unwrap() > 0);
    // each estimate is the exact count of the unit file written (its final newline too)
    let bpe = tiktoken_rs::cl100k_base().unwrap();
    for e in draft["entries"].as_array().unwrap() {
        let file = std::fs::read_to_string(out_dir.join("units").join(format!("{}.md", e["name"].as_str().unwrap()))).unwrap();
        assert_eq!(e["token_estimate"].as_u64(), Some(bpe.encode_ordinary(&file).len() as u64), "{e}");
    }
    std::fs::copy(out_dir.join("manifest.draft.json"), out_dir.join("manifest.json")).unwrap();
    assert_eq!(lid(&["validate", s(&out_dir)]).status.code(), Some(0));
    // And the migrated agent answers recalls.
    let v = json_of(&lid(&["--json", "recall", s(&out_dir), "how do I ship a hotfix", "--audit", s(&d.join("a.jsonl"))]));
    assert_eq!(v["chunks"][0]["name"], "hotfixes", "{v}");
    // The same migration again into the same directory rewrites its own files; another
    // file's draft there would mix in units it did not write, so it is refused.
    let again = lid(&["migrate-instructions", s(&md), "--deployment", "acme", "--agent", "builder", "--out", s(&out_dir)]);
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    let other = d.join("OTHER.md");
    std::fs::write(&other, "## Releasing\n\nTag the release.\n").unwrap();
    let mixed = lid(&["--json", "migrate-instructions", s(&other), "--deployment", "acme", "--agent", "builder", "--out", s(&out_dir)]);
    assert_eq!(mixed.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&mixed.stdout).contains("deploying.md"), "{}", String::from_utf8_lossy(&mixed.stdout));
    assert!(!out_dir.join("units/releasing.md").exists(), "nothing was written");
    // A write that fails part way (a directory where the third unit goes) leaves no part
    // of the draft behind, and names the path.
    let fresh = d.join("fresh");
    std::fs::create_dir_all(fresh.join("units/testing.md")).unwrap();
    let failed = lid(&["--json", "migrate-instructions", s(&md), "--deployment", "acme", "--agent", "builder", "--out", s(&fresh)]);
    assert_eq!(failed.status.code(), Some(1));
    let message = json_of(&failed)["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("units/testing.md") && message.contains("nothing was written"), "{message}");
    let left: Vec<_> = std::fs::read_dir(fresh.join("units")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["testing.md"], "only the directory that was in the way");
    assert!(!fresh.join("manifest.draft.json").exists());
    assert!(std::fs::read_dir(&d).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().contains("staging")), "no staging directory is left");
    // What `lid validate` would refuse in the draft is said at once: a zero-width character
    // from a heading, a role over two lines; a clean draft has no such problem.
    let clean = json_of(&lid(&["--json", "migrate-instructions", s(&md), "--deployment", "acme", "--agent", "builder", "--out", s(&d.join("clean"))]));
    assert_eq!(clean["draft_problems"], json!([]), "{clean}");
    let hidden = d.join("HIDDEN.md");
    std::fs::write(&hidden, "## Deploy\u{200B}ing\n\nRun the deploy script.\n").unwrap();
    let v = json_of(&lid(&["--json", "migrate-instructions", s(&hidden), "--deployment", "acme", "--agent", "builder", "--role", "Release\nEngineer", "--out", s(&d.join("hidden"))]));
    let problems = v["draft_problems"].as_array().cloned().unwrap_or_default();
    assert!(problems.len() >= 2, "{v}");
    let text = String::from_utf8_lossy(&lid(&["migrate-instructions", s(&hidden), "--deployment", "acme", "--agent", "builder", "--role", "Release\nEngineer", "--out", s(&d.join("hidden2"))]).stdout).to_string();
    assert!(text.contains("warning: the draft does not validate yet:"), "{text}");
}

#[test]
fn coverage_names_weak_units_with_failing_paraphrases() {
    // Five indistinguishable units: only three fit in the top 3 (ties broken by name).
    let d = scratch("coverage");
    std::fs::create_dir_all(d.join("units")).unwrap();
    let mut entries = Vec::new();
    for n in ["alpha", "bravo", "charlie", "delta", "echo"] {
        std::fs::write(d.join("units").join(format!("{n}.md")), "## Deploy\n\nRun the deploy script and watch the dashboards.\n").unwrap();
        entries.push(json!({"name": n, "description": "Deploy the service.", "load_triggers": {"intents": ["deploy the service"]},
            "fact_uri": format!("instruction:d/same/{n}/v1")}));
    }
    std::fs::write(d.join("manifest.json"), json!({"agent_id": "same", "deployment": "d", "entries": entries}).to_string()).unwrap();
    let out = lid(&["--json", "coverage", s(&d)]);
    assert_eq!(out.status.code(), Some(2), "a failed gate exits 2");
    let v = json_of(&out);
    assert_eq!(v["passed"], false);
    let weak: Vec<&Value> = v["units"].as_array().unwrap().iter().filter(|u| u["passed"] == false).collect();
    let names: Vec<&str> = weak.iter().map(|u| u["unit"].as_str().unwrap()).collect();
    assert_eq!(names, ["delta", "echo"]);
    for u in weak {
        assert_eq!(u["failed"].as_array().unwrap().len(), 5, "each failing paraphrase is named: {u}");
    }
    // The demo agent passes.
    assert_eq!(lid(&["coverage", s(&demo())]).status.code(), Some(0));
}

#[test]
fn tokens_match_tiktoken() {
    let d = scratch("tokens");
    let text = "Hello, world! It's 2026 — über 日本語 🎉\n\n  fn main() {}\n";
    let f = d.join("t.txt");
    std::fs::write(&f, text).unwrap();
    let v = json_of(&lid(&["tokens", "--json", s(&f)]));
    assert_eq!(v["tokens"].as_u64().unwrap() as usize, tiktoken_rs::cl100k_base().unwrap().encode_ordinary(text).len());
    // a byte-order mark is text to count, from a file as from stdin
    let bom = format!("\u{feff}{text}");
    std::fs::write(&f, &bom).unwrap();
    let want = tiktoken_rs::cl100k_base().unwrap().encode_ordinary(&bom).len();
    let v = json_of(&lid(&["tokens", "--json", s(&f)]));
    assert_eq!((v["tokens"].as_u64().unwrap() as usize, v["bytes"].as_u64().unwrap() as usize), (want, bom.len()), "{v}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_lid")).args(["tokens", "--json", "-"]).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), bom.as_bytes()).unwrap();
    let v = json_of(&child.wait_with_output().unwrap());
    assert_eq!(v["tokens"].as_u64().unwrap() as usize, want, "{v}");
}

/// `d/agents/release-engineer`: a copy of the demo agent, for `lid eval --agents d/agents`;
/// returns that agent directory.
fn demo_agents(d: &Path) -> PathBuf {
    let copy = d.join("agents").join("release-engineer");
    std::fs::create_dir_all(copy.join("units")).unwrap();
    std::fs::copy(demo().join("manifest.json"), copy.join("manifest.json")).unwrap();
    for e in std::fs::read_dir(demo().join("units")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), copy.join("units").join(e.file_name())).unwrap();
    }
    copy
}

/// A probe file: one JSON object per line.
fn write_probes(path: &Path, probes: &[Value]) {
    std::fs::write(path, probes.iter().map(|v| v.to_string() + "\n").collect::<String>()).unwrap();
}

#[test]
fn eval_writes_every_probes_ranking_whole_or_not_at_all() {
    let d = scratch("eval-rankings");
    demo_agents(&d);
    let probes = d.join("probes.jsonl");
    write_probes(
        &probes,
        &[
            json!({"id": "p1", "agent_id": "release-engineer", "intent": "roll back the broken deploy", "required_units": ["rollback-procedure"]}),
            json!({"id": "n1", "agent_id": "release-engineer", "intent": "bake sourdough bread", "required_units": [], "expect_none": true}),
        ],
    );
    let units = std::fs::read_dir(demo().join("units")).unwrap().count();
    let out = d.join("rankings.jsonl");
    let agents = d.join("agents");
    let args = ["eval", "--agents", s(&agents), "--probes", s(&probes), "--rankings", s(&out)];
    assert_eq!(lid(&args).status.code(), Some(0));
    let first = std::fs::read_to_string(&out).unwrap();
    let rows: Vec<Value> = first.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.iter().map(|r| r["id"].as_str().unwrap()).collect::<Vec<_>>(), ["p1", "n1"], "probe order: {first}");
    for r in &rows {
        assert_eq!(r["agent"], "release-engineer");
        let scores: Vec<f64> = r["scores"].as_array().unwrap().iter().map(|x| x[1].as_f64().unwrap()).collect();
        assert_eq!(scores.len(), units, "every unit ranked: {r}");
        assert!(scores.windows(2).all(|w| w[0] >= w[1]), "best first: {r}");
    }
    assert_eq!(rows[0]["scores"][0][0], "rollback-procedure", "{first}");
    // the same probes again: byte-identical rankings
    assert_eq!(lid(&args).status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), first);
    // a file that cannot be written (its directory would be a file): exit 1, a message
    // naming it, nothing left behind
    let bad = probes.join("rankings.jsonl");
    let refused = lid(&["eval", "--agents", s(&agents), "--probes", s(&probes), "--rankings", s(&bad)]);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("cannot write") && stderr.contains(s(&bad)) && stderr.contains("nothing was written"), "{stderr}");
    assert!(probes.is_file(), "the probe file is untouched");
    assert_eq!(std::fs::read_dir(&d).unwrap().filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().contains(".lid-")).count(), 0, "no staging file left");
}

#[test]
fn eval_reports_the_documented_keys() {
    let d = scratch("eval");
    let copy = demo_agents(&d);
    let probes = d.join("probes.jsonl");
    write_probes(
        &probes,
        &[
            json!({"id": "p1", "agent_id": "release-engineer", "intent": "roll back the broken deploy", "required_units": ["rollback-procedure"]}),
            json!({"id": "p2", "agent_id": "release-engineer", "intent": "bump the library version", "required_units": ["dependency-upgrades"]}),
            json!({"id": "n1", "agent_id": "release-engineer", "intent": "bake sourdough bread", "required_units": [], "expect_none": true}),
        ],
    );
    let v = json_of(&lid(&["eval", "--agents", s(&d.join("agents")), "--probes", s(&probes), "--json"]));
    assert_eq!(v["probes"], 3);
    for k in ["hit_at_1", "hit_at_3", "mrr", "none_auc"] {
        assert!(v[k].is_number(), "{k} missing: {v}");
    }
    assert_eq!(v["hit_at_1"], 1.0, "{v}");
    assert_eq!(v["none_auc"], 1.0, "an unrelated intent scores below every real one: {v}");
    assert!(lid(&["eval", "--agents", s(&d.join("agents")), "--probes", s(&probes)]).stderr.is_empty());

    // a required unit the agent does not have (a typo): a warning naming it, a miss
    let typo = d.join("typo.jsonl");
    std::fs::write(&typo, json!({"id": "t1", "agent_id": "release-engineer", "intent": "roll back the broken deploy", "required_units": ["rollback-procedures"]}).to_string()).unwrap();
    let out = lid(&["eval", "--agents", s(&d.join("agents")), "--probes", s(&typo), "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("warning") && err.contains("\"t1\"") && err.contains("\"rollback-procedures\" is not a unit of \"release-engineer\""), "{err}");
    assert_eq!(json_of(&out)["hit_at_3"], 0.0);

    // a probe the engine refuses (no intent) is named by its line and id, exit 1
    let bad = d.join("bad.jsonl");
    std::fs::write(&bad, format!("{}\n{}\n", json!({"id": "ok1", "agent_id": "release-engineer", "intent": "roll back the broken deploy", "required_units": ["rollback-procedure"]}), json!({"id": "b2", "agent_id": "release-engineer", "required_units": ["rollback-procedure"]}))).unwrap();
    let refused = lid(&["eval", "--agents", s(&d.join("agents")), "--probes", s(&bad)]);
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("bad.jsonl:2: probe \"b2\"") && err.contains("intent_required"), "{err}");
    let v = json_of(&lid(&["eval", "--agents", s(&d.join("agents")), "--probes", s(&bad), "--json"]));
    assert_eq!(v["error"]["code"], "intent_required", "{v}");
    assert!(v["error"]["context"].as_str().is_some_and(|c| c.ends_with("bad.jsonl:2: probe \"b2\"")), "{v}");
    // a probe field of the wrong JSON type, likewise: file, line, id and the field
    let typed = d.join("typed.jsonl");
    std::fs::write(&typed, format!("{}\n", json!({"id": "t3", "agent_id": "release-engineer", "intent": "roll back", "required_units": "rollback-procedure"}))).unwrap();
    let v = json_of(&lid(&["eval", "--agents", s(&d.join("agents")), "--probes", s(&typed), "--json"]));
    assert_eq!(v["error"]["code"], "invalid_request", "{v}");
    assert!(v["error"]["message"].as_str().is_some_and(|m| m.contains("typed.jsonl:1: probe \"t3\": `required_units` must be an array")), "{v}");
    std::fs::write(&typed, format!("{}\n", json!({"id": "t4", "agent_id": "release-engineer", "intent": "roll back", "required_units": [], "expect_none": "yes"}))).unwrap();
    let v = json_of(&lid(&["eval", "--agents", s(&d.join("agents")), "--probes", s(&typed), "--json"]));
    assert!(v["error"]["message"].as_str().is_some_and(|m| m.contains("`expect_none` must be true or false")), "{v}");
    // a probe without a name, and one with nothing to score, are refused by file and line;
    // §21.5.4's `probe_id` names a probe in messages as `id` does
    for (probe, says) in [
        (json!({"agent_id": "release-engineer", "intent": "roll back", "required_units": ["rollback-procedure"]}), "typed.jsonl:1: the probe has no `id` (or `probe_id`"),
        (json!({"probe_id": "q1", "agent_id": "release-engineer", "intent": "roll back", "required_units": []}), "typed.jsonl:1: probe \"q1\" has neither `required_units`"),
        (json!({"id": "q2", "agent_id": "release-engineer", "intent": "roll back", "required_units": ["rollback-procedure"], "expect_none": true}), "probe \"q2\" lists `required_units` and also says `expect_none: true`"),
        (json!({"probe_id": "q3", "agent_id": "release-engineer", "intent": "roll back", "required_units": ["rollback-procedure"], "k": "3"}), "typed.jsonl:1: probe \"q3\": `k` must be"),
    ] {
        std::fs::write(&typed, format!("{probe}\n")).unwrap();
        let v = json_of(&lid(&["eval", "--agents", s(&d.join("agents")), "--probes", s(&typed), "--json"]));
        assert_eq!(v["error"]["code"], "invalid_request", "{v}");
        assert!(v["error"]["message"].as_str().is_some_and(|m| m.contains(says)), "{says}: {v}");
    }
    // two probes under one id are refused: results and `--rankings` lines go by id
    let twice = json!({"id": "dup", "agent_id": "release-engineer", "intent": "roll back", "required_units": ["rollback-procedure"]});
    std::fs::write(&typed, format!("{twice}\n\n{twice}\n")).unwrap();
    let v = json_of(&lid(&["eval", "--agents", s(&d.join("agents")), "--probes", s(&typed), "--json"]));
    assert_eq!(v["error"]["code"], "invalid_request", "{v}");
    assert!(v["error"]["message"].as_str().is_some_and(|m| m.contains("typed.jsonl:3: probe id \"dup\" is given twice (first on line 1)")), "{v}");
    // a probe file with no probes (empty, or blank lines only) is refused, not zeros
    std::fs::write(&typed, "\n  \n").unwrap();
    let v = json_of(&lid(&["eval", "--agents", s(&d.join("agents")), "--probes", s(&typed), "--json"]));
    assert_eq!(v["error"]["code"], "invalid_request", "{v}");
    assert!(v["error"]["message"].as_str().is_some_and(|m| m.contains("holds no probes")), "{v}");

    // `--misses` lists each missed probe with the unit ranked first; none when all hit
    let miss = json_of(&out)["misses"].clone();
    assert_eq!(miss.as_array().map(Vec::len), Some(1), "{miss}");
    assert_eq!((miss[0]["id"].as_str(), miss[0]["top"].as_str(), &miss[0]["required"]), (Some("t1"), Some("rollback-procedure"), &json!([["rollback-procedures", null]])));
    let text = String::from_utf8_lossy(&lid(&["eval", "--agents", s(&d.join("agents")), "--probes", s(&typo), "--misses"]).stdout).to_string();
    assert!(text.contains("OVERALL") && text.lines().any(|l| l.starts_with("miss@1,3 t1") && l.contains("top rollback-procedure (") && l.contains("required rollback-procedures@-") && l.ends_with("| roll back the broken deploy")), "{text}");
    let text = String::from_utf8_lossy(&lid(&["eval", "--agents", s(&d.join("agents")), "--probes", s(&probes), "--misses"]).stdout).to_string();
    assert!(text.contains("OVERALL") && !text.contains("miss@"), "{text}");

    // §21.5.4's probe shape (`probe_id`, `k`) and its probe-set metrics: coverage@k and
    // hit@k at each probe's k, beside the issue's hit@3 (every required unit in the top 3).
    // (the probe's two units are the intent's first and second by `lid recall`)
    let set = d.join("probe-set.jsonl");
    let ranked = json_of(&lid(&["recall", s(&copy), "roll back the broken deploy", "--max-chunks", "2", "--json"]));
    let (first, second) = (ranked["chunks"][0]["name"].as_str().unwrap_or_default(), ranked["chunks"][1]["name"].as_str().unwrap_or_default());
    assert_eq!(first, "rollback-procedure", "{ranked}");
    assert!(!second.is_empty() && second != first, "{ranked}");
    let two = |k: u64| json!({"probe_id": format!("two-at-{k}"), "agent_id": "release-engineer", "intent": "roll back the broken deploy", "required_units": [first, second], "k": k});
    std::fs::write(&set, format!("{}\n", two(1))).unwrap();
    let v = json_of(&lid(&["eval", "--agents", s(&d.join("agents")), "--probes", s(&set), "--json"]));
    assert_eq!((v["probe_hit_at_k"].as_f64(), v["probe_coverage_at_k"].as_f64()), (Some(1.0), Some(0.5)), "{v}");
    assert_eq!(v["hit_at_3"].as_f64(), Some(1.0), "the issue's hit@3 is at 3 whatever the probe's k: {v}");
    std::fs::write(&set, format!("{}\n", two(20))).unwrap();
    let v = json_of(&lid(&["eval", "--agents", s(&d.join("agents")), "--probes", s(&set), "--json"]));
    assert_eq!(v["probe_coverage_at_k"].as_f64(), Some(1.0), "every unit is within 20: {v}");
    std::fs::write(&set, format!("{}\n", json!({"id": "k0", "agent_id": "release-engineer", "intent": "x", "required_units": ["ground-rules"], "k": 0}))).unwrap();
    let out = lid(&["eval", "--agents", s(&d.join("agents")), "--probes", s(&set)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("probe-set.jsonl:1: probe \"k0\": `k` must be"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn eval_counts_only_the_units_an_intent_retrieved() {
    let d = scratch("eval-retrieved");
    demo_agents(&d);
    let agents = d.join("agents");
    let probes = d.join("probes.jsonl");
    // an intent that shares nothing with any unit: every unit scores 0 and the tie-break
    // by name puts `code-review` first, which is not a hit (§21.5.4: the units recall
    // returns); an `expect_none` probe may leave `required_units` out; a `k` past u32
    write_probes(
        &probes,
        &[
            json!({"id": "z1", "agent_id": "release-engineer", "intent": "qwzzx", "required_units": ["code-review"], "k": 4294967296u64}),
            json!({"id": "n1", "agent_id": "release-engineer", "intent": "bake sourdough bread", "expect_none": true}),
        ],
    );
    let rankings = d.join("rankings.jsonl");
    let out = lid(&["eval", "--agents", s(&agents), "--probes", s(&probes), "--rankings", s(&rankings), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json_of(&out);
    let first = std::fs::read_to_string(&rankings).unwrap();
    assert!(first.lines().next().is_some_and(|l| l.contains(r#""scores":[["code-review",0.0]"#)), "the unit the tie puts first: {first}");
    assert_eq!((v["probes"].as_u64(), v["hit_at_1"].as_f64(), v["mrr"].as_f64(), v["probe_hit_at_k"].as_f64()), (Some(2), Some(0.0), Some(0.0), Some(0.0)), "{v}");
    assert_eq!(v["misses"][0]["required"], json!([["code-review", null]]), "{v}");
}

#[test]
fn an_audit_file_record_the_engine_refuses_is_named_by_its_line() {
    let d = scratch("audit-line");
    let file = d.join("audit.jsonl");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let rec = json!({"id": "audevent_1", "agent_id": "a", "heartbeat_id": "h", "session_start": now, "intent": "x", "loaded_chunks": ["a"], "used_chunks": ["a"], "missed_chunks": [], "audit_token": "audi_1", "audit_closed": now, "created_at": now});
    let mut bad = rec.clone();
    bad["loaded_chunks"] = json!("a");
    std::fs::write(&file, format!("{rec}\n\n{bad}\n")).unwrap();
    let out = lid(&["--json", "audit", "report", "--file", s(&file)]);
    assert_eq!(out.status.code(), Some(1));
    let v = json_of(&out);
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.starts_with(&format!("{}:3: `loaded_chunks`", file.display())), "{v}");
}

#[test]
fn eval_packs_ranks_a_knowledge_pack_through_the_component() {
    // tests/fixtures/packs/garden: KNOWLEDGE.md, four units/ files, one compiled/ split
    // (`splits-care-harvest-timing`) and a licenses/ file that is not a context file.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let probes = fixtures.join("garden-probes.jsonl");
    let out = lid(&["eval", "--packs", s(&fixtures.join("packs")), "--probes", s(&probes), "--json"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let v = json_of(&out);
    assert_eq!((v["probes"].as_u64(), v["positives"].as_u64(), v["none_probes"].as_u64()), (Some(6), Some(5), Some(1)), "{v}");
    // every required unit, the compiled/ one included, is in the top 3
    assert_eq!(v["hit_at_3"], 1.0, "{v}");
    assert_eq!(v["hit_at_10"], 1.0, "{v}");
    assert_eq!(v["misses_at_3"], json!([]), "{v}");
    let (h1, mrr) = (v["hit_at_1"].as_f64().unwrap(), v["mrr"].as_f64().unwrap());
    assert!(h1 >= 0.8 && mrr >= 0.9 && mrr >= h1, "{v}");
    assert_eq!(v["none_auc"], 1.0, "the Kubernetes probe scores below every garden probe: {v}");
    assert_eq!(v["per_pack"]["garden"]["probes"], 6, "{v}");
    assert_eq!(v["per_pack"]["garden"]["hit_at_3"], 1.0, "{v}");
    // the text table names packs
    let out = lid(&["eval", "--packs", s(&fixtures.join("packs")), "--probes", s(&probes)]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.starts_with("pack ") && table.contains("\ngarden "), "{table}");

    // a probe naming a pack that does not exist: exit 1, an actionable message
    let d = scratch("eval-packs-missing");
    let bad = d.join("probes.jsonl");
    std::fs::write(&bad, json!({"id": "x", "pack_id": "nope", "intent": "water", "required_units": ["a"]}).to_string()).unwrap();
    let out = lid(&["--json", "eval", "--packs", s(&fixtures.join("packs")), "--probes", s(&bad)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(json_of(&out)["error"]["message"].as_str().unwrap().contains("KNOWLEDGE.md"), "{}", String::from_utf8_lossy(&out.stdout));
    // a pack whose KNOWLEDGE.md does not parse: its knowledge code and status, not a
    // generic invalid_request
    std::fs::create_dir_all(d.join("packs/broken/units")).unwrap();
    std::fs::write(d.join("packs/broken/KNOWLEDGE.md"), "# just a title\n").unwrap();
    std::fs::write(d.join("packs/broken/units/a.md"), "# A\n\nwater\n").unwrap();
    std::fs::write(&bad, json!({"id": "x", "pack_id": "broken", "intent": "water", "required_units": ["a"]}).to_string()).unwrap();
    let e = json_of(&lid(&["--json", "eval", "--packs", s(&d.join("packs")), "--probes", s(&bad)]));
    assert_eq!((e["error"]["code"].as_str(), e["error"]["status"].as_u64()), (Some("knowledge_front_matter_invalid"), Some(422)), "{e}");
    // --agents and --packs exclude each other
    let out = lid(&["eval", "--agents", "a", "--packs", "b", "--probes", s(&bad)]);
    assert_ne!(out.status.code(), Some(0));
}

#[test]
fn compose_handoff_round_trips_through_the_component() {
    // Issue: handoffs. JSON → Session Markdown → JSON gives back the same object.
    let dir = scratch("handoff");
    let handoff = json!({
        "task_id": "abc-123", "from_agent": "researcher", "to_agent": "reviewer",
        "task": "Review security implications of API changes\nand report back",
        "context": {"analysis_doc": "research/api-analysis.md", "budget": {"hours": 4}},
        "status": "pending", "created_at": "2026-02-01T10:00:00Z", "metadata": {"priority": "high"}
    });
    let input = dir.join("handoff.json");
    std::fs::write(&input, handoff.to_string()).unwrap();
    let md = dir.join("session.md");
    let out = lid(&["compose-handoff", s(&input), "-o", s(&md)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.starts_with("# Session\n\n## Current Task\nHandoff from: researcher\n"), "{text}");
    assert!(text.contains("- research/api-analysis.md (from context `analysis_doc`, load on demand)"));
    let back = lid(&["compose-handoff", "--reverse", s(&md)]);
    assert!(back.status.success(), "{}", String::from_utf8_lossy(&back.stderr));
    assert_eq!(json_of(&back), handoff);

    std::fs::write(&input, r#"{"task_id":"t","from_agent":"a","task":"x","status":"done","created_at":"2026-02-01T10:00:00Z"}"#).unwrap();
    let bad = lid(&["compose-handoff", s(&input)]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("`to_agent`: is required") && err.contains("`status`: \"done\" is not one of"), "{err}");
    // a field given twice is refused, as `POST …/handoff` refuses it, never the last kept
    std::fs::write(&input, r#"{"task_id":"t1","task_id":"t2","from_agent":"a","to_agent":"b","task":"x","status":"pending","created_at":"2026-02-01T10:00:00Z","context":{},"metadata":{}}"#).unwrap();
    let twice = json_of(&lid(&["--json", "compose-handoff", s(&input)]));
    assert_eq!(twice["error"]["code"], "invalid_request", "{twice}");
    assert!(twice["error"]["message"].as_str().is_some_and(|m| m.contains("`task_id` twice")), "{twice}");
    // the 64 KiB limit is the message's, as `POST …/handoff` counts it: indentation in the
    // file does not count
    let mut big = handoff.clone();
    big["context"] = (0..1320).map(|i| (format!("key{i:05}"), json!(format!("value number {i:05} of the context")))).collect::<serde_json::Map<_, _>>().into();
    let (compact, pretty) = (big.to_string(), serde_json::to_string_pretty(&big).unwrap());
    assert!(compact.len() < 64 * 1024 && pretty.len() > 64 * 1024, "{} / {}", compact.len(), pretty.len());
    std::fs::write(&input, &pretty).unwrap();
    let out = lid(&["compose-handoff", s(&input)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let over = json!({"task_id": "t", "from_agent": "a", "to_agent": "b", "task": "x", "status": "pending", "created_at": "2026-02-01T10:00:00Z", "context": {"note": "n".repeat(70_000)}});
    std::fs::write(&input, over.to_string()).unwrap();
    let refused = json_of(&lid(&["--json", "compose-handoff", s(&input)]));
    assert_eq!(refused["error"]["code"], "handoff_invalid", "{refused}");
}

#[test]
fn boot_context_is_composed_in_order_and_byte_identical() {
    // Issue: composed boot context. Two runs give byte-identical bundles; sections come in
    // the fixed order with provenance; over-budget items are named, never cut silently.
    let dir = scratch("context");
    let handoff = dir.join("handoff.json");
    std::fs::write(&handoff, json!({"task_id": "rel-7", "from_agent": "pm", "to_agent": "release-engineer", "task": "Ship 2.4.1", "context": {"notes": "docs/release.md"}, "status": "pending", "created_at": "2026-11-02T09:00:00Z"}).to_string()).unwrap();
    let agent = demo();
    let args = ["context", s(&agent), "--handoff", s(&handoff), "--wake-reason", "issue_assigned", "--budget", "task=60"];
    let a = lid(&args);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let b = lid(&args);
    assert_eq!(a.stdout, b.stdout, "byte-identical bundles");
    let v = json_of(&a);
    let names: Vec<&str> = v["sections"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["identity", "session", "task", "knowledge"]);
    let stub = &v["sections"][0]["items"][0];
    assert_eq!((stub["selected_by"].as_str(), stub["uri"].as_str()), (Some("boot_stub"), Some("instruction:demo/release-engineer/manifest/v1")));
    assert_eq!(stub["sha256"].as_str().unwrap().len(), 64);
    assert!(v["sections"][1]["items"][0]["text"].as_str().unwrap().contains("Task: Ship 2.4.1"));
    let task = &v["sections"][2];
    assert!(task["tokens"].as_u64().unwrap() <= 60);
    assert!(task["dropped"].as_array().unwrap().iter().any(|d| d["reason"] == "section_budget"), "{task}");
    let md = lid(&[&args[..], &["--markdown"]].concat());
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("\n## Identity\n") && md.contains("\n## Session\n") && md.contains("<!-- dropped: "), "{md}");
}

#[test]
fn audit_replay_proves_what_the_agent_saw() {
    // Content-addressed recall: the audit row carries the assembly digest and the request;
    // a replay over unchanged units matches (exit 0), over an edited unit it does not (2).
    let dir = scratch("replay");
    let agent = dir.join("agent");
    std::fs::create_dir_all(agent.join("units")).unwrap();
    std::fs::copy(demo().join("manifest.json"), agent.join("manifest.json")).unwrap();
    for f in std::fs::read_dir(demo().join("units")).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, agent.join("units").join(f.file_name().unwrap())).unwrap();
    }
    let r = lid(&["--json", "recall", s(&agent), "how do I roll back a bad deploy", "--max-chunks", "2"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v = json_of(&r);
    let token = v["audit_token"].as_str().unwrap();
    let same = lid(&["--json", "audit", "replay", s(&agent), token]);
    assert_eq!(same.status.code(), Some(0), "{}", String::from_utf8_lossy(&same.stderr));
    assert_eq!(json_of(&same)["replayed_sha256"], v["assembly_sha256"]);
    let first = v["chunks"][0]["name"].as_str().unwrap();
    let unit = agent.join("units").join(format!("{first}.md"));
    let text = std::fs::read_to_string(&unit).unwrap();
    std::fs::write(&unit, format!("{text}\nOne more line.\n")).unwrap();
    let changed = lid(&["audit", "replay", s(&agent), token]);
    assert_eq!(changed.status.code(), Some(2));
    let out = String::from_utf8_lossy(&changed.stdout);
    assert!(out.starts_with("DIFFERENT") && out.contains(&format!("recorded only: {first} ")), "{out}");
    assert_eq!(lid(&["audit", "replay", s(&agent), "audi_nope"]).status.code(), Some(1));
    // A line left unfinished in the log (a crash part way) does not swallow the next
    // record, and a replay that finds nothing says which lines it could not read.
    let log = agent.join(".lid/audit.jsonl");
    std::fs::write(&log, std::fs::read_to_string(&log).unwrap() + "{\"id\":\"cut").unwrap();
    let next = json_of(&lid(&["--json", "recall", s(&agent), "write a status update"]));
    assert!(next["warnings"].as_array().is_none_or(|w| w.is_empty()), "{next}");
    let token = next["audit_token"].as_str().unwrap();
    assert_eq!(lid(&["audit", "replay", s(&agent), token]).status.code(), Some(0), "the record after the cut line is whole");
    let missing = lid(&["--json", "audit", "replay", s(&agent), "audi_nope"]);
    let message = json_of(&missing)["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("1 line(s) there are not JSON records and were not read: line 2"), "{message}");
}

/// A manifest or a Markdown file saved with a byte-order mark reads as the text after it.
#[test]
fn a_byte_order_mark_is_not_part_of_the_text() {
    let d = scratch("bom");
    let agent = d.join("agent");
    copy_dir(&demo(), &agent);
    let manifest = std::fs::read(demo().join("manifest.json")).unwrap();
    std::fs::write(agent.join("manifest.json"), [b"\xef\xbb\xbf".as_slice(), &manifest].concat()).unwrap();
    assert_eq!(lid(&["validate", s(&agent), "--approve", "guarantee-load"]).status.code(), Some(0));
    let published = lid(&["publish", s(&agent), "--db", s(&d.join("lid.db")), "--approve", "guarantee-load"]);
    assert_eq!(published.status.code(), Some(0), "publish reads it as validate does: {}", String::from_utf8_lossy(&published.stderr));
    let md = d.join("AGENTS.md");
    std::fs::write(&md, b"\xef\xbb\xbf## First\n\nFirst text.\n\n## Second\n\nSecond text.\n").unwrap();
    let v = json_of(&lid(&["--json", "migrate-instructions", s(&md), "--deployment", "d", "--agent", "a", "--out", s(&d.join("out"))]));
    let names: Vec<&str> = v["units"].as_array().unwrap().iter().map(|u| u["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["first", "second"], "{v}");
    assert!(std::fs::read_to_string(d.join("out/units/first.md")).unwrap().starts_with("## First"));
}

/// A unit file and an audit file an editor saved with a UTF-8 byte-order mark (Windows
/// editors write one) are read past it, as manifests are: the CLI served the unit with
/// U+FEFF at its head (which a publish then refused as a zero-width character) and
/// refused the audit file as "not a JSON audit record".
#[test]
fn unit_and_audit_files_are_read_past_a_byte_order_mark() {
    let d = scratch("bom-unit");
    let agent = d.join("agent");
    copy_dir(&demo(), &agent);
    let recall = || json_of(&lid(&["--json", "recall", s(&agent), "roll back the deploy", "--max-chunks", "1"]));
    let plain = recall();
    let name = plain["chunks"][0]["name"].as_str().unwrap().to_string();
    let unit = agent.join("units").join(format!("{name}.md"));
    let text = std::fs::read_to_string(&unit).unwrap();
    std::fs::write(&unit, format!("\u{feff}{text}")).unwrap();
    let marked = recall();
    assert_eq!((&marked["chunks"][0]["content"], &marked["chunks"][0]["tokens"]), (&plain["chunks"][0]["content"], &plain["chunks"][0]["tokens"]), "{marked}");
    let published = lid(&["publish", s(&agent), "--db", s(&d.join("lid.db")), "--approve", "guarantee-load"]);
    assert_eq!(published.status.code(), Some(0), "{}", String::from_utf8_lossy(&published.stderr));
    // the log the recalls wrote, saved again with a mark: reported as it was
    let log = agent.join(".lid").join("audit.jsonl");
    let report = |f: &Path| lid(&["--json", "audit", "report", s(&agent), "--file", s(f)]);
    let before = report(&log);
    assert_eq!(before.status.code(), Some(0), "{}", String::from_utf8_lossy(&before.stderr));
    let marked_log = d.join("marked.jsonl");
    std::fs::write(&marked_log, format!("\u{feff}{}", std::fs::read_to_string(&log).unwrap())).unwrap();
    let after = report(&marked_log);
    assert_eq!(after.status.code(), Some(0), "{}", String::from_utf8_lossy(&after.stderr));
    assert_eq!(after.stdout, before.stdout);
}

/// A unit file that is there but cannot be read is reported with why, not as missing.
#[test]
fn an_unreadable_unit_file_is_reported_with_the_reason() {
    let d = scratch("unreadable");
    let agent = d.join("agent");
    copy_dir(&demo(), &agent);
    std::fs::write(agent.join("units/ground-rules.md"), b"x \xff\xfe\n").unwrap();
    std::fs::remove_file(agent.join("units/code-review.md")).unwrap();
    std::fs::create_dir(agent.join("units/code-review.md")).unwrap();
    std::fs::remove_file(agent.join("units/triage-incoming.md")).unwrap();
    let out = lid(&["stub", s(&agent)]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unit \"ground-rules\": ") && err.contains("ground-rules.md is not UTF-8 text: byte 2 (line 1, byte 3 of the line) is 0xFF"), "{err}");
    assert!(err.contains("unit \"code-review\": cannot read") && err.contains("directory"), "{err}");
    assert!(err.contains("unit \"triage-incoming\": no file at"), "{err}");
}

/// Unit files are read only inside the agent directory, whatever a symlink says, and only
/// when they are regular files: a FIFO would block the read forever.
#[test]
fn unit_files_outside_the_agent_directory_or_not_regular_are_not_read() {
    let d = scratch("outside");
    let agent = d.join("agent");
    copy_dir(&demo(), &agent);
    std::fs::write(d.join("outside.md"), "SECRET OUTSIDE CONTENT\n").unwrap();
    std::fs::remove_file(agent.join("units/code-review.md")).unwrap();
    std::os::unix::fs::symlink(d.join("outside.md"), agent.join("units/code-review.md")).unwrap();
    // a symlink that stays inside is read as before
    std::fs::rename(agent.join("units/rollback-procedure.md"), agent.join("rollback.md")).unwrap();
    std::os::unix::fs::symlink("../rollback.md", agent.join("units/rollback-procedure.md")).unwrap();
    std::fs::remove_file(agent.join("units/triage-incoming.md")).unwrap();
    assert!(Command::new("mkfifo").arg(agent.join("units/triage-incoming.md")).status().unwrap().success());
    let out = lid(&["--json", "recall", s(&agent), "review this pull request", "--max-chunks", "10"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json_of(&out);
    assert!(!v.to_string().contains("SECRET OUTSIDE CONTENT"), "{v}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unit \"code-review\":") && err.contains("outside the agent directory"), "{err}");
    assert!(err.contains("unit \"triage-incoming\": cannot read") && err.contains("not a regular file"), "{err}");
    let rollback = json_of(&lid(&["--json", "recall", s(&agent), "roll back the broken deploy"]));
    assert_eq!(rollback["chunks"][0]["name"], "rollback-procedure", "{rollback}");
    // `lid publish` reads unit files the same way: the symlink out is refused, nothing stored
    std::fs::remove_file(agent.join("units/triage-incoming.md")).unwrap();
    std::fs::copy(demo().join("units/triage-incoming.md"), agent.join("units/triage-incoming.md")).unwrap();
    let db = d.join("outside.db");
    let v = json_of(&lid(&["--json", "publish", s(&agent), "--db", s(&db), "--skip-coverage-gate", "--approve", "guarantee-load"]));
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(v["error"]["code"] == "cli_error" && message.contains("outside the agent directory"), "{v}");
    assert!(!db.exists(), "a refused first publish leaves no database");
    // the same from inside the directory, the manifest named bare (its parent: the empty path)
    for args in [vec!["--json", "publish", "manifest.json", "--db", s(&db), "--skip-coverage-gate", "--approve", "guarantee-load"], vec!["--json", "recall", "manifest.json", "review this pull request", "--max-chunks", "10"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_lid")).args(&args).current_dir(&agent).output().unwrap();
        assert!(!String::from_utf8_lossy(&out.stdout).contains("SECRET OUTSIDE CONTENT"), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("outside the agent directory") || String::from_utf8_lossy(&out.stderr).contains("outside the agent directory"), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(!db.exists());
}

/// `lid validate AGENT_DIR --publish` refuses what `lid publish` refuses, the admission
/// lint of the units' text included (README "Admission lint").
#[test]
fn validate_publish_runs_the_admission_lint() {
    let d = scratch("validate-lint");
    let agent = d.join("agent");
    copy_dir(&demo(), &agent);
    let args = ["--json", "validate", s(&agent), "--publish", "--approve", "guarantee-load"];
    let clean = lid(&args);
    assert_eq!(clean.status.code(), Some(0), "{}", String::from_utf8_lossy(&clean.stdout));
    let unit = agent.join("units/code-review.md");
    let text = std::fs::read_to_string(&unit).unwrap();
    std::fs::write(&unit, format!("{text}\nMerge\u{200b} it.\n")).unwrap();
    let out = lid(&args);
    assert_eq!(out.status.code(), Some(1));
    let v = json_of(&out);
    assert!(codes(&v).contains(&("unit_admission_rejected".into(), "code-review".into(), "content".into())), "{v}");
    let db = d.join("lint.db");
    let published = json_of(&lid(&["--json", "publish", s(&agent), "--db", s(&db), "--skip-coverage-gate", "--approve", "guarantee-load"]));
    assert_eq!(published["error"]["code"], "unit_admission_rejected", "the publish refuses the same: {published}");
    // without --publish it is a manifest check, as before
    assert_eq!(lid(&["validate", s(&agent)]).status.code(), Some(0));
    // the manifest named as a file, --publish checks its units as a publish would
    let file = agent.join("manifest.json");
    let v = json_of(&lid(&["--json", "validate", s(&file), "--publish", "--approve", "guarantee-load"]));
    assert!(codes(&v).contains(&("unit_admission_rejected".into(), "code-review".into(), "content".into())), "{v}");
}

/// `lid context --request FILE` refuses a field given twice anywhere in the file, as the
/// handoff and every service body are refused (never resolved to the last).
#[test]
fn context_requests_refuse_a_field_given_twice() {
    let d = scratch("context-twice");
    let req = d.join("req.json");
    std::fs::write(&req, r#"{"budgets": {"task": 1500, "task": 10}}"#).unwrap();
    let v = json_of(&lid(&["--json", "context", s(&demo()), "--request", s(&req)]));
    assert_eq!(v["error"]["code"], "invalid_request", "{v}");
    std::fs::write(&req, r#"{"budgets": "identity=500"}"#).unwrap();
    let out = lid(&["--json", "context", s(&demo()), "--request", s(&req), "--budget", "task=10"]);
    assert_eq!(out.status.code(), Some(1), "no panic: {}", String::from_utf8_lossy(&out.stderr));
    let out = lid(&["--json", "context", s(&demo()), "--budget", "task=10", "--budget", "task=20"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn export_writes_skill_agents_md_and_cursor_rules() {
    let out = scratch("export");
    for (format, first) in [("skill", "SKILL.md"), ("agents-md", "AGENTS.md"), ("cursor-rules", ".cursor/rules/ground-rules.mdc")] {
        let dir = out.join(format);
        let r = lid(&["export", s(&demo()), "--format", format, "--out", s(&dir)]);
        assert!(r.status.success(), "{format}: {}", String::from_utf8_lossy(&r.stderr));
        let text = std::fs::read_to_string(dir.join(first)).unwrap_or_else(|e| panic!("{format}: {first}: {e}"));
        assert!(text.contains("Exported by lid from manifest v1"), "{text}");
    }
    let skill = std::fs::read_to_string(out.join("skill/SKILL.md")).unwrap();
    assert!(skill.starts_with("---\nname: release-engineer\n") && skill.contains("## Always applicable\n\n### ground-rules\n"), "{skill}");
    assert_eq!(std::fs::read_dir(out.join("skill/units")).unwrap().count(), 7);
    let rule = std::fs::read_to_string(out.join("cursor-rules/.cursor/rules/ground-rules.mdc")).unwrap();
    assert!(rule.contains("alwaysApply: true"));
    let bad = lid(&["export", s(&demo()), "--format", "docx", "--out", s(&out)]);
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("skill, agents-md, cursor-rules"));
    // Exporting an agent that dropped a unit over an earlier export is refused: the old
    // rule would stay in force. Nothing is written.
    let agent = out.join("agent");
    copy_dir(&demo(), &agent);
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(agent.join("manifest.json")).unwrap()).unwrap();
    m["entries"].as_array_mut().unwrap().retain(|e| e["name"] != "code-review");
    std::fs::write(agent.join("manifest.json"), m.to_string()).unwrap();
    let rules = out.join("cursor-rules");
    let before = std::fs::read_to_string(rules.join(".cursor/rules/ground-rules.mdc")).unwrap();
    let stale = lid(&["--json", "export", s(&agent), "--format", "cursor-rules", "--out", s(&rules)]);
    assert_eq!(stale.status.code(), Some(1));
    assert!(json_of(&stale)["error"]["message"].as_str().unwrap().contains(".cursor/rules/code-review.mdc"), "{}", String::from_utf8_lossy(&stale.stdout));
    assert_eq!(std::fs::read_to_string(rules.join(".cursor/rules/ground-rules.mdc")).unwrap(), before);
    assert!(lid(&["export", s(&agent), "--format", "cursor-rules", "--out", s(&out.join("clean"))]).status.success());
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            copy_dir(&p, &to.join(p.file_name().unwrap()));
        } else {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

/// `lid mcp` refuses a call whose body is over the services' 8 MiB limit before sending
/// it (`request_too_large`, not retryable): sent, the service may close the connection
/// before reading it all, which read as "cannot reach the service", retryable. No service
/// runs here, so any other answer would be that one.
#[test]
fn lid_mcp_refuses_an_oversized_call_before_sending_it() {
    use std::io::{Read, Write};
    let mut child = Command::new(env!("CARGO_BIN_EXE_lid"))
        .args(["mcp", "--server", "http://127.0.0.1:9", "--agent", "release-engineer", "--key", "lid_x"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run lid mcp");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let big = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "recall_instruction", "arguments": {"intent": "deploy", "manifest_hint": vec!["x".repeat(100); 100_000]}}});
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{init}\n{}\n{big}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
    drop(stdin);
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    let _ = child.wait();
    let answer: Value = out.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find(|v| v["id"] == 3).unwrap_or_else(|| panic!("no answer to the call: {out}"));
    let text = answer.to_string();
    assert!(text.contains("request_too_large") && !text.contains("upstream_unavailable"), "{}", &text[..text.len().min(600)]);
}

/// `lid -V` names the schema the binary writes (its last migration in `migrations/`), and
/// a binary opening a database a newer `lid` migrated (a rollback) says so on stderr,
/// naming the migrations it does not know, and still opens it (README, "Upgrading").
#[test]
fn the_version_names_the_schema_and_a_newer_database_is_said_on_opening() {
    let mut migrations: Vec<String> = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok()?.strip_suffix(".sql").map(str::to_string))
        .collect();
    migrations.sort();
    let last = migrations.last().unwrap();
    let v = lid(&["-V"]);
    assert!(v.status.success());
    assert_eq!(String::from_utf8_lossy(&v.stdout).trim(), format!("lid {} (schema {last})", env!("CARGO_PKG_VERSION")));

    let dir = scratch("newer-schema");
    let db = dir.join("lid.db");
    let made = lid(&["--json", "keys", "create", "--db", s(&db), "--role", "admin", "--entity-uri", "admin:rollback"]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    assert!(!String::from_utf8_lossy(&made.stderr).contains("newer lid"), "{}", String::from_utf8_lossy(&made.stderr));
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute("INSERT INTO lid_migrations (name, applied_at) VALUES ('9999_from_the_future.sql', 0)", []).unwrap();
    drop(c);
    let list = lid(&["--json", "keys", "list", "--db", s(&db)]);
    let err = String::from_utf8_lossy(&list.stderr);
    assert!(list.status.success(), "{err}");
    assert!(err.contains("migrated by a newer lid") && err.contains("9999_from_the_future.sql") && err.contains(last.as_str()), "{err}");
    assert_eq!(json_of(&list)["keys"][0]["entity_uri"], json!("admin:rollback"));
}
