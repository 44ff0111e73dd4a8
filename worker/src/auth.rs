//! Who may do what on the worker (§21.4.4–5, S9, Spec-13), as `lid serve` decides it
//! (`host/src/auth.rs`): API keys stored hashed in D1 (`api_keys`), their capabilities,
//! supervision from the org manifest (`org_supervisors`), and the checks every route makes.
//!
//! The worker has no CLI to mint the first key: bootstrap admin keys come from the
//! `LID_ADMIN_KEYS` secret (`entity_uri=secret` pairs, comma separated), each with the
//! `admin`, `read` and `instruction:write` capabilities; more keys are created over HTTP.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::args;
use crate::error::{ApiError, ApiResult};
use crate::store::Store;
use crate::util::{now_ms, random_hex, sha256_hex};

pub use lid_shared::access::{KeyInfo, NewKey, Principal, Role, CAPABILITIES, CAP_ADMIN, CAP_INSTRUCTION_WRITE, CAP_READ};

/// A bootstrap admin key from the `LID_ADMIN_KEYS` secret.
#[derive(Debug, Clone)]
pub struct EnvKey {
    pub entity_uri: String,
    pub hash: String,
}

/// Parse `LID_ADMIN_KEYS`: `entity_uri=secret` (or a bare secret) per comma.
pub fn parse_env_keys(s: &str) -> Vec<EnvKey> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .enumerate()
        .map(|(i, p)| match p.rsplit_once('=') {
            Some((e, k)) if !e.trim().is_empty() => EnvKey { entity_uri: e.trim().to_string(), hash: sha256_hex(k.trim().as_bytes()) },
            _ => EnvKey { entity_uri: format!("admin:env{i}"), hash: sha256_hex(p.as_bytes()) },
        })
        .collect()
}

/// Agent ids are path segments of URIs and routes: `[A-Za-z0-9._-]`, 1–128 chars.
pub fn check_agent_id(a: &str) -> ApiResult<()> {
    Ok(lid_shared::ids::check_agent_id(a)?)
}

/// The SHA-256 of the bearer secret, or the 401 `api_key_required` error.
fn secret_hash(header: Option<&str>) -> ApiResult<String> {
    let Some(h) = header else {
        return Err(ApiError::new(401, "api_key_required", "send an API key as `Authorization: Bearer <key>` (the first admin keys are the worker's LID_ADMIN_KEYS secret; an admin creates more with POST /v1/keys)"));
    };
    let Some(secret) = lid_shared::access::bearer_secret(h) else {
        return Err(ApiError::new(401, "api_key_required", "the Authorization header must be `Bearer <key>`"));
    };
    Ok(sha256_hex(secret.as_bytes()))
}

fn env_principal(env_keys: &[EnvKey], hash: &str) -> Option<Principal> {
    env_keys.iter().find(|k| k.hash == hash).map(|k| Principal {
        key_id: format!("key_env_{}", &hash[..8]),
        role: Role::Admin,
        agent_id: None,
        capabilities: vec![CAP_ADMIN.into(), CAP_INSTRUCTION_WRITE.into(), CAP_READ.into()],
        entity_uri: k.entity_uri.clone(),
    })
}

const KEY_SQL: &str = "SELECT id, role, agent_id, capabilities, entity_uri FROM api_keys WHERE key_hash = ?1 AND revoked_at IS NULL";

#[derive(Deserialize)]
struct KeyRow {
    id: String,
    role: String,
    agent_id: Option<String>,
    capabilities: String,
    entity_uri: String,
}

fn row_principal(row: Option<KeyRow>) -> ApiResult<Principal> {
    let Some(r) = row else {
        return Err(ApiError::new(401, "api_key_invalid", "this API key is unknown or revoked"));
    };
    Ok(Principal { key_id: r.id, role: Role::from_stored(&r.role), agent_id: r.agent_id, capabilities: serde_json::from_str(&r.capabilities).unwrap_or_default(), entity_uri: r.entity_uri.trim().to_string() })
}

/// Resolve the `Authorization: Bearer …` header to a principal.
pub async fn authenticate(store: &Store, env_keys: &[EnvKey], header: Option<&str>) -> ApiResult<Principal> {
    let hash = secret_hash(header)?;
    if let Some(p) = env_principal(env_keys, &hash) {
        return Ok(p);
    }
    row_principal(store.first(KEY_SQL, args![hash]).await?)
}

