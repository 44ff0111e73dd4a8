//! `lid serve`: start the HTTP service on an embedded SQLite file, with pooled component
//! instances; `--demo` publishes the example agent and prints keys and a signed trigger.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{json, Value};

use crate::apierror::ApiError;
use crate::db::Db;
use crate::engine::{Runtime, RuntimeOptions};
use crate::service::{Actor, Service};
use crate::trigger::TriggerKey;

#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// The SQLite database (created and migrated if missing)
    #[arg(long, default_value = "lid.db")]
    pub db: PathBuf,
    /// The org key that signs every stored fact (§21.4.3; default: the database's path plus
    /// `.org-key`, made there when the database holds no signed fact)
    #[arg(long)]
    pub org_key: Option<PathBuf>,
    /// Listen address (port 0 picks a free port; the address is printed)
    #[arg(long, default_value = "127.0.0.1:8080", value_parser = listen_addr)]
    pub addr: String,
    /// Publish examples/demo-agent and print an admin key, an agent key and a signed trigger
    #[arg(long)]
    pub demo: bool,
    /// Environment variable holding the HS256 secret that signs heartbeat triggers
    #[arg(long, default_value = "LID_HEARTBEAT_SECRET")]
    pub heartbeat_secret_env: String,
    /// File holding an Ed25519 public key (base64url, 32 bytes) for EdDSA triggers instead
    #[arg(long)]
    pub heartbeat_public_key: Option<PathBuf>,
    /// Registered wake reasons (repeatable; default: lid's built-in enum)
    #[arg(long = "wake-reason", value_parser = crate::cli::wake_reason_arg)]
    pub wake_reasons: Vec<String>,
    /// Org manifest JSON declaring supervisors (§21.4.5)
    #[arg(long)]
    pub org_manifest: Option<PathBuf>,
    /// Wall-clock limit of one engine call, in ms (epoch interruption; 100 to 600000)
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub call_timeout_ms: u64,
    /// Memory limit of one engine instance, in MiB (16 to 4096)
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u64).range(16..=4096))]
    pub memory_mib: u64,
    /// How long a request body may take to arrive once its headers have, in seconds (1 to
    /// 3600); a slower one is answered 408 `request_timeout`
    #[arg(long, default_value_t = crate::http::BODY_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub body_timeout_secs: u64,
    /// Exit when standard input closes (lets a supervising process, such as a test
    /// harness, take the server down with it)
    #[arg(long)]
    pub exit_with_stdin: bool,
}

/// `--addr`: a host and port that resolve (`127.0.0.1:8080`, `[::1]:0`, `localhost:9000`);
/// anything else is a usage error, before a database is opened.
fn listen_addr(s: &str) -> Result<String, String> {
    match std::net::ToSocketAddrs::to_socket_addrs(s).map(|mut a| a.next().is_some()) {
        Ok(true) => Ok(s.to_string()),
        _ => Err(format!("{s:?} is not a listen address: give HOST:PORT, such as 127.0.0.1:8080 (port 0 picks a free one)")),
    }
}

/// The example agent `--demo` publishes: examples/demo-agent as it was when `lid` was built
/// (`build.rs`), so the binary needs no checkout beside it.
mod demo_agent {
    include!(concat!(env!("OUT_DIR"), "/demo_agent.rs"));
}

/// Where the built-in demo agent came from, as the banner names it.
const DEMO_SOURCE: &str = "examples/demo-agent, built into lid";

/// The text of the built-in demo agent's file `rel` (`manifest.json`, `units/NAME.md`).
fn demo_file(rel: &str) -> Option<&'static str> {
    demo_agent::DEMO_AGENT.iter().find(|(r, _)| *r == rel).map(|(_, text)| *text)
}

fn runtime(timeout_ms: u64, memory_mib: u64) -> Result<Arc<Runtime>> {
    // (the flags' ranges keep both in bounds; the clamps keep `service` callers there too)
    let opts = RuntimeOptions { pooling: true, call_timeout: Duration::from_millis(timeout_ms.max(1)), memory_limit: (memory_mib.clamp(16, 4096) as usize) << 20, ..RuntimeOptions::default() };
    Ok(Arc::new(Runtime::new(opts).context("starting the lid engine component")?))
}

/// A service over `db` (for commands that share the routes' code paths).
pub fn service(db: Arc<Db>, wake_reasons: Vec<String>, trigger_key: Option<TriggerKey>) -> Result<Service> {
    let rt = runtime(60_000, 1024)?;
    Service::new(db, rt, (!wake_reasons.is_empty()).then_some(wake_reasons), trigger_key)
}

