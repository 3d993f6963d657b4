// The console end to end, in headless Chromium (Debian's package, found on
// PATH) driven by puppeteer-core, against a real gateway on port 0 with real
// Postgres and the real trace pipeline. Each step works through the page as a
// person would; the API is called directly only to check what the page claims.
// Screenshots of every page go to test-artifacts/ (gitignored).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { stopTestPostgres } from './helpers/pg.js';
import { call, chatBody } from './helpers/management.js';

// Browser globals, used only inside page.evaluate callbacks (this program is compiled without the DOM lib).
declare const document: any, location: any, sessionStorage: any, localStorage: any, getComputedStyle: any, devicePixelRatio: number;
type HTMLElement = { innerText: string };
type HTMLTextAreaElement = { value: string };

const ARTIFACTS = new URL('../../test-artifacts/', import.meta.url).pathname;

function chromiumPath(): string {
  for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
    try {
      return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
    } catch { /* next */ }
  }
  // No skip: CI installs Debian's chromium (.ci/run), and a console nobody tested is not done.
  throw new Error('No Chromium on PATH: install it (apt-get install -y chromium) to run the console tests.');
}

let gw: TestGateway;
let browser: Browser;
let page: Page;
let admin: string;
let user: string;
let otherAdmin: string;
let vaultAdmin: string;
const pageErrors: string[] = [];

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  gw = await startGateway({
    realTraces: true,
    env: { SLUICE_PAYLOAD_SECRET: 'console-test-payload-secret-'.padEnd(40, 'x') },
    config: {
      auth: { cache_ttl_ms: 500 },
      organizations: [
        { id: 'demo', models: ['mock-echo'] },
        { id: 'other', models: ['mock-echo'] },
        // Stores payloads after DLP, for the payload archive; kept apart so the demo organisation's costs and counts stay as asserted.
        { id: 'vault', models: ['mock-echo'], store_payloads: true, policy: { dlp: { detectors: ['email'] }, shield: { builtin: false } } },
      ],
    },
  });
  admin = await gw.key('demo', 'admin');
  user = await gw.key('demo', 'user');
  otherAdmin = await gw.key('other', 'admin');
  vaultAdmin = await gw.key('vault', 'admin');
  browser = await puppeteer.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  // A CSP violation or any script error shows up here, and fails the last test.
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error' && !/status of 40[0-9]/.test(m.text())) pageErrors.push(m.text()); });
});

after(async () => {
  await browser?.close();
  await gw?.close();
  await stopTestPostgres();
});

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));
const shot = (name: string) => page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });
const text = (selector: string) => page.$eval(selector, (e) => (e as HTMLElement).innerText);
async function go(hash: string): Promise<void> {
  await page.evaluate((h) => { location.hash = h; }, hash);
}
async function signIn(key: string): Promise<void> {
  await page.goto(`${gw.url}/ui`, { waitUntil: 'networkidle0' });
  await page.evaluate(() => sessionStorage.clear());
  await page.reload({ waitUntil: 'networkidle0' });
  await page.type('input[name=api-key]', key);
  await page.click('button[type=submit]');
}

test('the page goes gzipped only where accept-encoding accepts gzip, as RFC 9110 reads it', async () => {
  const encodingFor = (acceptEncoding: string) => new Promise<string | undefined>((ok, fail) => {
    httpGet(`${gw.url}/ui`, { headers: { 'accept-encoding': acceptEncoding } }, (r) => { r.resume(); ok(r.headers['content-encoding']); }).on('error', fail);
  });
  // A /\bgzip\b/ test sent gzip to the first two, which refuse it, and not to the third.
  assert.equal(await encodingFor('gzip;q=0, identity'), undefined);
  assert.equal(await encodingFor('x-gzip-not'), undefined);
  assert.equal(await encodingFor('GZIP'), 'gzip');
  assert.equal(await encodingFor('br, gzip'), 'gzip');
  assert.equal(await encodingFor(''), undefined);
});