/// [`authenticate`] and the agent's snapshot head ([`Store::head`]) in one D1 round trip
/// (the recall route's hot path).
pub async fn authenticate_with_head(store: &Store, env_keys: &[EnvKey], header: Option<&str>, agent: &str) -> ApiResult<(Principal, Option<(String, i64)>)> {
    let hash = secret_hash(header)?;
    let rs = store.db.batch(vec![store.stmt(KEY_SQL, args![hash])?, store.stmt(crate::store::HEAD_SQL, args![agent])?]).await?;
    if let Some(e) = rs.iter().find_map(|r| r.error()) {
        return Err(ApiError::storage(e));
    }
    let p = match env_principal(env_keys, &hash) {
        Some(p) => p,
        None => row_principal(rs.first().map(|r| r.results::<KeyRow>()).transpose()?.and_then(|v| v.into_iter().next()))?,
    };
    let head = rs.get(1).map(|r| r.results::<crate::store::Head>()).transpose().map_err(ApiError::backend)?.and_then(|v| v.into_iter().next());
    Ok((p, head.map(|h| (h.id, h.generation))))
}

/// Whether `supervisor` is a declared supervisor of `agent` in the org manifest.
pub async fn supervises(store: &Store, supervisor: &str, agent: &str) -> ApiResult<bool> {
    #[derive(Deserialize)]
    struct One {
        #[allow(dead_code)]
        one: i64,
    }
    Ok(store.first::<One>("SELECT 1 AS one FROM org_supervisors WHERE supervisor_id = ?1 AND agent_id = ?2", args![supervisor, agent]).await?.is_some())
}

/// §21.4.5 reads, the supervision lookup in D1 (the rest is [`Principal::read_check`]).
#[allow(async_fn_in_trait)] // the worker is single-threaded: no Send bound is wanted
pub trait ReadAccess {
    /// Read an agent's instructions: admin, the agent itself, or its declared supervisor.
    async fn require_read(&self, store: &Store, agent: &str) -> ApiResult<()>;
}

impl ReadAccess for Principal {
    async fn require_read(&self, store: &Store, agent: &str) -> ApiResult<()> {
        match self.read_check(agent)? {
            Some(me) if !supervises(store, me, agent).await? => Err(ApiError::scope_denied(agent)),
            _ => Ok(()),
        }
    }
}

/// Create a key; returns its info and the secret (shown once).
pub async fn create_key(store: &Store, k: &NewKey) -> ApiResult<(KeyInfo, String)> {
    let (info, secret) = k.mint(&random_hex(8), &random_hex(20), now_ms())?;
    store
        .run(
            "INSERT INTO api_keys (id, key_hash, role, agent_id, capabilities, entity_uri, label, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            args![info.id, sha256_hex(secret.as_bytes()), info.role, info.agent_id, json!(info.capabilities).to_string(), info.entity_uri, info.label, info.created_at],
        )
        .await?;
    Ok((info, secret))
}

pub async fn list_keys(store: &Store) -> ApiResult<Vec<KeyInfo>> {
    store.all("SELECT id, role, agent_id, capabilities, entity_uri, label, created_at, revoked_at FROM api_keys ORDER BY created_at, id", args![]).await
}

/// Revoke a key by id; `false` when there is no such live key.
pub async fn revoke_key(store: &Store, id: &str) -> ApiResult<bool> {
    Ok(store.run("UPDATE api_keys SET revoked_at = ?1 WHERE id = ?2 AND revoked_at IS NULL", args![now_ms(), id]).await? == 1)
}

/// Replace the org manifest's supervision pairs in one batch; returns how many.
pub async fn load_org_manifest(store: &Store, org: &Value) -> ApiResult<usize> {
    let pairs = lid_shared::ids::org_pairs(org)?;
    let mut stmts = vec![store.stmt("DELETE FROM org_supervisors", args![])?];
    for (s, a) in &pairs {
        stmts.push(store.stmt("INSERT OR IGNORE INTO org_supervisors (supervisor_id, agent_id) VALUES (?1, ?2)", args![s, a])?);
    }
    store.batch(stmts).await?;
    Ok(pairs.len())
}
