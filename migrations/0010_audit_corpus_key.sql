-- The state each audited call ran on (README, "Audit"), as the host named it to the
-- engine (`corpus_key`): for `lid serve`, `{manifest row}:{generation}:{fact horizon}`,
-- the horizon being the newest fact row the call's snapshot held, so that
-- `lid audit replay --db` cuts the agent's facts exactly where the call saw them (a
-- fact's `created_at` is taken before its write commits, so a time cut can take in a
-- write the call did not see). Rows written before this migration have ''.
-- Plain SQLite SQL that Cloudflare D1 also accepts.
ALTER TABLE instruction_audit_meta ADD COLUMN corpus_key TEXT NOT NULL DEFAULT '';
