// subscriptions.test.mjs: realtime subscriptions of PARLEY_URL through real JS clients,
// the graphql-ws client (graphql-transport-ws over websockets) and the graphql-sse client
// (distinct connections mode). Each subscribes from a cursor, receives, has its connection
// killed under it, has messages written while it is away, resumes from the last cursor it
// saw, and must end up with every position exactly once, in order.
//
// Resuming is the clients' own retry: both send the same request object again when they
// reconnect, so keeping request.variables.after at the last cursor received is all a
// client has to do (the README's "Subscriptions" section says so).
//
// Run: PARLEY_URL=http://127.0.0.1:18080 node --test subscriptions.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { createClient as createWSClient } from 'graphql-ws';
import { createClient as createSSEClient } from 'graphql-sse';

const PARLEY_URL = (process.env.PARLEY_URL || '').replace(/\/$/, '');
const GRAPHQL = PARLEY_URL + '/graphql';
const WAIT = 30_000; // how long anything that should happen promptly may take

const SUBSCRIPTION = `subscription($c: ID!, $after: String) {
  messageAdded(conversationId: $c, after: $after) {
    cursor
    node { ... on MessageBase { id position } ... on TextMessage { text } }
  }
}`;

// gql posts a GraphQL request and returns its data, failing on any error.
async function gql(query, variables = {}) {
  const res = await fetch(GRAPHQL, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
    body: JSON.stringify({ query, variables }),
    signal: AbortSignal.timeout(WAIT),
  });
  const body = await res.json();
  assert.equal(body.errors, undefined, `${query}: ${JSON.stringify(body.errors)}`);
  return body.data;
}

async function createConversation(title) {
  return (await gql('mutation($t: String) { createConversation(title: $t) { id } }', { t: title })).createConversation.id;
}

async function addText(conversationId, text) {
  const data = await gql(
    `mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) { cursor node { ... on MessageBase { position } } } }`,
    { c: conversationId, i: { text: { role: 'USER', content: text } } });
  return data.addMessage;
}

async function addTexts(conversationId, n, label) {
  for (let i = 0; i < n; i++) await addText(conversationId, `${label} ${i}`);
}

// Received records a subscription's events and lets a test wait for a condition on them,
// woken by each event (never by a timer), with a deadline.
class Received {
  constructor() {
    this.positions = [];
    this.error = null;
    this.waiters = [];
  }
  push(position) {
    this.positions.push(position);
    this.wake();
  }
  fail(err) {
    this.error = err;
    this.wake();
  }
  wake() {
    for (const w of this.waiters.splice(0)) w();
  }
  async until(what, cond) {
    const deadline = Date.now() + WAIT;
    while (!cond(this.positions)) {
      if (this.error) throw new Error(`subscription failed while waiting for ${what}: ${JSON.stringify(this.error)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; got positions ${JSON.stringify(this.positions)}`);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => { clearTimeout(timer); resolve(); });
      });
    }
  }
  async count(n) {
    await this.until(`${n} messages`, (ps) => ps.length >= n);
  }
}

