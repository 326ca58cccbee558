// Browser tests of the console's namespace and warehouse pages, the grant
// editor on namespaces, warehouses, views and data products, the page of a
// principal's or role's grants, and principal scopes and network
// allowlists: playwright-core drives Debian's Chromium (headless) against
// its own `floe serve --demo`.
//
//   FLOE_BIN=$PWD/bin/floe npm --prefix tests/console test
//
// Each test acts in the page, then asks the management API (as the
// administrator) that it really happened.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, openPage, signIn as signInAt } from './browser.mjs';
import { startFloe, ADMIN_ID, ADMIN_SECRET } from './floe-server.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const ARTIFACTS = resolve(process.env.FLOE_CONSOLE_ARTIFACTS || join(here, 'artifacts'));
const XSS_PROP = '<img src=x onerror=alert(1)>';
const XSS_TAG = '<script>alert(2)</script>';

let floe; let base; let browser; let api; let viewer;

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  floe = await startFloe();
  base = floe.base; api = floe.api;
  for (const r of ['ns_readers', 'wh_admins', 'view_readers', 'product_readers']) {
    assert.equal((await api('POST', '/api/v1/roles', { name: r })).status, 201);
  }
  // A principal holding DESCRIBE on crm and everything inside, nothing else.
  const v = await api('POST', '/api/v1/principals', { name: 'viewer' });
  assert.equal(v.status, 201, JSON.stringify(v.data));
  viewer = { id: v.data.client_id, secret: v.data.client_secret };
  const g = await api('POST', '/api/v1/grants', { grantee: { kind: 'principal', name: 'viewer' }, privilege: 'DESCRIBE',
    on: { kind: 'namespace', namespace: ['crm'] }, all_tables: true });
  assert.equal(g.status, 201, JSON.stringify(g.data));
  // Markup in a namespace property.
  const p = await api('POST', '/v1/floe/namespaces/crm/properties', { removals: [], updates: { note: XSS_PROP } });
  assert.equal(p.status, 200, JSON.stringify(p.data));
  browser = await launchChromium();
});

after(async () => {
  if (browser) await browser.close();
  if (floe) await floe.stop();
});

const newPage = (t) => openPage(browser, t, base, {});

const signIn = (page, id, secret) => signInAt(page, base, id, secret);

const shot = (page, name) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

async function grantsTo(kind, name) {
  const r = await api('GET', `/api/v1/grants?grantee_kind=${kind}&grantee=${encodeURIComponent(name)}`);
  assert.equal(r.status, 200);
  return r.data.grants;
}

// grant fills the grant editor on the page and submits it.
async function grant(page, kind, name, privilege, allTables) {
  await page.locator('#grantee-kind').selectOption(kind);
  await page.locator('#grantee-name').fill(name);
  await page.locator('#grant-privilege').selectOption(privilege);
  if (allTables !== undefined) await page.locator('#grant-all-tables').setChecked(allTables);
  await page.locator('#grant-editor button[type=submit]').click();
}