test('the page and its assets: strict CSP, no-sniff, no referrer, long-cached hashed assets, no traversal', async () => {
  const res = await fetch(`${gw.url}/ui`);
  assert.equal(res.status, 200);
  const csp = res.headers.get('content-security-policy') ?? '';
  for (const d of ["default-src 'self'", "script-src 'self'", "object-src 'none'", "frame-ancestors 'none'"]) assert.ok(csp.includes(d), d);
  assert.ok(!csp.includes('unsafe-inline') && !csp.includes('unsafe-eval'));
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
  const html = await res.text();
  assert.ok(!/<script>/.test(html) && !/<script(?![^>]*\bsrc=)/.test(html), 'no inline script');
  const js = /src="(\/ui\/assets\/main-[A-Z0-9]+\.js)"/.exec(html)?.[1];
  assert.ok(js, html);
  const asset = await fetch(gw.url + js);
  assert.equal(asset.status, 200);
  assert.match(asset.headers.get('content-type') ?? '', /javascript/);
  assert.match(asset.headers.get('cache-control') ?? '', /immutable/);
  assert.ok(asset.headers.get('etag'));
  // HEAD as GET, without the body.
  for (const path of ['/ui', js]) {
    const head = await fetch(gw.url + path, { method: 'HEAD' });
    assert.equal(head.status, 200, path);
    assert.equal(head.headers.get('content-type'), (path === js ? asset : res).headers.get('content-type'));
    assert.equal(await head.text(), '');
  }
  for (const path of ['/ui/assets/..%2f..%2fpackage.json', '/ui/assets/%2E%2E%2Fpackage.json', '/ui/assets/main.js', '/ui/../package.json', '/ui/assets/a/b']) {
    const r = await fetch(gw.url + path);
    assert.equal(r.status, 404, `${path}: ${await r.text()}`);
  }
});

test('a user-role key is refused at sign-in', async () => {
  await signIn(user);
  await page.waitForSelector('.error');
  assert.match(await text('.error'), /user key/);
  assert.equal(await page.evaluate(() => sessionStorage.length), 0, 'a refused key is not kept');
});

test('an admin key signs in; the key is kept in sessionStorage only', async () => {
  await signIn(admin);
  await page.waitForSelector('nav');
  await page.waitForSelector('.figures, .error');
  const stored = await page.evaluate(() => ({
    session: Object.entries(sessionStorage) as Array<[string, string]>,
    local: Object.entries(localStorage) as Array<[string, string]>,
    cookie: document.cookie as string,
  }));
  assert.deepEqual(stored.session, [['sluice.console.key', admin]], 'the key, and only the key, is in sessionStorage');
  assert.ok(!JSON.stringify(stored.local).includes('sk-sluice'), `never in localStorage: ${JSON.stringify(stored.local)}`);
  assert.equal(stored.cookie, '', 'no cookie readable by the page');
  assert.deepEqual(await browser.cookies(), [], 'no cookie at all, httpOnly included');
  await page.waitForSelector('.empty');
  assert.match(await text('.empty'), /Playground/, 'the empty overview says what to do');
  await shot('overview-empty');
});

let secret = '';
test('create a key and see its secret once', async () => {
  await go('/keys');
  await page.waitForSelector('input[name=name]');
  await page.type('input[name=name]', 'ci-bot');
  await page.click('form.card button[type=submit]');
  await page.waitForSelector('[data-testid=new-secret]');
  secret = await text('[data-testid=new-secret]');
  assert.match(secret, /^sk-sluice-/);
  // The list refreshes after the create: wait for the new row, not for any row (the existing keys are rows too).
  await page.waitForFunction(() => document.querySelector('table')?.textContent?.includes('ci-bot'));
  await shot('keys');
  // The new key works, and the secret is never shown again.
  assert.equal((await call(gw.url, secret, 'GET', '/v1/models')).status, 200);
  await page.click('button::-p-text(Done)');
  await go('/overview');
  await go('/keys');
  await page.waitForSelector('tr[data-key-id]');
  assert.ok(!(await page.content()).includes(secret));
  const listed = await call(gw.url, admin, 'GET', '/v1/api-keys');
  assert.ok(!JSON.stringify(listed.body).includes(secret));
});

