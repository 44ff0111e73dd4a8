//! The `lid` command line (clap). Every command runs the engine through the component.
//! `--json` prints machine-readable output; bad input exits 1 with a readable error.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use serde_json::{json, Value};

use crate::agent_dir::{self, AgentDir, MemFacts};
use crate::audit_log::JsonlAudit;
use crate::engine::{AuditLog, EngineFailure, NoAudit, Runtime, RuntimeOptions, Storage};

#[derive(Parser, Debug)]
#[command(name = "lid", version = crate::db::version_line(), about = "Lazy Instruction Discovery: load an agent's instructions on demand")]
pub struct Cli {
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Validate a manifest (§21.2): every problem at once, with its code, entry and field.
    Validate {
        /// manifest.json, or an agent directory holding one
        manifest: PathBuf,
        /// Registered wake reasons (repeatable; default: lid's built-in enum)
        #[arg(long = "wake-reason", value_parser = wake_reason_arg)]
        wake_reasons: Vec<String>,
        /// Enforce approvals as a publish would: guarantee-load | task-types:NAME | force-position:NAME
        #[arg(long = "approve", value_parser = approval_arg)]
        approvals: Vec<String>,
        /// Check approvals as a publish would (missing ones are errors)
        #[arg(long)]
        publish: bool,
    },
    /// Render the boot stub (§21.1).
    Stub {
        agent_dir: PathBuf,
        /// generic | paperclip-claude-code | openai-assistants (unknown: generic)
        #[arg(long)]
        profile: Option<String>,
    },
    /// recall_instruction (§21.3) against an agent directory.
    Recall {
        agent_dir: PathBuf,
        intent: String,
        #[arg(long)]
        max_chunks: Option<u32>,
        #[arg(long)]
        token_budget: Option<u32>,
        #[arg(long = "hint")]
        hints: Vec<String>,
        #[arg(long)]
        wake_reason: Option<String>,
        /// Leave out ranked units scoring below this (0 to 1)
        #[arg(long, value_parser = score_arg)]
        min_score: Option<f64>,
        /// Audit log (JSONL); default AGENT_DIR/.lid/audit.jsonl
        #[arg(long)]
        audit: Option<PathBuf>,
    },
    /// Task-type preloads (§21.1.5) for a wake reason.
    Preload {
        agent_dir: PathBuf,
        #[arg(long)]
        wake_reason: String,
    },
    /// The paraphrase coverage gate (§21.8.3).
    Coverage {
        agent_dir: PathBuf,
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
        k: u32,
    },
    /// Split a markdown instruction file into units and a draft manifest (§21.6.3).
    MigrateInstructions {
        /// The markdown instruction file (UTF-8)
        file: PathBuf,
        /// Deployment of the units' fact URIs (`instruction:{deployment}/{agent}/{unit}/v1`)
        #[arg(long)]
        deployment: String,
        /// Agent id of the draft manifest and of the units' fact URIs
        #[arg(long)]
        agent: String,
        /// Directory to write `units/<name>.md` and `manifest.draft.json` into (all or none)
        #[arg(long)]
        out: PathBuf,
        /// The draft manifest's `agent_role` (one line)
        #[arg(long)]
        role: Option<String>,
        /// Split before lines matching this regex instead of at H2/H3
        #[arg(long)]
        split_regex: Option<String>,
    },
    /// Ranking quality over probe sets: hit@1, hit@3, hit@10, MRR, none AUC.
    Eval {
        /// Directory of agent directories (probes name them by `agent_id`)
        #[arg(long, required_unless_present = "packs", conflicts_with = "packs")]
        agents: Option<PathBuf>,
        /// Directory of knowledge packs (`KNOWLEDGE.md` + units/, compiled/ or documents/;
        /// probes name them by `pack_id`)
        #[arg(long)]
        packs: Option<PathBuf>,
        /// JSON lines, one probe each: `id`, `agent_id` (or `pack_id`), `intent`,
        /// `required_units`, optional `wake_reason` and `expect_none`
        #[arg(long)]
        probes: PathBuf,
        /// Also list every probe missed at 1 or 3: the unit ranked first and where each
        /// required unit ranked (`--json` always carries them, under `misses`)
        #[arg(long)]
        misses: bool,
        /// Also write every probe's whole ranking to FILE, one JSON line per probe in
        /// probe order: `{"id", "agent", "scores": [[unit, score], ...]}` (for
        /// comparisons outside lid, e.g. `scripts/baseline/compare.py`); written whole
        /// or not at all
        #[arg(long, value_name = "FILE")]
        rankings: Option<PathBuf>,
    },
    /// Count cl100k tokens of a file (or - for stdin).
    Tokens { file: PathBuf },
    /// The composed boot context: identity (boot stub), session (a handoff), task
    /// (preloads for a wake reason), knowledge; each section within its budget.
    Context {
        agent_dir: PathBuf,
        /// A boot context request (JSON: profile, wake_reason, handoff, layers, knowledge,
        /// budgets, unavailable); the flags below override its fields
        #[arg(long)]
        request: Option<PathBuf>,
        /// A handoff message (JSON) for the session section
        #[arg(long)]
        handoff: Option<PathBuf>,
        /// The (verified) wake reason whose task-type preloads fill the task section
        #[arg(long = "wake-reason", value_parser = wake_reason_arg)]
        wake_reason: Option<String>,
        /// generic | paperclip-claude-code | openai-assistants
        #[arg(long)]
        profile: Option<String>,
        /// Section budget, e.g. task=1500 (repeatable)
        #[arg(long = "budget", value_parser = budget_arg)]
        budgets: Vec<(String, u32)>,
        /// Print the Markdown rendering instead of the JSON bundle
        #[arg(long)]
        markdown: bool,
        /// Folders to scan for knowledge packs; what `lid knowledge resolve` selects for
        /// --query (and --pack) fills the knowledge section
        #[arg(long = "packs")]
        pack_roots: Vec<PathBuf>,
        /// The query that activates and ranks knowledge (default: the handoff's task)
        #[arg(long, requires = "pack_roots")]
        query: Option<String>,
        /// Activate this pack explicitly (repeatable)
        #[arg(long = "pack", requires = "pack_roots")]
        packs: Vec<String>,
    },
    /// Write the manifest and its units for other tools: a SKILL.md tree, one AGENTS.md,
    /// or Cursor rules (`.cursor/rules/*.mdc`).
    Export {
        agent_dir: PathBuf,
        /// skill | agents-md | cursor-rules
        #[arg(long)]
        format: String,
        /// Directory to write into (created if missing)
        #[arg(long)]
        out: PathBuf,
    },
    /// Compose a handoff message (JSON) into the boot context's Session Markdown;
    /// `--reverse` reads a Session document back into the handoff JSON.
    ComposeHandoff {
        /// The handoff JSON (or - for stdin); with --reverse, a Session Markdown file
        file: PathBuf,
        /// Write the result here instead of to stdout
        #[arg(short = 'o', long = "out")]
        out: Option<PathBuf>,
        #[arg(long)]
        reverse: bool,
    },
    /// Knowledge packs on local folders (Agent Knowledge runtime): scan for the catalog,
    /// resolve a query into fenced context with a runs/context-*.json record.
    Knowledge {
        #[command(subcommand)]
        command: crate::knowledge_cli::KnowledgeCommand,
    },
    /// The discovery audit (§21.5).
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Run the §21.8 HTTP service on an embedded SQLite database.
    Serve(crate::serve::ServeArgs),
    /// Serve MCP on stdin/stdout for a running lid service (`lid serve` or the worker):
    /// tools recall_instruction and submit_instruction_audit, the boot stub as a prompt
    /// and a resource, the composed boot context as a resource.
    Mcp(crate::mcp::McpArgs),
    /// Manage API keys (stored hashed in the service database).
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// The org key that signs every fact in the service database (§21.4.3).
    OrgKey {
        #[command(subcommand)]
        command: OrgKeyCommand,
    },
    /// Re-certify the published manifests that are due through the coverage gate
    /// (§21.8.3: every manifest, once the ranker changed; S10: a week after a gate
    /// bypass). `lid serve` does this at start-up and hourly. Exit 0 when every manifest
    /// re-certified passed, 2 when one failed (it stays served; publish a new version).
    Recertify {
        #[arg(long, default_value = "lid.db")]
        db: PathBuf,
    },
    /// Co-sign, as a second administrator, a coverage-gate bypass of one exact manifest
    /// (S7), as `POST /v1/agents/{id}/instruction-manifest/cosignatures` does: the
    /// `cosignature_required` refusal of a publish names the version and digest. The
    /// co-signer is the admin whose API key the environment variable `--key-env` holds
    /// (never an argument, which other users of the machine could read).
    Cosign {
        agent: String,
        /// The version the `cosignature_required` refusal names
        #[arg(long)]
        version: String,
        /// The `manifest_sha256` the `cosignature_required` refusal names
        #[arg(long = "manifest-sha256")]
        manifest_sha256: String,
        /// Environment variable holding the co-signing admin's API key
        #[arg(long, default_value = "LID_ADMIN_KEY")]
        key_env: String,
        #[arg(long, default_value = "lid.db")]
        db: PathBuf,
    },
    /// Publish an agent directory (manifest + unit files) into the service database,
    /// through the same code path as `PUT /v1/agents/{id}/instruction-manifest`.
    Publish {
        agent_dir: PathBuf,
        #[arg(long, default_value = "lid.db")]
        db: PathBuf,
        /// Bypass the coverage gate (recorded in provenance, §21.8.3)
        #[arg(long)]
        skip_coverage_gate: bool,
        /// guarantee-load | task-types:NAME | force-position:NAME
        #[arg(long = "approve", value_parser = approval_arg)]
        approvals: Vec<String>,
        /// Registered wake reasons (repeatable; default: lid's built-in enum)
        #[arg(long = "wake-reason", value_parser = wake_reason_arg)]
        wake_reasons: Vec<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// recall@k, hit@k and miss_rate over the rolling window (§21.5.3); alerts when
    /// miss_rate > 0.15 over 100+ events.
    Report {
        /// The agent (with --db), or omit and give --file
        agent: Option<String>,
        #[arg(long, default_value = "lid.db")]
        db: PathBuf,
        /// An audit JSONL file (as `lid recall` writes) instead of the database
        #[arg(long)]
        file: Option<PathBuf>,
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
        k: u32,
        /// The rolling window: records created in the last DAYS days (the database's rows
        /// and a file's records alike)
        #[arg(long, default_value_t = 7)]
        days: u32,
    },
    /// Re-run an audited recall against the agent directory and compare digests: exit 0
    /// when the agent would see exactly the same assembly, 2 when it would not.
    Replay {
        /// The agent directory; with --db, the record is read from the service database
        /// and replayed against the agent's state there as it was when the recall ran (the
        /// manifest version it ran under, the facts written by then): give the agent id here
        agent_dir: PathBuf,
        /// The record's `audevent_…` id or its `audi_…` token
        id: String,
        /// Audit log (JSONL); default AGENT_DIR/.lid/audit.jsonl
        #[arg(long)]
        file: Option<PathBuf>,
        /// The service database (`lid serve --db`) holding the record
        #[arg(long, conflicts_with = "file")]
        db: Option<PathBuf>,
        /// With --db: replay against the agent's current state instead (a drift check: would
        /// the agent see the same text now?)
        #[arg(long, requires = "db")]
        current: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum OrgKeyCommand {
    /// The key's id, public key and file (the database opens with no other key).
    Show {
        #[arg(long, default_value = "lid.db")]
        db: PathBuf,
        /// The key file (default: the database's path with `.org-key` added)
        #[arg(long)]
        org_key: Option<PathBuf>,
    },
    /// Make a new key, re-sign every fact the old one signed with it (one transaction),
    /// and put it in the key file. A `lid serve` running on the database follows it.
    Rotate {
        #[arg(long, default_value = "lid.db")]
        db: PathBuf,
        /// The key file (default: the database's path with `.org-key` added)
        #[arg(long)]
        org_key: Option<PathBuf>,
    },
}

#[derive(Subcommand, Debug)]
pub enum KeysCommand {
    /// Create a key; the secret is printed once.
    Create {
        #[arg(long, default_value = "lid.db")]
        db: PathBuf,
        /// admin | agent
        #[arg(long)]
        role: String,
        /// The agent an agent key is bound to
        #[arg(long)]
        agent: Option<String>,
        /// read | instruction:write | admin (repeatable; default by role; instruction:write for admin keys only, §21.4.4)
        #[arg(long = "cap")]
        caps: Vec<String>,
        #[arg(long)]
        entity_uri: Option<String>,
        #[arg(long)]
        label: Option<String>,
    },
    List {
        #[arg(long, default_value = "lid.db")]
        db: PathBuf,
    },
    Revoke {
        id: String,
        #[arg(long, default_value = "lid.db")]
        db: PathBuf,
    },
}

/// A wake reason on the command line: one word of letters, digits and `_ - . :` (the
/// names a trigger's `wake_reason` claim carries), not an empty or multi-line string that
/// would register nothing a trigger can name.
pub fn wake_reason_arg(s: &str) -> Result<String, String> {
    if !s.is_empty() && s.len() <= 128 && s.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')) {
        Ok(s.to_string())
    } else {
        Err(format!("{s:?} is not a wake reason: one word of letters, digits, `_`, `-`, `.` or `:` (for example issue_assigned), at most 128 bytes"))
    }
}

/// A `--min-score`: a number from 0 to 1 (NaN would otherwise mean no minimum at all).
fn score_arg(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        Ok(_) => Err("a score is a number from 0 to 1".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// The log filter: `LID_LOG` (tracing's `EnvFilter` syntax, e.g. `debug` or
/// `lid_host=trace`), else `info` with the MCP SDK at `warn` (its `info` lines carry each
/// client's whole `initialize` params, client-chosen text of any size: at `info` no
/// request's text is logged); at any level the HTTP client `lid mcp` uses logs no
/// more than `debug`, since its `trace` dumps each request, the API key's header included.
fn log_filter() -> tracing_subscriber::EnvFilter {
    let f = tracing_subscriber::EnvFilter::try_from_env("LID_LOG").unwrap_or_else(|_| "info,rmcp=warn".into());
    if f.max_level_hint().is_some_and(|l| l < tracing::level_filters::LevelFilter::TRACE) {
        return f;
    }
    ["ureq=debug", "ureq_proto=debug"].into_iter().filter_map(|d| d.parse().ok()).fold(f, |f, d| f.add_directive(d))
}

/// Run the CLI; returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    let _ = tracing_subscriber::fmt().with_env_filter(log_filter()).with_writer(std::io::stderr).with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).try_init();
    match run(&cli) {
        Ok(code) => code,
        Err(e) => {
            if cli.json {
                let body = match e.downcast_ref::<EngineFailure>() {
                    Some(f) => {
                        let mut body = json!({"error": f});
                        // where the CLI met it (a probe's file, line and id), when it said
                        let outer: Vec<String> = e.chain().take_while(|c| c.downcast_ref::<EngineFailure>().is_none()).map(|c| c.to_string()).collect();
                        if !outer.is_empty() {
                            body["error"]["context"] = json!(outer.join(": "));
                        }
                        body
                    }
                    None => cli_failure(&e).body(),
                };
                outln!("{body}");
            } else if e.downcast_ref::<EngineFailure>().is_some() {
                eprintln!("error: {e:#}");
            } else {
                let f = cli_failure(&e);
                eprintln!("error: {}: {}", f.code, f.message);
                // what the message refers to (a co-signature's digest, the units that
                // failed the gate) is in the details, which text mode shows too
                if !f.details.is_null() {
                    eprintln!("details: {}", serde_json::to_string_pretty(&f.details).unwrap_or_default());
                }
            }
            1
        }
    }
}

/// A command-line usage error (an unknown flag, a missing argument, a value that does
/// not parse): exit 1 like every other bad input, with `--json` as a JSON error
/// (`usage_error`), so a script tells it apart from a failed gate (`lid coverage` exits 2).
/// `--help` and `--version` print as clap prints them, with status 0.
fn usage_error(e: &clap::Error) -> i32 {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return 0;
    }
    if std::env::args().skip(1).take_while(|a| a != "--").any(|a| a == "--json") {
        let message = e.render().to_string();
        outln!("{}", lid_shared::error_body(400, "usage_error", message.trim_end(), &Value::Null));
    } else {
        // as every other error in text mode: `error: {code}: {message}`
        let message = e.render().to_string();
        eprint!("{}", message.replacen("error: ", "error: usage_error: ", 1));
    }
    1
}

/// The error of a command that failed in the CLI itself rather than in the engine: the
/// service's own error when the command ran the service's code path (`lid publish`,
/// `lid keys`: its code, status and details), a component that trapped or ran out of
/// time (`engine_failed`, `engine_interrupted`, without the wasm backtrace), else
/// `cli_error` (a file that cannot be read or written, a directory in the way).
fn cli_failure(e: &anyhow::Error) -> crate::apierror::ApiError {
    use crate::apierror::ApiError;
    if let Some(api) = e.chain().find_map(|c| c.downcast_ref::<ApiError>()) {
        return api.clone();
    }
    if let Some(r) = e.chain().find_map(|c| c.downcast_ref::<lid_shared::Refusal>()) {
        return r.clone().into();
    }
    if e.chain().any(|c| c.is::<crate::engine::Interrupted>() || c.is::<wasmtime::Trap>()) {
        return ApiError::engine_ref(e);
    }
    if let Some(crate::db::DbError::OrgKeyMismatch(m)) = e.chain().find_map(|c| c.downcast_ref::<crate::db::DbError>()) {
        return lid_shared::attest::org_key_mismatch(m.clone()).into();
    }
    ApiError::new(400, "cli_error", format!("{e:#}"))
}

/// The boot context's `unavailable` sources for knowledge diagnostics that mean a pack
/// asked for, or found, could not be served; a name collision, a lower-trust shadow or a
/// pack the caller disabled is not one.
fn lacking_knowledge(diagnostics: &Value) -> Vec<Value> {
    const LACKING: [&str; 6] = ["knowledge_pack_not_found", "knowledge_not_ready", "knowledge_front_matter_invalid", "knowledge_field_missing", "knowledge_pack_empty", "knowledge_path_invalid"];
    diagnostics
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| d["code"].as_str().is_some_and(|c| LACKING.contains(&c)))
        .map(|d| json!({"source": format!("knowledge pack {}", d["path"].as_str().unwrap_or_default()), "reason": format!("{}: {}", d["code"].as_str().unwrap_or_default(), d["message"].as_str().unwrap_or_default())}))
        .collect()
}

/// `cli_error` when `out` holds files of the kinds `files` writes that `what` would not
/// write ([`crate::write_tree::foreign_files`]); `why` says what refusing them keeps true.
fn refuse_leftovers(out: &Path, files: &[(PathBuf, String)], what: &str, why: &str) -> Result<()> {
    let foreign = crate::write_tree::foreign_files(out, files);
    if foreign.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = foreign.iter().map(|p| p.display().to_string()).collect();
    bail!("{} already holds files {what} would not write ({}); choose an empty --out, or remove them, {why} (nothing was written)", out.display(), names.join(", "))
}

/// The service database a read (or a revocation) names: it must be there already. Opening
/// a path that is not would create an empty database and report nothing in it, which
/// reads as "no keys" or "no events" when the path is only mistyped, or the command was
/// run from another directory than `lid serve` (whose `--db` defaults to `lid.db` there).
fn existing_db(path: &Path) -> Result<Arc<crate::db::Db>> {
    existing_db_with_key(path, None)
}

/// [`existing_db`] with its org key at `key` (default: beside it).
fn existing_db_with_key(path: &Path, key: Option<&Path>) -> Result<Arc<crate::db::Db>> {
    if !path.is_file() {
        bail!("no database at {}: pass --db with the file `lid serve --db` uses (default: lid.db in the directory it was started from)", path.display());
    }
    Ok(crate::db::Db::open_with_key(path, key)?)
}

fn runtime() -> Result<Runtime> {
    Runtime::new(RuntimeOptions::default()).context("starting the lid engine component")
}

fn storage_of(a: &AgentDir, audit: Arc<dyn AuditLog>) -> Storage {
    Storage { facts: a.facts.clone(), audit }
}

fn empty_storage() -> Storage {
    Storage { facts: Arc::new(MemFacts::default()), audit: Arc::new(NoAudit) }
}

fn engine_ok(r: Result<String, EngineFailure>) -> Result<Value> {
    let s = r.map_err(anyhow::Error::new)?;
    serde_json::from_str(&s).context("engine returned invalid JSON")
}

/// The engine's refusal of a list read from a file, one item a line: an item it names by
/// its index (`` `[3].k` … ``) is named by the file and line it came from instead (`lines`
/// holds each item's 1-based line).
fn at_line(mut f: EngineFailure, file: &Path, lines: &[usize]) -> EngineFailure {
    let found = f.message.find("`[").and_then(|at| {
        let rest = &f.message[at + 2..];
        let end = rest.find(']')?;
        Some((at, end, rest[..end].parse::<usize>().ok()?))
    });
    if let Some((at, end, line)) = found.and_then(|(at, end, i)| Some((at, end, *lines.get(i)?))) {
        // `[3].k` becomes `k`, and the message starts with where it is
        let field = f.message[at + 2 + end + 1..].trim_start_matches('.').to_string();
        let head = f.message[..at].trim_start_matches("invalid request: ").to_string();
        f.message = format!("{}:{line}: {head}`{field}", file.display());
    }
    f
}

/// The JSON in a file the user gave (`what` names it, with a line of it if need be):
/// `invalid_json` with the line and column when it is not JSON, as for a request body.
pub fn json_of_file(what: &str, text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| crate::apierror::ApiError::new(400, "invalid_json", format!("{what} is not JSON: {e}")).into())
}

