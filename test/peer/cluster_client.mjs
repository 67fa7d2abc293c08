// SPDX-License-Identifier: BSL-1.0
// Peer test: the official MCP TypeScript SDK client (1.32) reaches three instances of
// everything-server through nginx, round robin with no stickiness, configured as
// docs/scale-out.md shows; the instances share their sessions through a real
// redis-server (docs/scale-out.md).
//
//     node test/peer/cluster_client.mjs build/examples/everything-server
//
// Checks: one session served by every instance (50 tool calls), 10 sampling exchanges
// whose answers reach whichever instance, a stream the server closes resumed through the
// balancer, the session's owner killed with SIGKILL (the session goes on elsewhere, a
// call that was running there ends with an error, never silence), DELETE, and that no
// key is left in Redis without an expiry. Exit 77 (skipped) without the SDK, nginx or
// redis-server, unless DROID_REQUIRE_PEERS=1.

import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { answerExchanges, check, exchangeCapabilities, exitWithSummary, HttpServer, loadSdk, missingPrerequisite, show,
  sleep, startWatchdog, step, textOf } from './harness.mjs';

const serverPath = process.argv[2];
if (!serverPath || process.argv.length > 3) {
  console.log('not ok - arguments: usage: node cluster_client.mjs <path to everything-server>');
  process.exit(1);
}
const nginx = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => spawnSync(p, ['-v']).status === 0);
if (!nginx) missingPrerequisite('nginx is not installed (apt-get install nginx)');
const redisServer = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((p) => spawnSync(p, ['--version']).status === 0);
if (!redisServer) missingPrerequisite('redis-server is not installed (apt-get install redis-server)');
const redisCli = redisServer.replace(/redis-server$/, 'redis-cli');

const [{ Client }, { StreamableHTTPClientTransport }, { CreateMessageRequestSchema, ListRootsRequestSchema, ElicitRequestSchema }] =
  await loadSdk((specifier) => import(specifier), ['@modelcontextprotocol/sdk/client/index.js',
    '@modelcontextprotocol/sdk/client/streamableHttp.js', '@modelcontextprotocol/sdk/types.js']);

const freePort = () => new Promise((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address();
    probe.close(() => resolve(port));
  });
});

/// The code block that follows the line "`name`:" on `page`.
function block(page, name) {
  const lines = page.split('\n');
  const at = lines.findIndex((l) => l.trim() === `\`${name}\`:`);
  if (at < 0) throw new Error(`docs/scale-out.md has no block named ${name}`);
  const open = lines.findIndex((l, i) => i > at && l.startsWith('```'));
  const close = lines.findIndex((l, i) => i > open && l.startsWith('```'));
  return lines.slice(open + 1, close).join('\n');
}

const dir = mkdtempSync(join(tmpdir(), 'droid-cluster-peer-'));
const redisPort = await freePort();
const proxyPort = await freePort();
const redisUrl = `redis://127.0.0.1:${redisPort}`;
const redisCall = (...args) => spawnSync(redisCli, ['-p', String(redisPort), '--raw', ...args], { encoding: 'utf8' }).stdout.trim();
writeFileSync(join(dir, 'state-secret'), 'a-secret-every-instance-shares-0123456789');

let redis;
let proxy;
const instances = [];
const stopAll = () => {
  for (const i of instances) i.kill();
  proxy?.kill('SIGKILL');
  redis?.kill('SIGKILL');
};
startWatchdog(stopAll, 100);
const finish = () => {
  stopAll();
  rmSync(dir, { recursive: true, force: true });
  exitWithSummary();
};

if (!await step('redis-server, three instances sharing it, and nginx in front (docs/scale-out.md)', async () => {
  redis = spawn(redisServer, ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  // Its own line says when it accepts connections: waited for, not slept on.
  await new Promise((resolve, reject) => {
    const lines = createInterface({ input: redis.stdout });
    lines.on('line', (line) => { if (line.includes('Ready to accept connections')) resolve(); });
    redis.once('exit', () => reject(new Error('redis-server exited before accepting connections')));
  });
  for (let n = 1; n <= 3; ++n) {
    const instance = new HttpServer(serverPath, ['--redis', redisUrl, '--instance-id', `i${n}`, '--threads', '2',
      '--state-secret-file', join(dir, 'state-secret')]);
    await instance.start();
    instance.name = `i${n}`;
    instance.port = Number(new URL(instance.url).port);
    instances.push(instance);
  }
  const page = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'scale-out.md'), 'utf8');
  let site = block(page, 'nginx-cluster.conf').replace('listen 127.0.0.1:8080;', `listen 127.0.0.1:${proxyPort};`);
  instances.forEach((instance, i) => { site = site.replace(`server 127.0.0.1:${8081 + i};`, `server 127.0.0.1:${instance.port};`); });
  check(instances.every((i) => site.includes(`:${i.port};`)), 'the upstream block names the three instances');
  writeFileSync(join(dir, 'site.conf'), site);
  for (const t of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, t));
  writeFileSync(join(dir, 'nginx.conf'), `daemon off;
master_process off;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path ${join(dir, 'body')};
  proxy_temp_path ${join(dir, 'proxy')};
  fastcgi_temp_path ${join(dir, 'fastcgi')};
  uwsgi_temp_path ${join(dir, 'uwsgi')};
  scgi_temp_path ${join(dir, 'scgi')};
  include ${join(dir, 'site.conf')};
}
`);
  const test = spawnSync(nginx, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log'), '-t']);
  check(test.status === 0, `nginx -t: ${test.stderr}`);
  proxy = spawn(nginx, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')], { stdio: 'ignore' });
  // Polled: nginx announces nothing once it listens (5 s guard).
  for (let i = 0; i < 100; ++i) {
    try {
      await fetch(`http://127.0.0.1:${proxyPort}/`);
      return;
    } catch {
      await sleep(50);
    }
  }
  check(false, `nginx did not answer: ${readFileSync(join(dir, 'error.log'), 'utf8')}`);
})) finish();

