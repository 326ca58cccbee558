// Floe console: the governance pages (grant editor, principals and roles,
// share and recipient pages). Like app.js, every piece of text from the
// server is set as text (el() and textContent), never as HTML; every
// decision is the management API's, and a control is shown only where the
// signed-in principal may use it.

import { el, api, APIError, errorBox, table, status, show, state, download, fmtTime } from './app.js';

// fieldError is the inline message element of a form field: the field
// points to it with aria-describedby.
function fieldError(input) {
  const m = el('span', { class: 'field-error error', id: `${input.id}-error`, role: 'alert' });
  input.setAttribute('aria-describedby', m.id);
  return m;
}

// clearErrors empties every inline message and aria-invalid mark of a form.
function clearErrors(form) {
  for (const m of form.querySelectorAll('.field-error')) m.textContent = '';
  for (const i of form.querySelectorAll('[aria-invalid]')) i.removeAttribute('aria-invalid');
}

// placeError shows an API error next to the field it is about, judged by
// the words of the message (the API names the part it refuses), or in the
// form's general message.
function placeError(e, fields, general) {
  const msg = e instanceof APIError ? e.message : String(e);
  for (const [re, input, m] of fields) {
    if (re.test(msg)) {
      m.textContent = msg;
      input.setAttribute('aria-invalid', 'true');
      return;
    }
  }
  general.textContent = msg;
}

const list = (s) => s.split(',').map((x) => x.trim()).filter(Boolean);

function filterText(f) {
  if (!f) return '';
  const parts = [];
  if (f.row_filter) parts.push(`rows: ${f.row_filter}`);
  if (f.include_columns && f.include_columns.length) parts.push(`only columns: ${f.include_columns.join(', ')}`);
  if (f.exclude_columns && f.exclude_columns.length) parts.push(`without columns: ${f.exclude_columns.join(', ')}`);
  return parts.join('; ');
}

// ---- who has access, grants on an object, and the grant editor ----

// The privileges the API grants on each kind of object (docs/authorization.md;
// a data product takes DESCRIBE and SELECT only, docs/products.md).
const PRIVILEGES = {
  warehouse: ['DESCRIBE', 'SELECT', 'MODIFY', 'ALTER', 'CREATE_NAMESPACE', 'CREATE_TABLE', 'CREATE_VIEW', 'DROP', 'MANAGE_GRANTS', 'CREATE_SHARE'],
  namespace: ['DESCRIBE', 'SELECT', 'MODIFY', 'ALTER', 'CREATE_NAMESPACE', 'CREATE_TABLE', 'CREATE_VIEW', 'DROP', 'MANAGE_GRANTS'],
  table: ['SELECT', 'DESCRIBE', 'MODIFY', 'DROP', 'MANAGE_GRANTS'],
  view: ['SELECT', 'DESCRIBE', 'MODIFY', 'DROP', 'MANAGE_GRANTS'],
  product: ['DESCRIBE', 'SELECT'],
};

// A target names the object a grants section is about:
// { kind: 'warehouse'|'namespace'|'table'|'view'|'product', ns: 'a.b', name }.
function targetText(t) {
  if (t.kind === 'warehouse') return `warehouse ${state.warehouse}`;
  if (t.kind === 'namespace') return `namespace ${t.ns}`;
  if (t.kind === 'product') return `data product ${t.name}`;
  return `${t.kind} ${t.ns}.${t.name}`;
}

// onOf is the API's securable for a target (not for a product).
function onOf(t) {
  const on = { kind: t.kind, warehouse: state.warehouse };
  if (t.kind !== 'warehouse') on.namespace = t.ns.split('.');
  if (t.kind === 'table' || t.kind === 'view') on.name = t.name;
  return on;
}

// grantsOn lists the grants on the target itself that the caller may see.
async function grantsOn(t) {
  if (t.kind === 'product') {
    const g = await api('GET', `/api/v1/products/${encodeURIComponent(t.name)}/grants`);
    return g.grants || [];
  }
  const q = new URLSearchParams({ warehouse: state.warehouse });
  if (t.kind !== 'warehouse') q.set('namespace', t.ns);
  if (t.kind === 'table' || t.kind === 'view') q.set(t.kind, t.name);
  const g = await api('GET', `/api/v1/grants?${q}`);
  const all = g.grants || [];
  // The listing of a namespace holds what is inside it too, that of a
  // warehouse everything: keep the grants on the object itself.
  if (t.kind === 'warehouse') return all.filter((x) => x.on && x.on.kind === 'warehouse');
  if (t.kind === 'namespace') return all.filter((x) => x.on && x.on.kind === 'namespace' && (x.on.namespace || []).join('.') === t.ns);
  return all;
}

