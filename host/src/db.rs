//! The service's storage: one SQLite file (WAL), migrated from `migrations/` at the
//! repository root (the same files the worker applies to D1), holding the §21.7 tables,
//! the instruction facts behind the component's `wasi:keyvalue` bucket, API keys and
//! coverage reports.
//!
//! Reads go through a small pool of read-only connections; writes through one writer
//! connection, each in a single transaction (publishing is atomic, §21.8.3). The facts an
//! agent's engine calls can read are a per-agent [`Snapshot`], rebuilt whenever the
//! agent's facts change (its cache key includes the newest fact rowid, so a change made
//! by another process is seen on the next request).
//!
//! The request path avoids SQLite where nothing changed: a [`Stamp`] (the writer
//! connection's `PRAGMA data_version`, which moves when ANOTHER connection commits, e.g.
//! `lid keys revoke --db` from the command line, plus a count of this process's own
//! writes) tells whether a cached API key or agent head is still current, so a revoked key
//! stops working on the next request. Audit rows (§21.3.4, §21.5.1) are group-committed:
//! one writer thread takes every row queued so far into one transaction, and each
//! request waits for its own row's commit before it answers.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock, RwLock, TryLockError, Weak};

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Transaction};
use serde_json::{json, Value};

use lid_shared::attest::{self, kid_needle, KeyCheck, OrgKey, Signed, Unattested};

use crate::engine::{FactSource, DERIVED_PREFIX};

/// Every migration, in order (file name, SQL). `tests` check this matches `migrations/`.
pub const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_lid.sql", include_str!("../../migrations/0001_lid.sql")),
    ("0002_content_channel.sql", include_str!("../../migrations/0002_content_channel.sql")),
    ("0003_audit_digests.sql", include_str!("../../migrations/0003_audit_digests.sql")),
    ("0004_audit_warnings.sql", include_str!("../../migrations/0004_audit_warnings.sql")),
    ("0005_certifications.sql", include_str!("../../migrations/0005_certifications.sql")),
    ("0006_audit_heartbeats.sql", include_str!("../../migrations/0006_audit_heartbeats.sql")),
    ("0007_attestation.sql", include_str!("../../migrations/0007_attestation.sql")),
    ("0008_org_key.sql", include_str!("../../migrations/0008_org_key.sql")),
    ("0009_audit_caller.sql", include_str!("../../migrations/0009_audit_caller.sql")),
    ("0010_audit_corpus_key.sql", include_str!("../../migrations/0010_audit_corpus_key.sql")),
    ("0011_window_indexes.sql", include_str!("../../migrations/0011_window_indexes.sql")),
    ("0012_trim_identities.sql", include_str!("../../migrations/0012_trim_identities.sql")),
    ("0013_derived_used_at.sql", include_str!("../../migrations/0013_derived_used_at.sql")),
    ("0014_handoff_index.sql", include_str!("../../migrations/0014_handoff_index.sql")),
];

/// Key of an agent's recall content-channel sources in the facts bucket (`wit/lid.wit`).
pub const CONTENT_SOURCES_PREFIX: &str = "lid-content:";

/// A storage failure (the database cannot be read or written).
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("database error: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("database pool poisoned")]
    Poisoned,
    /// (the error is said in the message, not chained as a source: printed with its
    /// chain, as the CLI prints errors, it would be said twice)
    #[error("cannot open {path}: {error}: pass --db a SQLite database file, or a path where one can be created")]
    Open { path: PathBuf, error: rusqlite::Error },
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// The org key (§21.4.3) cannot be read, or is missing where facts were signed by one.
    #[error("{0}")]
    OrgKey(String),
    /// The org key is not the one the store's facts are signed by (503 `org_key_mismatch`).
    #[error("{0}")]
    OrgKeyMismatch(String),
    /// The agent's current manifest fact failed its attestation and is quarantined.
    #[error("the current manifest fact {uri} of agent {agent:?} failed its attestation ({reason}) and is quarantined")]
    ManifestUnattested { agent: String, uri: String, reason: String },
}

pub type DbResult<T> = Result<T, DbError>;

/// Unix ms now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

pub use lid_shared::time::iso;

/// Random hex of `n` bytes.
pub fn random_hex(n: usize) -> String {
    let mut b = vec![0u8; n];
    let _ = getrandom::fill(&mut b);
    crate::engine::hex(&b)
}

/// A random UUID v4 string.
pub fn uuid4() -> String {
    let mut b = [0u8; 16];
    let _ = getrandom::fill(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = crate::engine::hex(&b);
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    crate::engine::hex(&sha2::Sha256::digest(bytes))
}

/// `instruction:{d}/{a}/{unit}/{version}` → (unit key, unit name, version).
pub fn split_fact_uri(uri: &str) -> Option<(String, String, String)> {
    let rest = uri.strip_prefix("instruction:")?;
    let mut parts = rest.split('/');
    let (d, a, u, v) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    Some((format!("instruction:{d}/{a}/{u}"), u.to_string(), v.to_string()))
}

/// An agent's snapshot and the [`Stamp`] at which its head was last checked.
type Checked = (Option<Stamp>, Arc<Snapshot>);

/// The database: a writer and a pool of readers over one file.
pub struct Db {
    path: PathBuf,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    /// Per agent: the snapshot and the [`Stamp`] at which its head was last checked, the
    /// least recently used dropped past a budget of bytes (`LID_SNAPSHOT_CACHE_MB`).
    snapshots: RwLock<ByteCache<Checked>>,
    derived: RwLock<DerivedCache>,
    /// The derived blobs read since [`Db::prune_derived`] last ran, whose `used_at` it
    /// moves to then.
    derived_read: Mutex<std::collections::BTreeSet<String>>,
    /// Writes committed through [`Db::write`] (bumped after each commit).
    local_writes: AtomicU64,
    /// API keys (by secret hash) as last read, with the [`Stamp`] they were read at.
    pub(crate) principals: RwLock<HashMap<String, (Stamp, crate::auth::Principal)>>,
    /// The group-commit audit writer's queue (started on the first audit row).
    audit_queue: OnceLock<mpsc::Sender<AuditJob>>,
    /// The org key that signs every fact written and checks every fact read (§21.4.3).
    attestor: Attestor,
}

/// The org key, the file it is read from, and the facts it has already verified
/// ([`lid_shared::attest::Memo`]). The key changes when the store's is rotated
/// ([`Db::rotate_org_key`], perhaps by another process while this one serves): a fact
/// signed by a key this process does not hold, or a write to a store that records another
/// key, makes it read its key file (and a rotation's [`next_key_path`]) again first.
pub struct Attestor {
    key: RwLock<Arc<OrgKey>>,
    path: PathBuf,
    memo: lid_shared::attest::Memo,
}

impl Attestor {
    fn new(key: OrgKey, path: PathBuf) -> Self {
        Attestor { key: RwLock::new(Arc::new(key)), path, memo: Default::default() }
    }

    /// The key held now.
    pub fn key(&self) -> Arc<OrgKey> {
        match self.key.read() {
            Ok(k) => k.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// [`OrgKey::verify`], remembering facts that passed; a chain naming a key this
    /// process does not hold is checked again after [`Attestor::follow`].
    pub fn verify(&self, fact: &Signed, chain: Option<&str>) -> Result<(), Unattested> {
        match self.memo.verify(&self.key(), fact, chain) {
            Err(Unattested::UnknownKey(_)) if self.follow(|k| chain.is_some_and(|c| c.contains(&kid_needle(k.kid())))) => self.memo.verify(&self.key(), fact, chain),
            r => r,
        }
    }

    /// Take the key in the key file, or else in a rotation's `.next` file, that `wanted`
    /// accepts, if it is not the one held: whether one was taken. Both files are the
    /// operator's (mode 0600 beside the database), as trusted as the key first read.
    fn follow(&self, wanted: impl Fn(&OrgKey) -> bool) -> bool {
        let held = self.key();
        for p in [self.path.clone(), next_key_path(&self.path)] {
            let Some(k) = std::fs::read_to_string(&p).ok().and_then(|t| OrgKey::parse(&t).ok()) else { continue };
            if k.kid() != held.kid() && wanted(&k) {
                tracing::info!(from = held.kid(), to = k.kid(), file = %p.display(), "the org key was rotated: following it");
                self.set(k);
                return true;
            }
        }
        false
    }

    fn set(&self, key: OrgKey) {
        match self.key.write() {
            Ok(mut k) => *k = Arc::new(key),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(key),
        }
    }

    /// The key to sign a write in `tx` with: the one the store records, followed to its
    /// file if another process rotated it; 503 `org_key_mismatch` when no file holds it.
    pub fn for_write(&self, tx: &Transaction) -> DbResult<Arc<OrgKey>> {
        let recorded: Option<String> = tx.prepare_cached(attest::RECORDED_KEY_SQL)?.query_row([], |r| r.get(0)).optional()?;
        let held = self.key();
        match recorded {
            Some(kid) if kid != held.kid() => {
                if self.follow(|k| k.kid() == kid) {
                    Ok(self.key())
                } else {
                    Err(DbError::OrgKeyMismatch(attest::mismatch_message(Some(&kid), held.kid(), &restore(&self.path))))
                }
            }
            _ => Ok(held),
        }
    }
}

/// Whether facts that failed their attestation were checked with the store's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyCheckedWith {
    /// With the key the store records: what failed is quarantined.
    Current,
    /// With a key another process has since rotated away (now followed): read them again.
    Stale,
}

/// What [`Db::rotate_org_key`] did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Rotated {
    /// The old key's id and the new one's.
    pub from: String,
    pub to: String,
    /// The new public key (base64url), for whoever verifies facts elsewhere.
    pub public_key: String,
    /// Facts re-signed, and facts left as they were (the old key had not signed them).
    pub resigned: usize,
    pub kept: usize,
    pub key_file: PathBuf,
}

/// What to do about a key file that does not hold the store's key.
fn restore(path: &Path) -> String {
    format!("put the key the database was used with in {} (or pass --org-key with its file), then start again", path.display())
}

/// Where a rotation keeps its new key until the database records it: `lid.db.org-key` →
/// `lid.db.org-key.next`.
pub fn next_key_path(key: &Path) -> PathBuf {
    suffixed(key, ".next")
}

/// The org key's file beside a database: `lid.db` → `lid.db.org-key`.
pub fn org_key_path(db: &Path) -> PathBuf {
    suffixed(db, ".org-key")
}

/// `path` with `suffix` added to its file name.
fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// Read the org key at `path`, or make one there when the database `c` holds no signed
/// fact (a new database, or one from before attestation). A missing key where facts were
/// signed is an error, never a new key: with one, every stored fact would be quarantined.
fn org_key(c: &Connection, db: &Path, path: &Path) -> DbResult<OrgKey> {
    match std::fs::read_to_string(path) {
        Ok(text) => OrgKey::parse(&text).map_err(|e| DbError::OrgKey(format!("the org key file {} is not an org key: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let signed: i64 = c.query_row("SELECT count(*) FROM instruction_facts WHERE attestation_chain IS NOT NULL", [], |r| r.get(0))?;
            if signed > 0 {
                return Err(DbError::OrgKey(format!(
                    "the org key file {} is missing, and {signed} facts in {} are signed by an org key: restore the file the database was used with (or pass --org-key with its path); a new key would quarantine every fact",
                    path.display(),
                    db.display()
                )));
            }
            let mut seed = [0u8; 32];
            getrandom::fill(&mut seed).map_err(|e| DbError::OrgKey(format!("cannot make an org key: no randomness ({e})")))?;
            let key = OrgKey::from_seed(seed);
            match write_private(path, &format!("{}\n", key.to_text())) {
                Ok(()) => {
                    tracing::info!(path = %path.display(), kid = key.kid(), "made a new org key");
                    Ok(key)
                }
                // another process (`lid keys create` beside `lid serve`) made it first
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => org_key(c, db, path),
                Err(e) => Err(DbError::OrgKey(format!("cannot write the new org key to {}: {e}", path.display()))),
            }
        }
        Err(e) => Err(DbError::OrgKey(format!("cannot read the org key file {}: {e}", path.display()))),
    }
}

/// Write `text` to a new file at `path` readable by its owner only, whole or not at all
/// (a temporary file hard-linked into place, so an existing file is never replaced).
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    write_private_with(path, text, |tmp, path| std::fs::hard_link(tmp, path))
}

/// [`write_private`], replacing a file already at `path` (renamed into place).
fn replace_private(path: &Path, text: &str) -> std::io::Result<()> {
    write_private_with(path, text, |tmp, path| std::fs::rename(tmp, path))?;
    // the rename itself survives a crash once the directory is synced
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir).and_then(|d| d.sync_all())?;
    }
    Ok(())
}