let requestId = '';
test('send a streamed chat from the playground and see its trace with the right cost', async () => {
  await go('/playground');
  await page.waitForFunction(() => [...document.querySelectorAll('select[name=model] option')].some((o: any) => o.value === 'mock-echo') || document.querySelector('.error'));
  if (await page.$('.error')) assert.fail(await text('.error'));
  await page.select('select[name=model]', 'mock-echo');
  await page.$eval('textarea[name=message]', (e) => { (e as HTMLTextAreaElement).value = ''; });
  await page.type('textarea[name=message]', 'console says hello');
  await page.click('button[type=submit]');
  await page.waitForSelector('[data-testid=gateway] [data-field=request_id]');
  assert.match(await text('[data-testid=answer]'), /console says hello/);
  requestId = await text('[data-testid=gateway] [data-field=request_id]');
  const shownCost = await text('[data-testid=gateway] [data-field=cost_usd]');
  await shot('playground');

  // The trace the writer stored: its cost is the catalogue price (mock-echo: $1 / $2 per million) times the usage.
  let trace: any;
  for (let i = 0; i < 50 && !trace; i++) {
    const r = await call(gw.url, admin, 'GET', `/v1/traces/${requestId}`);
    if (r.status === 200) trace = r.body; else await new Promise((ok) => setTimeout(ok, 100));
  }
  assert.ok(trace, 'trace stored');
  assert.ok(trace.prompt_tokens > 0 && trace.completion_tokens > 0);
  assert.ok(Math.abs(trace.cost_usd - (trace.prompt_tokens * 1 + trace.completion_tokens * 2) / 1e6) < 1e-12);
  assert.equal(trace.streamed, true);

  await go('/traces');
  const row = `tr[data-request-id="${requestId}"]`;
  await page.waitForSelector(row, { timeout: 10_000 });
  const listedCost = await page.$eval(`${row} [data-testid=trace-cost]`, (e) => (e as HTMLElement).innerText);
  assert.equal(listedCost, shownCost, 'the list shows the cost the gateway block reported');
  await shot('traces');
  await page.click(`${row} a`);
  await page.waitForSelector('[data-field=cost_usd]');
  assert.equal(await text('[data-field=request_id]'), requestId);
  assert.equal(await text('[data-field=cost_usd]'), listedCost);
  assert.equal(await text('[data-field=status_code]'), '200');
  await shot('trace-detail');

  // A trace with retries behind it shows its attempts as JSON (they read "[object Object]").
  const retried = `req_console_retried_${Date.now()}`;
  const attempts = [{ provider: 'mock', model: 'mock-echo', status: 503, latency_ms: 7 }];
  gw.app.services.traces.record({
    ...trace, request_id: retried, organization_id: 'demo', endpoint: 'chat', error_code: null, disclosed_bytes: 0, dry_run: false,
    created_at: Date.now(), attempts, fallback_from: null,
  });
  await go(`/traces/${retried}`);
  await page.waitForSelector('[data-field=attempts]', { timeout: 10_000 });
  assert.deepEqual(JSON.parse(await text('[data-field=attempts]')), attempts);
  // `.` read as the list itself, shown as one trace; a malformed escape threw in the router and blanked the page.
  for (const bad of ['.', '%E0']) {
    await go(`/traces/${bad}`);
    await page.waitForSelector('[role=alert]', { timeout: 10_000 });
    assert.equal(await page.$('[data-field=request_id]'), null, bad);
  }

  // The filters narrow the list: nothing aborted among these traces (streamed=false matched nothing
  // until the model listings the playground makes were traced too).
  await go('/traces');
  await page.waitForSelector('select[name=aborted]');
  await page.select('select[name=aborted]', 'true');
  await page.click('form.filters button[type=submit]');
  await page.waitForSelector('.empty');
});

