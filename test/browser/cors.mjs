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

import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { check, exitWithSummary, HttpServer, show, startWatchdog, step } from '../peer/harness.mjs';
import { openPage, requireBrowser, startChromium } from './chromium.mjs';

const serverPath = process.argv[2];
if (!serverPath) {
  console.log('not ok - arguments: usage: node cors.mjs <path to everything-server>');
  process.exit(1);
}
requireBrowser();

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
  const started = startChromium(profile);
  browser = started.browser;
  browserUrl = started.url;
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