fn write_private_with(path: &Path, text: &str, place: impl FnOnce(&Path, &Path) -> std::io::Result<()>) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = suffixed(path, &format!(".tmp-{}", random_hex(6)));
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    let r = (|| {
        let mut f = o.open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        place(&tmp, path)
    })();
    let _ = std::fs::remove_file(&tmp);
    r
}

/// Check the org key against the one the store records ([`attest::key_check`]), recording
/// it on a store that has no record yet. A key file that does not hold the store's key is
/// an error, never a reason to quarantine every fact.
fn check_recorded(tx: &Transaction, key: &OrgKey, path: &Path) -> DbResult<()> {
    match judge_key(tx, key)? {
        KeyCheck::Current | KeyCheck::Rotate => Ok(()),
        KeyCheck::Record => {
            tx.execute(attest::RECORD_KEY_SQL, params![key.kid(), key.public_text(), now_ms()])?;
            Ok(())
        }
        KeyCheck::Mismatch(kid) => Err(DbError::OrgKeyMismatch(attest::mismatch_message(kid.as_deref(), key.kid(), &restore(path)))),
    }
}

/// [`attest::key_check`] of the store's recorded key (or, without a record, of the facts'
/// signatures) against `key`, outside a rotation.
fn judge_key(c: &Connection, key: &OrgKey) -> DbResult<KeyCheck> {
    let recorded: Option<String> = c.query_row(attest::RECORDED_KEY_SQL, [], |r| r.get(0)).optional()?;
    let (signed, by_key) = match recorded {
        Some(_) => (0, 0),
        None => c.query_row(attest::SIGNED_BY_SQL, params![kid_needle(key.kid())], |r| Ok((r.get(0)?, r.get(1)?)))?,
    };
    Ok(attest::key_check(recorded.as_deref(), key, None, signed, by_key))
}

/// Whether the file has the table its org key is recorded in (`0008_org_key.sql`), with
/// the facts' signatures beside it: then the key can be checked before anything migrates.
fn records_org_key(c: &Connection) -> DbResult<bool> {
    Ok(c.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'org_signing_key'", [], |r| r.get::<_, i64>(0))? > 0)
}

/// Remove what a key write stopped mid-way left behind: `<key>.tmp-*` and
/// `<key>.next.tmp-*` files ([`write_private`]'s temporaries, each a private key) older
/// than a minute, so that none is a write still under way in another process.
fn sweep_key_temporaries(key: &Path) {
    let Some(name) = key.file_name().and_then(|n| n.to_str()) else { return };
    let dir = key.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let prefixes = [format!("{name}.tmp-"), format!("{name}.next.tmp-")];
    for e in entries.flatten() {
        let file = e.file_name();
        if !file.to_str().is_some_and(|f| prefixes.iter().any(|p| f.starts_with(p.as_str()))) {
            continue;
        }
        let stale = e.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok()).is_some_and(|age| age.as_secs() >= 60);
        if stale && std::fs::remove_file(e.path()).is_ok() {
            tracing::warn!(file = %e.path().display(), "removed a copy of an org key that an interrupted key write left behind");
        }
    }
}

/// Finish, or undo, a rotation that stopped between its steps ([`Db::rotate_org_key`]): a
/// `.next` key file the database records is put in place of the key file (the rotation
/// committed); one it does not record is removed (it never did). Under the write lock, which
/// a rotation holds from writing that file until it commits.
fn settle_rotation(w: &mut Connection, path: &Path) -> DbResult<()> {
    let next = next_key_path(path);
    if !next.exists() {
        return Ok(());
    }
    let tx = w.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let recorded: Option<String> = tx.query_row(attest::RECORDED_KEY_SQL, [], |r| r.get(0)).optional()?;
    // Unreadable is not "not committed": it may hold the only copy of the store's new key.
    // Gone by now is: a rotation that failed removes its file after its rollback.
    let text = match std::fs::read_to_string(&next) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(DbError::OrgKey(format!("cannot read {} (an org key rotation's new key): {e}; make it readable, then start again", next.display()))),
    };
    match OrgKey::parse(&text) {
        Ok(k) if recorded.as_deref() == Some(k.kid()) => {
            replace_private(path, &text).map_err(|e| DbError::OrgKey(format!("a rotation to org key {} committed, but its key could not be put in {}: {e}; move {} there", k.kid(), path.display(), next.display())))?;
            tracing::warn!(kid = k.kid(), file = %path.display(), "finished an interrupted org key rotation");
        }
        _ => tracing::warn!(file = %next.display(), "removed the key of an org key rotation that did not commit"),
    }
    let _ = std::fs::remove_file(&next);
    Ok(())
}

/// Sign, once, the facts written before attestation (`migrations/0007_attestation.sql`:
/// rows up to the rowid it recorded that have no chain), then forget the mark. Returns
/// how many were signed; a `facts_adopted` service event records it.
fn adopt(tx: &Transaction, key: &OrgKey) -> DbResult<usize> {
    let max: Option<i64> = tx.query_row("SELECT max(max_rowid) FROM attestation_adoption", [], |r| r.get(0))?;
    let Some(max) = max else { return Ok(0) };
    let mut rows = Vec::new();
    {
        let mut st = tx.prepare(
            "SELECT rowid, uri, version, interpret_as, content, authored_by, authored_at, source_trust, tokens FROM instruction_facts
             WHERE rowid <= ?1 AND attestation_chain IS NULL ORDER BY rowid",
        )?;
        let mut q = st.query(params![max])?;
        while let Some(r) = q.next()? {
            let (uri, version, kind, content, by, at): (String, String, String, String, String, String) = (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?);
            let chain = key.sign(&Signed { uri: &uri, version: &version, interpret_as: &kind, content: &content, authored_by: &by, authored_at: &at, source_trust: r.get(7)?, tokens: r.get(8)?, sha256: None });
            rows.push((r.get::<_, i64>(0)?, chain));
        }
    }
    for (rowid, chain) in &rows {
        tx.execute("UPDATE instruction_facts SET attestation_chain = ?1 WHERE rowid = ?2", params![chain, rowid])?;
    }
    tx.execute("DELETE FROM attestation_adoption", [])?;
    if !rows.is_empty() {
        insert_event(tx, None, "facts_adopted", &json!({"facts": rows.len(), "kid": key.kid()}), now_ms())?;
        tracing::info!(facts = rows.len(), kid = key.kid(), "signed the facts written before attestation");
    }
    Ok(rows.len())
}

/// What the database looked like at one moment, as far as cached reads care: the writer
/// connection's `PRAGMA data_version` (changes when another connection or process
/// commits) and the number of this process's own [`Db::write`] commits. Audit rows go
/// through the writer connection too and change neither: they touch no cached table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    data_version: i64,
    local_writes: u64,
}

/// How a queued audit row's outcome is reported (after its transaction ended).
pub type AuditReply = Box<dyn FnOnce(Result<(), String>) + Send>;

struct AuditJob {
    row: AuditRow,
    reply: AuditReply,
}

/// At most this many audit rows go into one group commit.
const AUDIT_BATCH_MAX: usize = 256;

/// Under load (the previous group commit took more than one row), how long the audit
/// writer waits for more rows before it commits: a commit's cost is mostly the WAL frames
/// of the pages it touches, not its rows, so fewer, larger commits leave more CPU to
/// recalls. `LID_AUDIT_LINGER_US` overrides it (0 turns it off).
/// (`crate::settings::AUDIT_LINGER_US` holds the default, 500 µs.)
fn audit_linger() -> std::time::Duration {
    std::time::Duration::from_micros(crate::settings::AUDIT_LINGER_US.get())
}

/// Bound of the API-key cache; it is emptied when full (only valid keys are cached).
const PRINCIPAL_CACHE_MAX: usize = 4096;

fn open_conn(path: &Path, read_only: bool) -> DbResult<Connection> {
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI
    };
    let c = Connection::open_with_flags(path, flags).map_err(|error| DbError::Open { path: path.to_path_buf(), error })?;
    c.busy_timeout(std::time::Duration::from_secs(5))?;
    c.set_prepared_statement_cache_capacity(64);
    Ok(c)
}

impl Db {
    /// Open (creating if needed) and migrate the database at `path`, with the org key
    /// beside it ([`org_key_path`]).
    pub fn open(path: &Path) -> DbResult<Arc<Db>> {
        Self::open_with_key(path, None)
    }

