// Org key rotation on the worker (§21.4.3), under `wrangler dev --local`, on the local D1
// and KV an earlier run filled (the demo agent and the other tests' agents, signed with
// the old key): this run has the new key as LID_ORG_SIGNING_KEY and the old one as
// LID_ORG_SIGNING_KEY_PREVIOUS. The worker's first read re-signs every fact the old key
// signed with the new one and records the new key, in one D1 batch (`org_key_rotated`), as
// `lid org-key rotate` does for `lid serve` (tests/tests/serve.rs,
// the_org_key_rotates_and_a_running_service_follows); the agents are served as before,
// and nothing is quarantined for it.
//   LID_WORKER_URL=… LID_ADMIN_KEY=… LID_DEMO_AGENT=… node --test tests/rotate.test.mjs   (cwd: worker/)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, d1 } from './helpers.mjs';

const { LID_WORKER_URL: base, LID_ADMIN_KEY: admin, LID_DEMO_AGENT: agent } = process.env;

test('a new org key with the old one as LID_ORG_SIGNING_KEY_PREVIOUS re-signs every fact once', { timeout: 180_000 }, async () => {
  for (const [k, v] of Object.entries({ LID_WORKER_URL: base, LID_ADMIN_KEY: admin, LID_DEMO_AGENT: agent })) assert.ok(v, `set ${k}`);
  const [{ kid: oldKid }] = d1('SELECT kid FROM org_signing_key', true);
  assert.match(oldKid, /^org-[0-9a-f]{16}$/);
  const signedBy = (kid) => d1(`SELECT count(*) AS n FROM instruction_facts WHERE instr(attestation_chain, '"kid":"${kid}"') > 0`, true)[0].n;
  const [{ n: chained }] = d1('SELECT count(*) AS n FROM instruction_facts WHERE attestation_chain IS NOT NULL', true);
  const [{ n: quarantinedBefore }] = d1('SELECT count(*) AS n FROM instruction_facts WHERE quarantine IS NOT NULL', true);
  assert.equal(signedBy(oldKid), chained, 'the earlier run signed every chained fact with the old key');
  assert.ok(chained > 10, `${chained} facts`);

  // The first read rotates; the demo agent is served.
  const recall = async () => {
    const r = await call('POST', `/v1/agents/${agent}/recall-instruction`, { intent: 'production is broken after the deploy, how do I roll back?' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.chunks.map((c) => [c.name, c.version, c.content]);
  };
  const first = await recall();
  assert.ok(first.length > 0);
  const [{ kid: newKid }] = d1('SELECT kid FROM org_signing_key', true);
  assert.match(newKid, /^org-[0-9a-f]{16}$/);
  assert.notEqual(newKid, oldKid);
  const events = d1("SELECT detail FROM service_events WHERE kind = 'org_key_rotated'", true).map((e) => JSON.parse(e.detail));
  assert.equal(events.length, 1, JSON.stringify(events));
  const [e] = events;
  assert.deepEqual([e.from, e.to], [oldKid, newKid]);
  assert.equal(e.resigned + e.kept, chained, JSON.stringify(e));
  assert.equal(signedBy(newKid), e.resigned);
  assert.equal(signedBy(oldKid), e.kept, 'only facts the old key had not signed keep its kid');
  const [{ n: quarantinedAfter }] = d1('SELECT count(*) AS n FROM instruction_facts WHERE quarantine IS NOT NULL', true);
  assert.equal(quarantinedAfter, quarantinedBefore, 'the rotation quarantined nothing');

  // Served the same again, rotated once, and a write is signed with the new key.
  assert.deepEqual(await recall(), first);
  assert.equal(d1("SELECT count(*) AS n FROM service_events WHERE kind = 'org_key_rotated'", true)[0].n, 1);
  const w = await call('PUT', `/v1/agents/${agent}/units/rollback-procedure`, { content: '## Rolling back\n\nRoll back with `deploy rollback --to previous` once errors double after a deploy.\n' });
  assert.equal(w.status, 201, JSON.stringify(w.body));
  assert.equal(signedBy(newKid), e.resigned + 1);
});
