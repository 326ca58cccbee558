// Floe console: the view and data product pages. As everywhere in the
// console, every piece of text from the server is set as text, never as
// HTML.

import { el, api, APIError, errorBox, table, tags, show, status, state, fmtTime, nsPath, loadPrefix, listAll } from './app.js';
import { drawGrants } from './govern.js';

const typeText = (t) => (typeof t === 'string' ? t : JSON.stringify(t));

function schemaTable(schema, label) {
  const fields = (schema && schema.fields) || [];
  return table(['Column', 'Type', 'Required', 'Doc'], fields.map((f) => [f.name, el('td', {}, el('code', {}, typeText(f.type))), f.required ? 'yes' : 'no', f.doc || '']), { label });
}

// objectTags fills box with an object's own and effective tags, and for a
// principal that may manage grants on it (tags decide tag-based access)
// an editor to set a tag and remove one. target: { kind: 'warehouse' |
// 'namespace' | 'view', ns, name }; idp prefixes the editor's ids.
async function objectTags(box, target, canTag, idp) {
  const q = new URLSearchParams({ warehouse: state.warehouse });
  const on = { kind: target.kind, warehouse: state.warehouse };
  if (target.kind !== 'warehouse') { q.set('namespace', target.ns); on.namespace = target.ns.split('.'); }
  if (target.kind === 'view') { q.set('view', target.name); on.name = target.name; }
  const body = { on };
  let t;
  try { t = await api('GET', `/api/v1/tags?${q}`); } catch (e) { box.replaceChildren(errorBox(e)); return; }
  const redraw = () => objectTags(box, target, canTag, idp);
  const own = Object.entries(t.tags || {});
  const parts = [el('p', { id: `${idp}-tags` }, 'Tags: ', tags(t.effective_tags))];
  if (canTag) {
    if (own.length) {
      parts.push(el('p', { id: `${idp}-own-tags` }, `Set on the ${target.kind}: `, own.map(([k, v]) => el('span', { class: 'tag' }, `${k}=${v} `,
        el('button', { type: 'button', class: 'link', 'aria-label': `Remove tag ${k}`, onclick: async () => {
          try { await api('DELETE', '/api/v1/tags', { target: body, keys: [k] }); status(`Removed tag ${k}`); redraw(); } catch (e) { status(e.message); }
        } }, '×')))));
    }
    const key = el('input', { id: `${idp}-tag-key`, required: true });
    const value = el('input', { id: `${idp}-tag-value`, required: true });
    const err = el('span', { class: 'field-error error', id: `${idp}-tag-error`, role: 'alert' });
    const form = el('form', { class: 'inline', id: `${idp}-tag-editor`, 'aria-label': `Set a tag on the ${target.kind}` },
      el('label', { for: `${idp}-tag-key` }, 'Key', key), el('label', { for: `${idp}-tag-value` }, 'Value', value), el('button', { type: 'submit' }, 'Set tag'), err);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault(); err.textContent = '';
      try { await api('PUT', '/api/v1/tags', { target: body, tags: { [key.value.trim()]: value.value } }); status(`Tagged ${key.value.trim()}`); redraw(); }
      catch (e) { err.textContent = e instanceof APIError ? e.message : String(e); }
    });
    parts.push(form);
  }
  box.replaceChildren(...parts);
}

// privilegesOn is the caller's effective privileges on an object (an
// empty list when the API refuses to say).
async function privilegesOn(q) {
  try { return (await api('GET', `/api/v1/privileges?${q}`)).privileges || []; } catch (e) { if (e.status === 401) throw e; return []; }
}