    /// [`Db::open`] with the org key at `key` (made there if the database holds no
    /// signed fact), or beside the database.
    pub fn open_with_key(path: &Path, key: Option<&Path>) -> DbResult<Arc<Db>> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = std::fs::create_dir_all(dir);
        }
        // A new database holds every agent's instructions and audit: readable by its owner
        // only, as the org key beside it is (SQLite gives its WAL and shared-memory files
        // the database file's mode). An existing file keeps the mode its operator gave it.
        #[cfg(unix)]
        if !path.exists() {
            use std::os::unix::fs::OpenOptionsExt;
            let _ = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path);
        }
        // A file that is not a database fails here, at its first statement: said as the
        // path that could not be opened.
        let opening = |e: DbError| match e {
            DbError::Sql(error) => DbError::Open { path: path.to_path_buf(), error },
            other => other,
        };
        let mut w = open_conn(path, false)?;
        w.pragma_update(None, "journal_mode", "WAL").map_err(|e| opening(e.into()))?;
        w.pragma_update(None, "synchronous", "NORMAL").map_err(|e| opening(e.into()))?;
        let key_path = key.map(Path::to_path_buf).unwrap_or_else(|| org_key_path(path));
        // A file that records its org key (`0008_org_key.sql` on) is checked against this
        // start's key before it is migrated, so a start refused for the wrong key leaves it
        // as it was (an older lid can still open it); an older file is migrated first.
        let records_key = records_org_key(&w).map_err(opening)?;
        if !records_key {
            migrate(&mut w).map_err(opening)?;
        }
        settle_rotation(&mut w, &key_path)?;
        sweep_key_temporaries(&key_path);
        let key = org_key(&w, path, &key_path)?;
        if records_key {
            if let KeyCheck::Mismatch(kid) = judge_key(&w, &key)? {
                return Err(DbError::OrgKeyMismatch(attest::mismatch_message(kid.as_deref(), key.kid(), &restore(&key_path))));
            }
            migrate(&mut w).map_err(opening)?;
        }
        {
            let tx = w.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            check_recorded(&tx, &key, &key_path)?;
            adopt(&tx, &key)?;
            tx.commit()?;
        }
        Ok(Arc::new(Db {
            path: path.to_path_buf(),
            writer: Mutex::new(w),
            readers: Mutex::new(Vec::new()),
            snapshots: RwLock::new(ByteCache::new(cache_budget(&crate::settings::SNAPSHOT_CACHE_MB))),
            derived: RwLock::new(DerivedCache::new(cache_budget(&crate::settings::DERIVED_CACHE_MB))),
            derived_read: Mutex::new(Default::default()),
            local_writes: AtomicU64::new(0),
            principals: RwLock::new(HashMap::new()),
            audit_queue: OnceLock::new(),
            attestor: Attestor::new(key, key_path),
        }))
    }

    /// The current [`Stamp`], or `None` when the writer connection is busy (a commit in
    /// progress) or failing: callers then read from SQLite as if nothing were cached.
    pub fn stamp(&self) -> Option<Stamp> {
        // Read before the check: a write committed after this point moves the count later.
        let local_writes = self.local_writes.load(Ordering::Acquire);
        let w = match self.writer.try_lock() {
            Ok(w) => w,
            Err(TryLockError::WouldBlock) | Err(TryLockError::Poisoned(_)) => return None,
        };
        let data_version = w.prepare_cached("PRAGMA data_version").and_then(|mut st| st.query_row([], |r| r.get::<_, i64>(0))).ok()?;
        Some(Stamp { data_version, local_writes })
    }

    /// A cached API key read at `stamp` (see [`crate::auth::authenticate`]).
    pub(crate) fn cached_principal(&self, key_hash: &str, stamp: Stamp) -> Option<crate::auth::Principal> {
        let cache = self.principals.read().ok()?;
        cache.get(key_hash).filter(|(s, _)| *s == stamp).map(|(_, p)| p.clone())
    }

    pub(crate) fn cache_principal(&self, key_hash: String, stamp: Stamp, p: crate::auth::Principal) {
        if let Ok(mut cache) = self.principals.write() {
            if cache.len() >= PRINCIPAL_CACHE_MAX {
                cache.clear();
            }
            cache.insert(key_hash, (stamp, p));
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Move WAL checkpoints off the request path: the writer stops checkpointing on
    /// commit and a background thread checkpoints every `every`. Used by the long-running
    /// service.
    ///
    /// Under a steady stream of audit commits a checkpoint alone never lets the WAL
    /// start over (new frames always follow the ones copied), so the file would grow
    /// without bound (≈ 24 KB per recall). Each round therefore copies the bulk on its own
    /// connection (PASSIVE: never blocks writers), then, holding the writer for the
    /// short tail, copies what was committed meanwhile: with every frame copied, the
    /// writer's next transaction rewinds the WAL, and `journal_size_limit` truncates a
    /// file grown past 64 MiB.
    pub fn checkpoint_in_background(self: &Arc<Self>, every: std::time::Duration) -> DbResult<()> {
        {
            let w = self.writer.lock().map_err(|_| DbError::Poisoned)?;
            w.pragma_update(None, "wal_autocheckpoint", 0)?;
            w.pragma_update(None, "journal_size_limit", 64i64 << 20)?;
        }
        let c = open_conn(&self.path, false)?;
        let db = Arc::downgrade(self);
        let checkpoint = |c: &Connection| c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?)));
        std::thread::Builder::new()
            .name("lid-checkpoint".into())
            .spawn(move || {
                // A failure that lasts (a full disk, a read-only file) is logged when it
                // starts, then once a minute, and when it ends: not every few milliseconds.
                let mut failing: Option<(std::time::Instant, u64)> = None;
                let mut report = |r: Result<(), rusqlite::Error>| match (r, &mut failing) {
                    (Ok(()), Some((_, n))) => {
                        tracing::info!(failures = *n, "WAL checkpoint works again");
                        failing = None;
                    }
                    (Ok(()), None) => {}
                    (Err(e), Some((last, n))) => {
                        *n += 1;
                        if last.elapsed() >= std::time::Duration::from_secs(60) {
                            tracing::warn!(error = %e, failures = *n, "WAL checkpoint still failing; will retry");
                            *last = std::time::Instant::now();
                        }
                    }
                    (Err(e), None) => {
                        tracing::warn!(error = %e, "WAL checkpoint failed; will retry (logged again once a minute while it fails)");
                        failing = Some((std::time::Instant::now(), 1));
                    }
                };
                loop {
                    std::thread::sleep(every);
                    let Some(db) = db.upgrade() else { return };
                    match checkpoint(&c) {
                        // Copy the tail (frames committed since the copy began, often
                        // none) with our writes held back: the writer's next transaction
                        // then starts from a fully copied WAL, which lets it rewind the log.
                        Ok((log, _)) if log > 0 => {
                            if let Ok(w) = db.writer.lock() {
                                report(checkpoint(&w).map(|_| ()));
                            }
                        }
                        Ok(_) => report(Ok(())),
                        Err(e) => report(Err(e)),
                    }
                }
            })
            .map_err(|e| DbError::Corrupt(format!("cannot start the checkpoint thread: {e}")))?;
        Ok(())
    }

    /// Run `f` on a pooled read-only connection.
    pub fn read<R>(&self, f: impl FnOnce(&Connection) -> DbResult<R>) -> DbResult<R> {
        let conn = self.readers.lock().map_err(|_| DbError::Poisoned)?.pop();
        let conn = match conn {
            Some(c) => c,
            None => open_conn(&self.path, true)?,
        };
        let r = f(&conn);
        if let Ok(mut pool) = self.readers.lock() {
            if pool.len() < 16 {
                pool.push(conn);
            }
        }
        r
    }

    /// Run `f` in one write transaction; committed only when `f` returns `Ok`.
    pub fn write<R, E: From<DbError>>(&self, f: impl FnOnce(&Transaction) -> Result<R, E>) -> Result<R, E> {
        self.write_synced(false, f)
    }

    /// [`Db::write`], with the commit on disk when it returns when `durable` (SQLite's
    /// `synchronous = FULL` for this transaction: in WAL mode the log is synced at its
    /// commit, which `NORMAL` leaves to the next checkpoint, so a power loss can undo a
    /// commit that has returned; what follows such a commit outside the database must
    /// not be undone that way).
    fn write_synced<R, E: From<DbError>>(&self, durable: bool, f: impl FnOnce(&Transaction) -> Result<R, E>) -> Result<R, E> {
        let mut w = self.writer.lock().map_err(|_| DbError::Poisoned)?;
        if durable {
            w.pragma_update(None, "synchronous", "FULL").map_err(DbError::from)?;
        }
        let r = (|| -> Result<R, E> {
            let tx = w.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(DbError::from)?;
            let r = f(&tx)?;
            tx.commit().map_err(DbError::from)?;
            Ok(r)
        })();
        if durable {
            // (after a commit the result stands: a connection left syncing every commit is
            // slower, not wrong)
            if let Err(e) = w.pragma_update(None, "synchronous", "NORMAL") {
                tracing::warn!(error = %e, "could not set the database's synchronous mode back to NORMAL");
            }
        }
        let r = r?;
        // After the commit: a reader that saw the old count re-reads what it cached.
        self.local_writes.fetch_add(1, Ordering::AcqRel);
        Ok(r)
    }

    // ---- manifests and facts -----------------------------------------------------

    /// The current manifest row of `agent` and the agent's fact generation (newest fact
    /// rowid plus its manifest re-certifications, which replace coverage rows and so the
    /// soft lift: both only grow, so any change moves it); `None` when the agent has no manifest. Reads the facts table, so an
    /// unreadable fact store fails here.
    pub fn current_head(&self, agent: &str) -> DbResult<Option<(String, i64)>> {
        self.read(|c| head(c, agent))
    }

    /// The agent's current snapshot (manifest + every fact of the agent), cached per
    /// (manifest row, fact generation).
    /// The head is read again only when the [`Stamp`] moved since it was last checked.
    pub fn snapshot(self: &Arc<Self>, agent: &str) -> DbResult<Option<Arc<Snapshot>>> {
        self.snapshot_at(agent, self.stamp())
    }

    /// [`Db::snapshot`] against a [`Stamp`] the caller has just taken.
    pub fn snapshot_at(self: &Arc<Self>, agent: &str, stamp: Option<Stamp>) -> DbResult<Option<Arc<Snapshot>>> {
        if let (Some(now), Some((Some(seen), s))) = (stamp, self.snapshots.read().map_err(|_| DbError::Poisoned)?.get(agent)) {
            if seen == now {
                return Ok(Some(s));
            }
        }
        let Some((manifest_id, generation)) = self.current_head(agent)? else {
            return Ok(None);
        };
        if let Some((seen, s)) = self.snapshots.write().map_err(|_| DbError::Poisoned)?.get_mut(agent) {
            if s.manifest_id == manifest_id && s.generation == generation {
                *seen = stamp;
                return Ok(Some(s.clone()));
            }
        }
        let snap = Arc::new(self.load_snapshot(agent, &manifest_id, generation, None)?);
        self.snapshots.write().map_err(|_| DbError::Poisoned)?.insert(agent, (stamp, snap.clone()));
        Ok(Some(snap))
    }

    /// The facts of an agent that has no manifest yet (units written before its first
    /// publish, which that publish may name without sending them again).
    pub fn unpublished_facts(self: &Arc<Self>, agent: &str) -> DbResult<SnapshotFacts> {
        let map = self.read_attested(agent, |unattested| {
            let mut read = self.read(|c| agent_facts(c, agent, "", None, None, &self.attestor))?;
            *unattested = std::mem::take(&mut read.unattested);
            Ok(read.map)
        })?;
        Ok(SnapshotFacts { map, db: self.clone(), prepared: Default::default() })
    }

    /// The agent's state as it was at `at_ms` (§21.5.3 replay, §21.7 "replay recalls against
    /// the manifest that was active at the time"): with the `corpus_key` an audit record
    /// names ([`Snapshot::corpus_key`]), its manifest row and the facts up to its horizon,
    /// exactly those the call read; for a record without one, the manifest `version`
    /// when given, else the one current then, and the facts written by then. A row is
    /// immutable but for `valid_until`, and quarantined rows never become servable. The
    /// knowledge packs are those current then. Not cached.
    pub fn snapshot_as_of(self: &Arc<Self>, agent: &str, version: Option<&str>, at_ms: i64, corpus_key: &str) -> DbResult<Option<Snapshot>> {
        let named = Snapshot::parse_corpus_key(corpus_key);
        let id: Option<String> = self.read(|c| {
            if let Some((id, _)) = named {
                return Ok(c.query_row("SELECT id FROM instruction_manifests WHERE agent_id = ?1 AND id = ?2", params![agent, id], |r| r.get(0)).optional()?);
            }
            Ok(match version.filter(|v| !v.is_empty()) {
                Some(v) => c.query_row("SELECT id FROM instruction_manifests WHERE agent_id = ?1 AND version = ?2", params![agent, v], |r| r.get(0)).optional()?,
                None => c
                    .query_row(
                        "SELECT id FROM instruction_manifests WHERE agent_id = ?1 AND created_at <= ?2 AND (superseded_at IS NULL OR superseded_at > ?2)
                         ORDER BY created_at DESC, rowid DESC LIMIT 1",
                        params![agent, at_ms],
                        |r| r.get(0),
                    )
                    .optional()?,
            })
        })?;
        id.map(|id| self.load_snapshot(agent, &id, 0, Some((at_ms, named.map(|n| n.1))))).transpose()
    }

    fn load_snapshot(self: &Arc<Self>, agent: &str, manifest_id: &str, generation: i64, at: Option<(i64, Option<i64>)>) -> DbResult<Snapshot> {
        self.read_attested(agent, |unattested| self.read_snapshot(agent, manifest_id, generation, at, unattested))
    }

    /// `read` an agent's facts (it lists those that failed their attestation), then
    /// quarantine those; once more when they were checked with a key another process has
    /// since rotated away ([`KeyCheckedWith::Stale`]). A quarantine's failure wins over
    /// the read's own.
    fn read_attested<T>(&self, agent: &str, mut read: impl FnMut(&mut Vec<(String, Unattested)>) -> DbResult<T>) -> DbResult<T> {
        let mut attempt = || -> DbResult<(KeyCheckedWith, DbResult<T>)> {
            // the key the facts are checked with, taken before they are read
            let kid = self.attestor.key().kid().to_string();
            let mut unattested = Vec::new();
            let got = read(&mut unattested);
            Ok((self.quarantine_unattested(agent, &unattested, &kid)?, got))
        };
        match attempt()? {
            (KeyCheckedWith::Current, got) => got,
            (KeyCheckedWith::Stale, _) => attempt()?.1,
        }
    }

    /// The org key that signs and checks facts.
    pub fn attestor(&self) -> &Attestor {
        &self.attestor
    }

    /// Rotate the org key (§21.4.3): a new key signs every fact the old one signed, in one
    /// transaction that also records the new key and a `org_key_rotated` service event;
    /// then the new key replaces the old in the key file. Facts whose chain the old key
    /// did not sign (quarantined, or not yet found out) keep it, and stay unserved.
    ///
    /// Crash-safe: the new key is written to [`next_key_path`] (under the write lock)
    /// before the transaction; if the process stops before the key file is replaced, the
    /// next [`Db::open`] finishes the rotation from it, or removes it if the transaction
    /// never committed. Processes serving the same database follow the new key
    /// ([`Attestor::for_write`], [`Attestor::verify`]).
    pub fn rotate_org_key(&self) -> DbResult<Rotated> {
        let path = self.attestor.path.clone();
        let next = next_key_path(&path);
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| DbError::OrgKey(format!("cannot make an org key: no randomness ({e})")))?;
        let new = OrgKey::from_seed(seed);
        let text = format!("{}\n", new.to_text());
        let mut wrote_next = false;
        // durable: the key file is replaced after the commit, and a power loss that undid
        // the commit then would leave the facts signed by a key no file holds
        let done = self.write_synced(true, |tx| -> DbResult<Rotated> {
            let old = self.attestor.for_write(tx)?;
            write_private(&next, &text).map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => DbError::OrgKey(format!("{} exists: another rotation of this org key is under way (or stopped in the middle: the next start of lid serve settles it)", next.display())),
                _ => DbError::OrgKey(format!("cannot write the new org key to {}: {e}", next.display())),
            })?;
            wrote_next = true;
            let rows: Vec<attest::StoredChain> = {
                let mut st = tx.prepare(attest::RESIGN_ROWS_SQL)?;
                let rows = st.query_map([], |r| {
                    Ok(attest::StoredChain {
                        uri: r.get(0)?,
                        version: r.get(1)?,
                        interpret_as: r.get(2)?,
                        authored_by: r.get(3)?,
                        authored_at: r.get(4)?,
                        source_trust: r.get(5)?,
                        tokens: r.get(6)?,
                        sha256: r.get(7)?,
                        attestation_chain: r.get(8)?,
                    })
                })?;
                rows.collect::<Result<_, _>>()?
            };
            let (mut resigned, mut kept) = (0, 0);
            for row in &rows {
                match row.resign(&new, &old) {
                    Ok(c) => resigned += tx.execute(attest::RESIGN_SQL, params![c, row.uri, row.attestation_chain])?,
                    Err(_) => kept += 1,
                }
            }
            let now = now_ms();
            // (the event first: both are written while the record names the old key)
            let detail = json!({"from": old.kid(), "to": new.kid(), "resigned": resigned, "kept": kept});
            tx.execute(attest::ROTATED_EVENT_SQL, params![format!("evt_{}", random_hex(12)), attest::ROTATED_EVENT, detail.to_string(), now, old.kid()])?;
            tx.execute(attest::ROTATE_KEY_SQL, params![new.kid(), new.public_text(), now, old.kid()])?;
            Ok(Rotated { from: old.kid().to_string(), to: new.kid().to_string(), public_key: new.public_text(), resigned, kept, key_file: path.clone() })
        });
        let done = match done {
            Ok(d) => d,
            Err(e) => {
                if wrote_next {
                    let _ = std::fs::remove_file(&next);
                }
                return Err(e);
            }
        };
        tracing::info!(from = %done.from, to = %done.to, resigned = done.resigned, kept = done.kept, "rotated the org key");
        replace_private(&path, &text).map_err(|e| {
            DbError::OrgKey(format!("the rotation to org key {} is committed, but the key could not be put in {}: {e}; it is in {}, which the next start of lid serve moves there", done.to, path.display(), next.display()))
        })?;
        let _ = std::fs::remove_file(&next);
        self.attestor.set(new);
        Ok(done)
    }

    /// Quarantine facts whose attestation failed (§21.4.3, §19.5): `quarantine =
    /// 'quarantined'` with the reason, so no read serves them again, and a `fact_unattested` service event
    /// each with the reason. An admin can read them (`GET …/federated-facts`) and promote
    /// one, which writes a new signed version.
    ///
    /// Only when `kid`, the key this process held when it read them (taken before the
    /// read), is the one the store records: when another process rotated it, the facts
    /// failed against a stale key, not their own signatures. The key is followed to its
    /// file ([`Attestor::for_write`]) and nothing is quarantined ([`KeyCheckedWith::Stale`]:
    /// read them again), or, with no file holding it, the read is refused as 503
    /// `org_key_mismatch`.
    fn quarantine_unattested(&self, agent: &str, facts: &[(String, Unattested)], kid: &str) -> DbResult<KeyCheckedWith> {
        if facts.is_empty() {
            return Ok(KeyCheckedWith::Current);
        }
        self.write(|tx| {
            if self.attestor.for_write(tx)?.kid() != kid {
                return Ok(KeyCheckedWith::Stale);
            }
            let now = now_ms();
            for (uri, why) in facts {
                if tx.execute(lid_shared::attest::QUARANTINE_SQL, params![why.reason(), uri])? == 1 {
                    tracing::warn!(agent, uri = %uri, reason = why.reason(), "quarantined a fact that failed its attestation");
                    insert_event(tx, Some(agent), lid_shared::attest::EVENT, &json!({"uri": uri, "reason": why.reason(), "message": why.to_string(), "kid": kid}), now)?;
                }
            }
            Ok(KeyCheckedWith::Current)
        })
    }

    fn read_snapshot(self: &Arc<Self>, agent: &str, manifest_id: &str, generation: i64, at: Option<(i64, Option<i64>)>, unattested: &mut Vec<(String, Unattested)>) -> DbResult<Snapshot> {
        let (at_ms, horizon) = (at.map(|a| a.0), at.and_then(|a| a.1));
        self.read(|c| {
            let (version, fact_uri, token_count, created_at): (String, String, i64, i64) = c.query_row(
                "SELECT version, fact_uri, token_count, created_at FROM instruction_manifests WHERE id = ?1",
                params![manifest_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )?;
            let read = agent_facts(c, agent, &fact_uri, at_ms, horizon, &self.attestor)?;
            *unattested = read.unattested;
            let AgentFacts { map, manifest_json, provenance, horizon, .. } = read;
            let facts_bytes: usize = map.iter().map(|(k, v)| k.len() + v.len()).sum();
            let manifest_json = match (manifest_json, unattested.iter().find(|(u, _)| *u == fact_uri)) {
                (Some(m), _) => m,
                (None, Some((_, why))) => return Err(DbError::ManifestUnattested { agent: agent.to_string(), uri: fact_uri, reason: why.to_string() }),
                (None, None) => {
                    // quarantined by an earlier read
                    let reason: Option<String> = c
                        .query_row("SELECT quarantine_reason FROM instruction_facts WHERE uri = ?1 AND quarantine_reason IS NOT NULL", params![fact_uri], |r| r.get(0))
                        .optional()?;
                    return Err(match reason {
                        Some(reason) => DbError::ManifestUnattested { agent: agent.to_string(), uri: fact_uri, reason },
                        None => DbError::Corrupt(format!("manifest fact {fact_uri} is missing")),
                    });
                }
            };
            let mut lift = Vec::new();
            let mut cov = c.prepare_cached("SELECT unit FROM coverage_reports WHERE agent_id = ?1 AND manifest_version = ?2 AND hit_at_10 < 0.4 ORDER BY unit")?;
            for u in cov.query_map(params![agent, version], |r| r.get::<_, String>(0))? {
                lift.push(u?);
            }
            Ok(Snapshot {
                agent_id: agent.to_string(),
                manifest_id: manifest_id.to_string(),
                generation,
                fact_horizon: horizon,
                bytes: facts_bytes + manifest_json.len(),
                version,
                fact_uri,
                token_count,
                created_at,
                manifest_json,
                provenance,
                lift_units: lift,
                facts: Arc::new(SnapshotFacts { map, db: self.clone(), prepared: Default::default() }),
                stubs: Default::default(),
            })
        })
    }

    /// A derived blob (ranker index) by key: memory, then the `derived_blobs` table (read
    /// from SQLite once, then shared with the in-memory cache).
    fn derived_get(&self, key: &str) -> Result<Option<crate::engine::Blob>, String> {
        if let Some(v) = self.derived.read().map_err(|e| e.to_string())?.get(key) {
            self.derived_used(key);
            return Ok(Some(v));
        }
        let v = self
            .read(|c| Ok(c.query_row("SELECT value FROM derived_blobs WHERE key = ?1", params![key], |r| r.get::<_, Vec<u8>>(0)).optional()?))
            .map_err(|e| e.to_string())?
            .map(Arc::new);
        if let Some(v) = &v {
            self.derived.write().map_err(|e| e.to_string())?.insert(key, v.clone());
            self.derived_used(key);
        }
        Ok(v)
    }

    fn derived_set(&self, key: &str, value: Vec<u8>) -> Result<(), String> {
        let v = Arc::new(value);
        self.derived.write().map_err(|e| e.to_string())?.insert(key, v.clone());
        self.write(|tx| {
            tx.execute("INSERT OR IGNORE INTO derived_blobs (key, value, created_at) VALUES (?1, ?2, ?3)", params![key, v.as_slice(), now_ms()])?;
            Ok::<_, DbError>(())
        })
        .map_err(|e| e.to_string())
    }

    /// Note that the derived blob `key` was read ([`Db::prune_derived`] keeps it).
    fn derived_used(&self, key: &str) {
        let mut read = self.derived_read.lock().unwrap_or_else(|e| e.into_inner());
        // (every recall reads its index: no allocation once the key is noted)
        if !read.contains(key) {
            read.insert(key.to_string());
        }
    }

    /// Mark the derived blobs read since the last call as used at `now`, then delete those
    /// no recall has read for `keep_ms` (README, "Retention"): every unit write gives its
    /// agent a new ranker index at the next recall, and the old ones would be kept for
    /// good. A deleted blob still in memory serves on; one asked for again is derived
    /// again. Returns how many were marked and how many deleted.
    pub fn prune_derived(&self, now: i64, keep_ms: i64) -> DbResult<(usize, usize)> {
        let read = self.take_derived_read();
        self.write(|tx| {
            let marked = mark_derived_read(tx, &read, now)?;
            let deleted = tx.execute("DELETE FROM derived_blobs WHERE coalesce(used_at, created_at) < ?1", params![now.saturating_sub(keep_ms)])?;
            Ok::<_, DbError>((marked, deleted))
        })
    }

    /// Mark the derived blobs read since the last call as used at `now`, deleting none:
    /// `lid serve` does it as it stops, so the reads noted since the last hourly prune
    /// are not lost (a service restarted more often than hourly recorded none, and its
    /// next start deleted indexes read seconds before). Returns how many were marked.
    pub fn mark_derived_read_now(&self, now: i64) -> DbResult<usize> {
        let read = self.take_derived_read();
        if read.is_empty() {
            return Ok(0);
        }
        self.write(|tx| mark_derived_read(tx, &read, now))
    }

    fn take_derived_read(&self) -> std::collections::BTreeSet<String> {
        std::mem::take(&mut *self.derived_read.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Set `used_at` to `now` on the derived blobs named in `read`; how many there were.
fn mark_derived_read(tx: &rusqlite::Transaction<'_>, read: &std::collections::BTreeSet<String>, now: i64) -> DbResult<usize> {
    let mut used = tx.prepare_cached("UPDATE derived_blobs SET used_at = ?1 WHERE key = ?2")?;
    let mut marked = 0;
    for key in read {
        marked += used.execute(params![now, key])?;
    }
    Ok(marked)
}

/// A cache's budget in bytes: `setting` in MiB ([`crate::settings::Setting::get`];
/// `LID_DERIVED_CACHE_MB`: derived blobs; `LID_SNAPSHOT_CACHE_MB`: agents' snapshots).
fn cache_budget(setting: &crate::settings::Setting) -> usize {
    (setting.get() << 20) as usize
}

/// The in-memory side of the `derived_blobs` table (the ranker indexes recalls read),
/// held to a budget of bytes: every publish, failed ones too, derives blobs for the units
/// it was given, so a long-running service would otherwise keep every one it ever built.
/// The least recently used goes first; the table keeps them all, and an evicted blob is
/// read from it again when asked for.
type DerivedCache = ByteCache<Arc<Vec<u8>>>;

/// The bytes a [`ByteCache`] counts for a value it holds.
trait Weigh {
    fn weight(&self) -> usize;
}

impl Weigh for Arc<Vec<u8>> {
    fn weight(&self) -> usize {
        self.len()
    }
}

impl Weigh for Checked {
    fn weight(&self) -> usize {
        self.1.bytes
    }
}

/// Values by key held to a budget of bytes, the least recently used going first (the
/// newest always stays, however large). A value in use stays alive through its `Arc`.
struct ByteCache<V> {
    map: HashMap<String, (V, AtomicU64)>,
    bytes: usize,
    budget: usize,
    tick: AtomicU64,
}

impl<V: Weigh + Clone> ByteCache<V> {
    fn new(budget: usize) -> Self {
        ByteCache { map: HashMap::new(), bytes: 0, budget, tick: AtomicU64::new(0) }
    }

    /// The value, marked used now (under the read lock: the mark is atomic).
    fn get(&self, key: &str) -> Option<V> {
        let (v, used) = self.map.get(key)?;
        used.store(self.tick.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
        Some(v.clone())
    }

    /// The value to change in place (its weight must stay), marked used now.
    fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        let now = self.tick.fetch_add(1, Ordering::Relaxed);
        let (v, used) = self.map.get_mut(key)?;
        *used.get_mut() = now;
        Some(v)
    }

    /// Keep `v` under `key`, then evict the least recently used others while over budget.
    fn insert(&mut self, key: &str, v: V) {
        let now = self.tick.fetch_add(1, Ordering::Relaxed);
        let len = v.weight();
        if let Some((old, _)) = self.map.insert(key.to_string(), (v, AtomicU64::new(now))) {
            self.bytes -= old.weight();
        }
        self.bytes += len;
        while self.bytes > self.budget && self.map.len() > 1 {
            let oldest = self.map.iter().filter(|(k, _)| k.as_str() != key).min_by_key(|(_, (_, used))| used.load(Ordering::Relaxed)).map(|(k, _)| k.clone());
            let Some((gone, _)) = oldest.and_then(|k| self.map.remove(&k)) else { break };
            self.bytes -= gone.weight();
        }
    }
}

/// (current manifest row id, fact generation) of `agent` on connection `c` (a
/// transaction too): what a [`Snapshot`] was built from ([`Db::current_head`]).
pub fn head(c: &Connection, agent: &str) -> DbResult<Option<(String, i64)>> {
    let mut st = c.prepare_cached(
        "SELECT m.id, (SELECT coalesce(max(rowid), 0) FROM instruction_facts WHERE agent_id = ?1)
                      + (SELECT count(*) FROM manifest_certifications WHERE agent_id = ?1)
         FROM instruction_manifests m WHERE m.agent_id = ?1 AND m.superseded_at IS NULL",
    )?;
    Ok(st.query_row(params![agent], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))).optional()?)
}

/// Apply every migration not yet recorded in `lid_migrations`.
fn migrate(c: &mut Connection) -> DbResult<()> {
    // A migration may take a while on a large file (an index over every audit row): a
    // second process waits for it as long as it may take, not the 5 s of a request.
    c.busy_timeout(std::time::Duration::from_secs(600))?;
    migrate_all(c)?;
    Ok(c.busy_timeout(std::time::Duration::from_secs(5))?)
}

fn migrate_all(c: &mut Connection) -> DbResult<()> {
    c.execute_batch("CREATE TABLE IF NOT EXISTS lid_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)")?;
    let done = |c: &Connection, name: &str| -> DbResult<bool> { Ok(c.query_row("SELECT name FROM lid_migrations WHERE name = ?1", params![name], |r| r.get::<_, String>(0)).optional()?.is_some()) };
    for (name, sql) in MIGRATIONS {
        if done(c, name)? {
            continue;
        }
        // Checked again under the write lock: a second process opening the file at once
        // (a service and a cron job, the first start after an upgrade) waits for the
        // first's migration and finds it done, instead of applying it twice.
        let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let apply = !done(&tx, name)?;
        if apply {
            tx.execute_batch(sql)?;
            tx.execute("INSERT INTO lid_migrations (name, applied_at) VALUES (?1, ?2)", params![name, now_ms()])?;
        }
        tx.commit()?;
        if apply {
            tracing::info!(migration = name, "applied a schema migration");
        }
    }
    // A file a newer lid migrated (a rollback after an upgrade): its added columns and
    // tables are left as they are, and said once, so a rollback is not silent.
    let mut st = c.prepare("SELECT name FROM lid_migrations ORDER BY name")?;
    let names = st.query_map([], |r| r.get::<_, String>(0))?.collect::<Result<Vec<_>, _>>()?;
    let unknown: Vec<&String> = names.iter().filter(|n| !MIGRATIONS.iter().any(|(m, _)| m == n)).collect();
    if !unknown.is_empty() {
        tracing::warn!(migrations = ?unknown, schema = schema(), "the database was migrated by a newer lid than this one: this binary ignores what those migrations added");
    }
    Ok(())
}

/// The schema this binary writes: the name of its last migration, without `.sql`.
pub fn schema() -> &'static str {
    MIGRATIONS.last().map(|(name, _)| name.trim_end_matches(".sql")).unwrap_or_default()
}

