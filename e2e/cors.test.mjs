// cors.test.mjs: a browser app on another origin. A page served by a tiny static server
// on a second loopback port (its own origin) runs in headless Chromium and talks to
// Parley servers that list that origin with --trusted-origin: queries and mutations with
// fetch (POST and GET), X-Request-Id read from the answer, an SSE subscription and a
// websocket subscription (graphql-transport-ws), in local mode and with a JWT. A page on
// a third origin, not trusted, is refused by the browser. The servers are bin/parley
// processes of this test's own (each with its own embedded Postgres), since the origin
// to trust is known only once the static server listens.
//
// Run: PARLEY_URL=... node --test cors.test.mjs (PARLEY_URL is not used; bin/parley is)
// Needs Debian's chromium at /usr/bin/chromium (scripts/ensure-e2e.sh installs it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { hs256, startParley } from './own-parley.mjs';

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const BIN = fileURLToPath(new URL('../bin/parley', import.meta.url));
const WAIT = 30_000; // how long anything that should happen promptly may take
const JWT_SECRET = 'e2e-cors-secret-of-at-least-32-bytes!!';

// staticOrigin serves an empty HTML page on a free loopback port and returns its origin.
async function staticOrigin(t) {
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>app</title><p>app</p>');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${server.address().port}`;
}

// jwt signs an HS256 JWT for owner that the test's server verifies.
const jwt = (owner) => hs256(owner, JWT_SECRET);

// inPage runs what a browser app does, in the page: everything crosses origins.
async function inPage({ api, token }) {
  const WAIT = 30_000;
  const headers = { 'content-type': 'application/json', accept: 'application/graphql-response+json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const out = {};
  const post = async (query, variables) => {
    const res = await fetch(api + '/graphql', { method: 'POST', headers, body: JSON.stringify({ query, variables }) });
    return { status: res.status, requestId: res.headers.get('x-request-id'), body: await res.json() };
  };

  // A mutation and a query with POST, a query with GET.
  const created = await post('mutation { createConversation(title: "from another origin") { id } }');
  out.mutation = { status: created.status, requestId: created.requestId, errors: created.body.errors };
  const c = created.body.data.createConversation.id;
  const first = await post(
    'mutation($c: ID!) { addMessage(conversationId: $c, input: {text: {role: USER, content: "first"}}) { cursor } }', { c });
  const after = first.body.data.addMessage.cursor;
  const q = await post('query($c: ID!) { conversation(id: $c) { title messageCount } }', { c });
  out.query = q.body.data;
  const get = await fetch(api + '/graphql?query=' + encodeURIComponent('{ __typename }'),
    { headers: token ? { authorization: headers.authorization } : {} });
  out.get = { status: get.status, body: await get.json() };

  // Without the token an authenticated server's 401 is readable by the page.
  if (token) {
    const res = await fetch(api + '/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ __typename }"}' });
    out.unauthenticated = { status: res.status, code: (await res.json()).errors?.[0]?.extensions?.code };
  }

  const subscription = 'subscription($c: ID!, $a: String) { messageAdded(conversationId: $c, after: $a) { node { ... on TextMessage { text } } } }';
  const second = async () => post(
    'mutation($c: ID!) { addMessage(conversationId: $c, input: {text: {role: USER, content: "second"}}) { cursor } }', { c });

  // SSE (graphql-sse distinct connections): a POST accepting text/event-stream.
  out.sse = await (async () => {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), WAIT);
    try {
      const res = await fetch(api + '/graphql', {
        method: 'POST', signal: ctl.signal,
        headers: { ...headers, accept: 'text/event-stream' },
        body: JSON.stringify({ query: subscription, variables: { c, a: after } }),
      });
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let text = '';
      let wrote = false;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return { status: res.status, text };
        text += value;
        if (!wrote && text.includes(':')) { wrote = true; await second(); }
        if (text.includes('"second"')) { ctl.abort(); return { status: res.status, received: 'second' }; }
      }
    } catch (e) {
      return { error: String(e) };
    } finally {
      clearTimeout(timer);
    }
  })();

  // A websocket speaking graphql-transport-ws, authenticating in connection_init.
  out.ws = await new Promise((resolve) => {
    const ws = new WebSocket(api.replace(/^http/, 'ws') + '/graphql', 'graphql-transport-ws');
    const timer = setTimeout(() => { ws.close(); resolve({ error: 'timed out' }); }, WAIT);
    const texts = [];
    ws.onopen = () => ws.send(JSON.stringify({ type: 'connection_init', payload: token ? { Authorization: `Bearer ${token}` } : {} }));
    ws.onerror = () => { clearTimeout(timer); resolve({ error: 'websocket error' }); };
    ws.onclose = (e) => { clearTimeout(timer); resolve({ closed: e.code, texts }); };
    ws.onmessage = (e) => {
      const m = JSON.parse(e.data);
      if (m.type === 'connection_ack') {
        ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: subscription, variables: { c, a: after } } }));
      } else if (m.type === 'next') {
        // The replay (what SSE saw arrive), then one added while subscribed.
        texts.push(m.payload.data.messageAdded.node.text);
        if (texts.length === 1) {
          post('mutation($c: ID!) { addMessage(conversationId: $c, input: {text: {role: USER, content: "third"}}) { cursor } }', { c });
        }
        if (texts.length === 2) { clearTimeout(timer); ws.close(); resolve({ texts }); }
      } else if (m.type === 'error') {
        clearTimeout(timer); resolve({ error: JSON.stringify(m.payload) });
      }
    };
  });
  return out;
}

