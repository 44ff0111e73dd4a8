-- Preload warnings and errors in the service audit (§21.1.5 rule 4: "the warning or
-- error MUST be written to the instruction_audit table (not only local log)"). Plain
-- SQLite SQL that Cloudflare D1 also accepts.

-- A preload's warnings (`preload_unit_unavailable`, `preload_budget_warning`), each
-- `{code, unit, message}` (JSON array).
ALTER TABLE instruction_audit_meta ADD COLUMN warnings TEXT NOT NULL DEFAULT '[]';
-- The error that aborted a heartbeat's preloads (`{code, unit, message}`), else NULL.
ALTER TABLE instruction_audit_meta ADD COLUMN error TEXT;
