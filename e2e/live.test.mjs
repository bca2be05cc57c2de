// live.test.mjs: a streaming message watched through messageStream by the real graphql-ws
// client, whose connection is killed after delta 200 while the writer goes on; it resumes
// from the last cursor it saw (its own retry, with request.variables.after kept at the last
// cursor) and must end with the message whole, every delta exactly once and in order, and
// the completed text equal to the deltas.
//
// Run: PARLEY_URL=http://127.0.0.1:18080 node --test live.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';

const PARLEY_URL = (process.env.PARLEY_URL || '').replace(/\/$/, '');
const GRAPHQL = PARLEY_URL + '/graphql';
const WAIT = 30_000;

const STREAM = `subscription($c: ID!, $after: String) {
  messageStream(conversationId: $c, after: $after) {
    cursor
    message { ... on MessageBase { id messageStatus } ... on TextMessage { text } }
    delta { seq deltas { text } }
  }
}`;

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

// Events records what the subscription received and wakes waiters on each event.
class Events {
  constructor() { this.list = []; this.error = null; this.waiters = []; }
  push(ev) { this.list.push(ev); this.wake(); }
  fail(err) { this.error = err; this.wake(); }
  wake() { for (const w of this.waiters.splice(0)) w(); }
  async until(what, cond) {
    const deadline = Date.now() + WAIT;
    while (!cond(this.list)) {
      if (this.error) throw new Error(`subscription failed while waiting for ${what}: ${JSON.stringify(this.error)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; got ${this.list.length} events`);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => { clearTimeout(timer); resolve(); });
      });
    }
  }
}

if (!PARLEY_URL) {
  test('PARLEY_URL is set', () => assert.fail('set PARLEY_URL to the server under test'));
} else {
  test('graphql-ws: a subscriber cut off at delta 200 resumes from its cursor with no loss and no duplicate', { timeout: 4 * WAIT }, async () => {
    const conv = (await gql('mutation { createConversation(title: "live e2e") { id } }')).createConversation.id;
    const request = { query: STREAM, variables: { c: conv, after: null } };
    const sockets = [];
    class KillableWebSocket extends WebSocket {
      constructor(...args) { super(...args); sockets.push(this); }
    }
    let outage = null;
    let connections = 0;
    const client = createClient({
      url: GRAPHQL.replace(/^http/, 'ws'),
      webSocketImpl: KillableWebSocket,
      retryAttempts: 5,
      retryWait: async () => { if (outage) await outage; },
      shouldRetry: () => true,
      on: { connected: () => { connections++; } },
    });
    const got = new Events();
    const dispose = client.subscribe(request, {
      next: ({ data, errors }) => {
        if (errors) return got.fail(errors);
        got.push(data.messageStream);
        request.variables.after = data.messageStream.cursor;
      },
      error: (err) => got.fail(err),
      complete: () => got.fail('completed'),
    });
    const append = async (id, seq) => gql(
      `mutation($m: ID!, $s: Int!, $t: String!) { appendMessageDeltas(messageId: $m, seq: $s, deltas: [{kind: TEXT, index: 0, text: $t}]) { seq } }`,
      { m: id, s: seq, t: `d${seq} ` });
    try {
      // Subscribed without a cursor, it starts at the oldest message still streaming:
      // whether the start commits before or after the subscription is set up, the
      // message arrives whole first.
      const id = (await gql(`mutation($c: ID!) { startMessage(conversationId: $c) { node { ... on MessageBase { id } } } }`, { c: conv }))
        .startMessage.node.id;
      await got.until('the started message', (l) => l.length >= 1);
      for (let seq = 1; seq <= 200; seq++) await append(id, seq);
      await got.until('delta 200', (l) => l.some((e) => e.delta && e.delta.seq === 200));

      let open;
      outage = new Promise((resolve) => { open = resolve; });
      sockets.at(-1).terminate();
      for (let seq = 201; seq <= 300; seq++) await append(id, seq); // while away
      open();
      // The message still streams when the client is back: it resumes with the deltas.
      await got.until('delta 300, after the reconnection', (l) => l.some((e) => e.delta && e.delta.seq === 300));
      await gql(`mutation($m: ID!) { completeMessage(messageId: $m) { __typename } }`, { m: id });
      await got.until('the completed message', (l) => l.some((e) => e.message && e.message.messageStatus === 'COMPLETED'));

      const evs = got.list;
      assert.equal(evs[0].message.messageStatus, 'STREAMING');
      let text = evs[0].message.text;
      const seqs = [];
      for (const e of evs.slice(1, -1)) {
        assert.ok(e.delta, `only deltas between the start and the end: ${JSON.stringify(e)}`);
        seqs.push(e.delta.seq);
        text += e.delta.deltas.map((d) => d.text).join('');
      }
      const from = seqs[0];
      assert.deepEqual(seqs, Array.from({ length: 300 - from + 1 }, (_, i) => from + i), 'every delta exactly once, in order');
      const last = evs.at(-1).message;
      assert.equal(last.messageStatus, 'COMPLETED');
      assert.ok(last.text.startsWith(text), 'the deltas begin the completed text');
      assert.equal(last.text, Array.from({ length: 300 }, (_, i) => `d${i + 1} `).join(''), 'the completed text is every delta sent');
      assert.ok(connections >= 2, `the client reconnected (${connections} connections)`);
    } finally {
      dispose();
      await client.dispose();
    }
  });
}