test('namespace page: properties, tables and views, a tag set and removed, a grant made and revoked; markup stays text', async (t) => {
  const { page, problems } = await newPage(t);
  await signIn(page, ADMIN_ID, ADMIN_SECRET);
  // From the catalog: the namespace's name opens its page.
  await page.locator('section[aria-label="namespace crm"] h3 a').click();
  await page.locator('#ns-grants #grant-editor').waitFor();
  assert.equal(await page.locator('h1').textContent(), 'Namespace crm');
  // Its tables and views, from the REST catalog.
  const tables = (await api('GET', '/v1/floe/namespaces/crm/tables')).data.identifiers.map((x) => x.name).sort();
  const views = (await api('GET', '/v1/floe/namespaces/crm/views')).data.identifiers.map((x) => x.name).sort();
  assert.ok(tables.length > 0 && views.length > 0, 'the demo has tables and views in crm');
  assert.deepEqual((await page.locator('#ns-tables a').allTextContents()).sort(), tables);
  assert.deepEqual((await page.locator('#ns-views a').allTextContents()).sort(), views);
  // The property holding markup is shown as those characters, and no
  // element was made from it.
  const prop = page.locator('table[aria-label="Namespace properties"] tr', { hasText: 'note' }).locator('td').nth(1);
  assert.equal(await prop.textContent(), XSS_PROP);
  assert.equal(await page.locator('main img').count(), 0, 'no <img> made from the property');

  // A tag holding markup: set in the page, shown as text, in the API.
  await page.locator('#ns-tag-key').fill('note');
  await page.locator('#ns-tag-value').fill(XSS_TAG);
  await page.locator('#ns-tag-editor button[type=submit]').click();
  await page.locator('#ns-own-tags .tag', { hasText: `note=${XSS_TAG}` }).waitFor();
  assert.equal(await page.locator('main script').count(), 0, 'no <script> made from the tag');
  let tags = (await api('GET', '/api/v1/tags?namespace=crm')).data;
  assert.equal(tags.tags.note, XSS_TAG, 'the API has the tag');
  await page.locator('#ns-tag-key').fill('domain');
  await page.locator('#ns-tag-value').fill('crm');
  await page.locator('#ns-tag-editor button[type=submit]').click();
  await page.locator('#ns-own-tags .tag', { hasText: 'domain=crm' }).waitFor();

  // SELECT on a namespace needs "everything inside": the API's refusal is
  // shown, nothing is made; with it, the grant is made and listed.
  await grant(page, 'role', 'ns_readers', 'SELECT', false);
  await page.locator('#grant-editor .field-error').filter({ hasText: /\S/ }).first().waitFor();
  assert.deepEqual(await grantsTo('role', 'ns_readers'), [], 'a refused grant makes nothing');
  await grant(page, 'role', 'ns_readers', 'SELECT', true);
  await page.locator('#ns-grants table[aria-label="Grants"] tr', { hasText: 'role ns_readers' }).waitFor();
  let gs = await grantsTo('role', 'ns_readers');
  assert.equal(gs.length, 1);
  assert.deepEqual([gs[0].privilege, gs[0].on.kind, gs[0].on.namespace, gs[0].all_tables], ['SELECT', 'namespace', ['crm'], true]);
  await grant(page, 'role', 'ns_readers', 'CREATE_TABLE', false);
  await page.locator('#ns-grants table[aria-label="Grants"] tr', { hasText: 'role ns_readers' }).filter({ hasText: 'CREATE_TABLE' }).waitFor();
  assert.equal((await grantsTo('role', 'ns_readers')).length, 2);
  await page.evaluate(() => { document.getElementById('status').textContent = ''; }); // the toast off the screenshot
  await shot(page, 'namespace');

  // Revoke the CREATE_TABLE grant; remove the markup tag.
  await page.locator('#ns-grants table[aria-label="Grants"] tr', { hasText: 'CREATE_TABLE' }).getByRole('button', { name: 'Revoke CREATE_TABLE from ns_readers' }).click();
  await page.waitForFunction(() => ![...document.querySelectorAll('#ns-grants table[aria-label="Grants"] tr')].some((r) => r.textContent.includes('CREATE_TABLE')));
  gs = await grantsTo('role', 'ns_readers');
  assert.deepEqual(gs.map((g) => g.privilege), ['SELECT']);
  await page.getByRole('button', { name: 'Remove tag note' }).click();
  await page.waitForFunction(() => !document.getElementById('ns-own-tags').textContent.includes('note='));
  tags = (await api('GET', '/api/v1/tags?namespace=crm')).data;
  assert.equal(tags.tags.note, undefined, 'the API has the tag removed');
  assert.deepEqual(problems, []);
});

test('warehouse page: a tag and a grant on the warehouse', async (t) => {
  const { page, problems } = await newPage(t);
  await signIn(page, ADMIN_ID, ADMIN_SECRET);
  await page.locator('#warehouse-link').click();
  await page.locator('#wh-grants #grant-editor').waitFor();
  assert.equal(await page.locator('h1').textContent(), 'Warehouse floe');
  await page.locator('#wh-tag-key').fill('env');
  await page.locator('#wh-tag-value').fill('demo');
  await page.locator('#wh-tag-editor button[type=submit]').click();
  await page.locator('#wh-own-tags .tag', { hasText: 'env=demo' }).waitFor();
  assert.equal((await api('GET', '/api/v1/tags?warehouse=floe')).data.tags.env, 'demo');
  // CREATE_SHARE is offered on the warehouse only.
  await grant(page, 'role', 'wh_admins', 'CREATE_SHARE', false);
  await page.locator('#wh-grants table[aria-label="Grants"] tr', { hasText: 'role wh_admins' }).filter({ hasText: 'CREATE_SHARE' }).waitFor();
  const gs = await grantsTo('role', 'wh_admins');
  assert.deepEqual(gs.map((g) => [g.privilege, g.on.kind, g.on.warehouse]), [['CREATE_SHARE', 'warehouse', 'floe']]);
  // The warehouse page lists grants on the warehouse only, not the
  // namespace grants of the test before.
  assert.equal(await page.locator('#wh-grants table[aria-label="Grants"] tr', { hasText: 'ns_readers' }).count(), 0);
  assert.deepEqual(problems, []);
});