/// `lid -V`: the version and the schema this binary writes (`lid_migrations`).
pub fn version_line() -> &'static str {
    static LINE: OnceLock<String> = OnceLock::new();
    LINE.get_or_init(|| format!("{} (schema {})", env!("CARGO_PKG_VERSION"), schema()))
}

/// One agent's current manifest and facts, as the engine sees them.
pub struct Snapshot {
    pub agent_id: String,
    pub manifest_id: String,
    pub generation: i64,
    /// The newest fact row this snapshot holds (with `manifest_id`, its `corpus_key`).
    pub fact_horizon: i64,
    /// The bytes of its facts and manifest, as the snapshot cache counts them.
    pub bytes: usize,
    pub version: String,
    pub fact_uri: String,
    pub token_count: i64,
    pub created_at: i64,
    /// The full manifest document (the manifest fact's content).
    pub manifest_json: String,
    /// The manifest fact's provenance (approvals, coverage bypass).
    pub provenance: Value,
    /// Coverage-critical units (hit@10 < 0.4 at publish) that get the §21.5.5 soft lift.
    pub lift_units: Vec<String>,
    pub facts: Arc<SnapshotFacts>,
    /// Its boot stubs, rendered from these facts (never read from `boot_stubs`).
    pub stubs: lid_shared::heartbeat::StubMemo,
}

