-- Indexes for the reads that pick one agent's rows by time or kind (a soak audit): the
-- coverage route and `lid audit report` read an agent's audit rows of the last 7 days
-- (`created_at`), which `idx_audit_agent_session` (by `session_start`) cannot bound, and
-- the boot context reads an agent's newest handoff among its service events, which
-- `idx_events_agent` reached only by walking back over every other kind of event.
-- Plain SQLite SQL that Cloudflare D1 also accepts.
CREATE INDEX IF NOT EXISTS idx_audit_agent_created ON instruction_audit (agent_id, created_at);
CREATE INDEX IF NOT EXISTS idx_events_agent_kind ON service_events (agent_id, kind, created_at);
