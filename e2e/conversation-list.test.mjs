// conversation-list.test.mjs: conversationsChanged with the real graphql-ws client. The
// client's socket is killed after two changes; changes made while it is away arrive
// once it is back (it resubscribes with variables.after kept at the last cursor), and
// the whole run is every change exactly once, in commit order, each with its kind.
//
// Run: PARLEY_URL=http://127.0.0.1:18080 node --test conversation-list.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';

const PARLEY_URL = (process.env.PARLEY_URL || '').replace(/\/$/, '');
const GRAPHQL = PARLEY_URL + '/graphql';
const WAIT = 30_000;

const LIST = `subscription($after: String) {
  conversationsChanged(after: $after) { cursor kind conversationId conversation { id title messageCount } }
}`;

async function gql(query, variables = {}) {
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

const create = async (title) => (await gql('mutation($t: String) { createConversation(title: $t) { id } }', { t: title })).createConversation.id;

async function until(what, got, cond) {
  const deadline = Date.now() + WAIT;
  while (!cond(got.list)) {
    if (got.error) throw new Error(`subscription failed while waiting for ${what}: ${JSON.stringify(got.error)}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(got.list)}`);
    await new Promise((resolve) => { got.wake = resolve; setTimeout(resolve, 200); });
  }
}

if (!PARLEY_URL) {
  test('PARLEY_URL is set', () => assert.fail('set PARLEY_URL to the server under test'));
} else {
  test('graphql-ws: the live list, cut off and resumed from its cursor, has every change once and in order', { timeout: 4 * WAIT }, async () => {
    // Start from the list's head now, so that other tests' conversations stay out.
    const head = (await gql('{ conversations(first: 1) { changesCursor } }')).conversations.changesCursor;
    const request = { query: LIST, variables: { after: head } };
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
      shouldRetry: () => true,
      retryWait: async () => { if (outage) await outage; },
      on: { connected: () => { connections++; } },
    });
    const got = { list: [], error: null, wake: () => {} };
    const dispose = client.subscribe(request, {
      next: ({ data, errors }) => {
        if (errors) { got.error = errors; got.wake(); return; }
        got.list.push(data.conversationsChanged);
        request.variables.after = data.conversationsChanged.cursor;
        got.wake();
      },
      error: (err) => { got.error = String(err); got.wake(); },
      complete: () => { got.error = 'completed'; got.wake(); },
    });
    try {
      const a = await create('a');
      const b = await create('b');
      await until('two changes', got, (l) => l.length >= 2);

      let open;
      outage = new Promise((resolve) => { open = resolve; });
      sockets.at(-1).terminate();
      // While away: a new one, a rename, a message, a deletion.
      const c = await create('c');
      await gql('mutation($c: ID!) { renameConversation(id: $c, title: "a2") { id } }', { c: a });
      const added = (await gql(`mutation($c: ID!) { addMessage(conversationId: $c, input: {text: {role: USER, content: "hi"}}) {
        conversation { id messageCount } } }`, { c })).addMessage;
      await gql('mutation($c: ID!) { deleteConversation(id: $c) }', { c: b });
      open();
      await until('the changes made while away', got, (l) => l.length >= 5);
      // And one more once back.
      const d = await create('d');
      await until('the change made after the reconnection', got, (l) => l.some((e) => e.conversationId === d));

      const kinds = got.list.map((e) => `${e.kind} ${e.conversationId}`);
      // c, created and then bumped while the client was away, comes once, as BUMPED, at
      // the place of its latest change.
      assert.deepEqual(kinds, [`CREATED ${a}`, `CREATED ${b}`, `RENAMED ${a}`, `BUMPED ${c}`, `DELETED ${b}`, `CREATED ${d}`],
        'every change once, in commit order');
      assert.equal(new Set(got.list.map((e) => e.cursor)).size, got.list.length, 'no cursor twice');
      assert.equal(got.list[2].conversation.title, 'a2');
      assert.equal(got.list[3].conversation.messageCount, added.conversation.messageCount, "BUMPED carries addMessage's count");
      assert.equal(got.list[4].conversation, null, 'a deleted conversation has no body');
      assert.ok(connections >= 2, `the client reconnected (${connections} connections)`);
    } finally {
      dispose();
      await client.dispose();
    }
  });
}