async function browser(t) {
  const userDataDir = await mkdtemp(join(tmpdir(), 'parley-e2e-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--no-first-run', '--disable-quic', '--disable-sync'],
  });
  t.after(async () => {
    await context.close();
    await rm(userDataDir, { recursive: true, force: true });
  });
  return context;
}

test('a page on a trusted origin queries, mutates and subscribes, in local mode and with a token', async (t) => {
  await readFile(BIN).catch(() => assert.fail(`${BIN} is missing: make build (make test-e2e builds it)`));
  const app = await staticOrigin(t);
  const stranger = await staticOrigin(t);
  const [local, authed] = await Promise.all([
    startParley(t, ['--trusted-origin', app], 'parley-e2e-cors-'),
    startParley(t, ['--trusted-origin', app, '--jwt-secret', JWT_SECRET], 'parley-e2e-cors-'),
  ]);
  const context = await browser(t);
  const page = await context.newPage();
  await page.goto(app + '/');

  for (const [mode, api, token] of [['local', local, ''], ['jwt', authed, jwt('alice')]]) {
    await t.test(mode, async () => {
      const out = await page.evaluate(inPage, { api, token });
      assert.equal(out.mutation.status, 200, JSON.stringify(out.mutation));
      assert.equal(out.mutation.errors, undefined);
      assert.match(out.mutation.requestId ?? '', /^[A-Za-z0-9._:-]+$/, 'X-Request-Id is exposed to the page');
      assert.deepEqual(out.query, { conversation: { title: 'from another origin', messageCount: 1 } });
      assert.deepEqual(out.get, { status: 200, body: { data: { __typename: 'Query' } } });
      if (token) assert.deepEqual(out.unauthenticated, { status: 401, code: 'UNAUTHENTICATED' });
      assert.deepEqual(out.sse, { status: 200, received: 'second' }, 'SSE from the page');
      assert.deepEqual(out.ws, { texts: ['second', 'third'] }, 'websocket from the page');
    });
  }

  await t.test('a page on another origin is refused', async () => {
    const other = await context.newPage();
    await other.goto(stranger + '/');
    const got = await other.evaluate(async (api) => {
      try {
        await fetch(api + '/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ __typename }"}' });
        return 'read the answer';
      } catch (e) {
        return e.name;
      }
    }, local);
    assert.equal(got, 'TypeError', 'the browser must not let an untrusted page read the answer');
  });
});
