// SPDX-License-Identifier: BSL-1.0
// Slow clients (docs/reliability.md#slow-clients-under-slowhttptest): slowhttptest attacks
// everything-server over HTTP with slow headers (slowloris), slow bodies and slow reads, one
// attack after the other, while a normal client keeps calling the `echo` tool and timing each
// answer. Each attack must leave the normal client served promptly, the server's memory
// bounded, and its header and body deadlines (B6, B7) closing the slow connections on time;
// once an attack ends, the server's descriptors must be back where they started.
//
//   node test/slow/slow_clients.mjs build/examples/everything-server
//
// The server runs with its default limits (droid::http::options): the point is that the
// defaults hold. slowhttptest missing is a skip (exit 77), a failure with
// DROID_REQUIRE_PEERS=1, as in CI. Plain node:http, no SDK: every call is timed alone, and
// half of them open a new connection, which must get through the same accept queue as the
// attack's.

import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { check, exitWithSummary, missingPrerequisite, sleep, step, within } from '../peer/harness.mjs';

const serverPath = process.argv[2];
if (!serverPath) {
  console.log('not ok - usage: slow_clients.mjs EVERYTHING_SERVER');
  process.exit(1);
}
if (spawnSync('slowhttptest', ['-h']).error) {
  missingPrerequisite('slowhttptest is not installed (Debian: apt-get install slowhttptest; scripts/install-deps does)');
}

// The server's defaults (include/droid/adapters/primary/transport/http/http.hpp).
const HEADER_TIMEOUT_S = 10;
const BODY_GRACE_S = 5;
const MIN_BODY_RATE = 240;
// The deadline sweep runs every tenth of the shortest timeout, at most 0.5 s, so a deadline
// fires up to that late (docs/http.md#limits).
const SWEEP_S = 0.5;

// The bounds, and why. Measured on the shared 2-core machine this was written on, under
// ASan + UBSan with a load average of 14 from other builds: the normal client's echo takes
// 10 to 30 ms at the median before and during the attacks, and the slowest call of an attack
// took up to 230 ms (with another test suite running beside it). A server whose threads the
// slow connections tied up would answer at the header or body deadline (10 s, 5 s) or not
// at all.
// - LATENCY_P50_MS: the typical call, five times the median seen.
// - LATENCY_MAX_MS: the slowest call of an attack (with a hundred samples, p99 is next to
//   the slowest). Four times the slowest seen, for the scheduler of a loaded machine, and
//   still a fifth of the shortest deadline a stalled server would make a call wait for.
const LATENCY_P50_MS = 150;
const LATENCY_MAX_MS = 1000;
// - RSS growth during one attack. A slow connection holds a 16 KiB read buffer, its header
//   block so far (16 KiB at most) and the body read so far (a few hundred bytes here): 200
//   of them come to under 7 MiB, and RSS grew by 6 to 7 MiB. SLOW_CONNECTION_RSS_MIB: four
//   times that, for allocator slack and ASan's redzones. A slow reader holds its 256 KiB
//   answer up to four times while it is written (the stored event, the sink's copy, the
//   framed event, the chunk being written): 50 of them come to 50 MiB, and RSS grew by up
//   to 55 MiB. SLOW_READER_RSS_MIB: that, the quarantine below and room for the allocator.
//   Either bound fails a server that buffers a stream without bound for a slow reader, or
//   that fills the declared 1,000,000 bytes of each of 200 slow bodies. ASan's quarantine
//   (freed memory held back to catch use after free, 256 MiB by default) would count as
//   growth too, so the server runs with a 16 MiB one (ASAN_OPTIONS, ignored without ASan).
// - RSS_AFTER_MIB: what the three attacks may leave behind, all told: memory the allocator
//   keeps for reuse, and the quarantine. A server that kept something of every slow
//   connection would grow with each attack.
const SLOW_CONNECTION_RSS_MIB = 32;
const SLOW_READER_RSS_MIB = 96;
const RSS_AFTER_MIB = 64;
// - FD_SLACK: descriptors the server may hold beyond its idle count after an attack: the
//   normal client's keep-alive connection and one it may be closing.
const FD_SLACK = 3;
// - CLOSE_SLACK_S: how late (CSV seconds are whole) slowhttptest may see the server close
//   its last slow connection, after the deadline and the sweep.
const CLOSE_SLACK_S = 2;