impl Snapshot {
    /// The name the engine's calls get for this state (`corpus_key`; it keeps the corpus
    /// prepared, and every audit record keeps it): `{manifest row}:{generation}:{fact
    /// horizon}`. The generation moves with every fact write and re-certification.
    pub fn corpus_key(&self) -> String {
        format!("{}:{}:{}", self.manifest_id, self.generation, self.fact_horizon)
    }

    /// The manifest row and fact horizon a [`Snapshot::corpus_key`] names.
    pub fn parse_corpus_key(key: &str) -> Option<(&str, i64)> {
        let mut parts = key.rsplitn(3, ':');
        let horizon = parts.next()?.parse().ok()?;
        parts.next()?.parse::<i64>().ok()?;
        Some((parts.next().filter(|id| !id.is_empty())?, horizon))
    }
}

/// Column `i` of a fact row as text: stored as TEXT, or as a BLOB of UTF-8 bytes.
fn text(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<String> {
    match r.get_ref(i)? {
        rusqlite::types::ValueRef::Text(b) | rusqlite::types::ValueRef::Blob(b) => {
            String::from_utf8(b.to_vec()).map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Blob, Box::new(e)))
        }
        other => Err(rusqlite::Error::InvalidColumnType(i, String::new(), other.data_type())),
    }
}