/// The actor of command-line publishes: the local operator, with every capability.
pub fn cli_actor() -> Actor {
    let user = std::env::var("USER").unwrap_or_else(|_| "operator".into());
    Actor { key_id: "cli".into(), entity_uri: format!("cli:{user}"), is_admin: true, instruction_write: true }
}

/// Publish an agent directory: its manifest plus every `units/<name>.md` of a `fact_uri`
/// entry, as one `PUT /v1/agents/{id}/instruction-manifest` body.
pub fn publish_dir(svc: &Service, dir: &Path, skip_coverage_gate: bool, approvals: &[String]) -> Result<Value, ApiError> {
    let path = if dir.is_dir() { dir.join("manifest.json") } else { dir.to_path_buf() };
    let root = crate::agent_dir::dir_of(&path);
    // (the manifest read as every command reads it, after a byte-order mark if it has one)
    let text = crate::agent_dir::read_text(&path).map_err(|e| ApiError::new(400, "cli_error", format!("{e:#}")))?;
    // A local file that cannot be read is the CLI's own error, as for every command; a unit
    // file is read as every command reads it, never outside the agent directory.
    let canon_root = crate::agent_dir::canonical_root(&root).map_err(|e| ApiError::new(400, "cli_error", format!("{e:#}")))?;
    let unit = |name: &str| crate::agent_dir::unit_file(&root, &canon_root, name).map_err(|why| ApiError::new(400, "cli_error", why));
    publish_manifest(svc, &path.display().to_string(), &text, unit, skip_coverage_gate, approvals)
}

fn bad_request(message: String) -> ApiError {
    ApiError::bad_request("invalid_request", message)
}

/// [`publish_dir`] of a manifest's text (`label` names it in errors), reading the unit of
/// each `fact_uri` entry through `unit`.
fn publish_manifest(svc: &Service, label: &str, text: &str, unit: impl Fn(&str) -> Result<String, ApiError>, skip_coverage_gate: bool, approvals: &[String]) -> Result<Value, ApiError> {
    let m: Value = serde_json::from_str(text).map_err(|e| ApiError::invalid_json(format!("{label}: {e}")))?;
    svc.check_manifest_document(text)?;
    let agent = m["agent_id"].as_str().ok_or_else(|| bad_request(format!("{label} has no agent_id")))?.to_string();
    let mut units = serde_json::Map::new();
    for e in m["entries"].as_array().into_iter().flatten() {
        let (Some(name), Some(_)) = (e["name"].as_str(), e["fact_uri"].as_str()) else { continue };
        if name.contains(['/', '\\']) || name.starts_with('.') {
            return Err(bad_request(format!("entry name {name:?} cannot name a unit file")));
        }
        units.insert(name.to_string(), Value::String(unit(name)?));
    }
    let body = json!({
        "version": if m["manifest_version"].is_null() { &m["version"] } else { &m["manifest_version"] },
        "deployment": m["deployment"],
        "agent_role": m["agent_role"],
        "heartbeat_contract": m["heartbeat_contract"],
        "entries": m["entries"],
        "units": units,
        "skip_coverage_gate": skip_coverage_gate,
        "approvals": crate::cli::approvals_json(approvals).map_err(|e| bad_request(e.to_string()))?,
    });
    svc.publish(&agent, &body, &cli_actor())
}

fn trigger_key(args: &ServeArgs, demo_secret: Option<&str>) -> Result<Option<TriggerKey>> {
    if let Some(p) = &args.heartbeat_public_key {
        let x = crate::agent_dir::read_text(p)?;
        return Ok(Some(TriggerKey::eddsa(&x).with_context(|| format!("{} is not a base64url Ed25519 public key", p.display()))?));
    }
    if let Ok(s) = std::env::var(&args.heartbeat_secret_env) {
        if !s.is_empty() {
            return Ok(Some(TriggerKey::hs256(s.as_bytes())));
        }
    }
    Ok(demo_secret.map(|s| TriggerKey::hs256(s.as_bytes())))
}

/// Sign a demo trigger (HS256) so the printed curl calls work as they are.
pub fn sign_trigger(secret: &str, agent: &str, wake_reason: &str, heartbeat_id: &str, ttl_s: u64) -> Result<String> {
    let exp = crate::db::now_ms() as u64 / 1000 + ttl_s;
    let claims = json!({"sub": agent, "wake_reason": wake_reason, "heartbeat_id": heartbeat_id, "exp": exp});
    Ok(jsonwebtoken::encode(&jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256), &claims, &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()))?)
}