// grantRows is the grants table: grantee, privilege, why, data filter and,
// for a manager, a Revoke button per grant.
export function grantRows(grants, canGrant, redraw, opts = {}) {
  return grants.map((g) => [
    ...(opts.object ? [g.tag_expression ? `objects tagged ${g.tag_expression}` : objectText(g.on, g.all_tables)] : [`${g.grantee.kind} ${g.grantee.name}`]),
    g.privilege, g.description || '', filterText(g.filter),
    canGrant ? el('td', {}, el('button', { type: 'button', class: 'secondary', 'aria-label': `Revoke ${g.privilege} from ${g.grantee.name}`,
      onclick: async () => {
        try {
          if (opts.product) await api('POST', `/api/v1/products/${encodeURIComponent(opts.product)}/grants/revoke`, { grantee: g.grantee, privilege: g.privilege });
          else await api('DELETE', `/api/v1/grants/${encodeURIComponent(g.id)}`);
          status(`Revoked ${g.privilege} from ${g.grantee.name}`); redraw();
        } catch (e) { status(e.message); }
      } }, 'Revoke')) : '',
  ]);
}

// objectText names a grant's securable.
function objectText(on, allTables) {
  if (!on) return '';
  const ns = (on.namespace || []).join('.');
  const base = on.kind === 'warehouse' ? `warehouse ${on.warehouse}` : on.kind === 'namespace' ? `namespace ${ns}` : `${on.kind} ${ns}.${on.name}`;
  return allTables ? `${base} (and everything inside)` : base;
}

// drawGrants fills box with the grants on the target and, for a principal
// holding MANAGE_GRANTS on it (or an administrator), Revoke buttons and the
// grant editor. Used by the table, view, namespace, warehouse and data
// product pages.
export async function drawGrants(box, target, canGrant, opts = {}) {
  let grants; let head;
  try { [grants, head] = await Promise.all([grantsOn(target), opts.head || []]); } catch (e) { box.replaceChildren(errorBox(e)); return; }
  const redraw = opts.redraw || (() => drawGrants(box, target, canGrant, opts));
  const what = target.kind === 'product' ? 'this data product' : `this ${target.kind}`;
  const parts = [...head, el('h3', {}, `Grants on ${what}`),
    grants.length ? table(['Grantee', 'Privilege', 'Why', 'Data filter', ''], grantRows(grants, canGrant, redraw, { product: target.kind === 'product' ? target.name : '' }), { label: 'Grants' })
      : el('p', { class: 'muted' }, `No grants you may see on ${what}.`)];
  if (canGrant) parts.push(el('h3', {}, 'Grant'), await grantEditor(target, redraw));
  box.replaceChildren(...parts);
}

// drawAccess fills the table page's "Who has access" section: every
// principal and role reaching the table and why (GET .../access), then the
// grants on the table and the grant editor (drawGrants).
export async function drawAccess(access, nsName, name, canGrant) {
  const tpath = `${encodeURIComponent(state.warehouse)}/${encodeURIComponent(nsName)}/${encodeURIComponent(name)}`;
  const head = api('GET', `/api/v1/tables/${tpath}/access`).catch((e) => { if (e.status === 401) throw e; return { error: e }; }).then((reach) => {
    const h = [];
    if (reach && !reach.error) {
      const rows = (reach.entries || []).map((x) => [
        `${x.grantee.kind} ${x.grantee.name}`,
        x.grantee.kind === 'role' ? ((x.members || []).join(', ') || '(no members)') : '',
        x.privilege, el('td', { class: `via via-${x.via}` }, x.via),
        x.description || '', x.tag_expression || '', filterText(x.filter),
      ]);
      for (const a of reach.administrators || []) rows.push([`principal ${a}`, '', 'all', el('td', { class: 'via via-admin' }, 'admin'), 'an administrator holds every privilege', '', '']);
      h.push(el('h3', {}, 'Effective access'),
        rows.length ? table(['Grantee', 'Members', 'Privilege', 'Why', 'Grant', 'Tag expression', 'Data filter'], rows, { label: 'Effective access', class: 'effective' })
          : el('p', { class: 'muted' }, 'No one you may see reaches this table.'));
    } else if (reach && reach.error) {
      h.push(el('p', { class: 'muted' }, `Effective access: ${reach.error.message}`));
    }
    return h;
  });
  await drawGrants(access, { kind: 'table', ns: nsName, name }, canGrant, { head, redraw: () => drawAccess(access, nsName, name, canGrant) });
}

