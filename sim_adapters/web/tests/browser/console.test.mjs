// The web console in a real browser: Debian's Chromium, headless, driven over
// the DevTools protocol by puppeteer-core against a live `simsync-demo --web`.
// It proves what an operator sees and does: the page loads (from the host
// alone, over TLS), takes the control token from the URL's fragment and never
// puts it in a request, time advances, pause stops it, step N advances exactly
// N steps, a bad command is refused and changes nothing, the time scale changes
// the achieved real-time factor; a tab opened without the token watches and
// asks for it; and it keeps a screenshot.
//
// The demo serves TLS with a certificate made now by openssl (no key in the
// repository), and requires the token on loopback (its scenario's web:
// section); Chromium is told to trust that one key
// (--ignore-certificate-errors-spki-list with its SPKI hash), nothing else.
//
// Environment: SIMSYNC_DEMO (the simsync-demo binary), SIMSYNC_DEMO_SCENARIO (its
// scenario file, which this test extends), SIMSYNC_SCREENSHOT (where to write
// the PNG), CHROMIUM (default /usr/bin/chromium). Run by run_browser_test.sh;
// every wait is bounded.

import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import puppeteer from 'puppeteer-core';

const demoPath = process.env.SIMSYNC_DEMO;
const screenshotPath = process.env.SIMSYNC_SCREENSHOT;
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
const scenarioPath = process.env.SIMSYNC_DEMO_SCENARIO;
assert.ok(demoPath, 'SIMSYNC_DEMO must name the simsync-demo binary');
assert.ok(scenarioPath, 'SIMSYNC_DEMO_SCENARIO must name the demo\'s scenario file');

// A throwaway certificate for 127.0.0.1 and the base64 SHA-256 of its public
// key (what --ignore-certificate-errors-spki-list takes).
function makeCertificate(dir) {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-days', '2', '-subj', '/CN=simsync-web-test', '-addext', 'subjectAltName=IP:127.0.0.1',
    '-keyout', key, '-out', cert], { stdio: 'ignore' });
  const publicKey = execFileSync('openssl', ['x509', '-in', cert, '-pubkey', '-noout']);
  const der = execFileSync('openssl', ['pkey', '-pubin', '-outform', 'der'], { input: publicKey });
  const spki = execFileSync('openssl', ['dgst', '-sha256', '-binary'], { input: der }).toString('base64');
  return { cert, key, spki };
}
assert.ok(screenshotPath, 'SIMSYNC_SCREENSHOT must name the screenshot file');

// Starts the demo with the console on a free loopback port, over TLS, the
// token required; resolves with the process and the URL it prints.
function startDemo(tls, dir) {
  const scenario = join(dir, 'scenario.yaml');
  writeFileSync(scenario, readFileSync(scenarioPath, 'utf8') +
    `\nweb:\n  listen: 127.0.0.1:0\n  certificate: ${tls.cert}\n  private_key: ${tls.key}\n  require_token: true\n`);
  return new Promise((resolve, reject) => {
    const child = spawn(demoPath, ['--config', scenario], { stdio: ['pipe', 'pipe', 'inherit'] });
    let buffer = '';
    const timer = setTimeout(() => reject(new Error('simsync-demo printed no web console URL within 30 s')), 30000);
    child.on('error', (e) => reject(new Error('cannot start ' + demoPath + ': ' + e.message)));
    child.on('exit', (code) => reject(new Error('simsync-demo exited early with ' + code)));
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      buffer += chunk;
      const m = buffer.match(/^web console: (https:\/\/127\.0\.0\.1:\d+\/#token=[0-9a-f]{32})$/m);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1] });
      }
    });
  });
}

function waitForExit(child, ms) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    const timer = setTimeout(() => { child.kill('SIGKILL'); resolve(null); }, ms);
    child.on('exit', (code) => { clearTimeout(timer); resolve(code); });
  });
}

