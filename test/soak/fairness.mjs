// SPDX-License-Identifier: BSL-1.0
// The fairness run (scripts/soak --fairness; docs/reliability.md#fairness-run): one client
// address runs every attack of docs/security.md's threat model at once against
// everything-server at its default limits, for minutes, while a second address makes
// ordinary calls and times them. Without authentication, so the tenant is the address:
// the attacker is 127.0.0.2, the user 127.0.0.3 (both loopback).
//
//   node test/soak/fairness.mjs EVERYTHING_SERVER [MINUTES]   # default 5
//
// The attacks, each kept at its limit for the whole run (refilled as the server ends
// what it may end):
// - sessions: initialize until 429 (max_sessions_per_tenant);
// - kept answers: a 1 MB echo answer in every one of those sessions, for resumption
//   (max_kept_bytes_per_tenant);
// - tasks: 2026-07-28 slow_compute tasks of an hour until refused (max_tasks_per_tenant);
// - hung-up calls: 30 s `sleep` calls whose client goes away at once, until 429
//   (max_requests_per_address: each counts until it ends);
// - slow bodies: 100 POSTs declaring 4 MB and sending a byte every 10 s (body_timeout);
// - connections: opened and left idle until the server refuses more
//   (max_connections_per_address; the idle timeout ends them, and they are opened again);
// - and requests it may not make, sent again and again on a keep-alive connection.
// The user: one session, `echo` calls one after another. The verdict: every one of its
// calls answered with its own text, and its p99 latency under attack within 3x its p99 on
// the idle server (measured first, 20 s). Prints a line a minute and the counts at the end;
// exits 1 on a failed verdict.

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';

const [serverPath, minutesArg] = process.argv.slice(2);
const minutes = Number(minutesArg ?? 5);
if (!serverPath || !(minutes > 0)) {
  console.error('usage: node test/soak/fairness.mjs EVERYTHING_SERVER [MINUTES]');
  process.exit(2);
}
const ATTACKER = '127.0.0.2';
const USER = '127.0.0.3';
const IDLE_MS = 20_000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const server = spawn(serverPath, ['--http', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
let serverLog = '';
server.stderr.setEncoding('utf8');
server.stderr.on('data', (d) => { serverLog = (serverLog + d).slice(-4000); });
const url = new URL(await new Promise((resolve, reject) => {
  let out = '';
  server.stdout.on('data', (d) => {
    out += d;
    if (out.includes('\n')) resolve(out.split('\n')[0].trim());
  });
  server.on('exit', () => reject(new Error(`the server exited before listening: ${serverLog}`)));
}));
const port = Number(url.port);
const rssMiB = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'))[1]) / 1024;

// ---------------------------------------------------------------------------------------
// HTTP, bound to a source address

const agents = { [ATTACKER]: new http.Agent({ keepAlive: true, maxSockets: 8 }), [USER]: new http.Agent({ keepAlive: true, maxSockets: 1 }) };

/// POSTs one JSON-RPC message from `from`; resolves with the status, headers and whole body.
/// `hangUp`: the connection is destroyed as soon as the head arrives (a client that leaves).
function post(from, message, headers = {}, { hangUp = false } = {}) {
  return new Promise((resolve) => {
    const req = http.request({
      host: '127.0.0.1', port, path: '/mcp', method: 'POST', localAddress: from,
      agent: hangUp ? false : agents[from],
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    }, (res) => {
      if (hangUp) {
        req.destroy();
        return resolve({ status: res.statusCode, headers: res.headers, body: '' });
      }
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
      res.on('error', (e) => resolve({ status: 0, error: e.message, body }));
    });
    req.on('error', (e) => resolve({ status: 0, error: e.message, body: '' }));
    req.setTimeout(60_000, () => req.destroy(new Error('timed out')));
    req.end(JSON.stringify(message));
  });
}

const initialize = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'fairness', version: '1' } } };
async function openSession(from) {
  const r = await post(from, initialize);
  if (r.status !== 200) return { status: r.status };
  const sid = r.headers['mcp-session-id'];
  const headers = { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
  await post(from, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  return { status: 200, headers };
}
const call = (id, name, args) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

// ---------------------------------------------------------------------------------------
// The user

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
let userFailures = 0, firstFailure = null;
async function userCalls(untilMs, samples) {
  const s = await openSession(USER);
  if (s.status !== 200) {
    ++userFailures;
    firstFailure ??= `initialize answered ${s.status}`;
    return;
  }
  for (let id = 1; Date.now() < untilMs; ++id) {
    const text = `user call ${id}`;
    const start = performance.now();
    const r = await post(USER, call(id, 'echo', { text }), s.headers);
    samples.push(performance.now() - start);
    if (r.status !== 200 || !r.body.includes(`"text":"${text}"`)) {
      ++userFailures;
      firstFailure ??= `call ${id}: status ${r.status} ${r.error ?? ''} ${r.body.slice(0, 200)}`;
    }
  }
}

// ---------------------------------------------------------------------------------------
// The attacker

const counts = { sessions: 0, sessionRefusals: 0, keptAnswers: 0, tasks: 0, taskRefusals: 0, hungUp: 0, callRefusals: 0,
  slowBodies: 0, slowBodiesCut: 0, connections: 0, connectionRefusals: 0, refusedAgain: 0 };
let attacking = true;
const attackerSessions = [];

async function sessionFlood() {
  while (attacking) {
    const s = await openSession(ATTACKER);
    if (s.status === 200) {
      ++counts.sessions;
      attackerSessions.push(s.headers);
      // 2. A large answer kept for resumption in each.
      const r = await post(ATTACKER, call(1, 'echo', { text: 'k'.repeat(1_000_000) }), s.headers);
      if (r.status === 200) ++counts.keptAnswers;
    } else {
      ++counts.sessionRefusals;
      await sleep(1000);
    }
  }
}

async function taskFlood() {
  for (let id = 1; attacking; ++id) {
    const message = { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 3600 },
      _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } } } };
    const r = await post(ATTACKER, message, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'slow_compute' });
    if (r.body.includes('"resultType":"task"')) ++counts.tasks;
    else {
      ++counts.taskRefusals;
      await sleep(1000);
    }
  }
}