const url = new URL(`http://127.0.0.1:${proxyPort}/mcp`);
const client = new Client({ name: 'cluster-peer', version: '1.0.0' }, { capabilities: exchangeCapabilities });
const exchange = answerExchanges(client, { CreateMessageRequestSchema, ListRootsRequestSchema, ElicitRequestSchema });
const transport = new StreamableHTTPClientTransport(url);
const ownerOf = (sid) => redisCall('HGET', `droid:s:${sid}`, 'owner');

if (!await step('the SDK client connects through the balancer; the session is recorded in Redis', async () => {
  await client.connect(transport);
  check(typeof transport.sessionId === 'string', `session ${show(transport.sessionId)}`);
  check(/^i[123]$/.test(ownerOf(transport.sessionId)), `record owner ${show(ownerOf(transport.sessionId))}`);
  const ttl = Number(redisCall('PTTL', `droid:s:${transport.sessionId}`));
  check(ttl > 0, `the record's time to live is ${ttl} ms`);
})) finish();

await step('50 tool calls, round robin over three instances, all answered once and in order', async () => {
  for (let i = 0; i < 50; ++i) {
    const r = await client.callTool({ name: 'echo', arguments: { text: `call ${i}` } });
    check(textOf(r) === `call ${i}`, `call ${i} answered ${show(r)}`);
  }
});

await step('10 sampling exchanges: the question comes from the owner, the answer reaches it from any instance', async () => {
  exchange.answerSampling = (request) => ({ role: 'assistant', model: 'peer-model', content: { type: 'text', text: `summary ${exchange.sampled.length}` } });
  for (let i = 0; i < 10; ++i) {
    const r = await client.callTool({ name: 'summarize', arguments: { text: `text ${i}` } });
    check(textOf(r) === `summary from peer-model: summary ${i + 1}`, `exchange ${i} answered ${show(r)}`);
  }
  check(exchange.sampled.length === 10, `${exchange.sampled.length} questions asked`);
});

await step('a stream the server closes is resumed through the balancer (Last-Event-ID, any instance)', async () => {
  for (let i = 0; i < 3; ++i) {
    const r = await client.callTool({ name: 'reconnect', arguments: {} });
    check(textOf(r) === 'answered after the stream was resumed', `reconnect answered ${show(r)}`);
  }
});

await step('the owner is killed (SIGKILL): a call it was running ends with an error, and the session goes on elsewhere', async () => {
  const owner = ownerOf(transport.sessionId);
  const victim = instances.find((i) => i.name === owner);
  check(victim !== undefined, `owner ${show(owner)}`);
  const running = client.callTool({ name: 'sleep', arguments: { seconds: 30 } }).then(
    (r) => ({ result: r }), (error) => ({ error }));
  // The call is running once the owner has it; the sleep has 30 s, the kill comes first.
  await sleep(300);
  victim.child.kill('SIGKILL');
  check(await victim.waitForExit(5000), 'the owner did not die');
  const outcome = await running;
  const said = outcome.error ? String(outcome.error.message) : textOf(outcome.result);
  check(outcome.error !== undefined || outcome.result?.isError === true, `the running call ended with ${show(outcome)}`);
  check(/instance running this request stopped/.test(said), `the error says why: ${show(said)}`);
  // The next calls are served: the session is taken over where they land.
  for (let i = 0; i < 6; ++i) {
    const r = await client.callTool({ name: 'echo', arguments: { text: `after ${i}` } });
    check(textOf(r) === `after ${i}`, `call after the kill answered ${show(r)}`);
  }
  const next = ownerOf(transport.sessionId);
  check(next !== owner && /^i[123]$/.test(next), `the session's owner is now ${show(next)}`);
  exchange.answerSampling = () => ({ role: 'assistant', model: 'peer-model', content: { type: 'text', text: 'still here' } });
  const r = await client.callTool({ name: 'summarize', arguments: { text: 'after the takeover' } });
  check(textOf(r) === 'summary from peer-model: still here', `an exchange after the takeover answered ${show(r)}`);
});

await step('DELETE ends the session; what Redis keeps of it expires', async () => {
  const sid = transport.sessionId;
  await transport.terminateSession();
  await client.close();
  check(redisCall('EXISTS', `droid:s:${sid}`) === '0', 'the record is gone');
  const keys = redisCall('--scan', '--pattern', 'droid:*').split('\n').filter((k) => k.length > 0);
  const lasting = keys.filter((k) => Number(redisCall('PTTL', k)) < 0);
  check(lasting.length === 0, `keys without a time to live: ${show(lasting)}`);
});

finish();