// grantEditor builds the grant form of an object: on the object itself or,
// for a principal that may manage grants on the warehouse, on every object
// whose tags match an expression; on a warehouse or namespace, optionally
// on everything inside it; SELECT may carry a data filter. Errors of the
// API are shown next to the field they are about. A data product takes
// DESCRIBE or SELECT only, through its own endpoint.
async function grantEditor(target, done) {
  const product = target.kind === 'product';
  const container = target.kind === 'warehouse' || target.kind === 'namespace';
  const admin = state.who && state.who.admin;
  let tagOK = admin;
  if (!tagOK && !product) {
    try {
      const w = await api('GET', `/api/v1/privileges?warehouse=${encodeURIComponent(state.warehouse)}`);
      tagOK = (w.privileges || []).includes('MANAGE_GRANTS');
    } catch (e) { if (e.status === 401) throw e; }
  }
  const scope = el('select', { id: 'grant-scope' }, el('option', { value: target.kind }, `this ${product ? 'data product' : target.kind} (${targetText(target).replace(/^\S+ /, '')})`),
    tagOK && !product ? el('option', { value: 'tags' }, `objects of warehouse ${state.warehouse} whose tags match`) : null);
  const tagExpr = el('input', { id: 'grant-tag-expression', placeholder: 'domain = sales AND sensitivity IN (low, medium)', size: 40 });
  const allTables = el('input', { id: 'grant-all-tables', type: 'checkbox' });
  const kind = el('select', { id: 'grantee-kind' }, el('option', { value: 'role' }, 'role'), el('option', { value: 'principal' }, 'principal'));
  const who = el('input', { id: 'grantee-name', required: true });
  const priv = el('select', { id: 'grant-privilege' }, PRIVILEGES[target.kind].map((p) => el('option', { value: p }, p)));
  const rowFilter = el('input', { id: 'grant-row-filter', placeholder: "region = 'EMEA'", size: 30 });
  const include = el('input', { id: 'grant-include-columns', placeholder: 'id, name' });
  const exclude = el('input', { id: 'grant-exclude-columns', placeholder: 'email, phone' });
  const errs = { tag: fieldError(tagExpr), who: fieldError(who), row: fieldError(rowFilter), inc: fieldError(include), exc: fieldError(exclude), all: fieldError(allTables) };
  const general = el('span', { class: 'field-error error', id: 'grant-error', role: 'alert' });
  const tagBox = el('div', { class: 'field', hidden: true }, el('label', { for: 'grant-tag-expression' }, 'Tag expression', tagExpr), errs.tag);
  const allBox = container ? el('div', { class: 'field' }, el('label', { for: 'grant-all-tables', class: 'check' }, allTables, ' on everything inside too (every namespace, table and view, present and future; SELECT and MODIFY need it)'), errs.all) : null;
  const filterBox = product ? null : el('fieldset', { class: 'filter', id: 'grant-filter', hidden: priv.value !== 'SELECT' }, el('legend', {}, 'Data filter (SELECT only; optional)'),
    el('div', { class: 'field' }, el('label', { for: 'grant-row-filter' }, 'Row filter (SQL boolean expression)', rowFilter), errs.row),
    el('div', { class: 'field' }, el('label', { for: 'grant-include-columns' }, 'Only these columns (comma-separated)', include), errs.inc),
    el('div', { class: 'field' }, el('label', { for: 'grant-exclude-columns' }, 'Without these columns (comma-separated)', exclude), errs.exc));
  scope.addEventListener('change', () => { tagBox.hidden = scope.value !== 'tags'; if (allBox) allBox.hidden = scope.value === 'tags'; });
  priv.addEventListener('change', () => {
    if (filterBox) filterBox.hidden = priv.value !== 'SELECT';
    if (container && (priv.value === 'SELECT' || priv.value === 'MODIFY')) allTables.checked = true;
  });
  const form = el('form', { class: 'inline grant', id: 'grant-editor', 'aria-label': 'Grant a privilege' },
    el('div', { class: 'field' }, el('label', { for: 'grant-scope' }, 'On', scope)), tagBox, allBox,
    el('div', { class: 'field' }, el('label', { for: 'grantee-kind' }, 'Grantee kind', kind)),
    el('div', { class: 'field' }, el('label', { for: 'grantee-name' }, 'Grantee name', who), errs.who),
    el('div', { class: 'field' }, el('label', { for: 'grant-privilege' }, 'Privilege', priv)),
    filterBox, el('button', { type: 'submit' }, 'Grant'), general);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const body = { grantee: { kind: kind.value, name: who.value.trim() }, privilege: priv.value };
    if (scope.value === 'tags') {
      if (!tagExpr.value.trim()) { errs.tag.textContent = 'a tag expression is required'; tagExpr.setAttribute('aria-invalid', 'true'); tagExpr.focus(); return; }
      body.on = { kind: 'warehouse', warehouse: state.warehouse };
      body.tag_expression = tagExpr.value.trim();
    } else if (!product) {
      body.on = onOf(target);
      if (container && allTables.checked) body.all_tables = true;
    }
    if (filterBox && priv.value === 'SELECT') {
      const f = {};
      if (rowFilter.value.trim()) f.row_filter = rowFilter.value.trim();
      if (list(include.value).length) f.include_columns = list(include.value);
      if (list(exclude.value).length) f.exclude_columns = list(exclude.value);
      if (Object.keys(f).length) body.filter = f;
    }
    try {
      const g = product ? await api('POST', `/api/v1/products/${encodeURIComponent(target.name)}/grants`, body) : await api('POST', '/api/v1/grants', body);
      status(`Granted: ${g.description || priv.value}`);
      done();
    } catch (e) {
      placeError(e, [
        [/tag expression|tag_expression|\bexpression\b.*tag/i, tagExpr, errs.tag],
        [/row filter|row_filter/i, rowFilter, errs.row],
        [/includ/i, include, errs.inc],
        [/exclud/i, exclude, errs.exc],
        [/all.tables|all_tables/i, allTables, errs.all],
        [/grantee|principal "|role "|does not exist/i, who, errs.who],
      ], general);
    }
  });
  return form;
}

