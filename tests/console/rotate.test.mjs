// Browser test of rotating a principal's client secret and revoking all
// its tokens from the console's Principals page (Chromium, playwright-core):
//
//   FLOE_BIN=$PWD/bin/floe node --test tests/console/rotate.test.mjs
//
// What the page does is checked where it matters: at the token endpoint
// (/v1/oauth/tokens) and the catalog (/v1/config), and in the audit log.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { launchChromium } from './browser.mjs';
import { startFloe, ADMIN_ID, ADMIN_SECRET } from './floe-server.mjs';

let floe; let browser;

before(async () => {
  floe = await startFloe();
  browser = await launchChromium();
});

after(async () => {
  if (browser) await browser.close();
  if (floe) await floe.stop();
});

// tokenStatus asks the token endpoint for a token: { status, token, error }.
async function tokenStatus(id, secret) {
  const r = await fetch(floe.base + '/v1/oauth/tokens', {
    method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: id, client_secret: secret }),
  });
  const body = await r.json();
  return { status: r.status, token: body.access_token, error: body.error };
}

// configStatus is the status of GET /v1/config with token.
async function configStatus(token) {
  const r = await fetch(floe.base + '/v1/config', { headers: { Authorization: `Bearer ${token}` } });
  await r.arrayBuffer();
  return r.status;
}

test('rotate a secret (shown once, downloadable) and revoke all tokens from the Principals page', async (t) => {
  const created = await floe.api('POST', '/api/v1/principals', { name: 'deployer' });
  assert.equal(created.status, 201, JSON.stringify(created.data));
  const { client_id: id, client_secret: oldSecret } = created.data;
  const early = await tokenStatus(id, oldSecret);
  assert.equal(early.status, 200);
  assert.equal(await configStatus(early.token), 200, 'the token works before');

  const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
  t.after(() => ctx.close());
  const page = await ctx.newPage();
  const problems = []; const confirms = [];
  page.on('dialog', async (d) => {
    if (d.type() === 'confirm' && /^(Rotate the secret of deployer|Revoke every token of deployer)\?/.test(d.message())) {
      confirms.push(d.message()); await d.accept(); return;
    }
    problems.push(`dialog fired: ${d.type()} ${d.message()}`); await d.dismiss();
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));

  await page.goto(floe.base + '/console/');
  await page.getByLabel('Client id').fill(ADMIN_ID);
  await page.getByLabel('Client secret').fill(ADMIN_SECRET);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('#who').filter({ hasText: /\S/ }).waitFor();
  await page.getByRole('link', { name: 'Principals' }).click();
  await page.getByRole('button', { name: 'Rotate secret of principal deployer' }).waitFor();
  // The signed-in administrator has no buttons for itself.
  assert.equal(await page.getByRole('button', { name: `Revoke all tokens of principal ${ADMIN_ID}` }).count(), 0);

  // Rotate without grace (the default): the new secret is shown once.
  assert.equal(await page.getByLabel(/the old secret keeps working/).inputValue(), '0');
  await page.getByRole('button', { name: 'Rotate secret of principal deployer' }).click();
  await page.locator('#new-secret').waitFor();
  assert.equal(await page.locator('#new-client-id').textContent(), id);
  const newSecret = await page.locator('#new-secret').textContent();
  assert.ok(newSecret && newSecret !== oldSecret, 'a new secret');
  assert.match(await page.locator('#secret-note').textContent(), /stops working at once/);
  const [dl] = await Promise.all([page.waitForEvent('download'), page.locator('#download-secret').click()]);
  assert.equal(readFileSync(await dl.path(), 'utf8'), `client_id=${id}\nclient_secret=${newSecret}\n`, 'the download holds the credential');

  const old = await tokenStatus(id, oldSecret);
  assert.deepEqual([old.status, old.error], [401, 'invalid_client'], 'the old secret is refused at once');
  const fresh = await tokenStatus(id, newSecret);
  assert.equal(fresh.status, 200, 'the new secret works');
  assert.equal(await configStatus(early.token), 200, 'a token issued before the rotation stays valid');

  // The secret is shown once: a reload does not show it again.
  await page.reload();
  await page.getByRole('button', { name: 'Revoke all tokens of principal deployer' }).waitFor();
  assert.equal(await page.locator('#new-secret').count(), 0, 'the secret is not shown again');
  assert.ok(!(await page.locator('main').textContent()).includes(newSecret), 'the secret appears nowhere on the page');

  // Revoke all tokens: the earlier tokens get 401 at /v1/config; new ones work.
  await page.getByRole('button', { name: 'Revoke all tokens of principal deployer' }).click();
  await page.locator('#status').filter({ hasText: 'Revoked every token of deployer' }).waitFor();
  assert.equal(await configStatus(early.token), 401, 'a token issued before the revocation is refused');
  assert.equal(await configStatus(fresh.token), 401, 'so is one issued after the rotation but before the revocation');
  const after = await tokenStatus(id, newSecret);
  assert.equal(after.status, 200);
  assert.equal(await configStatus(after.token), 200, 'a new token works');

  // Audited, without the secrets.
  for (const action of ['mgmt.principal.rotate_secret', 'mgmt.principal.revoke_tokens']) {
    const a = await floe.api('GET', `/api/v1/audit?action=${action}&limit=10`);
    assert.equal(a.status, 200);
    const text = JSON.stringify(a.data);
    assert.ok(!text.includes(newSecret) && !text.includes(oldSecret), 'no secret in the audit log');
    assert.ok(a.data.records.some((r) => r.resource === 'principal:deployer' && r.outcome === 'success'), `${action}: ${text}`);
  }
  assert.equal(confirms.length, 2, 'each action asked first');
  assert.deepEqual(problems, []);
});
