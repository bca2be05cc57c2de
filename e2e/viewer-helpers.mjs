// viewer-helpers.mjs: what the history viewer's tests (viewer.test.mjs) and the
// screenshot script (scripts/screenshots.mjs) share: GraphQL over HTTP, headless
// Chromium, and the conversations they show.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const WAIT = 30_000;

// FIXTURES is the shared Claude Code sessions (../shared from the repository root);
// tests that need them skip when they are absent.
export const FIXTURES = fileURLToPath(new URL('../../shared/fixtures/claude-code/', import.meta.url));
export const haveFixtures = existsSync(FIXTURES + 'tool-heavy-v2.1.38.jsonl');

// gql posts a GraphQL request to base and returns the whole response body.
export async function gqlRaw(base, query, variables = {}, token = '') {
  const headers = { 'content-type': 'application/json' };
  if (token) headers.authorization = 'Bearer ' + token;
  const res = await fetch(base + '/graphql', { method: 'POST', headers, body: JSON.stringify({ query, variables }), signal: AbortSignal.timeout(WAIT) });
  return { status: res.status, ...(await res.json()) };
}

// gql is gqlRaw that fails on errors and returns data.
export async function gql(base, query, variables = {}, token = '') {
  const body = await gqlRaw(base, query, variables, token);
  assert.equal(body.errors, undefined, `${query}: ${JSON.stringify(body.errors)}`);
  return body.data;
}

export async function importSession(base, data, title) {
  const d = await gql(base, 'mutation($d: String!, $t: String) { importConversation(format: CLAUDE_CODE_JSONL, data: $d, title: $t) { conversation { id } added } }',
    { d: data, t: title });
  return d.importConversation.conversation.id;
}

export const importFixture = (base, name, title) => importSession(base, readFileSync(FIXTURES + name, 'utf8'), title);

export const create = async (base, title) => (await gql(base, 'mutation($t: String) { createConversation(title: $t) { id } }', { t: title })).createConversation.id;

export async function add(base, conv, input, extra = {}) {
  const d = await gql(base, `mutation($c: ID!, $i: MessageInput!, $p: ID, $s: ID) { addMessage(conversationId: $c, input: $i, parentId: $p, siblingOf: $s) {
    cursor node { ... on MessageBase { id position } } } }`, { c: conv, i: input, p: extra.parentId ?? null, s: extra.siblingOf ?? null });
  return d.addMessage.node;
}

export const text = (role, content) => ({ text: { role, content } });

// session writes a Claude Code session of n records: user prompts and assistant
// replies, every fifth turn a tool call and its result.
export function session(n) {
  const lines = [];
  let parent = null;
  const t0 = Date.parse('2026-01-01T00:00:00Z');
  for (let i = 0; lines.length < n; i++) {
    const base = { isSidechain: false, sessionId: 'viewer-long', version: '2.1.38', cwd: '/work' };
    const push = (type, message) => {
      const uuid = `00000000-0000-4000-8000-${String(lines.length).padStart(12, '0')}`;
      lines.push(JSON.stringify({ ...base, type, uuid, parentUuid: parent, timestamp: new Date(t0 + lines.length * 1000).toISOString(), message }));
      parent = uuid;
    };
    push('user', { role: 'user', content: `Question ${i}: what does line ${i} of \`main.go\` do?` });
    if (i % 5 === 4) {
      const id = `toolu_${i}`;
      push('assistant', { role: 'assistant', content: [{ type: 'text', text: 'Let me look.' }, { type: 'tool_use', id, name: 'Read', input: { file_path: `/work/main.go`, offset: i } }] });
      push('user', { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: `line ${i}: fmt.Println(${i})` }] });
    }
    push('assistant', { role: 'assistant', content: [{ type: 'text', text: `Line ${i} prints **${i}**:\n\n\`\`\`go\nfmt.Println(${i})\n\`\`\`` }] });
  }
  return lines.slice(0, n).join('\n') + '\n';
}

// browser starts headless Chromium, closed when t ends.
export async function browser(t) {
  const b = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--no-first-run', '--disable-quic', '--disable-sync'],
  });
  if (t) t.after(() => b.close());
  return b;
}

// open opens a page on url, failing the test on any page error, and waits for the
// viewer to have rendered what `ready` selects.
export async function open(b, url, ready, options = {}) {
  const page = await b.newPage({ viewport: { width: 1200, height: 900 }, ...options });
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.problems = problems;
  const resp = await page.goto(url);
  assert.equal(resp.status(), 200, `GET ${url}`);
  if (ready) await page.locator(ready).first().waitFor({ timeout: WAIT });
  return page;
}