// renderGrantee is the page of every grant given to a principal or a role
// (GET /api/v1/grants?grantee_kind=&grantee=): administrators see anyone's;
// anyone else sees the API's answer, its own grants and its roles'. Revoke
// buttons for administrators.
export async function renderGrantee(kind, name) {
  const title = `Grants to ${kind} ${name}`;
  show(el('h1', {}, title), el('p', { class: 'muted' }, 'Loading…'));
  let grants;
  try {
    const q = new URLSearchParams({ grantee_kind: kind, grantee: name });
    grants = ((await api('GET', `/api/v1/grants?${q}`)).grants || []);
  } catch (e) { show(el('h1', {}, title), errorBox(e)); return; }
  const admin = !!(state.who && state.who.admin);
  show(el('h1', {}, title),
    el('p', { class: 'muted' }, admin ? 'Every grant given to it.' : 'The grants you may see: your own and your roles\'.'),
    grants.length ? table(['Object', 'Privilege', 'Grant', 'Data filter', ''], grantRows(grants, admin, () => renderGrantee(kind, name), { object: true }), { label: 'Grants of the grantee', class: 'grantee-grants' })
      : el('p', { class: 'muted', id: 'no-grants' }, 'No grants you may see.'));
}

// ---- principals and roles (administrators) ----

