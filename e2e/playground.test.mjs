// playground.test.mjs: the GraphiQL playground at PARLEY_URL + "/" renders in headless
// Chromium from the server's own assets alone, and runs a query against /graphql.
//
// Run: PARLEY_URL=http://127.0.0.1:18080 node --test playground.test.mjs
// Needs Debian's chromium at /usr/bin/chromium (scripts/ensure-e2e.sh installs it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const PARLEY_URL = process.env.PARLEY_URL;
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

// Deadlines, not sleeps: each wait polls until its condition holds or its time is up.
const RENDER_TIMEOUT_MS = 30_000; // a cold Chromium on a small machine parsing 1 MB of GraphiQL
const RESULT_TIMEOUT_MS = 20_000;

const QUERY = '{ __typename }';

test('playground renders GraphiQL without leaving the origin and runs a query', async (t) => {
  assert.ok(PARLEY_URL, 'set PARLEY_URL to the server under test, e.g. http://127.0.0.1:18080');
  const origin = new URL(PARLEY_URL).origin;
  const wsOrigin = origin.replace(/^http/, 'ws');

  const userDataDir = await mkdtemp(join(tmpdir(), 'parley-e2e-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-quic',
      '--disable-sync',
    ],
    viewport: { width: 1400, height: 900 },
  });
  t.after(async () => {
    await context.close();
    await rm(userDataDir, { recursive: true, force: true });
  });

  // Everything the page asks for, and everything that went wrong on the way.
  const requests = [];
  const foreign = [];
  const failures = [];
  const pageErrors = [];
  context.on('request', (req) => {
    const url = req.url();
    requests.push(`${req.method()} ${url}`);
    if (/^(data|blob|about):/.test(url)) return; // never leaves the browser
    if (new URL(url).origin !== origin) foreign.push(`${req.method()} ${url}`);
  });
  context.on('requestfailed', (req) => failures.push(`${req.url()}: ${req.failure()?.errorText}`));
  context.on('response', (resp) => {
    if (resp.status() >= 400) failures.push(`${resp.url()}: HTTP ${resp.status()}`);
  });

  const page = context.pages()[0] ?? (await context.newPage());
  page.on('websocket', (ws) => {
    requests.push(`WEBSOCKET ${ws.url()}`);
    if (new URL(ws.url()).origin !== wsOrigin) foreign.push(`WEBSOCKET ${ws.url()}`);
  });
  page.on('pageerror', (err) => pageErrors.push(err.message));
  // Whatever the Content-Security-Policy blocks, GraphiQL would miss.
  await page.addInitScript(() => {
    window.__cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__cspViolations.push(`${e.violatedDirective} blocked ${e.blockedURI || 'inline'} ${e.sample || ''}`.trim());
    });
  });

  try {
    const resp = await page.goto(PARLEY_URL.replace(/\/$/, '') + '/');
    assert.equal(resp.status(), 200, `GET ${PARLEY_URL}/: got status ${resp.status()}, want 200`);

    const queryEditor = page.locator('.graphiql-query-editor .CodeMirror');
    await queryEditor.waitFor({ state: 'visible', timeout: RENDER_TIMEOUT_MS });
    const defaultQuery = await queryEditor.evaluate((el) => el.CodeMirror.getValue());
    assert.match(defaultQuery, /conversations/, `the editor shows ${JSON.stringify(defaultQuery)}, want Parley's default query`);

    // CodeMirror 5 hangs its instance on the wrapper; setting the text through it avoids
    // fighting auto-closed brackets and autocompletion while typing.
    await queryEditor.evaluate((el, q) => el.CodeMirror.setValue(q), QUERY);
    await page.locator('button.graphiql-execute-button').click();

    const resultText = () =>
      page.evaluate(() => document.querySelector('.graphiql-response .CodeMirror')?.CodeMirror?.getValue() ?? '');
    try {
      await page.waitForFunction(
        () => {
          const result = document.querySelector('.graphiql-response .CodeMirror');
          return /"__typename":\s*"Query"/.test(result?.CodeMirror?.getValue() ?? '');
        },
        null,
        { timeout: RESULT_TIMEOUT_MS, polling: 100 },
      );
    } catch (err) {
      if (err.name !== 'TimeoutError') throw err;
      assert.fail(`after ${RESULT_TIMEOUT_MS} ms the result pane shows ${JSON.stringify(await resultText())}, want "__typename": "Query"`);
    }

    assert.deepEqual(foreign, [], `requests left ${origin}:\n  ${foreign.join('\n  ')}`);
    assert.deepEqual(failures, [], `requests failed:\n  ${failures.join('\n  ')}`);
    const violations = await page.evaluate(() => window.__cspViolations);
    assert.deepEqual(violations, [], `Content-Security-Policy violations:\n  ${violations.join('\n  ')}`);
    assert.deepEqual(pageErrors, [], `uncaught errors in the page:\n  ${pageErrors.join('\n  ')}`);
    assert.ok(
      requests.some((r) => r.startsWith(`POST ${origin}/graphql`)),
      `GraphiQL never POSTed to ${origin}/graphql; requests:\n  ${requests.join('\n  ')}`,
    );
  } catch (err) {
    const shot = join(tmpdir(), `parley-playground-failure-${process.pid}-${Date.now()}.png`);
    try {
      await page.screenshot({ path: shot, fullPage: true });
      console.error(`playground test failed; screenshot: ${shot}`);
    } catch (shotErr) {
      console.error(`playground test failed; no screenshot: ${shotErr.message}`);
    }
    console.error(`requests seen:\n  ${requests.join('\n  ')}`);
    throw err;
  }
});