/// A JSON document from a file with no object giving a field twice, refused as the
/// service refuses such a body (`invalid_request`, never resolved to the last copy).
fn no_field_twice(what: &str, text: &str) -> Result<()> {
    match lid_shared::json::object(text) {
        Err(r) if r.code == "invalid_request" => Err(crate::apierror::ApiError::bad_request("invalid_request", format!("{what}: {}", r.message)).into()),
        _ => Ok(()),
    }
}

/// A file's text, or stdin's for `-`.
fn read_input(file: &Path) -> Result<String> {
    let mut text = String::new();
    if file.as_os_str() == "-" {
        std::io::stdin().read_to_string(&mut text).context("cannot read stdin")?;
    } else {
        text = agent_dir::read_text(file)?;
    }
    Ok(text)
}

/// Write the CLI's output to stdout. A reader that went away (`lid … | head`: a broken
/// pipe) ends the command with status 0, as it would a C tool killed by `SIGPIPE`; any
/// other write failure is reported on stderr with status 1. Never a panic.
pub(crate) fn emit(args: std::fmt::Arguments<'_>, newline: bool) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let written = stdout.write_fmt(args).and_then(|()| if newline { stdout.write_all(b"\n") } else { Ok(()) });
    if let Err(e) = written {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: writing to stdout: {e}");
        std::process::exit(1);
    }
}