/// How often `lid serve` looks for manifests that fell due for re-certification (S10).
const RECERTIFY_EVERY: Duration = Duration::from_secs(3600);

/// Re-certify what is due (§21.8.3, S10), logging each result; a failure to run is logged,
/// never fatal (the service keeps serving what it has).
fn recertify_logged(svc: &Service) {
    match svc.recertify(crate::db::now_ms()) {
        Ok(done) => {
            for r in &done {
                let line = lid_shared::recertify::line(r);
                if r["passed"] == true {
                    tracing::info!(agent = r["agent_id"].as_str().unwrap_or(""), "{line}");
                } else {
                    tracing::warn!(code = "recertification_failed", agent = r["agent_id"].as_str().unwrap_or(""), "{line}");
                }
            }
        }
        Err(e) => tracing::error!(code = %e.code, error = %e.message, "re-certification could not run"),
    }
}

/// How long `lid serve` keeps a derived blob (a ranker index) no recall has read
/// (`LID_DERIVED_KEEP_DAYS`: days, fractions allowed, default 7; `off` keeps every one);
/// checked at start and with each re-certification round.
fn derived_keep() -> Result<Option<i64>> {
    match std::env::var("LID_DERIVED_KEEP_DAYS").ok().map(|v| v.trim().to_string()) {
        None => Ok(Some(7 * 86_400_000)),
        Some(v) if v.eq_ignore_ascii_case("off") => Ok(None),
        Some(v) => match v.parse::<f64>() {
            Ok(d) if (0.0..=36_500.0).contains(&d) => Ok(Some((d * 86_400_000.0) as i64)),
            _ => anyhow::bail!("LID_DERIVED_KEEP_DAYS must be a number of days from 0 to 36500, or `off`, not {v:?}"),
        },
    }
}

/// Delete the derived blobs unread for `keep` ([`Db::prune_derived`]), logging what it
/// did; a failure is logged, never fatal.
fn prune_derived_logged(db: &Db, keep: Option<i64>) {
    let Some(keep) = keep else { return };
    match db.prune_derived(crate::db::now_ms(), keep) {
        Ok((_, 0)) => {}
        Ok((marked, deleted)) => tracing::info!(deleted, kept_in_use = marked, "deleted ranker indexes no recall has read lately (LID_DERIVED_KEEP_DAYS)"),
        Err(e) => tracing::error!(error = %e, "could not prune the derived blobs"),
    }
}

/// As the service stops: write down the ranker-index reads noted since the last prune
/// ([`Db::mark_derived_read_now`]), so the next start's prune does not take them for unread.
fn note_reads_at_stop(db: &Db, keep: Option<i64>) {
    if keep.is_some() {
        if let Err(e) = db.mark_derived_read_now(crate::db::now_ms()) {
            tracing::error!(error = %e, "could not note which ranker indexes were read (LID_DERIVED_KEEP_DAYS)");
        }
    }
}

fn checkpoint_every() -> Duration {
    Duration::from_millis(crate::settings::CHECKPOINT_MS.get())
}