/// Column `i` of a fact row as optional text: NULL, or as [`text`] reads it.
fn opt_text(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<String>> {
    match r.get_ref(i)? {
        rusqlite::types::ValueRef::Null => Ok(None),
        _ => text(r, i).map(Some),
    }
}

/// The facts bucket of `agent` as the engine reads it (`wasi:keyvalue`, see the README):
/// every fact that is not quarantined under its URI, each unit's version list under its
/// key, and the content channel's sources; with the manifest fact at `manifest_uri`, if
/// there is one, and its provenance; without `at_ms`, not the files of replaced pack
/// versions nor earlier manifests, which the live state never serves. With `at_ms`, as
/// they were then: the facts written by then (up to row `horizon`, when given) and the
/// packs current then ([`Db::snapshot_as_of`]).
fn agent_facts(c: &Connection, agent: &str, manifest_uri: &str, at_ms: Option<i64>, horizon: Option<i64>, attestor: &Attestor) -> DbResult<AgentFacts> {
    let mut map = BTreeMap::new();
    let mut versions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut manifest_json = None;
    let mut provenance = Value::Null;
    // Quarantined (and promoted-from) rows never reach the engine (Spec-13).
    let mut st = c.prepare_cached(
        "SELECT uri, unit_key, version, content, interpret_as, valid_until, authored_by, authored_at, source_trust,
                derived_from, tokens, sha256, provenance, unit_name, attestation_chain, rowid
         FROM instruction_facts WHERE agent_id = ?1 AND quarantine IS NULL AND (?2 IS NULL OR created_at <= ?2) AND (?3 IS NULL OR rowid <= ?3)
           AND (?4 IS NOT NULL OR valid_until IS NULL OR uri = ?5 OR NOT (uri LIKE 'knowledge:%' OR unit_name = 'manifest'))
         ORDER BY rowid",
    )?;
    let mut content_units = std::collections::BTreeSet::new();
    let mut unattested = Vec::new();
    // The live state leaves out what it can never serve (a soak audit: an agent's key grew
    // memory by re-uploading a pack): the files of its packs' replaced versions and its
    // earlier manifests. A state as of a time (a replay) keeps them.
    let mut rows = st.query(params![agent, at_ms, horizon, at_ms, manifest_uri])?;
    let mut newest = 0;
    while let Some(r) = rows.next()? {
        let uri: String = r.get(0)?;
        newest = r.get(15)?;
        // A row whose columns no longer hold what the service wrote (another type, text
        // that is not UTF-8: changed outside it) is one unattested fact, not an agent that
        // cannot be read. Text stored as a blob of the same bytes still reads as its text.
        let read = || -> rusqlite::Result<_> {
            let signed = (text(r, 1)?, text(r, 2)?, text(r, 3)?, text(r, 4)?, text(r, 6)?, text(r, 7)?, r.get::<_, f64>(8)?, r.get::<_, i64>(10)?, text(r, 11)?);
            Ok((signed, (opt_text(r, 5)?, opt_text(r, 9)?, opt_text(r, 12)?, opt_text(r, 14)?)))
        };
        let Ok(((unit_key, version, content, interpret_as, authored_by, authored_at, source_trust, tokens, sha256), (valid_until, derived_from, prov, chain))) = read() else {
            unattested.push((uri, Unattested::Malformed("a column of the fact's row no longer holds what the service wrote (another type, or text that is not UTF-8)".into())));
            continue;
        };
        // §21.4.3: a fact the org key did not sign, or whose signed fields changed since,
        // is never served (the caller quarantines it).
        let signed = Signed { uri: &uri, version: &version, interpret_as: &interpret_as, content: &content, authored_by: &authored_by, authored_at: &authored_at, source_trust, tokens, sha256: Some(&sha256) };
        if let Err(why) = attestor.verify(&signed, chain.as_deref()) {
            unattested.push((uri, why));
            continue;
        }
        if uri == manifest_uri {
            manifest_json = Some(content.clone());
            provenance = prov.as_deref().and_then(|p| serde_json::from_str(p).ok()).unwrap_or(Value::Null);
        }
        if interpret_as == "content" && uri.starts_with("instruction:") {
            content_units.insert(unit_key.clone());
        }
        let fact = EngineFact {
            uri: &uri,
            content: &content,
            version: &version,
            interpret_as: &interpret_as,
            valid_until: valid_until.as_deref(),
            authored_by: &authored_by,
            authored_at: &authored_at,
            source_trust,
            derived_from: derived_from.as_deref(),
            tokens,
            sha256: &sha256,
        }
        .to_json();
        versions.entry(unit_key).or_default().push(version);
        map.insert(uri, fact);
    }
    for (k, vs) in versions {
        map.insert(k, serde_json::to_vec(&vs).map_err(|e| DbError::Corrupt(e.to_string()))?);
    }
    // The recall content channel's sources (Spec-13): content units and current packs.
    let mut packs = Vec::new();
    let mut pst = c.prepare_cached(
        "SELECT pack, version, prefix, files, digest FROM knowledge_packs WHERE agent_id = ?1
         AND CASE WHEN ?2 IS NULL THEN superseded_at IS NULL ELSE created_at <= ?2 AND (superseded_at IS NULL OR superseded_at > ?2) END ORDER BY pack",
    )?;
    let mut prow = pst.query(params![agent, at_ms])?;
    while let Some(r) = prow.next()? {
        let files: Value = serde_json::from_str(&r.get::<_, String>(3)?).map_err(|e| DbError::Corrupt(format!("knowledge_packs.files: {e}")))?;
        packs.push(json!({"id": r.get::<_, String>(0)?, "version": r.get::<_, String>(1)?, "prefix": r.get::<_, String>(2)?, "files": files, "digest": r.get::<_, String>(4)?}));
    }
    if !content_units.is_empty() || !packs.is_empty() {
        map.insert(format!("{CONTENT_SOURCES_PREFIX}{agent}"), json!({"facts": content_units, "packs": packs}).to_string().into_bytes());
    }
    Ok(AgentFacts { map, manifest_json, provenance, unattested, horizon: newest })
}

/// What [`agent_facts`] read.
struct AgentFacts {
    map: BTreeMap<String, Vec<u8>>,
    /// Facts left out for their attestation, to be quarantined.
    unattested: Vec<(String, Unattested)>,
    /// The manifest fact's text, when it was among the facts.
    manifest_json: Option<String>,
    /// The manifest fact's provenance (`Null` without it).
    provenance: Value,
    /// The newest fact row read (writers commit one at a time, so the rows up to it are
    /// exactly the facts read, and a replay cuts there: [`Db::snapshot_as_of`]).
    horizon: i64,
}

/// The facts bucket of one snapshot: the agent's own facts only (§21.4.5), plus the
/// shared cache of derived blobs.
pub struct SnapshotFacts {
    map: BTreeMap<String, Vec<u8>>,
    db: Arc<Db>,
    /// Whether a recall over this snapshot has run since the engine last cached
    /// something it derived (an index it built): the service's recalls run on the
    /// recall slots only then ([`crate::engine::Runtime::recall_preparing`]).
    prepared: std::sync::atomic::AtomicBool,
}

impl SnapshotFacts {
    /// A knowledge pack's facts before they are written, and the content listing naming
    /// that pack alone, over the database's derived-data cache: what an upload builds the
    /// pack's index from before it writes anything (`Service::upload_knowledge`), so that
    /// recalls find the index cached under its digest and never build it themselves.
    /// `pack`: the pack as the content listing names it (`{"id","version","prefix","files","digest"}`).
    pub fn staged_pack(db: Arc<Db>, agent: &str, facts: &[NewFact], pack: Value) -> SnapshotFacts {
        let mut map = BTreeMap::new();
        for f in facts {
            let sha256 = f.sha256();
            let fact = EngineFact {
                uri: &f.uri,
                content: &f.content,
                version: &f.version,
                interpret_as: &f.interpret_as,
                valid_until: None,
                authored_by: &f.authored_by,
                authored_at: &f.authored_at,
                source_trust: f.source_trust,
                derived_from: None,
                tokens: f.tokens,
                sha256: &sha256,
            };
            map.insert(f.uri.clone(), fact.to_json());
        }
        map.insert(format!("{CONTENT_SOURCES_PREFIX}{agent}"), json!({"facts": [], "packs": [pack]}).to_string().into_bytes());
        SnapshotFacts { map, db, prepared: Default::default() }
    }

    /// Facts plus `extra` (staged, not yet committed) entries: what a publish validates against.
    pub fn overlay(&self, extra: BTreeMap<String, Vec<u8>>) -> SnapshotFacts {
        let mut map = self.map.clone();
        map.extend(extra);
        SnapshotFacts { map, db: self.db.clone(), prepared: Default::default() }
    }

    pub fn raw(&self, key: &str) -> Option<&Vec<u8>> {
        self.map.get(key)
    }

    /// See the `prepared` field.
    pub fn prepared(&self) -> bool {
        self.prepared.load(Ordering::Acquire)
    }

    /// A recall over this snapshot ended: what it needed is cached now.
    pub fn mark_prepared(&self) {
        self.prepared.store(true, Ordering::Release);
    }
}

impl FactSource for SnapshotFacts {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        Ok(self.get_shared(key)?.map(Arc::unwrap_or_clone))
    }
    fn get_shared(&self, key: &str) -> Result<Option<crate::engine::Blob>, String> {
        if key.starts_with(DERIVED_PREFIX) {
            return self.db.derived_get(key);
        }
        Ok(self.map.get(key).cloned().map(Arc::new))
    }
    fn keys(&self) -> Result<Vec<String>, String> {
        Ok(self.map.keys().cloned().collect())
    }
    fn set_derived(&self, key: &str, value: Vec<u8>) -> Result<(), String> {
        self.prepared.store(false, Ordering::Release);
        self.db.derived_set(key, value)
    }
}

/// A fact as the component reads it from the `wasi:keyvalue` bucket (the JSON shape
/// documented in `wit/lid.wit`).
#[derive(serde::Serialize)]
struct EngineFact<'a> {
    uri: &'a str,
    content: &'a str,
    version: &'a str,
    interpret_as: &'a str,
    valid_until: Option<&'a str>,
    authored_by: &'a str,
    authored_at: &'a str,
    source_trust: f64,
    derived_from: Option<&'a str>,
    tokens: i64,
    sha256: &'a str,
}

impl EngineFact<'_> {
    fn to_json(&self) -> Vec<u8> {
        // Plain strings and numbers: serialisation cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// A fact row to insert (one version of a unit, or a manifest).
#[derive(Debug, Clone)]
pub struct NewFact {
    pub uri: String,
    pub unit_key: String,
    pub agent_id: String,
    pub unit_name: String,
    pub version: String,
    pub content: String,
    pub interpret_as: String,
    pub tokens: i64,
    pub authored_by: String,
    pub authored_at: String,
    pub source_trust: f64,
    pub provenance: Value,
}

impl NewFact {
    /// The fields the org key signs.
    pub fn signed(&self) -> Signed<'_> {
        Signed {
            uri: &self.uri,
            version: &self.version,
            interpret_as: &self.interpret_as,
            content: &self.content,
            authored_by: &self.authored_by,
            authored_at: &self.authored_at,
            source_trust: self.source_trust,
            tokens: self.tokens,
            sha256: None,
        }
    }

    pub fn sha256(&self) -> String {
        sha256_hex(self.content.as_bytes())
    }

    /// The JSON the engine reads for this fact once stored (as [`Db::snapshot`] serves it).
    pub fn engine_json(&self, derived_from: Option<&str>) -> Vec<u8> {
        EngineFact {
            uri: &self.uri,
            content: &self.content,
            version: &self.version,
            interpret_as: &self.interpret_as,
            valid_until: None,
            authored_by: &self.authored_by,
            authored_at: &self.authored_at,
            source_trust: self.source_trust,
            derived_from,
            tokens: self.tokens,
            sha256: &self.sha256(),
        }
        .to_json()
    }
}

/// What inserting a fact did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FactWrite {
    Inserted,
    /// The same URI already holds the same content (an idempotent re-publish).
    Unchanged,
}

/// Insert one immutable fact version inside `tx`: the previous version of the unit gets
/// `valid_until` = this version's time and is named in `derived_from` (§21.4.2–3).
/// A URI that exists with other content is a conflict (`Err(existing sha256)`).
/// The fact carries the signature of the org key the store records (§21.4.3,
/// [`Attestor::for_write`]).
pub fn insert_fact(tx: &Transaction, f: &NewFact, now: i64, attestor: &Attestor) -> DbResult<Result<FactWrite, String>> {
    let sha = f.sha256();
    let existing: Option<String> = tx.query_row("SELECT sha256 FROM instruction_facts WHERE uri = ?1", params![f.uri], |r| r.get(0)).optional()?;
    if let Some(h) = existing {
        return Ok(if h == sha { Ok(FactWrite::Unchanged) } else { Err(h) });
    }
    let prev: Option<(String, String)> = tx
        .query_row(
            "SELECT uri, sha256 FROM instruction_facts WHERE unit_key = ?1 AND valid_until IS NULL ORDER BY created_at DESC, rowid DESC LIMIT 1",
            params![f.unit_key],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let when = iso(now);
    if let Some((prev_uri, _)) = &prev {
        tx.execute("UPDATE instruction_facts SET valid_until = ?1 WHERE uri = ?2", params![when, prev_uri])?;
    }
    tx.execute(
        "INSERT INTO instruction_facts (uri, unit_key, agent_id, unit_name, version, content, interpret_as, sha256, tokens,
            authored_by, authored_at, source_trust, derived_from, valid_until, provenance, created_at, attestation_chain)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, NULL, ?14, ?15, ?16)",
        params![
            f.uri, f.unit_key, f.agent_id, f.unit_name, f.version, f.content, f.interpret_as, sha, f.tokens,
            f.authored_by, f.authored_at, f.source_trust, prev.as_ref().map(|p| p.1.clone()), f.provenance.to_string(), now,
            attestor.for_write(tx)?.sign(&f.signed())
        ],
    )?;
    Ok(Ok(FactWrite::Inserted))
}

