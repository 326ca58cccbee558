// Floe console: a build-free single-page app. Every piece of text from the
// server is set with textContent or attributes (never innerHTML), and the
// Content-Security-Policy forbids inline script, so names and tags holding
// markup stay text.

import { drawAccess, renderPrincipals, renderShare, renderRecipient, profileOnce, renderGrantee } from './govern.js';
import { renderView, renderProduct, renderNamespace, renderWarehouse, warehousePicker } from './browse.js';

const API = '/console/api';
const state = { csrf: '', who: null, prefix: 'floe', warehouse: 'floe', home: '' };

// el builds an element: el('a', {href: '#/'}, 'text', child...).
function el(tag, attrs, ...kids) {
  const svg = ['svg', 'rect', 'line', 'text', 'g', 'title', 'path'].includes(tag);
  const n = svg ? document.createElementNS('http://www.w3.org/2000/svg', tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) n.addEventListener(k.slice(2), v);
    else if (k === 'text') n.textContent = v;
    else n.setAttribute(k, v === true ? '' : String(v));
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined || k === false) continue;
    n.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return n;
}

const main = () => document.getElementById('main');
function show(...nodes) {
  const m = main();
  // replaceChildren would show a null as the text "null".
  m.replaceChildren(...nodes.filter((n) => n !== null && n !== undefined && n !== false));
}
function status(msg) {
  const s = document.getElementById('status');
  s.textContent = msg || '';
  if (msg) setTimeout(() => { if (s.textContent === msg) s.textContent = ''; }, 6000);
}

// parseJSON keeps integers beyond 2^53 (Iceberg snapshot ids are int64) as
// their digits, where the browser gives the reviver the source text.
function parseJSON(text) {
  return JSON.parse(text, (k, v, ctx) => (typeof v === 'number' && !Number.isSafeInteger(v) && Number.isInteger(v) && ctx && ctx.source) ? ctx.source : v);
}

class APIError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// api calls the console backend; paths under /api/v1/ and /v1/ go through
// the proxy with the session's token.
async function api(method, path, body, opts = {}) {
  const url = path.startsWith('/console/') ? path : API + '/proxy' + path;
  const headers = {};
  if (method !== 'GET' && method !== 'HEAD') headers['X-CSRF-Token'] = state.csrf;
  let payload;
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const r = await fetch(url, { method, headers, body: payload, credentials: 'same-origin' });
  if (r.status === 401 && !opts.quiet401) {
    state.who = null;
    renderSignIn('Your session ended; sign in again.');
    throw new APIError(401, 'not signed in');
  }
  if (opts.raw) return r;
  const text = await r.text();
  let data = null;
  if (text) { try { data = parseJSON(text); } catch { data = text; } }
  if (!r.ok) {
    const msg = (data && data.error && data.error.message) || (typeof data === 'string' ? data : r.statusText);
    throw new APIError(r.status, msg);
  }
  return data;
}

function errorBox(e) {
  return el('p', { class: 'error', role: 'alert' }, e instanceof APIError ? `${e.status}: ${e.message}` : String(e));
}

// ---- sign-in ----

function renderSignIn(msg) {
  document.getElementById('top').hidden = true;
  const err = el('p', { class: 'error', role: 'alert', id: 'signin-error' }, msg || '');
  const id = el('input', { id: 'client-id', name: 'client_id', autocomplete: 'username', required: true });
  const secret = el('input', { id: 'client-secret', name: 'client_secret', type: 'password', autocomplete: 'current-password', required: true });
  // Two methods: a client id and secret, or a user name and SQL password.
  const bySecret = el('input', { type: 'radio', id: 'method-secret', name: 'method', value: 'secret', checked: true });
  const byPassword = el('input', { type: 'radio', id: 'method-password', name: 'method', value: 'password' });
  const idLabel = el('label', { for: 'client-id' }, 'Client id');
  const secretLabel = el('label', { for: 'client-secret' }, 'Client secret');
  const relabel = () => {
    const pw = byPassword.checked;
    idLabel.textContent = pw ? 'User' : 'Client id';
    secretLabel.textContent = pw ? 'SQL password' : 'Client secret';
  };
  bySecret.addEventListener('change', relabel);
  byPassword.addEventListener('change', relabel);
  const form = el('form', { class: 'signin', 'aria-labelledby': 'signin-title' },
    el('h1', { id: 'signin-title' }, 'Sign in to Floe'),
    el('fieldset', { class: 'method' }, el('legend', {}, 'Sign in with'),
      bySecret, el('label', { for: 'method-secret' }, 'Client credentials'),
      byPassword, el('label', { for: 'method-password' }, 'SQL login')),
    idLabel, id, secretLabel, secret,
    el('button', { type: 'submit' }, 'Sign in'), err);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    const body = byPassword.checked ? { user: id.value, password: secret.value } : { client_id: id.value, client_secret: secret.value };
    try {
      const s = await api('POST', API + '/login', body, { quiet401: true });
      secret.value = '';
      signedIn(s);
      route();
    } catch (e) {
      err.textContent = e.message;
    }
  });
  show(form);
  id.focus();
}