/// Run the service; `json_banner` (`lid --json serve`) prints the banner as one JSON line.
pub fn run(args: &ServeArgs, json_banner: bool) -> Result<i32> {
    // The address first: a port in use stops here, before the database file is made.
    let listener = std::net::TcpListener::bind(&args.addr).with_context(|| format!("cannot listen on {}", args.addr))?;
    listener.set_nonblocking(true)?;
    let keep = derived_keep()?;
    crate::settings::check().map_err(anyhow::Error::msg)?;
    let db = Db::open_with_key(&args.db, args.org_key.as_deref())?;
    db.checkpoint_in_background(checkpoint_every())?;
    let demo_secret = (args.demo && std::env::var(&args.heartbeat_secret_env).map(|s| s.is_empty()).unwrap_or(true)).then(|| crate::db::random_hex(24));
    let key = trigger_key(args, demo_secret.as_deref())?;
    let rt = runtime(args.call_timeout_ms, args.memory_mib)?;
    let svc = Arc::new(Service::new(db.clone(), rt, (!args.wake_reasons.is_empty()).then(|| args.wake_reasons.clone()), key)?);
    if let Some(p) = &args.org_manifest {
        let org = crate::cli::json_of_file(&p.display().to_string(), &crate::agent_dir::read_text(p)?)?;
        crate::auth::load_org_manifest(&db, &org).map_err(anyhow::Error::new)?;
    }
    // §21.8.3: manifests certified under another ranker go through the gate again before
    // this one serves their recalls; S10: bypassed gates a week on, checked hourly.
    recertify_logged(&svc);
    prune_derived_logged(&db, keep);
    {
        let (svc, db) = (svc.clone(), db.clone());
        std::thread::spawn(move || loop {
            std::thread::sleep(RECERTIFY_EVERY);
            recertify_logged(&svc);
            prune_derived_logged(&db, keep);
        });
    }
    if args.exit_with_stdin {
        let db = db.clone();
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
            note_reads_at_stop(&db, keep);
            std::process::exit(0);
        });
    }
    let mut demo_setup = None;
    if args.demo {
        // Sign the demo trigger with the secret the service checks: the one it made up
        // (printed), or the operator's own from the environment (never printed).
        let own = std::env::var(&args.heartbeat_secret_env).ok().filter(|s| !s.is_empty() && args.heartbeat_public_key.is_none());
        let signing = match (&demo_secret, &own) {
            (Some(s), _) => Some((s.as_str(), true)),
            (None, Some(s)) => Some((s.as_str(), false)),
            (None, None) => None,
        };
        demo_setup = Some(demo(&svc, signing)?);
    }
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let addr = listener.local_addr()?;
        // The first stdout line names the address (tests read it when --addr has port 0);
        // with --json it is one JSON object with the demo's keys and trigger.
        let base = format!("http://{addr}");
        if json_banner {
            println!("{}", json!({"listening": base, "db": args.db, "org_key": {"kid": db.attestor().key().kid(), "public_key": db.attestor().key().public_text()}, "demo": demo_setup.as_ref().map(Demo::json)}));
        } else {
            println!("lid serve listening on {base} (db {}, org key {})", args.db.display(), db.attestor().key().kid());
            for l in demo_setup.iter().flat_map(|d| d.lines(&base)) {
                println!("{l}");
            }
        }
        use std::io::Write;
        let _ = std::io::stdout().flush();
        // SIGINT or SIGTERM: stop accepting, and end the MCP SSE streams, which would
        // otherwise stay open for as long as their clients keep them
        let stop = tokio_util::sync::CancellationToken::new();
        let app = crate::http::router(svc, Duration::from_secs(args.body_timeout_secs), stop.clone());
        let signal = async move {
            shutdown_signal().await;
            stop.cancel();
        };
        serve_http(listener, app, HEADER_TIMEOUT.min(Duration::from_secs(args.body_timeout_secs)), signal).await;
        note_reads_at_stop(&db, keep);
        tracing::info!("stopped: every request accepted before the signal was answered");
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(0)
}

/// How long a client has to send a request's head (its request line and headers) once
/// it has started one, or a next one on a kept-alive connection: past it the connection
/// is closed. Shorter when `--body-timeout-secs` is (a body has that long, then 408
/// `request_timeout`).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// Serve `app` on `listener` over HTTP/1 until `shutdown` resolves, then stop accepting and
/// answer every request already accepted (hyper's graceful shutdown of each connection).
/// As `axum::serve`, with a timer, so that a request head that never finishes is closed
/// after `head_timeout` instead of holding its connection for ever.
async fn serve_http(listener: tokio::net::TcpListener, app: axum::Router, head_timeout: Duration, shutdown: impl std::future::Future<Output = ()>) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(head_timeout);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // a connection that went away before it was accepted is nothing; out
                    // of file descriptors and the like, wait a moment (as axum::serve does)
                    if !matches!(e.kind(), std::io::ErrorKind::ConnectionAborted | std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionRefused) {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let conn = http.serve_connection(TokioIo::new(stream), hyper_util::service::TowerToHyperService::new(app.clone()));
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            // a client that goes away mid-request, or a head that timed out: nothing to do
            let _ = conn.await;
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM (what a supervisor, systemd or a container
/// runtime sends to stop a service): the server then stops accepting connections and
/// answers every request it has already accepted before it exits with status 0. Each
/// recall's audit row is committed before its answer, so a drained server has written
/// every row it owes.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
        "SIGINT"
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            // no handler to install: only SIGINT stops the server gracefully
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await
            }
        }
        "SIGTERM"
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<&str>();
    let signal = tokio::select! {
        s = interrupt => s,
        s = terminate => s,
    };
    tracing::info!(signal, "shutting down: no new connections; answering the requests in flight");
}

/// What `--demo` set up: the agent, its two keys, a signed trigger (none with an Ed25519
/// key, which the service cannot sign with), and the secret it made up, if it did.
struct Demo {
    agent: String,
    admin_key: String,
    agent_key: String,
    trigger: Option<String>,
    made_up_secret: Option<String>,
}