test('the overview shows the usage the API reports', async () => {
  await go('/overview');
  await page.waitForSelector('[data-testid=total-requests]');
  await page.waitForSelector('figure.chart canvas');
  const api = await call(gw.url, admin, 'GET', '/v1/usage?range=24h');
  assert.ok(api.body.totals.requests >= 1);
  assert.equal(await text('[data-testid=total-requests]'), api.body.totals.requests.toLocaleString('en'));
  await page.click('.seg button::-p-text(7d)');
  await page.waitForSelector('.seg button[aria-pressed=true]::-p-text(7d)');
  await shot('overview');
  // Nothing is cut off at 1280x800: every breakdown table fits its card, and no chart draws at the canvas's
  // left edge (a y axis narrower than its labels clips their first characters there).
  const overflowing = await page.$$eval('.breakdowns .scroll', (els) => els.filter((e: any) => e.scrollWidth > e.clientWidth).map((e: any) => e.closest('section').querySelector('h3').textContent));
  assert.deepEqual(overflowing, [], 'breakdown tables wider than their cards');
  const clipped = await page.$$eval('figure.chart', (figs) => figs.filter((f: any) => {
    const canvas = f.querySelector('canvas');
    const over = f.querySelector('.u-over');
    const rows = Math.round((parseFloat(over.style.top) + parseFloat(over.style.height)) * devicePixelRatio);
    const px = canvas.getContext('2d').getImageData(0, 0, Math.ceil(3 * devicePixelRatio), rows).data;
    for (let i = 3; i < px.length; i += 4) if (px[i] > 0) return true;
    return false;
  }).map((f: any) => f.querySelector('figcaption').textContent));
  assert.deepEqual(clipped, [], 'charts whose axis labels reach the left edge');
  await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
  await page.reload({ waitUntil: 'networkidle0' });
  await page.waitForSelector('figure.chart canvas');
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(bg, 'rgb(18, 19, 22)', 'dark theme from prefers-color-scheme');
  await shot('overview-dark');
  await page.click('header button[aria-label^="Switch to light"]');
  await page.waitForFunction(() => getComputedStyle(document.body).backgroundColor === 'rgb(247, 247, 248)');
  await page.click('header button[aria-label^="Switch to dark"]');
  await page.waitForFunction(() => getComputedStyle(document.body).backgroundColor === 'rgb(18, 19, 22)');
  await page.evaluate(() => localStorage.clear());
  await page.emulateMediaFeatures([]);
  await page.setViewport({ width: 390, height: 844, isMobile: true });
  // Turning on isMobile reloads the page.
  await page.waitForFunction(() => document.querySelectorAll('figure.chart canvas').length === 4);
  // On a phone every page's link is in view, none scrolled out of a sideways bar, and the page does not scroll sideways.
  // (A mobile viewport widens itself to fit content too wide for it, so the bound is the device's 390px, not innerWidth.)
  const outOfView = await page.$$eval('nav a', (links) => links.filter((a: any) => {
    const r = a.getBoundingClientRect();
    return r.left < 0 || r.right > 390 || document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2) !== a;
  }).map((a: any) => a.textContent));
  assert.deepEqual(outOfView, [], 'nav links out of view on a phone');
  assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), 390, 'no sideways scrolling on a phone');
  await shot('overview-phone');
  await page.setViewport({ width: 1280, height: 800 });
});

test("a key's own usage shows on the Keys page", async () => {
  const keyId = (await call(gw.url, admin, 'GET', '/v1/api-keys')).body.data.find((k: any) => k.name === 'ci-bot')?.id;
  assert.ok(keyId);
  const sent = await call(gw.url, secret, 'POST', '/v1/chat/completions', chatBody('mock-echo', 'usage of one key'));
  assert.equal(sent.status, 200, sent.text);
  let usage: any;
  for (let i = 0; i < 50; i++) {
    usage = (await call(gw.url, admin, 'GET', `/v1/usage?range=24h&key=${keyId}`)).body;
    if (usage.totals.requests > 0) break;
    await sleep(100);
  }
  assert.equal(usage.totals.requests, 1);
  assert.ok(usage.totals.cost_usd > 0 && usage.totals.cost_usd < 0.01);
  const org = (await call(gw.url, admin, 'GET', '/v1/usage?range=24h')).body;
  assert.ok(org.totals.requests > 1, 'the organisation has more traffic than this key, so the page must filter by key');

  await go('/keys');
  const row = `tr[data-key-id="${keyId}"]`;
  await page.waitForSelector(row);
  await page.click(`${row} button::-p-text(Show 24 h)`);
  await page.waitForSelector(`${row} [data-testid=key-usage]`);
  // mock-echo costs well under a cent, which the console shows to three significant figures.
  assert.equal(await text(`${row} [data-testid=key-usage]`), `1 req · $${usage.totals.cost_usd.toPrecision(3)}`);
  await shot('keys-usage');
});

