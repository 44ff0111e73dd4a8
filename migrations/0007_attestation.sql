-- Attestation (§21.4.3): every instruction fact carries an `attestation_chain`, a JSON
-- list of signatures, one of them by the org manifest key (`lid_shared::attest`). A fact
-- whose chain is missing or does not verify is quarantined (`quarantine_reason` below)
-- and never served.
--
-- Rows written before this migration have no chain. `attestation_adoption` records the
-- newest rowid at migration time: `lid serve` signs the rows up to it once, on its first
-- start with an org key (the worker on its first snapshot read), then empties the table. A row written later without the service
-- (so without a signature) is never adopted.
-- Plain SQLite SQL that Cloudflare D1 also accepts.
ALTER TABLE instruction_facts ADD COLUMN attestation_chain TEXT;
CREATE TABLE IF NOT EXISTS attestation_adoption (max_rowid INTEGER NOT NULL);
INSERT INTO attestation_adoption (max_rowid) SELECT coalesce(max(rowid), 0) FROM instruction_facts;
-- Why a fact is quarantined: an attestation failure's reason (`attestation_missing`,
-- `attestation_invalid`, …); NULL for a federated fact (its `origin` says where it came from).
ALTER TABLE instruction_facts ADD COLUMN quarantine_reason TEXT;
