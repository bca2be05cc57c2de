// viewer-auth.test.mjs: the history viewer on a server that requires authentication
// (a bin/parley of its own verifying HS256 JWTs): the page asks for a token once, keeps
// it for the tab only (sessionStorage), lists and follows the owner's conversations
// live with it; a share link opens its conversation read-only in a fresh browser
// context, though the server accepts no API tokens otherwise.
//
// Run: node --test viewer-auth.test.mjs (after make build)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hs256, startParley } from './own-parley.mjs';
import { WAIT, browser, gql, open } from './viewer-helpers.mjs';

const READY_MS = Number(process.env.PARLEY_E2E_READY_TIMEOUT || 90) * 1000;
const SECRET = 'e2e-viewer-secret-of-32-bytes-or-more!';

test('auth mode: the viewer asks for a token once per tab; share links need none', { timeout: 6 * WAIT + READY_MS }, async (t) => {
  const base = await startParley(t, ['--jwt-secret', SECRET], 'parley-e2e-viewer-');
  const alice = hs256('alice', SECRET);
  const bob = hs256('bob', SECRET);
  await gql(base, 'mutation { createConversation(title: "bob\'s own") { id } }', {}, bob);
  const b = await browser(t);
  const context = await b.newContext();
  const page = await context.newPage();
  await page.goto(base + '/viewer/');
  const input = page.getByLabel('Token');
  await input.waitFor({ timeout: WAIT });
  await input.fill('not a token');
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByText('That token was refused.').waitFor({ timeout: WAIT });
  await page.getByLabel('Token').fill(alice);
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.locator('#empty').waitFor({ timeout: WAIT });
  await page.locator('body.live').waitFor({ timeout: WAIT });

  const id = (await gql(base, 'mutation { createConversation(title: "alice live") { id } }', {}, alice)).createConversation.id;
  await page.locator(`li.conv[data-id="${id}"]`).waitFor({ timeout: WAIT });
  assert.doesNotMatch(await page.locator('main').textContent(), /bob's own/);

  await page.reload();
  await page.locator(`li.conv[data-id="${id}"]`).waitFor({ timeout: WAIT });
  assert.equal(await page.getByLabel('Token').count(), 0, 'after a reload the page does not ask again');
  const stored = await page.evaluate(() => ({ session: JSON.stringify(sessionStorage), local: JSON.stringify(localStorage) }));
  assert.ok(stored.session.includes(alice), 'the token is in sessionStorage');
  assert.ok(!stored.local.includes(alice), 'and not in localStorage');
  const other = await context.newPage();
  await other.goto(base + '/viewer/');
  await other.getByLabel('Token').waitFor({ timeout: WAIT }); // another tab asks again

  await gql(base, 'mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) { cursor } }',
    { c: id, i: { text: { role: 'USER', content: 'for the share link' } } }, alice);
  const link = await gql(base, 'mutation($c: ID!) { createShareLink(conversationId: $c, expiresInSeconds: 600) { path } }', { c: id }, alice);
  const fresh = await b.newContext();
  const shared = await open({ newPage: (o) => fresh.newPage(o) }, base + link.createShareLink.path, 'article.msg');
  assert.match(await shared.locator('#banner').textContent(), /Read-only/);
  assert.match(await shared.locator('main').textContent(), /for the share link/);
  assert.equal(await shared.getByLabel('Token').count(), 0, 'a share link needs no token');
  await shared.locator('body.live').waitFor({ timeout: WAIT });
  assert.deepEqual(shared.problems, []);
});