fn print_json(v: &Value) {
    outln!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
}

/// `lid validate AGENT_DIR`: the boot stub of every profile rendered from the directory's
/// units (the body differs by profile), as publishing renders them; a refusal
/// (`boot_stub_too_large`, …) is added to `report`'s errors, once per code.
fn stub_problems(rt: &Runtime, dir: &Path, manifest_json: &str, report: &mut Value, publish: bool) -> Result<()> {
    let a = agent_dir::load(dir)?;
    let st = storage_of(&a, Arc::new(NoAudit));
    // `--publish`: the admission lint every publish runs on the units' text (README
    // "Admission lint"), its findings as the publish's `unit_admission_rejected`
    let mut lint_errors = Vec::new();
    if publish {
        let m: Value = serde_json::from_str(manifest_json)?;
        let canon = agent_dir::canonical_root(&a.root)?;
        let units: Vec<Value> = m["entries"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["fact_uri"].as_str().is_some_and(|u| !u.is_empty()))
            .filter_map(|e| e["name"].as_str())
            .filter_map(|n| agent_dir::unit_file(&a.root, &canon, n).ok().map(|c| json!({"name": n, "content": c, "interpret_as": "instruction"})))
            .collect();
        let lint = engine_ok(rt.lint_units(&Value::Array(units).to_string())?)?;
        for f in lint["errors"].as_array().into_iter().flatten() {
            lint_errors.push(json!({"code": "unit_admission_rejected", "entry": f["unit"], "field": "content", "message": format!("{} at line {}: {}", f["code"].as_str().unwrap_or_default(), f["line"], f["message"].as_str().unwrap_or_default())}));
        }
        for w in lint["warnings"].as_array().into_iter().flatten() {
            if let Some(list) = report.get_mut("warnings").and_then(Value::as_array_mut) {
                list.push(json!({"code": w["code"], "entry": w["unit"], "field": "content", "message": w["message"]}));
            }
        }
    }
    // a unit whose file cannot be read would be refused by `lid publish` (as an entry
    // naming a unit that is not stored), and dropped from every stub and recall
    let mut errors: Vec<Value> = a.missing.iter().map(|(name, field, why)| json!({"code": "manifest_entry_invalid", "entry": name, "field": field, "message": format!("the unit's file cannot be read: {why}")})).collect();
    errors.extend(lint_errors);
    // one error a code, naming every profile that has it (their frontmatter differs in
    // length, so one profile's stub may fit where another's does not)
    for profile in lid_shared::heartbeat::PROFILES {
        if let Err(e) = rt.render_stub(&st, manifest_json, Some(profile))? {
            let said = format!("boot stub ({profile}): {}", e.message);
            match errors.iter_mut().find(|x| x["code"] == e.code.as_str() && x["entry"].is_null()) {
                Some(x) => x["message"] = json!(format!("{}; {said}", x["message"].as_str().unwrap_or_default())),
                None => errors.push(json!({"code": e.code, "entry": null, "field": null, "message": said})),
            }
        }
    }
    if !errors.is_empty() {
        report["ok"] = json!(false);
        match report.get_mut("errors").and_then(Value::as_array_mut) {
            Some(list) => list.extend(errors),
            None => report["errors"] = Value::Array(errors),
        }
    }
    Ok(())
}