impl Demo {
    /// The banner's lines after the first, for the service at `base`.
    fn lines(&self, base: &str) -> Vec<String> {
        let (agent, k) = (&self.agent, &self.agent_key);
        let mut lines = vec![format!("demo agent: {agent} ({DEMO_SOURCE})"), format!("admin key:  {}", self.admin_key), format!("agent key:  {k}")];
        if let Some(s) = &self.made_up_secret {
            lines.push(format!("heartbeat secret (HS256, set LID_HEARTBEAT_SECRET to keep it): {s}"));
        }
        let trigger = self.trigger.as_deref().unwrap_or("<a trigger signed with your Ed25519 key (--heartbeat-public-key)>");
        lines.push("try:".into());
        lines.push(format!("  curl -s -H 'Authorization: Bearer {k}' -d '{{\"trigger\":\"{trigger}\"}}' {base}/v1/agents/{agent}/heartbeat"));
        lines.push(format!("  curl -s -H 'Authorization: Bearer {k}' -d '{{\"intent\":\"production is broken after the deploy\"}}' {base}/v1/agents/{agent}/recall-instruction"));
        lines.push(format!("  curl -s -H 'Authorization: Bearer {k}' -d '{{\"audit_token\":\"<audit_token from the recall>\",\"used_chunks\":[\"rollback-procedure\"],\"missed_chunks\":[]}}' {base}/v1/instruction/audit"));
        lines
    }

    /// The same as one JSON object (`lid --json serve --demo`), for scripts.
    fn json(&self) -> Value {
        json!({"agent_id": self.agent, "agent_source": DEMO_SOURCE, "admin_key": self.admin_key, "agent_key": self.agent_key, "trigger": self.trigger, "heartbeat_secret": self.made_up_secret})
    }
}

/// `--demo`: publish the example agent (once), create keys, sign a trigger.
fn demo(svc: &Service, signing: Option<(&str, bool)>) -> Result<Demo> {
    let manifest = demo_file("manifest.json").context("the built-in demo agent has no manifest.json")?;
    let m: Value = serde_json::from_str(manifest)?;
    let agent = m["agent_id"].as_str().unwrap_or("release-engineer").to_string();
    let unit = |name: &str| demo_file(&format!("units/{name}.md")).map(str::to_string).ok_or_else(|| bad_request(format!("the built-in demo agent has no units/{name}.md")));
    match publish_manifest(svc, "the built-in demo agent's manifest.json", manifest, unit, false, &["guarantee-load".to_string()]) {
        Ok(_) => {}
        Err(e) if e.code == "manifest_version_conflict" => {}
        Err(e) => return Err(anyhow::Error::new(e).context("publishing the demo agent")),
    }
    let admin = crate::auth::create_key(&svc.db, &crate::auth::NewKey { role: "admin".into(), agent_id: None, capabilities: Some(vec!["admin".into(), "read".into(), "instruction:write".into()]), entity_uri: Some("admin:demo".into()), label: Some("demo admin".into()) }).map_err(anyhow::Error::new)?;
    let agent_key = crate::auth::create_key(&svc.db, &crate::auth::NewKey { role: "agent".into(), agent_id: Some(agent.clone()), capabilities: None, entity_uri: None, label: Some("demo agent".into()) }).map_err(anyhow::Error::new)?;
    let trigger = match signing {
        Some((s, _)) => Some(sign_trigger(s, &agent, "issue_assigned", &format!("run_demo_{}", crate::db::random_hex(4)), 24 * 3600)?),
        None => None,
    };
    let made_up_secret = signing.filter(|(_, print)| *print).map(|(s, _)| s.to_string());
    Ok(Demo { agent, admin_key: admin.1, agent_key: agent_key.1, trigger, made_up_secret })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The copy of the demo agent built into `lid` is examples/demo-agent, file for file.
    #[test]
    fn the_built_in_demo_agent_is_the_examples_one() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/demo-agent");
        let mut files = vec!["manifest.json".to_string()];
        for e in std::fs::read_dir(dir.join("units")).unwrap() {
            files.push(format!("units/{}", e.unwrap().file_name().to_string_lossy()));
        }
        for rel in &files {
            assert_eq!(demo_file(rel), Some(std::fs::read_to_string(dir.join(rel)).unwrap().as_str()), "{rel}");
        }
        assert_eq!(demo_agent::DEMO_AGENT.len(), files.len());
        let m: Value = serde_json::from_str(demo_file("manifest.json").unwrap()).unwrap();
        for e in m["entries"].as_array().unwrap().iter().filter(|e| e["fact_uri"].is_string()) {
            assert!(demo_file(&format!("units/{}.md", e["name"].as_str().unwrap())).is_some(), "{e}");
        }
    }
}
