-- Re-certifications of published manifests through the coverage gate (§21.8.3: "When
-- the deployment's embedding model version changes, all existing manifests MUST be
-- re-certified through this gate"; S10: re-certification within 7 days of a gate bypass).
-- A publish certifies its manifest under the ranker in its provenance
-- (`embedding_model_version`); each later run of the gate over it adds a row here.
-- Plain SQLite SQL that Cloudflare D1 also accepts.
CREATE TABLE IF NOT EXISTS manifest_certifications (
    agent_id          TEXT NOT NULL,
    manifest_version  TEXT NOT NULL,
    ranker_version    TEXT NOT NULL,              -- the ranker the gate ran under
    reason            TEXT NOT NULL,              -- ranker_changed | coverage_gate_bypassed
    passed            INTEGER NOT NULL,           -- 1 when every unit passed
    failing           TEXT NOT NULL DEFAULT '[]', -- JSON: [{unit, coverage_pct}]
    certified_at      INTEGER NOT NULL,           -- Unix ms
    PRIMARY KEY (agent_id, manifest_version, ranker_version)
);
