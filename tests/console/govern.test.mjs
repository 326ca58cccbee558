// Browser tests of the console's governance and browse pages (grant
// editor with tag expressions and data filters, principals and roles,
// share and recipient pages, view and data product pages, the table
// page's next maintenance run and effective access): playwright-core
// drives Debian's Chromium (headless) against its own `floe serve --demo`.
//
//   FLOE_BIN=$PWD/bin/floe npm --prefix tests/console test
//
// Each test does something in the browser, sees it listed, and asks the
// management API (as the administrator) that it really happened.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, openPage, signIn as signInAt } from './browser.mjs';
import { startFloe, ADMIN_ID, ADMIN_SECRET } from './floe-server.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const ARTIFACTS = resolve(process.env.FLOE_CONSOLE_ARTIFACTS || join(here, 'artifacts'));
const XSS_ROLE = '<img src=x onerror=alert(1)>';
const XSS_TAG = '<script>alert(2)</script>';
const XSS_FILTER = "region = '<svg onload=alert(3)>'";

let server; let base; let browser; let adminToken; let adminName; let viewer;
const api = (...args) => server.api(...args);
const tokenFor = (...args) => server.tokenFor(...args);

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  // The background scheduler runs, on a daily tick: its next run is the
  // next UTC midnight, and nothing runs while the tests do.
  server = await startFloe([], { FLOE_MAINTENANCE: 'true', FLOE_MAINTENANCE_INTERVAL: '24h' });
  ({ base, adminToken } = server);
  adminName = (await api('GET', '/api/v1/whoami')).data.principal;
  assert.ok(adminName, 'whoami names the administrator');
  // A role to grant to, a principal holding DESCRIBE only on crm, the
  // namespace crm tagged for a tag-based grant, and a role and tag holding
  // markup.
  assert.equal((await api('POST', '/api/v1/roles', { name: 'eu_analysts' })).status, 201);
  assert.equal((await api('POST', '/api/v1/roles', { name: XSS_ROLE })).status, 201);
  const v = await api('POST', '/api/v1/principals', { name: 'viewer' });
  assert.equal(v.status, 201, JSON.stringify(v.data));
  viewer = { id: v.data.client_id, secret: v.data.client_secret };
  const g = await api('POST', '/api/v1/grants', { grantee: { kind: 'principal', name: 'viewer' }, privilege: 'DESCRIBE',
    on: { kind: 'namespace', namespace: ['crm'] }, all_tables: true });
  assert.equal(g.status, 201, JSON.stringify(g.data));
  const t = await api('PUT', '/api/v1/tags', { target: { on: { kind: 'namespace', namespace: ['crm'] } }, tags: { domain: 'crm', note: XSS_TAG } });
  assert.equal(t.status, 200, JSON.stringify(t.data));
  browser = await launchChromium();
});

after(async () => {
  if (browser) await browser.close();
  if (server) await server.stop();
});

const newPage = (t) => openPage(browser, t, base, { acceptDownloads: true, accept: /^(Disable|Revoke every token|Drop role) / });

const signIn = (page, id, secret) => signInAt(page, base, id, secret);

const shot = (page, name, fullPage = true) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage });

async function grantsOf(grantee) {
  const r = await api('GET', `/api/v1/grants?grantee=${encodeURIComponent(grantee)}`);
  assert.equal(r.status, 200);
  return r.data.grants;
}