test('grant editor on a view and on a data product', async (t) => {
  const { page, problems } = await newPage(t);
  await signIn(page, ADMIN_ID, ADMIN_SECRET);
  await page.goto(base + '/console/#/view/crm/pipeline');
  await page.locator('#view-grants #grant-editor').waitFor();
  await grant(page, 'role', 'view_readers', 'SELECT');
  await page.locator('#view-grants table[aria-label="Grants"] tr', { hasText: 'role view_readers' }).waitFor();
  let gs = await grantsTo('role', 'view_readers');
  assert.deepEqual(gs.map((g) => [g.privilege, g.on.kind, g.on.namespace.join('.'), g.on.name]), [['SELECT', 'view', 'crm', 'pipeline']]);

  // A data product takes DESCRIBE and SELECT only, through its endpoint.
  await page.goto(base + '/console/#/product/sales_pipeline');
  await page.locator('#product-grants #grant-editor').waitFor();
  assert.deepEqual(await page.locator('#grant-privilege option').evaluateAll((os) => os.map((o) => o.value)), ['DESCRIBE', 'SELECT']);
  assert.deepEqual(await page.locator('#grant-scope option').evaluateAll((os) => os.map((o) => o.value)), ['product'], 'no tag scope on a product');
  await grant(page, 'role', 'product_readers', 'SELECT');
  await page.locator('#product-grants table[aria-label="Grants"] tr', { hasText: 'role product_readers' }).waitFor();
  const pg = (await api('GET', '/api/v1/products/sales_pipeline/grants')).data.grants;
  assert.ok(pg.some((g) => g.grantee.name === 'product_readers' && g.privilege === 'SELECT'), JSON.stringify(pg));
  // Revoke it on the page: the product endpoint has it gone.
  await page.getByRole('button', { name: 'Revoke SELECT from product_readers' }).click();
  await page.waitForFunction(() => !document.getElementById('product-grants').textContent.includes('role product_readers'));
  gs = (await api('GET', '/api/v1/products/sales_pipeline/grants')).data.grants || [];
  assert.ok(!gs.some((g) => g.grantee.name === 'product_readers'), 'revoked in the API');
  assert.deepEqual(problems, []);
});

test('the grants of a role and of a principal', async (t) => {
  const { page, problems } = await newPage(t);
  await signIn(page, ADMIN_ID, ADMIN_SECRET);
  assert.equal((await api('POST', '/api/v1/grants', { grantee: { kind: 'role', name: 'ns_readers' }, privilege: 'DESCRIBE',
    on: { kind: 'table', namespace: ['crm'], name: 'accounts' } })).status, 201);
  await page.getByRole('link', { name: 'Principals' }).click();
  await page.getByRole('link', { name: 'Grants to role ns_readers' }).click();
  await page.locator('table[aria-label="Grants of the grantee"]').waitFor();
  const want = await grantsTo('role', 'ns_readers');
  assert.ok(want.length >= 2);
  const rows = page.locator('table[aria-label="Grants of the grantee"] tbody tr');
  assert.equal(await rows.count(), want.length, 'one row per grant of the API');
  await page.locator('table[aria-label="Grants of the grantee"] tr', { hasText: 'table crm.accounts' }).filter({ hasText: 'DESCRIBE' }).waitFor();
  await page.locator('table[aria-label="Grants of the grantee"] tr', { hasText: 'namespace crm (and everything inside)' }).filter({ hasText: 'SELECT' }).waitFor();
  await shot(page, 'grantee');
  // An administrator revokes from here.
  await page.locator('table[aria-label="Grants of the grantee"] tr', { hasText: 'table crm.accounts' }).getByRole('button', { name: 'Revoke DESCRIBE from ns_readers' }).click();
  await page.waitForFunction(() => ![...document.querySelectorAll('table[aria-label="Grants of the grantee"] tr')].some((r) => r.textContent.includes('table crm.accounts')));
  assert.equal((await grantsTo('role', 'ns_readers')).length, want.length - 1, 'revoked in the API');
  assert.deepEqual(problems, []);

  // A principal sees its own grants, with no Revoke button.
  const v = await newPage(t);
  await signIn(v.page, viewer.id, viewer.secret);
  await v.page.locator('#my-grants').click();
  await v.page.locator('table[aria-label="Grants of the grantee"]').waitFor();
  assert.equal(await v.page.locator('h1').textContent(), 'Grants to principal viewer');
  await v.page.locator('table[aria-label="Grants of the grantee"] tr', { hasText: 'namespace crm (and everything inside)' }).filter({ hasText: 'DESCRIBE' }).waitFor();
  assert.equal(await v.page.getByRole('button', { name: /^Revoke/ }).count(), 0);
  assert.deepEqual(v.problems, []);
});

