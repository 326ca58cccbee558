// Browser tests of Floe's web console: playwright-core drives Debian's
// Chromium (headless) against `floe serve --demo`.
//
//   FLOE_BIN=$PWD/bin/floe npm --prefix tests/console test
//
// FLOE_BIN is the binary (default ../../bin/floe), CHROMIUM the browser
// (default /usr/bin/chromium), FLOE_CONSOLE_ARTIFACTS where screenshots go
// (default tests/console/artifacts).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, openPage, signIn as signInAt } from './browser.mjs';
import { startFloe, ADMIN_ID, ADMIN_SECRET } from './floe-server.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const ARTIFACTS = resolve(process.env.FLOE_CONSOLE_ARTIFACTS || join(here, 'artifacts'));
const XSS = '<img src=x onerror=alert(1)>';
const XSS2 = '<script>alert(2)</script>';
const XSS_NS = '<svg onload=alert(3)>'; // a namespace level may not hold '/'

let server; let base; let browser; let adminToken; let viewer;
const api = (...args) => server.api(...args);
const tokenFor = (...args) => server.tokenFor(...args);

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  server = await startFloe();
  ({ base, adminToken } = server);
  // A role to grant to, a principal holding DESCRIBE only, and names and
  // tags holding markup.
  assert.equal((await api('POST', '/api/v1/roles', { name: 'analysts' })).status, 201);
  const v = await api('POST', '/api/v1/principals', { name: 'viewer' });
  assert.equal(v.status, 201, JSON.stringify(v.data));
  viewer = { id: v.data.client_id, secret: v.data.client_secret };
  const g = await api('POST', '/api/v1/grants', { grantee: { kind: 'principal', name: 'viewer' }, privilege: 'DESCRIBE',
    on: { kind: 'namespace', namespace: ['crm'] }, all_tables: true });
  assert.equal(g.status, 201, JSON.stringify(g.data));
  const t = await api('PUT', '/api/v1/tags', { target: { on: { kind: 'table', namespace: ['crm'], name: 'opportunities' }, column: 'stage' }, tags: { note: XSS } });
  assert.equal(t.status, 200, JSON.stringify(t.data));
  const t2 = await api('PUT', '/api/v1/tags', { target: { on: { kind: 'table', namespace: ['crm'], name: 'opportunities' } }, tags: { owner: XSS2 } });
  assert.equal(t2.status, 200, JSON.stringify(t2.data));
  const ns = await api('POST', '/v1/floe/namespaces', { namespace: [XSS_NS], properties: { comment: XSS } });
  assert.equal(ns.status, 200, JSON.stringify(ns.data));
  browser = await launchChromium();
});

after(async () => {
  if (browser) await browser.close();
  if (server) await server.stop();
});

const newPage = (t) => openPage(browser, t, base, { acceptDownloads: true });

// signIn signs in and checks the console page's Content-Security-Policy.
async function signIn(page, id, secret) {
  const resp = await signInAt(page, base, id, secret);
  assert.ok(resp.headers()['content-security-policy'].includes("default-src 'self'"), 'CSP header on /console/');
}

const shot = (page, name, fullPage = true) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage });

test('admin: sign in, browse, grant, share, query, audit', async (t) => {
  const { ctx, page, problems } = await newPage(t);
  await signIn(page, ADMIN_ID, ADMIN_SECRET);

  // The session cookie: HttpOnly, SameSite=Strict, scoped to /console/.
  const cookies = await ctx.cookies(base + '/console/');
  const c = cookies.find((x) => x.name === 'floe_console');
  assert.ok(c, 'session cookie set');
  assert.equal(c.httpOnly, true);
  assert.equal(c.sameSite, 'Strict');
  assert.equal(c.path, '/console/');
  assert.equal(await page.evaluate(() => document.cookie), '', 'the page script cannot read the session cookie');

  // Catalog with search.
  await page.locator('#catalog a', { hasText: 'opportunities' }).waitFor();
  await shot(page, 'catalog');
  await page.getByLabel('Search the catalog').fill('opport');
  assert.equal(await page.locator('#catalog li a').count(), 1, 'the search leaves crm.opportunities alone');
  const t0 = Date.now();
  await page.locator('#catalog a', { hasText: 'opportunities' }).click();

  // Table page: schema, timeline and histogram.
  await page.locator('#timeline g.snap rect').first().waitFor();
  await page.locator('#histogram g.bucket rect').first().waitFor();
  await page.locator('#histogram text', { hasText: '< 1.0 MiB' }).waitFor();
  const interactive = Date.now() - t0;
  console.log(`table page of crm.opportunities interactive in ${interactive} ms (click to timeline + histogram drawn)`);
  await page.locator('#schema td', { hasText: 'stage' }).first().waitFor();
  // The snapshot id (int64, beyond a JS number's precision) is shown exactly.
  const rawMd = await (await fetch(base + '/v1/floe/namespaces/crm/tables/opportunities?snapshots=refs',
    { headers: { Authorization: `Bearer ${adminToken}`, 'X-Iceberg-Access-Delegation': 'remote-signing' } })).text();
  const snapID = rawMd.match(/"current-snapshot-id":(\d+)/)[1];
  assert.ok(!Number.isSafeInteger(Number(snapID)), `the demo's snapshot id ${snapID} is beyond 2^53`);
  assert.equal(await page.locator('table[aria-label="Latest snapshots"] tbody td:nth-child(7)').first().textContent(), snapID);
  await page.locator('#preview table').waitFor();
  assert.ok(await page.locator('#grant-editor').isVisible(), 'the admin sees the grant editor');

  // Tag a column.
  await page.locator('#tag-column').selectOption('amount');
  await page.locator('#tag-key').fill('unit');
  await page.locator('#tag-value').fill('EUR');
  await page.locator('#tag-editor button[type=submit]').click();
  await page.locator('#schema tr', { hasText: 'amount' }).locator('td.coltags', { hasText: 'unit=EUR' }).waitFor();

  // Grant SELECT to the role analysts.
  await page.locator('#grantee-kind').selectOption('role');
  await page.locator('#grantee-name').fill('analysts');
  await page.locator('#grant-privilege').selectOption('SELECT');
  await page.locator('#grant-editor button[type=submit]').click();
  await page.locator('#access table[aria-label="Grants"] td', { hasText: 'role analysts' }).waitFor();
  await shot(page, 'table');

  // A share with the table, and a recipient whose profile is shown once.
  await page.getByRole('link', { name: 'Shares' }).click();
  await page.locator('#share-name').fill('console_share');
  await page.locator('#share-table').fill('crm.opportunities');
  await page.locator('#share-form button[type=submit]').click();
  await page.locator('#share-list td', { hasText: 'console_share' }).waitFor();
  await page.locator('#recipient-name').fill('acme');
  await page.locator('#recipient-share').fill('console_share');
  await page.locator('#recipient-form button[type=submit]').click();
  await page.locator('#profile').waitFor();
  const profile = JSON.parse(await page.locator('#profile').textContent());
  assert.ok(profile.bearerToken, 'the profile carries the bearer token');
  await page.locator('#share-list td', { hasText: 'acme' }).first().waitFor();
  await shot(page, 'shares');

  // Time travel from the table page: the query page opens with the
  // snapshot's AT clause, exact to the digit.
  await page.getByRole('link', { name: 'Catalog' }).click();
  await page.locator('#catalog a', { hasText: 'opportunities' }).click();
  await page.locator('a.time-travel').first().click();
  await page.locator('#sql').waitFor();
  assert.equal(await page.locator('#sql').inputValue(), `SELECT * FROM "crm"."opportunities" AT (VERSION => ${snapID}) LIMIT 100`);
  await page.locator('#run').click();
  await page.locator('#row-count', { hasText: '100 rows' }).waitFor();
  // The AT clause picker.
  await page.locator('#sql').fill('SELECT count(*) AS n FROM crm.opportunities');
  await page.locator('#sql').evaluate((e) => { e.selectionStart = e.selectionEnd = e.value.length; });
  await page.locator('#as-of').fill('2099-01-01T00:00');
  await page.locator('#insert-at').click();
  assert.equal(await page.locator('#sql').inputValue(), "SELECT count(*) AS n FROM crm.opportunities AT (TIMESTAMP => TIMESTAMP '2099-01-01 00:00:00')");
  await page.locator('#run').click();
  await page.locator('#results td', { hasText: '2000' }).waitFor();

  // An SQL query with results and a CSV export.
  await page.getByRole('link', { name: 'Query', exact: true }).click();
  await page.locator('#sql').fill('SELECT stage, count(*) AS n FROM crm.opportunities GROUP BY stage ORDER BY stage');
  await page.locator('#run').click();
  await page.locator('#row-count').waitFor();
  assert.ok(await page.locator('#results table td').count() > 0, 'the grid has rows');
  await shot(page, 'query');
  const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#export-csv').click()]);
  const csv = readFileSync(await download.path(), 'utf8');
  assert.match(csv, /^"?stage"?,"?n"?\r?\nClosed Lost,\d+/, 'CSV export: the header, then the rows');

  // The audit page shows all of it, and the chain verifies.
  await page.getByRole('link', { name: 'Audit' }).click();
  await page.locator('#audit-verify .badge.ok').waitFor();
  await page.locator('#audit-principal').fill('admin');
  await page.locator('#audit-filter button[type=submit]').click();
  await page.locator('#audit-results td').first().waitFor();
  const actions = await page.locator('#audit-results tbody tr td:nth-child(4)').allTextContents();
  for (const want of ['mgmt.tag.set', 'mgmt.grant.create', 'mgmt.share.create', 'mgmt.share.object.add', 'mgmt.recipient.create', 'mgmt.share.grant', 'sql.query', 'oauth.token']) {
    assert.ok(actions.includes(want), `audit page shows ${want} (got ${[...new Set(actions)].join(', ')})`);
  }
  await shot(page, 'audit', false);

  // Sign out: the audit records the token revoked.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('Client id').waitFor();
  const out = await api('GET', '/api/v1/audit?action=console.logout&limit=1');
  assert.equal(out.status, 200);
  assert.equal(out.data.records[0].detail.token_revoked, true, 'logout revoked the session token');
  assert.deepEqual(problems, []);
});