fn load_agent(p: &Path) -> Result<AgentDir> {
    let a = agent_dir::load(p)?;
    for (name, _, why) in &a.missing {
        eprintln!("warning: unit {name:?}: {why}");
    }
    Ok(a)
}

/// An `--approve` value, checked by [`approvals_json`] when the command line is read (a
/// `usage_error`).
fn approval_arg(s: &str) -> Result<String, String> {
    approvals_json(&[s.to_string()]).map(|_| s.to_string()).map_err(|e| e.to_string())
}

/// A `--budget SECTION=TOKENS` value, checked when the command line is read.
fn budget_arg(s: &str) -> Result<(String, u32), String> {
    s.split_once('=').and_then(|(sec, n)| n.parse::<u32>().ok().map(|n| (sec.to_string(), n))).ok_or_else(|| "use SECTION=TOKENS, e.g. task=1500".into())
}

pub(crate) fn approvals_json(approvals: &[String]) -> Result<Value> {
    let mut a = json!({"guarantee_load": false, "task_types": [], "force_position": []});
    for ap in approvals {
        match ap.split_once(':') {
            None if ap == "guarantee-load" => a["guarantee_load"] = json!(true),
            Some(("task-types", n)) if !n.is_empty() => a["task_types"].as_array_mut().map(|v| v.push(json!(n))).unwrap_or(()),
            Some(("force-position", n)) if !n.is_empty() => a["force_position"].as_array_mut().map(|v| v.push(json!(n))).unwrap_or(()),
            _ => bail!("use guarantee-load, task-types:NAME or force-position:NAME, not {ap:?}"),
        }
    }
    Ok(a)
}

