// SPDX-License-Identifier: BSL-1.0
// Peer test: the official MCP TypeScript client 2.x's Skills helpers (SkillsClient, from
// `@modelcontextprotocol/client/ext/skills`, pinned in package.json here) list, get, read
// and verify the two skills everything-server serves (examples/skills), in either era.
//
//     node test/peer-modern/skills.mjs <stdio|http> <2026-07-28|2025-11-25> build/examples/everything-server
//
// The helpers are the host side of the extension: they refuse an entry whose fields break
// the extension's rules, and a file whose size, SHA-256 digest or (for SKILL.md) parsed
// frontmatter differs from the entry. So every read that passes here is one a host would
// load. 2026-07-28: the client is pinned to it (no initialize) and each result must carry
// its cache hint; 2025-11-25: the plain initialize handshake, and the same skills.
//
// Prints one `ok - <step>` or `not ok - <step>: <why>` line per step and exits 1 if any
// step failed; exit 77 (skipped) when the client or Node >= 20 is missing, unless
// DROID_REQUIRE_PEERS=1, which makes that a failure. DROID_PEER_TRACE=1 prints every
// JSON-RPC message to stderr.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  check, exitWithSummary, HttpServer, installedVersion, missingPrerequisite, show, startWatchdog, step, tapWire,
  watchStderr,
} from '../peer/harness.mjs';

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const PACKAGE = '@modelcontextprotocol/client';
const here = dirname(fileURLToPath(import.meta.url));

const usage = `usage: node skills.mjs <stdio|http> <${MODERN}|${LEGACY}> <path to everything-server>`;
const [transportKind, era, serverPath, ...extra] = process.argv.slice(2);
if (!['stdio', 'http'].includes(transportKind) || ![MODERN, LEGACY].includes(era) || !serverPath || extra.length > 0) {
  console.log(`not ok - arguments: ${usage}`);
  process.exit(1);
}
const modern = era === MODERN;

if (Number(process.versions.node.split('.')[0]) < 20) {
  missingPrerequisite(`${PACKAGE} needs Node >= 20, this is ${process.version} (${process.execPath}); ` +
    'run `npm ci --prefix test/conformance` for the Node 22 the tests use, and reconfigure');
}
// Imported dynamically: a static import of a missing package throws before the
// skip-or-fail decision could be made.
let sdk, stdioSdk, skillsSdk;
try {
  sdk = await import(PACKAGE);
  stdioSdk = await import(`${PACKAGE}/stdio`);
  skillsSdk = await import(`${PACKAGE}/ext/skills`);
} catch (error) {
  if (error?.code === 'ERR_MODULE_NOT_FOUND') {
    missingPrerequisite(`${PACKAGE} is not installed in ${here}/node_modules; run \`npm ci --prefix test/peer-modern\` ` +
      `(${error.message.split('\n')[0]})`);
  }
  console.log(`not ok - import ${PACKAGE}: ${error?.stack ?? error}`);
  process.exit(1);
}
const { Client, StreamableHTTPClientTransport } = sdk;
const { StdioClientTransport } = stdioSdk;
const { SkillsClient, SKILLS_EXTENSION_ID, DIRECTORY_MIME_TYPE } = skillsSdk;

const pinned = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')).dependencies[PACKAGE];
const installed = installedVersion(PACKAGE, (name) => import.meta.resolve(name));
const httpServer = transportKind === 'http' ? new HttpServer(serverPath) : undefined;
console.log(`# ${PACKAGE} ${installed} (pinned ${pinned}), node ${process.version}`);
console.log(`# server: ${httpServer ? httpServer.commandLine : serverPath} over ${transportKind}, era ${era}`);
await step('the installed client is the pinned one', async () => {
  check(installed === pinned, `node_modules holds ${PACKAGE} ${installed}, package.json pins ${pinned}; run \`npm ci --prefix test/peer-modern\``);
});
if (httpServer) {
  const started = await step('the server starts and prints its URL', async () => {
    await httpServer.start();
  });
  if (!started) {
    httpServer.kill();
    exitWithSummary();
  }
}

const clientInfo = { name: `droid-peer-skills-${transportKind}-${era}`, version: '2.0.0' };
const client = new Client(clientInfo, modern
  ? { capabilities: {}, versionNegotiation: { mode: { pin: MODERN } } }
  // { pin: '2025-11-25' } is a TypeError in 2.4.0: 'legacy' is the initialize handshake.
  : { capabilities: {}, versionNegotiation: { mode: 'legacy' }, supportedProtocolVersions: [LEGACY] });
const errors = [];
client.onerror = (error) => errors.push(error?.message ?? String(error));
const transport = transportKind === 'stdio'
  ? new StdioClientTransport({ command: serverPath, args: [], stderr: 'pipe' })
  : new StreamableHTTPClientTransport(new URL(httpServer.url));
