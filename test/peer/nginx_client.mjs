// SPDX-License-Identifier: BSL-1.0
// Peer test: the official MCP TypeScript SDK client reaches everything-server through
// nginx, configured exactly as docs/deployment.md shows (only ports and certificate paths
// replaced), over HTTPS.
//
//     node test/peer/nginx_client.mjs build/examples/everything-server
//
// Checks what a proxy can break: the session id, progress events arriving while the tool
// still runs (no buffering), a stream the server closes and the client resumes with
// Last-Event-ID, the 401 challenge and the metadata passing through, DELETE, and the Host
// check (the configuration names a loopback host, which a loopback listener accepts).
// Exit 77 (skipped) without the SDK or nginx, unless DROID_REQUIRE_PEERS=1.

import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { check, exitWithSummary, HttpServer, loadSdk, makeTestCertificates, missingPrerequisite, show, sleep, startWatchdog, step,
  textOf } from './harness.mjs';

const serverPath = process.argv[2];
if (!serverPath || process.argv.length > 3) {
  console.log('not ok - arguments: usage: node nginx_client.mjs <path to everything-server>');
  process.exit(1);
}
const nginx = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => spawnSync(p, ['-v']).status === 0);
if (!nginx) missingPrerequisite('nginx is not installed (apt-get install nginx)');

if (!process.env.DROID_NGINX_DIR) {
  // First run: a CA and a certificate for 127.0.0.1, then run again trusting the CA
  // (Node reads NODE_EXTRA_CA_CERTS only at start-up).
  const dir = mkdtempSync(join(tmpdir(), 'droid-nginx-peer-'));
  try {
    makeTestCertificates(dir, ['server']);
  } catch (error) {
    console.log(`not ok - the openssl command line makes a CA and a certificate: ${error.message}`);
    rmSync(dir, { recursive: true, force: true });
    process.exit(1);
  }
  const run = spawnSync(process.execPath, process.argv.slice(1), {
    stdio: 'inherit',
    env: { ...process.env, DROID_NGINX_DIR: dir, NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem') },
  });
  rmSync(dir, { recursive: true, force: true });
  process.exit(run.status ?? 1);
}

const dir = process.env.DROID_NGINX_DIR;
const [{ Client }, { StreamableHTTPClientTransport }] = await loadSdk(
  (specifier) => import(specifier),
  ['@modelcontextprotocol/sdk/client/index.js', '@modelcontextprotocol/sdk/client/streamableHttp.js']);

/// The code block that follows the line "`name`:" on `page`.
function block(page, name) {
  const lines = page.split('\n');
  const at = lines.findIndex((l) => l.trim() === `\`${name}\`:`);
  if (at < 0) throw new Error(`docs/deployment.md has no block named ${name}`);
  const open = lines.findIndex((l, i) => i > at && l.startsWith('```'));
  const close = lines.findIndex((l, i) => i > open && l.startsWith('```'));
  return lines.slice(open + 1, close).join('\n');
}

const freePort = () => new Promise((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address();
    probe.close(() => resolve(port));
  });
});
const [backendPort, proxyPort] = [await freePort(), await freePort()];

const page = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'deployment.md'), 'utf8');
const site = block(page, 'nginx-mcp.conf')
  .replace('server 127.0.0.1:8080;', `server 127.0.0.1:${backendPort};`)
  .replace('listen 443 ssl;', `listen 127.0.0.1:${proxyPort} ssl;`)
  .replace('/etc/mcp/fullchain.pem', join(dir, 'server.pem'))
  .replace('/etc/mcp/privkey.pem', join(dir, 'server.key'))
  .replaceAll('include mcp-proxy.conf;', `include ${join(dir, 'mcp-proxy.conf')};`);
writeFileSync(join(dir, 'mcp-proxy.conf'), block(page, 'mcp-proxy.conf'));
writeFileSync(join(dir, 'nginx-mcp.conf'), site);
for (const t of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, t));
// The main configuration a distribution's nginx.conf would be: one process, files here.
writeFileSync(join(dir, 'nginx.conf'), `daemon off;
master_process off;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${join(dir, 'body')};
  proxy_temp_path ${join(dir, 'proxy')};
  fastcgi_temp_path ${join(dir, 'fastcgi')};
  uwsgi_temp_path ${join(dir, 'uwsgi')};
  scgi_temp_path ${join(dir, 'scgi')};
  include ${join(dir, 'nginx-mcp.conf')};
}
`);