test('principals: scopes and allowed networks on create, the allowlist edited', async (t) => {
  const { page, problems } = await newPage(t);
  await signIn(page, ADMIN_ID, ADMIN_SECRET);
  await page.getByRole('link', { name: 'Principals' }).click();
  await page.locator('#principal-form').waitFor();
  // A bad network is refused next to its field, and nothing is made.
  await page.locator('#principal-name').fill('dash');
  await page.locator('#principal-scopes').fill('catalog:read');
  await page.locator('#principal-cidrs').fill('10.0.0.0/99');
  await page.locator('#principal-form button[type=submit]').click();
  await page.locator('#principal-cidrs-error').filter({ hasText: /\S/ }).waitFor();
  assert.equal((await api('GET', '/api/v1/principals/dash')).status, 404, 'a refused principal is not made');
  await page.locator('#principal-cidrs').fill('127.0.0.0/8, 10.0.0.0/8');
  await page.locator('#principal-form button[type=submit]').click();
  await page.locator('#new-secret').waitFor();
  let p = (await api('GET', '/api/v1/principals/dash')).data;
  assert.deepEqual(p.scopes, ['catalog:read']);
  assert.deepEqual(p.allowed_cidrs, ['10.0.0.0/8', '127.0.0.0/8'], 'the API keeps the list in canonical order');
  await page.locator('table[aria-label="Principals"] tr', { hasText: 'dash' }).filter({ hasText: 'catalog:read' }).waitFor();
  // Edit its allowlist; an empty list allows any address.
  await page.locator('#cidrs-principal').selectOption('dash');
  assert.equal(await page.locator('#cidrs-value').inputValue(), '10.0.0.0/8, 127.0.0.0/8', 'the form starts from the current list');
  await page.locator('#cidrs-value').fill('not-a-network');
  await page.locator('#cidrs-form button[type=submit]').click();
  await page.locator('#cidrs-value-error').filter({ hasText: /\S/ }).waitFor();
  assert.deepEqual((await api('GET', '/api/v1/principals/dash')).data.allowed_cidrs, ['10.0.0.0/8', '127.0.0.0/8'], 'a refused list changes nothing');
  await page.locator('#cidrs-value').fill('192.168.0.0/16');
  await page.locator('#cidrs-form button[type=submit]').click();
  await page.locator('table[aria-label="Principals"] tr', { hasText: 'dash' }).filter({ hasText: '192.168.0.0/16' }).waitFor();
  p = (await api('GET', '/api/v1/principals/dash')).data;
  assert.deepEqual(p.allowed_cidrs, ['192.168.0.0/16']);
  await page.locator('#cidrs-value').fill('');
  await page.locator('#cidrs-form button[type=submit]').click();
  await page.locator('table[aria-label="Principals"] tr', { hasText: 'dash' }).filter({ hasText: 'any' }).waitFor();
  assert.deepEqual((await api('GET', '/api/v1/principals/dash')).data.allowed_cidrs, []);
  assert.deepEqual(problems, []);
});

test('a DESCRIBE-only principal sees no tag or grant editor on the new pages', async (t) => {
  const { page, problems } = await newPage(t);
  await signIn(page, viewer.id, viewer.secret);
  for (const [hash, box] of [['#/namespace/crm', '#ns-grants'], ['#/warehouse', '#wh-grants'], ['#/view/crm/pipeline', '#view-grants'], ['#/product/sales_pipeline', '#product-grants']]) {
    await page.goto(base + '/console/' + hash);
    // The grants section is drawn (a table, or its "no grants" line, or the API's refusal).
    await page.locator(`${box} h3, ${box} p.error`).first().waitFor();
    // ... and the tags (a product's are part of its page).
    if (!hash.startsWith('#/product')) await page.locator('[id$="-tag-box"] [id$="-tags"], [id$="-tag-box"] p.error').first().waitFor();
    assert.equal(await page.locator('#grant-editor').count(), 0, `no grant editor on ${hash}`);
    assert.equal(await page.locator('form[id$="tag-editor"]').count(), 0, `no tag editor on ${hash}`);
    assert.equal(await page.getByRole('button', { name: /^(Revoke|Remove tag)/ }).count(), 0, `no revoke or remove button on ${hash}`);
  }
  // The namespace page still shows what DESCRIBE allows, markup as text.
  await page.goto(base + '/console/#/namespace/crm');
  await page.locator('table[aria-label="Namespace properties"]').waitFor();
  assert.equal(await page.locator('table[aria-label="Namespace properties"] tr', { hasText: 'note' }).locator('td').nth(1).textContent(), XSS_PROP);
  await page.locator('#ns-tables a').first().waitFor();
  assert.deepEqual(problems, []);
});