if (transport.stderr) watchStderr(transport.stderr);
const wire = tapWire(transport);
startWatchdog(() => {
  httpServer?.kill();
  if (transport.pid) try { process.kill(transport.pid, 'SIGKILL'); } catch { /* already gone */ }
});
function finish() {
  httpServer?.kill();
  exitWithSummary();
}

const connected = await step(`connect on ${era}`, async () => {
  await client.connect(transport);
  check(client.getNegotiatedProtocolVersion() === era, `negotiated ${show(client.getNegotiatedProtocolVersion())}`);
});
if (!connected) finish();

const skills = new SkillsClient(client);
const expected = ['skill://table-booking/SKILL.md', 'skill://weather-briefing/SKILL.md'];
let listed = [];

await step('the server declares the extension, with directoryRead', async () => {
  check(skills.supported, `SkillsClient.supported is false (${SKILLS_EXTENSION_ID} not seen in the capabilities)`);
  check(skills.directoryRead, 'SkillsClient.directoryRead is false');
});

await step('skills/list: both skills, every entry valid, with the cache hint in 2026-07-28', async () => {
  const listing = await skills.list();
  listed = listing.skills;
  check(sameList(listed.map((s) => s.uri), expected), `listed ${show(listed.map((s) => s.uri))}`);
  check(listing.invalid.length === 0, `invalid entries: ${show(listing.invalid)}`);
  for (const s of listed) {
    check(Array.isArray(s.resources) && s.resources.length >= 2, `${s.uri}: resources ${show(s.resources)}`);
    check(s.frontmatter.license === 'BSL-1.0', `${s.uri}: frontmatter ${show(s.frontmatter)}`);
  }
  if (modern) check(listing.ttlMs === 300000 && listing.cacheScope === 'public', `ttlMs ${listing.ttlMs}, cacheScope ${listing.cacheScope}`);
  else check(listing.ttlMs === undefined, `a 2025 result carried ttlMs ${listing.ttlMs}`);
});

await step('skills/get: each listed skill by its URI, the same entry', async () => {
  for (const s of listed) {
    const got = await skills.get(s.uri);
    check(JSON.stringify(got.skill) === JSON.stringify(s), `${s.uri}: get returned ${show(got.skill)}`);
  }
});

await step('read and verify every file of every skill (size, digest, and SKILL.md frontmatter)', async () => {
  let files = 0;
  for (const s of listed) {
    const main = await skills.read(s);
    check(main.verified, `${s.uri} was not verified`);
    check(main.frontmatter?.name === s.frontmatter.name, `${s.uri}: frontmatter ${show(main.frontmatter)}`);
    check(main.body?.includes('#'), `${s.uri}: body ${show(main.body)}`);
    const root = s.uri.slice(0, -'SKILL.md'.length);
    for (const r of s.resources.filter((r) => r.uri !== s.uri)) {
      const file = await skills.read(s, r.uri.slice(root.length));
      check(file.verified && file.bytes.length === r.size, `${r.uri}: verified ${file.verified}, ${file.bytes.length} bytes`);
      files += 1;
    }
  }
  check(files === 3, `${files} supporting files read`);
});

await step('resources/directory/read: a skill root lists its file and its two directories', async () => {
  const dir = await skills.readDirectory('skill://weather-briefing');
  const children = dir.resources.map((r) => `${r.uri} ${r.mimeType}`);
  check(sameList(children, [
    'skill://weather-briefing/SKILL.md text/markdown',
    `skill://weather-briefing/references ${DIRECTORY_MIME_TYPE}`,
    `skill://weather-briefing/templates ${DIRECTORY_MIME_TYPE}`,
  ]), `children ${show(children)}`);
  const sub = await skills.readDirectory('skill://weather-briefing/templates');
  check(sub.resources.length === 1 && sub.resources[0].uri === 'skill://weather-briefing/templates/briefing.md',
    `templates/ lists ${show(sub.resources)}`);
});

await step('skills/get of a skill the server does not serve is -32602', async () => {
  let code;
  try {
    await skills.get('skill://no-such-skill/SKILL.md');
  } catch (error) {
    code = error?.code;
  }
  check(code === -32602, `the error code was ${show(code)}`);
});

await step('2026-07-28 requests carried no initialize; 2025 had one', async () => {
  const initialize = wire.filter((w) => w.dir === 'out' && w.message.method === 'initialize');
  check(initialize.length === (modern ? 0 : 1), `${initialize.length} initialize requests went out`);
});

await step('close', async () => {
  await client.close();
});
if (httpServer) {
  await step('SIGTERM: the server exits with status 0', async () => {
    await httpServer.stopWithSigterm();
  });
}
await step('no protocol errors', async () => {
  const noise = (e) => /SSE stream disconnected: AbortError|This operation was aborted/.test(e);
  const real = errors.filter((e) => !noise(e));
  check(real.length === 0, `the client reported: ${show(real)}`);
});
finish();

function sameList(a, b) {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