// renderNamespace is a namespace's page: its properties (REST catalog
// loadNamespace: DESCRIBE), its namespaces, tables and views, its tags and
// its grants, with the tag and grant editors for a principal holding
// MANAGE_GRANTS on it.
export async function renderNamespace(nsName) {
  const title = `Namespace ${nsName}`;
  show(el('h1', {}, title), el('p', { class: 'muted' }, 'Loading…'));
  const ns = nsName.split('.');
  let md; let kids; let children; let privs;
  try {
    await loadPrefix();
    const q = new URLSearchParams({ warehouse: state.warehouse, namespace: nsName });
    [md, kids, children, privs] = await Promise.all([
      api('GET', `/v1/${state.prefix}/namespaces/${nsPath(ns)}`),
      listAll(ns),
      api('GET', `/v1/${state.prefix}/namespaces?parent=${nsPath(ns)}`).then((r) => r.namespaces || []).catch((e) => { if (e.status === 401) throw e; return []; }),
      privilegesOn(q),
    ]);
  } catch (e) { show(el('h1', {}, title), errorBox(e)); return; }
  const canGrant = (state.who && state.who.admin) || privs.includes('MANAGE_GRANTS');
  const props = (md && md.properties) || {};
  const tagBox = el('div', { id: 'ns-tag-box' }, el('p', { class: 'muted' }, 'Tags: …'));
  const grantBox = el('div', { id: 'ns-grants' }, el('p', { class: 'muted' }, 'Grants: …'));
  const link = (kind, name) => el('a', { href: `#/${kind}/${encodeURIComponent(nsName)}/${encodeURIComponent(name)}` }, name);
  show(el('h1', {}, title),
    el('p', { class: 'muted' }, 'In warehouse ', el('a', { href: '#/warehouse' }, state.warehouse), ` · your privileges here: ${privs.join(', ') || 'none listed'}`),
    tagBox,
    el('h2', {}, 'Properties'),
    Object.keys(props).length ? table(['Key', 'Value'], Object.entries(props).map(([k, v]) => [k, v]), { label: 'Namespace properties', class: 'properties' }) : el('p', { class: 'muted' }, 'none'),
    children.length ? el('h2', {}, 'Namespaces') : null,
    children.length ? el('ul', { id: 'ns-children' }, children.map((c) => el('li', {}, el('a', { href: `#/namespace/${encodeURIComponent(c.join('.'))}` }, c.join('.'))))) : null,
    el('h2', {}, 'Tables'),
    kids.tables.length ? el('ul', { id: 'ns-tables' }, kids.tables.map((t) => el('li', {}, link('table', t.name)))) : el('p', { class: 'muted' }, 'no tables you may see'),
    el('h2', {}, 'Views'),
    kids.views.length ? el('ul', { id: 'ns-views' }, kids.views.map((v) => el('li', {}, link('view', v.name)))) : el('p', { class: 'muted' }, 'no views you may see'),
    el('h2', {}, 'Access'), grantBox);
  objectTags(tagBox, { kind: 'namespace', ns: nsName }, canGrant, 'ns');
  drawGrants(grantBox, { kind: 'namespace', ns: nsName }, canGrant);
}

// renderWarehouse is the warehouse's page: its tags and the grants on it,
// with the tag and grant editors for a principal holding MANAGE_GRANTS on
// the warehouse.
export async function renderWarehouse() {
  await loadPrefix();
  const title = `Warehouse ${state.warehouse}`;
  const privs = await privilegesOn(new URLSearchParams({ warehouse: state.warehouse }));
  const canGrant = (state.who && state.who.admin) || privs.includes('MANAGE_GRANTS');
  const tagBox = el('div', { id: 'wh-tag-box' }, el('p', { class: 'muted' }, 'Tags: …'));
  const grantBox = el('div', { id: 'wh-grants' }, el('p', { class: 'muted' }, 'Grants: …'));
  show(el('h1', {}, title), el('p', { class: 'muted' }, el('a', { href: '#/' }, 'Its namespaces'), ` · your privileges here: ${privs.join(', ') || 'none listed'}`),
    tagBox, el('h2', {}, 'Access'), grantBox);
  objectTags(tagBox, { kind: 'warehouse' }, canGrant, 'wh');
  drawGrants(grantBox, { kind: 'warehouse' }, canGrant);
}

// warehousePicker is the warehouse switcher of the catalog page: the
// server's default warehouse and the others the management API names to
// the caller (an administrator: every foreign catalog, GET
// /api/v1/catalogs; anyone else: the warehouses its own and its roles'
// grants are in, GET /api/v1/grants). The choice holds for this browser
// tab; every page then uses it.
export async function warehousePicker() {
  const names = new Set([state.home || state.warehouse, state.warehouse]);
  try {
    if (state.who && state.who.admin) {
      for (const c of (await api('GET', '/api/v1/catalogs')).catalogs || []) names.add(c.name);
    } else {
      for (const g of (await api('GET', '/api/v1/grants')).grants || []) if (g.on && g.on.warehouse) names.add(g.on.warehouse);
    }
  } catch (e) { if (e.status === 401) throw e; }
  names.delete('');
  const sel = el('select', { id: 'warehouse-select' },
    [...names].sort().map((n) => el('option', { value: n, selected: n === state.warehouse }, n)));
  sel.addEventListener('change', () => {
    if (sel.value === state.home) sessionStorage.removeItem('floe.warehouse');
    else sessionStorage.setItem('floe.warehouse', sel.value);
    status(`Warehouse ${sel.value}`);
    if (location.hash === '#/' || location.hash === '') window.dispatchEvent(new HashChangeEvent('hashchange'));
    else location.hash = '#/';
  });
  return el('p', { id: 'warehouse-switcher' }, el('label', { for: 'warehouse-select' }, 'Warehouse: '), sel);
}

