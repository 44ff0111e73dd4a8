// Publish the demo agent (examples/demo-agent) to a running lid host and create an agent
// key for it; prints `AGENT KEY` on stdout. Used by .ci/run to drive wrk and to time the
// first recall after start.   node scripts/publish-demo.mjs BASE_URL ADMIN_KEY [AGENT]
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const [base, admin, agent = 'release-engineer'] = process.argv.slice(2);
if (!base || !admin) {
  console.error('usage: node scripts/publish-demo.mjs BASE_URL ADMIN_KEY [AGENT]');
  process.exit(2);
}
const dir = join(dirname(fileURLToPath(import.meta.url)), '../../examples/demo-agent');
const m = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
const units = {};
for (const e of m.entries) {
  e.fact_uri = `instruction:demo/${agent}/${e.name}/v1`;
  units[e.name] = readFileSync(join(dir, 'units', `${e.name}.md`), 'utf8');
}
const body = { version: 'v1', deployment: 'demo', agent_role: m.agent_role, entries: m.entries, units, approvals: { guarantee_load: true, task_types: [], force_position: [] } };
const call = async (method, path, b) => {
  const r = await fetch(base + path, { method, headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body: JSON.stringify(b) });
  const t = await r.text();
  if (r.status >= 300 && !(r.status === 409 && path.endsWith('instruction-manifest'))) throw new Error(`${method} ${path}: ${r.status} ${t}`);
  return t ? JSON.parse(t) : null;
};
await call('PUT', `/v1/agents/${agent}/instruction-manifest`, body);
const k = await call('POST', '/v1/keys', { role: 'agent', agent_id: agent });
console.log(`${agent} ${k.key}`);
