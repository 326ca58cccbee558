// Browser tests of Floe's web console in Firefox: puppeteer-core drives
// Debian's stock firefox-esr (headless, WebDriver BiDi) against
// `floe serve --demo`. FIREFOX is the browser (default
// /usr/bin/firefox-esr); without it the suite fails (it is not skipped).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import puppeteer from 'puppeteer-core';
import { startFloe, ADMIN_ID, ADMIN_SECRET } from './floe-server.mjs';

const FIREFOX = process.env.FIREFOX || '/usr/bin/firefox-esr';
const PASSWORD = 'firefox-sql-password-42';
const XSS = '<img src=x onerror=alert(1)>';
const XSS_NS = '<svg onload=alert(3)>';
let floe; let browser;

before(async () => {
  floe = await startFloe();
  const p = await floe.api('POST', '/api/v1/principals', { name: 'ffanalyst' });
  assert.equal(p.status, 201, JSON.stringify(p.data));
  floe.setPassword('ffanalyst', PASSWORD);
  const g = await floe.api('POST', '/api/v1/grants', { grantee: { kind: 'principal', name: 'ffanalyst' }, privilege: 'SELECT',
    on: { kind: 'namespace', namespace: ['crm'] }, all_tables: true });
  assert.equal(g.status, 201, JSON.stringify(g.data));
  const t = await floe.api('PUT', '/api/v1/tags', { target: { on: { kind: 'table', namespace: ['crm'], name: 'opportunities' }, column: 'stage' }, tags: { note: XSS } });
  assert.equal(t.status, 200, JSON.stringify(t.data));
  const ns = await floe.api('POST', '/v1/floe/namespaces', { namespace: [XSS_NS], properties: { comment: XSS } });
  assert.equal(ns.status, 200, JSON.stringify(ns.data));
  browser = await puppeteer.launch({ browser: 'firefox', executablePath: FIREFOX, headless: true });
  console.log(`browser: ${await browser.version()}`);
});

after(async () => {
  if (browser) await browser.close();
  if (floe) await floe.stop();
});

// newPage opens a page in its own browser context (own cookies) in which
// any dialog, page error or request to another origin is recorded.
async function newPage(t) {
  const ctx = await browser.createBrowserContext();
  const page = await ctx.newPage();
  const problems = [];
  page.on('dialog', async (d) => { problems.push(`dialog fired: ${d.message()}`); await d.dismiss(); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith(floe.base) && !u.startsWith('data:') && !u.startsWith('blob:')) problems.push(`external request: ${u}`);
  });
  t.after(() => ctx.close());
  return { ctx, page, problems };
}

// waitText waits until an element matching selector contains text.
const waitText = (page, selector, text, timeout = 30000) => page.waitForFunction(
  (s, x) => [...document.querySelectorAll(s)].some((e) => e.textContent.includes(x)), { timeout }, selector, text);

async function signIn(page, method, id, secret) {
  const resp = await page.goto(floe.base + '/console/');
  assert.ok(resp.headers()['content-security-policy'].includes("default-src 'self'"), 'CSP header on /console/');
  await page.waitForSelector('#client-id');
  if (method === 'password') await page.click('#method-password');
  await page.type('#client-id', id);
  await page.type('#client-secret', secret);
  await page.click('form.signin button[type=submit]');
  await page.waitForFunction(() => document.getElementById('who')?.textContent.trim() !== '');
}

async function sessionCookie(page) {
  const cookies = await page.browserContext().cookies();
  return cookies.find((c) => c.name === 'floe_console');
}