// renderPrincipals is the Principals page: principals (create, with the
// secret shown once; disable and enable, which cuts off every token of the
// principal; rotate the secret, shown once, and revoke all its tokens), roles (create, drop, add and remove members).
export async function renderPrincipals() {
  if (!(state.who && state.who.admin)) {
    show(el('h1', {}, 'Principals and roles'), el('p', { class: 'muted', id: 'principals-admin-only' }, 'Principals and roles are managed by administrators; you are not one.'),
      el('p', {}, el('a', { href: `#/grants/principal/${encodeURIComponent(state.who.principal)}`, id: 'my-grants' }, 'Your grants')));
    return;
  }
  const plist = el('div', { id: 'principal-list' }, el('p', { class: 'muted' }, 'Loading…'));
  const rlist = el('div', { id: 'role-list' }, el('p', { class: 'muted' }, 'Loading…'));
  const once = el('div', { id: 'secret-once' });
  // showOnce shows a new client secret (of a created principal or a
  // rotation) this once, with copy and download; it is kept nowhere else.
  const showOnce = (p, heading, note) => {
    const cred = `client_id=${p.client_id}\nclient_secret=${p.client_secret}\n`;
    once.replaceChildren(el('section', { class: 'once', 'aria-label': 'New credential' },
      el('h2', {}, heading),
      el('p', {}, 'The secret is not stored in clear and cannot be shown again. Copy or download it now and hand it over securely.'),
      note ? el('p', { id: 'secret-note' }, note) : null,
      el('p', {}, 'Client id ', el('code', { id: 'new-client-id' }, p.client_id)),
      el('p', {}, 'Client secret ', el('code', { id: 'new-secret' }, p.client_secret)),
      el('button', { type: 'button', id: 'copy-secret', onclick: async () => {
        try { await navigator.clipboard.writeText(p.client_secret); status('Secret copied'); } catch { status('Copy is not allowed here; select the secret instead'); }
      } }, 'Copy secret'), ' ',
      el('button', { type: 'button', id: 'download-secret', onclick: () => download(`${p.name}.credential`, new Blob([cred], { type: 'text/plain' })) }, 'Download'), ' ',
      el('button', { type: 'button', class: 'secondary', onclick: () => once.replaceChildren() }, 'Done')));
  };
  // How long an old secret keeps working after "Rotate secret".
  const rgrace = el('select', { id: 'rotate-grace' },
    el('option', { value: '0' }, 'not at all (refused at once)'), el('option', { value: '3600' }, '1 hour'),
    el('option', { value: '86400' }, '1 day'), el('option', { value: '604800' }, '7 days'));
  const pname = el('input', { id: 'principal-name', required: true });
  const padmin = el('input', { id: 'principal-admin', type: 'checkbox' });
  const pscopes = el('input', { id: 'principal-scopes', value: 'catalog', placeholder: 'catalog or catalog:read' });
  const pcidrs = el('input', { id: 'principal-cidrs', placeholder: '10.0.0.0/8, 2001:db8::/32', size: 30 });
  const perr = fieldError(pname);
  const serr = fieldError(pscopes);
  const cerr = fieldError(pcidrs);
  const pform = el('form', { class: 'inline', id: 'principal-form', 'aria-label': 'Create a principal' },
    el('div', { class: 'field' }, el('label', { for: 'principal-name' }, 'Principal name', pname), perr),
    el('label', { for: 'principal-admin', class: 'check' }, padmin, ' administrator'),
    el('div', { class: 'field' }, el('label', { for: 'principal-scopes' }, 'Scopes (comma-separated)', pscopes), serr),
    el('div', { class: 'field' }, el('label', { for: 'principal-cidrs' }, 'Allowed networks (comma-separated CIDRs; empty: any address)', pcidrs), cerr),
    el('button', { type: 'submit' }, 'Create principal'));
  // The network allowlist of an existing principal (PUT .../allowed-cidrs);
  // scopes are set when a principal is made (the API changes them no other way).
  const eprin = el('select', { id: 'cidrs-principal' });
  const ecidrs = el('input', { id: 'cidrs-value', placeholder: '10.0.0.0/8, 2001:db8::/32 (empty: any address)', size: 40 });
  const eerr = fieldError(ecidrs);
  const eform = el('form', { class: 'inline', id: 'cidrs-form', 'aria-label': 'Edit a network allowlist' },
    el('label', { for: 'cidrs-principal' }, 'Principal', eprin),
    el('div', { class: 'field' }, el('label', { for: 'cidrs-value' }, 'Allowed networks', ecidrs), eerr),
    el('button', { type: 'submit' }, 'Set allowed networks'));
  let known = [];
  eprin.addEventListener('change', () => { const p = known.find((x) => x.name === eprin.value); ecidrs.value = ((p && p.allowed_cidrs) || []).join(', '); });
  const rname = el('input', { id: 'role-name', required: true });
  const rdesc = el('input', { id: 'role-description' });
  const rerr = fieldError(rname);
  const rform = el('form', { class: 'inline', id: 'role-form', 'aria-label': 'Create a role' },
    el('div', { class: 'field' }, el('label', { for: 'role-name' }, 'Role name', rname), rerr),
    el('label', { for: 'role-description' }, 'Description', rdesc), el('button', { type: 'submit' }, 'Create role'));
  const mrole = el('select', { id: 'member-role' });
  const mprin = el('select', { id: 'member-principal' });
  const merr = el('span', { class: 'field-error error', id: 'member-error', role: 'alert' });
  const mform = el('form', { class: 'inline', id: 'member-form', 'aria-label': 'Add a role member' },
    el('label', { for: 'member-role' }, 'Role', mrole), el('label', { for: 'member-principal' }, 'Principal', mprin),
    el('button', { type: 'submit' }, 'Add member'), merr);

  const draw = async () => {
    let ps; let rs;
    try {
      [ps, rs] = await Promise.all([api('GET', '/api/v1/principals'), api('GET', '/api/v1/roles')]);
    } catch (e) { plist.replaceChildren(errorBox(e)); rlist.replaceChildren(); return; }
    const principals = ps.principals || []; const roles = rs.roles || [];
    const rolesOf = {};
    for (const r of roles) for (const m of r.members || []) (rolesOf[m] ||= []).push(r.name);
    plist.replaceChildren(table(['Name', 'Client id', 'Admin', 'Scopes', 'Allowed networks', 'State', 'Roles', 'Created', ''], principals.map((p) => [
      el('td', {}, el('a', { href: `#/grants/principal/${encodeURIComponent(p.name)}`, 'aria-label': `Grants to principal ${p.name}` }, p.name)),
      el('td', {}, el('code', {}, p.client_id)), p.admin ? 'yes' : '', (p.scopes || []).join(' '), (p.allowed_cidrs || []).join(', ') || 'any',
      el('td', { class: p.disabled ? 'error' : '' }, p.disabled ? 'disabled' : 'active'),
      (rolesOf[p.name] || []).join(', '), p.created_at ? fmtTime(Date.parse(p.created_at)) : '',
      p.name === state.who.principal ? el('td', { class: 'muted' }, 'you') : el('td', { class: 'actions' }, el('button', {
        type: 'button', class: 'secondary', 'aria-label': `${p.disabled ? 'Enable' : 'Disable'} principal ${p.name}`,
        onclick: async () => {
          if (!p.disabled && !window.confirm(`Disable ${p.name}? Every token it holds stops working at once on every node, with the storage credentials and SQL sessions opened under them.`)) return;
          try {
            await api('POST', `/api/v1/principals/${encodeURIComponent(p.name)}/${p.disabled ? 'enable' : 'disable'}`);
            status(`${p.disabled ? 'Enabled' : 'Disabled'} ${p.name}`); draw();
          } catch (e) { status(e.message); }
        } }, p.disabled ? 'Enable' : 'Disable'), ' ',
      el('button', {
        type: 'button', class: 'secondary', 'aria-label': `Rotate secret of principal ${p.name}`,
        onclick: async () => {
          const grace = Number(rgrace.value);
          const old = grace ? `keeps working for ${rgrace.selectedOptions[0].textContent}` : 'stops working at once';
          if (!window.confirm(`Rotate the secret of ${p.name}? The old secret ${old}; tokens already issued stay valid until they expire or you revoke them.`)) return;
          try {
            const r = await api('POST', `/api/v1/principals/${encodeURIComponent(p.name)}/rotate-secret`, { grace_seconds: grace });
            showOnce(r, `New secret of ${r.name} — shown once`, `The old secret ${old}.`);
            status(`Rotated the secret of ${p.name}`);
          } catch (e) { status(e.message); }
        } }, 'Rotate secret'), ' ',
      el('button', {
        type: 'button', class: 'secondary', 'aria-label': `Revoke all tokens of principal ${p.name}`,
        onclick: async () => {
          if (!window.confirm(`Revoke every token of ${p.name}? Every token issued to it until now is refused at once on every node, with the storage credentials and SQL sessions opened under them; it can get new tokens with its secret.`)) return;
          try {
            await api('POST', `/api/v1/principals/${encodeURIComponent(p.name)}/revoke-tokens`);
            status(`Revoked every token of ${p.name}`);
          } catch (e) { status(e.message); }
        } }, 'Revoke all tokens')),
    ]), { label: 'Principals', class: 'principals' }));
    rlist.replaceChildren(roles.length ? table(['Role', 'Description', 'Members', ''], roles.map((r) => [
      el('td', {}, el('a', { href: `#/grants/role/${encodeURIComponent(r.name)}`, 'aria-label': `Grants to role ${r.name}` }, r.name)), r.description || '',
      el('td', {}, (r.members || []).length ? (r.members || []).map((m) => el('span', { class: 'member' }, m, ' ',
        el('button', { type: 'button', class: 'link', 'aria-label': `Remove ${m} from role ${r.name}`, onclick: async () => {
          try { await api('DELETE', `/api/v1/roles/${encodeURIComponent(r.name)}/members/${encodeURIComponent(m)}`); status(`Removed ${m} from ${r.name}`); draw(); }
          catch (e) { status(e.message); }
        } }, '×'))) : el('span', { class: 'muted' }, 'none')),
      el('td', {}, el('button', { type: 'button', class: 'secondary', 'aria-label': `Drop role ${r.name}`, onclick: async () => {
        if (!window.confirm(`Drop role ${r.name}? Its grants go with it.`)) return;
        try { await api('DELETE', `/api/v1/roles/${encodeURIComponent(r.name)}`); status(`Dropped ${r.name}`); draw(); }
        catch (e) { status(e.message); }
      } }, 'Drop')),
    ]), { label: 'Roles', class: 'roles' }) : el('p', { class: 'muted' }, 'No roles yet.'));
    mrole.replaceChildren(...roles.map((r) => el('option', { value: r.name }, r.name)));
    mprin.replaceChildren(...principals.map((p) => el('option', { value: p.name }, p.name)));
    const keep = eprin.value;
    known = principals;
    eprin.replaceChildren(...principals.map((p) => el('option', { value: p.name }, p.name)));
    if (keep) eprin.value = keep;
    eprin.dispatchEvent(new Event('change'));
  };
  pform.addEventListener('submit', async (ev) => {
    ev.preventDefault(); clearErrors(pform);
    try {
      const body = { name: pname.value.trim(), admin: padmin.checked };
      if (list(pscopes.value).length) body.scopes = list(pscopes.value);
      if (list(pcidrs.value).length) body.allowed_cidrs = list(pcidrs.value);
      const p = await api('POST', '/api/v1/principals', body);
      showOnce(p, `Credential of ${p.name} — shown once`, '');
      pname.value = ''; padmin.checked = false; pscopes.value = 'catalog'; pcidrs.value = '';
      status(`Created principal ${p.name}`); draw();
    } catch (e) { placeError(e, [[/scope/i, pscopes, serr], [/cidr|network|address|prefix/i, pcidrs, cerr], [/./, pname, perr]], perr); }
  });
  eform.addEventListener('submit', async (ev) => {
    ev.preventDefault(); clearErrors(eform);
    try {
      const p = await api('PUT', `/api/v1/principals/${encodeURIComponent(eprin.value)}/allowed-cidrs`, { allowed_cidrs: list(ecidrs.value) });
      status(`Allowed networks of ${p.name}: ${(p.allowed_cidrs || []).join(', ') || 'any address'}`); draw();
    } catch (e) { placeError(e, [[/./, ecidrs, eerr]], eerr); }
  });
  rform.addEventListener('submit', async (ev) => {
    ev.preventDefault(); clearErrors(rform);
    try {
      await api('POST', '/api/v1/roles', { name: rname.value.trim(), description: rdesc.value.trim() || undefined });
      status(`Created role ${rname.value.trim()}`); rname.value = ''; rdesc.value = ''; draw();
    } catch (e) { placeError(e, [[/./, rname, rerr]], rerr); }
  });
  mform.addEventListener('submit', async (ev) => {
    ev.preventDefault(); merr.textContent = '';
    try {
      await api('PUT', `/api/v1/roles/${encodeURIComponent(mrole.value)}/members/${encodeURIComponent(mprin.value)}`);
      status(`Added ${mprin.value} to ${mrole.value}`); draw();
    } catch (e) { merr.textContent = e.message; }
  });
  show(el('h1', {}, 'Principals and roles'),
    el('h2', {}, 'Principals'), pform, once,
    el('div', { class: 'inline' }, el('label', { for: 'rotate-grace' }, 'After "Rotate secret", the old secret keeps working ', rgrace)),
    plist,
    el('h3', {}, 'Network allowlist'), el('p', { class: 'muted' }, 'From the next request on, the principal\'s tokens, new tokens and SQL logins are refused from other addresses. Scopes are set when a principal is created.'), eform,
    el('p', { class: 'muted' }, 'Disabling a principal revokes its access at once: every token it holds is refused on every node, with the storage credentials and SQL sessions opened under them; enabling it again lets it sign in anew.'),
    el('p', { class: 'muted' }, 'Rotating a secret replaces a leaked or aging one without disabling the principal; "Revoke all tokens" refuses every token issued to it until now, on every node. To stop a leaked secret completely, rotate it and then revoke the tokens.'),
    el('h2', {}, 'Roles'), rform, mform, rlist);
  draw();
}

