// The preview page: every figure comes from lid-preview (lid-core compiled to wasm),
// called in this page; nothing is sent to a server.
import init, * as lid from './lid_preview.js';

const $ = (id) => document.getElementById(id);
const units = new Map(); // name -> markdown
let profile = 'generic';
let stubs = [];
let timer = null;
// the manifest the stub, recall and coverage panels show (null: they are cleared)
let live = null;

const esc = (s) => String(s ?? '').replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
const unitsJson = () => JSON.stringify(Object.fromEntries(units));
const parse = (s) => { try { return JSON.parse(s); } catch { return null; } };

function meter(el, value, cap) {
  const pct = Math.min(100, (100 * value) / cap);
  el.style.width = pct + '%';
  el.className = value > cap ? 'over' : value > 0.9 * cap ? 'near' : '';
}

function renderUnits() {
  const ul = $('units');
  ul.innerHTML = '';
  for (const [name, text] of [...units.entries()].sort()) {
    const li = document.createElement('li');
    li.innerHTML = `<span>${esc(name)}.md <span class="muted">· ${lid.count_tokens(text)} tokens</span></span>`;
    const b = document.createElement('button');
    b.textContent = 'remove';
    b.onclick = () => { units.delete(name); renderUnits(); schedule(); };
    li.appendChild(b);
    ul.appendChild(li);
  }
  $('unit-count').textContent = units.size ? `(${units.size})` : '';
}

function renderValidation(manifest) {
  const r = parse(lid.validate(manifest, ''));
  const tbody = $('problems').querySelector('tbody');
  tbody.innerHTML = '';
  // as `lid validate` lists them: errors, warnings, and what a publish needs approved
  const rows = [...(r.errors || []).map((p) => ['error', p]), ...(r.warnings || []).map((p) => ['warning', p]), ...(r.approvals_needed || []).map((p) => ['approval', p])];
  for (const [kind, p] of rows) {
    const tr = document.createElement('tr');
    tr.className = kind;
    const label = kind === 'approval' ? '<span class="muted">needs approval:</span> ' : '';
    tr.innerHTML = `<td class="code">${label}${esc(p.code)}</td><td class="entry">${esc(p.entry ?? '—')}</td><td>${esc(p.field ?? '')}</td><td>${esc(p.message)}</td>`;
    tbody.appendChild(tr);
  }
  $('problems').classList.toggle('has-rows', rows.length > 0);
  const st = $('validation-status');
  const n = (r.errors || []).length;
  const approvals = (r.approvals_needed || []).length;
  const notes = [r.warnings?.length ? `${r.warnings.length} warning(s)` : '', approvals ? `${approvals} approval(s) needed to publish` : ''].filter(Boolean);
  st.textContent = r.ok ? ['valid', ...notes].join(' · ') : `${n} error${n === 1 ? '' : 's'}`;
  st.className = 'badge ' + (r.ok ? (notes.length ? 'warn' : 'ok') : 'bad');
  // a count the engine stopped early is a lower bound, said as `lid validate` says it
  $('manifest-tokens').textContent = `${r.token_count_at_least ? 'at least ' : ''}${r.token_count} / ${r.token_cap}`;
  meter($('manifest-meter'), r.token_count, r.token_cap || 1000);
  const et = $('entry-tokens').querySelector('tbody');
  et.innerHTML = '';
  for (const e of r.entry_tokens || []) {
    const tr = document.createElement('tr');
    const has = units.has(e.name);
    tr.innerHTML = `<td class="code">${esc(e.name)}</td><td class="num">${e.tokens}</td><td>${has ? '✓ ' + lid.count_tokens(units.get(e.name)) + ' tokens' : '<span class="muted">no unit file</span>'}</td>`;
    et.appendChild(tr);
  }
  return r;
}

