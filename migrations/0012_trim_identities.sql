-- Key identities as the service compares them (an upgrade audit): releases before the
-- one that stored a new key's `entity_uri` trimmed kept " admin:x " as given, so one
-- admin's second key, under its own identity padded with blanks, co-signed that admin's
-- own gate bypass as a second person (S7). Stored identities and co-signatures are
-- trimmed here (both hosts also trim a key's identity when they read it); a co-signature
-- that, trimmed, is one already there is the same person's, and goes.
-- Plain SQLite SQL that Cloudflare D1 also accepts.
UPDATE api_keys SET entity_uri = trim(entity_uri, ' ' || char(9) || char(10) || char(13));
UPDATE OR IGNORE publish_cosignatures SET entity_uri = trim(entity_uri, ' ' || char(9) || char(10) || char(13));
DELETE FROM publish_cosignatures WHERE entity_uri <> trim(entity_uri, ' ' || char(9) || char(10) || char(13));