/// The newest servable fact row among the units a publish reviews
/// ([`lid_shared::publish::REVIEWED_HORIZON_SQL`]; `key` is its `reviewed_key`).
pub fn reviewed_horizon(c: &rusqlite::Connection, key: &str) -> DbResult<String> {
    Ok(c.query_row(lid_shared::publish::REVIEWED_HORIZON_SQL, params![key], |r| r.get(0))?)
}

/// What a write for `agent` is checked against ([`lid_shared::units::WRITE_BASIS_SQL`]).
pub fn write_basis(c: &rusqlite::Connection, agent: &str) -> DbResult<Option<String>> {
    Ok(c.query_row(lid_shared::units::WRITE_BASIS_SQL, params![agent], |r| r.get(0))?)
}

/// The id of `agent`'s current `instruction_manifests` row, if it has one.
pub fn current_manifest_id(c: &rusqlite::Connection, agent: &str) -> DbResult<Option<String>> {
    Ok(c.query_row(lid_shared::publish::CURRENT_MANIFEST_ID_SQL, params![agent], |r| r.get(0)).optional()?)
}

/// A unit's latest fact (the one no later version has superseded).
pub fn latest_in(c: &rusqlite::Connection, unit_key: &str) -> DbResult<Option<lid_shared::units::Latest>> {
    Ok(c
        .query_row(lid_shared::units::LATEST_SQL, params![unit_key], |r| {
            Ok(lid_shared::units::Latest { uri: r.get(0)?, version: r.get(1)?, interpret_as: r.get(2)?, sha256: r.get(3)?, authored_by: r.get(4)?, quarantined: r.get(5)? })
        })
        .optional()?)
}

/// Whether a fact is stored at exactly `uri`.
pub fn fact_exists(c: &rusqlite::Connection, uri: &str) -> DbResult<bool> {
    Ok(c.query_row("SELECT 1 FROM instruction_facts WHERE uri = ?1", params![uri], |_| Ok(())).optional()?.is_some())
}

/// Insert a service event (coverage bypass, capability failure, …).
pub fn insert_event(tx: &Transaction, agent: Option<&str>, kind: &str, detail: &Value, now: i64) -> DbResult<String> {
    let id = format!("evt_{}", random_hex(12));
    tx.execute(
        "INSERT INTO service_events (id, agent_id, kind, detail, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, agent, kind, detail.to_string(), now],
    )?;
    Ok(id)
}

pub use lid_shared::audit::AuditRow;

/// Insert one audit row (and its meta) inside the open transaction on `c`.
fn insert_audit(c: &Connection, r: &AuditRow) -> DbResult<()> {
    c.prepare_cached(lid_shared::audit::INSERT_AUDIT_SQL)?
    .execute(params![
        r.id, r.agent_id, r.heartbeat_id, r.session_start, r.intent, json!(r.loaded_chunks).to_string(),
        json!(r.used_chunks).to_string(), json!(r.missed_chunks).to_string(), r.audit_token, r.created_at
    ])?;
    c.prepare_cached(lid_shared::audit::INSERT_AUDIT_META_SQL)?
    .execute(params![
        r.id, if r.source.is_empty() { "recall_instruction" } else { r.source.as_str() }, r.manifest_version, json!(r.content_served).to_string(),
        json!(r.chunk_sha256).to_string(), r.assembly_sha256, r.request.as_ref().filter(|q| q.is_object()).map(Value::to_string),
        json!(r.warnings).to_string(), r.error.as_ref().map(Value::to_string), r.caller, r.corpus_key
    ])?;
    Ok(())
}

/// The group-commit loop: wait for a row, take every row queued behind it (up to
/// [`AUDIT_BATCH_MAX`]), commit them in one transaction, then report each outcome.
/// Ends when the database is dropped (its queue's sender goes with it).
fn audit_writer(db: Weak<Db>, rx: mpsc::Receiver<AuditJob>) {
    let linger = audit_linger();
    // Rows in the previous group commit: more than one means requests are arriving
    // faster than commits end, so the next commit waits a little to take more of them.
    let mut last_batch = 0usize;
    while let Ok(first) = rx.recv() {
        let mut jobs = vec![first];
        let take = |jobs: &mut Vec<AuditJob>| {
            while jobs.len() < AUDIT_BATCH_MAX {
                match rx.try_recv() {
                    Ok(j) => jobs.push(j),
                    Err(_) => break,
                }
            }
        };
        take(&mut jobs);
        if last_batch > 1 && jobs.len() < AUDIT_BATCH_MAX && !linger.is_zero() {
            // Sleeping (not blocked on the queue) lets senders enqueue without waking
            // this thread; one commit of many rows costs little more than one of one.
            std::thread::sleep(linger);
            take(&mut jobs);
        }
        last_batch = jobs.len();
        let results = match db.upgrade() {
            Some(db) => db.commit_audit(&jobs),
            None => jobs.iter().map(|_| Err("the database was closed before the audit row was written".to_string())).collect(),
        };
        for (job, r) in jobs.into_iter().zip(results) {
            (job.reply)(r);
        }
    }
}

impl Db {
    /// Commit `jobs`' rows in one transaction; when that fails, each row in its own, so
    /// one bad row (or a refusing table) fails only the rows it concerns.
    fn commit_audit(&self, jobs: &[AuditJob]) -> Vec<Result<(), String>> {
        let Ok(mut w) = self.writer.lock() else {
            return jobs.iter().map(|_| Err(DbError::Poisoned.to_string())).collect();
        };
        let all = (|| -> DbResult<()> {
            let tx = w.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            for j in jobs {
                insert_audit(&tx, &j.row)?;
            }
            Ok(tx.commit()?)
        })();
        match all {
            Ok(()) => return jobs.iter().map(|_| Ok(())).collect(),
            Err(e) if jobs.len() == 1 => return vec![Err(e.to_string())],
            Err(_) => {}
        }
        jobs.iter()
            .map(|j| {
                (|| -> DbResult<()> {
                    let tx = w.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                    insert_audit(&tx, &j.row)?;
                    Ok(tx.commit()?)
                })()
                .map_err(|e| e.to_string())
            })
            .collect()
    }

    /// Queue one engine audit record (a JSON line) for the group-commit writer; `reply`
    /// gets the outcome once its transaction ended. A line that is not an audit record
    /// is refused at once.
    pub fn queue_audit(self: &Arc<Self>, line: &str, reply: AuditReply) -> Result<(), String> {
        let row: AuditRow = serde_json::from_str(line).map_err(|e| format!("audit record is not valid JSON: {e}"))?;
        let queue = self.audit_queue.get_or_init(|| {
            let (tx, rx) = mpsc::channel();
            let db = Arc::downgrade(self);
            if let Err(e) = std::thread::Builder::new().name("lid-audit".into()).spawn(move || audit_writer(db, rx)) {
                tracing::error!(error = %e, "cannot start the audit writer thread");
            }
            tx
        });
        queue.send(AuditJob { row, reply }).map_err(|_| "the audit writer is not running".to_string())
    }

    /// Append one engine audit record (a JSON line) to `instruction_audit`: queued for
    /// the group commit; returns once it is committed (or failed).
    pub fn append_audit(self: &Arc<Self>, line: &str) -> Result<(), String> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.queue_audit(line, Box::new(move |r| {
            let _ = tx.send(r);
        }))?;
        rx.recv().unwrap_or_else(|_| Err("the audit writer stopped before writing the row".to_string()))
    }

    /// One audit record by its `audevent_…` id or `audi_…` token, with what replay needs:
    /// `{id, agent_id, loaded_chunks, chunk_sha256, assembly_sha256, request, created_at,
    /// session_start, manifest_version}`.
    pub fn audit_record(&self, id: &str) -> DbResult<Option<Value>> {
        self.read(|c| {
            let mut st = c.prepare_cached(
                "SELECT a.id, a.agent_id, a.loaded_chunks, coalesce(m.chunk_sha256, '[]'), coalesce(m.assembly_sha256, ''), m.request,
                        a.created_at, a.session_start, coalesce(m.manifest_version, ''), coalesce(m.corpus_key, '')
                 FROM instruction_audit a LEFT JOIN instruction_audit_meta m ON m.id = a.id
                 WHERE a.id = ?1 OR a.audit_token = ?1 LIMIT 1",
            )?;
            let json = |s: String| serde_json::from_str::<Value>(&s).unwrap_or(Value::Null);
            Ok(st
                .query_row(params![id], |r| {
                    Ok(json!({
                        "id": r.get::<_, String>(0)?, "agent_id": r.get::<_, String>(1)?, "loaded_chunks": json(r.get(2)?),
                        "chunk_sha256": json(r.get(3)?), "assembly_sha256": r.get::<_, String>(4)?,
                        "request": r.get::<_, Option<String>>(5)?.map(json).unwrap_or(Value::Null),
                        "created_at": r.get::<_, i64>(6)?, "session_start": r.get::<_, i64>(7)?, "manifest_version": r.get::<_, String>(8)?,
                        "corpus_key": r.get::<_, String>(9)?,
                    }))
                })
                .optional()?)
        })
    }

    /// The audit rows of `agent` created at or after `since_ms` that a window's figures
    /// are computed over, oldest first, and whether older ones were left out
    /// ([`lid_shared::audit::window`]).
    pub fn audit_rows(&self, agent: &str, since_ms: i64) -> DbResult<(Vec<AuditRow>, bool)> {
        self.read(|c| {
            let mut st = c.prepare_cached(lid_shared::audit::WINDOW_ROWS_SQL)?;
            let rows = st.query_map(params![agent, since_ms, lid_shared::audit::WINDOW_ROWS_MAX as i64 + 1], |r| {
                let list = |i: usize| -> rusqlite::Result<Vec<String>> { Ok(serde_json::from_str(&r.get::<_, String>(i)?).unwrap_or_default()) };
                Ok(AuditRow {
                    id: r.get(0)?,
                    agent_id: r.get(1)?,
                    heartbeat_id: r.get(2)?,
                    session_start: r.get(3)?,
                    intent: r.get(4)?,
                    loaded_chunks: list(5)?,
                    used_chunks: list(6)?,
                    missed_chunks: list(7)?,
                    audit_token: r.get(8)?,
                    audit_closed: r.get(9)?,
                    created_at: r.get(10)?,
                    source: r.get(11)?,
                    manifest_version: r.get(12)?,
                    caller: r.get(13)?,
                    corpus_key: String::new(),
                    content_served: vec![],
                    chunk_sha256: vec![],
                    assembly_sha256: String::new(),
                    request: None,
                    warnings: vec![],
                    error: None,
                })
            })?;
            Ok(lid_shared::audit::window(rows.collect::<Result<Vec<_>, _>>()?))
        })
    }
}

fn log_audit_failure(e: &str) {
    tracing::error!(code = "audit_write_failed", error = %e, "audit_write_failed: the recall was answered but its audit record was not stored");
}

/// The engine's audit port over the database: each append waits for its commit.
pub struct DbAudit(pub Arc<Db>);

impl crate::engine::AuditLog for DbAudit {
    fn append(&self, line: &str) -> Result<(), String> {
        let r = self.0.append_audit(line);
        if let Err(e) = &r {
            log_audit_failure(e);
        }
        r
    }
}

/// The engine's audit port for async routes: appends are queued and the engine call
/// returns without waiting; the route then awaits [`DeferredAudit::committed`] before it
/// answers, so the audit row is still written before the response returns (§21.3.4),
/// without holding a runtime thread while the group commit runs.
pub struct DeferredAudit {
    db: Arc<Db>,
    pending: Mutex<Vec<tokio::sync::oneshot::Receiver<Result<(), String>>>>,
}

