-- An audit record's `session_start` is its heartbeat's start (§21.5.1): a record that names
-- a heartbeat already on record takes the start of that heartbeat's first record
-- (`lid_shared::audit::INSERT_AUDIT_SQL`). This index makes that lookup one seek.
-- Plain SQLite SQL that Cloudflare D1 also accepts.
CREATE INDEX IF NOT EXISTS idx_audit_heartbeat ON instruction_audit (agent_id, heartbeat_id, session_start);
