// What the worker's end-to-end tests share (cwd: worker/): the admin's calls to the
// worker under `wrangler dev` (LID_WORKER_URL, LID_ADMIN_KEY), the local D1 and KV that
// `wrangler dev --local` serves (changed with wrangler's own commands, as an operator or
// an intruder with the account's token would), and the demo agent as a publish body.
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const { LID_WORKER_URL: base, LID_ADMIN_KEY: admin } = process.env;

/**
 * `method path` on a connection of its own, with `headers` and the text `data`:
 * {status, text}. The tests pause for seconds between calls (the wrangler commands), and
 * `fetch` would reuse a kept-alive connection the server closed meanwhile, failing the
 * next request before it was sent ("fetch failed").
 */
const request = async (method, path, headers, data) => {
  const r = await send(method, path, headers, data);
  // wrangler dev's own answer when it swapped the worker's runtime during the request (a
  // reload of the local server, not the worker's doing); it asks for the request again
  // and resends only GET and HEAD itself
  if (r.status === 503 && r.text.startsWith('Your worker restarted mid-request')) {
    console.log(`# wrangler dev restarted the worker during ${method} ${path}: sent again`);
    await new Promise((done) => setTimeout(done, 1000));
    return send(method, path, headers, data);
  }
  return r;
};

const send = (method, path, headers, data) =>
  new Promise((resolve, reject) => {
    const req = http.request(base + path, { method, agent: false, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(data);
  });

/** `method path` with the admin key: {status, body (parsed JSON or null)}. */
export const call = async (method, path, body) => {
  const data = body === undefined ? undefined : JSON.stringify(body);
  const headers = { authorization: `Bearer ${admin}`, 'content-type': 'application/json' };
  if (data !== undefined) headers['content-length'] = Buffer.byteLength(data);
  const { status, text } = await request(method, path, headers, data);
  return { status, body: text ? JSON.parse(text) : null };
};

/**
 * `GET path` without a key: {status, text}. For routes that answer plain text, such as
 * `wrangler dev --test-scheduled`'s `/__scheduled`.
 */
export const getText = (path) => request('GET', path, {});

const wrangler = (args) => execFileSync('npx', ['wrangler', ...args], { cwd: join(here, '..'), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/** Run SQL on the local D1; with `json`, the rows of its (last) statement. */
export const d1 = (sql, json) => {
  const out = wrangler(['d1', 'execute', 'DB', '--local', '--command', sql, ...(json ? ['--json'] : [])]);
  return json ? JSON.parse(out).at(-1).results : out;
};

/** The local KV value of a fact (its JSON), and a replacement for it. */
export const kvGet = (key) => JSON.parse(wrangler(['kv', 'key', 'get', key, '--binding', 'FACTS', '--local']));
export const kvPut = (key, value) => wrangler(['kv', 'key', 'put', key, JSON.stringify(value), '--binding', 'FACTS', '--local']);

// The demo agent as a publish body, for `agent`; with `weak`, its guarantees off and four
// units that share one trigger, so no paraphrase can tell them apart (the gate fails).
export function demoBody(agent, weak, version = 'v1') {
  const dir = join(here, '../../examples/demo-agent');
  const m = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
  let entries = m.entries;
  const units = {};
  if (weak) entries = entries.filter((e) => e.name !== 'writing-status-updates' && e.name !== 'dependency-upgrades').map((e) => ({ ...e, guarantee_load: false }));
  for (const e of entries) {
    e.fact_uri = `instruction:demo/${agent}/${e.name}/v1`;
    units[e.name] = readFileSync(join(dir, 'units', `${e.name}.md`), 'utf8');
  }
  if (weak) {
    for (const n of ['twin-a', 'twin-b', 'twin-c', 'twin-d']) {
      entries.push({ name: n, description: 'Archive old build artifacts.', required_by_task_types: [], guarantee_load: false, load_triggers: { intents: ['archive the old build artifacts'], keywords: [], task_types: [] }, fact_uri: `instruction:demo/${agent}/${n}/v1` });
      units[n] = 'Archive old build artifacts to cold storage.';
    }
  }
  return { version, deployment: 'demo', agent_role: m.agent_role, entries, units, approvals: { guarantee_load: true, task_types: [], force_position: [] }, skip_coverage_gate: weak };
}
