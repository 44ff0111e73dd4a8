// EdDSA heartbeat triggers on the running worker (workerd, `wrangler dev`), configured with
// LID_HEARTBEAT_PUBLIC_KEY (and LID_HEARTBEAT_SECRET as well: the public key must win, as
// `--heartbeat-public-key` does in `lid serve`). The seed of the signing key comes from
// LID_EDDSA_SEED (base64url, 32 bytes); triggers are signed by scripts/eddsa-trigger.mjs
// (Node's crypto), as a control plane would. Checks status, code and the S1 rules:
// a good trigger wakes the agent with its signed wake reason (heartbeat and boot context);
// tampered, other-key, HS256 (alg confusion, MACed with the public key or the secret) and
// `alg: none` triggers are 401 heartbeat_trigger_invalid.
//   LID_WORKER_URL=… LID_ADMIN_KEY=… LID_EDDSA_SEED=… LID_HS256_SECRET=… node --test tests/eddsa.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const { LID_WORKER_URL: base, LID_ADMIN_KEY: admin, LID_EDDSA_SEED: seed, LID_HS256_SECRET: secret } = process.env;
const script = (name, ...args) => execFileSync('node', [join(here, '../scripts', name), ...args], { encoding: 'utf8' }).trim();
const b64 = (s) => Buffer.from(s).toString('base64url');
const hs256 = (key, claims) => {
  const signed = `${b64(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))}.${b64(JSON.stringify(claims))}`;
  return `${signed}.${createHmac('sha256', key).update(signed).digest('base64url')}`;
};

test('EdDSA triggers wake the agent; tampered, other-key, HS256 and unsigned ones are refused', { timeout: 60_000 }, async () => {
  for (const [k, v] of Object.entries({ LID_WORKER_URL: base, LID_ADMIN_KEY: admin, LID_EDDSA_SEED: seed, LID_HS256_SECRET: secret })) assert.ok(v, `set ${k}`);
  const agent = `eddsa-${Date.now().toString(36)}`;
  const [, key] = script('publish-demo.mjs', base, admin, agent).split(' ');
  const x = script('eddsa-trigger.mjs', 'keygen', seed).split(' ')[1];
  const claims = { sub: agent, wake_reason: 'issue_assigned', heartbeat_id: 'run_ed', exp: Math.floor(Date.now() / 1000) + 600 };
  const sign = (c, s = seed) => script('eddsa-trigger.mjs', 'sign', s, JSON.stringify(c));
  const heartbeat = async (trigger) => {
    const r = await fetch(`${base}/v1/agents/${agent}/heartbeat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ trigger, wake_reason: 'manual' }),
    });
    return { status: r.status, body: await r.json() };
  };
  const refused = async (trigger, why) => {
    const r = await heartbeat(trigger);
    assert.equal(r.status, 401, `${why}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error.code, 'heartbeat_trigger_invalid', why);
    return r.body.error.message;
  };

  const good = sign(claims);
  const ok = await heartbeat(good);
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.equal(ok.body.wake_reason, 'issue_assigned', 'the signed wake reason, not the body one (S1)');
  assert.equal(ok.body.heartbeat_id, 'run_ed');
  assert.ok(ok.body.preloads.units.some((u) => u.name === 'triage-incoming'), JSON.stringify(ok.body.preloads));

  // The same trigger opens the boot context's task section.
  const bc = await fetch(`${base}/v1/agents/${agent}/boot-context`, { headers: { authorization: `Bearer ${key}`, 'x-lid-trigger': good } });
  assert.equal(bc.status, 200);

  const [h, p, s] = good.split('.');
  const forged = b64(JSON.stringify({ ...claims, wake_reason: 'manual' }));
  assert.match(await refused(`${h}.${forged}.${s}`, 'tampered payload'), /InvalidSignature/);
  const otherSeed = b64(Buffer.alloc(32, 7));
  assert.match(await refused(sign(claims, otherSeed), 'signed by another key'), /InvalidSignature/);
  assert.match(await refused(sign({ ...claims, exp: claims.exp - 7200 }), 'expired'), /ExpiredSignature/);
  assert.match(await refused(sign({ ...claims, sub: 'someone-else' }), 'other agent'), /issued for agent/);
  // Algorithm confusion: HS256 tokens MACed with the public key's text, its bytes, or the
  // HS256 secret the worker also has: the public key wins, so all are the wrong alg.
  for (const k of [x, Buffer.from(x, 'base64url'), secret]) {
    assert.match(await refused(hs256(k, claims), 'HS256 token'), /InvalidAlgorithm.*EdDSA JWT/);
  }
  assert.match(await refused(`${b64(JSON.stringify({ alg: 'none' }))}.${p}.`, 'alg none'), /InvalidAlgorithm/);
});