test('grant editor: data filters and tag expressions, API errors inline, nothing half-made', async (t) => {
  const { page, problems } = await newPage(t);
  await signIn(page, ADMIN_ID, ADMIN_SECRET);
  await page.goto(base + '/console/#/table/crm/accounts');
  await page.locator('#grant-editor').waitFor();
  assert.equal(await page.locator('#grant-tag-expression').isVisible(), false, 'no tag expression field for a grant on the table');
  await page.locator('#grant-privilege').selectOption('MODIFY');
  assert.equal(await page.locator('#grant-row-filter').isVisible(), false, 'no data filter but for SELECT');

  // A row filter naming a column the table does not have: the API's message
  // next to the row filter field, and no grant made.
  await page.locator('#grantee-kind').selectOption('role');
  await page.locator('#grantee-name').fill('eu_analysts');
  await page.locator('#grant-privilege').selectOption('SELECT');
  await page.locator('#grant-row-filter').fill("territory = 'EMEA'");
  await page.locator('#grant-editor button[type=submit]').click();
  const rowErr = page.locator('#grant-row-filter-error');
  await rowErr.filter({ hasText: /\S/ }).waitFor();
  assert.match(await rowErr.textContent(), /row filter refers to column "territory"/);
  assert.equal(await page.locator('#grant-row-filter').getAttribute('aria-invalid'), 'true');
  assert.equal(await page.locator('#grant-row-filter').getAttribute('aria-describedby'), 'grant-row-filter-error');
  // Not an expression at all.
  await page.locator('#grant-row-filter').fill("region = 'EMEA' AND");
  await page.locator('#grant-editor button[type=submit]').click();
  await page.waitForFunction(() => /row filter/i.test(document.getElementById('grant-row-filter-error').textContent) && !/territory/.test(document.getElementById('grant-row-filter-error').textContent));
  // An unknown excluded column.
  await page.locator('#grant-row-filter').fill('');
  await page.locator('#grant-exclude-columns').fill('email, nosuchcolumn');
  await page.locator('#grant-editor button[type=submit]').click();
  await page.locator('#grant-exclude-columns-error', { hasText: 'nosuchcolumn' }).waitFor();
  assert.deepEqual(await grantsOf('eu_analysts'), [], 'no refused grant was made');

  // A valid filtered grant: listed with its filter, and the API has it.
  await page.locator('#grant-row-filter').fill("region = 'EMEA'");
  await page.locator('#grant-exclude-columns').fill('email, phone');
  await page.locator('#grant-editor button[type=submit]').click();
  await page.locator('table[aria-label="Grants"] tr', { hasText: 'role eu_analysts' }).filter({ hasText: "rows: region = 'EMEA'; without columns: email, phone" }).waitFor();
  let gs = await grantsOf('eu_analysts');
  assert.equal(gs.length, 1);
  assert.equal(gs[0].privilege, 'SELECT');
  assert.equal(gs[0].filter.row_filter, "region = 'EMEA'");
  assert.deepEqual(gs[0].filter.exclude_columns, ['email', 'phone']);

  // A tag-based grant: a bad expression is refused next to its field.
  await page.locator('#grant-scope').selectOption('tags');
  assert.ok(await page.locator('#grant-tag-expression').isVisible(), 'the tag expression field once asked for');
  await page.locator('#grantee-name').fill('eu_analysts');
  await page.locator('#grant-privilege').selectOption('DESCRIBE');
  await page.locator('#grant-tag-expression').fill('domain = ');
  await page.locator('#grant-editor button[type=submit]').click();
  await page.locator('#grant-tag-expression-error').filter({ hasText: /\S/ }).waitFor();
  assert.equal((await grantsOf('eu_analysts')).length, 1, 'the bad tag expression made nothing');
  // ... and a good one reaches crm.accounts through its namespace's tag.
  await page.locator('#grant-tag-expression').fill('domain = crm');
  await page.locator('#grant-editor button[type=submit]').click();
  await page.locator('table[aria-label="Effective access"] tr', { hasText: 'role eu_analysts' }).filter({ hasText: 'domain = crm' })
    .locator('td.via-tag').waitFor();
  gs = await grantsOf('eu_analysts');
  const tg = gs.find((x) => x.tag_expression);
  assert.ok(tg, 'the API has the tag-based grant');
  assert.equal(tg.tag_expression, 'domain = crm');
  assert.equal(tg.privilege, 'DESCRIBE');
  assert.equal(tg.on.kind, 'warehouse');
  await shot(page, 'grant-editor');
  assert.deepEqual(problems, []);
});

