// The store's recorded org key on the worker (§21.4.3, `org_signing_key`), under
// `wrangler dev --local`, on the store the earlier runs filled and rotated (tests/rotate.test.mjs).
// LID_PHASE=wrong: the worker has a key the store does not record. Every route that reads
// or writes facts answers 503 `org_key_mismatch` naming the recorded key; nothing is
// quarantined, nothing written. With the record removed (a store from before it), the
// chains say another key signed the facts: refused the same way, and nothing recorded.
// LID_PHASE=right: the worker has the key that signed the facts again. With no record, it
// records its key (its key signed them) and serves, quarantining nothing.
//   LID_WORKER_URL=… LID_ADMIN_KEY=… LID_DEMO_AGENT=… LID_PHASE=wrong|right node --test tests/org-key.test.mjs   (cwd: worker/)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, d1 } from './helpers.mjs';

const { LID_WORKER_URL: base, LID_ADMIN_KEY: admin, LID_DEMO_AGENT: agent, LID_PHASE: phase } = process.env;
const count = (sql) => d1(sql, true)[0].n;
const unattested = () => count("SELECT count(*) AS n FROM service_events WHERE kind = 'fact_unattested'");
const recall = () => call('POST', `/v1/agents/${agent}/recall-instruction`, { intent: 'production is broken after the deploy, how do I roll back?' });

test(`the store's recorded org key (${phase} key)`, { timeout: 180_000 }, async () => {
  for (const [k, v] of Object.entries({ LID_WORKER_URL: base, LID_ADMIN_KEY: admin, LID_DEMO_AGENT: agent, LID_PHASE: phase })) assert.ok(v, `set ${k}`);
  const quarantined = count('SELECT count(*) AS n FROM instruction_facts WHERE quarantine IS NOT NULL');
  const events = unattested();
  if (phase === 'wrong') {
    const [{ kid }] = d1('SELECT kid FROM org_signing_key', true);
    const facts = count('SELECT count(*) AS n FROM instruction_facts');
    const r = await recall();
    assert.equal(r.status, 503, JSON.stringify(r.body));
    assert.equal(r.body.error.code, 'org_key_mismatch', JSON.stringify(r.body));
    assert.ok(r.body.error.message.includes(kid), r.body.error.message);
    const w = await call('PUT', `/v1/agents/${agent}/units/rollback-procedure`, { content: 'Written with the wrong key.' });
    assert.equal(w.status, 503, JSON.stringify(w.body));
    assert.equal(w.body.error.code, 'org_key_mismatch', JSON.stringify(w.body));
    assert.equal(count('SELECT count(*) AS n FROM instruction_facts'), facts, 'nothing written');
    // A store without the record (as from before it): judged by its chains, refused alike.
    d1('DELETE FROM org_signing_key');
    const again = await recall();
    assert.equal(again.status, 503, JSON.stringify(again.body));
    assert.equal(again.body.error.code, 'org_key_mismatch', JSON.stringify(again.body));
    assert.match(again.body.error.message, /signed by another org key/);
    assert.equal(count('SELECT count(*) AS n FROM org_signing_key'), 0, 'the wrong key was not recorded');
  } else {
    assert.equal(phase, 'right');
    assert.equal(count('SELECT count(*) AS n FROM org_signing_key'), 0);
    const r = await recall();
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(r.body.chunks.some((c) => c.name === 'rollback-procedure'), JSON.stringify(r.body));
    const [{ kid }] = d1('SELECT kid FROM org_signing_key', true);
    const chained = count('SELECT count(*) AS n FROM instruction_facts WHERE attestation_chain IS NOT NULL');
    assert.equal(count(`SELECT count(*) AS n FROM instruction_facts WHERE instr(attestation_chain, '"kid":"${kid}"') > 0`), chained, 'the recorded key signed every chained fact');
  }
  assert.equal(count('SELECT count(*) AS n FROM instruction_facts WHERE quarantine IS NOT NULL'), quarantined, 'nothing quarantined');
  assert.equal(unattested(), events);
});
