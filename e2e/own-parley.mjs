// own-parley.mjs: for the e2e tests that need a bin/parley of their own (flags the
// shared server of scripts/e2e.sh does not have: a trusted origin known only once a
// page server listens, a JWT secret), and the HS256 tokens such a server verifies.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../bin/parley', import.meta.url));
const READY_MS = Number(process.env.PARLEY_E2E_READY_TIMEOUT || 90) * 1000;

// startParley starts bin/parley serve with args on a free port and its own data
// directory (named after prefix), and returns its base URL once /readyz answers; it is
// stopped with SIGTERM when t ends.
export async function startParley(t, args, prefix = 'parley-e2e-') {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await chmod(dir, 0o755); // Postgres runs as postgres when we are root
  const env = { ...process.env };
  delete env.DATABASE_URL;
  const child = spawn(BIN, ['serve', '--addr', '127.0.0.1:0', '--data-dir', join(dir, 'data'), ...args],
    { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (b) => { log += b; });
  child.stderr.on('data', (b) => { log += b; });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  t.after(async () => {
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 40_000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });
  const deadline = Date.now() + READY_MS;
  for (;;) {
    assert.equal(child.exitCode, null, `parley exited before it was ready:\n${log}`);
    const m = log.match(/serving GraphQL at (http:\/\/127\.0\.0\.1:\d+)\/graphql/);
    if (m) {
      const ok = await fetch(m[1] + '/readyz', { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false);
      if (ok) return m[1];
    }
    assert.ok(Date.now() < deadline, `parley was not ready within ${READY_MS} ms:\n${log}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

// hs256 signs an HS256 JWT for owner with secret, valid for an hour.
export function hs256(owner, secret) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const body = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ sub: owner, exp: Math.floor(Date.now() / 1000) + 3600 })}`;
  return `${body}.${createHmac('sha256', secret).update(body).digest('base64url')}`;
}
