// Re-certification on the worker's Cron Trigger (§21.8.3, S10), under `wrangler dev
// --test-scheduled` (local D1 + KV): GET /__scheduled runs the `scheduled` handler as the
// hourly trigger would. The test ages the local D1 rows the way time and a new ranker
// would (`wrangler d1 execute --local`, the database `wrangler dev` serves) and reads
// the outcome through the admin's service-events route:
// - nothing is due right after publishing (the demo passed the gate under this ranker;
//   the weak agent's bypass is not a week old);
// - a manifest certified under an older ranker is re-certified (`ranker_changed`) and
//   passes; a bypass a week old runs the gate again (`coverage_gate_bypassed`), fails and
//   names its weak units; each is recorded once, and the failing manifest stays served.
//   LID_WORKER_URL=… LID_ADMIN_KEY=… node --test tests/recertify.test.mjs   (cwd: worker/)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, d1, demoBody, getText } from './helpers.mjs';

const { LID_WORKER_URL: base, LID_ADMIN_KEY: admin } = process.env;
const trigger = async () => {
  const r = await getText('/__scheduled?cron=17+*+*+*+*');
  assert.equal(r.status, 200, r.text);
};
const recertifications = async (agent) => {
  const r = await call('GET', `/v1/agents/${agent}/service-events`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.events.filter((e) => e.kind === 'manifest_recertified' || e.kind === 'recertification_failed');
};

test('the Cron Trigger re-certifies after a ranker change and a week after a bypass, once each', { timeout: 120_000 }, async () => {
  for (const [k, v] of Object.entries({ LID_WORKER_URL: base, LID_ADMIN_KEY: admin })) assert.ok(v, `set ${k}`);
  const tag = Date.now().toString(36);
  const [good, weak] = [`recert-${tag}`, `recert-weak-${tag}`];
  for (const [agent, isWeak] of [[good, false], [weak, true]]) {
    const r = await call('PUT', `/v1/agents/${agent}/instruction-manifest`, demoBody(agent, isWeak));
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }
  const ranker = (await call('GET', '/healthz')).body.engine.ranker_version;

  await trigger();
  assert.deepEqual([await recertifications(good), await recertifications(weak)], [[], []], 'nothing is due right after publishing');

  const older = 'lid-rank-9 (an older ranker)';
  d1(`UPDATE instruction_facts SET provenance = json_set(provenance, '$.embedding_model_version', '${older}') WHERE unit_name = 'manifest' AND agent_id = '${good}'`);
  d1(`UPDATE instruction_manifests SET created_at = created_at - 8 * 86400000 WHERE agent_id = '${weak}'`);
  await trigger();
  const [g] = await recertifications(good);
  assert.ok(g, 'the manifest from an older ranker was re-certified');
  assert.deepEqual(
    [g.kind, g.detail.reason, g.detail.certified_under, g.detail.ranker_version, g.detail.passed],
    ['manifest_recertified', 'ranker_changed', older, ranker, true],
  );
  const [w] = await recertifications(weak);
  assert.ok(w, 'the bypass a week old went through the gate again');
  assert.deepEqual([w.kind, w.detail.reason, w.detail.passed], ['recertification_failed', 'coverage_gate_bypassed', false]);
  assert.ok(w.detail.failing.some((f) => f.unit.startsWith('twin-')), JSON.stringify(w.detail));

  await trigger();
  assert.deepEqual([(await recertifications(good)).length, (await recertifications(weak)).length], [1, 1], 'each recorded once');
  const recall = await call('POST', `/v1/agents/${weak}/recall-instruction`, { intent: 'archive the old build artifacts' });
  assert.equal(recall.status, 200, 'a manifest that failed stays served');
});
