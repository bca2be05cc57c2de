// apollo-cache.test.mjs: @apollo/client's normalized InMemoryCache over two
// conversations whose tool requests reuse the same provider call id. Caches key objects
// by __typename and id, so each conversation must read back its own calls (before
// ToolCall.id was globally unique, one conversation showed the other's DENIED
// delete_everything in place of its own read_file).
//
// Run: PARLEY_URL=http://127.0.0.1:18080 node --test apollo-cache.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';

const PARLEY_URL = (process.env.PARLEY_URL || '').replace(/\/$/, '');
const GRAPHQL = PARLEY_URL + '/graphql';

// possibleTypes from introspection, as the README tells clients to set it up: without
// it Apollo cannot match fragments on the Message union and MessageBase interface.
async function possibleTypes() {
  const res = await fetch(GRAPHQL, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ __schema { types { kind name possibleTypes { name } } } }' }),
  });
  const out = {};
  for (const t of (await res.json()).data.__schema.types) {
    if (t.possibleTypes) out[t.name] = t.possibleTypes.map((p) => p.name);
  }
  return out;
}

const HISTORY = gql`
  query History($c: ID!) {
    conversation(id: $c) {
      id
      title
      messages(first: 50) {
        edges {
          cursor
          node {
            ... on MessageBase { id position }
            ... on ToolRequestMessage { toolCalls { id callId name approvalStatus } }
          }
        }
      }
    }
  }
`;

test('InMemoryCache keeps two conversations with the same call id apart', async () => {
  assert.ok(PARLEY_URL, 'set PARLEY_URL');
  const client = new ApolloClient({
    link: new HttpLink({ uri: GRAPHQL }),
    cache: new InMemoryCache({ possibleTypes: await possibleTypes() }),
  });
  const add = gql`
    mutation Add($c: ID!, $i: MessageInput!) {
      addMessage(conversationId: $c, input: $i) { cursor }
    }
  `;
  const create = gql`mutation Create($t: String) { createConversation(title: $t) { id } }`;
  const convs = {};
  for (const [title, tool] of [['safe', 'read_file'], ['dangerous', 'delete_everything']]) {
    const { data } = await client.mutate({ mutation: create, variables: { t: title } });
    convs[title] = { id: data.createConversation.id, tool };
    await client.mutate({
      mutation: add,
      variables: { c: convs[title].id, i: { toolRequest: { toolCalls: [{ id: 'call_1', name: tool, arguments: {} }] } } },
    });
  }
  // Both histories into the one cache, then each read back from it.
  for (const c of Object.values(convs)) {
    await client.query({ query: HISTORY, variables: { c: c.id }, fetchPolicy: 'network-only' });
  }
  const ids = new Set();
  for (const [title, c] of Object.entries(convs)) {
    const data = client.readQuery({ query: HISTORY, variables: { c: c.id } });
    assert.ok(data, `${title}: not in the cache`);
    const calls = data.conversation.messages.edges.flatMap((e) => e.node.toolCalls ?? []);
    assert.equal(calls.length, 1, `${title}: ${JSON.stringify(data)}`);
    assert.equal(calls[0].callId, 'call_1');
    assert.equal(calls[0].name, c.tool, `${title} shows another conversation's call`);
    ids.add(calls[0].id);
  }
  assert.equal(ids.size, 2, 'the two calls have distinct ids');
  // The cache holds two ToolCall objects, not one merged.
  const keys = Object.keys(client.cache.extract()).filter((k) => k.startsWith('ToolCall:'));
  assert.equal(keys.length, 2, `cache keys ${keys}`);
});
