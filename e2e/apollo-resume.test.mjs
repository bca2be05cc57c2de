// apollo-resume.test.mjs: the resume-after-disconnect recipe of README's Frontends
// section (ResumableWsLink, resumable-link.mjs, the same code as the README's) with the
// real @apollo/client and graphql-ws: messageAdded from a cursor, the socket killed
// mid-stream while messages are added, and the subscription must end with every
// position after the cursor exactly once, in order. With Apollo's own GraphQLWsLink the
// same run repeats what came before the cut (it resubscribes with the first cursor),
// which the second test shows, so that the first could fail.
//
// Run: PARLEY_URL=http://127.0.0.1:18080 node --test apollo-resume.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import { ApolloClient, InMemoryCache, gql } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { ResumableWsLink } from './resumable-link.mjs';

const PARLEY_URL = (process.env.PARLEY_URL || '').replace(/\/$/, '');
const GRAPHQL = PARLEY_URL + '/graphql';
const WAIT = 30_000;

const ADDED = gql`
  subscription Added($c: ID!, $after: String) {
    messageAdded(conversationId: $c, after: $after) {
      cursor
      node { ... on MessageBase { id position } }
    }
  }
`;

async function post(query, variables = {}) {
  const res = await fetch(GRAPHQL, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
    signal: AbortSignal.timeout(WAIT),
  });
  const body = await res.json();
  assert.equal(body.errors, undefined, `${query}: ${JSON.stringify(body.errors)}`);
  return body.data;
}

async function possibleTypes() {
  const data = await post('{ __schema { types { name possibleTypes { name } } } }');
  const out = {};
  for (const t of data.__schema.types) if (t.possibleTypes) out[t.name] = t.possibleTypes.map((p) => p.name);
  return out;
}

const add = async (c, text) => (await post(
  'mutation($c: ID!, $t: String!) { addMessage(conversationId: $c, input: {text: {role: USER, content: $t}}) { cursor node { ... on MessageBase { position } } } }',
  { c, t: text })).addMessage;

// until waits for cond over the positions received, with a deadline.
async function until(what, got, cond) {
  const deadline = Date.now() + WAIT;
  while (!cond(got.positions)) {
    if (got.error) throw new Error(`subscription failed while waiting for ${what}: ${got.error}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(got.positions)}`);
    await new Promise((resolve) => { got.wake = resolve; setTimeout(resolve, 200); });
  }
}

// run subscribes through the link makeLink(wsClient) from the cursor of message 2, kills
// the socket after position 10, adds 11-15 while the client is away and 16-20 once it
// is back, and returns the positions received.
async function run(makeLink) {
  const conv = (await post('mutation { createConversation(title: "apollo resume") { id } }')).createConversation.id;
  let from;
  for (let i = 1; i <= 5; i++) {
    const m = await add(conv, `m${i}`);
    if (m.node.position === 2) from = m.cursor;
  }
  const sockets = [];
  class KillableWebSocket extends WebSocket {
    constructor(...args) { super(...args); sockets.push(this); }
  }
  let outage = null;
  let connections = 0;
  const ws = createClient({
    url: GRAPHQL.replace(/^http/, 'ws'),
    webSocketImpl: KillableWebSocket,
    retryAttempts: 5,
    shouldRetry: () => true,
    retryWait: async () => { if (outage) await outage; },
    on: { connected: () => { connections++; } },
  });
  const client = new ApolloClient({ link: makeLink(ws), cache: new InMemoryCache({ possibleTypes: await possibleTypes() }) });
  const got = { positions: [], error: null, wake: () => {} };
  const sub = client.subscribe({ query: ADDED, variables: { c: conv, after: from } }).subscribe({
    next: ({ data, error }) => {
      if (error) { got.error = String(error); got.wake(); return; }
      got.positions.push(data.messageAdded.node.position);
      got.wake();
    },
    error: (err) => { got.error = String(err); got.wake(); },
  });
  try {
    await until('positions up to 5', got, (p) => p.includes(5));
    for (let i = 6; i <= 10; i++) await add(conv, `m${i}`);
    await until('position 10', got, (p) => p.includes(10));
    let open;
    outage = new Promise((resolve) => { open = resolve; });
    sockets.at(-1).terminate();
    for (let i = 11; i <= 15; i++) await add(conv, `m${i}`); // while away
    open();
    await until('the reconnection', got, () => connections >= 2);
    for (let i = 16; i <= 20; i++) await add(conv, `m${i}`);
    await until('position 20', got, (p) => p.includes(20));
    return { positions: got.positions, connections };
  } finally {
    sub.unsubscribe();
    client.stop();
    await ws.dispose();
  }
}

const expected = Array.from({ length: 18 }, (_, i) => i + 3); // 3..20

if (!PARLEY_URL) {
  test('PARLEY_URL is set', () => assert.fail('set PARLEY_URL to the server under test'));
} else {
  test('README recipe: ResumableWsLink resumes from the last cursor, no duplicate, no gap', { timeout: 4 * WAIT }, async () => {
    const { positions, connections } = await run((ws) => new ResumableWsLink(ws));
    assert.ok(connections >= 2, `the client reconnected (${connections} connections)`);
    assert.deepEqual(positions, expected, 'every position after the cursor exactly once, in order');
  });

  test("Apollo's GraphQLWsLink alone resubscribes with the first cursor and repeats", { timeout: 4 * WAIT }, async () => {
    const { positions } = await run((ws) => new GraphQLWsLink(ws));
    assert.ok(positions.length > expected.length, `positions repeat after the reconnection: ${JSON.stringify(positions)}`);
    assert.deepEqual([...new Set(positions)].sort((a, b) => a - b), expected, 'the same positions, some twice');
  });

  test("README's recipe is resumable-link.mjs", () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const link = readFileSync(new URL('./resumable-link.mjs', import.meta.url), 'utf8').trim();
    assert.ok(readme.includes(link), 'README.md holds resumable-link.mjs verbatim: copy it there when it changes');
  });
}