function renderStubs(manifest) {
  stubs = parse(lid.stubs(manifest, unitsJson()));
  const tabs = $('stub-tabs');
  tabs.innerHTML = '';
  $('stub-warnings').innerHTML = '';
  if (!Array.isArray(stubs)) {
    $('stub-text').textContent = stubs?.error ? `${stubs.error.code}: ${stubs.error.message}` : '';
    $('stub-tokens').textContent = '—';
    return;
  }
  for (const s of stubs) {
    const b = document.createElement('button');
    b.textContent = s.profile;
    b.className = s.profile === profile ? 'active' : '';
    b.onclick = () => { profile = s.profile; renderStubs(manifest); };
    tabs.appendChild(b);
  }
  const s = stubs.find((x) => x.profile === profile) || stubs[0];
  if (s.error) {
    $('stub-text').textContent = `${s.error.code}: ${s.error.message}`;
    $('stub-tokens').textContent = s.error.details?.body_tokens ? `${s.error.details.body_tokens} / 500` : '—';
    meter($('stub-meter'), s.error.details?.body_tokens || 0, 500);
  } else {
    $('stub-text').textContent = s.text;
    $('stub-tokens').textContent = `${s.body_tokens} / 500`;
    meter($('stub-meter'), s.body_tokens, 500);
  }
  const ul = $('stub-warnings');
  ul.innerHTML = '';
  for (const w of s.error ? [] : s.warnings || []) {
    const li = document.createElement('li');
    li.textContent = typeof w === 'string' ? w : `${w.code ?? ''}${w.code ? ': ' : ''}${w.message ?? JSON.stringify(w)}`;
    ul.appendChild(li);
  }
}

function renderCoverage(manifest) {
  const c = parse(lid.coverage(manifest, unitsJson()));
  const tbody = $('coverage').querySelector('tbody');
  tbody.innerHTML = '';
  const st = $('coverage-status');
  if (!c || c.error) {
    st.textContent = c?.error?.code || '—';
    st.className = 'badge bad';
    return;
  }
  st.textContent = c.passed ? 'passes' : `fails: ${c.failing_units.length} unit(s)`;
  st.className = 'badge ' + (c.passed ? 'ok' : 'bad');
  for (const u of c.units) {
    const tr = document.createElement('tr');
    const failed = (u.failed || []).map((f) => `<li>“${esc(f.paraphrase)}” → rank ${f.rank || '—'}</li>`).join('');
    tr.innerHTML = `<td class="code">${u.passed ? '✓' : '✗'} ${esc(u.unit)}</td><td class="num">${Math.round(u.coverage_pct * 100)}%</td><td class="num">${u.paraphrases}</td><td>${failed ? `<ul class="failed">${failed}</ul>` : '<span class="muted">none</span>'}</td>`;
    tbody.appendChild(tr);
  }
}

function renderRecall(manifest) {
  const intent = $('intent').value;
  const tbody = $('ranked').querySelector('tbody');
  tbody.innerHTML = '';
  if (!intent.trim()) { $('recall-note').textContent = 'Type an intent to see what recall_instruction would rank.'; return; }
  const r = parse(lid.rank(manifest, unitsJson(), intent));
  if (!r || r.error) { $('recall-note').textContent = r?.error ? `${r.error.code}: ${r.error.message}` : ''; return; }
  r.ranked.forEach((u, i) => {
    const tr = document.createElement('tr');
    tr.innerHTML = `<td>${i + 1}</td><td class="code">${esc(u.name)}</td><td><div class="score"><div class="bar" style="width:${Math.round(u.score * 120)}px"></div>${u.score.toFixed(3)}</div></td><td class="num">${u.lexical.toFixed(3)}</td><td class="num">${u.semantic.toFixed(3)}</td><td class="num">${u.graph.toFixed(3)}</td>`;
    tbody.appendChild(tr);
  });
  $('recall-note').textContent = r.unavailable.length ? `Not ranked (no unit file): ${r.unavailable.join(', ')}` : '';
}

// The manifest as `lid validate` reads a manifest file: after a byte-order mark (a
// pasted one keeps it).
const manifestText = () => $('manifest').value.replace(/^\uFEFF/, '');

// Stubs, recall and coverage cleared, with the reason, so that nothing on the page is
// left over from an earlier manifest.
function clearDerived(why) {
  live = null;
  stubs = [];
  $('stub-tabs').innerHTML = '';
  $('stub-text').textContent = why;
  $('stub-warnings').innerHTML = '';
  $('stub-tokens').textContent = '—';
  meter($('stub-meter'), 0, 500);
  $('ranked').querySelector('tbody').innerHTML = '';
  $('recall-note').textContent = why;
  $('coverage').querySelector('tbody').innerHTML = '';
  $('coverage-status').textContent = '—';
  $('coverage-status').className = 'badge';
}