// renderView is a view's page: its SQL per dialect, schema, security mode
// (definer or invoker rights) and version history, from the REST catalog's
// loadView (DESCRIBE on the view).
export async function renderView(nsName, name) {
  show(el('h1', {}, `View ${nsName}.${name}`), el('p', { class: 'muted' }, 'Loading…'));
  let md; let privs;
  try {
    await loadPrefix();
    const q = `warehouse=${encodeURIComponent(state.warehouse)}&namespace=${encodeURIComponent(nsName)}&view=${encodeURIComponent(name)}`;
    const [v, pv] = await Promise.all([
      api('GET', `/v1/${state.prefix}/namespaces/${nsPath(nsName.split('.'))}/views/${encodeURIComponent(name)}`),
      api('GET', `/api/v1/privileges?${q}`).catch((e) => { if (e.status === 401) throw e; return { privileges: [] }; }),
    ]);
    md = v.metadata; privs = pv.privileges || [];
  } catch (e) { show(el('h1', {}, `View ${nsName}.${name}`), errorBox(e)); return; }
  const canTag = (state.who && state.who.admin) || privs.includes('MANAGE_GRANTS');
  const tagBox = el('div', { id: 'view-tag-box' }, el('p', { class: 'muted' }, 'Tags: …'));
  const grantBox = el('div', { id: 'view-grants' }, el('p', { class: 'muted' }, 'Grants: …'));
  const versions = (md.versions || []).slice().sort((a, b) => b['timestamp-ms'] - a['timestamp-ms']);
  const cur = versions.find((v) => v['version-id'] === md['current-version-id']) || versions[0] || {};
  const schema = (md.schemas || []).find((s) => s['schema-id'] === cur['schema-id']);
  const props = md.properties || {};
  const definer = props['floe.security'] === 'definer';
  const who = (cur.summary || {})['floe.definer'];
  const reps = (cur.representations || []).filter((r) => r.type === 'sql');
  show(
    el('h1', {}, `View ${nsName}.${name}`),
    el('p', { class: 'muted' }, `Location ${md.location || ''} · format v${md['format-version']} · ${versions.length} version(s) · current version ${cur['version-id']}`),
    tagBox,
    el('p', { id: 'view-security' }, 'Security: ', el('strong', {}, definer ? 'definer rights' : 'invoker rights'),
      definer ? ` — readers need SELECT on the view only; its tables are read with the grants of ${who || '(no recorded definer: reads are refused)'}`
        : ' — readers need SELECT on the view and on every table it reads'),
    el('h2', {}, 'SQL'),
    reps.length ? el('div', { id: 'view-sql' }, reps.map((r) => el('section', { class: 'dialect' }, el('h3', {}, `Dialect ${r.dialect}`), el('pre', {}, r.sql))))
      : el('p', { class: 'muted' }, 'no SQL representation'),
    el('h2', {}, 'Schema'), schemaTable(schema, 'View schema'),
    el('h2', {}, 'Version history'),
    table(['Version', 'Time', 'Operation', 'Dialects', 'Definer', 'Schema id', 'Default namespace'], versions.map((v) => [
      `${v['version-id']}${v['version-id'] === md['current-version-id'] ? ' (current)' : ''}`, fmtTime(v['timestamp-ms']),
      (v.summary || {}).operation || '', (v.representations || []).map((r) => r.dialect).join(', '),
      (v.summary || {})['floe.definer'] || '', String(v['schema-id']), (v['default-namespace'] || []).join('.')]), { label: 'View versions', class: 'versions' }),
    el('h2', {}, 'Properties'),
    Object.keys(props).length ? table(['Key', 'Value'], Object.entries(props).map(([k, v]) => [k, v])) : el('p', { class: 'muted' }, 'none'),
    el('h2', {}, 'Access'), grantBox);
  objectTags(tagBox, { kind: 'view', ns: nsName, name }, canTag, 'view');
  drawGrants(grantBox, { kind: 'view', ns: nsName, name }, canTag);
}

function expectationText(x) {
  const parts = [x.kind];
  if (x.port) parts.push(`on ${x.port}`);
  if (x.column) parts.push(`column ${x.column}`);
  if (x.max_age) parts.push(`max age ${x.max_age}`);
  if (x.min !== undefined) parts.push(`min ${x.min}`);
  if (x.max !== undefined) parts.push(`max ${x.max}`);
  if (x.values) parts.push(`values ${x.values.join(', ')}`);
  if (x.sql) parts.push(x.sql);
  return parts.join(' · ');
}

