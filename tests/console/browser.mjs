// Chromium for the console's browser tests: one launch, one page set-up
// that records what must not happen, one sign-in. Firefox has its own
// (firefox.test.mjs, puppeteer-core).

import { chromium } from 'playwright-core';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

// launchChromium starts Debian's Chromium headless, with nothing that
// reaches the network on its own.
export function launchChromium() {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
}

// openPage opens a page in a new context (closed after test t) in which any
// dialog, page error or request to an origin other than base is recorded in
// problems. A confirm dialog whose message matches opts.accept is accepted
// instead (the console's own confirmations); opts.acceptDownloads allows
// downloads.
export async function openPage(browser, t, base, opts = {}) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: !!opts.acceptDownloads, timezoneId: 'UTC' });
  const page = await ctx.newPage();
  const problems = [];
  page.on('dialog', async (d) => {
    if (opts.accept && d.type() === 'confirm' && opts.accept.test(d.message())) { await d.accept(); return; }
    problems.push(`dialog fired: ${d.type()} ${d.message()}`); await d.dismiss();
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => { if (!r.url().startsWith(base) && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) problems.push(`external request: ${r.url()}`); });
  t.after(async () => { await ctx.close(); });
  return { ctx, page, problems };
}

// signIn signs in with a client id and secret on the console at base and
// waits for the signed-in principal's name; it returns the console page's
// response.
export async function signIn(page, base, id, secret) {
  const resp = await page.goto(base + '/console/');
  await page.getByLabel('Client id').fill(id);
  await page.getByLabel('Client secret').fill(secret);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('#who').filter({ hasText: /\S/ }).waitFor();
  return resp;
}