// ---- share and recipient pages ----

// profileOnce shows a recipient's new profile file (which holds its bearer
// token) once, with a Download button.
export function profileOnce(box, recipient, profile) {
  const text = JSON.stringify(profile, null, 2);
  box.replaceChildren(el('section', { class: 'once', 'aria-label': 'Profile file' },
    el('h2', {}, `Profile of ${recipient} — shown once`),
    el('p', {}, 'This is the only time the recipient\'s bearer token is shown. Download it and hand it over securely.'),
    el('pre', { id: 'profile' }, text),
    el('button', { type: 'button', id: 'download-profile', onclick: () => download(`${recipient}.share`, new Blob([text], { type: 'application/json' })) }, 'Download profile'),
    ' ', el('button', { type: 'button', class: 'secondary', onclick: () => box.replaceChildren() }, 'Done')));
}

const mayManage = (owner) => (state.who && state.who.admin) || (state.who && owner === state.who.principal);

// renderShare is a share's page: its objects and recipients, with add and
// remove for its owner or an administrator.
export async function renderShare(name) {
  let s;
  try { s = await api('GET', `/api/v1/shares/${encodeURIComponent(name)}`); }
  catch (e) { show(el('h1', {}, `Share ${name}`), errorBox(e)); return; }
  const manage = mayManage(s.owner);
  const redraw = () => renderShare(name);
  const objects = s.objects || []; const recips = s.recipients || [];
  const parts = [el('h1', {}, `Share ${s.name}`),
    el('p', { class: 'muted' }, `Warehouse ${s.warehouse} · owner ${s.owner}${s.comment ? ` · ${s.comment}` : ''} · created ${fmtTime(Date.parse(s.created_at))}`),
    el('h2', {}, 'Objects'),
    objects.length ? table(['Kind', 'Name', 'Recipients see', 'History', 'Partition filter', 'Added by', ''], objects.map((o) => [
      o.kind, o.name, o.table ? `${o.schema}.${o.table}` : o.schema, o.history ? 'yes' : '', o.partition_filter || '', o.added_by,
      manage ? el('td', {}, el('button', { type: 'button', class: 'secondary', 'aria-label': `Remove ${o.name} from the share`, onclick: async () => {
        try { await api('DELETE', `/api/v1/shares/${encodeURIComponent(s.name)}/objects/${encodeURIComponent(o.id)}`); status(`Removed ${o.name}`); redraw(); }
        catch (e) { status(e.message); }
      } }, 'Remove')) : '']), { label: 'Shared objects' }) : el('p', { class: 'muted' }, 'No objects yet.')];
  if (manage) {
    const okind = el('select', { id: 'object-kind' }, el('option', { value: 'table' }, 'table'), el('option', { value: 'namespace' }, 'namespace'));
    const oname = el('input', { id: 'object-name', required: true, placeholder: 'crm.opportunities' });
    const ohist = el('input', { id: 'object-history', type: 'checkbox' });
    const oerr = fieldError(oname);
    const f = el('form', { class: 'inline', id: 'object-form', 'aria-label': 'Add an object' },
      el('label', { for: 'object-kind' }, 'Kind', okind), el('div', { class: 'field' }, el('label', { for: 'object-name' }, 'Name', oname), oerr),
      el('label', { for: 'object-history', class: 'check' }, ohist, ' with history'), el('button', { type: 'submit' }, 'Add'));
    f.addEventListener('submit', async (ev) => {
      ev.preventDefault(); clearErrors(f);
      const n = oname.value.trim();
      const body = { kind: okind.value, name: n, history: ohist.checked || undefined };
      if (okind.value === 'table') body.alias_schema = n.split('.').slice(0, -1).join('.');
      try { await api('POST', `/api/v1/shares/${encodeURIComponent(s.name)}/objects`, body); status(`Added ${n}`); redraw(); }
      catch (e) { placeError(e, [[/./, oname, oerr]], oerr); }
    });
    parts.push(f);
  }
  parts.push(el('h2', {}, 'Recipients'),
    recips.length ? table(['Recipient', 'Granted by', 'Since', ''], recips.map((r) => [
      el('td', {}, el('a', { href: `#/recipient/${encodeURIComponent(r.recipient)}` }, r.recipient)), r.created_by, fmtTime(Date.parse(r.created_at)),
      manage ? el('td', {}, el('button', { type: 'button', class: 'secondary', 'aria-label': `Remove recipient ${r.recipient}`, onclick: async () => {
        try { await api('DELETE', `/api/v1/shares/${encodeURIComponent(s.name)}/recipients/${encodeURIComponent(r.recipient)}`); status(`Removed ${r.recipient}`); redraw(); }
        catch (e) { status(e.message); }
      } }, 'Remove')) : '']), { label: 'Share recipients' }) : el('p', { class: 'muted' }, 'No recipients yet.'));
  if (manage) {
    const rname = el('input', { id: 'share-recipient-name', required: true });
    const rerr = fieldError(rname);
    const f = el('form', { class: 'inline', id: 'share-recipient-form', 'aria-label': 'Add a recipient' },
      el('div', { class: 'field' }, el('label', { for: 'share-recipient-name' }, 'Recipient name', rname), rerr), el('button', { type: 'submit' }, 'Add recipient'));
    f.addEventListener('submit', async (ev) => {
      ev.preventDefault(); clearErrors(f);
      try { await api('PUT', `/api/v1/shares/${encodeURIComponent(s.name)}/recipients/${encodeURIComponent(rname.value.trim())}`); status(`Added ${rname.value.trim()}`); redraw(); }
      catch (e) { placeError(e, [[/./, rname, rerr]], rerr); }
    });
    parts.push(f);
  }
  show(...parts);
}