const server = new HttpServer(serverPath);
server.args = ['--http', `127.0.0.1:${backendPort}`, '--auth-issuer', 'https://auth.example.com',
  '--auth-audience', `https://127.0.0.1:${proxyPort}/mcp`, '--auth-jwks', 'https://auth.example.com/jwks.json'];
const open = new HttpServer(serverPath);
let proxy;
startWatchdog(() => {
  server.kill();
  open.kill();
  proxy?.kill('SIGKILL');
}, 90);
const finish = () => {
  server.kill();
  open.kill();
  proxy?.kill('SIGKILL');
  exitWithSummary();
};

const url = `https://127.0.0.1:${proxyPort}/mcp`;
if (!await step('nginx starts with the configuration docs/deployment.md shows', async () => {
  const test = spawnSync(nginx, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log'), '-t']);
  check(test.status === 0, `nginx -t: ${test.stderr}`);
  proxy = spawn(nginx, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')], { stdio: 'ignore' });
  // Polled: nginx announces nothing once it listens, so a request it answers is the only
  // sign (each try is a real connection; 5 s is the guard).
  for (let i = 0; i < 100; ++i) {
    try {
      await fetch(`https://127.0.0.1:${proxyPort}/`);
      return;
    } catch {
      await sleep(50);
    }
  }
  check(false, `nginx did not answer: ${readFileSync(join(dir, 'error.log'), 'utf8')}`);
})) finish();

await step('a protected server behind it: the 401 and its challenge pass through, and the metadata', async () => {
  await server.start();
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
  });
  check(r.status === 401, `status ${r.status}`);
  const challenge = r.headers.get('www-authenticate') ?? '';
  check(challenge.includes(`resource_metadata="https://127.0.0.1:${proxyPort}/.well-known/oauth-protected-resource/mcp"`),
    `challenge: ${challenge}`);
  const meta = await (await fetch(`https://127.0.0.1:${proxyPort}/.well-known/oauth-protected-resource/mcp`)).json();
  check(meta.resource === url, `metadata: ${show(meta)}`);
  // The same port serves the next step, without tokens: this server must be gone first.
  server.child.kill('SIGTERM');
  check(await server.waitForExit(5000), 'the protected server had not exited 5 s after SIGTERM');
});

let client;
let transport;
if (!await step('the SDK client connects through the proxy and gets its session', async () => {
  open.args = ['--http', `127.0.0.1:${backendPort}`];
  try {
    await open.start();
  } catch (e) {
    throw new Error(`${e.message} (its stderr is above)`);
  }
  client = new Client({ name: 'nginx-peer', version: '1.0.0' });
  transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  check(typeof transport.sessionId === 'string' && transport.sessionId.length > 0, `session ${show(transport.sessionId)}`);
  const { tools } = await client.listTools();
  check(tools.some((t) => t.name === 'count'), `tools: ${show(tools.map((t) => t.name))}`);
})) finish();

await step('progress arrives while the tool runs: the proxy does not buffer the event stream', async () => {
  const started = Date.now();
  const seen = [];
  const r = await client.callTool({ name: 'count', arguments: { steps: 3, interval_ms: 300 } }, undefined, {
    onprogress: (p) => seen.push(Date.now() - started),
  });
  const total = Date.now() - started;
  check(textOf(r) === 'counted to 3', `count answered ${show(r)}`);
  check(seen.length === 3, `progress at ${show(seen)} ms`);
  check(seen[0] < total - 400, `the first progress came at ${seen[0]} ms of ${total}: buffered`);
});

await step('a stream the server closes is resumed through the proxy with Last-Event-ID', async () => {
  const r = await client.callTool({ name: 'reconnect', arguments: {} });
  check(textOf(r) === 'answered after the stream was resumed', `reconnect answered ${show(r)}`);
});

await step('DELETE ends the session through the proxy', async () => {
  await transport.terminateSession();
  check(transport.sessionId === undefined, `session after DELETE: ${show(transport.sessionId)}`);
  await client.close();
});

finish();
