// SPDX-License-Identifier: BSL-1.0
// Browser test of MCP Apps: a real Chromium (Debian's chromium-headless-shell) loads a
// host page built on the official MCP Apps host side (@modelcontextprotocol/ext-apps
// app-bridge) and the official MCP client (@modelcontextprotocol/client), both pinned in
// package-lock.json here and bundled for the browser by esbuild when the test starts.
// The page calls everything-server's weather_card over Streamable HTTP, reads the tool's
// view (ui://everything/weather-card), renders it in a sandboxed iframe, and hands it the
// tool's input and result through the bridge. The test then reads the view's DOM, clicks
// its button, and the view's tools/call (to the app-only weather_refresh) must go through
// the bridge to the server and back into the view's DOM. Against the same server run with
// --no-apps (no view, no extension) the page must show the tool's text instead.
//
//     node test/browser/apps.mjs build/examples/everything-server
//
// Runs on Node 22 (its WebSocket drives Chromium's DevTools protocol; under an older Node
// it runs itself again on test/conformance's Node 22). Exit 77 (skipped) when
// chromium-headless-shell, Node 22 or the packages (`npm ci --prefix test/browser`) are
// missing, unless DROID_REQUIRE_PEERS=1, which makes that a failure.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { check, exitWithSummary, HttpServer, missingPrerequisite, show, startWatchdog, step } from '../peer/harness.mjs';
import { openPage, requireBrowser, startChromium } from './chromium.mjs';

const serverPath = process.argv[2];
const here = fileURLToPath(new URL('.', import.meta.url));
if (!serverPath) {
  console.log('not ok - arguments: usage: node apps.mjs <path to everything-server>');
  process.exit(1);
}
requireBrowser();
let esbuild;
try {
  esbuild = await import('esbuild');
} catch (error) {
  missingPrerequisite(`esbuild is not installed in ${here}node_modules; run \`npm ci --prefix test/browser\` (${error.message.split('\n')[0]})`);
}

const pinned = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')).dependencies;
console.log(`# ext-apps ${pinned['@modelcontextprotocol/ext-apps']}, client ${pinned['@modelcontextprotocol/client']}, esbuild ${pinned.esbuild}, node ${process.version}`);

let bundle;
await step('the host page bundles (app-bridge and the MCP client, for the browser)', async () => {
  const r = await esbuild.build({
    entryPoints: [join(here, 'apps_host.js')], bundle: true, format: 'esm', platform: 'browser', write: false,
    logLevel: 'silent', absWorkingDir: here,
  });
  bundle = r.outputFiles[0].text;
  check(bundle.length > 0, 'esbuild produced nothing');
});

// The host page's server: the page and its bundle, on a loopback origin of its own.
const page = readFileSync(join(here, 'apps_host.html'), 'utf8');
const pageServer = createServer((req, res) => {
  if (req.url.startsWith('/host.js')) {
    res.writeHead(200, { 'content-type': 'text/javascript' });
    res.end(bundle);
  } else {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(page);
  }
});
const pagePort = await new Promise((resolve) => pageServer.listen(0, '127.0.0.1', () => resolve(pageServer.address().port)));

const withApps = new HttpServer(serverPath);
const withoutApps = new HttpServer(serverPath, ['--no-apps']);
let browser;
const profile = mkdtempSync(join(tmpdir(), 'droid-chromium-'));
const cleanUp = () => {
  withApps.kill();
  withoutApps.kill();
  try { browser?.kill('SIGKILL'); } catch { /* gone */ }
  pageServer.close();
  rmSync(profile, { recursive: true, force: true });
};
startWatchdog(cleanUp);
const finish = () => {
  cleanUp();
  exitWithSummary();
};

let appsUrl, plainUrl;
if (!await step('the servers start (with the app, and with --no-apps)', async () => {
  appsUrl = await withApps.start();
  plainUrl = await withoutApps.start();
})) finish();

let browserUrl;
if (!await step('Chromium starts headless with its DevTools endpoint', async () => {
  const started = startChromium(profile);
  browser = started.browser;
  browserUrl = started.url;
  await browserUrl;
})) finish();

