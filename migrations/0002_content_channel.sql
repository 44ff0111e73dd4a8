-- Spec-13 (two channels, quarantine) and uploaded knowledge packs: plain SQLite SQL that
-- Cloudflare D1 also accepts (applied by `lid serve` and `wrangler d1 migrations apply`).

-- Quarantine (Spec-13, "Federation boundary"): a fact from another organisation or a
-- federation peer is stored with `quarantine = 'quarantined'` under its own
-- `quarantine:` URI, outside every unit's version chain. It is never served in either
-- recall channel. Only an admin holding `instruction:write` promotes it (a new live fact
-- version is written; this row becomes 'promoted'). NULL: an ordinary live fact.
ALTER TABLE instruction_facts ADD COLUMN quarantine TEXT CHECK (quarantine IN ('quarantined', 'promoted'));
-- The sending organisation or federation peer of a quarantined fact (entity URI).
ALTER TABLE instruction_facts ADD COLUMN origin TEXT;
CREATE INDEX IF NOT EXISTS idx_facts_quarantine ON instruction_facts (agent_id, quarantine);

-- Knowledge packs uploaded for an agent (PUT /v1/agents/{id}/knowledge/{pack}): the
-- registry of pack versions. The pack's KNOWLEDGE.md and context files are content facts
-- in instruction_facts (interpret_as 'content') under
-- `knowledge:{deployment}/{agent}/{pack}/{version}/{path}`; a reader finds a new version
-- only through its row here, written in the same transaction (D1: the same batch, after
-- the facts are in KV).
CREATE TABLE IF NOT EXISTS knowledge_packs (
    agent_id       TEXT NOT NULL,
    pack           TEXT NOT NULL,                -- the pack id (route segment)
    version        TEXT NOT NULL,                -- upload version: v1, v2, …
    prefix         TEXT NOT NULL,                -- fact URI prefix of the pack's files
    meta           TEXT NOT NULL,                -- JSON: catalog metadata (name, description, type, status, fields)
    files          TEXT NOT NULL,                -- JSON array of relative paths, sorted
    digest         TEXT NOT NULL,                -- pack digest (keys its precomputed index)
    units          INTEGER NOT NULL,             -- context files served as units
    uploaded_by    TEXT NOT NULL,                -- entity URI
    created_at     INTEGER NOT NULL,             -- Unix ms
    superseded_at  INTEGER,                      -- NULL for the current version
    PRIMARY KEY (agent_id, pack, version)
);
CREATE INDEX IF NOT EXISTS idx_packs_current ON knowledge_packs (agent_id, superseded_at);

-- What the content channel served with each recall: JSON array of {uri, sha256}.
ALTER TABLE instruction_audit_meta ADD COLUMN content_served TEXT NOT NULL DEFAULT '[]';
