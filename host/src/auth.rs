//! Who may do what (§21.4.4–5, S9, Spec-13): API keys stored hashed, their capabilities,
//! declared supervision from the org manifest, and the checks every route makes.
//!
//! - An **admin** key (`admin`, `read`) reads every agent and publishes manifests.
//! - An **agent** key is bound to one agent and reads only that agent's stub, manifest,
//!   recall and coverage; a declared supervisor's key also reads its reports'.
//! - Writing instruction facts needs the `instruction:write` capability on top (Spec-13):
//!   admin authority alone is not enough.
//!
//! Secrets are `lid_{role}_{40 hex}`; only their SHA-256 is stored.

use std::sync::Arc;

use rusqlite::{params, OptionalExtension};
use serde_json::{json, Value};

use crate::apierror::ApiError;
use crate::db::{now_ms, random_hex, sha256_hex, Db, DbError, DbResult};

pub use lid_shared::access::{KeyInfo, NewKey, Principal, Role, CAPABILITIES, CAP_ADMIN, CAP_INSTRUCTION_WRITE, CAP_READ};

/// Create a key; returns its info and the secret (shown once).
pub fn create_key(db: &Db, k: &NewKey) -> Result<(KeyInfo, String), ApiError> {
    let (info, secret) = k.mint(&random_hex(8), &random_hex(20), now_ms())?;
    db.write(|tx| {
        tx.execute(
            "INSERT INTO api_keys (id, key_hash, role, agent_id, capabilities, entity_uri, label, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![info.id, sha256_hex(secret.as_bytes()), info.role, info.agent_id, json!(info.capabilities).to_string(), info.entity_uri, info.label, info.created_at],
        )?;
        Ok::<_, DbError>(())
    })?;
    Ok((info, secret))
}

pub fn list_keys(db: &Db) -> DbResult<Vec<KeyInfo>> {
    db.read(|c| {
        let mut st = c.prepare("SELECT id, role, agent_id, capabilities, entity_uri, label, created_at, revoked_at FROM api_keys ORDER BY created_at, id")?;
        let rows = st.query_map([], |r| {
            Ok(KeyInfo {
                id: r.get(0)?,
                role: r.get(1)?,
                agent_id: r.get(2)?,
                capabilities: serde_json::from_str(&r.get::<_, String>(3)?).unwrap_or_default(),
                entity_uri: r.get(4)?,
                label: r.get(5)?,
                created_at: r.get(6)?,
                revoked_at: r.get(7)?,
            })
        })?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    })
}

/// Revoke a key by id; `false` when there is no such live key.
pub fn revoke_key(db: &Db, id: &str) -> DbResult<bool> {
    db.write(|tx| Ok::<_, DbError>(tx.execute("UPDATE api_keys SET revoked_at = ?1 WHERE id = ?2 AND revoked_at IS NULL", params![now_ms(), id])? == 1))
}

/// Agent ids are path segments of URIs and routes: `[A-Za-z0-9._-]`, 1–128 chars.
pub fn check_agent_id(a: &str) -> Result<(), ApiError> {
    Ok(lid_shared::ids::check_agent_id(a)?)
}

/// Resolve the `Authorization: Bearer …` header to a principal.
pub fn authenticate(db: &Db, header: Option<&str>) -> Result<Principal, ApiError> {
    authenticate_at(db, header, db.stamp())
}

/// [`authenticate`] against a [`crate::db::Stamp`] the caller has just taken (a request
/// that also reads the agent's head checks both against one stamp).
pub fn authenticate_at(db: &Db, header: Option<&str>, stamp: Option<crate::db::Stamp>) -> Result<Principal, ApiError> {
    let Some(h) = header else {
        return Err(ApiError::new(401, "api_key_required", "send an API key as `Authorization: Bearer <key>` (create one with `lid keys create`)"));
    };
    let Some(secret) = lid_shared::access::bearer_secret(h) else {
        return Err(ApiError::new(401, "api_key_required", "the Authorization header must be `Bearer <key>`"));
    };
    let hash = sha256_hex(secret.as_bytes());
    // A key read at the current stamp is still what the table says: nothing committed
    // since, in this process or another (a revoke from `lid keys revoke` moves the stamp).
    if let Some(p) = stamp.and_then(|s| db.cached_principal(&hash, s)) {
        return Ok(p);
    }
    let row = db
        .read(|c| {
            let mut st = c.prepare_cached("SELECT id, role, agent_id, capabilities, entity_uri FROM api_keys WHERE key_hash = ?1 AND revoked_at IS NULL")?;
            Ok(st
                .query_row(params![hash], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, Option<String>>(2)?, r.get::<_, String>(3)?, r.get::<_, String>(4)?)))
                .optional()?)
        })
        .map_err(ApiError::storage)?;
    let Some((key_id, role, agent_id, caps, entity_uri)) = row else {
        return Err(ApiError::new(401, "api_key_invalid", "this API key is unknown or revoked"));
    };
    let p = Principal {
        key_id,
        role: if role == "admin" { Role::Admin } else { Role::Agent },
        agent_id,
        capabilities: serde_json::from_str(&caps).unwrap_or_default(),
        // as compared (S7), whatever an older release stored (`migrations/0012_trim_identities.sql`)
        entity_uri: entity_uri.trim().to_string(),
    };
    if let Some(s) = stamp {
        db.cache_principal(hash, s, p.clone());
    }
    Ok(p)
}

/// §21.4.5 reads, the supervision lookup in SQLite (the rest is [`Principal::read_check`]).
pub trait ReadAccess {
    /// Read an agent's instructions: admin, the agent itself, or its declared supervisor.
    fn require_read(&self, db: &Db, agent: &str) -> Result<(), ApiError>;
}

impl ReadAccess for Principal {
    fn require_read(&self, db: &Db, agent: &str) -> Result<(), ApiError> {
        match self.read_check(agent)? {
            Some(me) if !supervises(db, me, agent).map_err(ApiError::storage)? => Err(ApiError::scope_denied(agent)),
            _ => Ok(()),
        }
    }
}

/// Whether `supervisor` is a declared supervisor of `agent` in the org manifest.
pub fn supervises(db: &Db, supervisor: &str, agent: &str) -> DbResult<bool> {
    db.read(|c| {
        let mut st = c.prepare_cached("SELECT 1 FROM org_supervisors WHERE supervisor_id = ?1 AND agent_id = ?2")?;
        Ok(st.exists(params![supervisor, agent])?)
    })
}

/// Load the org manifest's supervision (`{"agents": [{"agent_id", "supervises": [..]}]}` or
/// `{"supervisors": {"boss": ["a", "b"]}}`), replacing what was there, in one transaction.
pub fn load_org_manifest(db: &Arc<Db>, org: &Value) -> Result<usize, ApiError> {
    let pairs = lid_shared::ids::org_pairs(org)?;
    db.write(|tx| {
        tx.execute("DELETE FROM org_supervisors", [])?;
        for (s, a) in &pairs {
            tx.execute("INSERT OR IGNORE INTO org_supervisors (supervisor_id, agent_id) VALUES (?1, ?2)", params![s, a])?;
        }
        Ok::<_, DbError>(())
    })?;
    Ok(pairs.len())
}
