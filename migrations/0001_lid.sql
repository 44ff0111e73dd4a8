-- lid's storage schema, applied by `lid serve` (SQLite) and by the worker
-- (`wrangler d1 migrations apply`): plain SQLite SQL that Cloudflare D1 also accepts.
-- No PRAGMAs here; hosts set their own (the SQLite host turns on WAL).

-- §21.7 -------------------------------------------------------------------------
-- Verbatim except one index: SQLite (and so D1) rejects `NULLS FIRST` in an index
-- definition ("unsupported use of NULLS FIRST"); ascending order already puts NULLs first
-- in SQLite, so `(agent_id, superseded_at)` is the same index.

-- Instruction manifest registry
CREATE TABLE IF NOT EXISTS instruction_manifests (
    id               TEXT PRIMARY KEY,           -- UUID
    agent_id         TEXT NOT NULL,
    version          TEXT NOT NULL,
    fact_uri         TEXT NOT NULL,              -- instruction: scope URI
    token_count      INTEGER NOT NULL,
    body             TEXT NOT NULL,              -- JSON: array of manifest entries
    created_at       INTEGER NOT NULL,           -- Unix ms
    superseded_at    INTEGER,                    -- NULL if current version
    UNIQUE(agent_id, version)
);
CREATE INDEX IF NOT EXISTS idx_manifests_agent ON instruction_manifests (agent_id, superseded_at);

-- Discovery audit log (append-only)
CREATE TABLE IF NOT EXISTS instruction_audit (
    id               TEXT PRIMARY KEY,           -- audevent_ prefixed UUID
    agent_id         TEXT NOT NULL,
    heartbeat_id     TEXT NOT NULL,
    session_start    INTEGER NOT NULL,           -- Unix ms
    intent           TEXT NOT NULL,
    loaded_chunks    TEXT NOT NULL,              -- JSON array of unit names
    used_chunks      TEXT NOT NULL DEFAULT '[]', -- JSON array; updated on POST /audit
    missed_chunks    TEXT NOT NULL DEFAULT '[]', -- JSON array; updated on POST /audit
    audit_token      TEXT NOT NULL UNIQUE,
    audit_closed     INTEGER,                    -- Unix ms; NULL until POST /audit received
    created_at       INTEGER NOT NULL            -- Unix ms
);
CREATE INDEX IF NOT EXISTS idx_audit_agent_session ON instruction_audit (agent_id, session_start DESC);
CREATE INDEX IF NOT EXISTS idx_audit_token         ON instruction_audit (audit_token);

-- Boot stub cache (invalidated on manifest update)
CREATE TABLE IF NOT EXISTS boot_stubs (
    agent_id          TEXT NOT NULL,
    adapter_profile   TEXT NOT NULL DEFAULT 'generic',
    stub_version      INTEGER NOT NULL DEFAULT 1,
    body              TEXT NOT NULL,              -- full markdown stub
    token_count       INTEGER NOT NULL,
    generated_at      INTEGER NOT NULL,           -- Unix ms
    manifest_version  TEXT NOT NULL,              -- version string of backing manifest
    PRIMARY KEY (agent_id, adapter_profile)
);

-- lid's own tables ------------------------------------------------------------