describe('WebConsole.Browser (simsync-demo --web, headless Chromium)', () => {
  let demo;
  let browser;
  let page;
  let profile;
  const requests = [];
  const sockets = []; // WebSocket URLs the page opened (DevTools' Network.webSocketCreated)
  const pageErrors = []; // uncaught exceptions and console errors (a CSP violation is one)

  // What the page shows, read from the DOM (data attributes carry exact values).
  const read = () => page.evaluate(() => ({
    frames: Number(document.body.dataset.frames),
    ns: BigInt(document.getElementById('sim-time').dataset.ns || '0').toString(),
    steps: Number(document.getElementById('steps').dataset.value || 'NaN'),
    state: document.getElementById('state').textContent,
    achieved: document.getElementById('rtf-achieved').dataset.value,
    target: document.getElementById('rtf-target').dataset.value,
    message: document.getElementById('message').textContent,
    messageOk: document.getElementById('message').dataset.ok,
    messageSeq: Number(document.getElementById('message').dataset.seq),
  }));
  const framesAtLeast = (n, timeout = 20000) =>
    page.waitForFunction((k) => Number(document.body.dataset.frames) >= k, { timeout, polling: 50 }, n);
  const replyAfter = async (seq, timeout = 10000) => {
    await page.waitForFunction((s) => Number(document.getElementById('message').dataset.seq) > s,
      { timeout, polling: 20 }, seq);
    return read();
  };
  const typeCommand = async (text) => {
    const before = await read();
    await page.click('#command', { clickCount: 3 });
    await page.type('#command', text);
    await page.keyboard.press('Enter');
    return replyAfter(before.messageSeq);
  };
  const click = async (selector) => {
    const before = await read();
    await page.click(selector);
    return replyAfter(before.messageSeq);
  };
  const setInput = (selector, value) => page.$eval(selector, (el, v) => { el.value = v; }, value);

  before(async () => {
    profile = mkdtempSync(join(tmpdir(), 'simsync-chromium-'));
    const tls = makeCertificate(profile);
    demo = await startDemo(tls, profile);
    browser = await puppeteer.launch({
      executablePath: chromiumPath,
      headless: true,
      userDataDir: join(profile, 'chromium'),
      args: [`--ignore-certificate-errors-spki-list=${tls.spki}`,
        '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
      timeout: 60000,
      protocolTimeout: 60000,
    });
    page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 1000 });
    page.on('request', (r) => requests.push(r.url()));
    const cdp = await page.createCDPSession();
    await cdp.send('Network.enable');
    cdp.on('Network.webSocketCreated', (e) => sockets.push(e.url));
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(m.text()); });
    await page.goto(demo.url, { waitUntil: 'load', timeout: 30000 });
  });

  after(async () => {
    if (browser) await browser.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    if (demo) {
      demo.child.stdin.end('quit\n');
      assert.equal(await waitForExit(demo.child, 30000), 0, 'simsync-demo exits 0 after quit');
    }
  });

  it('loads the page over TLS from the host alone and connects with the token from the fragment', async () => {
    await framesAtLeast(2);
    const title = await page.title();
    assert.match(title, /simsync-demo/);
    assert.equal(await page.$eval('#connection', (el) => el.textContent), 'connected');
    assert.equal(await page.$eval('#control', (el) => el.textContent), 'control');
    const origin = new URL(demo.url).origin;
    assert.match(origin, /^https:/);
    const foreign = requests.filter((u) => !u.startsWith(origin + '/') && !u.startsWith('data:'));
    assert.deepEqual(foreign, [], 'the page requests nothing from elsewhere');
    const token = new URL(demo.url).hash.slice('#token='.length);
    // What goes on the wire: a request's target (path and query), never its
    // fragment, which puppeteer reports with the URL.
    const targets = requests.map((u) => { const x = new URL(u); return x.pathname + x.search; });
    assert.ok(targets.includes('/'), 'the page itself was requested');
    assert.deepEqual(targets.filter((t) => t.includes(token)), [], 'no request carries the token');
    assert.ok(sockets.length >= 1, 'the page opened its WebSocket');
    assert.deepEqual(sockets.filter((u) => u !== origin.replace(/^https:/, 'wss:') + '/ws'), [],
      'the WebSocket URL is wss://HOST:PORT/ws, with no token');
    assert.equal(await page.evaluate(() => location.hash), '', 'the fragment is gone from the address bar');
    assert.equal(await page.evaluate(() => sessionStorage.getItem('simsync-console-token')), token);
    assert.equal(await page.$eval('#token-form', (el) => el.hidden), true);
    assert.equal(await page.$eval('#insecure', (el) => el.hidden), true, 'no plain-HTTP warning over TLS');
  });

  it('a tab without the token watches, asks for it, and controls once given it', async () => {
    const context = await browser.createBrowserContext(); // its own sessionStorage
    try {
      const other = await context.newPage();
      const bare = demo.url.slice(0, demo.url.indexOf('#'));
      await other.goto(bare, { waitUntil: 'load', timeout: 30000 });
      await other.waitForFunction(() => Number(document.body.dataset.frames) >= 2, { timeout: 20000, polling: 50 });
      assert.match(await other.$eval('#control', (el) => el.textContent), /^view only/);
      assert.equal(await other.$eval('#token-form', (el) => el.hidden), false);
      assert.equal(await other.$eval('#btn-pause', (el) => el.disabled), true);
      await other.type('#token-input', new URL(demo.url).hash.slice('#token='.length));
      await other.click('#btn-token');
      await other.waitForFunction(() => document.getElementById('control').textContent === 'control',
        { timeout: 20000, polling: 50 });
      assert.equal(await other.$eval('#btn-pause', (el) => el.disabled), false);
    } finally {
      await context.close();
    }
  });

  it('shows the balls and the accessors', async () => {
    await page.waitForFunction(() => document.getElementById('world').dataset.shapes === '3', { timeout: 20000 });
    const names = await page.$$eval('#accessors tbody tr td:first-child', (tds) => tds.map((td) => td.textContent));
    for (const n of ['lidar', 'camera', 'gps', 'controller', 'pacer', 'web_console']) assert.ok(names.includes(n), n);
    await page.waitForFunction(() => document.getElementById('timeline').style.height !== '', { timeout: 20000 });
  });

  it('shows simulated time advancing', async () => {
    const a = await read();
    await page.waitForFunction((ns) => BigInt(document.getElementById('sim-time').dataset.ns) > BigInt(ns) + 200000000n,
      { timeout: 20000, polling: 50 }, a.ns);
    assert.equal((await read()).state, 'running');
  });

  it('pause stops time', async () => {
    const r = await click('#btn-pause');
    assert.equal(r.messageOk, 'true', r.message);
    assert.match(r.message, /^paused at/);
    await page.waitForFunction(() => document.getElementById('state').textContent === 'paused', { timeout: 10000 });
    const p = await read();
    await framesAtLeast(p.frames + 8); // several frames later ...
    const q = await read();
    assert.equal(q.ns, p.ns, 'simulated time did not move while paused');
    assert.equal(q.steps, p.steps);
    assert.equal(q.state, 'paused');
  });

  it('step N advances exactly N steps', async () => {
    const s0 = (await read()).steps;
    await setInput('#step-count', '25');
    const r = await click('#btn-step');
    assert.equal(r.messageOk, 'true', r.message);
    await page.waitForFunction((s) => Number(document.getElementById('steps').dataset.value) === s + 25 &&
      document.getElementById('state').textContent === 'paused', { timeout: 20000, polling: 20 }, s0);
    const p = await read();
    await framesAtLeast(p.frames + 5);
    const q = await read();
    assert.equal(q.steps, s0 + 25, 'exactly 25 steps, then paused');
    assert.equal(BigInt(q.ns), BigInt(s0 + 25) * 1000000n, 'time is steps x 1 ms');
  });

  it('rejects a bad command with a message and changes nothing', async () => {
    const before = await read();
    for (const [text, expected] of [['step -3', /step: expected a whole number/], ['scale banana', /scale: expected a time scale/],
      ['until -1', /until: expected a simulated time/], ['revoke nobody', /no accessor is named 'nobody'/], ['frobnicate', /unknown command/]]) {
      const r = await typeCommand(text);
      assert.equal(r.messageOk, 'false', text);
      assert.match(r.message, expected);
      assert.equal(await page.$eval('#message', (el) => el.className), 'message error');
    }
    const p = await read();
    await framesAtLeast(p.frames + 3);
    const after = await read();
    assert.equal(after.steps, before.steps);
    assert.equal(after.state, 'paused');
    assert.equal(after.target, before.target, 'the time scale is unchanged');
  });

  it('time scale changes the achieved real-time factor', async () => {
    let r = await click('#btn-resume');
    assert.equal(r.messageOk, 'true', r.message);
    await setInput('#scale-value', '0.25');
    r = await click('#btn-scale');
    assert.equal(r.messageOk, 'true', r.message);
    await page.waitForFunction(() => document.getElementById('rtf-target').dataset.value === '0.25', { timeout: 10000 });
    // The pacer's achieved factor (over its 1 s window) follows the target down ...
    await page.waitForFunction(() => {
      const v = document.getElementById('rtf-achieved').dataset.value;
      return v !== '' && Number(v) < 0.4;
    }, { timeout: 30000, polling: 100 });
    const slow = Number((await read()).achieved);
    await setInput('#scale-value', '1');
    r = await click('#btn-scale');
    assert.equal(r.messageOk, 'true', r.message);
    // ... and back up: at least twice as fast as at 0.25 (a loaded machine may
    // fall short of 1.0, never of that).
    await page.waitForFunction((s) => Number(document.getElementById('rtf-achieved').dataset.value) > Math.max(2 * s, 0.5),
      { timeout: 30000, polling: 100 }, slow);
  });

  it('keeps a screenshot', async () => {
    // A few seconds of running, so that the plot and the timeline have content.
    const f = (await read()).frames;
    await framesAtLeast(f + 30, 30000);
    await page.screenshot({ path: screenshotPath, fullPage: true });
    assert.deepEqual(pageErrors, [], 'no script error, no blocked request');
  });
});