test('create a route, dry-run it, disable it', async () => {
  await go('/routes');
  await page.waitForSelector('input[name=route-name]');
  // The API's own validation message comes back for a bad rule.
  await page.type('input[name=route-name]', 'echo-pin');
  await page.type('input[name=route-match]', 'my-alias');
  await page.click('form.card button[type=submit]');
  await page.waitForSelector('.error');
  assert.match(await text('.error'), /action/);
  await page.type('input[name=route-provider]', 'mock');
  await page.type('input[name=route-model]', 'mock-echo');
  await page.click('form.card button[type=submit]');
  await page.waitForSelector('tr[data-route=echo-pin]');

  await page.type('input[name=try-model]', 'my-alias');
  await page.click('button::-p-text(Resolve)');
  await page.waitForSelector('[data-testid=dry-run] [data-field=route_reason]');
  assert.equal(await text('[data-testid=dry-run] [data-field=route_reason]'), 'rule:echo-pin');
  await shot('routes');

  await page.click('tr[data-route=echo-pin] input[type=checkbox]');
  await page.waitForSelector('tr[data-route=echo-pin].disabled');
  const listed = await call(gw.url, admin, 'GET', '/v1/routes');
  assert.equal(listed.body.data.find((r: any) => r.name === 'echo-pin').enabled, false);
  await page.click('button::-p-text(Resolve)');
  await page.waitForSelector('form[aria-labelledby=tryit] .error');
  assert.match(await text('form[aria-labelledby=tryit] .error'), /model_not_found/);
});

test('editing a pin rule keeps its fallbacks, edits them in order, and delete asks first', async () => {
  const fallbacks = [{ provider: 'mock', model: 'mock-echo-b' }, { provider: 'other', model: 'model-c' }];
  const made = await call(gw.url, admin, 'POST', '/v1/routes', {
    name: 'with-fallbacks', priority: 5, action_kind: 'pin', match: { requested_model: 'fb-alias' },
    action: { provider: 'mock', model: 'mock-echo', fallbacks },
  });
  assert.equal(made.status, 201, made.text);
  const stored = async () => (await call(gw.url, admin, 'GET', `/v1/routes/${made.body.id}`)).body;
  const row = 'tr[data-route=with-fallbacks]';
  await go('/overview');
  await go('/routes');
  await page.waitForSelector(row);
  assert.match(await text(`${row} [data-testid=route-fallbacks]`), /^\s*then mock\/mock-echo-b, other\/model-c$/, 'the list shows the fallbacks in order');

  // Change only the priority: the fallbacks survive the PUT.
  await page.click(`${row} button::-p-text(Edit)`);
  await page.waitForSelector('input[name=fallback-provider-1]');
  assert.equal(await page.$eval('input[name=fallback-model-1]', (e) => (e as HTMLTextAreaElement).value), 'model-c', 'the form shows them');
  await page.locator('input[name=route-priority]').fill('7');
  await page.click('form.card button::-p-text(Save)');
  await page.waitForFunction((sel) => document.querySelector(`${sel} td`)?.textContent === '7', {}, row);
  let rule = await stored();
  assert.equal(rule.priority, 7);
  assert.deepEqual(rule.action, { provider: 'mock', model: 'mock-echo', fallbacks });

  // Edit the list: move the second up, add a third, then save.
  await page.click(`${row} button::-p-text(Edit)`);
  await page.waitForSelector('input[name=fallback-provider-1]');
  await page.click('button[aria-label="Move fallback 2 up"]');
  await page.click('button::-p-text(Add fallback)');
  await page.type('input[name=fallback-provider-2]', 'mock');
  await page.type('input[name=fallback-model-2]', 'mock-echo-d');
  await shot('routes-edit');
  await page.click('form.card button::-p-text(Save)');
  await page.waitForFunction((sel) => document.querySelector(`${sel} [data-testid=route-fallbacks]`)?.textContent?.includes('mock-echo-d'), {}, row);
  rule = await stored();
  assert.deepEqual(rule.action.fallbacks, [fallbacks[1], fallbacks[0], { provider: 'mock', model: 'mock-echo-d' }]);

  // Removing every fallback stores the plain pin.
  await page.click(`${row} button::-p-text(Edit)`);
  for (let i = 3; i >= 1; i--) await page.click(`button[aria-label="Remove fallback ${i}"]`);
  await page.click('form.card button::-p-text(Save)');
  await page.waitForFunction((sel) => document.querySelector(sel) && !document.querySelector(`${sel} [data-testid=route-fallbacks]`), {}, row);
  assert.deepEqual((await stored()).action, { provider: 'mock', model: 'mock-echo' });

  // Delete: cancelling keeps the rule, confirming removes it.
  await page.click(`${row} button.danger`);
  await page.waitForSelector('dialog[open]');
  await page.click('dialog button::-p-text(Cancel)');
  await page.waitForSelector('dialog:not([open])');
  assert.equal((await call(gw.url, admin, 'GET', `/v1/routes/${made.body.id}`)).status, 200, 'cancel keeps the rule');
  await page.click(`${row} button.danger`);
  await page.waitForSelector('dialog[open]');
  await page.click('dialog button.danger');
  await page.waitForFunction((sel) => !document.querySelector(sel), {}, row);
  assert.equal((await call(gw.url, admin, 'GET', `/v1/routes/${made.body.id}`)).status, 404);
});