// renderRecipient is a recipient's page: its tokens (never a token
// itself), its shares, and for its owner or an administrator token
// rotation (the new profile shown once) and revocation.
export async function renderRecipient(name) {
  let r;
  try { r = await api('GET', `/api/v1/recipients/${encodeURIComponent(name)}`); }
  catch (e) { show(el('h1', {}, `Recipient ${name}`), errorBox(e)); return; }
  const manage = mayManage(r.owner);
  const once = el('div', { id: 'profile-once' });
  const tokens = r.tokens || [];
  const parts = [el('h1', {}, `Recipient ${r.name}`),
    el('p', { class: 'muted' }, `Owner ${r.owner}${r.comment ? ` · ${r.comment}` : ''} · created ${fmtTime(Date.parse(r.created_at))}${r.expires_at ? ` · expires ${fmtTime(Date.parse(r.expires_at))}` : ''}`),
    el('p', {}, 'Shares: ', (r.shares || []).length ? (r.shares || []).map((s) => el('a', { href: `#/share/${encodeURIComponent(s)}`, class: 'tag' }, s)) : el('span', { class: 'muted' }, 'none')),
    el('h2', {}, 'Tokens'),
    tokens.length ? table(['Token id', 'Created', 'Expires', 'Revoked', 'Live'], tokens.map((t) => [
      el('td', {}, el('code', {}, t.id)), fmtTime(Date.parse(t.created_at)), t.expires_at ? fmtTime(Date.parse(t.expires_at)) : 'never',
      t.revoked_at ? fmtTime(Date.parse(t.revoked_at)) : '', el('td', { class: t.live ? 'ok' : 'muted' }, t.live ? 'live' : 'no')]), { label: 'Recipient tokens', class: 'tokens' })
      : el('p', { class: 'muted' }, 'No tokens.')];
  if (manage) {
    const grace = el('input', { id: 'rotate-grace', type: 'number', min: '0', value: '3600' });
    const err = fieldError(grace);
    const f = el('form', { class: 'inline', id: 'rotate-form', 'aria-label': 'Rotate the token' },
      el('div', { class: 'field' }, el('label', { for: 'rotate-grace' }, 'Old tokens keep working for (seconds)', grace), err),
      el('button', { type: 'submit' }, 'Rotate token'));
    f.addEventListener('submit', async (ev) => {
      ev.preventDefault(); clearErrors(f);
      try {
        const res = await api('POST', `/api/v1/recipients/${encodeURIComponent(r.name)}/rotate`, { grace_seconds: Number(grace.value || 0) });
        status(`Rotated the token of ${r.name}`);
        await renderRecipient(name);
        profileOnce(document.getElementById('profile-once'), r.name, res.profile);
      } catch (e) { placeError(e, [[/./, grace, err]], err); }
    });
    const revoke = el('button', { type: 'button', class: 'secondary', id: 'revoke-tokens', onclick: async () => {
      if (!window.confirm(`Revoke every token of ${r.name}? Its requests, credentials and pre-signed URLs stop working at once.`)) return;
      try { const x = await api('POST', `/api/v1/recipients/${encodeURIComponent(r.name)}/revoke`, {}); status(`Revoked ${(x.revoked || x.token_ids || []).length} token(s)`); renderRecipient(name); }
      catch (e) { status(e.message); }
    } }, 'Revoke all tokens');
    parts.push(el('h2', {}, 'Rotate or revoke'), f, el('p', {}, revoke));
  }
  parts.push(once);
  show(...parts);
}