-- Instruction facts: the store behind the component's `wasi:keyvalue` facts bucket.
-- Versioned and immutable (§21.4.2): a row is never rewritten, except that writing the
-- next version of a unit sets this one's `valid_until`, in the same transaction.
-- Manifests are facts too (`instruction:{deployment}/{agent}/manifest/{version}`).
CREATE TABLE IF NOT EXISTS instruction_facts (
    uri            TEXT PRIMARY KEY,             -- instruction:{deployment}/{agent}/{unit}/{version}
    unit_key       TEXT NOT NULL,                -- the URI without its version
    agent_id       TEXT NOT NULL,
    unit_name      TEXT NOT NULL,
    version        TEXT NOT NULL,
    content        TEXT NOT NULL,
    interpret_as   TEXT NOT NULL DEFAULT 'instruction' CHECK (interpret_as IN ('instruction', 'content')),
    sha256         TEXT NOT NULL,                -- of content, lowercase hex
    tokens         INTEGER NOT NULL,             -- exact cl100k count of content
    authored_by    TEXT NOT NULL,                -- entity URI (§21.4.3)
    authored_at    TEXT NOT NULL,                -- ISO 8601
    source_trust   REAL NOT NULL,
    derived_from   TEXT,                         -- sha256 of the prior version; NULL for the first
    valid_until    TEXT,                         -- ISO 8601; set when superseded
    provenance     TEXT NOT NULL DEFAULT '{}',   -- JSON: approvals, coverage bypass, co-signatures
    created_at     INTEGER NOT NULL              -- Unix ms
);
CREATE INDEX IF NOT EXISTS idx_facts_unit  ON instruction_facts (unit_key);
CREATE INDEX IF NOT EXISTS idx_facts_agent ON instruction_facts (agent_id);

-- Blobs the engine derives from facts (ranker indexes), keyed by a fingerprint of their
-- inputs, so they never go stale; safe to delete at any time.
CREATE TABLE IF NOT EXISTS derived_blobs (
    key            TEXT PRIMARY KEY,
    value          BLOB NOT NULL,
    created_at     INTEGER NOT NULL
);

-- Per-record detail the §21.7 audit table has no column for.
CREATE TABLE IF NOT EXISTS instruction_audit_meta (
    id               TEXT PRIMARY KEY,           -- instruction_audit.id
    source           TEXT NOT NULL,              -- recall | task_type_preload
    manifest_version TEXT NOT NULL
);

-- Coverage per unit, from the publish-time probe run (§21.5.5, §21.8.6).
CREATE TABLE IF NOT EXISTS coverage_reports (
    agent_id         TEXT NOT NULL,
    manifest_version TEXT NOT NULL,
    unit             TEXT NOT NULL,
    coverage_pct     REAL NOT NULL,
    hit_at_10        REAL NOT NULL,
    probe_count      INTEGER NOT NULL,
    evaluated_at     INTEGER NOT NULL,           -- Unix ms
    PRIMARY KEY (agent_id, manifest_version, unit)
);

-- API keys, stored hashed (§21.4.4). Admin keys, or agent keys bound to one agent.
CREATE TABLE IF NOT EXISTS api_keys (
    id             TEXT PRIMARY KEY,             -- public id (key_…)
    key_hash       TEXT NOT NULL UNIQUE,         -- sha256 of the secret, hex
    role           TEXT NOT NULL CHECK (role IN ('admin', 'agent')),
    agent_id       TEXT,                         -- the bound agent for agent keys
    capabilities   TEXT NOT NULL,                -- JSON array: read, instruction:write, admin
    entity_uri     TEXT NOT NULL,                -- who holds it (authored_by of its writes)
    label          TEXT NOT NULL DEFAULT '',
    created_at     INTEGER NOT NULL,
    revoked_at     INTEGER
);

-- Declared supervision from the org manifest (§21.4.5 rule 1).
CREATE TABLE IF NOT EXISTS org_supervisors (
    supervisor_id  TEXT NOT NULL,
    agent_id       TEXT NOT NULL,
    PRIMARY KEY (supervisor_id, agent_id)
);

-- Co-signatures for a coverage-gate bypass (S7): one row per admin per manifest digest.
CREATE TABLE IF NOT EXISTS publish_cosignatures (
    agent_id       TEXT NOT NULL,
    version        TEXT NOT NULL,
    manifest_sha256 TEXT NOT NULL,
    entity_uri     TEXT NOT NULL,
    key_id         TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    PRIMARY KEY (agent_id, version, manifest_sha256, entity_uri)
);

-- Service events: coverage bypasses, capability failures, rejected promotions (Spec-13 Audit).
CREATE TABLE IF NOT EXISTS service_events (
    id             TEXT PRIMARY KEY,
    agent_id       TEXT,
    kind           TEXT NOT NULL,
    detail         TEXT NOT NULL,                -- JSON
    created_at     INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_events_agent ON service_events (agent_id, created_at);