function signedIn(s) {
  state.csrf = s.csrf_token;
  state.who = s.whoami || { principal: s.principal };
  document.getElementById('top').hidden = false;
  document.getElementById('who').textContent = `${state.who.principal}${state.who.admin ? ' (admin)' : ''}`;
}

async function logout() {
  try { await api('POST', API + '/logout', undefined, { quiet401: true }); } catch (e) { /* ended anyway */ }
  state.who = null; state.csrf = '';
  location.hash = '#/';
  renderSignIn('Signed out.');
}

// ---- helpers ----

const nsPath = (ns) => ns.map(encodeURIComponent).join('%1F');
const fmtBytes = (n) => {
  if (n === undefined || n === null) return '';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0; let v = Number(n);
  while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return `${v.toFixed(i ? 1 : 0)} ${u[i]}`;
};
const fmtTime = (ms) => new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
const quoteIdent = (s) => '"' + String(s).replace(/"/g, '""') + '"';

function table(headers, rows, opts = {}) {
  return el('table', { class: opts.class, 'aria-label': opts.label },
    el('thead', {}, el('tr', {}, headers.map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, rows.map((r) => el('tr', {}, r.map((c) => (c instanceof Node && c.tagName === 'TD') ? c : el('td', {}, c))))));
}

function tags(obj) {
  const entries = Object.entries(obj || {});
  if (!entries.length) return el('span', { class: 'muted' }, '—');
  return el('span', {}, entries.map(([k, v]) => el('span', { class: 'tag' }, `${k}=${v}`)));
}

// ---- catalog ----

// loadPrefix asks the REST catalog for the warehouse chosen in this tab
// (the switcher on the catalog page), or the server's default one.
async function loadPrefix() {
  const chosen = sessionStorage.getItem('floe.warehouse') || '';
  try {
    const cfg = await api('GET', '/v1/config' + (chosen ? `?warehouse=${encodeURIComponent(chosen)}` : ''));
    const o = (cfg && cfg.overrides) || {};
    const d = (cfg && cfg.defaults) || {};
    state.prefix = o.prefix || d.prefix || state.prefix;
    state.warehouse = o.warehouse || d.warehouse || state.prefix;
    if (!chosen) state.home = state.warehouse;
  } catch (e) {
    if (e.status === 401) throw e;
    // A warehouse that is gone (or not visible): back to the default.
    if (chosen) { sessionStorage.removeItem('floe.warehouse'); await loadPrefix(); }
  }
}

async function listAll(ns) {
  const p = nsPath(ns);
  const [t, v] = await Promise.all([
    api('GET', `/v1/${state.prefix}/namespaces/${p}/tables`).catch(() => ({ identifiers: [] })),
    api('GET', `/v1/${state.prefix}/namespaces/${p}/views`).catch(() => ({ identifiers: [] })),
  ]);
  return { tables: (t && t.identifiers) || [], views: (v && v.identifiers) || [] };
}

async function renderCatalog() {
  const search = el('input', { id: 'search', type: 'search', placeholder: 'Filter tables, views, namespaces, products, shares…', 'aria-label': 'Search the catalog' });
  const results = el('div', { class: 'cards', id: 'catalog' }, el('p', { class: 'muted' }, 'Loading…'));
  const extra = el('div', {});
  const title = el('h1', {}, 'Warehouse ', el('a', { href: '#/warehouse', id: 'warehouse-link' }, state.warehouse));
  show(title,
    el('p', {}, el('a', { href: `#/grants/principal/${encodeURIComponent(state.who.principal)}`, id: 'my-grants' }, 'Your grants')),
    el('p', {}, el('label', { for: 'search' }, 'Search '), search), results, extra);
  let groups = [];
  try {
    await loadPrefix();
    title.replaceChildren('Warehouse ', el('a', { href: '#/warehouse', id: 'warehouse-link' }, state.warehouse));
    title.after(await warehousePicker());
    const ns = await api('GET', `/v1/${state.prefix}/namespaces`);
    const namespaces = (ns && ns.namespaces) || [];
    groups = await Promise.all(namespaces.map(async (n) => ({ ns: n, ...(await listAll(n)) })));
  } catch (e) { results.replaceChildren(errorBox(e)); return; }
  const draw = () => {
    const q = search.value.trim().toLowerCase();
    const cards = [];
    for (const g of groups) {
      const nsName = g.ns.join('.');
      const match = (name) => !q || `${nsName}.${name}`.toLowerCase().includes(q);
      const ts = g.tables.filter((t) => match(t.name));
      const vs = g.views.filter((v) => match(v.name));
      if (q && !ts.length && !vs.length && !nsName.toLowerCase().includes(q)) continue;
      cards.push(el('section', { class: 'card', 'aria-label': `namespace ${nsName}` },
        el('h3', {}, el('a', { href: `#/namespace/${encodeURIComponent(nsName)}` }, nsName)),
        ts.length ? el('ul', { 'aria-label': 'tables' }, ts.map((t) => el('li', {}, el('a', { href: `#/table/${encodeURIComponent(nsName)}/${encodeURIComponent(t.name)}` }, t.name)))) : null,
        vs.length ? el('ul', { 'aria-label': 'views' }, vs.map((v) => el('li', {}, 'view ', el('a', { href: `#/view/${encodeURIComponent(nsName)}/${encodeURIComponent(v.name)}` }, v.name)))) : null,
        !ts.length && !vs.length ? el('p', { class: 'muted' }, 'no tables or views you may see') : null));
    }
    results.replaceChildren(...(cards.length ? cards : [el('p', { class: 'muted' }, 'Nothing matches.')]));
  };
  // Data products and shares, when the principal may see them; the
  // search filters them too.
  let pl = null; let sl = null;
  const drawExtra = () => {
    if (pl === null) return;
    const q = search.value.trim().toLowerCase();
    const ps = pl.filter((p) => !q || `${p.name} ${p.description || ''}`.toLowerCase().includes(q));
    const ss = sl.filter((x) => !q || x.name.toLowerCase().includes(q));
    extra.replaceChildren(
      el('h2', {}, 'Data products'),
      ps.length ? el('ul', { id: 'product-list' }, ps.map((p) => el('li', {}, el('a', { href: `#/product/${encodeURIComponent(p.name)}` }, p.name), p.description ? ` — ${p.description}` : '')))
        : el('p', { class: 'muted' }, q && pl.length ? 'none matches' : 'none visible'),
      el('h2', {}, 'Shares'),
      ss.length ? el('ul', { id: 'share-links' }, ss.map((x) => el('li', {}, el('a', { href: `#/share/${encodeURIComponent(x.name)}` }, x.name))))
        : el('p', { class: 'muted' }, q && sl.length ? 'none matches' : 'none visible'));
  };
  search.addEventListener('input', () => { draw(); drawExtra(); });
  draw();
  const [prods, shares] = await Promise.all([
    api('GET', '/api/v1/products').catch(() => null),
    api('GET', '/api/v1/shares').catch(() => null),
  ]);
  const list = (v, k) => { const a = (v && (v[k] || v)) || []; return Array.isArray(a) ? a : []; };
  pl = list(prods, 'products'); sl = list(shares, 'shares');
  drawExtra();
}

// ---- table page ----

function timelineChart(snaps) {
  // snaps: [{t, added, deleted, op}], oldest first.
  const W = 860; const H = 220; const L = 60; const R = 10; const T = 10; const B = 30;
  const svg = el('svg', { class: 'chart', id: 'timeline', width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': `Snapshot timeline: ${snaps.length} snapshots` });
  if (!snaps.length) { svg.append(el('text', { x: 20, y: 30 }, 'no snapshots')); return svg; }
  const t0 = snaps[0].t; const t1 = snaps[snaps.length - 1].t;
  const span = Math.max(1, t1 - t0);
  const max = Math.max(1, ...snaps.map((s) => Math.max(s.added, s.deleted)));
  const mid = T + (H - T - B) / 2;
  const half = (H - T - B) / 2;
  const x = (t) => L + ((t - t0) / span) * (W - L - R);
  svg.append(el('line', { x1: L, x2: W - R, y1: mid, y2: mid, stroke: '#adb5bd' }));
  svg.append(el('text', { x: 4, y: T + 10 }, `+${max.toLocaleString()}`));
  svg.append(el('text', { x: 4, y: H - B }, `-${max.toLocaleString()}`));
  svg.append(el('text', { x: L, y: H - 8 }, fmtTime(t0)));
  svg.append(el('text', { x: W - R - 150, y: H - 8 }, fmtTime(t1)));
  const bw = Math.max(1, Math.min(8, (W - L - R) / snaps.length - 1));
  for (const s of snaps) {
    const g = el('g', { class: 'snap', 'data-op': s.op });
    g.append(el('title', {}, `${fmtTime(s.t)} ${s.op}: +${s.added} / -${s.deleted} rows, +${s.addedFiles} / -${s.deletedFiles} files (${s.n > 1 ? `${s.n} snapshots up to ` : 'snapshot '}${s.id})`));
    const xa = x(s.t) - bw / 2;
    if (s.added > 0) g.append(el('rect', { x: xa, y: mid - (s.added / max) * half, width: bw, height: Math.max(1, (s.added / max) * half), fill: '#2f9e44' }));
    if (s.deleted > 0) g.append(el('rect', { x: xa, y: mid, width: bw, height: Math.max(1, (s.deleted / max) * half), fill: '#e03131' }));
    if (!s.added && !s.deleted) g.append(el('rect', { x: xa, y: mid - 3, width: bw, height: 6, fill: '#868e96' }));
    svg.append(g);
  }
  return svg;
}

function histogramChart(buckets) {
  const W = 520; const H = 200; const L = 50; const B = 40; const T = 10;
  const svg = el('svg', { class: 'chart', id: 'histogram', width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'Data file sizes' });
  if (!buckets || !buckets.length) { svg.append(el('text', { x: 20, y: 30 }, 'no data files')); return svg; }
  const max = Math.max(1, ...buckets.map((b) => b.files || b.count || 0));
  const bw = (W - L - 10) / buckets.length;
  buckets.forEach((b, i) => {
    const n = b.files || b.count || 0;
    const h = (n / max) * (H - T - B);
    const label = b.max_bytes ? `< ${fmtBytes(b.max_bytes)}` : `≥ ${fmtBytes(b.min_bytes)}`;
    const g = el('g', { class: 'bucket' }, el('title', {}, `${label}: ${n} files`));
    g.append(el('rect', { x: L + i * bw + 4, y: H - B - h, width: bw - 8, height: Math.max(n ? 1 : 0, h), fill: i === 0 ? '#f08c00' : '#1f6feb' }));
    g.append(el('text', { x: L + i * bw + 4, y: H - B + 14 }, label));
    g.append(el('text', { x: L + i * bw + 4, y: H - B - h - 3 }, String(n)));
    svg.append(g);
  });
  svg.append(el('text', { x: 4, y: T + 10 }, `${max} files`));
  return svg;
}

// nextRuns says when the background scheduler next runs each job on the
// table (the summary's next_runs).
function nextRuns(runs) {
  if (!runs || !runs.length) return el('p', { class: 'muted', id: 'next-run' }, 'Next run: none scheduled (no background maintenance on this server, or every job is off for this table).');
  return el('div', { id: 'next-run' }, el('p', {}, 'Next run: ', el('strong', {}, `${fmtTime(Date.parse(runs[0].at))}`), ` (${runs[0].job})`),
    table(['Job', 'Next run', 'Every'], runs.map((r) => [r.job, fmtTime(Date.parse(r.at)), r.every]), { label: 'Next maintenance runs' }));
}

// snapshotsOf turns the timeline endpoint's points into chart points.
function snapshotsOf(tl) {
  return (tl.points || []).map((p) => ({ id: p.snapshot_id, t: Date.parse(p.time), op: p.operation, n: p.snapshots,
    added: p.added_records, deleted: p.deleted_records, addedFiles: p.added_files, deletedFiles: p.deleted_files }));
}

async function renderTable(nsName, name) {
  const ns = nsName.split('.');
  const q = `warehouse=${encodeURIComponent(state.warehouse)}&namespace=${encodeURIComponent(nsName)}&table=${encodeURIComponent(name)}`;
  show(el('h1', {}, `Table ${nsName}.${name}`), el('p', { class: 'muted' }, 'Loading…'));
  let md; let privs; let tl; let summaryReq;
  const tpath = `${encodeURIComponent(state.warehouse)}/${encodeURIComponent(nsName)}/${encodeURIComponent(name)}`;
  try {
    await loadPrefix();
    // The metadata without the snapshot list; the timeline summarises it server-side.
    const pvReq = api('GET', `/api/v1/privileges?${q}`).catch(() => ({ privileges: [] }));
    // The file statistics start as soon as the privileges say they may be
    // read, not after the page's first drawing.
    summaryReq = pvReq.then((p) => ((state.who && state.who.admin) || (p.privileges || []).includes('SELECT')
      ? api('GET', `/api/v1/tables/${tpath}/summary`) : null));
    summaryReq.catch(() => {}); // handled where it is used
    const [lt, pv, t] = await Promise.all([
      api('GET', `/v1/${state.prefix}/namespaces/${nsPath(ns)}/tables/${encodeURIComponent(name)}?snapshots=refs`),
      pvReq,
      api('GET', `/api/v1/tables/${tpath}/timeline`),
    ]);
    md = lt.metadata; privs = new Set(pv.privileges || []); tl = t;
  } catch (e) { show(el('h1', {}, `Table ${nsName}.${name}`), errorBox(e)); return; }
  const admin = state.who && state.who.admin;
  const canSelect = admin || privs.has('SELECT');
  const canGrant = admin || privs.has('MANAGE_GRANTS');
  const schema = (md.schemas || []).find((s) => s['schema-id'] === md['current-schema-id']) || { fields: [] };
  const cols = el('tbody', {});
  const schemaTable = el('table', { id: 'schema', 'aria-label': 'Schema' },
    el('thead', {}, el('tr', {}, ['Column', 'Type', 'Required', 'Doc', 'Tags'].map((h) => el('th', { scope: 'col' }, h)))), cols);
  const colTagCells = {};
  for (const f of schema.fields) {
    const tc = el('td', { class: 'coltags' }, el('span', { class: 'muted' }, '…'));
    colTagCells[f.name] = tc;
    cols.append(el('tr', {}, el('td', {}, f.name), el('td', {}, el('code', {}, typeof f.type === 'string' ? f.type : JSON.stringify(f.type))),
      el('td', {}, f.required ? 'yes' : 'no'), el('td', {}, f.doc || ''), tc));
  }
  const specs = md['partition-specs'] || [];
  const props = Object.entries(md.properties || {});
  const snaps = snapshotsOf(tl);
  const tableTags = el('p', { id: 'table-tags' }, 'Tags: ', el('span', { class: 'muted' }, '…'));
  const sizes = el('div', { id: 'sizes' }, canSelect ? el('p', { class: 'muted' }, 'Loading…') : el('p', { class: 'muted' }, 'File statistics need SELECT on the table.'));
  const access = el('div', { id: 'access' }, el('p', { class: 'muted' }, 'Loading…'));
  const preview = el('div', { id: 'preview' });
  const recent = snaps.slice(-20).reverse();
  show(
    el('h1', {}, `Table ${nsName}.${name}`),
    el('p', { class: 'muted' }, `Location ${md.location} · format v${md['format-version']} · ${tl.snapshot_count.toLocaleString()} snapshots · your privileges: ${[...privs].join(', ') || (admin ? 'admin' : 'none')}`),
    tableTags,
    el('h2', {}, 'Schema'), schemaTable,
    el('h2', {}, 'Partition spec history'),
    table(['Spec id', 'Fields', 'Default'], specs.map((s) => [String(s['spec-id']), (s.fields || []).map((f) => `${f.transform}(${f['source-id']}) → ${f.name}`).join(', ') || 'unpartitioned', s['spec-id'] === md['default-spec-id'] ? 'yes' : ''])),
    el('h2', {}, 'Snapshot timeline'),
    el('p', { class: 'legend' }, el('span', {}, el('span', { class: 'sw add' }), 'rows added'), el('span', {}, el('span', { class: 'sw del' }), 'rows removed'), el('span', {}, el('span', { class: 'sw other' }), 'no row change')),
    timelineChart(snaps),
    snaps.some((s) => s.n > 1) ? el('p', { class: 'muted' }, `${tl.snapshot_count.toLocaleString()} snapshots in ${snaps.length} points; each point sums consecutive snapshots.`) : null,
    table(['Time', 'Operation', 'Rows +', 'Rows −', 'Files +', 'Files −', snaps.some((s) => s.n > 1) ? 'Last snapshot (of n)' : 'Snapshot', canSelect ? 'Time travel' : ''], recent.map((s) => [fmtTime(s.t), s.op,
      el('td', { class: 'num' }, s.added.toLocaleString()), el('td', { class: 'num' }, s.deleted.toLocaleString()),
      el('td', { class: 'num' }, String(s.addedFiles)), el('td', { class: 'num' }, String(s.deletedFiles)), s.n > 1 ? `${s.id} (${s.n})` : String(s.id),
      canSelect ? el('td', {}, el('a', { href: '#/query', class: 'time-travel', 'aria-label': `Query the table as of snapshot ${s.id}`,
        onclick: () => sessionStorage.setItem('floe.sql', `SELECT * FROM ${quoteIdent(nsName)}.${quoteIdent(name)} AT (VERSION => ${s.id}) LIMIT 100`) }, 'Query')) : '']), { label: 'Latest snapshots' }),
    el('h2', {}, 'Data files'), sizes,
    el('h2', {}, 'Properties'),
    props.length ? table(['Key', 'Value'], props.map(([k, v]) => [k, v])) : el('p', { class: 'muted' }, 'none'),
    el('h2', {}, 'Who has access'), access,
    canSelect ? el('h2', {}, 'Data preview') : null, preview);

  // Tags of the table and its columns.
  const loadTags = () => {
    api('GET', `/api/v1/tags?${q}`).then((t) => tableTags.replaceChildren('Tags: ', tags(t.effective_tags))).catch((e) => tableTags.replaceChildren(errorBox(e)));
    for (const f of schema.fields) {
      api('GET', `/api/v1/tags?${q}&column=${encodeURIComponent(f.name)}`)
        .then((t) => colTagCells[f.name].replaceChildren(tags(t.tags)))
        .catch(() => colTagCells[f.name].replaceChildren(el('span', { class: 'muted' }, '—')));
    }
  };
  loadTags();
  if (canGrant) {
    // Tags on the table or one of its columns (MANAGE_GRANTS).
    const col = el('select', { id: 'tag-column' }, el('option', { value: '' }, '(the table)'), schema.fields.map((f) => el('option', { value: f.name }, f.name)));
    const key = el('input', { id: 'tag-key', required: true });
    const value = el('input', { id: 'tag-value', required: true });
    const msg = el('span', { role: 'alert' });
    const form = el('form', { class: 'inline', id: 'tag-editor', 'aria-label': 'Set a tag' },
      el('label', { for: 'tag-column' }, 'On', col), el('label', { for: 'tag-key' }, 'Key', key), el('label', { for: 'tag-value' }, 'Value', value),
      el('button', { type: 'submit' }, 'Set tag'), msg);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault(); msg.textContent = '';
      const target = { on: { kind: 'table', warehouse: state.warehouse, namespace: ns, name } };
      if (col.value) target.column = col.value;
      try {
        await api('PUT', '/api/v1/tags', { target, tags: { [key.value]: value.value } });
        status(`Tagged ${col.value || 'the table'} ${key.value}=${value.value}`);
        key.value = ''; value.value = '';
        loadTags();
      } catch (e) { msg.textContent = e.message; msg.className = 'error'; }
    });
    schemaTable.after(form);
  }
  if (canSelect) {
    summaryReq.then((s) => (s || api('GET', `/api/v1/tables/${tpath}/summary`))).then((s) => {
      sizes.replaceChildren(
        el('p', {}, `${(s.data_files || 0).toLocaleString()} data files, ${(s.delete_files || 0).toLocaleString()} delete files, ${(s.records || 0).toLocaleString()} rows, ${fmtBytes(s.bytes)} in the current snapshot.`),
        histogramChart(s.size_histogram),
        el('h2', {}, 'Maintenance'),
        nextRuns(s.next_runs),
        (s.maintenance_runs || []).length ? table(['Job', 'Outcome', 'Started', 'Finished', 'Detail'], s.maintenance_runs.map((r) => [r.job, r.outcome, r.started || '', r.finished || '', r.detail || ''])) : el('p', { class: 'muted' }, 'no maintenance runs yet'));
    }).catch((e) => sizes.replaceChildren(errorBox(e)));
    runQuery(`SELECT * FROM ${quoteIdent(nsName)}.${quoteIdent(name)} LIMIT 20`, 20).then(({ cols: c, rows }) => {
      preview.replaceChildren(grid(c, rows));
    }).catch((e) => preview.replaceChildren(errorBox(e)));
  }
  drawAccess(access, nsName, name, canGrant);
}

// ---- query ----

// runQuery runs sql through POST /api/v1/query (NDJSON), keeping at most
// limit rows.
async function runQuery(sql, limit = 1000) {
  const r = await api('POST', '/api/v1/query', { sql }, { raw: true });
  const text = await r.text();
  if (!r.ok) {
    let msg = r.statusText;
    try { msg = JSON.parse(text).error.message; } catch { /* not JSON */ }
    throw new APIError(r.status, msg);
  }
  const rows = []; const cols = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    const o = parseJSON(line);
    for (const k of Object.keys(o)) if (!cols.includes(k)) cols.push(k);
    if (rows.length < limit) rows.push(o);
  }
  const err = r.headers.get('Floe-Error');
  if (err) throw new APIError(500, err);
  return { cols, rows };
}

function grid(cols, rows) {
  if (!rows.length) return el('p', { class: 'muted' }, 'No rows.');
  return el('div', { class: 'grid-wrap' }, table(cols, rows.map((r) => cols.map((c) => {
    const v = r[c];
    return v === null || v === undefined ? el('td', { class: 'muted' }, 'NULL') : (typeof v === 'object' ? JSON.stringify(v) : String(v));
  })), { label: 'Results', class: 'results' }));
}

function download(name, blob) {
  const a = el('a', { href: URL.createObjectURL(blob), download: name });
  document.body.append(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

function renderQuery() {
  const sql = el('textarea', { class: 'sql', id: 'sql', 'aria-label': 'SQL statement', spellcheck: 'false' });
  sql.value = sessionStorage.getItem('floe.sql') || 'SELECT * FROM crm.opportunities LIMIT 100';
  const out = el('div', { id: 'results' });
  const run = el('button', { type: 'submit', id: 'run' }, 'Run');
  const csv = el('button', { type: 'button', class: 'secondary', id: 'export-csv' }, 'Export CSV');
  // Time travel: insert an AT clause for a moment at the cursor (after a table name).
  const asOf = el('input', { id: 'as-of', type: 'datetime-local', step: '1' });
  const at = el('button', { type: 'button', class: 'secondary', id: 'insert-at' }, 'Insert AT clause');
  at.addEventListener('click', () => {
    if (!asOf.value) { asOf.focus(); return; }
    const ts = new Date(asOf.value).toISOString().replace('T', ' ').replace(/\.\d+Z$/, '');
    const clause = ` AT (TIMESTAMP => TIMESTAMP '${ts}')`;
    const i = sql.selectionStart ?? sql.value.length;
    sql.value = sql.value.slice(0, i) + clause + sql.value.slice(sql.selectionEnd ?? i);
    sql.focus();
    sql.selectionStart = sql.selectionEnd = i + clause.length;
  });
  const form = el('form', { 'aria-label': 'SQL editor' }, sql, el('p', {}, run, ' ', csv, ' ', el('span', { class: 'muted' }, 'Ctrl+Enter runs; the grid shows at most 1,000 rows.')),
    el('p', {}, el('label', { for: 'as-of' }, 'Time travel: as of (local time) '), asOf, ' ', at,
      el('span', { class: 'muted' }, ' puts the table after the cursor as it was then (or use "Query" on a table page\'s snapshot).')));
  const go = async () => {
    sessionStorage.setItem('floe.sql', sql.value);
    out.replaceChildren(el('p', { class: 'muted' }, 'Running…'));
    const t0 = performance.now();
    try {
      const { cols, rows } = await runQuery(sql.value);
      out.replaceChildren(el('p', { class: 'muted', id: 'row-count' }, `${rows.length} rows in ${Math.round(performance.now() - t0)} ms`), grid(cols, rows));
    } catch (e) { out.replaceChildren(errorBox(e)); }
  };
  form.addEventListener('submit', (ev) => { ev.preventDefault(); go(); });
  sql.addEventListener('keydown', (ev) => { if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); go(); } });
  csv.addEventListener('click', async () => {
    try {
      const r = await api('POST', '/api/v1/query?format=csv', { sql: sql.value }, { raw: true });
      if (!r.ok) throw new APIError(r.status, (await r.json()).error.message);
      download('query.csv', await r.blob());
    } catch (e) { out.replaceChildren(errorBox(e)); }
  });
  show(el('h1', {}, 'Query'), form, out);
  sql.focus();
}

// ---- shares ----

async function renderShares() {
  const list = el('div', { id: 'share-list' }, el('p', { class: 'muted' }, 'Loading…'));
  const once = el('div', { id: 'profile-once' });
  const sname = el('input', { id: 'share-name', required: true });
  const stable = el('input', { id: 'share-table', placeholder: 'crm.opportunities' });
  const smsg = el('span', { role: 'alert' });
  const sform = el('form', { class: 'inline', id: 'share-form', 'aria-label': 'Create a share' },
    el('label', { for: 'share-name' }, 'Share name', sname), el('label', { for: 'share-table' }, 'Table to share (optional)', stable),
    el('button', { type: 'submit' }, 'Create share'), smsg);
  const rname = el('input', { id: 'recipient-name', required: true });
  const rshare = el('input', { id: 'recipient-share', placeholder: 'share name' });
  const rmsg = el('span', { role: 'alert' });
  const rform = el('form', { class: 'inline', id: 'recipient-form', 'aria-label': 'Create a recipient' },
    el('label', { for: 'recipient-name' }, 'Recipient name', rname), el('label', { for: 'recipient-share' }, 'Grant share (optional)', rshare),
    el('button', { type: 'submit' }, 'Create recipient'), rmsg);
  const draw = async () => {
    try {
      const [s, r] = await Promise.all([api('GET', '/api/v1/shares'), api('GET', '/api/v1/recipients').catch(() => ({ recipients: [] }))]);
      const shares = (s && (s.shares || s)) || [];
      const recips = (r && (r.recipients || r)) || [];
      list.replaceChildren(
        el('h2', {}, 'Shares'),
        shares.length ? table(['Name', 'Comment', 'Objects', 'Recipients'], shares.map((x) => [el('td', {}, el('a', { href: `#/share/${encodeURIComponent(x.name)}` }, x.name)), x.comment || '',
          String((x.objects || []).map((o) => o.name).join(', ')), String((x.recipients || []).join(', '))]), { label: 'Shares' }) : el('p', { class: 'muted' }, 'none'),
        el('h2', {}, 'Recipients'),
        recips.length ? table(['Name', 'Comment', 'Tokens'], recips.map((x) => [el('td', {}, el('a', { href: `#/recipient/${encodeURIComponent(x.name)}` }, x.name)), x.comment || '', String((x.tokens || []).length)]), { label: 'Recipients' }) : el('p', { class: 'muted' }, 'none'));
    } catch (e) { list.replaceChildren(errorBox(e)); }
  };
  sform.addEventListener('submit', async (ev) => {
    ev.preventDefault(); smsg.textContent = '';
    try {
      await api('POST', '/api/v1/shares', { name: sname.value });
      if (stable.value.trim()) {
        const t = stable.value.trim();
        await api('POST', `/api/v1/shares/${encodeURIComponent(sname.value)}/objects`, { kind: 'table', name: t, alias_schema: t.split('.').slice(0, -1).join('.') });
      }
      status(`Created share ${sname.value}`); draw();
    } catch (e) { smsg.textContent = e.message; smsg.className = 'error'; }
  });
  rform.addEventListener('submit', async (ev) => {
    ev.preventDefault(); rmsg.textContent = '';
    try {
      const res = await api('POST', '/api/v1/recipients', { name: rname.value });
      if (rshare.value.trim()) await api('PUT', `/api/v1/shares/${encodeURIComponent(rshare.value.trim())}/recipients/${encodeURIComponent(rname.value)}`);
      profileOnce(once, rname.value, res.profile);
      status(`Created recipient ${rname.value}`); draw();
    } catch (e) { rmsg.textContent = e.message; rmsg.className = 'error'; }
  });
  show(el('h1', {}, 'Shares and recipients'), sform, rform, once, list);
  draw();
}

// ---- audit ----

async function renderAudit() {
  const f = { principal: el('input', { id: 'audit-principal' }), action: el('input', { id: 'audit-action', placeholder: 'mgmt.* or sql.query' }),
    resource: el('input', { id: 'audit-resource' }), outcome: el('select', { id: 'audit-outcome' }, ['', 'success', 'failure', 'denied'].map((o) => el('option', { value: o }, o || 'any'))),
    since: el('input', { id: 'audit-since', type: 'datetime-local' }), until: el('input', { id: 'audit-until', type: 'datetime-local' }) };
  const verify = el('p', { id: 'audit-verify' }, 'Chain: ', el('span', { class: 'muted' }, 'checking…'));
  const out = el('div', { id: 'audit-results' });
  const more = el('button', { type: 'button', class: 'secondary', id: 'audit-older', hidden: true }, 'Older');
  const form = el('form', { class: 'inline', id: 'audit-filter', 'aria-label': 'Filter the audit log' },
    ...Object.entries(f).map(([k, input]) => el('label', { for: input.id }, k, input)), el('button', { type: 'submit' }, 'Filter'));
  let before = 0; let rows = [];
  const load = async (reset) => {
    if (reset) { before = 0; rows = []; }
    const p = new URLSearchParams({ limit: '50' });
    for (const k of ['principal', 'action', 'resource', 'outcome']) if (f[k].value) p.set(k, f[k].value);
    for (const k of ['since', 'until']) if (f[k].value) p.set(k, new Date(f[k].value).toISOString());
    if (before) p.set('before', String(before));
    try {
      const res = await api('GET', `/api/v1/audit?${p}`);
      const recs = res.records || [];
      rows = rows.concat(recs);
      if (recs.length) before = recs[recs.length - 1].seq;
      more.hidden = !res.more;
      out.replaceChildren(table(['Seq', 'Time', 'Principal', 'Action', 'Resource', 'Outcome', 'Detail'],
        rows.map((r) => [String(r.seq), r.time, r.principal, r.action, r.resource, r.outcome, el('td', {}, el('code', {}, r.detail ? JSON.stringify(r.detail) : ''))]), { label: 'Audit records', class: 'audit' }));
    } catch (e) { out.replaceChildren(errorBox(e)); }
  };
  form.addEventListener('submit', (ev) => { ev.preventDefault(); load(true); });
  more.addEventListener('click', () => load(false));
  show(el('h1', {}, 'Audit log'), verify, form, out, more);
  load(true);
  api('GET', '/api/v1/audit/verify').then((v) => {
    verify.replaceChildren('Chain: ', el('span', { class: v.ok ? 'badge ok' : 'badge bad' }, v.ok ? `verified (${v.records} records)` : `NOT verified: ${v.error}`));
  }).catch((e) => verify.replaceChildren('Chain: ', errorBox(e)));
}

// ---- router ----

async function route() {
  if (!state.who) return;
  const h = location.hash || '#/';
  for (const a of document.querySelectorAll('header nav a')) {
    const target = a.getAttribute('href');
    if ((target === '#/' && (h === '#/' || /^#\/(table|view|product|namespace|warehouse)\b/.test(h))) || (target === '#/shares' && /^#\/(share|recipient)\//.test(h)) || (target === '#/principals' && /^#\/grants\//.test(h)) || (target !== '#/' && h.startsWith(target))) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.getElementById('nav-principals').hidden = !state.who.admin;
  const parts = h.slice(2).split('/').map(decodeURIComponent);
  try {
    if (parts[0] === 'table' && parts.length === 3) await renderTable(parts[1], parts[2]);
    else if (parts[0] === 'query') renderQuery();
    else if (parts[0] === 'shares') await renderShares();
    else if (parts[0] === 'audit') await renderAudit();
    else if (parts[0] === 'principals') await renderPrincipals();
    else if (parts[0] === 'view' && parts.length === 3) await renderView(parts[1], parts[2]);
    else if (parts[0] === 'product' && parts.length === 2) await renderProduct(parts[1]);
    else if (parts[0] === 'share' && parts.length === 2) await renderShare(parts[1]);
    else if (parts[0] === 'recipient' && parts.length === 2) await renderRecipient(parts[1]);
    else if (parts[0] === 'namespace' && parts.length === 2) await renderNamespace(parts[1]);
    else if (parts[0] === 'warehouse') await renderWarehouse();
    else if (parts[0] === 'grants' && parts.length === 3) await renderGrantee(parts[1], parts[2]);
    else await renderCatalog();
  } catch (e) {
    if (!(e instanceof APIError && e.status === 401)) show(errorBox(e));
  }
  main().focus({ preventScroll: true });
  document.body.dataset.page = parts[0] || 'catalog';
}

async function start() {
  document.getElementById('logout').addEventListener('click', logout);
  window.addEventListener('hashchange', route);
  try {
    const s = await api('GET', API + '/session', undefined, { quiet401: true });
    signedIn(s);
    await route();
  } catch (e) {
    renderSignIn(e instanceof APIError && e.status === 401 ? '' : e.message);
  }
}

// Shared with govern.js (the governance pages).
export { el, api, APIError, errorBox, table, tags, status, show, state, download, fmtTime, nsPath, loadPrefix, quoteIdent, listAll };

start();