fn entropy() -> String {
    // 10 bytes for the audit event id, 10 for its token (`lid_core::audit::Ids`)
    let mut b = [0u8; 20];
    let _ = getrandom::fill(&mut b);
    crate::engine::hex(&b)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

fn run(cli: &Cli) -> Result<i32> {
    match &cli.command {
        Command::Validate { manifest, wake_reasons, approvals, publish } => {
            let path = if manifest.is_dir() { manifest.join("manifest.json") } else { manifest.clone() };
            let json = agent_dir::read_text(&path)?;
            let mut opts = json!({});
            if !wake_reasons.is_empty() {
                opts["wake_reasons"] = json!(wake_reasons);
            }
            if *publish || !approvals.is_empty() {
                opts["approvals"] = approvals_json(approvals)?;
            }
            let rt = runtime()?;
            let mut report: Value = serde_json::from_str(&rt.validate_manifest(&empty_storage(), &json, &opts.to_string())?)?;
            if (manifest.is_dir() || *publish) && report["ok"] == true {
                // An agent directory has its units, so its boot stub can be rendered: one
                // over the §21.1.2 body limit would be refused by `stub`, `preload` and
                // `publish`, so it is refused here too.
                stub_problems(&rt, manifest, &json, &mut report, *publish)?;
            }
            let ok = report["ok"].as_bool().unwrap_or(false);
            if cli.json {
                print_json(&report);
            } else {
                let at_least = if report["token_count_at_least"] == true { "at least " } else { "" };
                outln!("{}: {} ({at_least}{} / {} tokens)", path.display(), if ok { "valid" } else { "INVALID" }, report["token_count"], report["token_cap"]);
                for (label, key) in [("error", "errors"), ("warning", "warnings"), ("needs approval", "approvals_needed")] {
                    for p in report[key].as_array().into_iter().flatten() {
                        let at = match (p["entry"].as_str(), p["field"].as_str()) {
                            (Some(e), Some(f)) => format!(" [{e}.{f}]"),
                            (Some(e), None) => format!(" [{e}]"),
                            (None, Some(f)) => format!(" [{f}]"),
                            _ => String::new(),
                        };
                        outln!("  {label}: {}{at}: {}", p["code"].as_str().unwrap_or(""), p["message"].as_str().unwrap_or(""));
                    }
                }
            }
            Ok(if ok { 0 } else { 1 })
        }
        Command::Stub { agent_dir, profile } => {
            let a = load_agent(agent_dir)?;
            let rt = runtime()?;
            let stub = engine_ok(rt.render_stub(&storage_of(&a, Arc::new(NoAudit)), &a.manifest_json, profile.as_deref())?)?;
            if cli.json {
                print_json(&stub);
            } else {
                out!("{}", stub["text"].as_str().unwrap_or(""));
                for w in stub["warnings"].as_array().into_iter().flatten() {
                    eprintln!("warning: {}", w.as_str().unwrap_or(""));
                }
                eprintln!("body: {} tokens (limit 500), whole stub: {} tokens", stub["body_tokens"], stub["total_tokens"]);
            }
            Ok(0)
        }
        Command::Recall { agent_dir, intent, max_chunks, token_budget, hints, wake_reason, min_score, audit } => {
            let a = load_agent(agent_dir)?;
            let audit_path = audit.clone().unwrap_or_else(|| a.root.join(".lid").join("audit.jsonl"));
            let rt = runtime()?;
            let req = json!({"intent": intent, "max_chunks": max_chunks, "token_budget": token_budget, "manifest_hint": hints, "wake_reason": wake_reason, "min_score": min_score});
            let now = now_ms();
            let ctx = json!({"now_ms": now, "entropy": entropy(), "heartbeat_id": format!("cli-{now}"), "session_start_ms": now});
            let resp = engine_ok(rt.recall(&storage_of(&a, Arc::new(JsonlAudit::new(audit_path))), &a.manifest_json, &req.to_string(), &ctx.to_string())?)?;
            if cli.json {
                print_json(&resp);
            } else {
                for c in resp["chunks"].as_array().into_iter().flatten() {
                    outln!(
                        "=== {} ({}, score {:.3}, {} tokens, {}) ===",
                        c["name"].as_str().unwrap_or(""),
                        c["version"].as_str().unwrap_or(""),
                        c["score"].as_f64().unwrap_or(0.0),
                        c["tokens"],
                        c["selected_by"].as_str().unwrap_or("")
                    );
                    outln!("{}\n", c["content"].as_str().unwrap_or("").trim_end());
                }
                outln!("total_tokens: {}  truncated: {}  audit_token: {}", resp["total_tokens"], resp["truncated"], resp["audit_token"].as_str().unwrap_or(""));
                for (k, label) in [("missed_hints", "missed hint"), ("omitted", "omitted"), ("warnings", "warning")] {
                    for v in resp[k].as_array().into_iter().flatten() {
                        outln!("{label}: {}", if v.is_string() { v.as_str().unwrap_or("").to_string() } else { v.to_string() });
                    }
                }
            }
            Ok(0)
        }
        Command::Preload { agent_dir, wake_reason } => {
            let a = load_agent(agent_dir)?;
            let rt = runtime()?;
            let st = storage_of(&a, Arc::new(NoAudit));
            let stub = engine_ok(rt.render_stub(&st, &a.manifest_json, None)?)?;
            let stub_tokens = stub["total_tokens"].as_u64().unwrap_or(0) as u32;
            let now = now_ms();
            let ctx = json!({"now_ms": now, "entropy": entropy(), "heartbeat_id": format!("cli-{now}"), "session_start_ms": now});
            let st = storage_of(&a, Arc::new(JsonlAudit::new(a.root.join(".lid").join("audit.jsonl"))));
            let p = engine_ok(rt.preload(&st, &a.manifest_json, wake_reason, stub_tokens, &ctx.to_string())?)?;
            if cli.json {
                print_json(&p);
            } else {
                let units = p["units"].as_array().cloned().unwrap_or_default();
                outln!("wake reason {wake_reason}: {} unit(s), {} tokens (+ stub {})", units.len(), p["total_tokens"], p["stub_tokens"]);
                for u in &units {
                    outln!("=== {} ({}, {} tokens, {}) ===\n{}\n", u["name"].as_str().unwrap_or(""), u["version"].as_str().unwrap_or(""), u["tokens"], u["source"].as_str().unwrap_or(""), u["content"].as_str().unwrap_or("").trim_end());
                }
                for w in p["warnings"].as_array().into_iter().flatten() {
                    outln!("warning: {}: {}", w["code"].as_str().unwrap_or(""), w["message"].as_str().unwrap_or(""));
                }
            }
            Ok(0)
        }
        Command::Coverage { agent_dir, k } => {
            let a = load_agent(agent_dir)?;
            let rt = runtime()?;
            let rep = engine_ok(rt.coverage(&storage_of(&a, Arc::new(NoAudit)), &a.manifest_json, &json!({"k": k}).to_string())?)?;
            let passed = rep["passed"].as_bool().unwrap_or(false);
            if cli.json {
                print_json(&rep);
            } else {
                outln!("coverage gate for {}: {}", a.agent_id, if passed { "PASSED" } else { "FAILED" });
                for u in rep["units"].as_array().into_iter().flatten() {
                    let mark = if u["passed"].as_bool().unwrap_or(false) { "ok  " } else { "WEAK" };
                    outln!("  {mark} {:<28} coverage {:>5.1}%  hit@10 {:>5.1}%  ({} paraphrases)", u["unit"].as_str().unwrap_or(""), u["coverage_pct"].as_f64().unwrap_or(0.0) * 100.0, u["hit_at_10"].as_f64().unwrap_or(0.0) * 100.0, u["paraphrases"]);
                    for f in u["failed"].as_array().into_iter().flatten() {
                        outln!("         missed: {:?} (rank {}; top: {})", f["paraphrase"].as_str().unwrap_or(""), f["rank"], f["top"].as_array().map(|t| t.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")).unwrap_or_default());
                    }
                }
            }
            Ok(if passed { 0 } else { 2 })
        }
        Command::MigrateInstructions { file, deployment, agent, out, role, split_regex } => {
            let md = agent_dir::read_text(file)?;
            let opts = json!({"deployment": deployment, "agent": agent, "agent_role": role.clone().unwrap_or_default(), "split_regex": split_regex});
            let rt = runtime()?;
            let mut m = engine_ok(rt.migrate(&empty_storage(), &md, &opts.to_string())?)?;
            // what `lid validate` would say of the draft as written (hidden characters from
            // the headings, a role over several lines, …): said now, for the review
            let draft: Value = serde_json::from_str(&rt.validate_manifest(&empty_storage(), &m["manifest"].to_string(), "{}")?)?;
            m["draft_problems"] = draft["errors"].clone();
            let units_dir = out.join("units");
            // The units and the draft manifest, written together or not at all, in a
            // directory of their own: unit files this migration would not write (an
            // earlier draft's, or an agent's) would be mixed into it.
            let mut files: Vec<(PathBuf, String)> = m["units"].as_array().into_iter().flatten().map(|u| (Path::new("units").join(format!("{}.md", u["name"].as_str().unwrap_or("unit"))), format!("{}\n", u["content"].as_str().unwrap_or("")))).collect();
            files.push(("manifest.draft.json".into(), serde_json::to_string_pretty(&m["manifest"])? + "\n"));
            refuse_leftovers(out, &files, "this migration", "so the draft holds only its own units")?;
            crate::write_tree::write_files(out, &files)?;
            let manifest_path = out.join("manifest.draft.json");
            if cli.json {
                print_json(&m);
            } else {
                outln!("{} unit(s) written to {}", m["units"].as_array().map(Vec::len).unwrap_or(0), units_dir.display());
                for u in m["units"].as_array().into_iter().flatten() {
                    outln!("  {:<32} {:>5} tokens  {}", u["name"].as_str().unwrap_or(""), u["token_estimate"], u["description"].as_str().unwrap_or(""));
                }
                for w in m["warnings"].as_array().into_iter().flatten() {
                    outln!("warning: {}", w.as_str().unwrap_or(""));
                }
                for p in m["draft_problems"].as_array().into_iter().flatten() {
                    let at = p["entry"].as_str().map(|e| format!(" [{e}]")).unwrap_or_default();
                    outln!("warning: the draft does not validate yet: {}{at}: {}", p["code"].as_str().unwrap_or(""), p["message"].as_str().unwrap_or(""));
                }
                outln!("draft manifest: {} (review it, rename to manifest.json, then validate; nothing was published)", manifest_path.display());
            }
            Ok(0)
        }
        Command::Eval { agents, packs, probes, misses, rankings } => match (agents, packs) {
            (Some(dir), _) => eval(cli, Corpora::Agents(dir), probes, *misses, rankings.as_deref()),
            (None, Some(dir)) => eval(cli, Corpora::Packs(dir), probes, *misses, rankings.as_deref()),
            (None, None) => bail!("lid eval needs --agents DIR or --packs DIR"),
        },
        Command::Knowledge { command } => crate::knowledge_cli::run(&runtime()?, cli.json, command),
        Command::Context { agent_dir, request, handoff, wake_reason, profile, budgets, markdown, pack_roots, query, packs } => {
            let a = load_agent(agent_dir)?;
            let mut req: Value = match request {
                Some(f) => {
                    let text = read_input(f)?;
                    let v = json_of_file(&f.display().to_string(), &text)?;
                    no_field_twice(&format!("request {}", f.display()), &text)?;
                    v
                }
                None => json!({}),
            };
            if !req.is_object() {
                anyhow::bail!("the boot context request must be a JSON object");
            }
            if let Some(h) = handoff {
                let text = read_input(h)?;
                req["handoff"] = json_of_file(&h.display().to_string(), &text)?;
                no_field_twice(&format!("handoff {}", h.display()), &text)?;
            }
            if let Some(w) = wake_reason {
                req["wake_reason"] = json!(w);
            }
            if let Some(p) = profile {
                req["profile"] = json!(p);
            }
            if !budgets.is_empty() {
                if !(req["budgets"].is_object() || req["budgets"].is_null()) {
                    anyhow::bail!("the request's `budgets` is not an object: with --budget, give it as one (`\"budgets\": {{\"task\": 1500}}`) or leave it out");
                }
                let mut seen = std::collections::BTreeSet::new();
                for (section, n) in budgets {
                    if !seen.insert(section.clone()) {
                        anyhow::bail!("--budget {section}=… given twice: give each section once");
                    }
                    req["budgets"][section] = json!(n);
                }
            }
            let rt = runtime()?;
            if !pack_roots.is_empty() {
                let query = query.clone().unwrap_or_else(|| req["handoff"]["task"].as_str().unwrap_or_default().to_string());
                // Every relevant file is selected; the knowledge section's budget then keeps
                // what fits, as the resolver would, and lists the rest in its `dropped`
                // (`section_budget`) instead of leaving it unsaid.
                let args = crate::knowledge_cli::ResolveArgs { roots: pack_roots, query: &query, packs, disabled: &[], implicit: true, budget: u32::MAX, max_depth: crate::pack_dir::SCAN_MAX_DEPTH };
                let sel = crate::knowledge_cli::resolve(&rt, &args)?;
                // What the scan or the activation could not use (a pack that is not there,
                // does not parse, or is not ready) is a source the bundle lacks: named in
                // its warnings, and the bundle degraded.
                let lacking = lacking_knowledge(&sel["record"]["diagnostics"]);
                if !lacking.is_empty() {
                    match req["unavailable"].as_array_mut() {
                        Some(u) => u.extend(lacking),
                        None => req["unavailable"] = Value::Array(lacking),
                    }
                }
                if let Some(k) = req["knowledge"].as_array_mut() {
                    k.extend(sel["items"].as_array().cloned().unwrap_or_default());
                } else {
                    req["knowledge"] = sel["items"].clone();
                }
            }
            let now = now_ms();
            let ctx = json!({"now_ms": now, "entropy": entropy(), "heartbeat_id": format!("cli-{now}"), "session_start_ms": now});
            let st = storage_of(&a, Arc::new(JsonlAudit::new(a.root.join(".lid").join("audit.jsonl"))));
            let out = engine_ok(rt.compose_context(&st, &a.manifest_json, &req.to_string(), &ctx.to_string())?)?;
            if *markdown {
                out!("{}", out["markdown"].as_str().unwrap_or_default());
            } else {
                outln!("{}", serde_json::to_string_pretty(&out["bundle"])?);
            }
            // (on stderr: the bundle the same inputs give stays byte for byte the same)
            if let Some(token) = out["audit_token"].as_str().filter(|t| !t.is_empty()) {
                eprintln!("task preloads audited in {}: audit token {token}", a.root.join(".lid").join("audit.jsonl").display());
            }
            Ok(0)
        }
        Command::Export { agent_dir, format, out } => {
            let a = load_agent(agent_dir)?;
            let rt = runtime()?;
            let x = engine_ok(rt.export(&storage_of(&a, Arc::new(NoAudit)), &a.manifest_json, format)?)?;
            let files = x["files"].as_array().cloned().unwrap_or_default();
            // Every file or none (a path outside --out is refused before anything is written).
            let tree: Vec<(PathBuf, String)> = files.iter().map(|f| (PathBuf::from(f["path"].as_str().unwrap_or("")), f["content"].as_str().unwrap_or("").to_string())).collect();
            refuse_leftovers(out, &tree, "this export", "so no unit the manifest no longer has stays in force")?;
            crate::write_tree::write_files(out, &tree)?;
            if cli.json {
                print_json(&json!({"format": x["format"], "files": files.iter().map(|f| &f["path"]).collect::<Vec<_>>(), "unavailable": x["unavailable"]}));
            } else {
                for f in &files {
                    outln!("{}", out.join(f["path"].as_str().unwrap_or("")).display());
                }
                for u in x["unavailable"].as_array().into_iter().flatten() {
                    outln!("warning: unit {} has no readable instruction content; not exported", u);
                }
            }
            Ok(0)
        }
        Command::ComposeHandoff { file, out, reverse } => {
            let text = read_input(file)?;
            let rt = runtime()?;
            let result = if *reverse {
                serde_json::to_string_pretty(&engine_ok(rt.session_to_handoff(&text)?)?)? + "\n"
            } else {
                // not JSON: said with the file, line and column, as `lid context --handoff` does
                no_field_twice(&format!("handoff {}", file.display()), &text)?;
                let handoff = json_of_file(&format!("handoff {}", file.display()), &text)?;
                // compact, as the service's handoff route passes it on: the 64 KiB limit is
                // the message's, however the file is indented
                let v = engine_ok(rt.compose_handoff(&handoff.to_string())?)?;
                if cli.json {
                    serde_json::to_string_pretty(&v)? + "\n"
                } else {
                    v["session_markdown"].as_str().unwrap_or_default().to_string()
                }
            };
            match out {
                Some(path) => std::fs::write(path, result).with_context(|| format!("cannot write {}", path.display()))?,
                None => out!("{result}"),
            }
            Ok(0)
        }
        Command::Tokens { file } => {
            // every byte counted, a byte-order mark too, as tiktoken counts it (other
            // commands read past one: their JSON and Markdown begin after it)
            let text = if file.as_os_str() == "-" { read_input(file)? } else { std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))? };
            let rt = runtime()?;
            let n = rt.count_tokens(&empty_storage(), &text)?;
            if cli.json {
                outln!("{}", json!({"tokens": n, "bytes": text.len()}));
            } else {
                outln!("{n}");
            }
            Ok(0)
        }
        Command::Audit { command: AuditCommand::Replay { agent_dir, id, file, db, current } } => {
            // The record, and the agent's state to replay it against (with the host context
            // the service's recalls get: the §21.5.5 soft lift).
            let (rec, storage, manifest_json, context) = match db {
                Some(db) => {
                    let db = existing_db(db)?;
                    let agent = agent_dir.to_string_lossy().to_string();
                    let rec = db.audit_record(id)?.with_context(|| format!("no audit record {id:?} in the database"))?;
                    if rec["agent_id"].as_str() != Some(agent.as_str()) {
                        anyhow::bail!("audit record {id:?} belongs to agent {}, not {agent:?}", rec["agent_id"]);
                    }
                    let s = if *current {
                        db.snapshot(&agent)?.with_context(|| format!("agent {agent:?} has no manifest in the database"))?
                    } else {
                        // §21.5.3: the state at the recall, which every kept version allows
                        let at = rec["created_at"].as_i64().unwrap_or_default();
                        let version = rec["manifest_version"].as_str().filter(|v| !v.is_empty());
                        Arc::new(db.snapshot_as_of(&agent, version, at, rec["corpus_key"].as_str().unwrap_or_default())?.with_context(|| match version {
                            Some(v) => format!("agent {agent:?} has no manifest {v:?} in the database (the one record {id:?} ran under); pass --current to replay against the current state"),
                            None => format!("agent {agent:?} had no manifest when record {id:?} was written; pass --current to replay against the current state"),
                        })?)
                    };
                    let st = Storage { facts: s.facts.clone(), audit: Arc::new(NoAudit) };
                    (rec, st, s.manifest_json.clone(), json!({"lift_units": s.lift_units}).to_string())
                }
                None => {
                    let a = load_agent(agent_dir)?;
                    let path = file.clone().unwrap_or_else(|| a.root.join(".lid").join("audit.jsonl"));
                    let text = agent_dir::read_text(&path)?;
                    let mut broken = Vec::new();
                    let rec: Value = text
                        .lines()
                        .enumerate()
                        .filter_map(|(i, l)| serde_json::from_str::<Value>(l).map_err(|_| broken.push(i + 1)).ok())
                        .find(|r| r["id"].as_str() == Some(id.as_str()) || r["audit_token"].as_str() == Some(id.as_str()))
                        .with_context(|| {
                            let lines: Vec<String> = broken.iter().take(5).map(usize::to_string).collect();
                            let unread = if broken.is_empty() { String::new() } else { format!(" ({} line(s) there are not JSON records and were not read: line {})", broken.len(), lines.join(", ")) };
                            format!("no audit record {id:?} in {}{unread}", path.display())
                        })?;
                    (rec, storage_of(&a, Arc::new(NoAudit)), a.manifest_json.clone(), "{}".to_string())
                }
            };
            let (Some(req), Some(want)) = (rec.get("request").filter(|r| r.is_object()), rec["assembly_sha256"].as_str().filter(|s| !s.is_empty())) else {
                anyhow::bail!("record {id:?} has no request and assembly digest to replay (preload records and records written before content-addressed recall cannot be replayed)");
            };
            let rt = runtime()?;
            // A replay is not a new recall: nothing is appended to the audit.
            let resp = engine_ok(rt.recall(&storage, &manifest_json, &req.to_string(), &context)?)?;
            let got = resp["assembly_sha256"].as_str().unwrap_or_default();
            let now: Vec<(String, String)> = resp["chunks"].as_array().into_iter().flatten().map(|c| (c["name"].as_str().unwrap_or("").to_string(), c["sha256"].as_str().unwrap_or("").to_string())).collect();
            let then: Vec<(String, String)> = rec["loaded_chunks"].as_array().into_iter().flatten().zip(rec["chunk_sha256"].as_array().into_iter().flatten()).map(|(n, h)| (n.as_str().unwrap_or("").to_string(), h.as_str().unwrap_or("").to_string())).collect();
            let same = got == want;
            if cli.json {
                print_json(&json!({"id": rec["id"], "same": same, "recorded_sha256": want, "replayed_sha256": got, "recorded": then, "replayed": now}));
            } else {
                outln!("{} {}: recorded {want}, replayed {got}", if same { "same" } else { "DIFFERENT" }, rec["id"].as_str().unwrap_or(""));
                if !same {
                    for (n, h) in &then {
                        if !now.contains(&(n.clone(), h.clone())) {
                            outln!("  recorded only: {n} {h}");
                        }
                    }
                    for (n, h) in &now {
                        if !then.contains(&(n.clone(), h.clone())) {
                            outln!("  replayed only: {n} {h}");
                        }
                    }
                }
            }
            Ok(if same { 0 } else { 2 })
        }
        Command::Audit { command: AuditCommand::Report { agent, db, file, k, days } } => {
            let since = crate::db::now_ms() - *days as i64 * 24 * 3600 * 1000;
            // the records, and for a file each one's line
            let mut truncated = false;
            let (recs, lines): (Vec<Value>, Vec<usize>) = match (file, agent) {
                (Some(file), _) => {
                    let text = agent_dir::read_text(file)?;
                    let mut recs = Vec::new();
                    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                        let rec = serde_json::from_str::<Value>(line).with_context(|| format!("{}:{}: not a JSON audit record", file.display(), i + 1))?;
                        // the window, as the database's rows are chosen (`created_at`, Unix ms)
                        if rec["created_at"].as_i64().is_none_or(|t| t >= since) {
                            recs.push((rec, i + 1));
                        }
                    }
                    recs.into_iter().unzip()
                }
                (None, Some(agent)) => {
                    lid_shared::ids::check_agent_id(agent).map_err(|r| anyhow::Error::new(crate::apierror::ApiError::from(r)))?;
                    let db = existing_db(db)?;
                    let (rows, cut) = db.audit_rows(agent, since)?;
                    truncated = cut;
                    if truncated {
                        eprintln!("note: the figures are over the agent's newest {} audit records of the window (older ones were left out)", lid_shared::audit::WINDOW_ROWS_MAX);
                    }
                    (rows.into_iter().map(|r| serde_json::to_value(r).unwrap_or(Value::Null)).collect(), vec![])
                }
                (None, None) => bail!("name an AGENT (with --db) or give --file AUDIT.jsonl"),
            };
            let rt = runtime()?;
            let m = rt.audit_metrics(&empty_storage(), &Value::Array(recs).to_string(), *k)?;
            let m = match file {
                Some(file) => m.map_err(|f| at_line(f, file, &lines)),
                None => m,
            };
            let mut m = engine_ok(m)?;
            if cli.json {
                if agent.is_some() && file.is_none() {
                    m["truncated"] = json!(truncated);
                }
                print_json(&m);
            } else {
                let f = |v: &Value| v.as_f64().map(|x| format!("{x:.3}")).unwrap_or_else(|| "n/a".into());
                outln!(
                    "{} event(s), {} closed; recall@{k} {}  hit@{k} {}  miss_rate {}",
                    m["events"], m["closed_events"], f(&m["recall_at_k"]), f(&m["hit_at_k"]), f(&m["miss_rate"])
                );
                if m["supervisor_events"].as_u64().is_some_and(|n| n > 0) {
                    outln!("({} more event(s) made with a supervisor's key, not counted: not the agent's sessions)", m["supervisor_events"]);
                }
                if m["alert"].as_bool().unwrap_or(false) {
                    outln!("ALERT: miss_rate above 0.15 over 100+ events (§21.5.3): review manifest descriptions and load_triggers");
                }
            }
            Ok(0)
        }
        Command::Serve(args) => crate::serve::run(args, cli.json),
        Command::Mcp(args) => crate::mcp::run_stdio(args),
        Command::Keys { command } => keys(cli, command),
        Command::OrgKey { command } => org_key(cli, command),
        Command::Recertify { db } => {
            let svc = crate::serve::service(existing_db(db)?, Vec::new(), None)?;
            let done = svc.recertify(crate::db::now_ms()).map_err(anyhow::Error::new)?;
            let passed = done.iter().all(|r| r["passed"] == true);
            if cli.json {
                print_json(&json!({"ranker_version": svc.ranker_version(), "recertified": done}));
            } else {
                if done.is_empty() {
                    outln!("nothing to re-certify: every current manifest is certified under {}", svc.ranker_version());
                }
                for line in done.iter().map(lid_shared::recertify::line) {
                    outln!("{line}");
                }
            }
            Ok(if passed { 0 } else { 2 })
        }
        Command::Cosign { agent, version, manifest_sha256, key_env, db } => {
            let db = existing_db(db)?;
            let key = std::env::var(key_env).ok().filter(|k| !k.trim().is_empty()).ok_or_else(|| {
                crate::apierror::ApiError::new(401, "api_key_required", format!("set {key_env} to the co-signing admin's API key (the second administrator's, not the publisher's)"))
            })?;
            let who = crate::auth::authenticate(&db, Some(&format!("Bearer {}", key.trim())))?;
            let svc = crate::serve::service(db, Vec::new(), None)?;
            let out = svc.cosign(agent, &json!({"version": version, "manifest_sha256": manifest_sha256}), &who).map_err(anyhow::Error::new)?;
            if cli.json {
                print_json(&out);
            } else {
                outln!("co-signed {agent} {version} (manifest sha256 {manifest_sha256}) as {}; publish it again", out["cosigned_by"].as_str().unwrap_or_default());
            }
            Ok(0)
        }
        Command::Publish { agent_dir, db: db_path, skip_coverage_gate, approvals, wake_reasons } => {
            let existed = db_path.exists();
            let key_existed = crate::db::org_key_path(db_path).exists();
            let db = crate::db::Db::open(db_path)?;
            let svc = crate::serve::service(db, wake_reasons.clone(), None)?;
            let out = match crate::serve::publish_dir(&svc, agent_dir, *skip_coverage_gate, approvals) {
                Ok(out) => out,
                Err(e) => {
                    // a refused first publish leaves no database behind that it made
                    drop(svc);
                    if !existed {
                        for suffix in ["", "-wal", "-shm"] {
                            let _ = std::fs::remove_file(format!("{}{suffix}", db_path.display()));
                        }
                        if !key_existed {
                            let _ = std::fs::remove_file(crate::db::org_key_path(db_path));
                        }
                    }
                    return Err(anyhow::Error::new(e));
                }
            };
            if cli.json {
                print_json(&out);
            } else {
                outln!("published {} {} ({} tokens) as {}", out["agent_id"].as_str().unwrap_or(""), out["manifest_version"].as_str().unwrap_or(""), out["token_count"], out["fact_uri"].as_str().unwrap_or(""));
                for u in out["coverage_report"].as_array().into_iter().flatten() {
                    outln!("  {:<28} coverage {:>5.1}%  {}", u["unit"].as_str().unwrap_or(""), u["coverage_pct"].as_f64().unwrap_or(0.0) * 100.0, if u["passed"].as_bool().unwrap_or(false) { "ok" } else { "WEAK (gate skipped)" });
                }
            }
            Ok(0)
        }
    }
}

