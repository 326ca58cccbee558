// Starts `floe serve --demo` for a browser test file and calls its APIs.
// Each test file has its own server (node --test runs files one at a
// time), so files do not depend on each other's state.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const BIN = resolve(process.env.FLOE_BIN || join(here, '../../bin/floe'));
export const ADMIN_ID = 'console-admin';
export const ADMIN_SECRET = 'console-admin-secret-0123456789';

function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => res(port)); });
    s.on('error', rej);
  });
}

// startFloe starts `floe serve --demo` (plus extra flags) and resolves to
// { base, dataDir, adminToken, api, stop, setPassword }.
export async function startFloe(extra = [], env = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'floe-console-'));
  const [p, s3, sql] = await Promise.all([freePort(), freePort(), freePort()]);
  const base = `http://127.0.0.1:${p}`;
  let log = '';
  const proc = spawn(BIN, ['serve', '--demo', '--data-dir', dataDir, '--listen', `127.0.0.1:${p}`, '--s3-listen', `127.0.0.1:${s3}`,
    '--sql-listen', `127.0.0.1:${sql}`, '--admin-listen', 'off', ...extra], {
    env: { ...process.env, FLOE_BOOTSTRAP_CREDENTIAL: `${ADMIN_ID}:${ADMIN_SECRET}`, FLOE_MAINTENANCE: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await new Promise((res, rej) => {
    const timer = setTimeout(() => rej(new Error('floe serve --demo did not get ready in 180 s:\n' + log)), 180000);
    proc.stdout.on('data', (d) => {
      log += d;
      if (log.includes('Press Ctrl-C to stop')) { clearTimeout(timer); res(); }
    });
    proc.stderr.on('data', (d) => { log += d; });
    proc.on('exit', (code) => { clearTimeout(timer); rej(new Error(`floe exited (${code}):\n${log}`)); });
  });
  const tokenFor = async (id, secret) => {
    const r = await fetch(base + '/v1/oauth/tokens', {
      method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: id, client_secret: secret }),
    });
    assert.equal(r.status, 200, 'token endpoint');
    return (await r.json()).access_token;
  };
  const adminToken = await tokenFor(ADMIN_ID, ADMIN_SECRET);
  const api = async (method, path, body, token = adminToken) => {
    const r = await fetch(base + path, {
      method, headers: { Authorization: `Bearer ${token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await r.text();
    let data = text;
    try { data = JSON.parse(text); } catch { /* not JSON */ }
    return { status: r.status, data };
  };
  // setPassword gives a principal a SQL password (floe principal set-password).
  const setPassword = (name, password) => {
    const r = spawnSync(BIN, ['principal', 'set-password', name, '--data-dir', dataDir], { input: password + '\n', encoding: 'utf8' });
    assert.equal(r.status, 0, `set-password: ${r.stdout}${r.stderr}`);
  };
  const stop = async () => {
    if (proc.exitCode === null) {
      proc.removeAllListeners('exit');
      proc.kill('SIGTERM');
      await new Promise((res) => { proc.on('exit', res); setTimeout(res, 10000); });
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  return { base, dataDir, adminToken, api, tokenFor, setPassword, stop, log: () => log };
}