test('revoke a key after confirming; the gateway then refuses it', async () => {
  await go('/keys');
  await page.waitForSelector('tr[data-key-id]');
  const id = await page.$$eval('tr[data-key-id]', (rows) => rows.find((r) => r.textContent?.includes('ci-bot'))?.getAttribute('data-key-id'));
  assert.ok(id);
  await page.click(`tr[data-key-id="${id}"] button.danger`);
  await page.waitForSelector('dialog[open]');
  await page.click('button::-p-text(Cancel)');
  assert.ok((await call(gw.url, admin, 'GET', '/v1/api-keys')).body.data.some((k: any) => k.id === id), 'cancel keeps the key');
  await page.click(`tr[data-key-id="${id}"] button.danger`);
  await page.waitForSelector('dialog[open]');
  await page.click('dialog button.danger');
  await page.waitForFunction((k) => !document.querySelector(`tr[data-key-id="${k}"]`), {}, id);
  let status = 200;
  for (let i = 0; i < 40 && status !== 401; i++) {
    status = (await call(gw.url, secret, 'GET', '/v1/models')).status;
    if (status !== 401) await new Promise((ok) => setTimeout(ok, 100));
  }
  assert.equal(status, 401);
});

test("another organisation's data never appears", async () => {
  const theirs = await call(gw.url, otherAdmin, 'POST', '/v1/chat/completions', { model: 'mock-echo', messages: [{ role: 'user', content: 'other org secret' }] });
  assert.equal(theirs.status, 200);
  const theirId = theirs.headers.get('x-request-id')!;
  const theirKeys = (await call(gw.url, otherAdmin, 'GET', '/v1/api-keys')).body.data.map((k: any) => k.id);
  await new Promise((ok) => setTimeout(ok, 600));
  await go('/traces');
  await page.waitForSelector(`tr[data-request-id="${requestId}"]`, { timeout: 10_000 });
  const html = await page.content();
  assert.ok(!html.includes(theirId), "the other organisation's trace is not listed");
  await go(`/traces/${theirId}`);
  await page.waitForSelector('.error');
  assert.match(await text('.error'), /404 not_found.*find the request in the Traces list/s, 'a missing trace says where to look');
  await go('/keys');
  await page.waitForSelector('tr[data-key-id]');
  const keysHtml = await page.content();
  for (const k of theirKeys) assert.ok(!keysHtml.includes(k), k);
  const usage = await call(gw.url, admin, 'GET', '/v1/usage?range=1h');
  assert.ok(!usage.body.breakdowns.key.some((k: any) => theirKeys.includes(k.key)));
});

test('a revoked or wrong key in the session is sent back to sign-in', async () => {
  await page.evaluate(() => sessionStorage.setItem('sluice.console.key', 'sk-sluice-not-a-key'));
  await go('/routes');
  await page.waitForSelector('input[name=api-key]');
  assert.equal(await page.evaluate(() => sessionStorage.length), 0, 'the refused key is forgotten');
  assert.match(await text('.error'), /Sign in again/);
  await shot('sign-in');
});