fn org_key(cli: &Cli, command: &OrgKeyCommand) -> Result<i32> {
    match command {
        OrgKeyCommand::Show { db, org_key } => {
            let db = existing_db_with_key(db, org_key.as_deref())?;
            let key = db.attestor().key();
            let file = org_key.clone().unwrap_or_else(|| crate::db::org_key_path(db.path()));
            // since when the store records it (opening the store recorded or checked it),
            // and how many facts it signs
            let (since, signed): (Option<i64>, i64) = db.read(|c| {
                use rusqlite::OptionalExtension;
                let since = c.query_row("SELECT since FROM org_signing_key WHERE id = 1", [], |r| r.get(0)).optional()?;
                let signed = c.query_row(lid_shared::attest::SIGNED_BY_SQL, [lid_shared::attest::kid_needle(key.kid())], |r| r.get("by_key"))?;
                Ok((since, signed))
            })?;
            if cli.json {
                print_json(&json!({"kid": key.kid(), "public_key": key.public_text(), "key_file": file, "since_ms": since, "facts_signed": signed}));
            } else {
                let since = since.map_or_else(|| "not recorded".to_string(), |ms| format!("recorded since {}", crate::db::iso(ms)));
                outln!("org key {} (public key {}), in {}; {since}; signs {signed} facts", key.kid(), key.public_text(), file.display());
            }
        }
        OrgKeyCommand::Rotate { db, org_key } => {
            let db = existing_db_with_key(db, org_key.as_deref())?;
            let r = db.rotate_org_key()?;
            if cli.json {
                print_json(&json!(r));
            } else {
                outln!("rotated the org key {} -> {} (public key {}), in {}", r.from, r.to, r.public_key, r.key_file.display());
                outln!("re-signed {} facts; {} facts the old key had not signed keep their chain (they stay quarantined)", r.resigned, r.kept);
            }
        }
    }
    Ok(0)
}

