// Browser test of signing in to the console with a user name and SQL
// password (Chromium, playwright-core).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium } from './browser.mjs';
import { startFloe } from './floe-server.mjs';

const PASSWORD = 'analyst-sql-password-42';
let floe; let browser;

before(async () => {
  floe = await startFloe();
  const p = await floe.api('POST', '/api/v1/principals', { name: 'analyst' });
  assert.equal(p.status, 201, JSON.stringify(p.data));
  floe.setPassword('analyst', PASSWORD);
  browser = await launchChromium();
});

after(async () => {
  if (browser) await browser.close();
  if (floe) await floe.stop();
});

async function passwordSignIn(page, user, password) {
  await page.goto(floe.base + '/console/');
  await page.getByLabel('SQL login').check();
  await page.getByLabel('User', { exact: true }).fill(user);
  await page.getByLabel('SQL password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

test('sign in with a user name and SQL password, then sign out', async (t) => {
  const ctx = await browser.newContext();
  t.after(() => ctx.close());
  const page = await ctx.newPage();
  const dialogs = [];
  page.on('dialog', async (d) => { dialogs.push(d.message()); await d.dismiss(); });

  // A wrong password: the same message as for an unknown user.
  await passwordSignIn(page, 'analyst', 'not-the-password');
  await page.locator('#signin-error').filter({ hasText: /wrong user name or password/ }).waitFor();
  const wrong = await page.locator('#signin-error').textContent();
  await passwordSignIn(page, 'nobody-here', PASSWORD);
  await page.locator('#signin-error').filter({ hasText: /wrong user name or password/ }).waitFor();
  assert.equal(await page.locator('#signin-error').textContent(), wrong, 'unknown user and wrong password read the same');

  await passwordSignIn(page, 'analyst', PASSWORD);
  await page.locator('#who').filter({ hasText: 'analyst' }).waitFor();
  const cookie = (await ctx.cookies()).find((c) => c.name === 'floe_console');
  assert.ok(cookie && cookie.httpOnly && cookie.sameSite === 'Strict', 'HttpOnly, SameSite=Strict session cookie');
  assert.equal(await page.evaluate(() => document.cookie), '', 'no script sees the cookie');
  // The session acts as analyst.
  const who = await page.evaluate(async () => (await fetch('/console/api/proxy/api/v1/whoami')).json());
  assert.equal(who.principal, 'analyst');

  // Audited as console.login with the method, and no password in it.
  const a = await floe.api('GET', '/api/v1/audit?action=console.login&limit=10');
  assert.equal(a.status, 200);
  assert.ok(!JSON.stringify(a.data).includes(PASSWORD), 'no password in the audit log');
  const ok = a.data.records.find((r) => r.principal === 'analyst' && r.outcome === 'success');
  assert.ok(ok && ok.detail.method === 'sql_password', JSON.stringify(a.data.records));

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.locator('#signin-error').filter({ hasText: 'Signed out.' }).waitFor();
  const after = await page.evaluate(async () => (await fetch('/console/api/session')).status);
  assert.equal(after, 401, 'session ended');
  assert.deepEqual(dialogs, []);
});
