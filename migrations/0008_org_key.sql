-- The org key that signs this store's facts (§21.4.3), by key id and public key (base64url),
-- and since when (Unix ms). A host records its key on its first start (when no fact is
-- signed yet, or its key signed them) and refuses to serve with another key, rather than
-- quarantine every fact as unattested. A rotation (`lid org-key rotate`; the worker's
-- `LID_ORG_SIGNING_KEY_PREVIOUS`) re-signs the facts and records the new key in one
-- transaction. At most one row.
-- Plain SQLite SQL that Cloudflare D1 also accepts.
CREATE TABLE IF NOT EXISTS org_signing_key (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  kid TEXT NOT NULL,
  public_key TEXT NOT NULL,
  since INTEGER NOT NULL
);