const ATTACK_CONNECTIONS = 200;  // well below max_connections (10,240)
const READ_CONNECTIONS = 50;     // each holds a 256 KiB response: fewer
const BIG_TEXT_BYTES = 256 * 1024;

// ---------------------------------------------------------------------------------------
// The server and what /proc says about it

const asan = [process.env.ASAN_OPTIONS, 'quarantine_size_mb=16'].filter(Boolean).join(':');
const server = spawn(serverPath, ['--http', '127.0.0.1:0'],
  { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ASAN_OPTIONS: asan } });
let serverExited = null;
const serverExit = new Promise((resolve) => server.on('exit', (code, signal) => {
  serverExited = { code, signal };
  resolve();
}));
let serverErr = '';
server.stderr.on('data', (d) => { serverErr += d; });
const watchdog = setTimeout(() => {
  console.log('not ok - watchdog: the run took longer than 170 s');
  server.kill('SIGKILL');
  process.exit(1);
}, 170_000);
watchdog.unref();

const url = await new Promise((resolve, reject) => {
  let out = '';
  server.stdout.on('data', (d) => {
    out += d;
    const nl = out.indexOf('\n');
    if (nl >= 0) resolve(out.slice(0, nl).trim());
  });
  server.on('exit', () => reject(new Error(`the server exited before listening: ${serverErr}`)));
});
const port = Number(new URL(url).port);
console.log(`# server: ${serverPath} at ${url}`);