/** Presses Tab until the focused element matches `selector`, as a keyboard user would. */
async function tabTo(selector: string, max = 40): Promise<void> {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate((s) => !!document.activeElement?.matches(s), selector)) return;
  }
  assert.fail(`${max} presses of Tab never reached ${selector}`);
}

/** The focused element, and whether it draws a focus ring (an outline, or a box-shadow in its place). */
const focused = () => page.evaluate(() => {
  const e = document.activeElement;
  const s = getComputedStyle(e);
  const ring = (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== 'none';
  return { what: `${e.tagName.toLowerCase()}${e.name ? `[name=${e.name}]` : ''} ${(e.textContent ?? '').trim().slice(0, 30)}`, ring, visible: e.matches(':focus-visible') };
});

test('keyboard only: sign in, move between pages, create a key; every focused control shows a ring', async () => {
  await page.goto(`${gw.url}/ui`, { waitUntil: 'networkidle0' });
  await page.evaluate(() => sessionStorage.clear());
  await page.reload({ waitUntil: 'networkidle0' });
  await tabTo('input[name=api-key]');
  await page.keyboard.type(vaultAdmin);
  await page.keyboard.press('Enter');
  await page.waitForSelector('nav');

  await tabTo('nav a[href="#/traces"]');
  const link = await focused();
  assert.ok(link.visible && link.ring, `a nav link focused from the keyboard shows a ring: ${JSON.stringify(link)}`);
  await page.keyboard.press('Enter');
  await page.waitForSelector('nav a[href="#/traces"][aria-current=page]');
  await page.waitForSelector('form.filters');
  await tabTo('nav a[href="#/keys"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('nav a[href="#/keys"][aria-current=page]');
  await page.waitForSelector('tr[data-key-id]');

  // Walk the whole Keys page: no control may take focus without showing it.
  const seen: string[] = [];
  const ringless: string[] = [];
  for (let i = 0; i < 30; i++) {
    await page.keyboard.press('Tab');
    const f = await focused();
    // Past the last control focus leaves the page (the body); the walk is done.
    if (f.what.startsWith('body') || seen.includes(f.what)) break;
    seen.push(f.what);
    if (!f.ring) ringless.push(f.what);
  }
  assert.ok(seen.length > 8, `Tab reached the page's controls: ${seen.join(' | ')}`);
  assert.deepEqual(ringless, [], 'controls focused without a visible ring');

  // The primary action, by keyboard: name the key and press Enter.
  await tabTo('input[name=name]');
  await page.keyboard.type('keyboard-made');
  await page.keyboard.press('Enter');
  await page.waitForSelector('[data-testid=new-secret]');
  assert.match(await text('[data-testid=new-secret]'), /^sk-sluice-/);
  await page.waitForFunction(() => document.querySelector('table')?.textContent?.includes('keyboard-made'));
  const made = (await call(gw.url, vaultAdmin, 'GET', '/v1/api-keys')).body.data.find((k: any) => k.name === 'keyboard-made');
  assert.equal(made?.role, 'user', 'made in the signed-in organisation, with the default role');
  await tabTo('.secret .row button:last-of-type');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => !document.querySelector('[data-testid=new-secret]'));
});

test('an organisation with no routes or traces: the empty pages say what to do', async () => {
  await go('/routes');
  await page.waitForSelector('.empty');
  assert.match(await text('.empty'), /No routing rules.*Add a rule below/s);
  await shot('routes-empty');
  await go('/traces');
  await page.waitForSelector('.empty');
  assert.match(await text('.empty'), /No traces yet.*Try the Playground/s);
  await shot('traces-empty');
});

test('API failures say what to do next, and Retry recovers', async () => {
  const errorsBefore = pageErrors.length;
  let failing = true;
  // The page's own requests are answered here: a 503 from the gateway for the routes, no gateway at all for the keys.
  const onRequest = (req: any) => {
    const path = new URL(req.url()).pathname;
    if (failing && path === '/v1/routes') {
      return void req.respond({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: { code: 'auth_unavailable', type: 'gateway_error', message: 'API keys cannot be checked right now; retry shortly.', param: null } }) });
    }
    if (failing && path === '/v1/api-keys') return void req.abort('connectionrefused');
    void req.continue();
  };
  await page.setRequestInterception(true);
  page.on('request', onRequest);
  try {
    await go('/routes');
    await page.waitForSelector('.error');
    assert.match(await text('.error'), /503 auth_unavailable.*retry shortly.*Check that Postgres is up, then retry/s);
    await shot('routes-error');
    await go('/keys');
    await page.waitForSelector('.error');
    assert.match(await text('.error'), /Network error.*Check that sluice is running, then retry/s);
    await shot('keys-error');
    failing = false;
    await page.click('.error button::-p-text(Retry)');
    await page.waitForSelector('tr[data-key-id]');
    await go('/routes');
    await page.waitForSelector('.empty');
  } finally {
    page.off('request', onRequest);
    await page.setRequestInterception(false);
  }
  // Chromium logs each of those failed loads as a console error; they were this test's doing.
  const mine = pageErrors.splice(errorsBefore);
  pageErrors.push(...mine.filter((e) => !/status of 503|net::ERR_CONNECTION_REFUSED|net::ERR_FAILED/.test(e)));
});

