// SPDX-License-Identifier: BSL-1.0
// What the peer tests (stdio_client.mjs, http_client.mjs) share: the skip-or-fail decision
// when the SDK is missing, loading the SDK, the `ok` / `not ok` reporting, the check that
// the installed SDK is the pinned one, the watchdog and a tap on the JSON-RPC wire.
//
// This module must not import the SDK statically (see loadSdk), and it lives next to the
// scripts and package.json, so `here` and the SDK it resolves are theirs.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SKIP = 77;
const requirePeers = process.env.DROID_REQUIRE_PEERS === '1';
export const trace = process.env.DROID_PEER_TRACE === '1';
const here = dirname(fileURLToPath(import.meta.url));

export function missingPrerequisite(why) {
  if (requirePeers) {
    console.log(`not ok - prerequisites: ${why} (DROID_REQUIRE_PEERS=1, so this is a failure, not a skip)`);
    process.exit(1);
  }
  console.log(`# SKIP ${why}`);
  process.exit(SKIP);
}

/// Imports the SDK modules `specifiers`, in order, and returns their namespaces; skips (or,
/// with DROID_REQUIRE_PEERS=1, fails) the run when the SDK is not installed.
///
/// Imported dynamically: a static import of a missing package throws before any of the
/// script runs, and the skip-or-fail decision above could not be made. The caller passes
/// its own `(specifier) => import(specifier)`, so the specifiers resolve from, and Node's
/// "imported from" in the message names, the script rather than this module.
export async function loadSdk(importer, specifiers) {
  const modules = [];
  try {
    for (const specifier of specifiers) modules.push(await importer(specifier));
  } catch (error) {
    if (error?.code === 'ERR_MODULE_NOT_FOUND') {
      missingPrerequisite(`@modelcontextprotocol/sdk is not installed in ${here}/node_modules; ` +
        `run \`npm ci --prefix test/peer\` (${error.message.split('\n')[0]})`);
    }
    console.log(`not ok - import the SDK: ${error?.stack ?? error}`);
    process.exit(1);
  }
  return modules;
}

// ---------------------------------------------------------------------------------------
// Reporting

let failures = 0;
export function ok(step) {
  console.log(`ok - ${step}`);
}
export function notOk(step, why) {
  failures += 1;
  console.log(`not ok - ${step}: ${why}`);
}
export class Check extends Error {}
export function check(condition, why) {
  if (!condition) throw new Check(why);
}
export const show = (v) => JSON.stringify(v);
export function textOf(result) {
  return (result?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
}
export async function step(name, body) {
  try {
    await body();
    ok(name);
    return true;
  } catch (error) {
    notOk(name, error instanceof Check ? error.message : (error?.stack ?? String(error)));
    return false;
  }
}
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------
// The watchdog and the end of the run

let watchdog;

/// Never hang: whatever goes wrong, give up after 60 s; `kill` kills the server.
export function startWatchdog(kill) {
  watchdog = setTimeout(() => {
    console.log('not ok - watchdog: the run took longer than 60 s');
    kill();
    process.exit(1);
  }, 60_000);
  watchdog.unref();
}

/// Stops the watchdog, prints the summary and exits 1 if any step failed.
export function exitWithSummary() {
  clearTimeout(watchdog);
  console.log(failures === 0 ? '# all steps passed' : `# ${failures} step(s) failed`);
  process.exit(failures === 0 ? 0 : 1);
}

// ---------------------------------------------------------------------------------------
// The pinned SDK

/// Prints the versions in play and `server` (what is being tested), then checks the SDK.
export async function checkPinnedSdk(latestProtocolVersion, server) {
  // The version pinned in package.json must be the one installed; a stale node_modules
  // would otherwise test against some other SDK without saying so.
  const pinned = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')).dependencies['@modelcontextprotocol/sdk'];
  let installed = 'unknown';
  try {
    let dir = dirname(fileURLToPath(import.meta.resolve('@modelcontextprotocol/sdk/client/index.js')));
    for (;;) {
      try {
        const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
        if (pkg.name === '@modelcontextprotocol/sdk') { installed = pkg.version; break; }
      } catch { /* no package.json here: keep walking up */ }
      const parent = dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  } catch { /* import.meta.resolve unavailable: stays unknown */ }
  console.log(`# @modelcontextprotocol/sdk ${installed} (pinned ${pinned}), node ${process.version}, LATEST_PROTOCOL_VERSION ${latestProtocolVersion}`);
  console.log(`# server: ${server}`);
  await step('the installed SDK is the pinned one', async () => {
    check(installed === pinned, `node_modules holds @modelcontextprotocol/sdk ${installed}, package.json pins ${pinned}; ` +
      'run `npm ci --prefix test/peer`');
  });
}

// ---------------------------------------------------------------------------------------
// The wire

/// A tap on the wire, both ways; returns the list of `{ at, dir: 'in' | 'out', message }`
/// it fills. Protocol.connect() chains to an onmessage that is already set, and send() is
/// wrapped before connect() so the initialize request is seen too: call this before
/// client.connect(transport).
export function tapWire(transport) {
  const wire = [];
  transport.onmessage = (message) => {
    wire.push({ at: Date.now(), dir: 'in', message });
    if (trace) console.error(`# <- ${show(message)}`);
  };
  const originalSend = transport.send.bind(transport);
  transport.send = (message, options) => {
    wire.push({ at: Date.now(), dir: 'out', message });
    if (trace) console.error(`# -> ${show(message)}`);
    return originalSend(message, options);
  };
  return wire;
}