test('a principal with DESCRIBE only sees metadata but no data and no grant editor', async (t) => {
  const { page, problems } = await newPage(t);
  await signIn(page, viewer.id, viewer.secret);
  await page.locator('#catalog a', { hasText: 'opportunities' }).click();
  await page.locator('#timeline').waitFor();
  await page.locator('#sizes', { hasText: 'need SELECT' }).waitFor();
  await page.locator('#access').filter({ hasNotText: 'Loading' }).waitFor();
  assert.equal(await page.locator('#grant-editor').count(), 0, 'no grant editor');
  assert.equal(await page.locator('#tag-editor').count(), 0, 'no tag editor');
  assert.equal(await page.locator('#preview table').count(), 0, 'no data preview');
  assert.equal(await page.locator('#histogram').count(), 0, 'no file statistics');
  await shot(page, 'table-describe-only');
  await page.getByRole('link', { name: 'Query' }).click();
  await page.locator('#sql').fill('SELECT * FROM crm.opportunities LIMIT 5');
  await page.locator('#run').click();
  await page.locator('#results .error').waitFor();
  assert.match(await page.locator('#results .error').textContent(), /^403: .*(SELECT|42501)/);
  assert.equal(await page.locator('#results table').count(), 0, 'no rows');
  await page.getByRole('link', { name: 'Audit' }).click();
  await page.locator('#audit-results .error').waitFor();
  assert.match(await page.locator('#audit-results .error').textContent(), /^403/);
  assert.deepEqual(problems, []);
});

test('keyboard only: sign in and open a table; every control has a label', async (t) => {
  const { page, problems } = await newPage(t);
  await page.goto(base + '/console/');
  await page.getByLabel('Client id').waitFor();
  assert.equal(await page.evaluate(() => document.activeElement.id), 'client-id', 'the client id field has the focus');
  await page.keyboard.type(viewer.id);
  await page.keyboard.press('Tab');
  await page.keyboard.type(viewer.secret);
  await page.keyboard.press('Enter');
  await page.locator('#catalog a', { hasText: 'opportunities' }).waitFor();
  let reached = false;
  for (let i = 0; i < 40 && !reached; i++) {
    await page.keyboard.press('Tab');
    reached = await page.evaluate(() => document.activeElement.tagName === 'A' && document.activeElement.textContent === 'opportunities');
  }
  assert.ok(reached, 'Tab reaches the table link');
  await page.keyboard.press('Enter');
  await page.locator('#timeline').waitFor();
  for (const hash of ['#/', '#/table/crm/opportunities', '#/query', '#/shares', '#/audit']) {
    await page.goto(base + '/console/' + hash);
    await page.locator('main h1').waitFor();
    await page.waitForTimeout(200);
    const unlabeled = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea, button')]
      .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.textContent.trim())
      .map((e) => e.outerHTML.slice(0, 80)));
    assert.deepEqual(unlabeled, [], `controls without a label on ${hash}`);
  }
  assert.deepEqual(problems, []);
});