test('a trace detail shows the payload archive: the request as sent upstream, after DLP, and the response', async () => {
  await go('/playground');
  await page.waitForFunction(() => [...document.querySelectorAll('select[name=model] option')].some((o: any) => o.value === 'mock-echo'));
  await page.select('select[name=model]', 'mock-echo');
  await page.$eval('textarea[name=message]', (e) => { (e as HTMLTextAreaElement).value = ''; });
  await page.type('textarea[name=message]', 'write to dan@example.com today');
  await page.click('button[type=submit]');
  await page.waitForSelector('[data-testid=gateway] [data-field=request_id]');
  assert.equal(await text('[data-testid=gateway] [data-field=redactions]'), '1');
  const id = await text('[data-testid=gateway] [data-field=request_id]');
  // Straight from the answer to its trace, as a person would, without waiting for the writer first.
  await page.click('[data-testid=gateway] [data-field=request_id] a');
  await page.waitForSelector('[data-testid=payload-request]', { timeout: 10_000 });
  assert.equal(await text('[data-field=request_id]'), id);
  assert.equal(await text('[data-field=redactions]'), '1');
  const sent = await text('[data-testid=payload-request]');
  const answer = await text('[data-testid=payload-response]');
  assert.match(sent, /"content": "write to \[EMAIL_1\] today"/, 'the request as sent upstream, after redaction');
  assert.match(answer, /write to \[EMAIL_1\] today/, 'the response');
  assert.ok(!(await page.content()).includes('dan@example.com'), 'what DLP removed is never shown');
  await shot('trace-payload');
});

test('the playground streams a Responses request and shows its text and the gateway block', async () => {
  await go('/playground');
  await page.waitForSelector('select[name=api]');
  await page.select('select[name=api]', 'responses');
  await page.waitForFunction(() => [...document.querySelectorAll('select[name=model] option')].some((o: any) => o.value === 'mock-echo'));
  await page.select('select[name=model]', 'mock-echo');
  assert.equal(await page.$eval('input[name=stream]', (e: any) => e.checked), true, 'streaming is on for Responses too');
  await page.$eval('textarea[name=message]', (e) => { (e as HTMLTextAreaElement).value = ''; });
  await page.type('textarea[name=message]', 'responses say hello');
  await page.click('button[type=submit]');
  await page.waitForSelector('[data-testid=gateway] [data-field=request_id]');
  assert.match(await text('[data-testid=answer]'), /responses say hello/);
  assert.equal(await text('[data-testid=gateway] [data-field=model]'), 'mock-echo');
  const id = await text('[data-testid=gateway] [data-field=request_id]');
  await shot('playground-responses');
  let trace: any;
  for (let i = 0; i < 50 && !trace; i++) {
    const r = await call(gw.url, vaultAdmin, 'GET', `/v1/traces/${id}`);
    if (r.status === 200) trace = r.body; else await sleep(100);
  }
  assert.ok(trace, 'trace stored');
  assert.equal(trace.endpoint, 'responses');
  assert.equal(trace.streamed, true, 'the page asked for a stream');
  assert.equal(await text('[data-testid=gateway] [data-field=cost_usd]'), `$${trace.cost_usd.toPrecision(3)}`);
});

test('no script errors and no CSP violations on any page', () => {
  assert.deepEqual(pageErrors, []);
});