impl DeferredAudit {
    pub fn new(db: Arc<Db>) -> Self {
        DeferredAudit { db, pending: Mutex::new(Vec::new()) }
    }

    /// Wait until every queued row is committed; the first failure (already logged as
    /// `audit_write_failed`) is returned.
    pub async fn committed(&self) -> Result<(), String> {
        let pending = std::mem::take(&mut *self.pending.lock().map_err(|_| DbError::Poisoned.to_string())?);
        let mut first_err = None;
        for rx in pending {
            let r = rx.await.unwrap_or_else(|_| Err("the audit writer stopped before writing the row".to_string()));
            if let Err(e) = r {
                log_audit_failure(&e);
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

impl crate::engine::AuditLog for DeferredAudit {
    fn append(&self, line: &str) -> Result<(), String> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let queued = self.db.queue_audit(line, Box::new(move |r| {
            let _ = tx.send(r);
        }));
        match queued {
            Ok(()) => {
                self.pending.lock().map_err(|_| DbError::Poisoned.to_string())?.push(rx);
                Ok(())
            }
            Err(e) => {
                log_audit_failure(&e);
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key write killed between its temporary file and its link leaves a private key
    /// behind: the next open removes such files once they are a minute old, and leaves a
    /// newer one (another process's write may be under way) and unrelated files alone.
    #[test]
    fn a_new_database_is_private_and_opening_removes_key_copies_a_killed_write_left() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("lid.db");
        let key = org_key_path(&db);
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let file = |name: &str, modified: Option<std::time::SystemTime>| {
            let p = dir.path().join(name);
            let f = std::fs::File::create(&p).unwrap();
            if let Some(t) = modified {
                f.set_modified(t).unwrap();
            }
            p
        };
        let stale = [file("lid.db.org-key.tmp-0a1b2c", Some(old)), file("lid.db.org-key.next.tmp-3d4e5f", Some(old))];
        let kept = [file("lid.db.org-key.tmp-777777", None), file("other.db.org-key.tmp-0a1b2c", Some(old)), file("lid.db.org-key.tmpfile", Some(old))];
        let open = Db::open(&db).unwrap();
        assert!(key.exists());
        // (a new database is its owner's alone, as its key is)
        #[cfg(unix)]
        for p in [db.clone(), key.clone(), db.with_extension("db-wal")] {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600, "{}", p.display());
        }
        drop(open);
        for p in &stale {
            assert!(!p.exists(), "{} was left", p.display());
        }
        for p in &kept {
            assert!(p.exists(), "{} was removed", p.display());
        }
    }

    /// A fact of `agent`'s unit `name` at `uri` (its unit key and version read from it).
    fn test_fact(uri: &str, agent: &str, name: &str, interpret_as: &str) -> NewFact {
        NewFact {
            uri: uri.into(),
            unit_key: uri.rsplit_once('/').map(|(k, _)| k.to_string()).unwrap(),
            agent_id: agent.into(),
            unit_name: name.into(),
            version: uri.rsplit('/').next().unwrap().into(),
            content: format!("text of {uri}"),
            interpret_as: interpret_as.into(),
            tokens: 3,
            authored_by: "admin:test".into(),
            authored_at: iso(1000),
            source_trust: 1.0,
            provenance: json!({}),
        }
    }

    /// The live state holds no file of a pack's replaced version and no earlier manifest
    /// (a soak audit: each re-upload of a pack kept its files in memory for good); a state
    /// as of a time keeps them, and a unit's earlier versions stay in both.
    #[test]
    fn the_live_state_leaves_out_replaced_pack_files_and_earlier_manifests() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("lid.db")).unwrap();
        let fact = |uri: &str, name: &str| test_fact(uri, "a", name, "content");
        let mut facts = vec![fact("instruction:d/a/manifest/v1", "manifest"), fact("instruction:d/a/manifest/v2", "manifest"), fact("instruction:d/a/rules/v1", "rules"), fact("instruction:d/a/rules/v2", "rules")];
        // a pack's file: `{prefix}{path}` under the unit key `knowledge:…/{pack}/{path}`
        for v in ["v1", "v2"] {
            let mut f = fact(&format!("knowledge:d/a/p/{v}/x.md"), "p/x.md");
            (f.unit_key, f.version) = ("knowledge:d/a/p/x.md".into(), v.into());
            facts.push(f);
        }
        db.write(|tx| {
            for (i, f) in facts.iter().enumerate() {
                assert_eq!(insert_fact(tx, f, 1000 + i as i64, db.attestor())?, Ok(FactWrite::Inserted));
            }
            Ok::<_, DbError>(())
        })
        .unwrap();
        let uris = |manifest: &str, at: Option<i64>| -> Vec<String> {
            let read = db.read(|c| agent_facts(c, "a", manifest, at, None, &db.attestor)).unwrap();
            read.map.keys().filter(|k| facts.iter().any(|f| f.uri == **k)).cloned().collect()
        };
        assert_eq!(uris("", None), ["instruction:d/a/manifest/v2", "instruction:d/a/rules/v1", "instruction:d/a/rules/v2", "knowledge:d/a/p/v2/x.md"]);
        // the manifest a snapshot is of is read, whichever it is
        assert!(uris("instruction:d/a/manifest/v1", None).contains(&"instruction:d/a/manifest/v1".to_string()));
        assert_eq!(uris("", Some(i64::MAX)).len(), 6);
    }

    /// A publish's reviewed horizon (`lid_shared::publish::REVIEWED_HORIZON_SQL`) moves
    /// with a write to a unit the new manifest reviews (`guarantee_load`, `force_position:
    /// "prepend"`, `always_applicable`), and not with a write to any other unit, of this
    /// agent or another: continuous writes to ordinary units never starve a publish.
    #[test]
    fn the_reviewed_horizon_moves_only_with_the_units_a_publish_reviews() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("lid.db")).unwrap();
        let body = json!({"manifest_version": "v2", "entries": [
            {"name": "rules", "guarantee_load": true},
            {"name": "first", "force_position": "prepend"},
            {"name": "style", "always_applicable": true},
            {"name": "notes", "guarantee_load": false},
        ]});
        let req = lid_shared::publish::PublishRequest::read("a", &body).unwrap();
        let key = req.reviewed_key("a");
        assert_eq!(key, r#"{"agent":"a","units":["first","rules","style"]}"#);
        let write = |agent: &str, name: &str, v: &str| {
            let f = test_fact(&format!("instruction:d/{agent}/{name}/{v}"), agent, name, "instruction");
            db.write(|tx| insert_fact(tx, &f, 1000, db.attestor())).unwrap().unwrap();
        };
        let horizon = || db.read(|c| reviewed_horizon(c, &key)).unwrap();
        assert_eq!(horizon(), "0");
        write("a", "notes", "v1");
        write("b", "rules", "v1");
        assert_eq!(horizon(), "0", "a plain unit of the agent, and another agent's unit, leave it");
        for (name, v) in [("rules", "v1"), ("first", "v1"), ("style", "v1")] {
            let before = horizon();
            write("a", name, v);
            assert_ne!(horizon(), before, "a write to {name} moves it");
        }
        let before = horizon();
        write("a", "notes", "v2");
        assert_eq!(horizon(), before);
    }

    /// A derived blob read since the last prune is kept and marked used then; one nobody
    /// read for the time kept is deleted from the table (README, "Retention"), and asked
    /// for again it is missing (the engine derives it again), while one still in memory
    /// keeps serving.
    #[test]
    fn pruning_keeps_the_derived_blobs_recalls_read_and_deletes_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("lid.db")).unwrap();
        let t0 = now_ms();
        for k in ["lid-index:v8:read", "lid-index:v8:unread"] {
            db.derived_set(k, k.as_bytes().to_vec()).unwrap();
        }
        let rows = || -> Vec<(String, Option<i64>)> {
            db.read(|c| {
                let mut st = c.prepare("SELECT key, used_at FROM derived_blobs ORDER BY key")?;
                let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
                Ok(rows.collect::<Result<Vec<_>, _>>()?)
            })
            .unwrap()
        };
        // nothing is old enough yet: both stay
        assert_eq!(db.prune_derived(t0 + 1_000, 3_600_000).unwrap(), (0, 0));
        assert_eq!(rows().len(), 2);
        assert!(db.derived_get("lid-index:v8:read").unwrap().is_some());
        // an hour and more later: the one read is marked used then and kept
        let later = t0 + 3_600_000 + 5_000;
        assert_eq!(db.prune_derived(later, 3_600_000).unwrap(), (1, 1));
        assert_eq!(rows(), vec![("lid-index:v8:read".to_string(), Some(later))]);
        // read again from the table when memory no longer has it; the deleted one is gone
        // from the table (memory may still serve it until it is evicted)
        db.derived.write().unwrap().map.clear();
        assert_eq!(db.derived_get("lid-index:v8:read").unwrap().as_deref().map(Vec::as_slice), Some(&b"lid-index:v8:read"[..]));
        assert_eq!(db.derived_get("lid-index:v8:unread").unwrap(), None);
        // and with nothing read since, the next prune past the time kept deletes it too
        db.derived_read.lock().unwrap().clear();
        assert_eq!(db.prune_derived(later + 3_600_001, 3_600_000).unwrap(), (0, 1));
        assert!(rows().is_empty());
    }

    /// The agents' snapshots are held to a budget of their bytes, the least recently
    /// called agent's dropped first (a soak audit: one per agent, never dropped).
    #[test]
    fn the_snapshot_cache_keeps_to_its_budget() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("lid.db")).unwrap();
        let snap = |agent: &str, bytes: usize| -> Checked {
            let facts = Arc::new(SnapshotFacts { map: BTreeMap::new(), db: db.clone(), prepared: Default::default() });
            let s = Snapshot { agent_id: agent.into(), manifest_id: "m".into(), generation: 1, fact_horizon: 1, bytes, version: "v1".into(), fact_uri: String::new(), token_count: 0, created_at: 0, manifest_json: String::new(), provenance: Value::Null, lift_units: vec![], facts, stubs: Default::default() };
            (None, Arc::new(s))
        };
        let mut c: ByteCache<Checked> = ByteCache::new(100);
        c.insert("a", snap("a", 60));
        c.insert("b", snap("b", 30));
        assert!(c.get("a").is_some(), "a is called after b was put");
        c.insert("c", snap("c", 30));
        // 120 bytes over a budget of 100: b, the least recently called, goes
        assert_eq!((c.get("a").map(|s| s.1.agent_id.clone()), c.get("b").is_none(), c.bytes), (Some("a".to_string()), true, 90));
        // a head checked again changes the entry in place, not its weight
        let stamp = c.get_mut("c").map(|e| e.0.take());
        assert_eq!((stamp, c.bytes), (Some(None), 90));
    }

    #[test]
    fn the_derived_cache_keeps_to_its_budget_dropping_the_least_recently_used() {
        let blob = |n: usize| Arc::new(vec![0u8; n]);
        let mut c = DerivedCache::new(100);
        c.insert("a", blob(40));
        c.insert("b", blob(40));
        assert!(c.get("a").is_some(), "a is used after b was put");
        c.insert("c", blob(40));
        // 120 bytes over a budget of 100: b, the least recently used, goes
        assert_eq!((c.get("a").map(|v| v.len()), c.get("b"), c.get("c").map(|v| v.len())), (Some(40), None, Some(40)));
        assert_eq!(c.bytes, 80);
        // the same key again replaces its bytes, not adds them
        c.insert("a", blob(10));
        assert_eq!(c.bytes, 50);
        // a blob larger than the whole budget is kept (the newest always stays), alone
        c.insert("huge", blob(500));
        assert_eq!((c.map.len(), c.bytes), (1, 500));
        assert!(c.get("huge").is_some());
    }
}
