// playground-token.test.mjs: in auth mode the playground keeps the token of its headers
// pane across a reload, in the tab's sessionStorage only: a reload still runs queries
// as the token's owner, another tab starts without it, and localStorage never holds it.
// The server is a bin/parley of its own, verifying HS256 JWTs.
//
// Run: node --test playground-token.test.mjs (after make build)
// Needs Debian's chromium at /usr/bin/chromium (scripts/ensure-e2e.sh installs it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { hs256, startParley } from './own-parley.mjs';

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const READY_MS = Number(process.env.PARLEY_E2E_READY_TIMEOUT || 90) * 1000;
const RENDER_TIMEOUT_MS = 30_000;
const RESULT_TIMEOUT_MS = 20_000;
const JWT_SECRET = 'e2e-playground-secret-of-32-bytes-or-more';

// jwt signs an HS256 JWT for owner that the test's server verifies.
const jwt = (owner) => hs256(owner, JWT_SECRET);

// open loads the playground in page and waits for its editor.
async function open(page, url) {
  const resp = await page.goto(url + '/');
  assert.equal(resp.status(), 200);
  await page.locator('.graphiql-query-editor .CodeMirror').waitFor({ state: 'visible', timeout: RENDER_TIMEOUT_MS });
}

// headersPane shows the headers pane and returns its text.
async function headersText(page) {
  await page.getByRole('button', { name: 'Headers' }).click();
  const editor = page.locator('.graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror').last();
  await editor.waitFor({ state: 'visible', timeout: RENDER_TIMEOUT_MS });
  return editor;
}

// run runs query and returns the result pane's text once it has a result.
async function run(page, query) {
  await page.locator('.graphiql-query-editor .CodeMirror').evaluate((el, q) => el.CodeMirror.setValue(q), query);
  await page.evaluate(() => { const r = document.querySelector('.graphiql-response .CodeMirror'); if (r) r.CodeMirror.setValue(''); });
  await page.locator('button.graphiql-execute-button').click();
  await page.waitForFunction(() => /"(data|errors)"/.test(document.querySelector('.graphiql-response .CodeMirror')?.CodeMirror?.getValue() ?? ''),
    null, { timeout: RESULT_TIMEOUT_MS, polling: 100 });
  return page.evaluate(() => document.querySelector('.graphiql-response .CodeMirror').CodeMirror.getValue());
}

test('auth mode: the playground keeps the token across a reload, in this tab only', { timeout: 5 * RENDER_TIMEOUT_MS + READY_MS }, async (t) => {
  const url = await startParley(t, ['--jwt-secret', JWT_SECRET], 'parley-e2e-playground-');
  const token = jwt('alice');
  const userDataDir = await mkdtemp(join(tmpdir(), 'parley-e2e-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--no-first-run', '--disable-quic', '--disable-sync'],
    viewport: { width: 1400, height: 900 },
  });
  t.after(async () => {
    await context.close();
    await rm(userDataDir, { recursive: true, force: true });
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const query = '{ conversations(first: 1) { totalCount } }';

  await open(page, url);
  assert.match(await run(page, query), /UNAUTHENTICATED/, 'without a token the query is refused');
  const editor = await headersText(page);
  await editor.evaluate((el, h) => el.CodeMirror.setValue(h), JSON.stringify({ Authorization: `Bearer ${token}` }));
  assert.match(await run(page, query), /"totalCount": 0/, 'with the token the query runs');

  await page.reload();
  await open(page, url);
  const after = await (await headersText(page)).evaluate((el) => el.CodeMirror.getValue());
  assert.ok(after.includes(token), `after a reload the headers pane holds the token; it holds ${JSON.stringify(after)}`);
  assert.match(await run(page, query), /"totalCount": 0/, 'after a reload the query still runs as alice');

  const stored = await page.evaluate(() => ({ session: JSON.stringify(sessionStorage), local: JSON.stringify(localStorage) }));
  assert.ok(stored.session.includes(token), 'the token is in the tab\'s sessionStorage');
  assert.ok(!stored.local.includes(token), 'the token is not in localStorage');

  // Another tab of the same browser starts without it.
  const other = await context.newPage();
  await open(other, url);
  const otherHeaders = await (await headersText(other)).evaluate((el) => el.CodeMirror.getValue());
  assert.ok(!otherHeaders.includes(token), `another tab's headers pane is empty of the token: ${JSON.stringify(otherHeaders)}`);
  assert.match(await run(other, query), /UNAUTHENTICATED/, 'another tab runs without the token');
});