/// Polls `read()` every 50 ms until it returns something truthy, for `ms` at most.
async function until(read, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (v) return v;
    if (Date.now() > end) throw new Error(`${what} did not happen within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/// Opens the host page against the MCP server at `mcpUrl`; resolves when the host is
/// done (rendered, fallback or failed) with the tab and what the host recorded.
async function host(mcpUrl) {
  const tab = await openPage(await browserUrl);
  await tab.navigate(`http://localhost:${pagePort}/?server=${encodeURIComponent(mcpUrl)}`);
  const state = await until(async () => {
    const h = await tab.evaluate('JSON.stringify(window.host ?? null)');
    const parsed = h ? JSON.parse(h) : null;
    return parsed && parsed.state !== 'starting' ? parsed : null;
  }, 15_000, 'the host page finishing');
  return { tab, state };
}

/// An execution context in the view's frame (an isolated world: its own globals, the
/// frame's DOM), for reading and clicking what the view shows.
async function viewContext(tab) {
  const tree = await tab.send('Page.getFrameTree');
  const child = tree.result?.frameTree?.childFrames?.[0]?.frame;
  if (!child) throw new Error(`the page has no frame: ${show(tree.result)}`);
  const world = await tab.send('Page.createIsolatedWorld', { frameId: child.id, worldName: 'droid-test' });
  const id = world.result?.executionContextId;
  if (!id) throw new Error(`no execution context in the view's frame: ${show(world)}`);
  return id;
}

let rendered;
await step('the host calls weather_card, reads its view and renders it in a sandboxed frame', async () => {
  rendered = await host(appsUrl);
  const h = rendered.state;
  check(h.state === 'rendered', `the host ended ${show(h.state)}: ${h.error ?? ''}`);
  check(h.events.includes('initialized'), `the view never sent ui/notifications/initialized: ${show(h.events)}`);
  check(h.viewMeta?.ui?.prefersBorder === true, `the view's _meta is ${show(h.viewMeta)}`);
  check(h.agentTools.includes('weather_card') && !h.agentTools.includes('weather_refresh'),
    `the agent's tools (app-only ones left out) were ${show(h.agentTools)}`);
  const sandbox = await rendered.tab.evaluate("document.getElementById('view').getAttribute('sandbox')");
  check(sandbox === 'allow-scripts', `the frame's sandbox is ${show(sandbox)}`);
});

await step("the view shows the tool's input and result, which the bridge sent it", async () => {
  const ctx = await viewContext(rendered.tab);
  const w = rendered.state.result.structuredContent;
  const want = `${w.degrees} °C, ${w.conditions}`;
  const shown = await until(async () => {
    const r = await rendered.tab.evaluate("document.getElementById('city').textContent + '|' + document.getElementById('reading').textContent", ctx);
    return r === `Paris|${want}` ? r : null;
  }, 5000, `the view showing Paris|${want}`);
  check(shown === `Paris|${want}`, `the view shows ${show(shown)}`);
});

await step("the view's button calls the app-only weather_refresh through the bridge, and the answer reaches its DOM", async () => {
  const ctx = await viewContext(rendered.tab);
  await rendered.tab.evaluate("document.getElementById('refresh').click(), true", ctx);
  const w = rendered.state.result.structuredContent;
  const want = `${w.degrees} °C, ${w.conditions} (refreshed)`;
  const shown = await until(async () => {
    const r = await rendered.tab.evaluate("document.getElementById('refreshed').textContent", ctx);
    return r ? r : null;
  }, 5000, "the view showing the refresh's answer");
  check(shown === want, `the view shows ${show(shown)}, want ${show(want)}`);
  rendered.tab.close();
});

await step('against a server without Apps, the host shows the text fallback and no frame', async () => {
  const { tab, state } = await host(plainUrl);
  check(state.state === 'fallback', `the host ended ${show(state.state)}: ${state.error ?? ''}`);
  const w = state.result.structuredContent;
  const text = await tab.evaluate("document.getElementById('fallback').textContent");
  check(text === `Paris: ${w.degrees} °C, ${w.conditions}`, `the page shows ${show(text)}`);
  check(await tab.evaluate("document.getElementById('view') === null"), 'a frame was rendered');
  tab.close();
});

finish();
