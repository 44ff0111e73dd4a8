-- Who made each audited call (README, "Audit"): the identity of the key the host
-- authenticated (`agent:{id}` for the agent's own key or a supervisor's, an admin's
-- `admin:…`), as the engine writes it into the record. §21.5.3's metrics count the
-- agent's own calls, not a supervisor's. Rows written before this migration have ''.
-- Plain SQLite SQL that Cloudflare D1 also accepts.
ALTER TABLE instruction_audit_meta ADD COLUMN caller TEXT NOT NULL DEFAULT '';