// range returns [from, from+1, ..., to].
function range(from, to) {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

// A promise with its resolve, for holding a client's reconnection back.
function gate() {
  let open;
  const opened = new Promise((resolve) => { open = resolve; });
  return { opened, open };
}

// cursorOf returns the cursor of the message at position in a conversation.
async function cursorOf(conversationId, position) {
  const data = await gql(`query($c: ID!, $n: Int!) { conversation(id: $c) { messages(first: $n) { edges { cursor } } } }`,
    { c: conversationId, n: position });
  return data.conversation.messages.edges[position - 1].cursor;
}

if (!PARLEY_URL) {
  test('PARLEY_URL is set', () => {
    assert.fail('set PARLEY_URL to the server under test, e.g. http://127.0.0.1:18080');
  });
} else {
  test('graphql-ws: replay from a cursor, live, and resume after a forced disconnect without loss or duplicates', { timeout: 2 * WAIT }, async () => {
    const conv = await createConversation('graphql-ws e2e');
    await addTexts(conv, 3, 'before');
    const request = { query: SUBSCRIPTION, variables: { c: conv, after: await cursorOf(conv, 1) } };

    // The websocket implementation remembers its sockets, so the test can kill the
    // current one (terminate: no close handshake, as when a network drops).
    const sockets = [];
    class KillableWebSocket extends WebSocket {
      constructor(...args) {
        super(...args);
        sockets.push(this);
      }
    }
    let outage = null; // set while the test keeps the client from reconnecting
    let connections = 0;
    const client = createWSClient({
      url: GRAPHQL.replace(/^http/, 'ws'),
      webSocketImpl: KillableWebSocket,
      retryAttempts: 5,
      retryWait: async () => { if (outage) await outage.opened; },
      shouldRetry: () => true,
      on: { connected: () => { connections++; } },
    });
    const got = new Received();
    const dispose = client.subscribe(request, {
      next: ({ data, errors }) => {
        if (errors) return got.fail(errors);
        got.push(data.messageAdded.node.position);
        request.variables.after = data.messageAdded.cursor; // what a reconnection resumes from
      },
      error: (err) => got.fail(err),
      complete: () => got.fail('completed'),
    });
    try {
      await got.count(2); // replay: positions 2 and 3
      assert.deepEqual(got.positions, [2, 3]);
      await addTexts(conv, 2, 'live');
      await got.count(4);
      assert.deepEqual(got.positions, range(2, 5));

      outage = gate();
      sockets.at(-1).terminate();
      await addTexts(conv, 3, 'while away'); // positions 6..8, written while disconnected
      outage.open();
      await addTexts(conv, 2, 'after'); // 9, 10
      await got.count(9);
      assert.deepEqual(got.positions, range(2, 10), 'every position exactly once, in order');
      assert.ok(connections >= 2, `the client reconnected (${connections} connections)`);
    } finally {
      dispose();
      await client.dispose();
    }
  });

  test('graphql-sse: replay from a cursor, live, and resume after a forced disconnect without loss or duplicates', { timeout: 2 * WAIT }, async () => {
    const conv = await createConversation('graphql-sse e2e');
    await addTexts(conv, 3, 'before');
    const request = { query: SUBSCRIPTION, variables: { c: conv, after: await cursorOf(conv, 1) } };

    // fetch with a kill switch: aborting the current response's own controller breaks
    // the stream under the client, which takes it for a network failure.
    const streams = [];
    const fetchFn = (url, init = {}) => {
      const ctl = new AbortController();
      init.signal?.addEventListener('abort', () => ctl.abort());
      streams.push(ctl);
      return fetch(url, { ...init, signal: ctl.signal });
    };
    let outage = null;
    let connections = 0;
    const client = createSSEClient({
      url: GRAPHQL,
      fetchFn,
      retryAttempts: 5,
      retry: async () => { if (outage) await outage.opened; },
      on: { connected: () => { connections++; } },
    });
    const got = new Received();
    const dispose = client.subscribe(request, {
      next: ({ data, errors }) => {
        if (errors) return got.fail(errors);
        got.push(data.messageAdded.node.position);
        request.variables.after = data.messageAdded.cursor;
      },
      error: (err) => got.fail(String(err)),
      complete: () => got.fail('completed'),
    });
    try {
      await got.count(2);
      assert.deepEqual(got.positions, [2, 3]);
      await addTexts(conv, 2, 'live');
      await got.count(4);
      assert.deepEqual(got.positions, range(2, 5));

      outage = gate();
      streams.at(-1).abort();
      await addTexts(conv, 3, 'while away');
      outage.open();
      await addTexts(conv, 2, 'after');
      await got.count(9);
      assert.deepEqual(got.positions, range(2, 10), 'every position exactly once, in order');
      assert.ok(connections >= 2, `the client reconnected (${connections} connections)`);
    } finally {
      dispose();
      client.dispose();
    }
  });

  test('graphql-ws and graphql-sse: bad arguments are refused with the API\'s error codes', { timeout: WAIT }, async () => {
    const conv = await createConversation('errors e2e');
    const ws = createWSClient({ url: GRAPHQL.replace(/^http/, 'ws'), webSocketImpl: WebSocket, retryAttempts: 0 });
    const sse = createSSEClient({ url: GRAPHQL, retryAttempts: 0 });
    try {
      for (const [name, client] of [['graphql-ws', ws], ['graphql-sse', sse]]) {
        for (const [variables, code] of [
          [{ c: conv, after: 'not a cursor' }, 'BAD_USER_INPUT'],
          [{ c: 'conv_00000000-0000-0000-0000-000000000000' }, 'NOT_FOUND'],
        ]) {
          const errors = await new Promise((resolve, reject) => {
            client.subscribe({ query: SUBSCRIPTION, variables }, {
              next: ({ errors }) => errors && resolve(errors),
              error: (err) => resolve(err),
              complete: () => reject(new Error(`${name}: completed without an error`)),
            });
          });
          assert.equal(errors[0]?.extensions?.code, code, `${name}: ${JSON.stringify(errors)}`);
        }
      }
    } finally {
      await ws.dispose();
      sse.dispose();
    }
  });
}
