// schema.test.mjs: `parley schema` prints the schema the server serves, as one SDL
// document graphql-js builds (with @oneOf), and `parley schema --possible-types` the
// possibleTypes map that introspection gives.
//
// Run: PARLEY_URL=http://127.0.0.1:18080 node --test schema.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { buildClientSchema, buildSchema, getIntrospectionQuery, lexicographicSortSchema, printType } from 'graphql';

const PARLEY_URL = (process.env.PARLEY_URL || '').replace(/\/$/, '');
const BIN = fileURLToPath(new URL('../bin/parley', import.meta.url));

async function introspect() {
  const res = await fetch(PARLEY_URL + '/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: getIntrospectionQuery({ descriptions: true, inputValueDeprecation: true, oneOf: true }) }),
  });
  const body = await res.json();
  assert.equal(body.errors, undefined, JSON.stringify(body.errors));
  return body.data;
}

test('parley schema is the served schema, in one SDL document with @oneOf', async () => {
  const sdl = execFileSync(BIN, ['schema'], { encoding: 'utf8' });
  const printed = buildSchema(sdl);
  assert.equal(printed.getType('MessageInput').isOneOf, true, 'MessageInput is @oneOf');
  const served = buildClientSchema(await introspect());
  // Every type, field, argument and description alike (the directives a server adds,
  // such as gqlgen's @defer, are not the schema's own).
  const types = (schema) => Object.values(lexicographicSortSchema(schema).getTypeMap())
    .filter((t) => !t.name.startsWith('__')).map(printType).join('\n\n');
  assert.equal(types(printed), types(served));
});

test('parley schema --possible-types is what introspection says', async () => {
  const got = JSON.parse(execFileSync(BIN, ['schema', '--possible-types'], { encoding: 'utf8' }));
  const want = {};
  const types = (await introspect()).__schema.types;
  const kind = Object.fromEntries(types.map((t) => [t.name, t.kind]));
  for (const t of types) {
    if ((t.kind === 'INTERFACE' || t.kind === 'UNION') && !t.name.startsWith('__')) {
      // Object types only: gqlgen's introspection also lists MessageBase under Node,
      // which the spec's possibleTypes (and graphql-codegen's map) leave out.
      want[t.name] = t.possibleTypes.filter((p) => kind[p.name] === 'OBJECT').map((p) => p.name).sort();
    }
  }
  assert.deepEqual(got, want);
  assert.ok(got.Message.includes('ToolRequestMessage'));
});