test('firefox: client secret sign-in, catalog search, table page, query, sign-out revokes', async (t) => {
  const { page, problems } = await newPage(t);
  await signIn(page, 'secret', ADMIN_ID, ADMIN_SECRET);
  assert.match(await page.$eval('#who', (e) => e.textContent), /admin/);

  // The cookie: HttpOnly, SameSite=Strict; no script reads it.
  const c = await sessionCookie(page);
  assert.ok(c, 'session cookie set');
  assert.equal(c.httpOnly, true, 'HttpOnly');
  assert.equal(c.sameSite, 'Strict', 'SameSite=Strict');
  assert.equal(c.path, '/console/');
  assert.equal(await page.evaluate(() => document.cookie), '', 'the page script cannot read the session cookie');

  // Catalog search.
  await waitText(page, '#catalog a', 'opportunities');
  await page.type('#search', 'opport');
  await page.waitForFunction(() => document.querySelectorAll('#catalog li a').length === 1);
  assert.equal(await page.$eval('#catalog li a', (a) => a.textContent), 'opportunities');

  // The table page with the timeline and the histogram drawn.
  const t0 = Date.now();
  await page.click('#catalog li a');
  await page.waitForSelector('#timeline g.snap rect');
  await page.waitForSelector('#histogram g.bucket rect');
  await waitText(page, '#histogram text', '< 1.0 MiB');
  console.log(`firefox: table page of crm.opportunities drawn ${Date.now() - t0} ms after the click`);
  await waitText(page, '#schema td', 'stage');

  // A query.
  await page.goto(floe.base + '/console/#/query');
  await page.waitForSelector('#sql');
  await page.$eval('#sql', (e) => { e.value = ''; });
  await page.type('#sql', 'SELECT stage, count(*) AS n FROM crm.opportunities GROUP BY stage ORDER BY stage');
  await page.click('#run');
  await page.waitForSelector('#row-count');
  await waitText(page, '#results td', 'Closed Lost');

  // Sign out: the session ends and its token is revoked.
  const before = (await sessionCookie(page)).value;
  await page.click('#logout');
  await waitText(page, '#signin-error', 'Signed out.');
  const out = await floe.api('GET', '/api/v1/audit?action=console.logout&limit=1');
  assert.equal(out.status, 200);
  assert.equal(out.data.records[0].detail.token_revoked, true, 'sign-out revoked the session token');
  const replay = await fetch(floe.base + '/console/api/session', { headers: { Cookie: `floe_console=${before}` } });
  assert.equal(replay.status, 401, 'the old cookie names no session');
  assert.deepEqual(problems, []);
});

test('firefox: SQL password sign-in', async (t) => {
  const { page, problems } = await newPage(t);
  await page.goto(floe.base + '/console/');
  await page.waitForSelector('#client-id');
  await page.click('#method-password');
  assert.equal(await page.$eval('label[for=client-secret]', (l) => l.textContent), 'SQL password');
  await page.type('#client-id', 'ffanalyst');
  await page.type('#client-secret', 'wrong-password');
  await page.click('form.signin button[type=submit]');
  await waitText(page, '#signin-error', 'wrong user name or password');
  await page.$eval('#client-secret', (e) => { e.value = ''; });
  await page.type('#client-secret', PASSWORD);
  await page.click('form.signin button[type=submit]');
  await waitText(page, '#who', 'ffanalyst');
  const c = await sessionCookie(page);
  assert.ok(c && c.httpOnly && c.sameSite === 'Strict', 'HttpOnly, SameSite=Strict cookie after a password sign-in');
  const who = await page.evaluate(async () => (await fetch('/console/api/proxy/api/v1/whoami')).json());
  assert.equal(who.principal, 'ffanalyst');
  assert.deepEqual(problems, []);
});

test('firefox: markup in names and tags stays text; no dialog fires', async (t) => {
  const { page, problems } = await newPage(t);
  await signIn(page, 'secret', ADMIN_ID, ADMIN_SECRET);
  await waitText(page, '#catalog section h3', XSS_NS);
  assert.equal(await page.$$eval('main svg', (x) => x.length), 0, 'no <svg> element made from a name');
  await page.goto(floe.base + '/console/#/table/crm/opportunities');
  await waitText(page, '#schema td.coltags', XSS);
  assert.equal(await page.$$eval('img[src=x]', (x) => x.length), 0, 'no <img> element made from a tag');
  await new Promise((r) => setTimeout(r, 500));
  assert.deepEqual(problems, [], 'no dialog, page error or external request');
});