function rssMiB() {
  const status = readFileSync(`/proc/${server.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)[1]) / 1024;
}
function fds() {
  return readdirSync(`/proc/${server.pid}/fd`).length;
}

// ---------------------------------------------------------------------------------------
// The normal client

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });

/// POSTs `message` to /mcp; resolves to {status, headers, body, ms}. `fresh`: on a new
/// connection (closed after the answer) rather than the keep-alive one.
function post(message, { sid, fresh = false, timeoutMs = 15_000 } = {}) {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify(message);
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'content-length': Buffer.byteLength(body),
    };
    if (sid) headers['mcp-session-id'] = sid;
    const started = performance.now();
    const req = http.request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', headers,
      agent: fresh ? false : keepAlive }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers,
        body: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - started }));
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

/// The JSON-RPC messages of an event-stream body, with their event ids.
function events(body) {
  const out = [];
  for (const block of body.split('\n\n')) {
    const id = /^id: (.*)$/m.exec(block)?.[1];
    const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
    out.push({ id, data: data ? JSON.parse(data) : null });
  }
  return out;
}

let nextId = 1;
async function initialize() {
  const r = await post({ jsonrpc: '2.0', id: nextId++, method: 'initialize', params: {
    protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'slow-clients', version: '1' } } });
  check(r.status === 200, `initialize: HTTP ${r.status} ${r.body}`);
  const sid = r.headers['mcp-session-id'];
  check(sid, 'initialize: no Mcp-Session-Id');
  const n = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { sid });
  check(n.status === 202, `notifications/initialized: HTTP ${n.status}`);
  return sid;
}

/// One timed `tools/call echo`; throws unless the answer is the text sent.
async function echo(sid, text, fresh) {
  const id = nextId++;
  const r = await post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text } } },
    { sid, fresh });
  check(r.status === 200, `echo: HTTP ${r.status} ${r.body.slice(0, 200)}`);
  const answer = events(r.body).find((e) => e.data?.id === id);
  check(answer?.data?.result?.content?.[0]?.text === text, `echo: unexpected answer ${r.body.slice(0, 200)}`);
  return { ms: r.ms, body: r.body };
}

// ---------------------------------------------------------------------------------------
// An attack

const work = mkdtempSync(join(tmpdir(), 'droid-slow-'));

/// slowhttptest's CSV (written with -g -o): one row per second, the counts of its
/// connections in each state and whether its probe request got an answer in time.
function readCsv(prefix) {
  const rows = readFileSync(`${prefix}.csv`, 'utf8').trim().split('\n').map((l) => l.split(','));
  const head = rows.shift().map((h) => h.trim().toLowerCase());
  const col = (name) => head.findIndex((h) => h.startsWith(name));
  const [s, closed, pending, connected, available] = ['second', 'closed', 'pending', 'connected', 'service']
    .map(col);
  check(s >= 0 && closed >= 0 && connected >= 0 && available >= 0, `unexpected CSV header: ${head}`);
  return rows.map((r) => ({ second: Number(r[s]), closed: Number(r[closed]), pending: Number(r[pending]),
    connected: Number(r[connected]), available: Number(r[available]) }));
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * (sorted.length - 1)))];
}

/// Runs slowhttptest with `args` for `seconds` while the normal client calls echo every
/// 100 ms; returns what was seen. `connections`: how many slow connections it opens.
async function attack(name, args, seconds, connections, sid) {
  const baseFds = fds();
  const baseRss = rssMiB();
  const prefix = join(work, name);
  const argv = [...args, '-c', String(connections), '-l', String(seconds), '-p', '3', '-g', '-o', prefix, '-u', url];
  const tool = spawn('slowhttptest', argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  let toolOut = '';
  tool.stdout.on('data', (d) => { toolOut += d; });
  tool.stderr.on('data', (d) => { toolOut += d; });
  const toolDone = new Promise((resolve) => tool.on('exit', (code) => resolve(code)));
  const started = performance.now();

  let peakRss = baseRss, peakFds = baseFds, running = true;
  const sampler = (async () => {
    while (running) {
      peakRss = Math.max(peakRss, rssMiB());
      peakFds = Math.max(peakFds, fds());
      await sleep(200);
    }
  })();

  const samples = [];
  const failures = [];
  let fresh = false;
  while (running) {
    const open = fds() - baseFds;  // the attack's connections the server holds right now
    try {
      const { ms } = await echo(sid, `during ${name} ${samples.length}`, fresh);
      samples.push({ at: (performance.now() - started) / 1000, ms, open, fresh });
    } catch (error) {
      failures.push(`${((performance.now() - started) / 1000).toFixed(1)} s: ${error.message}`);
    }
    fresh = !fresh;
    await sleep(100);
    running = await Promise.race([toolDone.then(() => false), sleep(0).then(() => true)]);
  }
  const code = await toolDone;
  await sampler;

  // Once slowhttptest has closed its sockets, the server must close its ends. Polled
  // (/proc/PID/fd, for at most 5 s): the server says nothing as it closes them.
  let afterFds = fds();
  for (let waited = 0; afterFds > baseFds + FD_SLACK && waited < 5000; waited += 100) {
    await sleep(100);
    afterFds = fds();
  }
  return { name, code, toolOut, csv: readCsv(prefix), samples, failures, baseFds, peakFds, afterFds,
    baseRss, peakRss, afterRss: rssMiB(), connections };
}

/// The checks every attack shares; `deadline`: the seconds after which the server must have
/// closed a slow connection (null: it must not, they are being served); `rssGrowthMiB`: how
/// much the server's RSS may grow meanwhile.
async function judge(a, deadline, rssGrowthMiB) {
  const ms = a.samples.map((s) => s.ms).sort((x, y) => x - y);
  const underAttack = a.samples.filter((s) => s.open >= a.connections / 2);
  const p50 = percentile(ms, 0.5), p99 = percentile(ms, 0.99);
  const maxConnected = Math.max(...a.csv.map((r) => r.connected));
  const lastOpen = a.csv.filter((r) => r.connected > 0).at(-1)?.second ?? 0;
  // The second slowhttptest's last connection was established: from then on every one it
  // opened is either connected or closed.
  const everOpened = Math.max(...a.csv.map((r) => r.connected + r.closed));
  const allOpenAt = a.csv.find((r) => r.connected + r.closed >= everOpened)?.second ?? 0;
  const closedBy = deadline === null ? null : Math.ceil(allOpenAt + deadline + SWEEP_S + CLOSE_SLACK_S);
  console.log(`# ${a.name}: ${a.samples.length} echo calls (${underAttack.length} while >= ${a.connections / 2} slow ` +
    `connections were open), p50 ${p50?.toFixed(1)} ms, p90 ${percentile(ms, 0.9)?.toFixed(1)} ms, ` +
    `p99 ${p99?.toFixed(1)} ms, max ${ms.at(-1)?.toFixed(1)} ms`);
  console.log(`# ${a.name}: slowhttptest connected at most ${maxConnected} of ${a.connections}, ` +
    `all open at second ${allOpenAt}, the last one open at second ${lastOpen}, service available in ${a.csv.filter((r) => r.available).length} ` +
    `of ${a.csv.length} seconds; server fds ${a.baseFds} -> peak ${a.peakFds} -> ${a.afterFds}, ` +
    `RSS ${a.baseRss.toFixed(1)} -> peak ${a.peakRss.toFixed(1)} -> ${a.afterRss.toFixed(1)} MiB`);

  await step(`${a.name}: slowhttptest ran and opened its connections`, async () => {
    check(a.code === 0, `slowhttptest exited with ${a.code}: ${a.toolOut.slice(-500)}`);
    check(maxConnected >= 0.9 * a.connections, `only ${maxConnected} of ${a.connections} connections were open at once`);
    check(a.peakFds >= a.baseFds + 0.9 * a.connections,
      `the server held at most ${a.peakFds - a.baseFds} connections beyond its own ${a.baseFds} descriptors`);
  });
  await step(`${a.name}: every echo call of the normal client was answered`, async () => {
    check(a.failures.length === 0, a.failures.join('; '));
    check(underAttack.length >= 20, `only ${underAttack.length} calls were made while the attack was at full strength`);
  });
  await step(`${a.name}: the normal client's latency stays within p50 ${LATENCY_P50_MS} ms and p99 ${LATENCY_MAX_MS} ms`,
    async () => {
      check(p50 <= LATENCY_P50_MS, `p50 ${p50.toFixed(1)} ms`);
      check(p99 <= LATENCY_MAX_MS, `p99 ${p99.toFixed(1)} ms; slowest: ${JSON.stringify(a.samples
        .sort((x, y) => y.ms - x.ms).slice(0, 3).map((s) => ({ ...s, ms: Math.round(s.ms) })))}`);
    });
  await step(`${a.name}: slowhttptest's probe was served every second`, async () => {
    const down = a.csv.filter((r) => !r.available).map((r) => r.second);
    check(down.length === 0, `service unavailable at seconds ${down.join(', ')}`);
  });
  if (deadline !== null) {
    await step(`${a.name}: the server closed every slow connection by second ${closedBy}`, async () => {
      check(lastOpen <= closedBy, `connections were still open at second ${lastOpen}`);
    });
  }
  await step(`${a.name}: memory stays bounded (RSS growth under ${rssGrowthMiB} MiB)`, async () => {
    check(a.peakRss - a.baseRss <= rssGrowthMiB, `RSS grew by ${(a.peakRss - a.baseRss).toFixed(1)} MiB`);
  });
  await step(`${a.name}: afterwards the server holds no connection of the attack`, async () => {
    check(a.afterFds <= a.baseFds + FD_SLACK, `${a.afterFds} descriptors open, ${a.baseFds} before`);
  });
}