async function hungUpCalls() {
  for (let id = 1; attacking; ++id) {
    const s = attackerSessions[id % Math.max(1, attackerSessions.length)];
    if (!s) { await sleep(100); continue; }
    const r = await post(ATTACKER, call(id, 'sleep', { seconds: 30 }), s, { hangUp: true });
    if (r.status === 200) ++counts.hungUp;
    else {
      ++counts.callRefusals;
      await sleep(200);
    }
  }
}

function slowBody() {
  if (!attacking) return;
  const socket = net.connect({ host: '127.0.0.1', port, localAddress: ATTACKER });
  let timer = null;
  socket.on('connect', () => {
    ++counts.slowBodies;
    socket.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
      'Accept: application/json, text/event-stream\r\nContent-Length: 4000000\r\n\r\n{');
    timer = setInterval(() => socket.write(' '), 10_000);
  });
  socket.on('data', () => {});
  socket.on('error', () => {});
  socket.on('close', () => {
    clearInterval(timer);
    ++counts.slowBodiesCut;
    setTimeout(slowBody, 100);
  });
}

const idleSockets = new Set();
async function connectionFlood() {
  while (attacking) {
    const refused = await new Promise((resolve) => {
      const socket = net.connect({ host: '127.0.0.1', port, localAddress: ATTACKER });
      let settled = false;
      const settle = (v) => { if (!settled) { settled = true; resolve(v); } };
      socket.on('connect', () => setTimeout(() => settle(false), 50));
      socket.on('error', () => settle(true));
      socket.on('close', () => { idleSockets.delete(socket); settle(true); });
      idleSockets.add(socket);
    });
    if (refused) {
      ++counts.connectionRefusals;
      await sleep(500);
    } else ++counts.connections;
  }
}

async function refusedAgain() {
  while (attacking) {
    const s = attackerSessions[0];
    if (s) {
      const r = await post(ATTACKER, call(7, 'echo', { text: 'again' }), s);
      if (r.status === 429) ++counts.refusedAgain;
    }
    await sleep(5);
  }
}

// ---------------------------------------------------------------------------------------
// The run

const idleSamples = [];
await userCalls(Date.now() + IDLE_MS, idleSamples);
idleSamples.sort((a, b) => a - b);
console.log(`fairness: idle, ${idleSamples.length} calls: p50 ${percentile(idleSamples, 0.5).toFixed(2)} ms, ` +
  `p99 ${percentile(idleSamples, 0.99).toFixed(2)} ms, RSS ${rssMiB().toFixed(0)} MiB`);

const attacks = [sessionFlood(), taskFlood(), hungUpCalls(), connectionFlood(), refusedAgain()];
for (let i = 0; i < 100; ++i) slowBody();
// The attacks reach their limits first (the session flood is the slowest: a 1 MB answer each).
await sleep(30_000);
const endAt = Date.now() + minutes * 60_000;
const attackedSamples = [];
const user = userCalls(endAt, attackedSamples);
const ticker = setInterval(() => {
  const sorted = [...attackedSamples].sort((a, b) => a - b);
  console.log(`fairness: ${sorted.length} user calls, p99 ${sorted.length ? percentile(sorted, 0.99).toFixed(2) : '-'} ms, ` +
    `failures ${userFailures}; attacker ${JSON.stringify(counts)}; RSS ${rssMiB().toFixed(0)} MiB`);
}, 60_000);
await user;
clearInterval(ticker);
attacking = false;
for (const s of idleSockets) s.destroy();
server.kill('SIGKILL');

attackedSamples.sort((a, b) => a - b);
const idleP99 = percentile(idleSamples, 0.99), attackedP99 = percentile(attackedSamples, 0.99);
console.log(`fairness: attacked, ${attackedSamples.length} calls: p50 ${percentile(attackedSamples, 0.5).toFixed(2)} ms, ` +
  `p99 ${attackedP99.toFixed(2)} ms (${(attackedP99 / idleP99).toFixed(2)}x idle); failures ${userFailures}` +
  (firstFailure ? ` (first: ${firstFailure})` : ''));
console.log(`fairness: the attacker ${JSON.stringify(counts)}`);
const ok = userFailures === 0 && attackedP99 <= 3 * idleP99;
console.log(ok ? 'fairness: ok' : 'fairness: FAILED');
process.exit(ok ? 0 : 1);