test('principals and roles: create (secret once, downloadable), members, disable revokes', async (t) => {
  const { page, problems } = await newPage(t);
  await signIn(page, ADMIN_ID, ADMIN_SECRET);
  await page.getByRole('link', { name: 'Principals' }).click();
  await page.locator('#principal-form').waitFor();
  await page.locator('#principal-name').fill('ana');
  await page.locator('#principal-form button[type=submit]').click();
  await page.locator('#new-secret').waitFor();
  const clientID = await page.locator('#new-client-id').textContent();
  const secret = await page.locator('#new-secret').textContent();
  const [dl] = await Promise.all([page.waitForEvent('download'), page.locator('#download-secret').click()]);
  assert.equal(readFileSync(await dl.path(), 'utf8'), `client_id=${clientID}\nclient_secret=${secret}\n`, 'the download holds the credential');
  await page.locator('table[aria-label="Principals"] td', { hasText: 'ana' }).first().waitFor();
  // The secret is real, and shown once: a reload does not show it again.
  const anaToken = await tokenFor(clientID, secret);
  assert.equal((await api('GET', '/api/v1/whoami', undefined, anaToken)).status, 200);
  await page.reload();
  await page.locator('#principal-list table').waitFor();
  assert.equal(await page.locator('#new-secret').count(), 0, 'the secret is not shown again');
  assert.ok(!(await page.locator('main').textContent()).includes(secret), 'the secret appears nowhere on the page');

  // Roles: create one, add ana, see it, the API confirms; remove her.
  await page.locator('#role-name').fill('stewards');
  await page.locator('#role-description').fill('data stewards');
  await page.locator('#role-form button[type=submit]').click();
  await page.locator('table[aria-label="Roles"] td', { hasText: 'stewards' }).first().waitFor();
  await page.locator('#member-role').selectOption('stewards');
  await page.locator('#member-principal').selectOption('ana');
  await page.locator('#member-form button[type=submit]').click();
  await page.getByRole('button', { name: 'Remove ana from role stewards' }).waitFor();
  assert.deepEqual((await api('GET', '/api/v1/roles/stewards')).data.members, ['ana']);
  await shot(page, 'principals');
  await page.getByRole('button', { name: 'Remove ana from role stewards' }).click();
  await page.locator('table[aria-label="Roles"] tr', { hasText: 'stewards' }).filter({ hasText: 'none' }).waitFor();
  assert.deepEqual((await api('GET', '/api/v1/roles/stewards')).data.members, []);

  // Disable: the token ana holds is refused at once; enable again.
  await page.getByRole('button', { name: 'Disable principal ana' }).click();
  await page.getByRole('button', { name: 'Enable principal ana' }).waitFor();
  assert.equal((await api('GET', '/api/v1/principals/ana')).data.disabled, true);
  assert.equal((await api('GET', '/api/v1/whoami', undefined, anaToken)).status, 401, 'the disabled principal\'s token is refused');
  await page.getByRole('button', { name: 'Enable principal ana' }).click();
  await page.getByRole('button', { name: 'Disable principal ana' }).waitFor();
  assert.equal((await api('GET', '/api/v1/principals/ana')).data.disabled, false);
  // The signed-in administrator has no button to disable itself.
  await page.locator('table[aria-label="Principals"] td', { hasText: new RegExp(`^${adminName}$`) }).waitFor();
  assert.equal(await page.getByRole('button', { name: `Disable principal ${adminName}` }).count(), 0);
  assert.deepEqual(problems, []);
});