// renderProduct is a data product's page: its outputs, metrics,
// expectations with the results of the latest check, and versions.
export async function renderProduct(name) {
  show(el('h1', {}, `Data product ${name}`), el('p', { class: 'muted' }, 'Loading…'));
  const n = encodeURIComponent(name);
  let p; let versions; let checks;
  try {
    [p, versions, checks] = await Promise.all([
      api('GET', `/api/v1/products/${n}`),
      api('GET', `/api/v1/products/${n}/versions`).catch((e) => ({ error: e })),
      api('GET', `/api/v1/products/${n}/checks`).catch((e) => ({ error: e })),
    ]);
  } catch (e) { show(el('h1', {}, `Data product ${name}`), errorBox(e)); return; }
  const last = checks && !checks.error && (checks.runs || [])[0];
  const result = {};
  for (const r of (last && last.results) || []) result[r.expectation] = r;
  const outputs = p.outputs || [];
  const grantBox = el('div', { id: 'product-grants' }, el('p', { class: 'muted' }, 'Grants: …'));
  show(
    el('h1', {}, `Data product ${p.name}`),
    el('p', { class: 'muted' }, `Domain ${p.domain || '—'} · owner ${p.owner || '—'} · version ${p.version} · updated ${p.updated_at ? fmtTime(Date.parse(p.updated_at)) : ''}${p.updated_by ? ` by ${p.updated_by}` : ''}`),
    p.description ? el('p', { id: 'product-description' }, p.description) : null,
    el('p', {}, 'Tags: ', tags(p.tags)),
    (p.terms || []).length ? el('p', {}, 'Terms: ', p.terms.join('; ')) : null,
    el('h2', {}, 'Outputs'),
    table(['Port', 'Kind', 'Object', 'Description'], outputs.map((o) => {
      const ns = (o.namespace || []).join('.');
      const href = o.kind === 'view' ? `#/view/${encodeURIComponent(ns)}/${encodeURIComponent(o.table)}` : `#/table/${encodeURIComponent(ns)}/${encodeURIComponent(o.table)}`;
      return [o.name || o.table, o.kind || 'table', el('td', {}, el('a', { href }, `${ns}.${o.table}`)), o.description || ''];
    }), { label: 'Outputs', class: 'outputs' }),
    el('h2', {}, 'Metrics'),
    (p.metrics || []).length ? table(['Metric', 'Port', 'Expression', 'Filter', 'Time column', 'Grains', 'Dimensions'], p.metrics.map((m) => [m.name, m.port,
      el('td', {}, el('code', {}, m.expr)), m.filter || '', m.time_column || '', (m.grains || []).join(', '), (m.dimensions || []).join(', ')]), { label: 'Metrics' })
      : el('p', { class: 'muted' }, 'none'),
    el('h2', {}, 'Expectations'),
    el('p', { id: 'last-check' }, last ? `Last check ${fmtTime(Date.parse(last.at))} (${last.trigger}, version ${last.version}): ` : (checks && checks.error ? `Checks: ${checks.error.message}` : 'Not checked yet.'),
      last ? el('span', { class: `badge ${last.status === 'pass' ? 'ok' : 'bad'}` }, last.status) : null,
      p.check_every ? ` · checked every ${p.check_every}` : ''),
    (p.expectations || []).length ? table(['Expectation', 'What', 'Last result', 'Observed', 'Detail'], p.expectations.map((x) => {
      const r = result[x.name];
      return [x.name || x.kind, expectationText(x), r ? el('td', { class: r.status === 'pass' ? 'ok' : 'error' }, r.status) : el('td', { class: 'muted' }, '—'), r ? (r.observed || '') : '', r ? (r.detail || '') : ''];
    }), { label: 'Expectations', class: 'expectations' }) : el('p', { class: 'muted' }, 'none'),
    el('h2', {}, 'Versions'),
    versions && !versions.error ? table(['Version', 'Updated', 'By', 'Outputs'], (versions.products || []).map((v) => [String(v.version), v.updated_at ? fmtTime(Date.parse(v.updated_at)) : '', v.updated_by || '',
      (v.outputs || []).map((o) => `${(o.namespace || []).join('.')}.${o.table}`).join(', ')]), { label: 'Product versions', class: 'versions' })
      : el('p', { class: 'muted' }, versions && versions.error ? versions.error.message : 'none'),
    el('h2', {}, 'Access'), grantBox);
  // Granting on a product needs MANAGE_GRANTS on every output.
  let canGrant = !!(state.who && state.who.admin);
  if (!canGrant && outputs.length) {
    const each = await Promise.all(outputs.map((o) => privilegesOn(new URLSearchParams({ warehouse: state.warehouse, namespace: (o.namespace || []).join('.'), [o.kind === 'view' ? 'view' : 'table']: o.table }))));
    canGrant = each.every((ps) => ps.includes('MANAGE_GRANTS'));
  }
  drawGrants(grantBox, { kind: 'product', name: p.name }, canGrant);
}