test('markup in names and tags stays text; no dialog fires', async (t) => {
  const { page, problems } = await newPage(t);
  await signIn(page, ADMIN_ID, ADMIN_SECRET);
  const card = page.locator('#catalog section h3', { hasText: XSS_NS });
  await card.waitFor();
  assert.equal(await card.textContent(), XSS_NS, 'the namespace name is shown as text');
  assert.equal(await page.locator('main svg').count(), 0, 'no <svg> element made from a name');
  await page.goto(base + '/console/#/table/crm/opportunities');
  await page.locator('#schema td.coltags', { hasText: XSS }).waitFor();
  await page.locator('#table-tags', { hasText: XSS2 }).waitFor();
  assert.equal(await page.locator('img[src=x]').count(), 0, 'no <img> element made from a tag');
  assert.equal(await page.locator('main script').count(), 0, 'no <script> element made from a tag');
  await page.waitForTimeout(500);
  await shot(page, 'xss-inert');
  assert.deepEqual(problems, [], 'no dialog, page error or external request');
});

test('CSRF: cross-site and token-less state changes are refused', async (t) => {
  const { ctx, page } = await newPage(t);
  await signIn(page, ADMIN_ID, ADMIN_SECRET);
  const cookie = (await ctx.cookies(base + '/console/')).find((x) => x.name === 'floe_console');
  const grant = JSON.stringify({ grantee: { kind: 'role', name: 'analysts' }, privilege: 'DESCRIBE', on: { kind: 'table', namespace: ['crm'], name: 'accounts' } });
  const post = (headers) => fetch(base + '/console/api/proxy/api/v1/grants', {
    method: 'POST', body: grant, headers: { Cookie: `floe_console=${cookie.value}`, 'Content-Type': 'application/json', ...headers } });
  // What a page of another site could send: the cookie (were it sent at all), no token.
  let r = await post({ Origin: 'http://evil.example', 'Sec-Fetch-Site': 'cross-site' });
  assert.equal(r.status, 403, 'cross-site POST without the token');
  r = await post({ Origin: base });
  assert.equal(r.status, 403, 'same-origin POST without the token');
  const { csrf_token: csrf } = await (await fetch(base + '/console/api/session', { headers: { Cookie: `floe_console=${cookie.value}` } })).json();
  r = await post({ Origin: 'http://evil.example', 'X-CSRF-Token': csrf });
  assert.equal(r.status, 403, 'cross-origin POST even with the token');
  const g = await api('GET', '/api/v1/grants?namespace=crm&table=accounts&grantee=analysts');
  assert.equal(g.data.grants.length, 0, 'no refused request made a grant');
  // A real form post from a page of another origin (same host, another
  // port: the same "site", so the browser does send the SameSite=Strict
  // cookie) is refused by the Origin and CSRF checks.
  const evil = createServer();
  const evilPort = await new Promise((res) => evil.listen(0, '127.0.0.1', () => res(evil.address().port)));
  evil.close();
  const http = await import('node:http');
  const srv = http.createServer((_, res) => {
    res.setHeader('Content-Type', 'text/html');
    res.end(`<form id=f method=POST action="${base}/console/api/logout"></form><script>document.getElementById('f').submit()</script>`);
  });
  await new Promise((res) => srv.listen(evilPort, '127.0.0.1', res));
  t.after(() => srv.close());
  const resp = await Promise.all([
    page.waitForResponse((x) => x.url().includes('/console/api/logout')),
    page.goto(`http://127.0.0.1:${evilPort}/`),
  ]).then(([x]) => x);
  assert.equal(resp.status(), 403, 'cross-origin form post → 403');
  r = await fetch(base + '/console/api/session', { headers: { Cookie: `floe_console=${cookie.value}` } });
  assert.equal(r.status, 200, 'the session survived the cross-site post');
});