test('share page: add and remove objects and recipients; recipient token rotation shows the new profile once', async (t) => {
  assert.equal((await api('POST', '/api/v1/shares', { name: 'partner_share', comment: 'for the partner' })).status, 201);
  const rc = await api('POST', '/api/v1/recipients', { name: 'partner' });
  assert.equal(rc.status, 201, JSON.stringify(rc.data));
  const firstToken = rc.data.token_id;
  const { page, problems } = await newPage(t);
  await signIn(page, ADMIN_ID, ADMIN_SECRET);
  await page.getByRole('link', { name: 'Shares' }).click();
  await page.locator('#share-list a', { hasText: 'partner_share' }).click();
  await page.locator('#object-form').waitFor();
  await page.locator('#object-name').fill('crm.nosuchtable');
  await page.locator('#object-form button[type=submit]').click();
  await page.locator('#object-name-error').filter({ hasText: /\S/ }).waitFor();
  await page.locator('#object-name').fill('crm.accounts');
  await page.locator('#object-form button[type=submit]').click();
  await page.locator('table[aria-label="Shared objects"] td', { hasText: 'crm.accounts' }).first().waitFor();
  await page.locator('#share-recipient-name').fill('partner');
  await page.locator('#share-recipient-form button[type=submit]').click();
  await page.locator('table[aria-label="Share recipients"] a', { hasText: 'partner' }).waitFor();
  let s = (await api('GET', '/api/v1/shares/partner_share')).data;
  assert.deepEqual(s.objects.map((o) => o.name), ['crm.accounts']);
  assert.deepEqual(s.recipients.map((r) => r.recipient), ['partner']);
  await shot(page, 'share');
  // Remove the object again.
  await page.getByRole('button', { name: 'Remove crm.accounts from the share' }).click();
  await page.locator('main p.muted', { hasText: 'No objects yet.' }).waitFor();
  s = (await api('GET', '/api/v1/shares/partner_share')).data;
  assert.equal((s.objects || []).length, 0, 'the API has the object removed');

  // The recipient page: rotate with no grace; the new profile is shown
  // once, and the old token is revoked.
  await page.locator('table[aria-label="Share recipients"] a', { hasText: 'partner' }).click();
  await page.locator('#rotate-form').waitFor();
  await page.locator('#rotate-grace').fill('0');
  await page.locator('#rotate-form button[type=submit]').click();
  await page.locator('#profile').waitFor();
  const profile = JSON.parse(await page.locator('#profile').textContent());
  assert.ok(profile.bearerToken && profile.endpoint, 'the new profile carries a bearer token');
  const [dl] = await Promise.all([page.waitForEvent('download'), page.locator('#download-profile').click()]);
  assert.deepEqual(JSON.parse(readFileSync(await dl.path(), 'utf8')), profile, 'the download is the profile');
  const rec = (await api('GET', '/api/v1/recipients/partner')).data;
  const live = rec.tokens.filter((x) => x.live);
  assert.equal(live.length, 1, 'one live token after a rotation with no grace');
  assert.notEqual(live[0].id, firstToken);
  assert.ok(rec.tokens.find((x) => x.id === firstToken).revoked_at, 'the old token is revoked');
  // The new token works on the Delta Sharing server; it is never shown again.
  const ds = await fetch(profile.endpoint.replace(/\/$/, '') + '/shares', { headers: { Authorization: `Bearer ${profile.bearerToken}` } });
  assert.equal(ds.status, 200, 'the rotated token lists the shares');
  await shot(page, 'recipient');
  await page.reload();
  await page.locator('table[aria-label="Recipient tokens"]').waitFor();
  assert.equal(await page.locator('#profile').count(), 0, 'the profile is not shown again');
  // Revoke every token.
  await page.locator('#revoke-tokens').click();
  await page.waitForFunction(() => [...document.querySelectorAll('table[aria-label="Recipient tokens"] td.ok')].length === 0);
  assert.equal((await api('GET', '/api/v1/recipients/partner')).data.tokens.filter((x) => x.live).length, 0);
  assert.equal((await fetch(profile.endpoint.replace(/\/$/, '') + '/shares', { headers: { Authorization: `Bearer ${profile.bearerToken}` } })).status, 401);
  assert.deepEqual(problems, []);
});

