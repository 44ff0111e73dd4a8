// End-to-end test of the browser preview: headless Chromium (playwright-core, Debian's
// /usr/bin/chromium) loads /preview/ from the running worker (LID_WORKER_URL), pastes a
// manifest with a known error, and checks what the page shows against the native CLI
// (`lid validate --json`, LID_BIN): the error code and entry, the manifest's token count
// and every entry's. Screenshot: test-output/preview.png.
//   LID_WORKER_URL=http://127.0.0.1:8787 LID_BIN=../target/release/lid node --test tests/preview.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const base = process.env.LID_WORKER_URL;
const lidBin = process.env.LID_BIN || join(here, '../../target/release/lid');
const out = join(here, '../test-output');

test('the preview shows validation errors and token counts computed in the browser', { timeout: 120_000 }, async () => {
  assert.ok(base, 'set LID_WORKER_URL to the running worker');
  const manifest = JSON.parse(readFileSync(join(here, '../../examples/demo-agent/manifest.json'), 'utf8'));
  manifest.entries[2].name = 'Rollback Procedure!'; // not kebab-case: manifest_entry_invalid
  const text = JSON.stringify(manifest, null, 2);
  const tmp = mkdtempSync(join(tmpdir(), 'lid-e2e-'));
  writeFileSync(join(tmp, 'manifest.json'), text);
  let expected;
  try {
    execFileSync(lidBin, ['validate', join(tmp, 'manifest.json'), '--json'], { encoding: 'utf8' });
    assert.fail('lid validate accepted a manifest with an invalid entry');
  } catch (e) {
    expected = JSON.parse(e.stdout);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  assert.equal(expected.ok, false);

  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 1100 } });
    const requests = [];
    page.on('request', (r) => requests.push(r.url()));
    // The page's Content-Security-Policy blocks nothing the page itself needs.
    const violations = [];
    page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) violations.push(m.text()); });
    const resp = await page.goto(`${base}/preview/`);
    assert.equal(resp.status(), 200);
    await page.waitForSelector('body[data-ready="1"]', { timeout: 60_000 });
    const loaded = requests.length;

    await page.fill('#manifest', text);
    await page.waitForFunction(() => document.querySelector('#manifest-tokens').textContent.includes('/'));
    await page.waitForSelector('#problems tbody tr.error');

    const shown = await page.$$eval('#problems tbody tr.error', (rows) => rows.map((r) => ({ code: r.querySelector('.code').textContent, entry: r.querySelector('.entry').textContent })));
    assert.ok(shown.some((p) => p.code === 'manifest_entry_invalid' && p.entry === 'Rollback Procedure!'), JSON.stringify(shown));
    assert.deepEqual(shown.map((p) => p.code), expected.errors.map((e) => e.code));
    assert.equal(await page.textContent('#validation-status'), `${expected.errors.length} errors`);
    assert.equal(await page.textContent('#manifest-tokens'), `${expected.token_count} / 1000`);
    const entries = await page.$$eval('#entry-tokens tbody tr', (rows) => rows.map((r) => [r.cells[0].textContent, Number(r.cells[1].textContent)]));
    assert.deepEqual(entries, expected.entry_tokens.map((e) => [e.name, e.tokens]));
    // Computed in the page: typing fetched nothing from the server.
    assert.equal(requests.length, loaded, `requests after load: ${requests.slice(loaded).join(', ')}`);

    // The demo agent: stubs, coverage and recall render too.
    const demoDir = join(here, '../../examples/demo-agent');
    const demo = JSON.parse(execFileSync(lidBin, ['validate', join(demoDir, 'manifest.json'), '--json'], { encoding: 'utf8' }));
    const demoStub = JSON.parse(execFileSync(lidBin, ['stub', demoDir, '--json'], { encoding: 'utf8' }));
    await page.click('#load-demo');
    await page.waitForSelector('#validation-status.warn');
    // what a publish needs approved, as `lid validate` lists it
    assert.ok(demo.approvals_needed.length > 0, 'the demo needs an approval to publish');
    assert.equal(await page.textContent('#validation-status'), `valid · ${demo.approvals_needed.length} approval(s) needed to publish`);
    const approvals = await page.$$eval('#problems tbody tr.approval', (rows) => rows.map((r) => [r.querySelector('.code').textContent, r.querySelector('.entry').textContent]));
    assert.deepEqual(approvals, demo.approvals_needed.map((a) => [`needs approval: ${a.code}`, a.entry ?? '—']));
    await page.fill('#intent', 'production is broken after the deploy, how do I roll back?');
    await page.waitForSelector('#ranked tbody tr');
    assert.equal(await page.textContent('#ranked tbody tr:first-child td.code'), 'rollback-procedure');
    assert.equal(await page.textContent('#stub-tokens'), `${demoStub.body_tokens} / 500`);
    // the stub's warnings, as `lid stub` gives them
    assert.ok(demoStub.warnings.length > 0);
    assert.deepEqual(await page.$$eval('#stub-warnings li', (ls) => ls.map((l) => l.textContent)), demoStub.warnings);
    await page.waitForSelector('#coverage tbody tr');

    // A manifest that no longer parses leaves nothing of the last one on screen.
    const demoText = readFileSync(join(demoDir, 'manifest.json'), 'utf8');
    await page.fill('#manifest', demoText.slice(0, 40));
    await page.waitForSelector('#validation-status.bad');
    await page.waitForFunction(() => !document.querySelector('#ranked tbody tr') && !document.querySelector('#coverage tbody tr') && !document.querySelector('#stub-tabs button'));
    assert.equal(await page.textContent('#stub-tokens'), '—');
    assert.equal(await page.textContent('#coverage-status'), '—');
    // Typing an intent then ranks nothing from the old manifest either.
    await page.fill('#intent', 'roll back the deploy');
    assert.equal(await page.$('#ranked tbody tr'), null);
    // A byte-order mark before the manifest: validated and ranked alike.
    await page.fill('#manifest', '\uFEFF' + demoText);
    await page.waitForSelector('#ranked tbody tr');
    assert.equal(await page.textContent('#ranked tbody tr:first-child td.code'), 'rollback-procedure');
    // A file that is not UTF-8 is refused by name, as the CLI refuses it, not read with
    // replacement characters; the manifest on the page stays as it was.
    await page.setInputFiles('#files', { name: 'latin1.json', mimeType: 'application/json', buffer: Buffer.from([0x7b, 0x22, 0xe9, 0x22, 0x7d]) });
    await page.waitForFunction(() => document.querySelector('#file-note').textContent.includes('latin1.json: not valid UTF-8'));
    assert.equal(await page.inputValue('#manifest'), '\uFEFF' + demoText);
    // Only `.md` files are units, and one drop holds one manifest: a second `.json` and a
    // `.txt` are refused by name, the first manifest taken, the `.md` a unit.
    await page.setInputFiles('#files', [
      { name: 'first.json', mimeType: 'application/json', buffer: Buffer.from(demoText) },
      { name: 'second.json', mimeType: 'application/json', buffer: Buffer.from('{}') },
      { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('not a unit') },
      { name: 'extra-unit.md', mimeType: 'text/markdown', buffer: Buffer.from('An extra unit.') },
    ]);
    await page.waitForFunction(() => document.querySelector('#file-note').textContent.includes('second.json: a second manifest'));
    const note = await page.textContent('#file-note');
    assert.match(note, /notes\.txt: not a unit file/);
    assert.equal(await page.inputValue('#manifest'), demoText);
    assert.match(await page.textContent('#units'), /extra-unit\.md/);
    assert.doesNotMatch(await page.textContent('#units'), /notes/);
    // The screenshot shows the error case: paste it back.
    await page.fill('#manifest', text);
    await page.waitForSelector('#problems tbody tr.error');
    mkdirSync(out, { recursive: true });
    await page.screenshot({ path: join(out, 'preview.png'), fullPage: true });
    assert.deepEqual(violations, []);
    // ...and blocks a script that text on the page might smuggle in: an inline one, and
    // one from another origin, never run.
    const smuggled = await page.evaluate(async () => {
      const inline = document.createElement('script');
      inline.textContent = 'window.__smuggled = "inline"';
      document.head.append(inline);
      const img = document.createElement('img');
      img.setAttribute('src', 'x:');
      img.setAttribute('onerror', 'window.__smuggled = "handler"');
      document.body.append(img);
      await new Promise((r) => setTimeout(r, 200));
      return window.__smuggled ?? null;
    });
    assert.equal(smuggled, null);
    assert.ok(violations.length >= 2, `the blocked scripts are reported: ${violations.join(' | ')}`);
    // An engine that does not load is said, not a page that silently computes nothing.
    const broken = await browser.newPage();
    await broken.route('**/*.wasm', (r) => r.abort());
    await broken.goto(`${base}/preview/`);
    await broken.waitForSelector('body[data-ready="failed"]', { timeout: 60_000 });
    assert.match(await broken.textContent('#engine'), /did not load, so nothing can be previewed/);
  } finally {
    await browser.close();
  }
});
