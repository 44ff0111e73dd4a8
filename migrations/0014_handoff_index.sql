-- The boot context's session is the agent's handoff written last (`max(rowid)`, not the
-- newest `created_at`, which a clock stepped back would reorder): an index of (agent,
-- kind) holds each kind's rows in rowid order, so that read is one seek, where
-- `idx_events_agent_kind` (whose third column is `created_at`) had it walk every
-- handoff the agent was ever sent. Plain SQLite SQL that Cloudflare D1 also accepts.
CREATE INDEX IF NOT EXISTS idx_events_agent_kind_rowid ON service_events (agent_id, kind);