// ---------------------------------------------------------------------------------------
// The run

const sid = await initialize();
const warm = [];
for (let i = 0; i < 20; i += 1) warm.push((await echo(sid, `warm ${i}`, i % 2 === 1)).ms);
warm.sort((x, y) => x - y);
console.log(`# before any attack: echo p50 ${percentile(warm, 0.5).toFixed(1)} ms, max ${warm.at(-1).toFixed(1)} ms; ` +
  `RSS ${rssMiB().toFixed(1)} MiB, ${fds()} fds`);
const startRss = rssMiB();

// Slowloris: header blocks that never end, a header line every 2 s. The header deadline
// (10 s from the first byte) closes each one; 200 connections at 100/s open within 2 s.
await judge(await attack('slow headers', ['-H', '-r', '100', '-i', '2', '-x', '20'], 16, ATTACK_CONNECTIONS, sid),
  HEADER_TIMEOUT_S, SLOW_CONNECTION_RSS_MIB);

// Slow bodies: POSTs declaring 1,000,000 bytes (under max_body) and sending one `&name=value`
// of at most 22 bytes a second. Each byte buys 1/240 s beyond the 5 s grace (B7), so a body
// arriving at r B/s is cut at grace / (1 - r / 240) s, 5.5 s at most here, whatever
// Content-Length it declared (a deadline computed from the declared length would be 70 min).
await judge(await attack('slow bodies', ['-B', '-r', '100', '-i', '1', '-x', '10', '-s', '1000000', '-t', 'POST',
  '-f', 'application/json', '-m', 'application/json, text/event-stream'], 14, ATTACK_CONNECTIONS, sid),
  BODY_GRACE_S / (1 - 22 / MIN_BODY_RATE), SLOW_CONNECTION_RSS_MIB);

