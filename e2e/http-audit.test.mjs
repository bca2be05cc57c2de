// http-audit.test.mjs: PARLEY_URL + "/graphql" against the GraphQL-over-HTTP audits of the
// graphql-http package (the conformance suite of the spec's reference implementation).
// One test per audit, named by the audit: every MUST audit has to pass; a SHOULD or MAY
// audit has to pass unless NOT_PASSED below names it with the reason, and then it must
// still fail (a stale entry is an error), so the list stays the truth.
//
// Run: PARLEY_URL=http://127.0.0.1:18080 node --test http-audit.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serverAudits } from 'graphql-http';

const PARLEY_URL = process.env.PARLEY_URL;

// Audits Parley knowingly does not pass, by audit id, with the reason. MUST audits can't
// be listed. docs/graphql-over-http.md gives the same reasons: keep the two in step.
const NOT_PASSED = new Map([
  // (none: every SHOULD and MAY audit of graphql-http passes)
]);

// describeResponse says what the server answered, for a failure message. The audit has
// usually read the body already; then only the status and content type are shown.
async function describeResponse(res) {
  if (!res) return '';
  let text = `\n  got HTTP ${res.status}, Content-Type ${JSON.stringify(res.headers.get('content-type'))}`;
  try {
    if (!res.bodyUsed) text += `\n  body: ${(await res.text()).slice(0, 500)}`;
  } catch {
    // an unreadable body adds nothing
  }
  return text;
}

if (!PARLEY_URL) {
  test('PARLEY_URL is set', () => {
    assert.fail('set PARLEY_URL to the server under test, e.g. http://127.0.0.1:18080');
  });
} else {
  const url = PARLEY_URL.replace(/\/$/, '') + '/graphql';
  const audits = serverAudits({ url, fetchFn: fetch });

  test('the audit suite is there to run', () => {
    const musts = audits.filter((a) => a.name.startsWith('MUST'));
    assert.ok(audits.length >= 40, `graphql-http gave ${audits.length} audits, want at least 40`);
    assert.ok(musts.length >= 10, `graphql-http gave ${musts.length} MUST audits, want at least 10`);
    for (const [id] of NOT_PASSED) {
      const audit = audits.find((a) => a.id === id);
      assert.ok(audit, `NOT_PASSED lists ${id}, which graphql-http no longer has: remove it here and in docs/graphql-over-http.md`);
      assert.ok(!audit.name.startsWith('MUST'), `NOT_PASSED lists ${id}, a MUST audit: "${audit.name}" must pass`);
    }
  });

  for (const audit of audits) {
    test(audit.name, async (t) => {
      // A thrown error (no server, say) is fatal to the audit and fails the test as is.
      const result = await audit.fn();
      const listed = NOT_PASSED.get(audit.id);
      if (result.status === 'ok') {
        assert.equal(listed, undefined,
          `audit ${audit.id} passes now, but NOT_PASSED says it does not (${listed}): remove it there and in docs/graphql-over-http.md`);
        return;
      }
      const why = `audit ${audit.id} failed: ${result.reason}${await describeResponse(result.response)}`;
      if (audit.name.startsWith('MUST') || listed === undefined) {
        assert.fail(why);
      }
      t.diagnostic(`known, not passed: ${listed}`);
    });
  }
}