test('view and data product pages', async (t) => {
  const check = await api('POST', '/api/v1/products/sales_pipeline/checks');
  assert.equal(check.status, 200, JSON.stringify(check.data));
  const { page, problems } = await newPage(t);
  await signIn(page, ADMIN_ID, ADMIN_SECRET);
  // The catalog search finds products and shares too.
  await page.locator('#product-list a', { hasText: 'sales_pipeline' }).waitFor();
  await page.locator('#share-links a', { hasText: 'partner_share' }).waitFor();
  await page.getByLabel('Search the catalog').fill('partner');
  await page.locator('#product-list').waitFor({ state: 'detached' });
  assert.deepEqual(await page.locator('#share-links a').allTextContents(), ['partner_share']);
  await page.getByLabel('Search the catalog').fill('sales_pipe');
  await page.locator('#share-links').waitFor({ state: 'detached' });
  await page.locator('#product-list a', { hasText: 'sales_pipeline' }).click();
  await page.locator('table[aria-label="Outputs"]').waitFor();
  const product = (await api('GET', '/api/v1/products/sales_pipeline')).data;
  assert.equal(await page.locator('table[aria-label="Outputs"] tbody tr').count(), product.outputs.length);
  assert.equal(await page.locator('table[aria-label="Metrics"] tbody tr').count(), product.metrics.length);
  assert.equal(await page.locator('table[aria-label="Expectations"] tbody tr').count(), product.expectations.length);
  // Each expectation's last result is the API's.
  for (const r of check.data.results) {
    const row = page.locator('table[aria-label="Expectations"] tbody tr', { has: page.locator('td:first-child', { hasText: new RegExp(`^${r.expectation}$`) }) });
    assert.equal(await row.locator('td:nth-child(3)').textContent(), r.status, `the last result of ${r.expectation}`);
  }
  await page.locator('#last-check .badge', { hasText: check.data.status }).waitFor();
  assert.ok(await page.locator('table[aria-label="Product versions"] tbody tr').count() >= 1);
  await shot(page, 'product');

  // A definer-rights view of the product.
  await page.locator('table[aria-label="Outputs"] a', { hasText: /^crm\.pipeline$/ }).click();
  await page.locator('#view-security').waitFor();
  assert.match(await page.locator('#view-security').textContent(), /definer rights.*crm_steward/);
  const vmd = (await api('GET', '/v1/floe/namespaces/crm/views/pipeline')).data.metadata;
  const cur = vmd.versions.find((v) => v['version-id'] === vmd['current-version-id']);
  assert.equal(await page.locator('#view-sql pre').first().textContent(), cur.representations[0].sql);
  assert.equal(await page.locator('table[aria-label="View versions"] tbody tr').count(), vmd.versions.length);
  assert.ok(await page.locator('table[aria-label="View schema"] tbody tr').count() > 0);
  // Tags on the view: set one (markup stays text), the API has it; remove it.
  await page.locator('#view-tag-editor').waitFor();
  await page.locator('#view-tag-key').fill('tier');
  await page.locator('#view-tag-value').fill(XSS_TAG);
  await page.locator('#view-tag-editor button[type=submit]').click();
  await page.locator('#view-tags .tag', { hasText: `tier=${XSS_TAG}` }).waitFor();
  const vt = await api('GET', '/api/v1/tags?namespace=crm&view=pipeline');
  assert.equal(vt.data.tags.tier, XSS_TAG);
  await shot(page, 'view');
  await page.getByRole('button', { name: 'Remove tag tier' }).click();
  await page.waitForFunction(() => !document.getElementById('view-tags').textContent.includes('tier='));
  assert.equal((await api('GET', '/api/v1/tags?namespace=crm&view=pipeline')).data.tags.tier, undefined);
  assert.equal(await page.locator('main script').count(), 0);
  assert.deepEqual(problems, []);
});