// Slow reads: GETs that resume a finished stream whose answer is 256 KiB (a large response
// no client can fetch faster than it reads), read 32 bytes a second through a receive
// window of at most 1 KiB. slowhttptest has no option for arbitrary headers: its Cookie
// value is written verbatim, so CRLFs in it add the session, Last-Event-ID and Accept
// headers. These connections are being served, so nothing closes them: the checks are that
// everyone else is served meanwhile and that the server lets go of them when they go.
const big = await echo(sid, 'x'.repeat(BIG_TEXT_BYTES), false);
const priming = events(big.body).find((e) => e.id)?.id;
await step('the large answer has a priming event to resume from', async () => {
  check(priming, `no event id in ${big.body.slice(0, 200)}`);
});
const inject = `slow=1\r\nMcp-Session-Id: ${sid}\r\nLast-Event-ID: ${priming}\r\nAccept: text/event-stream`;
await judge(await attack('slow reads', ['-X', '-r', '50', '-k', '1', '-n', '1', '-z', '32', '-w', '512', '-y', '1024',
  '-j', inject], 16, READ_CONNECTIONS, sid), null, SLOW_READER_RSS_MIB);

await step(`memory after the three attacks is within ${RSS_AFTER_MIB} MiB of the start`, async () => {
  const now = rssMiB();
  check(now - startRss <= RSS_AFTER_MIB, `RSS ${startRss.toFixed(1)} -> ${now.toFixed(1)} MiB`);
});

// Stopping: SIGTERM drains and returns 0; under ASan an exit with a leak or an error would not.
await step('the server stops cleanly on SIGTERM (exit 0, so no sanitizer report)', async () => {
  check(serverExited === null, `the server exited during the run: ${JSON.stringify(serverExited)}`);
  keepAlive.destroy();
  server.kill('SIGTERM');
  await within(serverExit, 10_000);
  check(serverExited?.code === 0, `exit ${JSON.stringify(serverExited)}; stderr: ${serverErr.slice(-2000)}`);
});
rmSync(work, { recursive: true, force: true });
if (serverExited === null) server.kill('SIGKILL');
exitWithSummary();