test('the table page answers fast enough', async () => {
  // Server side: the three calls the table page waits on for its charts
  // (console/large_test.go times them on 5,000 snapshots and 100,000 files).
  const times = [];
  for (let i = 0; i < 15; i++) {
    const s = performance.now();
    const rs = await Promise.all([
      api('GET', '/v1/floe/namespaces/crm/tables/opportunities?snapshots=refs'),
      api('GET', '/api/v1/tables/floe/crm/opportunities/timeline'),
      api('GET', '/api/v1/tables/floe/crm/opportunities/summary'),
    ]);
    times.push(performance.now() - s);
    for (const r of rs) assert.equal(r.status, 200);
  }
  times.sort((x, y) => x - y);
  console.log(`demo table page server calls: p50 ${times[7].toFixed(1)} ms, max ${times[14].toFixed(1)} ms`);
  assert.ok(times[7] < 200, `p50 ${times[7]} ms ≤ 200 ms`);
});

test('the table page of a table with 5,000 snapshots is interactive within 1 s', async (t) => {
  // 5,000 more snapshots on crm.opportunities (each naming the current
  // manifest list: the same 12 files), committed at once. Runs last: it
  // changes the demo table.
  // Snapshot ids are int64: beyond what a JS number holds exactly, so they
  // are read from and written into the JSON text as digits.
  const raw = await (await fetch(base + '/v1/floe/namespaces/crm/tables/opportunities?snapshots=refs',
    { headers: { Authorization: `Bearer ${adminToken}`, 'X-Iceberg-Access-Delegation': 'remote-signing' } })).text();
  const md = JSON.parse(raw).metadata;
  const headID = raw.match(/"current-snapshot-id":(\d+)/)[1];
  const head = md.snapshots[0];
  const start = Math.max(Date.now(), md['last-updated-ms'] + 1);
  const int = (digits) => `#int#${digits}`;
  const updates = [];
  let parent = headID;
  for (let i = 1; i <= 5000; i++) {
    const id = String(9_000_000_000 + i);
    updates.push({ action: 'add-snapshot', snapshot: { 'snapshot-id': int(id), 'parent-snapshot-id': int(parent), 'sequence-number': md['last-sequence-number'] + i,
      'timestamp-ms': start + i, 'manifest-list': head['manifest-list'], 'schema-id': head['schema-id'],
      summary: { operation: i % 10 ? 'append' : 'overwrite', 'added-records': String(100 + (i % 37)), 'deleted-records': String(i % 10 ? 0 : 50),
        'added-data-files': '2', 'deleted-data-files': String(i % 10 ? 0 : 1) } } });
    parent = id;
  }
  updates.push({ action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': int(parent) });
  const body = JSON.stringify({ requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': int(headID) }], updates })
    .replace(/"#int#(\d+)"/g, '$1');
  const c = await fetch(base + '/v1/floe/namespaces/crm/tables/opportunities', { method: 'POST', body,
    headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/json' } });
  assert.equal(c.status, 200, (await c.text()).slice(0, 500));

  const { page, problems } = await newPage(t);
  await signIn(page, ADMIN_ID, ADMIN_SECRET);
  const runs = [];
  for (let i = 0; i < 5; i++) {
    await page.goto(base + '/console/#/');
    await page.locator('#catalog a', { hasText: 'opportunities' }).waitFor();
    const t0 = Date.now();
    await page.locator('#catalog a', { hasText: 'opportunities' }).click();
    await page.locator('#timeline g.snap rect').first().waitFor();
    await page.locator('#histogram g.bucket rect').first().waitFor();
    await page.locator('#access table, #access p').first().waitFor();
    runs.push(Date.now() - t0);
  }
  assert.match(await page.locator('main > p.muted').first().textContent(), /5,001 snapshots/);
  assert.equal(await page.locator('#timeline g.snap').count(), Math.ceil(5001 / Math.ceil(5001 / 500)), '5,001 snapshots drawn in 455 points of 11 (at most 500)');
  await shot(page, 'table-5000-snapshots', false);
  runs.sort((a, b) => a - b);
  console.log(`table page with 5,001 snapshots: click to timeline + histogram + grants drawn, runs ${runs.join(', ')} ms (median ${runs[2]} ms)`);
  assert.ok(runs[2] <= 1000, `median ${runs[2]} ms ≤ 1 s`);
  assert.deepEqual(problems, []);
});