fn keys(cli: &Cli, command: &KeysCommand) -> Result<i32> {
    match command {
        KeysCommand::Create { db, role, agent, caps, entity_uri, label } => {
            // The first key of a new database is how one starts; a mistyped `--db` must not
            // pass for that silently.
            let req = crate::auth::NewKey { role: role.clone(), agent_id: agent.clone(), capabilities: (!caps.is_empty()).then(|| caps.clone()), entity_uri: entity_uri.clone(), label: label.clone() };
            // checked before the database is touched: a refused key makes no database
            req.mint("0", "0", 0).map_err(|r| anyhow::Error::new(crate::apierror::ApiError::from(r)))?;
            let fresh = !db.exists();
            let path = db.display().to_string();
            let db = crate::db::Db::open(db)?;
            if fresh {
                eprintln!("note: there was no database at {path}: made a new one (with its own org key); a `lid serve` running on another database will not accept this key");
            }
            let (info, secret) = crate::auth::create_key(&db, &req).map_err(anyhow::Error::new)?;
            if cli.json {
                print_json(&json!({"key": secret, "info": info}));
            } else {
                outln!("{secret}");
                eprintln!("created {} ({} {}; capabilities: {}); the secret above is shown only once", info.id, info.role, info.agent_id.as_deref().unwrap_or(""), info.capabilities.join(", "));
            }
        }
        KeysCommand::List { db } => {
            let db = existing_db(db)?;
            let keys = crate::auth::list_keys(&db)?;
            if cli.json {
                print_json(&json!({"keys": keys}));
            } else {
                for k in keys {
                    outln!("{}  {:<5} {:<24} {:<36} {}{}", k.id, k.role, k.agent_id.as_deref().unwrap_or("-"), k.capabilities.join(","), k.entity_uri, if k.revoked_at.is_some() { "  (revoked)" } else { "" });
                }
            }
        }
        KeysCommand::Revoke { id, db } => {
            let db = existing_db(db)?;
            if !crate::auth::revoke_key(&db, id)? {
                return Err(crate::apierror::ApiError::new(404, "key_not_found", format!("no live key {id:?} (see `lid keys list`)")).into());
            }
            if cli.json {
                print_json(&json!({"revoked": id}));
            } else {
                outln!("revoked {id}");
            }
        }
    }
    Ok(0)
}

