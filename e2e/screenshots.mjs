// screenshots.mjs writes the history viewer's screenshots under docs/ (make
// screenshots): it starts a bin/parley of its own, fills it with the shared Claude Code
// fixtures (or a generated session when ../shared is absent) and a conversation with
// two versions of a reply, and photographs the list, a conversation with a tool call
// and its result, the sibling switcher, dark mode and a shared read-only page.
import { fileURLToPath } from 'node:url';
import { startParley } from './own-parley.mjs';
import { add, browser, create, gql, haveFixtures, importFixture, importSession, open, session, text } from './viewer-helpers.mjs';

const DOCS = fileURLToPath(new URL('../docs/', import.meta.url));
const cleanups = [];
const t = { after: (fn) => cleanups.push(fn) };

try {
  const base = await startParley(t, [], 'parley-screenshots-');
  const b = await browser(t);
  const main = haveFixtures
    ? await importFixture(base, 'tool-heavy-v2.1.38.jsonl')
    : await importSession(base, session(60), 'A generated session');
  if (haveFixtures) await importFixture(base, 'sidechains-v1.0.98.jsonl');
  await importSession(base, session(400), 'Reading main.go line by line');

  const branched = await create(base, 'Which colour for the logo?');
  await add(base, branched, text('USER', 'Which colour should the logo be? Give one and say why.'));
  const first = await add(base, branched, text('ASSISTANT', 'Blue: it reads as calm and trustworthy, and it prints well in one colour.'));
  await gql(base, 'mutation($m: ID!) { editMessage(messageId: $m, input: {text: {role: ASSISTANT, content: "Green: it suggests growth, and it stands apart from the blue most tools use."}}) { cursor } }', { m: first.id });
  await add(base, branched, text('USER', 'Green it is. Which shade?'));

  const shot = async (url, ready, file, opts = {}, prepare) => {
    const page = await open(b, url, ready, { viewport: { width: 1100, height: 760 }, ...opts });
    if (prepare) await prepare(page);
    await page.waitForTimeout(300); // let highlighting and fonts settle before the picture
    await page.screenshot({ path: DOCS + file });
    console.log('wrote docs/' + file);
    await page.close();
  };
  const toFirstCall = async (page) => {
    await page.locator('details.tool-call article[data-role="RESULT"]').first().evaluate((e) => e.closest('details.tool-call').closest('article').scrollIntoView({ block: 'start' }));
    await page.evaluate(() => window.scrollBy(0, -60));
  };
  await shot(base + '/viewer/', 'li.conv', 'viewer-list.png');
  await shot(base + '/viewer/c/' + main, 'article.msg', 'viewer-conversation.png', {}, toFirstCall);
  await shot(base + '/viewer/c/' + main, 'article.msg', 'viewer-dark.png', { colorScheme: 'dark' }, toFirstCall);
  await shot(base + '/viewer/c/' + branched, '.siblings', 'viewer-branches.png');
  const link = await gql(base, 'mutation($c: ID!) { createShareLink(conversationId: $c, expiresInSeconds: 86400) { path } }', { c: branched });
  await shot(base + link.createShareLink.path, 'article.msg', 'viewer-shared.png');
} finally {
  for (const fn of cleanups.reverse()) await fn();
}