function update() {
  const manifest = manifestText();
  // an empty box is what `lid validate` says of an empty file (invalid_json)
  const r = renderValidation(manifest);
  // Stubs, coverage and recall need a manifest that parses as one (even with entry
  // errors), within the cap: the gate ranks every paraphrase of every trigger intent,
  // which on a manifest of megabytes would hold the page for seconds on every edit, and
  // a publish refuses such a manifest first anyway.
  if (r.errors?.some((e) => e.code === 'invalid_json')) return clearDerived('The manifest is not JSON: see Validation.');
  if (r.errors?.some((e) => e.code === 'manifest_too_large')) return clearDerived('The manifest is over the 1000-token cap (manifest_too_large): a publish refuses it; shorten it to see its stubs, recall and coverage.');
  live = manifest;
  renderStubs(manifest);
  renderRecall(manifest);
  renderCoverage(manifest);
}

function schedule() {
  clearTimeout(timer);
  timer = setTimeout(update, 200);
}

// A file's text as the CLI reads it: UTF-8 or refused, and a byte-order mark kept (it is
// text `lid tokens` counts; `Blob.text()` would drop it, and replace bad bytes with U+FFFD).
async function fileText(f) {
  return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(await f.arrayBuffer());
}

// Files as an agent directory holds them: one manifest (`.json`) and unit files
// (`units/<name>.md`, the only unit files the CLI and the services read). Anything else,
// and a second manifest in the same drop, is refused by name, never taken silently.
async function addFiles(files) {
  const refused = [];
  let manifest = null;
  for (const f of files) {
    const isManifest = /\.json$/i.test(f.name);
    if (!isManifest && !/\.md$/i.test(f.name)) {
      refused.push(`${f.name}: not a unit file (units are .md files, as units/<name>.md in an agent directory) nor a manifest (.json)`);
      continue;
    }
    if (isManifest && manifest !== null) {
      refused.push(`${f.name}: a second manifest in one drop (${manifest} is the manifest now); drop one .json at a time`);
      continue;
    }
    let text;
    try {
      text = await fileText(f);
    } catch {
      refused.push(`${f.name}: not valid UTF-8 (lid reads manifests and units as UTF-8 text)`);
      continue;
    }
    if (isManifest) {
      manifest = f.name;
      $('manifest').value = text;
    } else units.set(f.name.replace(/\.md$/i, ''), text);
  }
  $('file-note').textContent = refused.join('\n');
  renderUnits();
  schedule();
}

async function loadDemo() {
  const m = await (await fetch('demo/manifest.json')).text();
  const j = JSON.parse(m);
  units.clear();
  for (const e of j.entries) {
    const r = await fetch(`demo/units/${e.name}.md`);
    if (r.ok) units.set(e.name, await r.text());
  }
  $('manifest').value = m;
  renderUnits();
  update();
}

try {
  await init();
} catch (e) {
  // without the engine nothing on this page can be computed: say so, and why
  $('engine').textContent = `the lid engine (WebAssembly) did not load, so nothing can be previewed: ${e && e.message ? e.message : e}`;
  $('engine').classList.add('engine-failed');
  document.body.dataset.ready = 'failed';
  throw e;
}
const info = parse(lid.info());
$('engine').textContent = `engine ${info.engine} · ranker ${info.ranker_version} · stub schema v${info.stub_version} · running in this page`;
$('manifest').addEventListener('input', schedule);
$('intent').addEventListener('input', () => { if (live !== null) renderRecall(live); });
$('files').addEventListener('change', (e) => addFiles(e.target.files));
$('load-demo').addEventListener('click', loadDemo);
$('add-unit').addEventListener('click', () => {
  const n = $('unit-name').value.trim();
  if (!n) return;
  units.set(n, $('unit-text').value);
  $('unit-name').value = '';
  $('unit-text').value = '';
  renderUnits();
  schedule();
});
const drop = $('drop');
drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', (e) => { e.preventDefault(); drop.classList.remove('over'); addFiles(e.dataTransfer.files); });
document.body.dataset.ready = '1';