/// What `lid eval` ranks: agent directories or knowledge packs.
enum Corpora<'a> {
    Agents(&'a Path),
    Packs(&'a Path),
}

/// One loaded corpus: the document the engine ranks (a manifest or a pack document)
/// and its facts.
struct Loaded {
    document: String,
    storage: Storage,
}

impl Corpora<'_> {
    /// Load the agent or pack `id`; a pack's files that are never ranked (files that give
    /// one unit name, files that are no unit, files the walk passed over) are warned of,
    /// as `lid knowledge scan` reports them.
    fn load(&self, rt: &crate::engine::Runtime, id: &str) -> Result<Loaded> {
        if id.is_empty() || id.contains(['/', '\\']) || id == ".." {
            bail!("probe scope {id:?} is not a directory name");
        }
        Ok(match self {
            Corpora::Agents(dir) => {
                let a = agent_dir::load(&dir.join(id)).with_context(|| format!("probes name agent {id:?}"))?;
                Loaded { storage: storage_of(&a, Arc::new(NoAudit)), document: a.manifest_json }
            }
            Corpora::Packs(dir) => {
                let p = crate::pack_dir::load(&dir.join(id)).with_context(|| format!("probes name pack {id:?}"))?;
                let doc: Value = serde_json::from_str(&p.document)?;
                let pack = json!({"path": p.root.display().to_string(), "knowledge_md": doc["knowledge_pack"]["knowledge_md"], "files": doc["knowledge_pack"]["files"]});
                let catalog = crate::knowledge_cli::call(rt.knowledge_catalog(&json!({"packs": [pack], "activate": null}).to_string()))?;
                let unranked = catalog["catalog"]["diagnostics"].as_array().into_iter().flatten().filter(|d| matches!(d["code"].as_str(), Some("knowledge_unit_name_collision" | "knowledge_file_not_served")));
                for why in unranked.filter_map(|d| d["message"].as_str()).chain(p.skipped.iter().map(String::as_str)) {
                    eprintln!("warning: pack {id:?}: {why}");
                }
                Loaded { storage: Storage { facts: p.facts.clone(), audit: Arc::new(NoAudit) }, document: p.document }
            }
        })
    }
}

/// The first field of a probe line (the evaluation sets' format) whose JSON type is wrong,
/// said in JSON terms: caught here, where the file and line are known, rather than as an
/// index into the results the engine is sent.
fn probe_field_problem(p: &Value) -> Option<String> {
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    for f in ["id", "probe_id", "intent", "wake_reason"] {
        if !matches!(&p[f], Value::Null | Value::String(_)) {
            return Some(format!("`{f}` must be a string, not {}", kind(&p[f])));
        }
    }
    if !matches!(&p["expect_none"], Value::Null | Value::Bool(_)) {
        return Some(format!("`expect_none` must be true or false, not {}", kind(&p["expect_none"])));
    }
    match &p["required_units"] {
        Value::Null => None,
        Value::Array(a) => a.iter().find(|u| !u.is_string()).map(|u| format!("`required_units` must list unit names (strings), not {}", kind(u))),
        v => Some(format!("`required_units` must be an array of unit names, not {}", kind(v))),
    }
}

/// `lid eval`: rank every probe's agent or pack units through the component (ranking
/// only), then report hit@1/3/10, MRR and none AUC overall and per agent or pack.
fn eval(cli: &Cli, corpora: Corpora<'_>, probes: &Path, misses: bool, rankings: Option<&Path>) -> Result<i32> {
    let text = agent_dir::read_text(probes)?;
    let rt = runtime()?;
    let mut loaded: BTreeMap<String, Loaded> = BTreeMap::new();
    let mut results = Vec::new();
    // each probe's id and line: results (and `--rankings` lines) are reported by id
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let p = json_of_file(&format!("{}:{}", probes.display(), i + 1), line)?;
        let scope = match corpora {
            Corpora::Agents(_) => p["agent_id"].as_str().or_else(|| p["pack_id"].as_str()),
            Corpora::Packs(_) => p["pack_id"].as_str().or_else(|| p["agent_id"].as_str()),
        };
        let at = format!("{}:{}", probes.display(), i + 1);
        if let Some(why) = probe_field_problem(&p) {
            let named = if p["id"].is_null() { &p["probe_id"] } else { &p["id"] };
            return Err(crate::apierror::ApiError::bad_request("invalid_request", format!("{at}: probe {named}: {why}")).into());
        }
        // §21.5.4 names it `probe_id`; the eval sets' files say `id`
        let Some(id) = p["id"].as_str().or_else(|| p["probe_id"].as_str()).map(str::to_string) else {
            return Err(crate::apierror::ApiError::bad_request("invalid_request", format!("{at}: the probe has no `id` (or `probe_id`, §21.5.4): give each probe a name its results are reported under")).into());
        };
        if let Some(first) = seen.insert(id.clone(), i + 1) {
            return Err(crate::apierror::ApiError::bad_request("invalid_request", format!("{at}: probe id {id:?} is given twice (first on line {first}): results are reported by id, so give each probe its own")).into());
        }
        let Some(agent) = scope.map(str::to_string) else {
            return Err(crate::apierror::ApiError::bad_request("invalid_request", format!("{at}: probe {id:?} has no `agent_id` or `pack_id` (a string): the agent or pack it ranks")).into());
        };
        let positive = p["required_units"].as_array().is_some_and(|u| !u.is_empty());
        if positive == (p["expect_none"] == true) {
            let why = if positive { "lists `required_units` and also says `expect_none: true`: it is one or the other" } else { "has neither `required_units` (the units it needs) nor `expect_none: true` (nothing relevant): there is nothing to score" };
            return Err(crate::apierror::ApiError::bad_request("invalid_request", format!("{at}: probe {id:?} {why}")).into());
        }
        if !loaded.contains_key(&agent) {
            let l = corpora.load(&rt, &agent).with_context(|| format!("{at}: probe {id:?}"))?;
            loaded.insert(agent.clone(), l);
        }
        let Some(l) = loaded.get(&agent) else { continue };
        let intent = p["intent"].as_str().unwrap_or_default();
        let r = engine_ok(rt.rank(&l.storage, &l.document, intent, p["wake_reason"].as_str())?).with_context(|| format!("{at}: probe {id:?}"))?;
        let ranked: Vec<Value> = r["ranked"].as_array().into_iter().flatten().map(|u| json!([u["name"], u["score"]])).collect();
        // every unit is ranked, so a required unit missing from the ranking is a typo in
        // the probe (or a stale probe set): said, and counted as a miss as before
        for unit in p["required_units"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            if !ranked.iter().any(|x| x[0].as_str() == Some(unit)) {
                eprintln!("warning: {at}: probe {id:?}: required unit {unit:?} is not a unit of {agent:?}; counted as a miss");
            }
        }
        // §21.5.4's `k` for the probe-set metrics: a whole number of 1 or more, else 3
        let k = match &p["k"] {
            Value::Null => 3,
            // (beyond u32 it is every unit anyway, and the engine's index is 32-bit in wasm)
            v => v.as_u64().filter(|k| *k >= 1).map(|k| k.min(u32::MAX.into())).ok_or_else(|| crate::apierror::ApiError::bad_request("invalid_request", format!("{at}: probe {id:?}: `k` must be a whole number of 1 or more (§21.5.4), not {v}")))?,
        };
        results.push(json!({
            "id": id, "agent_id": agent, "intent": intent,
            // (an `expect_none` probe may leave `required_units` out)
            "required_units": if positive { p["required_units"].clone() } else { json!([]) }, "expect_none": p["expect_none"].as_bool().unwrap_or(false),
            "ranked": ranked, "k": k,
        }));
    }
    if results.is_empty() {
        // zeros over no probes would read as a ranking that finds nothing
        return Err(crate::apierror::ApiError::bad_request("invalid_request", format!("{} holds no probes: give one JSON object per line ({{\"id\", \"agent_id\" or \"pack_id\", \"intent\", \"required_units\"}})", probes.display())).into());
    }
    if let Some(path) = rankings {
        let lines: String = results.iter().map(|r| json!({"id": r["id"], "agent": r["agent_id"], "scores": r["ranked"]}).to_string() + "\n").collect();
        // whole or not at all, as every file lid writes (its directory made if missing)
        let (dir, name) = match (path.parent(), path.file_name()) {
            (Some(dir), Some(name)) if !dir.as_os_str().is_empty() => (dir, name),
            (_, Some(name)) => (Path::new("."), name),
            _ => bail!("{} names no file", path.display()),
        };
        crate::write_tree::write_files(dir, &[(PathBuf::from(name), lines)])?;
    }
    let mut report = engine_ok(rt.eval_report(&empty_storage(), &Value::Array(results).to_string())?)?;
    if let (Corpora::Packs(_), Some(obj)) = (&corpora, report.as_object_mut()) {
        if let Some(per) = obj.remove("per_agent") {
            obj.insert("per_pack".into(), per);
        }
        if let Some(Value::String(t)) = obj.get_mut("table") {
            *t = t.replacen("agent ", "pack  ", 1);
        }
    }
    if cli.json {
        outln!("{}", serde_json::to_string(&report)?);
    } else {
        out!("{}", report["table"].as_str().unwrap_or_default());
        if misses {
            out!("{}", report["misses_table"].as_str().unwrap_or_default());
        }
    }
    Ok(0)
}
