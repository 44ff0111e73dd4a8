-- Content-addressed recall in the service audit (README, "Content-addressed recall"):
-- what each audited recall showed, so `lid audit replay --db` can prove it. Plain SQLite
-- SQL that Cloudflare D1 also accepts.

-- The SHA-256 of each loaded chunk's content, in `loaded_chunks` order (JSON array).
ALTER TABLE instruction_audit_meta ADD COLUMN chunk_sha256 TEXT NOT NULL DEFAULT '[]';
-- The response's `assembly_sha256`; empty for preload records and older rows.
ALTER TABLE instruction_audit_meta ADD COLUMN assembly_sha256 TEXT NOT NULL DEFAULT '';
-- The recall request as the engine read it (JSON), replayed as is.
ALTER TABLE instruction_audit_meta ADD COLUMN request TEXT;
