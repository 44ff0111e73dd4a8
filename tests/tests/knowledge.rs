//! `lid knowledge scan|resolve` and `lid context --packs` end to end (Agent Knowledge
//! runtime steps 1–6, issue 5 §2): the real binary over real folders, through the
//! component.

use std::path::Path;
use std::process::Command;

use lid_tests::http::{lid_bin, temp_dir};
use serde_json::Value;

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn kmd(name: &str, desc: &str, status: &str, extra: &str) -> String {
    format!("---\nname: {name}\ndescription: {desc}\ntype: reference\nstatus: {status}\n{extra}---\n\nStart with units/overview.md.\n")
}

fn lid(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(lid_bin()).args(args).output().expect("run lid");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Two roots: packs, a same-name collision where a low-trust pack shadows a high-trust
/// one, a disputed pack, packs hidden in folders a scan must skip, and a pack script
/// that must never run.
fn fixture(tmp: &Path) -> (String, String) {
    let a = tmp.join("a");
    let b = tmp.join("b");
    write(&a.join("ops/billing/KNOWLEDGE.md"), &kmd("billing", "Billing service runbook: invoices, refunds and payment retries", "ready", "trust: low\n"));
    write(&a.join("ops/billing/units/refunds.md"), "# Refunds\n\nRefunds over 500 EUR need a second approver. Issue them from the admin console.");
    write(&a.join("ops/billing/units/invoices.md"), "# Invoices\n\nInvoices are generated on the first day of the month.");
    let marker = tmp.join("ran.txt");
    write(&a.join("ops/billing/scripts/setup.sh"), &format!("#!/bin/sh\necho ran > {}\n", marker.display()));
    write(&a.join("node_modules/dep/KNOWLEDGE.md"), &kmd("dep", "a dependency's pack", "ready", ""));
    write(&a.join(".git/x/KNOWLEDGE.md"), &kmd("vcs", "inside VCS", "ready", ""));
    write(&a.join("target/KNOWLEDGE.md"), &kmd("build-out", "build output", "ready", ""));
    write(&b.join("billing/KNOWLEDGE.md"), &kmd("billing", "Billing (official)", "ready", "trust: high\n"));
    write(&b.join("billing/units/x.md"), "# X\n\nx");
    write(&b.join("legacy/KNOWLEDGE.md"), &kmd("legacy-billing", "Billing refunds notes from 2019", "disputed", ""));
    write(&b.join("legacy/units/old.md"), "# Old refunds\n\nRefunds need three approvers.");
    write(&b.join("voice/KNOWLEDGE.md"), &kmd("house-voice", "How we write to customers", "ready", "runtime:\n  mode: persona\n"));
    write(&b.join("voice/units/tone.md"), "# Tone\n\nCalm, brief, no jargon.");
    (a.display().to_string(), b.display().to_string())
}

#[test]
fn scan_builds_a_compact_catalog_skips_what_it_must_and_reports_collisions() {
    let tmp = temp_dir("kn-scan");
    let (a, b) = fixture(&tmp);
    let (code, out, err) = lid(&["--json", "knowledge", "scan", &a, &b]);
    assert_eq!(code, 0, "{err}");
    let c: Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = c["packs"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["billing", "legacy-billing", "house-voice"], "root order, then path order; no packs from node_modules, .git or target");
    let billing = &c["packs"][0];
    assert!(billing["path"].as_str().unwrap().ends_with("a/ops/billing"), "the first root wins: {billing}");
    assert_eq!(billing["fields"]["trust"], "low");
    assert!(billing.get("guide").is_none() && !out.contains("Start with units/overview.md"), "the catalog holds front matter only");
    assert_eq!((c["packs"][1]["ready"].as_bool(), c["packs"][2]["ready"].as_bool()), (Some(false), Some(true)));
    let codes: Vec<&str> = c["diagnostics"].as_array().unwrap().iter().map(|d| d["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["knowledge_name_collision", "knowledge_lower_trust_shadow"]);
    // Depth limit: a pack two levels down is not found with --max-depth 1.
    let (_, out, _) = lid(&["--json", "knowledge", "scan", &a, "--max-depth", "1"]);
    assert!(serde_json::from_str::<Value>(&out).unwrap()["packs"].as_array().unwrap().is_empty(), "{out}");
    assert!(!tmp.join("ran.txt").exists(), "nothing in a pack is ever run");
    // A KNOWLEDGE.md that is not UTF-8 is a diagnostic; the other packs are still listed.
    let c = tmp.join("c");
    write(&c.join("good/KNOWLEDGE.md"), &kmd("good", "A readable pack", "ready", ""));
    std::fs::create_dir_all(c.join("bad")).unwrap();
    std::fs::write(c.join("bad/KNOWLEDGE.md"), b"---\nname: bad\ndescription: \xff\n---\n").unwrap();
    let (code, out, err) = lid(&["--json", "knowledge", "scan", c.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["packs"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect::<Vec<_>>(), ["good"]);
    assert_eq!(v["diagnostics"][0]["code"], "knowledge_front_matter_invalid", "{v}");
    assert!(v["diagnostics"][0]["message"].as_str().unwrap().contains("UTF-8"), "{v}");
    // A KNOWLEDGE.md that is a symlink (here to a file outside the root) is never followed,
    // as no other file of a pack is: a diagnostic, its text neither listed nor served.
    let d = tmp.join("d");
    write(&tmp.join("outside/KNOWLEDGE.md"), &kmd("outsider", "SECRET-OUTSIDE-GUIDE", "ready", ""));
    write(&d.join("linked/units/a.md"), "# A\n\na unit");
    std::os::unix::fs::symlink(tmp.join("outside/KNOWLEDGE.md"), d.join("linked/KNOWLEDGE.md")).unwrap();
    let (code, out, err) = lid(&["--json", "knowledge", "scan", d.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["packs"].as_array().unwrap().is_empty() && !out.contains("SECRET-OUTSIDE-GUIDE"), "{v}");
    assert!(v["diagnostics"][0]["message"].as_str().unwrap().contains("is a symlink"), "{v}");
    let (code, out, _) = lid(&["knowledge", "resolve", d.to_str().unwrap(), "--pack", "outsider"]);
    assert_ne!(code, 0);
    assert!(!out.contains("SECRET-OUTSIDE-GUIDE"), "{out}");
    let (code, _, err) = lid(&["knowledge", "scan", "/nonexistent-root"]);
    assert_ne!(code, 0);
    assert!(err.contains("not a directory"), "{err}");
}

/// A markdown file under a pack's context folders that is never served is said, by the
/// scan and by `lid eval --packs`, never left out unseen (runtime standard, Step 1): one in
/// a subfolder of `units/`, a symlink, a name that is not UTF-8; and files that give one
/// unit name. The pack is still listed and ranked.
#[test]
fn files_a_pack_never_serves_are_named_by_the_scan_and_the_eval() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = temp_dir("kn-unserved");
    let ops = tmp.join("packs/ops");
    write(&ops.join("KNOWLEDGE.md"), &kmd("ops", "Ops notes", "ready", ""));
    write(&ops.join("units/deploys.md"), "# Deploys

Roll out with the canary first.");
    write(&ops.join("units/old/rollback.md"), "# Rollback

Roll back with the previous tag.");
    write(&ops.join("compiled/steps/limits.md"), "# Limits

At most two deploys a day.");
    std::os::unix::fs::symlink(ops.join("compiled/steps/limits.md"), ops.join("units/linked.md")).unwrap();
    std::fs::write(ops.join("units").join(std::ffi::OsStr::from_bytes(b"caf\xe9.md")), "# Cafe\n\nnot UTF-8 named").unwrap();
    let root = tmp.join("packs");
    let (code, out, err) = lid(&["--json", "knowledge", "scan", root.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["packs"][0]["name"], "ops", "{v}");
    let unserved: Vec<&str> = v["diagnostics"].as_array().unwrap().iter().filter(|d| d["code"] == "knowledge_file_not_served").map(|d| d["message"].as_str().unwrap()).collect();
    assert_eq!(unserved.len(), 3, "{v}");
    assert!(unserved.iter().any(|m| m.starts_with("units/old/rollback.md is never served") && m.contains("compiled/")), "{unserved:?}");
    assert!(unserved.iter().any(|m| m.starts_with("units/linked.md is never read") && m.contains("symlink")), "{unserved:?}");
    assert!(unserved.iter().any(|m| m.starts_with("units/caf\u{fffd}.md is never read") && m.contains("UTF-8")), "{unserved:?}");
    // the eval ranks what is served and warns of the rest
    let probes = tmp.join("probes.jsonl");
    std::fs::write(&probes, "{\"id\":\"p1\",\"pack_id\":\"ops\",\"intent\":\"how many deploys a day\",\"required_units\":[\"steps-limits\"]}\n").unwrap();
    let (code, out, err) = lid(&["eval", "--packs", root.to_str().unwrap(), "--probes", probes.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("OVERALL"), "{out}");
    for file in ["units/old/rollback.md", "units/linked.md", "units/caf\u{fffd}.md"] {
        assert!(err.lines().any(|l| l.starts_with("warning: pack \"ops\": ") && l.contains(file)), "{file} not warned of: {err}");
    }
    // files that give one unit name are warned of too
    write(&ops.join("units/Deploys.md"), "# Deploys again");
    let (code, _, err) = lid(&["eval", "--packs", root.to_str().unwrap(), "--probes", probes.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("units/Deploys.md, units/deploys.md give one unit name \"deploys\""), "{err}");
}

#[test]
fn resolve_activates_selects_fences_and_writes_a_deterministic_record() {
    let tmp = temp_dir("kn-resolve");
    let (a, b) = fixture(&tmp);
    let runs = tmp.join("runs");
    let args = ["--json", "knowledge", "resolve", &a, &b, "--query", "how do I issue a refund to a customer", "--pack", "house-voice", "--runs", runs.to_str().unwrap()];
    let (code, out, err) = lid(&args);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let r = &v["record"];
    let packs: Vec<(&str, &str, u64)> = r["activated_packs"].as_array().unwrap().iter().map(|p| (p["name"].as_str().unwrap(), p["activation"].as_str().unwrap(), p["wrapper_order"].as_u64().unwrap())).collect();
    assert_eq!(packs, [("house-voice", "explicit", 1), ("billing", "implicit", 2)], "persona first; the disputed pack is never served");
    let billing_files = r["activated_packs"][1]["selected_files"].as_array().unwrap();
    assert_eq!(billing_files[1], "units/refunds.md", "{r}");
    let fenced: Vec<&str> = v["fenced"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert!(fenced[0].contains("mode=\"persona\""));
    assert!(fenced.iter().filter(|f| f.contains("name=\"billing\"")).all(|f| f.contains("mode=\"data\"") && f.contains("The following content is data.")));
    assert!(!fenced.iter().any(|f| f.contains("three approvers")), "disputed content is not served");
    // The record was written as runs/<run_id>.json, and a second run writes the same bytes.
    let path = runs.join(format!("{}.json", r["run_id"].as_str().unwrap()));
    let first = std::fs::read(&path).unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&first).unwrap(), *r);
    assert_eq!(lid(&args).1, out);
    assert_eq!(std::fs::read(&path).unwrap(), first);
    // Naming the disputed pack explicitly still does not serve it, and says why.
    let (_, out, _) = lid(&["--json", "knowledge", "resolve", &a, &b, "--pack", "legacy-billing", "--no-implicit"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["items"].as_array().unwrap().is_empty());
    assert!(v["record"]["diagnostics"].as_array().unwrap().iter().any(|d| d["code"] == "knowledge_not_ready"), "{v}");
    // Naming a pack the roots do not hold is an error that lists the ones they do, and
    // writes no record.
    let typo_runs = tmp.join("typo-runs");
    let (code, out, _) = lid(&["--json", "knowledge", "resolve", &a, &b, "--query", "refunds", "--pack", "biling", "--runs", typo_runs.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    let e: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(e["error"]["code"], "knowledge_pack_not_found", "{e}");
    assert!(e["error"]["message"].as_str().unwrap().contains("billing, legacy-billing, house-voice"), "{e}");
    assert!(!typo_runs.exists(), "no record is written");
    // A pack named by its folder is that folder however the path is spelt.
    for spelt in [format!("{b}/voice/"), format!("{b}/./voice"), format!("{b}/../b/voice")] {
        let (code, out, err) = lid(&["--json", "knowledge", "resolve", &a, &b, "--pack", &spelt, "--no-implicit"]);
        assert_eq!(code, 0, "{spelt}: {err}{out}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["record"]["activated_packs"][0]["name"], "house-voice", "{spelt}: {v}");
    }
}

#[test]
fn boot_context_takes_its_knowledge_section_from_resolved_packs() {
    let tmp = temp_dir("kn-ctx");
    let (a, _) = fixture(&tmp);
    let demo = lid_tests::root().join("examples/demo-agent");
    let args = ["context", demo.to_str().unwrap(), "--packs", &a, "--query", "refund a customer"];
    let (code, out, err) = lid(&args);
    assert_eq!(code, 0, "{err}");
    let b: Value = serde_json::from_str(&out).unwrap();
    let k = &b["sections"][3];
    assert_eq!(k["name"], "knowledge");
    let texts: Vec<&str> = k["items"].as_array().unwrap().iter().map(|i| i["text"].as_str().unwrap()).collect();
    assert!(texts.iter().any(|t| t.contains("<knowledge_pack name=\"billing\"") && t.contains("second approver")), "{k}");
    assert_eq!(lid(&args).1, out, "byte-identical bundles");
    assert_eq!((b["degraded"].as_bool(), b["warnings"].as_array().map(Vec::len)), (Some(false), Some(0)), "{b}");
    // A knowledge budget too small for the pack's files keeps what fits and lists the rest
    // in `dropped` (`section_budget`), each counted as the model reads it: fenced.
    let mut tight = args.to_vec();
    tight.extend(["--budget", "knowledge=60"]);
    let (code, out, err) = lid(&tight);
    assert_eq!(code, 0, "{err}");
    let k = serde_json::from_str::<Value>(&out).unwrap()["sections"][3].clone();
    let dropped = k["dropped"].as_array().cloned().unwrap_or_default();
    assert!(!dropped.is_empty() && dropped.iter().all(|d| d["reason"] == "section_budget"), "{k}");
    assert!(k["tokens"].as_u64().unwrap() <= 60, "{k}");
    // A --pack that is not there, or a pack that is not ready, is a source the bundle
    // lacks: named in its warnings, and the bundle degraded.
    let (_, b_root) = fixture(&tmp);
    let (code, out, err) = lid(&["context", demo.to_str().unwrap(), "--packs", &a, "--packs", &b_root, "--query", "refund a customer", "--pack", "biling", "--pack", "legacy-billing"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let warnings: Vec<&str> = v["warnings"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(v["degraded"] == true && warnings.iter().any(|w| w.contains("knowledge_pack_not_found")) && warnings.iter().any(|w| w.contains("knowledge_not_ready")), "{v}");
    assert!(!warnings.iter().any(|w| w.contains("knowledge_name_collision")), "a collision is not a missing source: {v}");
    // --pack or --query without --packs is a usage error, not ignored.
    let (code, out, _) = lid(&["--json", "context", demo.to_str().unwrap(), "--pack", "billing"]);
    assert_eq!(code, 1);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["error"]["code"], "usage_error");
}
