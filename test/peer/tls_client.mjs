// SPDX-License-Identifier: BSL-1.0
// Peer test: the official MCP TypeScript SDK client drives everything-server over HTTPS.
//
//     node test/peer/tls_client.mjs build/examples/everything-server
//
// Makes a CA and a certificate for 127.0.0.1 with the openssl command line, then runs
// itself again with NODE_EXTRA_CA_CERTS naming the CA (Node reads it only at start-up),
// so the SDK's fetch verifies the server as it would a real deployment's. Checks: event
// streams with progress over TLS, a plain http:// request to the TLS port failing, a
// certificate renewed on disk and reloaded by SIGHUP (new connections see it, the
// connected client carries on), and a clean SIGTERM.
// Exit 77 (skipped) without the SDK, unless DROID_REQUIRE_PEERS=1.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';

import { check, exitWithSummary, HttpServer, loadSdk, makeTestCertificates, show, startWatchdog, step, textOf }
  from './harness.mjs';

const serverPath = process.argv[2];
if (!serverPath || process.argv.length > 4) {
  console.log('not ok - arguments: usage: node tls_client.mjs <path to everything-server>');
  process.exit(1);
}

if (!process.env.DROID_TLS_DIR) {
  // First run: make the CA and the certificates, then run again trusting the CA.
  const dir = mkdtempSync(join(tmpdir(), 'droid-tls-peer-'));
  try {
    makeTestCertificates(dir, ['server', 'renewed']);
    copyFileSync(join(dir, 'server.pem'), join(dir, 'live.pem'));
    copyFileSync(join(dir, 'server.key'), join(dir, 'live.key'));
  } catch (error) {
    console.log(`not ok - the openssl command line makes a CA and certificates: ${error.message}`);
    rmSync(dir, { recursive: true, force: true });
    process.exit(1);
  }
  const run = spawnSync(process.execPath, process.argv.slice(1), {
    stdio: 'inherit',
    env: { ...process.env, DROID_TLS_DIR: dir, NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem') },
  });
  rmSync(dir, { recursive: true, force: true });
  process.exit(run.status ?? 1);
}

const dir = process.env.DROID_TLS_DIR;
const [{ Client }, { StreamableHTTPClientTransport }] = await loadSdk(
  (specifier) => import(specifier),
  ['@modelcontextprotocol/sdk/client/index.js', '@modelcontextprotocol/sdk/client/streamableHttp.js']);

const server = new HttpServer(serverPath, ['--tls-cert', join(dir, 'live.pem'), '--tls-key', join(dir, 'live.key')]);
startWatchdog(() => server.kill());
const finish = () => {
  server.kill();
  exitWithSummary();
};

let url;
if (!await step('the server starts with TLS and prints an https:// URL', async () => {
  url = await server.start();
  check(url.startsWith('https://'), `the URL is ${show(url)}`);
})) finish();

/// The subject of the certificate a fresh TLS connection to the server is shown.
const servedName = () => new Promise((resolve, reject) => {
  const socket = tls.connect({ host: '127.0.0.1', port: Number(new URL(url).port), ALPNProtocols: ['http/1.1'] }, () => {
    const cn = socket.getPeerCertificate().subject?.CN;
    const alpn = socket.alpnProtocol;
    socket.end();
    resolve({ cn, alpn });
  });
  socket.once('error', reject);
});

let client;
await step('the SDK client connects over HTTPS (the CA verified), lists tools and calls echo', async () => {
  client = new Client({ name: 'tls-peer', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const { tools } = await client.listTools();
  check(tools.some((t) => t.name === 'echo'), `tools: ${show(tools.map((t) => t.name))}`);
  const r = await client.callTool({ name: 'echo', arguments: { text: 'over tls' } });
  check(textOf(r) === 'over tls', `echo answered ${show(r)}`);
});

await step('an event stream with progress notifications arrives over TLS', async () => {
  const seen = [];
  const r = await client.callTool({ name: 'count', arguments: { steps: 3 } }, undefined, {
    onprogress: (p) => seen.push(p.progress),
  });
  check(!r.isError, `count answered ${show(r)}`);
  check(seen.length === 3, `progress seen: ${show(seen)}`);
});

await step('ALPN selects http/1.1, and plain http:// to the TLS port fails', async () => {
  const { alpn } = await servedName();
  check(alpn === 'http/1.1', `ALPN selected ${show(alpn)}`);
  let failed = false;
  try {
    await fetch(url.replace('https://', 'http://'), { method: 'POST', body: '{}', signal: AbortSignal.timeout(5000) });
  } catch {
    failed = true;
  }
  check(failed, 'a plain HTTP request to the TLS port got an answer');
});

await step('a renewed certificate is served after SIGHUP, and the connected client carries on', async () => {
  check((await servedName()).cn === 'server', 'the first certificate is not the one served');
  copyFileSync(join(dir, 'renewed.pem'), join(dir, 'live.pem'));
  copyFileSync(join(dir, 'renewed.key'), join(dir, 'live.key'));
  // The server logs the reload once the renewed certificate is the one new connections get.
  const since = server.log.lines.length;
  server.child.kill('SIGHUP');
  const logged = await server.log.waitFor(/TLS certificate reloaded|TLS reload failed/, 10_000, since);
  check(logged?.includes('TLS certificate reloaded'), `after SIGHUP the server logged ${show(logged ?? 'nothing within 10 s')}`);
  const { cn } = await servedName();
  check(cn === 'renewed', `after SIGHUP the server shows ${show(cn)}`);
  const r = await client.callTool({ name: 'echo', arguments: { text: 'still here' } });
  check(textOf(r) === 'still here', `echo after the reload answered ${show(r)}`);
  const fresh = new Client({ name: 'tls-peer-2', version: '1.0.0' });
  await fresh.connect(new StreamableHTTPClientTransport(new URL(url)));
  check(textOf(await fresh.callTool({ name: 'echo', arguments: { text: 'new' } })) === 'new', 'a new client after the reload');
  await fresh.close();
});

await step('SIGTERM stops the TLS server cleanly', async () => {
  await client.close();
  await server.stopWithSigterm();
});

finish();