test('warehouse switcher: a foreign catalog chosen, every page then uses it', async (t) => {
  // The server federates itself: a foreign catalog "mirror" of its own warehouse.
  const fc = await api('POST', '/api/v1/catalogs', { name: 'mirror', uri: base, warehouse: 'floe', auth: 'oauth2', client_id: ADMIN_ID, client_secret: ADMIN_SECRET });
  assert.equal(fc.status, 201, JSON.stringify(fc.data));
  const { page, problems } = await newPage(t);
  await signIn(page, ADMIN_ID, ADMIN_SECRET);
  await page.locator('#warehouse-select').waitFor();
  assert.deepEqual(await page.locator('#warehouse-select option').allTextContents(), ['floe', 'mirror'], 'the default and the foreign catalog');
  await page.locator('#warehouse-select').selectOption('mirror');
  await page.locator('h1', { hasText: 'Warehouse mirror' }).waitFor();
  await page.locator('section[aria-label="namespace crm"] h3 a').click();
  await page.locator('#ns-grants #grant-editor').waitFor();
  assert.match(await page.locator('main').textContent(), /In warehouse mirror/);
  await grant(page, 'role', 'wh_admins', 'DESCRIBE', false);
  await page.locator('#ns-grants table[aria-label="Grants"] tr', { hasText: 'role wh_admins' }).waitFor();
  const made = (await grantsTo('role', 'wh_admins')).filter((g) => g.on.kind === 'namespace');
  assert.deepEqual(made.map((g) => [g.privilege, g.on.warehouse, g.on.namespace.join('.')]), [['DESCRIBE', 'mirror', 'crm']], 'the grant is in the chosen warehouse');
  // The choice holds across a reload of the tab; switching back to the default.
  await page.goto(base + '/console/#/');
  await page.locator('h1', { hasText: 'Warehouse mirror' }).waitFor();
  await page.locator('#warehouse-select').selectOption('floe');
  await page.locator('h1', { hasText: 'Warehouse floe' }).waitFor();
  assert.deepEqual(problems, []);

  // A principal that is no administrator is offered the warehouses its grants are in.
  assert.equal((await api('POST', '/api/v1/grants', { grantee: { kind: 'principal', name: 'viewer' }, privilege: 'DESCRIBE',
    on: { kind: 'warehouse', warehouse: 'mirror' }, all_tables: true })).status, 201);
  const v = await newPage(t);
  await signIn(v.page, viewer.id, viewer.secret);
  await v.page.locator('#warehouse-select').waitFor();
  assert.deepEqual(await v.page.locator('#warehouse-select option').allTextContents(), ['floe', 'mirror']);
  await v.page.locator('#warehouse-select').selectOption('mirror');
  await v.page.locator('section[aria-label="namespace crm"]').waitFor();
  assert.equal(await v.page.locator('h1').textContent(), 'Warehouse mirror');
  assert.deepEqual(v.problems, []);
});

test('every control of the new pages has a label', async (t) => {
  const { page, problems } = await newPage(t);
  await signIn(page, ADMIN_ID, ADMIN_SECRET);
  for (const [hash, ready] of [['#/', '#warehouse-select'], ['#/namespace/crm', '#ns-tag-editor'], ['#/warehouse', '#wh-tag-editor'],
    ['#/grants/role/ns_readers', 'table[aria-label="Grants of the grantee"]'], ['#/principals', '#cidrs-form']]) {
    await page.goto(base + '/console/' + hash);
    await page.locator(ready).waitFor();
    if (hash === '#/namespace/crm' || hash === '#/warehouse') await page.locator('#grant-editor').waitFor();
    const unlabeled = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea, button')]
      .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.textContent.trim())
      .map((e) => e.outerHTML.slice(0, 80)));
    assert.deepEqual(unlabeled, [], `controls without a label on ${hash}`);
  }
  assert.deepEqual(problems, []);
});