test('table page: next maintenance run and who has access and why', async (t) => {
  const { page, problems } = await newPage(t);
  await signIn(page, ADMIN_ID, ADMIN_SECRET);
  await page.goto(base + '/console/#/table/crm/opportunities');
  await page.locator('#next-run strong').waitFor();
  const summary = (await api('GET', '/api/v1/tables/floe/crm/opportunities/summary')).data;
  assert.ok(summary.next_runs.length > 0, 'the scheduler has next runs');
  const midnight = new Date(); midnight.setUTCHours(24, 0, 0, 0);
  assert.equal(Date.parse(summary.next_runs[0].at), midnight.getTime(), 'a daily tick runs next at UTC midnight');
  assert.equal(await page.locator('#next-run strong').textContent(), midnight.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z'));
  // Effective access: the viewer through its namespace grant, the tag grant
  // of the first test (when it ran first) or at least the admin.
  const eff = page.locator('table[aria-label="Effective access"]');
  await eff.waitFor();
  await eff.locator('tr', { hasText: 'principal viewer' }).locator('td.via-namespace').waitFor();
  const access = (await api('GET', '/api/v1/tables/floe/crm/opportunities/access')).data;
  assert.ok(access.administrators.includes(adminName), `the administrators ${access.administrators} include ${adminName}`);
  await eff.locator('tr', { hasText: `principal ${adminName}` }).locator('td.via-admin').waitFor();
  assert.equal(await eff.locator('tbody tr').count(), access.entries.length + access.administrators.length, 'one row per API entry and administrator');
  for (const e of access.entries) {
    await eff.locator('tr', { hasText: `${e.grantee.kind} ${e.grantee.name}` }).locator(`td.via-${e.via}`).first().waitFor();
  }
  await page.locator('#access').screenshot({ path: join(ARTIFACTS, 'table-access.png') });
  assert.deepEqual(problems, []);
});

test('a principal with DESCRIBE only sees no Principals controls and no grant editor', async (t) => {
  const { page, problems } = await newPage(t);
  await signIn(page, viewer.id, viewer.secret);
  assert.equal(await page.getByRole('link', { name: 'Principals' }).count(), 0, 'no Principals link');
  await page.goto(base + '/console/#/principals');
  await page.locator('#principals-admin-only').waitFor();
  assert.equal(await page.locator('main form, main button').count(), 0, 'no Principals page controls');
  await page.goto(base + '/console/#/table/crm/accounts');
  await page.locator('#access h3').first().waitFor();
  assert.equal(await page.locator('#grant-editor').count(), 0, 'no grant editor');
  assert.equal(await page.locator('#access button').count(), 0, 'no Revoke buttons');
  // Effective access shows the viewer's own grant only, and no members or
  // administrators.
  const rows = await page.locator('table[aria-label="Effective access"] tbody tr').allTextContents();
  assert.ok(rows.length >= 1 && rows.every((r) => r.includes('principal viewer')), `only its own grants: ${rows}`);
  await page.goto(base + '/console/#/view/crm/pipeline');
  await page.locator('#view-tags').waitFor();
  assert.equal(await page.locator('#view-tag-editor').count(), 0, 'no tag editor on a view');
  // The API refuses what the page hides.
  const tok = await tokenFor(viewer.id, viewer.secret);
  assert.equal((await api('GET', '/api/v1/principals', undefined, tok)).status, 403);
  assert.equal((await api('POST', '/api/v1/grants', { grantee: { kind: 'principal', name: 'viewer' }, privilege: 'SELECT',
    on: { kind: 'table', namespace: ['crm'], name: 'accounts' } }, tok)).status, 403);
  assert.deepEqual(problems, []);
});

test('a steward of one table gets its grant editor, with the tag-expression scope only with MANAGE_GRANTS on the warehouse', async (t) => {
  const st = await api('POST', '/api/v1/principals', { name: 'steward' });
  assert.equal(st.status, 201, JSON.stringify(st.data));
  assert.equal((await api('POST', '/api/v1/grants', { grantee: { kind: 'principal', name: 'steward' }, privilege: 'MANAGE_GRANTS',
    on: { kind: 'table', namespace: ['crm'], name: 'accounts' } })).status, 201);
  const { page, problems } = await newPage(t);
  await signIn(page, st.data.client_id, st.data.client_secret);
  await page.goto(base + '/console/#/table/crm/accounts');
  await page.locator('#grant-editor').waitFor();
  assert.deepEqual(await page.locator('#grant-scope option').evaluateAll((os) => os.map((o) => o.value)), ['table'], 'no tag-expression scope');
  // The API agrees with the hidden control: a tag-based grant is refused.
  const tok = await tokenFor(st.data.client_id, st.data.client_secret);
  const refused = await api('POST', '/api/v1/grants', { grantee: { kind: 'role', name: 'eu_analysts' }, privilege: 'DESCRIBE', tag_expression: 'domain = crm' }, tok);
  assert.equal(refused.status, 403, JSON.stringify(refused.data));
  // A grant on its table through the editor is made, as the steward.
  await page.locator('#grantee-kind').selectOption('principal');
  await page.locator('#grantee-name').fill('viewer');
  await page.locator('#grant-privilege').selectOption('SELECT');
  await page.locator('#grant-include-columns').fill('account_id, name');
  await page.locator('#grant-editor button[type=submit]').click();
  await page.locator('table[aria-label="Grants"] tr', { hasText: 'principal viewer' }).filter({ hasText: 'only columns: account_id, name' }).waitFor();
  const made = (await grantsOf('viewer')).find((g) => g.privilege === 'SELECT' && g.on.name === 'accounts');
  assert.ok(made, 'the API has the grant');
  assert.equal(made.created_by, 'steward');
  assert.deepEqual(made.filter.include_columns, ['account_id', 'name']);
  // With MANAGE_GRANTS on the warehouse, the tag-expression scope appears.
  assert.equal((await api('POST', '/api/v1/grants', { grantee: { kind: 'principal', name: 'steward' }, privilege: 'MANAGE_GRANTS',
    on: { kind: 'warehouse' } })).status, 201);
  await page.reload();
  await page.locator('#grant-editor').waitFor();
  assert.deepEqual(await page.locator('#grant-scope option').evaluateAll((os) => os.map((o) => o.value)), ['table', 'tags']);
  assert.deepEqual(problems, []);
});

test('markup in a role name, a tag and a filter stays text', async (t) => {
  const g = await api('POST', '/api/v1/grants', { grantee: { kind: 'role', name: XSS_ROLE }, privilege: 'SELECT',
    on: { kind: 'table', namespace: ['crm'], name: 'accounts' }, filter: { row_filter: XSS_FILTER } });
  assert.equal(g.status, 201, JSON.stringify(g.data));
  const { page, problems } = await newPage(t);
  await signIn(page, ADMIN_ID, ADMIN_SECRET);
  await page.goto(base + '/console/#/table/crm/accounts');
  await page.locator('table[aria-label="Grants"] td', { hasText: `role ${XSS_ROLE}` }).waitFor();
  await page.locator('table[aria-label="Grants"] td', { hasText: `rows: ${XSS_FILTER}` }).waitFor();
  await page.locator('#table-tags', { hasText: XSS_TAG }).waitFor();
  await page.getByRole('link', { name: 'Principals' }).click();
  await page.locator('table[aria-label="Roles"] td', { hasText: XSS_ROLE }).first().waitFor();
  await page.waitForTimeout(300);
  assert.equal(await page.locator('img[src=x]').count(), 0, 'no <img> made from a role name');
  assert.equal(await page.locator('main svg, main script').count(), 0, 'no <svg> or <script> made from a filter or tag');
  assert.deepEqual(problems, [], 'no dialog, page error or external request');
});

test('every control of the new pages has a label', async (t) => {
  const { page, problems } = await newPage(t);
  await signIn(page, ADMIN_ID, ADMIN_SECRET);
  for (const hash of ['#/table/crm/accounts', '#/principals', '#/share/partner_share', '#/recipient/partner', '#/view/crm/pipeline', '#/product/sales_pipeline']) {
    await page.goto(base + '/console/' + hash);
    await page.locator('main h1').waitFor();
    await page.waitForTimeout(400);
    const unlabeled = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea, button')]
      .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.textContent.trim())
      .map((e) => e.outerHTML.slice(0, 80)));
    assert.deepEqual(unlabeled, [], `controls without a label on ${hash}`);
    assert.ok(await page.locator('main form, main table').count() > 0, `${hash} has its content`);
  }
  assert.deepEqual(problems, []);
});
