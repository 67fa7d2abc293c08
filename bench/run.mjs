// SPDX-License-Identifier: BSL-1.0
// The bench suite's driver: protocol_droid's example server side by side with the official
// TypeScript SDK and with nginx returning a fixed answer (the floor), in one run on one
// machine. scripts/bench installs what is missing, builds build-bench and runs this; see
// docs/benchmarks.md for what each row means.
//
//   node bench/run.mjs [--build-dir build-bench] [--quick] [--duration S] [--repeats N]
//                      [--sections http,stdio,exchange,callgrind,memory,micro] [--sessions N]
//                      [--settle S] [--servers droid-stateless,droid-2026,...] [--connections 64]
//                      [--report-only]
//
// Every server's answer is checked before it is timed (docs/conventions.md#benchmarks); a
// wrong answer removes the server from the run instead of timing it. Inputs are generated
// from fixed patterns, never downloaded; the HTTPS rows' certificate is made at the start
// of each run, in <build-dir>/bench-results/tls/. Results:
// <build-dir>/bench-results/{results.md,results.json,throughput.png}. Node builtins only.
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');

// ---- options -------------------------------------------------------------------------
function parseArgs(argv) {
  const o = { buildDir: 'build-bench', quick: false, duration: null, repeats: null, sections: null, sessions: null };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--quick') o.quick = true;
    else if (a === '--build-dir') o.buildDir = next();
    else if (a === '--duration') o.duration = Number(next());
    else if (a === '--repeats') o.repeats = Number(next());
    else if (a === '--sections') o.sections = next().split(',');
    else if (a === '--servers') o.servers = next().split(',');
    else if (a === '--sessions') o.sessions = Number(next());
    else if (a === '--connections') o.connections = next().split(',').map(Number);
    else if (a === '--report-only') o.reportOnly = true;
    else if (a === '--settle') o.settle = Number(next());
    else if (a === '--help' || a === '-h') {
      console.log('usage: node bench/run.mjs [--build-dir DIR] [--quick] [--duration S] [--repeats N] ' +
        '[--sections http,stdio,exchange,callgrind,memory,micro] [--sessions N] [--settle S] [--servers a,b] ' +
        '[--connections 1,16,64] [--report-only]');
      process.exit(0);
    } else throw new Error(`unknown option ${a}`);
  }
  o.settle ??= 0;
  o.duration ??= o.quick ? 2 : 5;
  o.repeats ??= o.quick ? 1 : 3;
  o.sections ??= ['http', 'stdio', 'exchange', 'callgrind', 'memory', 'micro'];
  // --servers: only these rows of the HTTP and callgrind sections (by name; nginx's
  // callgrind row is `nginx`), for re-running a comparison; the other sections ignore it.
  o.servers ??= null;
  o.sessions ??= o.quick ? 1000 : 10000;
  // --connections: only these widths of the HTTP section (the headline reads 64 and 16).
  o.connections ??= [1, 16, 64];
  o.stdioMessages = { droid: o.quick ? 20000 : 200000, ts: o.quick ? 2000 : 20000 };
  o.microMinTime = o.quick ? 0.05 : 0.3;
  return o;
}

const opt = parseArgs(process.argv.slice(2));
const buildDir = path.resolve(root, opt.buildDir);
const outDir = path.join(buildDir, 'bench-results');
fs.mkdirSync(outDir, { recursive: true });
const everythingServer = path.join(buildDir, 'examples', 'everything-server');
const tsServer = path.join(here, 'peer', 'ts_server.mjs');
const callLua = path.join(here, 'http', 'call.lua');
// The session rows' client (bench/http/loadgen.cpp): wrk's shape with a session header of
// each connection's own, which wrk's Lua cannot give.
const loadgen = path.join(buildDir, 'bench', 'loadgen');
const call2026Lua = path.join(here, 'http', 'call2026.lua');
// The HTTPS rows' certificate and key, made by makeCertificate() at the start of a run.
const tlsDir = path.join(outDir, 'tls');
const tlsCert = path.join(tlsDir, 'cert.pem');
const tlsKey = path.join(tlsDir, 'key.pem');
const clkTck = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

const log = (...a) => console.error('bench:', ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/// A timer that resolves with `value` after `ms` unless cancelled (and then keeps nothing alive).
function deadline(ms, value) {
  let timer;
  const promise = new Promise((r) => (timer = setTimeout(() => r(value), ms)));
  return { promise, cancel: () => clearTimeout(timer) };
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const stats = (xs) => (xs.length ? { median: median(xs), min: Math.min(...xs), max: Math.max(...xs), n: xs.length } : null);

// ---- processes -----------------------------------------------------------------------
/// utime+stime of `pid` and its direct children (nginx's workers), in microseconds.
function cpuMicros(pid) {
  const ticks = (p) => {
    try {
      const s = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      // f[0] is field 3 (state); utime and stime are fields 14 and 15.
      return { ppid: Number(f[1]), t: Number(f[11]) + Number(f[12]) };
    } catch {
      return null;
    }
  };
  // The process and all its descendants (a group's nginx master has its workers below it).
  const all = new Map();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const x = ticks(d);
    if (x) all.set(Number(d), x);
  }
  let total = 0;
  const counted = new Set([pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [p, x] of all) {
      if (counted.has(p) || !counted.has(x.ppid)) continue;
      counted.add(p);
      grew = true;
    }
  }
  for (const p of counted) total += all.get(p)?.t ?? 0;
  return (total * 1e6) / clkTck;
}

/// The same time, per process of a group (startGroup: the shell's direct children), in
/// microseconds, named by what they are: an everything-server by its --instance-id (b1, b2),
/// anything else by its command name (redis-server, nginx). The shell itself is left out.
function cpuByProcess(pid) {
  const out = {};
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === pid) continue;
    try {
      const s = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      if (Number(f[1]) !== pid) continue;
      const argv = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
      const i = argv.indexOf('--instance-id');
      const name = i >= 0 ? argv[i + 1] : s.slice(s.indexOf('(') + 1, s.lastIndexOf(')'));
      out[name] = (out[name] ?? 0) + ((Number(f[11]) + Number(f[12])) * 1e6) / clkTck;
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/// Machine-wide busy and steal time so far, in microseconds (/proc/stat's first line).
function machineMicros() {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal ...
  const busy = f[0] + f[1] + f[2] + f[5] + f[6];
  return { busy: (busy * 1e6) / clkTck, steal: ((f[7] ?? 0) * 1e6) / clkTck };
}

/// bash's `times` output (second line: children's user and system time) in microseconds.
function parseTimes(text) {
  const m = /^(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$/gm;
  let last = null;
  for (let x; (x = m.exec(text));) last = x;
  return last ? (Number(last[1]) * 60 + Number(last[2]) + Number(last[3]) * 60 + Number(last[4])) * 1e6 : NaN;
}

function rssKiB(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitForPort(port, ms) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const ok = await new Promise((r) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy();
        r(true);
      });
      s.on('error', () => r(false));
    });
    if (ok) return;
    await sleep(50);
  }
  throw new Error(`nothing listens on port ${port} after ${ms} ms`);
}

/// Starts a process that prints its URL alone on the first line of stdout.
function startPrintingUrl(cmd, args, logName) {
  return new Promise((resolve, reject) => {
    const err = fs.openSync(path.join(outDir, `${logName}.log`), 'w');
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', err] });
    fs.closeSync(err);
    let buf = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${logName}: no URL on stdout within 15 s`));
    }, 15000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${logName} exited with ${code} before printing its URL (see ${logName}.log)`));
    });
    child.stdout.on('data', (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        child.stdout.removeAllListeners('data');
        child.stdout.resume();
        resolve({ child, url: buf.slice(0, nl).trim() });
      }
    });
  });
}

async function stopProcess(child) {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = new Promise((r) => child.once('exit', (code, sig) => r(code ?? sig)));
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 5000);
  const code = await exited;
  clearTimeout(t);
  return code;
}

// ---- HTTP helpers ----------------------------------------------------------------------
const baseHeaders = {
  'Content-Type': 'application/json',
  Accept: 'application/json, text/event-stream',
  'MCP-Protocol-Version': '2025-11-25',
};
const initializeBody = (id, capabilities = {}) => JSON.stringify({
  jsonrpc: '2.0', id, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'bench', version: '1' } },
});
const initializedBody = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' });
const echoCall = (id) => JSON.stringify({
  jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hello' } },
});
// The same call as an MCP 2026-07-28 request (what bench/http/call2026.lua sends): no
// session, the version and the routing headers on every POST, the client's info and
// capabilities in params._meta.
const headers2026For = (tool) => ({ 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': tool });
const headers2026 = headers2026For('echo');
/// The params of a 2026-07-28 tools/call of `tool`; `more` adds members (a retry's
/// inputResponses and requestState), `capabilities` is what the client declares.
const call2026Params = (tool, capabilities = {}, more = {}) => ({
  name: tool, arguments: { text: 'hello' },
  _meta: {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': capabilities,
  },
  ...more,
});
const echoCall2026 = (id) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: call2026Params('echo') });

/// A self-signed EC P-256 certificate for 127.0.0.1, new for every run (nothing to keep
/// or to leak: the key never leaves the results directory, and no one else trusts it).
function makeCertificate() {
  fs.mkdirSync(tlsDir, { recursive: true });
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', tlsKey, '-out', tlsCert, '-days', '2', '-subj', '/CN=127.0.0.1',
    '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: ['ignore', 'ignore', 'pipe'] });
}

// The driver's own requests to an https:// URL trust the run's certificate and nothing
// else. This is a benchmark's throwaway certificate, not a deployment's trust store;
// verifying it (rather than rejectUnauthorized: false) costs nothing here and catches a
// server that serves some other certificate. wrk verifies nothing.
let tlsCa = null;
const tlsOptions = (url) => (url.startsWith('https:') ? { ca: (tlsCa ??= fs.readFileSync(tlsCert)) } : {});

function post(url, body, headers = {}, agent = undefined) {
  return new Promise((resolve, reject) => {
    const req = (url.startsWith('https:') ? https : http).request(url,
      { method: 'POST', headers: { ...baseHeaders, ...headers }, agent, ...tlsOptions(url) }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.setTimeout(10000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

/// The JSON-RPC messages of an answer, whether one JSON document or an event stream.
function messagesOf(res) {
  if ((res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
    const out = [];
    for (const line of res.body.split('\n')) {
      if (line.startsWith('data:') && line.slice(5).trim()) out.push(JSON.parse(line.slice(5)));
    }
    return out;
  }
  return res.body ? [JSON.parse(res.body)] : [];
}

/// Initializes a session; returns its id (empty for a server without sessions).
async function initialize(url, agent, capabilities = {}) {
  const r = await post(url, initializeBody(0, capabilities), {}, agent);
  if (r.status !== 200) throw new Error(`initialize: HTTP ${r.status} ${r.body.slice(0, 200)}`);
  const sid = r.headers['mcp-session-id'] ?? '';
  const n = await post(url, initializedBody, sid ? { 'Mcp-Session-Id': sid } : {}, agent);
  if (n.status !== 202) throw new Error(`notifications/initialized: HTTP ${n.status}`);
  return sid;
}

/// The check before timing: one tools/call answers `hello` as text content. With
/// era '2026' the call is a 2026-07-28 request, and the answer must also say
/// `"resultType":"complete"` and name the server in `_meta`.
async function checkEcho(url, sid, era = '2025') {
  const r = era === '2026'
    ? await post(url, echoCall2026(1), headers2026)
    : await post(url, echoCall(1), sid ? { 'Mcp-Session-Id': sid } : {});
  if (r.status !== 200) throw new Error(`tools/call: HTTP ${r.status} ${r.body.slice(0, 200)}`);
  const answer = messagesOf(r).find((m) => m.id === 1);
  const text = answer?.result?.content?.[0]?.text;
  if (text !== 'hello' || answer.result.content[0].type !== 'text') {
    throw new Error(`tools/call echo answered ${r.body.slice(0, 300)}`);
  }
  if (era === '2026' && (answer.result.resultType !== 'complete' ||
      typeof answer.result._meta?.['io.modelcontextprotocol/serverInfo']?.name !== 'string')) {
    throw new Error(`tools/call echo (2026-07-28) answered without resultType "complete" or serverInfo: ${r.body.slice(0, 300)}`);
  }
}

// ---- the servers -----------------------------------------------------------------------
const nginxBody = '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}';

/// nginx returning the fixed answer; with `tls`, over HTTPS with the run's certificate
/// (the floor of the TLS rows).
async function startNginx(workers, wrapper = [], { tls = false, dirName = null } = {}) {
  const dir = path.join(outDir, dirName ?? (wrapper.length ? 'nginx-callgrind' : `nginx-${tls ? 'tls-' : ''}${workers}w`));
  fs.mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const user = os.userInfo();
  const conf = [
    '# Generated by bench/run.mjs: the floor, a fixed JSON-RPC answer with no MCP work.',
    `worker_processes ${workers};`,
    'daemon off;',
    // Under callgrind: one process that serves, so that one count covers everything.
    ...(wrapper.length ? ['master_process off;'] : []),
    // As root nginx would switch its workers to nobody; keep them ours (and countable).
    ...(user.uid === 0 ? ['user root;'] : []),
    `pid ${dir}/nginx.pid;`,
    `error_log ${dir}/error.log warn;`,
    'events { worker_connections 4096; }',
    'http {',
    '  access_log off;',
    ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${dir}/${t};`),
    '  keepalive_requests 100000000;',
    '  keepalive_timeout 60s;',
    '  server {',
    `    listen 127.0.0.1:${port}${tls ? ' ssl' : ''};`,
    // As everything-server's TLS (lib/adapters/primary/transport/http/tls.cpp): TLS 1.2
    // and up, no session tickets, and OpenSSL's default cipher suites and groups on both
    // sides, so that the same suite is negotiated with wrk.
    ...(tls ? [
      `    ssl_certificate ${tlsCert};`,
      `    ssl_certificate_key ${tlsKey};`,
      '    ssl_protocols TLSv1.2 TLSv1.3;',
      '    ssl_session_tickets off;',
    ] : []),
    '    location = /mcp {',
    '      default_type application/json;',
    `      return 200 '${nginxBody}';`,
    '    }',
    '  }',
    '}',
    '',
  ].join('\n');
  fs.writeFileSync(path.join(dir, 'nginx.conf'), conf);
  const err = fs.openSync(path.join(outDir, `${path.basename(dir)}.log`), 'w');
  const nginxArgs = ['nginx', '-c', path.join(dir, 'nginx.conf'), '-p', dir, '-e', path.join(dir, 'error.log')];
  const argv = [...wrapper, ...nginxArgs];
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', err, err] });
  fs.closeSync(err);
  await waitForPort(port, wrapper.length ? 30000 : 5000);
  return { child, url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}/mcp` };
}

/// A group of processes started by one shell, whose direct children they all are, so that
/// `cpuMicros(shell)` counts them all: Redis included, since what Redis spends per request
/// is part of what the server costs. `script` is run by bash; it must print the URL to
/// benchmark on its first stdout line, and its children die with it (SIGTERM).
function startGroup(name, script) {
  const wrapped = `trap 'kill $(jobs -p) 2>/dev/null; wait; exit 0' TERM INT\n${script}\nwait\n`;
  return startPrintingUrl('bash', ['-c', wrapped], name);
}

/// redis-server on `port` for the rows that share state through it (nothing persisted),
/// as a line of a group's script; the next line runs once it answers.
const redisLines = (port) => [
  `redis-server --port ${port} --bind 127.0.0.1 --save '' --appendonly no --logfile '' >/dev/null &`,
  `until redis-cli -p ${port} ping >/dev/null 2>&1; do sleep 0.05; done`,
];

/// One everything-server instance with --redis: SSE answers whose events are written
/// behind to Redis Streams (docs/scale-out.md), beside droid-sse which keeps them in memory.
async function startRedisInstance() {
  const redisPort = await freePort();
  const port = await freePort();
  const g = await startGroup('droid-sse-redis', [
    ...redisLines(redisPort),
    `'${everythingServer}' --http 127.0.0.1:${port} --redis redis://127.0.0.1:${redisPort} --instance-id bench >/dev/null &`,
    `until (echo > /dev/tcp/127.0.0.1/${port}) 2>/dev/null; do sleep 0.05; done`,
    `echo http://127.0.0.1:${port}/mcp`,
  ].join('\n'));
  return { ...g, redisPort };
}

/// Two everything-server instances (b1 and b2, one thread each) sharing one redis-server,
/// under one shell, so that the server CPU column counts both instances, Redis and (with
/// `route: 'nginx'`) nginx. `route` says where wrk's requests go:
/// - 'nginx': through nginx, round robin (docs/scale-out.md's configuration); the session
///   is initialized through nginx too, so one instance owns it and half the requests reach
///   the other and are forwarded through Redis (droid-cluster-2);
/// - 'owner': straight to b1, which the session is initialized on and so owns; b2 is idle
///   but alive (it heartbeats) (droid-cluster-owner);
/// - 'fwd': straight to b2, while the session is initialized on b1: every request is
///   forwarded through Redis to b1, which serves it and publishes its events back
///   (droid-cluster-fwd).
/// Returns the group's { child, url } (url: what wrk drives), plus `initUrl` (where the
/// session is initialized, when that is not `url`) and `redisPort` (for the Redis command
/// counts of runWrk and the forwarding check).
async function startCluster(name, route) {
  const redisPort = await freePort();
  const ports = [await freePort(), await freePort()];
  const instanceUrl = (p) => `http://127.0.0.1:${p}/mcp`;
  const lines = [
    ...redisLines(redisPort),
    ...ports.map((p, i) => `'${everythingServer}' --http 127.0.0.1:${p} --redis redis://127.0.0.1:${redisPort} --instance-id b${i + 1} --threads 1 >/dev/null &`),
    ...ports.map((p) => `until (echo > /dev/tcp/127.0.0.1/${p}) 2>/dev/null; do sleep 0.05; done`),
  ];
  const extra = { redisPort };
  if (route !== 'nginx') {
    // b1 owns the session (initialized on it); wrk drives b1 itself or b2.
    const g = await startGroup(name, [...lines, `echo ${instanceUrl(route === 'owner' ? ports[0] : ports[1])}`].join('\n'));
    return { ...g, ...extra, initUrl: instanceUrl(ports[0]) };
  }
  const proxyPort = await freePort();
  const dir = path.join(outDir, name);
  fs.mkdirSync(dir, { recursive: true });
  for (const t of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) fs.mkdirSync(path.join(dir, t), { recursive: true });
  const page = fs.readFileSync(path.join(root, 'docs', 'scale-out.md'), 'utf8');
  const doc = page.split('\n');
  const at = doc.findIndex((l) => l.trim() === '`nginx-cluster.conf`:');
  const open = doc.findIndex((l, i) => i > at && l.startsWith('```'));
  const close = doc.findIndex((l, i) => i > open && l.startsWith('```'));
  const site = doc.slice(open + 1, close).join('\n')
    .replace('listen 127.0.0.1:8080;', `listen 127.0.0.1:${proxyPort};`)
    .replace(/( *server 127\.0\.0\.1:808[1-9];\n)+/, ports.map((p) => `    server 127.0.0.1:${p};\n`).join(''));
  const user = os.userInfo();
  fs.writeFileSync(path.join(dir, 'nginx.conf'), [
    'daemon off;', 'master_process off;', ...(user.uid === 0 ? ['user root;'] : []),
    `pid ${dir}/nginx.pid;`, `error_log ${dir}/error.log warn;`, 'events { worker_connections 4096; }', 'http {',
    '  access_log off;', ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${dir}/${t};`),
    '  keepalive_requests 100000000;', site, '}', ''].join('\n'));
  const g = await startGroup(name, [
    ...lines,
    `nginx -c ${dir}/nginx.conf -p ${dir} -e ${dir}/error.log &`,
    `until (echo > /dev/tcp/127.0.0.1/${proxyPort}) 2>/dev/null; do sleep 0.05; done`,
    `echo http://127.0.0.1:${proxyPort}/mcp`,
  ].join('\n'));
  return { ...g, ...extra };
}

/// What loadgen sends: call.lua's request (the echo tool on a 2025-11-25 session), its id
/// made unique by loadgen; the session header is loadgen's, from MCP_SESSIONS.
const loadgenRequest = [
  '--header', 'Content-Type: application/json', '--header', 'Accept: application/json, text/event-stream',
  '--header', 'MCP-Protocol-Version: 2025-11-25',
  '--body', '{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}',
];

/// docs/deployment.md's nginx (its `mcp-proxy.conf` block, read from the page, on plain
/// HTTP: TLS would be the same cost on both sides) in front of either the JSON server
/// ('droid', told that nginx is its proxy) or nginx's fixed answer ('nginx', the floor of
/// the proxied row), as one process group whose CPU counts both. One worker in front, as
/// a proxy beside its server on two cores would have, and the page's upstream keep-alive
/// (its `nginx-mcp.conf` block's `keepalive` and `keepalive_timeout`), unless `pool` says
/// how many idle upstream connections to keep instead (the churn rows).
async function startProxied(name, backend, pool = null) {
  const dir = path.join(outDir, name);
  fs.mkdirSync(dir, { recursive: true });
  for (const t of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) fs.mkdirSync(path.join(dir, t), { recursive: true });
  const doc = fs.readFileSync(path.join(root, 'docs', 'deployment.md'), 'utf8').split('\n');
  const at = doc.findIndex((l) => l.trim() === '`mcp-proxy.conf`:');
  const open = doc.findIndex((l, i) => i > at && l.startsWith('```'));
  const close = doc.findIndex((l, i) => i > open && l.startsWith('```'));
  const proxyConf = doc.slice(open + 1, close).filter((l) => !l.trim().startsWith('#')).map((l) => `      ${l}`);
  if (at < 0 || !proxyConf.some((l) => l.includes('proxy_http_version'))) throw new Error('docs/deployment.md has no mcp-proxy.conf block');
  // The upstream's keep-alive, as the page's nginx-mcp.conf sets it.
  const site = doc.findIndex((l) => l.trim() === '`nginx-mcp.conf`:');
  const siteEnd = doc.findIndex((l, i) => i > site + 1 && l.startsWith('```') && l.trim() === '```');
  const siteText = doc.slice(site, siteEnd).join('\n');
  const keepalive = /^\s*keepalive\s+(\d+);/m.exec(siteText)?.[1];
  const keepaliveTimeout = /^\s*keepalive_timeout\s+(\S+);/m.exec(siteText)?.[1];
  if (site < 0 || !keepalive) throw new Error('docs/deployment.md has no nginx-mcp.conf block with a keepalive');
  const proxyPort = await freePort();
  const backendPort = await freePort();
  const user = os.userInfo();
  const front = [
    'daemon off;', 'master_process off;', ...(user.uid === 0 ? ['user root;'] : []),
    `pid ${dir}/nginx.pid;`, `error_log ${dir}/error.log warn;`, 'events { worker_connections 4096; }', 'http {',
    '  access_log off;', ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${dir}/${t};`),
    '  keepalive_requests 100000000;',
    `  upstream mcp_backend { server 127.0.0.1:${backendPort}; keepalive ${pool ?? keepalive}; ` +
      `${keepaliveTimeout ? `keepalive_timeout ${keepaliveTimeout}; ` : ''}keepalive_requests 100000000; }`,
    `  server { listen 127.0.0.1:${proxyPort};`,
    '    location = /mcp {', '      proxy_pass http://mcp_backend;', ...proxyConf, '    }', '  }', '}', ''].join('\n');
  fs.writeFileSync(path.join(dir, 'nginx.conf'), front);
  let backendLine;
  if (backend === 'droid') {
    backendLine = `'${everythingServer}' --http 127.0.0.1:${backendPort} --json-response --trusted-proxy 127.0.0.1 >/dev/null &`;
  } else {
    const floorDir = path.join(dir, 'floor');
    fs.mkdirSync(floorDir, { recursive: true });
    for (const t of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) fs.mkdirSync(path.join(floorDir, t), { recursive: true });
    fs.writeFileSync(path.join(floorDir, 'nginx.conf'), [
      'worker_processes 2;', 'daemon off;', ...(user.uid === 0 ? ['user root;'] : []),
      `pid ${floorDir}/nginx.pid;`, `error_log ${floorDir}/error.log warn;`, 'events { worker_connections 4096; }', 'http {',
      '  access_log off;', ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${floorDir}/${t};`),
      '  keepalive_requests 100000000;', '  keepalive_timeout 60s;',
      `  server { listen 127.0.0.1:${backendPort}; location = /mcp { default_type application/json; return 200 '${nginxBody}'; } }`,
      '}', ''].join('\n'));
    backendLine = `nginx -c ${floorDir}/nginx.conf -p ${floorDir} -e ${floorDir}/error.log &`;
  }
  return startGroup(name, [
    backendLine,
    `until (echo > /dev/tcp/127.0.0.1/${backendPort}) 2>/dev/null; do sleep 0.05; done`,
    `nginx -c ${dir}/nginx.conf -p ${dir} -e ${dir}/error.log &`,
    `until (echo > /dev/tcp/127.0.0.1/${proxyPort}) 2>/dev/null; do sleep 0.05; done`,
    `echo http://127.0.0.1:${proxyPort}/mcp`,
  ].join('\n'));
}

const httpServers = [
  { name: 'droid-json', label: 'protocol_droid JSON', stateful: true, start: () => startPrintingUrl(everythingServer, ['--http', '127.0.0.1:0', '--json-response'], 'droid-json') },
  // The droid-json server over HTTPS, driven by the same script: against droid-json, what
  // TLS costs protocol_droid; against the nginx TLS rows, the floor with the same TLS.
  { name: 'droid-json-tls', label: 'protocol_droid JSON over TLS', stateful: true, tls: true, start: () => startPrintingUrl(everythingServer, ['--http', '127.0.0.1:0', '--json-response', '--tls-cert', tlsCert, '--tls-key', tlsKey], 'droid-json-tls') },
  // The realistic JSON row: each connection with its own session, as each client of a
  // real server has, so sessions live on every shard; droid-json's one shared session
  // keeps every tool call on one shard. Driven by loadgen (wrk cannot give each connection
  // its own header), and so compared with the floor driven by loadgen too (nginx-2w-lg).
  { name: 'droid-json-sessions', label: 'protocol_droid JSON, a session per connection', stateful: true, sessions: 64, driver: 'loadgen', start: () => startPrintingUrl(everythingServer, ['--http', '127.0.0.1:0', '--json-response'], 'droid-json-sessions') },
  // What a reverse proxy's upstream connections carry: docs/deployment.md's nginx in front
  // (one worker, keep-alive upstream), each client connection with its own session, so the
  // pooled upstream connections mix sessions from one request to the next. Against
  // nginx-proxied-floor: the same nginx in front of nginx's fixed answer.
  { name: 'droid-json-proxied', label: 'protocol_droid JSON behind nginx, sessions mixed on its upstream connections', stateful: true, sessions: 64, driver: 'loadgen', start: () => startProxied('droid-json-proxied', 'droid') },
  // The same with a keep-alive pool of 16 idle upstream connections, under the 64
  // requests nginx has in flight: the surplus is closed after each answer and the next
  // burst opens new ones, so one request in several arrives on a new connection. What a
  // connection costs the server, against the same churn in front of the floor.
  { name: 'droid-json-proxied-churn', label: 'protocol_droid JSON behind nginx, a keep-alive pool of 16 (connections churn)', stateful: true, sessions: 64, driver: 'loadgen', start: () => startProxied('droid-json-proxied-churn', 'droid', 16) },
  { name: 'nginx-proxied-floor-churn', label: 'nginx in front of the floor, a keep-alive pool of 16', stateful: false, driver: 'loadgen', start: () => startProxied('nginx-proxied-floor-churn', 'nginx', 16) },
  // droid-json's one shared session driven by loadgen: the session row's other half, so
  // that what a session of its own per connection costs is read with one client.
  { name: 'droid-json-lg', label: 'protocol_droid JSON, one shared session, driven by loadgen', stateful: true, driver: 'loadgen', start: () => startPrintingUrl(everythingServer, ['--http', '127.0.0.1:0', '--json-response'], 'droid-json-lg') },
  // The server's side of the proxied row without the proxy: loadgen sends each request of
  // a connection on the next of the 64 sessions, so half of them reach a connection of the
  // other shard than their session's (what a session's hand-off costs, with nothing else).
  { name: 'droid-json-mixed', label: 'protocol_droid JSON, sessions mixed on connections (no proxy)', stateful: true, sessions: 64, driver: 'loadgen', mix: true, start: () => startPrintingUrl(everythingServer, ['--http', '127.0.0.1:0', '--json-response'], 'droid-json-mixed') },
  { name: 'nginx-2w-lg', label: 'nginx 2 workers (floor), driven by loadgen', stateful: false, driver: 'loadgen', start: () => startNginx(2, [], { dirName: 'nginx-2w-lg' }) },
  { name: 'nginx-proxied-floor', label: 'nginx in front of nginx 2 workers (the proxied floor)', stateful: false, driver: 'loadgen', start: () => startProxied('nginx-proxied-floor', 'nginx') },
  // Scaling: droid-json on one shard. Its req/s per server core against droid-json's is
  // what the second shard buys (docs/benchmarks.md, "Scaling").
  // Middleware's cost (docs/middleware.md): droid-json with one middleware that passes
  // every request on, and with the rate limiter (a rate no run reaches, so every request
  // takes a token and none is refused). Against droid-json in the same run.
  { name: 'droid-json-mw', label: 'protocol_droid JSON, one pass-through middleware', stateful: true, start: () => startPrintingUrl(everythingServer, ['--http', '127.0.0.1:0', '--json-response', '--pass-through-middleware'], 'droid-json-mw') },
  { name: 'droid-json-limited', label: 'protocol_droid JSON, rate limiter on', stateful: true, start: () => startPrintingUrl(everythingServer, ['--http', '127.0.0.1:0', '--json-response', '--rate-limit', '1000000000'], 'droid-json-limited') },
  { name: 'droid-json-1t', label: 'protocol_droid JSON, --threads 1', stateful: true, start: () => startPrintingUrl(everythingServer, ['--http', '127.0.0.1:0', '--json-response', '--threads', '1'], 'droid-json-1t') },
  { name: 'droid-sse', label: 'protocol_droid SSE', stateful: true, start: () => startPrintingUrl(everythingServer, ['--http', '127.0.0.1:0'], 'droid-sse') },
  // docs/scale-out.md's rows: against droid-sse, what Redis costs a request (CPU of Redis
  // included), and what two instances behind nginx cost when half the requests reach the
  // instance that does not own the session.
  { name: 'droid-sse-redis', label: 'protocol_droid SSE, events written behind to Redis', stateful: true, start: startRedisInstance },
  { name: 'droid-cluster-2', label: 'protocol_droid SSE, 2 instances behind nginx (1 thread each)', stateful: true, start: () => startCluster('droid-cluster-2', 'nginx') },
  // The forwarding hop alone, against the same request served by the session's owner: two
  // instances and one Redis in both rows, no nginx; wrk sends every request to the owner
  // (droid-cluster-owner) or to the other instance, which forwards every one of them
  // through Redis (droid-cluster-fwd). The driver counts Redis's commands per request in
  // these rows and checks from them that the fwd row's requests were forwarded and the
  // owner row's were not (verifyForwarding).
  { name: 'droid-cluster-owner', label: 'protocol_droid SSE, 2 instances, every request to the owner', stateful: true, forwarded: false, start: () => startCluster('droid-cluster-owner', 'owner') },
  { name: 'droid-cluster-fwd', label: 'protocol_droid SSE, 2 instances, every request forwarded', stateful: true, forwarded: true, start: () => startCluster('droid-cluster-fwd', 'fwd') },
  { name: 'droid-stateless', label: 'protocol_droid stateless JSON', stateful: false, start: () => startPrintingUrl(everythingServer, ['--http', '127.0.0.1:0', '--stateless', '--json-response'], 'droid-stateless') },
  // 2026-07-28 requests are stateless by nature: the same server as droid-json, no flag.
  { name: 'droid-2026', label: 'protocol_droid 2026-07-28 JSON', stateful: false, era: '2026', lua: call2026Lua, start: () => startPrintingUrl(everythingServer, ['--http', '127.0.0.1:0', '--json-response'], 'droid-2026') },
  { name: 'ts-sse', label: 'TS SDK SSE', stateful: true, start: () => startPrintingUrl('node', [tsServer, '--mode', 'sse'], 'ts-sse') },
  { name: 'ts-stateless', label: 'TS SDK stateless JSON', stateful: false, start: () => startPrintingUrl('node', [tsServer, '--mode', 'stateless'], 'ts-stateless') },
  { name: 'nginx-1w', label: 'nginx 1 worker (floor)', stateful: false, start: () => startNginx(1) },
  { name: 'nginx-2w', label: 'nginx 2 workers (floor)', stateful: false, start: () => startNginx(2) },
  { name: 'nginx-tls-1w', label: 'nginx 1 worker over TLS (TLS floor)', stateful: false, tls: true, start: () => startNginx(1, [], { tls: true }) },
  { name: 'nginx-tls-2w', label: 'nginx 2 workers over TLS (TLS floor)', stateful: false, tls: true, start: () => startNginx(2, [], { tls: true }) },
];

// ---- wrk -----------------------------------------------------------------------------
function toMicros(v, unit) {
  return Number(v) * ({ us: 1, ms: 1e3, s: 1e6, m: 60e6 }[unit] ?? NaN);
}

function parseWrk(text) {
  const num = (re) => {
    const m = re.exec(text);
    return m ? Number(m[1]) : 0;
  };
  const pct = (p) => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(text);
    return m ? toMicros(m[1], m[2]) : NaN;
  };
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  return {
    rps: num(/Requests\/sec:\s+([\d.]+)/),
    requests: num(/(\d+) requests in/),
    p50: pct(50),
    p99: pct(99),
    non2xx: num(/Non-2xx or 3xx responses: (\d+)/),
    socketErrors: sock ? sock.slice(1).map(Number).reduce((a, b) => a + b, 0) : 0,
  };
}

/// With --settle S: waits (at most S seconds) until the machine is quiet, that is until
/// less than a quarter of a core was busy over half a second; our idle servers count.
async function settle() {
  if (!opt.settle) return 0;
  const until = Date.now() + opt.settle * 1000;
  let waited = 0;
  for (;;) {
    const a = machineMicros().busy;
    await sleep(500);
    const busy = (machineMicros().busy - a) / 500e3;
    if (busy < 0.25 || Date.now() >= until) return waited;
    waited += 0.5;
  }
}

/// Redis's commands served so far, by command (INFO commandstats: `cmdstat_NAME:calls=N,...`),
/// less redis-cli's own (`info`, `command`). Read before and after a run of the rows that
/// have a Redis, outside the CPU window: their difference over the requests is the Redis
/// commands a request costs (heartbeats included, a few a second).
function redisCommandStats(port) {
  let out;
  try {
    out = execFileSync('redis-cli', ['-p', String(port), 'INFO', 'commandstats'], { encoding: 'utf8', timeout: 5000 });
  } catch {
    return null;  // Redis gone: the run is still timed, without its command counts
  }
  const calls = {};
  for (const m of out.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (m[1] !== 'info' && m[1] !== 'command') calls[m[1]] = Number(m[2]);
  }
  return calls;
}

/// A session's record in Redis (docs/scale-out.md: the hash `droid:s:ID`): its owner (the
/// member, `b1:...` or `b2:...` in the cluster rows) and its epoch, which every takeover bumps.
function sessionOwner(port, sid) {
  let out = '';
  try {
    out = execFileSync('redis-cli', ['-p', String(port), 'HMGET', `droid:s:${sid}`, 'owner', 'epoch'], { encoding: 'utf8', timeout: 5000 });
  } catch {
    // Redis gone: an empty owner, which fails the check that reads it.
  }
  const [owner = '', epoch = ''] = out.split('\n');
  return { owner, epoch };
}

/// `first` and more sessions up to `n`, each made as a client without keep-alive makes
/// it: `initialize` on one connection, `notifications/initialized` on the next. The
/// server deals connections to its shards in turn, so every `initialize` lands on the
/// same shard; the server places the sessions by load (docs/benchmarks.md, "Sessions
/// placed by load"), which this shape checks: before that, all of them lived on one
/// shard.
async function moreSessions(url, first, n) {
  const sids = [first];
  while (sids.length < n) {
    const agent = new http.Agent({ keepAlive: false });
    sids.push(await initialize(url, agent));
    agent.destroy();
  }
  return sids;
}

function runWrk(server, conns, seconds) {
  const threads = conns >= 2 ? 2 : 1;
  const args = server.driver === 'loadgen'
    ? ['-t', String(threads), '-c', String(conns), '-d', String(seconds), ...(server.mix ? ['--mix'] : []), ...loadgenRequest, server.url]
    : ['-t', String(threads), '-c', String(conns), '-d', `${seconds}s`, '--latency', '--timeout', '2s', '-s', server.lua ?? callLua, server.url];
  const redis0 = server.redisPort ? redisCommandStats(server.redisPort) : null;
  const parts0 = server.redisPort ? cpuByProcess(server.child.pid) : null;
  const before = cpuMicros(server.child.pid);
  const machine0 = machineMicros();
  const t0 = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    // Through bash, whose `times` tells wrk's own CPU time: what is left of the machine's
    // busy time after the server and wrk is other load, the noise this run suffered.
    const child = spawn('bash', ['-c', '"$0" "$@"; rc=$?; times; exit $rc', server.driver === 'loadgen' ? loadgen : 'wrk', ...args], {
      env: { ...process.env, MCP_SESSION: server.sid ?? '', MCP_SESSIONS: (server.sids ?? (server.sid ? [server.sid] : [])).slice(0, conns).join(',') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('exit', (code) => {
      const cpu = cpuMicros(server.child.pid) - before;
      const parts1 = parts0 ? cpuByProcess(server.child.pid) : null;
      const machine1 = machineMicros();
      const wall = Number(process.hrtime.bigint() - t0) / 1e3;
      if (code !== 0) return reject(new Error(`wrk exited with ${code}: ${out}`));
      const r = parseWrk(out);
      const redis1 = redis0 ? redisCommandStats(server.redisPort) : null;
      if (redis0 && redis1) {
        // Redis commands per request, by command and in all (the cluster rows' check that
        // their requests were, or were not, forwarded reads `publish`).
        r.redisPerRequest = {};
        let all = 0;
        for (const [k, v] of Object.entries(redis1)) {
          const d = v - (redis0[k] ?? 0);
          if (!d) continue;
          r.redisPerRequest[k] = r.requests ? d / r.requests : NaN;
          all += d;
        }
        r.redisCommandsPerRequest = r.requests ? all / r.requests : NaN;
        // Where the group's CPU went: µs per request of each instance, Redis and nginx.
        r.cpuByProcess = Object.fromEntries(Object.entries(parts1)
          .map(([k, v]) => [k, r.requests ? (v - (parts0[k] ?? 0)) / r.requests : NaN]));
      }
      r.cpuPerRequest = r.requests ? cpu / r.requests : NaN;
      r.serverCores = cpu / wall;
      r.wrkCores = parseTimes(out) / wall;
      r.otherCores = Math.max(0, (machine1.busy - machine0.busy - cpu - parseTimes(out)) / wall);
      r.stealCores = (machine1.steal - machine0.steal) / wall;
      r.raw = out;
      resolve(r);
    });
  });
}

const picked = (s) => !opt.servers || opt.servers.includes(s.name);

// ---- sections ------------------------------------------------------------------------
const results = {
  machine: {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? '?',
    kernel: os.release(),
    node: process.version,
    date: new Date().toISOString(),
  },
  command: process.env.BENCH_COMMAND ?? `node bench/run.mjs ${process.argv.slice(2).join(' ')}`.trim(),
  options: { duration: opt.duration, repeats: opt.repeats, connections: opt.connections, quick: opt.quick },
  http: [],
  stdio: [],
  exchange: [],
  callgrind: [],
  memory: null,
  micro: [],
  notes: [],
};
// nginx -v prints on stderr; wrk -v on stdout with a non-zero status.
const versionOf = (cmd) => {
  const r = spawnSync(cmd, ['-v'], { encoding: 'utf8' });
  return `${r.stdout ?? ''}${r.stderr ?? ''}`.split('\n')[0].replace(/ Copyright.*/, '').trim() || `${cmd} (version unknown)`;
};
results.machine.nginx = versionOf('nginx');
results.machine.wrk = versionOf('wrk');
results.machine.loadavg_at_start = os.loadavg().map((x) => Number(x.toFixed(2)));

async function httpSection() {
  const live = [];
  for (const s of httpServers.filter(picked)) {
    try {
      const { child, url, initUrl, redisPort } = await s.start();
      s.child = child;
      s.url = url;
      s.redisPort = redisPort;
      s.initUrl = initUrl;
      // The cluster rows initialize their session on the instance that is to own it (b1),
      // which is not the one wrk drives in droid-cluster-fwd.
      s.sid = s.stateful ? await initialize(initUrl ?? url) : '';
      if (s.sessions) s.sids = await moreSessions(url, s.sid, s.sessions);
      if (s.forwarded !== undefined) {
        // The session must belong to b1, the instance it was initialized on.
        s.ownerAtStart = sessionOwner(s.redisPort, s.sid);
        if (!s.ownerAtStart.owner.startsWith('b1')) throw new Error(`the session's record names ${JSON.stringify(s.ownerAtStart)}, not b1`);
      }
      if (s.name.startsWith('nginx')) {
        // The floor does no MCP work; its fixed answer is checked all the same.
        const r = await post(url, echoCall(1));
        if (r.body !== nginxBody) throw new Error(`nginx answered ${r.body}`);
      } else {
        await checkEcho(url, s.sid, s.era);
      }
      live.push(s);
      log(`${s.name}: ${url}${s.sid ? ` session ${s.sid}` : ''}${initUrl && initUrl !== url ? ` (initialized on ${initUrl})` : ''} (answer checked)`);
    } catch (e) {
      log(`${s.name}: not benchmarked: ${e.message}`);
      results.notes.push(`${s.name} was not benchmarked: ${e.message}`);
      if (s.child) await stopProcess(s.child);
    }
  }
  // Warm-up (the TS SDK's JIT, the allocators, the kernel's socket caches); not recorded.
  for (const s of live) await runWrk(s, 16, opt.quick ? 1 : 2).catch(() => {});

  const runs = new Map(live.map((s) => [s.name, new Map(opt.connections.map((c) => [c, []]))]));
  const total = opt.repeats * opt.connections.length * live.length;
  let done = 0;
  for (let rep = 0; rep < opt.repeats; ++rep) {
    for (const c of opt.connections) {
      // Alternate the order of the servers between repeats, so no server always runs
      // right after the same neighbour (caches, CPU frequency, the kernel's TIME_WAITs).
      const order = rep % 2 ? [...live].reverse() : live;
      for (const s of order) {
        if (s.sessions && (rep > 0 || c !== opt.connections[0])) {
          // Fresh sessions for each cell: between two cells of one row a full run can
          // spend longer than the server's session idle timeout (300 s), and a reaped
          // session answers 404 (a run of 6 December counted its 404s as requests).
          s.sid = await initialize(s.initUrl ?? s.url);
          s.sids = await moreSessions(s.url, s.sid, s.sessions);
        }
        const waited = await settle();
        const r = await runWrk(s, c, opt.duration);
        r.settledSeconds = waited;
        ++done;
        log(`[${done}/${total}] ${s.name} c=${c}: ${r.rps.toFixed(0)} req/s p50 ${r.p50} us p99 ${r.p99} us ` +
          `cpu ${r.cpuPerRequest.toFixed(1)} us/req, cores: server ${r.serverCores.toFixed(2)} wrk ${r.wrkCores.toFixed(2)} ` +
          `other ${r.otherCores.toFixed(2)} steal ${r.stealCores.toFixed(2)}` +
          `${r.redisPerRequest ? `, redis ${r.redisCommandsPerRequest.toFixed(2)} cmds/req (publish ${(r.redisPerRequest.publish ?? 0).toFixed(2)})` : ''}` +
          `${r.non2xx || r.socketErrors ? ` ERRORS non2xx=${r.non2xx} socket=${r.socketErrors}` : ''}`);
        delete r.raw;
        runs.get(s.name).get(c).push(r);
      }
    }
  }
  for (const s of live) if (s.forwarded !== undefined) verifyForwarding(s, runs.get(s.name));
  // The answers are checked again after the load: a server that broke under it would
  // otherwise leave numbers that mean nothing.
  for (const s of live) {
    try {
      if (!s.name.startsWith('nginx')) await checkEcho(s.url, s.sid, s.era);
    } catch (e) {
      results.notes.push(`${s.name} answered wrongly after the load: ${e.message}`);
    }
    const code = await stopProcess(s.child);
    if (!s.name.startsWith('nginx') && code !== 0) results.notes.push(`${s.name} exited with ${code} on SIGTERM`);
  }
  for (const s of live) {
    for (const c of opt.connections) {
      const rs = runs.get(s.name).get(c);
      const errors = rs.reduce((a, r) => a + r.non2xx + r.socketErrors, 0);
      if (errors) results.notes.push(`${s.name} at ${c} connections had ${errors} failed requests (non-2xx or socket errors): left out of the headline`);
      const withRedis = rs.filter((r) => r.redisPerRequest);
      results.http.push({
        server: s.name,
        label: s.label,
        tls: Boolean(s.tls),
        connections: c,
        rps: stats(rs.map((r) => r.rps)),
        p50_us: stats(rs.map((r) => r.p50)),
        p99_us: stats(rs.map((r) => r.p99)),
        cpu_us_per_request: stats(rs.map((r) => r.cpuPerRequest)),
        errors: rs.reduce((a, r) => a + r.non2xx + r.socketErrors, 0),
        server_cores: stats(rs.map((r) => r.serverCores)),
        wrk_cores: stats(rs.map((r) => r.wrkCores)),
        other_cores_max: Math.max(...rs.map((r) => r.otherCores)),
        // The rows with a Redis (over the runs whose counts could be read).
        ...(withRedis.length ? {
          redis_commands_per_request: stats(withRedis.map((r) => r.redisCommandsPerRequest)),
          // Server CPU µs per request by process (b1, b2, redis-server, nginx), medians.
          cpu_us_per_request_by_process: Object.fromEntries([...new Set(withRedis.flatMap((r) => Object.keys(r.cpuByProcess)))].sort()
            .map((k) => [k, median(withRedis.map((r) => r.cpuByProcess[k] ?? 0))])),
          // Per command, the median over the runs (a command a run did not send counts 0).
          redis_per_request: Object.fromEntries([...new Set(withRedis.flatMap((r) => Object.keys(r.redisPerRequest)))].sort()
            .map((k) => [k, median(withRedis.map((r) => r.redisPerRequest[k] ?? 0))])),
        } : {}),
        ...(s.forwarded !== undefined ? { forwarding_check: s.forwardingCheck } : {}),
        runs: rs,
      });
    }
  }
}

/// The check that droid-cluster-fwd's requests were all forwarded and droid-cluster-owner's
/// were served by their owner, from what Redis saw:
/// - the session's record still names b1 at the same epoch after every run: nobody took the
///   session over, so b2 never held it and could serve none of its requests itself (in the
///   fwd row, each one went to b1's inbox);
/// - in every run of the fwd row, at least one PUBLISH per request (the request on b1's
///   inbox; the events relayed back add more); in the owner row, almost none (heartbeats).
/// A failed check goes to the notes (and results.json's `forwarding_check`): that row's
/// numbers then do not measure what its name says.
function verifyForwarding(s, cells) {
  const end = sessionOwner(s.redisPort, s.sid);
  const problems = [];
  if (end.owner !== s.ownerAtStart.owner || end.epoch !== s.ownerAtStart.epoch) {
    problems.push(`the session moved: owner ${s.ownerAtStart.owner} epoch ${s.ownerAtStart.epoch} before the load, ` +
      `${end.owner || '(no record)'} epoch ${end.epoch} after`);
  }
  const publishes = [];
  for (const [c, rs] of cells) {
    for (const r of rs) {
      const p = r.redisPerRequest?.publish ?? 0;
      publishes.push(p);
      if (s.forwarded && !(p >= 1)) problems.push(`${p.toFixed(2)} PUBLISH per request at ${c} connections (< 1: not every request was forwarded)`);
      if (!s.forwarded && p > 0.05) problems.push(`${p.toFixed(2)} PUBLISH per request at ${c} connections (requests were forwarded)`);
    }
  }
  s.forwardingCheck = {
    owner: end.owner, epoch: end.epoch, ok: problems.length === 0, problems,
    publish_per_request: stats(publishes),
  };
  const what = s.forwarded ? 'every request forwarded to the owner b1 through Redis' : 'every request served by its owner b1';
  if (problems.length) {
    log(`${s.name}: FORWARDING CHECK FAILED: ${problems.join('; ')}`);
    results.notes.push(`${s.name}: the check that ${what} failed: ${problems.join('; ')}`);
  } else {
    log(`${s.name}: checked: ${what} (session still owned by ${end.owner} at epoch ${end.epoch}; ` +
      `PUBLISH per request ${publishes.map((p) => p.toFixed(2)).join(', ')})`);
  }
}

/// Pipelined tools/call through a pipe: initialize, then `n` calls written at once; the
/// clock runs from the first call written to the last answer read.
async function stdioRun(name, cmd, args, n) {
  const errLog = fs.openSync(path.join(outDir, `${name}-stdio.log`), 'w');
  const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', errLog] });
  fs.closeSync(errLog);
  let lines = 0;
  let first = '';
  let tail = '';
  let resolveInit;
  let resolveAll;
  const initDone = new Promise((r) => (resolveInit = r));
  const allDone = new Promise((r) => (resolveAll = r));
  child.stdout.on('data', (d) => {
    for (let i = d.indexOf(10); i >= 0; i = d.indexOf(10, i + 1)) ++lines;
    if (first.length < 4096) first += d.toString();
    tail = (tail + d.toString()).slice(-4096);
    if (lines >= 1) resolveInit();
    if (lines >= n + 1) resolveAll();
  });
  const exited = new Promise((r) => child.once('exit', (code) => r(code)));
  child.stdin.on('error', () => {});
  child.stdin.write(initializeBody(0) + '\n');
  await Promise.race([initDone, exited]);
  if (lines < 1) throw new Error(`${name}: no answer to initialize`);
  // The fixed pattern: ids 1..n, text "hello", one per line.
  const parts = [initializedBody];
  for (let i = 1; i <= n; ++i) parts.push(echoCall(i));
  const input = parts.join('\n') + '\n';
  const cpu0 = cpuMicros(child.pid);
  const t0 = process.hrtime.bigint();
  child.stdin.write(input);
  const timeout = deadline(120000, 'timeout');
  const outcome = await Promise.race([allDone, exited.then(() => 'exited'), timeout.promise]);
  timeout.cancel();
  const t1 = process.hrtime.bigint();
  const cpu = cpuMicros(child.pid) - cpu0;
  child.stdin.end();
  const grace = deadline(5000, 'grace');
  let code = await Promise.race([exited, grace.promise]);
  grace.cancel();
  if (code === 'grace') code = await stopProcess(child);
  if (outcome === 'timeout' || outcome === 'exited') throw new Error(`${name}: ${lines - 1} of ${n} answers (${outcome})`);
  // Check: the first call and the last one were answered with their text.
  const firstCall = JSON.parse(first.split('\n')[1]);
  const lastLines = tail.trimEnd().split('\n');
  const last = JSON.parse(lastLines[lastLines.length - 1]);
  for (const m of [firstCall, last]) {
    if (m?.result?.content?.[0]?.text !== 'hello') throw new Error(`${name}: answered ${JSON.stringify(m)}`);
  }
  const seconds = Number(t1 - t0) / 1e9;
  return { messages: n, seconds, perSecond: n / seconds, cpuPerMessage: cpu / n, exit: code };
}

async function stdioSection() {
  const peers = [
    { name: 'droid', label: 'protocol_droid', cmd: everythingServer, args: [], n: opt.stdioMessages.droid },
    { name: 'ts', label: 'TS SDK', cmd: 'node', args: [tsServer, '--mode', 'stdio'], n: opt.stdioMessages.ts },
  ];
  const runs = new Map(peers.map((p) => [p.name, []]));
  for (let rep = 0; rep < opt.repeats; ++rep) {
    const order = rep % 2 ? [...peers].reverse() : peers;
    for (const p of order) {
      try {
        const r = await stdioRun(p.name, p.cmd, p.args, p.n);
        log(`stdio ${p.name}: ${r.messages} calls in ${r.seconds.toFixed(3)} s = ${r.perSecond.toFixed(0)}/s, cpu ${r.cpuPerMessage.toFixed(1)} us/msg`);
        runs.get(p.name).push(r);
      } catch (e) {
        log(`stdio ${p.name}: ${e.message}`);
        results.notes.push(`stdio ${p.name}: ${e.message}`);
      }
    }
  }
  for (const p of peers) {
    const rs = runs.get(p.name);
    if (!rs.length) continue;
    results.stdio.push({
      server: p.name, label: p.label, messages: p.n,
      per_second: stats(rs.map((r) => r.perSecond)),
      cpu_us_per_message: stats(rs.map((r) => r.cpuPerMessage)),
      runs: rs,
    });
  }
}

/// Runs `fn` over `items` with at most `width` at a time.
async function pool(items, width, fn) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
}

/// Opens the standalone event stream (GET) of session `sid`; resolves with the socket
/// once the response's status line says 200, rejects otherwise.
function openStream(port, sid, localAddress = undefined) {
  return new Promise((resolve, reject) => {
    const s = net.connect({ port, host: '127.0.0.1', localAddress });
    let head = '';
    const t = setTimeout(() => {
      s.destroy();
      reject(new Error('no response head within 10 s'));
    }, 10000);
    s.on('connect', () => {
      s.write(`GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n` +
        `Mcp-Session-Id: ${sid}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n`);
    });
    s.on('error', (e) => {
      clearTimeout(t);
      reject(e);
    });
    s.on('data', (d) => {
      if (head === null) return;  // past the head: events (and keep-alive comments) are dropped
      head += d;
      if (head.includes('\r\n\r\n')) {
        clearTimeout(t);
        const got = head;
        head = null;
        if (got.startsWith('HTTP/1.1 200') && /content-type: text\/event-stream/i.test(got)) resolve(s);
        else {
          s.destroy();
          reject(new Error(`GET answered ${got.split('\r\n')[0]}`));
        }
      }
    });
  });
}

/// What the client's model says to every sampling question, in both eras: `summarize`
/// then answers `summary from bench: hi`.
const samplingAnswer = { role: 'assistant', model: 'bench', content: { type: 'text', text: 'hi' } };

/// One tools/call of `tool` on session `sid`, answering at once any sampling request that
/// arrives on its event stream; resolves with the call's answer.
function callAnswering(url, sid, agent, id, tool) {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: { text: 'hello' } } });
    const req = http.request(url, { method: 'POST', agent, headers: { ...baseHeaders, 'Mcp-Session-Id': sid } }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return reject(new Error(`HTTP ${res.statusCode}`));
      }
      res.setEncoding('utf8');
      let buf = '';
      const json = !(res.headers['content-type'] ?? '').startsWith('text/event-stream');
      res.on('data', (d) => {
        buf += d;
        if (json) return;
        for (let i; (i = buf.indexOf('\n\n')) >= 0;) {
          const data = buf.slice(0, i).split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5)).join('').trim();
          buf = buf.slice(i + 2);
          if (!data) continue;
          const m = JSON.parse(data);
          if (m.method === 'sampling/createMessage') {
            const answer = { jsonrpc: '2.0', id: m.id, result: samplingAnswer };
            post(url, JSON.stringify(answer), { 'Mcp-Session-Id': sid }, agent).then((r) => {
              if (r.status !== 202) reject(new Error(`the answer to the question got HTTP ${r.status}`));
            }, reject);
          } else if (m.id === id) {
            resolve(m);
          }
        }
      });
      res.on('end', () => {
        if (json && buf) resolve(JSON.parse(buf));
        reject(new Error('the response ended without the answer'));  // a no-op once resolved
      });
      res.on('error', reject);
    });
    req.setTimeout(10000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

/// One tools/call of `tool` as 2026-07-28 requests, with `nextId()` giving each POST its
/// id. A tool that asks answers `input_required`; the client answers every sampling
/// question at once and retries the same call with a new id, the answers in
/// `inputResponses` and `requestState` echoed as it came. Resolves with the final answer
/// and the number of `input_required` rounds it took; anything but a sampling question,
/// or more than `maxRounds` rounds, is an error (the bench measures a known exchange).
async function callAnswering2026(url, agent, nextId, tool, maxRounds) {
  const capabilities = { sampling: {} };
  let more = {};
  for (let rounds = 0; ; ++rounds) {
    const id = nextId();
    const r = await post(url, JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: call2026Params(tool, capabilities, more) }),
      headers2026For(tool), agent);
    if (r.status !== 200) throw new Error(`HTTP ${r.status} ${r.body.slice(0, 200)}`);
    const m = messagesOf(r).find((x) => x.id === id);
    if (!m) throw new Error(`no answer to id ${id}: ${r.body.slice(0, 200)}`);
    if (m.result?.resultType !== 'input_required') return { message: m, rounds };
    if (rounds >= maxRounds) throw new Error(`input_required again after ${rounds} round(s): ${r.body.slice(0, 200)}`);
    const asked = Object.entries(m.result.inputRequests ?? {});
    if (!asked.length || typeof m.result.requestState !== 'string') {
      throw new Error(`input_required without inputRequests or requestState: ${r.body.slice(0, 200)}`);
    }
    const inputResponses = {};
    for (const [key, q] of asked) {
      if (q?.method !== 'sampling/createMessage') throw new Error(`asked ${key}: ${JSON.stringify(q).slice(0, 200)}`);
      inputResponses[key] = samplingAnswer;
    }
    more = { inputResponses, requestState: m.result.requestState };
  }
}

/// One call of `t.tool` on `server` in its era, checked: the text `t.expected`, and for
/// 2026-07-28 `resultType: "complete"` after exactly `t.rounds` input_required rounds.
async function exchangeCall(server, agent, nextId, t) {
  let m;
  if (server.era === '2026') {
    const r = await callAnswering2026(server.url, agent, nextId, t.tool, t.rounds);
    m = r.message;
    if (r.rounds !== t.rounds || m?.result?.resultType !== 'complete') {
      throw new Error(`after ${r.rounds} round(s) answered ${JSON.stringify(m).slice(0, 200)}`);
    }
  } else {
    m = await callAnswering(server.url, server.sid, agent, nextId(), t.tool);
  }
  if (m?.result?.content?.[0]?.text !== t.expected) throw new Error(`answered ${JSON.stringify(m).slice(0, 200)}`);
}

/// `width` workers call `t.tool` back to back for `seconds` (a closed loop, like wrk's).
async function exchangeLoad(server, t, width, seconds) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: width * 2 });
  const latencies = [];
  let errors = 0;
  let firstError = '';
  let nextId = 1;
  const cpu0 = cpuMicros(server.child.pid);
  const t0 = performance.now();
  const until = t0 + seconds * 1000;
  await Promise.all(Array.from({ length: width }, async () => {
    while (performance.now() < until) {
      const start = performance.now();
      try {
        await exchangeCall(server, agent, () => nextId++, t);
        latencies.push((performance.now() - start) * 1000);
      } catch (e) {
        ++errors;
        firstError ||= e.message;
      }
    }
  }));
  const wall = (performance.now() - t0) / 1000;
  const cpu = cpuMicros(server.child.pid) - cpu0;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return {
    calls: latencies.length, perSecond: latencies.length / wall, p50: at(0.5), p99: at(0.99),
    cpuPerCall: latencies.length ? cpu / latencies.length : NaN, errors, firstError,
  };
}

/// The exchange over HTTP: `summarize` asks the client's model once (sampling), and the
/// client (this driver) answers at once; against plain `echo` calls by the same client.
/// In 2025-11-25 (a session) the question comes on the call's event stream and the answer
/// is one more POST; in 2026-07-28 (no session) the call answers `input_required` and the
/// client calls again with the answer, so one exchange is two tools/call POSTs.
async function exchangeSection() {
  const servers = [
    { name: 'droid-sse', label: 'protocol_droid SSE', start: () => startPrintingUrl(everythingServer, ['--http', '127.0.0.1:0'], 'droid-exchange') },
    // The same server and flags as the row above, so that the era is all that differs;
    // without --json-response a 2026 call may answer as an event stream, which the
    // driver reads as it reads JSON.
    { name: 'droid-2026', label: 'protocol_droid 2026-07-28 SSE', era: '2026', start: () => startPrintingUrl(everythingServer, ['--http', '127.0.0.1:0'], 'droid-2026-exchange') },
    { name: 'ts-sse', label: 'TS SDK SSE', start: () => startPrintingUrl('node', [tsServer, '--mode', 'sse'], 'ts-exchange') },
  ];
  // rounds: the input_required rounds a 2026-07-28 call must take (a 2025 call ignores it).
  const tools = [
    { tool: 'echo', expected: 'hello', rounds: 0 },
    { tool: 'summarize', expected: 'summary from bench: hi', rounds: 1 },
  ];
  const width = 16;
  const seconds = opt.quick ? 2 : 3;
  const live = [];
  for (const s of servers) {
    try {
      Object.assign(s, await s.start());
      s.sid = s.era === '2026' ? '' : await initialize(s.url, undefined, { sampling: {} });
      for (const t of tools) {
        let id = 1;
        await exchangeCall(s, undefined, () => id++, t).catch((e) => {
          throw new Error(`${t.tool} ${e.message}`);
        });
      }
      live.push(s);
      log(`${s.name} (exchange): ${s.url} (answers checked)`);
      for (const t of tools) await exchangeLoad(s, t, width, 1);  // warm-up
    } catch (e) {
      log(`${s.name} (exchange): not benchmarked: ${e.message}`);
      results.notes.push(`exchange: ${s.name} was not benchmarked: ${e.message}`);
      if (s.child) await stopProcess(s.child);
    }
  }
  const runs = new Map();
  for (let rep = 0; rep < opt.repeats; ++rep) {
    const order = rep % 2 ? [...live].reverse() : live;
    for (const s of order) {
      for (const t of tools) {
        const r = await exchangeLoad(s, t, width, seconds);
        log(`exchange ${s.name} ${t.tool}: ${r.perSecond.toFixed(0)} calls/s p50 ${r.p50?.toFixed(0)} us p99 ${r.p99?.toFixed(0)} us ` +
          `cpu ${r.cpuPerCall.toFixed(1)} us/call${r.errors ? ` ERRORS ${r.errors}: ${r.firstError}` : ''}`);
        const key = `${s.name}/${t.tool}`;
        if (!runs.has(key)) runs.set(key, { server: s.name, label: s.label, tool: t.tool, rs: [] });
        runs.get(key).rs.push(r);
      }
    }
  }
  for (const s of live) await stopProcess(s.child);
  for (const { server, label, tool, rs } of runs.values()) {
    results.exchange.push({
      server, label, tool, connections: width,
      per_second: stats(rs.map((r) => r.perSecond)),
      p50_us: stats(rs.map((r) => r.p50)),
      p99_us: stats(rs.map((r) => r.p99)),
      cpu_us_per_call: stats(rs.map((r) => r.cpuPerCall)),
      errors: rs.reduce((a, r) => a + r.errors, 0),
      runs: rs,
    });
  }
}

/// Instructions per request (user space only), which repeat where wall time does not:
/// each server runs under `valgrind --tool=callgrind`, its counters are zeroed once it is
/// initialized, wrk sends load for a few seconds at 4 connections, and the count is dumped.
async function callgrindSection() {
  const vg = (name) => ['valgrind', '--tool=callgrind', `--callgrind-out-file=${path.join(outDir, `callgrind-${name}.%p`)}`];
  const servers = [
    { name: 'droid-json', label: 'protocol_droid JSON', stateful: true, args: ['--http', '127.0.0.1:0', '--json-response'] },
    { name: 'droid-sse', label: 'protocol_droid SSE', stateful: true, args: ['--http', '127.0.0.1:0'] },
    // Middleware's cost per request: one pass-through middleware, and the rate limiter.
    { name: 'droid-json-mw', label: 'protocol_droid JSON, one pass-through middleware', stateful: true, args: ['--http', '127.0.0.1:0', '--json-response', '--pass-through-middleware'] },
    { name: 'droid-json-limited', label: 'protocol_droid JSON, rate limiter on', stateful: true, args: ['--http', '127.0.0.1:0', '--json-response', '--rate-limit', '1000000000'] },
    { name: 'droid-stateless', label: 'protocol_droid stateless JSON', stateful: false, args: ['--http', '127.0.0.1:0', '--stateless', '--json-response'] },
    { name: 'droid-2026', label: 'protocol_droid 2026-07-28 JSON', stateful: false, era: '2026', lua: call2026Lua, args: ['--http', '127.0.0.1:0', '--json-response'] },
    // The session patterns (docs/benchmarks.md, "Session rows"): each of 4 connections on
    // a session of its own; and the 4 sessions mixed, each request of a connection on the
    // next one, as a proxy's pooled connections carry them.
    { name: 'droid-json-sessions', label: 'protocol_droid JSON, a session per connection', stateful: true, sessions: 4, driver: 'loadgen', args: ['--http', '127.0.0.1:0', '--json-response'] },
    { name: 'droid-json-mixed', label: 'protocol_droid JSON, sessions mixed on connections', stateful: true, sessions: 4, driver: 'loadgen', mix: true, args: ['--http', '127.0.0.1:0', '--json-response'] },
    { name: 'nginx', label: 'nginx (one process)', nginx: true },
  ];
  const control = (pid, flag) => spawnSync('callgrind_control', [flag, String(pid)], { encoding: 'utf8' });
  for (const s of servers.filter(picked)) {
    let started;
    try {
      for (const f of fs.readdirSync(outDir)) if (f.startsWith(`callgrind-${s.name}.`)) fs.rmSync(path.join(outDir, f));
      started = s.nginx ? await startNginx(1, vg(s.name)) : await startPrintingUrl(vg(s.name)[0], [...vg(s.name).slice(1), everythingServer, ...s.args], `callgrind-${s.name}`);
      const server = { ...s, child: started.child, url: started.url };
      server.sid = s.stateful ? await initialize(server.url) : '';
      if (s.sessions) server.sids = await moreSessions(server.url, server.sid, s.sessions);
      if (!s.nginx) await checkEcho(server.url, server.sid, s.era);
      await runWrk(server, 4, 1);  // warm-up, not counted
      control(server.child.pid, '-z');
      const r = await runWrk(server, 4, opt.quick ? 2 : 3);
      control(server.child.pid, '-d');
      await sleep(300);
      let total = 0;
      for (const f of fs.readdirSync(outDir)) {
        if (!f.startsWith(`callgrind-${s.name}.`) || !/\.\d+$/.test(f.replace(`callgrind-${s.name}.`, '').replace(/^\d+/, ''))) continue;
        const m = /^(?:summary|totals): (\d+)/m.exec(fs.readFileSync(path.join(outDir, f), 'utf8'));
        if (m) total += Number(m[1]);
      }
      const perRequest = r.requests ? total / r.requests : NaN;
      log(`callgrind ${s.name}: ${r.requests} requests, ${fmtInt(perRequest)} instructions per request (user space)`);
      // Checked again after the load (the count is already read: this call is not in it).
      if (!s.nginx) {
        await checkEcho(server.url, server.sid, s.era).catch((e) =>
          results.notes.push(`callgrind ${s.name} answered wrongly after the load: ${e.message}`));
      }
      results.callgrind.push({ server: s.name, label: s.label, requests: r.requests, instructions: total, instructions_per_request: perRequest });
    } catch (e) {
      results.notes.push(`callgrind ${s.name}: ${e.message}`);
    } finally {
      if (started) await stopProcess(started.child);
    }
  }
}

async function memorySection() {
  const n = opt.sessions;
  // Every stream comes from 127.0.0.1: without lifting the per-address limit (256 open
  // requests and streams by default), all but 256 GETs would be refused with 429.
  const { child, url } = await startPrintingUrl(everythingServer, ['--http', '127.0.0.1:0', '--max-requests-per-address', '0', '--max-sessions-per-tenant', '0'], 'droid-memory');
  const port = Number(new URL(url).port);
  const mem = { server: 'droid-sse', sessions_asked: n };
  try {
    await sleep(500);
    mem.idle_kib = rssKiB(child.pid);
    // Sessions: initialize + initialized over 16 keep-alive connections; no DELETE.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    const sids = [];
    let refused = 0;
    const t0 = Date.now();
    await pool(Array.from({ length: n }, (_, i) => i), 16, async () => {
      try {
        sids.push(await initialize(url, agent));
      } catch {
        ++refused;
      }
    });
    mem.session_setup_seconds = (Date.now() - t0) / 1000;
    agent.destroy();
    await sleep(1000);
    mem.sessions = sids.length;
    mem.sessions_refused = refused;
    mem.sessions_kib = rssKiB(child.pid);
    mem.kib_per_session = (mem.sessions_kib - mem.idle_kib) / Math.max(1, sids.length);
    log(`memory: idle ${mem.idle_kib} KiB, ${sids.length} sessions ${mem.sessions_kib} KiB ` +
      `(${mem.kib_per_session.toFixed(2)} KiB each, ${refused} refused)`);
    // One standalone GET stream per session, all held open. Each connection is its own,
    // and one address may hold 1,024 (http::options::max_connections_per_address): the
    // streams come from 16 loopback addresses (127.0.0.1-16, all of which reach the
    // server on Linux), at most 625 each for 10,000 sessions, so the server runs with
    // its default connection cap.
    const sockets = [];
    let failed = 0;
    let firstFailure = '';
    let opened = 0;
    await pool(sids, 256, async (sid) => {
      const from = `127.0.0.${1 + (opened++ % 16)}`;
      try {
        sockets.push(await openStream(port, sid, from));
      } catch (e) {
        ++failed;
        firstFailure ||= e.message;
      }
    });
    await sleep(1000);
    mem.streams = sockets.length;
    mem.streams_failed = failed;
    if (firstFailure) mem.first_stream_failure = firstFailure.slice(0, 200);
    mem.streams_kib = rssKiB(child.pid);
    mem.kib_per_stream = (mem.streams_kib - mem.sessions_kib) / Math.max(1, sockets.length);
    log(`memory: ${sockets.length} open SSE streams ${mem.streams_kib} KiB ` +
      `(${mem.kib_per_stream.toFixed(2)} KiB each on top of the session, ${failed} failed${firstFailure ? `: ${firstFailure}` : ''})`);
    // Still answering, with all that held? (On one of the sessions: a new one may be
    // over max_sessions, 10,000 by default.)
    mem.answers_under_load = sids.length ? await checkEcho(url, sids[0]).then(() => true, () => false) : false;
    for (const s of sockets) s.destroy();
  } finally {
    mem.exit = await stopProcess(child);
  }
  results.memory = mem;
}

async function microSection() {
  const dir = path.join(buildDir, 'bench');
  for (const exe of ['decode_bench', 'engine_bench', 'sse_bench']) {
    const file = path.join(dir, exe);
    if (!fs.existsSync(file)) {
      results.notes.push(`${exe} is not built`);
      continue;
    }
    const out = execFileSync(file, ['--benchmark_format=json', `--benchmark_min_time=${opt.microMinTime}`], {
      stdio: ['ignore', 'pipe', 'pipe'],
    }).toString();
    for (const b of JSON.parse(out).benchmarks) {
      const scale = { ns: 1, us: 1e3, ms: 1e6, s: 1e9 }[b.time_unit] ?? 1;
      results.micro.push({
        executable: exe,
        name: b.name,
        ns_per_item: b.cpu_time * scale,
        items_per_second: b.items_per_second ?? null,
        error: b.error_occurred ? b.error_message : null,
      });
    }
    log(`micro ${exe}: done`);
  }
}

// ---- report --------------------------------------------------------------------------
const fmtInt = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : 'n/a');
const fmtUs = (x) => (!Number.isFinite(x) ? 'n/a' : x >= 1000 ? `${(x / 1000).toFixed(2)} ms` : `${Math.round(x)} µs`);
const range = (s, f) => (s ? (s.n > 1 ? `${f(s.median)} (${f(s.min)}–${f(s.max)})` : f(s.median)) : 'n/a');
const ratio = (a, b) => (a && b && b > 0 ? a / b : NaN);
const fmtRatio = (x) => (Number.isFinite(x) ? `${x.toFixed(2)}×` : 'n/a');

/// The row of `server` at `c` connections, for the headline: none when any of its runs
/// had errors (non-2xx answers or socket errors), whose requests/s mean nothing (a
/// refused request costs less than a served one); the table shows the count.
function row(server, c) {
  return results.http.find((r) => r.server === server && r.connections === c && !r.errors);
}

/// The floor at `c` connections: the nginx configuration with more requests per second;
/// with `tls`, the faster of the nginx TLS rows (the floor of the TLS rows).
function floorAt(c, tls = false) {
  const cands = (tls ? ['nginx-tls-1w', 'nginx-tls-2w'] : ['nginx-1w', 'nginx-2w']).map((n) => row(n, c)).filter(Boolean);
  return cands.sort((a, b) => b.rps.median - a.rps.median)[0];
}

function headline() {
  const h = [];
  const add = (metric, value, target, pass, fmt = fmtRatio) =>
    h.push({ metric, value, target, status: !Number.isFinite(value) ? 'n/a' : pass(value) ? 'met' : 'missed', shown: fmt(value) });
  // The targets are the performance issue's, at 64 connections; the 16-connection lines
  // are there to compare, without a target.
  for (const c of [16, 64]) {
    const floor = floorAt(c);
    if (!floor) continue;
    const at64 = c === 64;
    const target = (t, pass) => (at64 ? [t, pass] : ['—', () => true]);
    const vsFloor = (name) => ratio(row(name, c)?.rps.median, floor.rps.median);
    add(`JSON mode req/s vs nginx floor (${floor.server}), ${c} conns`, vsFloor('droid-json'), ...target('≥ 0.85×', (v) => v >= 0.85));
    // The session rows against the floor driven by the same client (loadgen).
    const vs = (name, base) => ratio(row(name, c)?.rps.median, row(base, c)?.rps.median);
    add(`JSON mode, a session per connection, req/s vs nginx floor (nginx-2w-lg, both driven by loadgen), ${c} conns`,
      vs('droid-json-sessions', 'nginx-2w-lg'), ...target('≥ 0.85×', (v) => v >= 0.85));
    add(`JSON mode behind nginx, sessions mixed on its upstream connections, req/s vs nginx in front of the floor (nginx-proxied-floor), ${c} conns`,
      vs('droid-json-proxied', 'nginx-proxied-floor'), ...target('≥ 0.80×', (v) => v >= 0.8));
    add(`the same with upstream connections churning (a keep-alive pool of 16), req/s vs nginx-proxied-floor-churn, ${c} conns`,
      vs('droid-json-proxied-churn', 'nginx-proxied-floor-churn'), '—', () => true);
    // What sessions cost the server, against one shared session, with one client: a
    // session of its own per connection, and sessions mixed on connections (the hand-off
    // between shards that a proxy's connections cause).
    const cpu = (name, base) => ratio(row(name, c)?.cpu_us_per_request.median, row(base, c)?.cpu_us_per_request.median);
    add(`JSON mode server CPU µs/req, a session per connection vs one shared session (both loadgen), ${c} conns`,
      cpu('droid-json-sessions', 'droid-json-lg'), ...target('≤ 1.10×', (v) => v <= 1.1));
    add(`JSON mode server CPU µs/req, sessions mixed on connections vs a session per connection (both loadgen), ${c} conns`,
      cpu('droid-json-mixed', 'droid-json-sessions'), ...target('≤ 1.10×', (v) => v <= 1.1));
    add(`SSE mode req/s vs nginx floor (${floor.server}), ${c} conns`, vsFloor('droid-sse'), ...target('≥ 0.75×', (v) => v >= 0.75));
    add(`stateless JSON (2025) req/s vs nginx floor (${floor.server}), ${c} conns`, vsFloor('droid-stateless'), ...target('≥ 0.90×', (v) => v >= 0.9));
    add(`2026-07-28 JSON req/s vs nginx floor (${floor.server}), ${c} conns`, vsFloor('droid-2026'), ...target('≥ 0.90×', (v) => v >= 0.9));
    add(`JSON mode server CPU µs/req vs nginx (${floor.server}), ${c} conns`,
      ratio(row('droid-json', c)?.cpu_us_per_request.median, floor.cpu_us_per_request.median), ...target('≤ 1.40×', (v) => v <= 1.4));
  }
  // Several instances: what forwarding a request through Redis costs against serving it
  // on the session's owner, both rows with two instances and one Redis counted.
  for (const c of [1, 16, 64]) {
    add(`forwarded request vs owner's, server CPU µs/req (droid-cluster-fwd / droid-cluster-owner), ${c} conns`,
      ratio(row('droid-cluster-fwd', c)?.cpu_us_per_request.median, row('droid-cluster-owner', c)?.cpu_us_per_request.median),
      ...(c === 64 ? ['≤ 2.00×', (v) => v <= 2] : ['—', () => true]));
  }
  // Scaling: what a second shard buys, per core of server CPU (1.00× would be perfect).
  const perCore = (name) => {
    const r = row(name, 64);
    return r ? r.rps.median / r.server_cores.median : NaN;
  };
  add('JSON mode req/s per server core, --threads 2 vs --threads 1, 64 conns', ratio(perCore('droid-json'), perCore('droid-json-1t')), '—', () => true);
  // Informative: whether TLS widens or narrows the gap to the floor (each side pays for
  // its own record encryption with the same OpenSSL). No target: the JSON rows have theirs.
  const tlsFloor = floorAt(64, true);
  if (tlsFloor) {
    add(`JSON mode over TLS req/s vs nginx TLS floor (${tlsFloor.server}), 64 conns`,
      ratio(row('droid-json-tls', 64)?.rps.median, tlsFloor.rps.median), '—', () => true);
  }
  add('SSE mode req/s vs TS SDK SSE, 64 conns', ratio(row('droid-sse', 64)?.rps.median, row('ts-sse', 64)?.rps.median), '≥ 10×', (v) => v >= 10);
  add('stateless JSON req/s vs TS SDK stateless, 64 conns', ratio(row('droid-stateless', 64)?.rps.median, row('ts-stateless', 64)?.rps.median), '—', () => true);
  // p99 against the floor's own p99 in the same run: the machine's latency, not ours.
  const floor64 = floorAt(64);
  const p99Limit = floor64 ? floor64.p99_us.median * 1.2 : NaN;
  for (const m of ['droid-json', 'droid-sse', 'droid-stateless', 'droid-2026']) {
    add(`p99 at 64 conns, ${m} (nginx floor ${fmtUs(floor64?.p99_us.median)})`, row(m, 64)?.p99_us.median,
      `≤ ${fmtUs(p99Limit)}`, (v) => v <= p99Limit, fmtUs);
  }
  // The loadgen rows against their own floors' p99.
  for (const [m, base] of [['droid-json-sessions', 'nginx-2w-lg'], ['droid-json-proxied', 'nginx-proxied-floor']]) {
    const limit = (row(base, 64)?.p99_us.median ?? NaN) * 1.2;
    add(`p99 at 64 conns, ${m} (${base} ${fmtUs(row(base, 64)?.p99_us.median)})`, row(m, 64)?.p99_us.median,
      `≤ ${fmtUs(limit)}`, (v) => v <= limit, fmtUs);
  }
  const ir = (server) => results.callgrind?.find((r) => r.server === server)?.instructions_per_request;
  add('user-space instructions per request vs nginx, JSON mode (callgrind)', ratio(ir('droid-json'), ir('nginx')), '≤ 1.50×', (v) => v <= 1.5);
  // A 2026-07-28 request carries its version, client info and capabilities in _meta on
  // every call, where a 2025 stateless one carries none of it: that may cost at most 10%.
  for (const c of [16, 64]) {
    add(`2026 stateless JSON vs 2025 stateless JSON, CPU µs/req, ${c} conns`,
      ratio(row('droid-2026', c)?.cpu_us_per_request.median, row('droid-stateless', c)?.cpu_us_per_request.median), '≤ 1.10×', (v) => v <= 1.1);
  }
  add('2026 stateless JSON vs 2025 stateless JSON, instructions/req (callgrind)', ratio(ir('droid-2026'), ir('droid-stateless')), '≤ 1.10×', (v) => v <= 1.1);
  const ex = (server, tool) => results.exchange?.find((r) => r.server === server && r.tool === tool)?.per_second?.median;
  const exCpu = (server, tool) => results.exchange?.find((r) => r.server === server && r.tool === tool)?.cpu_us_per_call?.median;
  add('exchange (sampling) server CPU µs/call vs a plain call, protocol_droid (same client)',
    ratio(exCpu('droid-sse', 'summarize'), exCpu('droid-sse', 'echo')), '≤ 3.00×', (v) => v <= 3);
  add('exchange calls/s vs plain calls/s, protocol_droid (same client)', ratio(ex('droid-sse', 'summarize'), ex('droid-sse', 'echo')), '—', () => true);
  add('exchange calls/s vs TS SDK', ratio(ex('droid-sse', 'summarize'), ex('ts-sse', 'summarize')), '—', () => true);
  // A 2026-07-28 exchange is two tools/call POSTs (the second resumes the kept coroutine)
  // where a 2025 one is a call, an event and an answer POST on a session.
  add('2026 exchange vs 2025 exchange, calls/s, protocol_droid', ratio(ex('droid-2026', 'summarize'), ex('droid-sse', 'summarize')), '—', () => true);
  add('2026 exchange vs 2025 exchange, server CPU µs/call, protocol_droid', ratio(exCpu('droid-2026', 'summarize'), exCpu('droid-sse', 'summarize')), '—', () => true);
  add('2026 exchange vs 2026 plain call, calls/s, protocol_droid (same client)', ratio(ex('droid-2026', 'summarize'), ex('droid-2026', 'echo')), '—', () => true);
  const sd = results.stdio.find((r) => r.server === 'droid');
  const st = results.stdio.find((r) => r.server === 'ts');
  add('stdio calls/s vs TS SDK', ratio(sd?.per_second.median, st?.per_second.median), '—', () => true);
  if (results.memory) {
    add(`resident memory per idle session (${results.memory.sessions} sessions)`, results.memory.kib_per_session, '≤ 4 KiB', (v) => v <= 4, (v) => `${v.toFixed(2)} KiB`);
    if (Number.isFinite(results.memory.kib_per_stream)) {
      add('resident memory per open SSE stream', results.memory.kib_per_stream, '≤ 10 KiB', (v) => v <= 10, (v) => `${v.toFixed(2)} KiB`);
    }
  }
  return h;
}

function markdown() {
  const m = results.machine;
  const L = [];
  L.push('# protocol_droid bench results', '');
  L.push(`Command: \`${results.command}\`  `);
  L.push(`Machine: ${m.cpus} × ${m.cpuModel}, Linux ${m.kernel}, ${m.nginx}, ${m.wrk}, node ${m.node}; ${m.date}  `);
  L.push(`Load average at start ${m.loadavg_at_start.join(' ')}, at end ${m.loadavg_at_end.join(' ')} ` +
    '(anything else running on the machine is noise in these numbers).  ');
  L.push(`HTTP: wrk ${results.options.duration} s per run, ${results.options.repeats} run(s) per cell alternating the servers; ` +
    'median (min–max). wrk shares the cores with the server: ratios are the headline.', '');
  if (results.headline?.length) {
    L.push('## Headline', '', '| measure | measured | target | |', '|---|---:|---:|---|');
    for (const h of results.headline) L.push(`| ${h.metric} | ${h.shown} | ${h.target} | ${h.target === '—' ? '' : h.status} |`);
    L.push('');
  }
  if (results.http.length) {
    L.push('## HTTP: tools/call echo, keep-alive', '');
    L.push('| server | conns | req/s | vs floor | p50 | p99 | server CPU µs/req | cores: server / wrk / other | errors |');
    L.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const c of results.options.connections) {
      for (const r of results.http.filter((x) => x.connections === c)) {
        const floor = floorAt(c, r.tls);
        L.push(`| ${r.label} | ${c} | ${range(r.rps, fmtInt)} | ${fmtRatio(ratio(r.rps.median, floor?.rps.median))} | ` +
          `${range(r.p50_us, fmtUs)} | ${range(r.p99_us, fmtUs)} | ${range(r.cpu_us_per_request, (x) => x.toFixed(1))} | ` +
          `${r.server_cores.median.toFixed(2)} / ${r.wrk_cores.median.toFixed(2)} / ${r.other_cores_max.toFixed(2)} | ${r.errors} |`);
      }
    }
    L.push('', '"vs floor": against the faster nginx configuration at the same connection count ' +
      '(for the rows over TLS, the faster nginx TLS configuration). ' +
      '"cores": CPU time over wall time of the server and of wrk (medians), and the most any run saw used by ' +
      'everything else on the machine (noise; 0 on a quiet machine).', '');
  }
  const redisRows = results.http.filter((r) => r.redis_commands_per_request);
  if (redisRows.length) {
    L.push('## Several instances: Redis commands per request, a forwarded request against its owner\'s', '');
    L.push('| server | conns | req/s | server CPU µs/req | of which, by process | Redis commands/req | by command (per request) |', '|---|---:|---:|---:|---|---:|---|');
    for (const c of results.options.connections) {
      for (const r of redisRows.filter((x) => x.connections === c)) {
        const by = Object.entries(r.redis_per_request).filter(([, v]) => v >= 0.005).sort((a, b) => b[1] - a[1])
          .map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ');
        const split = Object.entries(r.cpu_us_per_request_by_process ?? {}).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ');
        L.push(`| ${r.server} | ${c} | ${range(r.rps, fmtInt)} | ${range(r.cpu_us_per_request, (x) => x.toFixed(1))} | ${split} | ` +
          `${range(r.redis_commands_per_request, (x) => x.toFixed(2))} | ${by} |`);
      }
    }
    const own = (c) => row('droid-cluster-owner', c);
    const fwd = (c) => row('droid-cluster-fwd', c);
    if (results.options.connections.some((c) => own(c) && fwd(c))) {
      // The fwd row's Redis commands less its PUBLISHes are the write-behind a request
      // costs; the owner row runs the same requests, so fewer commands there mean that its
      // write-behind was not all sent (the Redis client drops commands past its pipeline's
      // bound when Redis falls behind), and its CPU is then flattered by that much.
      L.push('', '| conns | owner CPU µs/req | forwarded CPU µs/req | forwarded / owner | forwarded − owner µs | Redis cmds/req owner / forwarded | owner\'s write-behind not sent /req |',
        '|---:|---:|---:|---:|---:|---:|---:|');
      for (const c of results.options.connections) {
        const o = own(c);
        const f = fwd(c);
        if (!o || !f) continue;
        L.push(`| ${c} | ${o.cpu_us_per_request.median.toFixed(1)} | ${f.cpu_us_per_request.median.toFixed(1)} | ` +
          `${fmtRatio(ratio(f.cpu_us_per_request.median, o.cpu_us_per_request.median))} | ` +
          `${(f.cpu_us_per_request.median - o.cpu_us_per_request.median).toFixed(1)} | ` +
          `${o.redis_commands_per_request.median.toFixed(2)} / ${f.redis_commands_per_request.median.toFixed(2)} | ` +
          `${Math.max(0, f.redis_commands_per_request.median - (f.redis_per_request.publish ?? 0) - o.redis_commands_per_request.median).toFixed(2)} |`);
      }
    }
    const checks = [...new Map(results.http.filter((r) => r.forwarding_check).map((r) => [r.server, r.forwarding_check])).entries()];
    L.push('', 'Server CPU counts every process of the row: the instances (b1, b2; `bench` for droid-sse-redis), Redis and ' +
      '(droid-cluster-2) nginx. Redis commands: INFO commandstats before and after each run, over the requests (heartbeats included). ' +
      'droid-cluster-owner sends every request to b1, which owns the session; droid-cluster-fwd sends every request ' +
      'to b2, which forwards it through Redis to b1. ' +
      (checks.length ? 'Forwarding check (the session\'s record unchanged after the load; PUBLISH per request ≥ 1 forwarded, ≈ 0 owner): ' +
        checks.map(([n, k]) => `${n} ${k.ok ? 'passed' : `FAILED (${k.problems.join('; ')})`}`).join(', ') + '.' : ''), '');
  }
  if (results.stdio.length) {
    L.push('## stdio: pipelined tools/call through a pipe', '');
    L.push('| server | calls | calls/s | server CPU µs/call |', '|---|---:|---:|---:|');
    for (const r of results.stdio) {
      L.push(`| ${r.label} | ${fmtInt(r.messages)} | ${range(r.per_second, fmtInt)} | ${range(r.cpu_us_per_message, (x) => x.toFixed(1))} |`);
    }
    L.push('');
  }
  if (results.exchange?.length) {
    L.push('## The exchange over HTTP: one sampling round trip per call (16 concurrent, Node client answering at once)', '');
    L.push('| server | tool | calls/s | p50 | p99 | server CPU µs/call | errors |', '|---|---|---:|---:|---:|---:|---:|');
    for (const r of results.exchange) {
      L.push(`| ${r.label} | ${r.tool} | ${range(r.per_second, fmtInt)} | ${range(r.p50_us, fmtUs)} | ${range(r.p99_us, fmtUs)} | ` +
        `${range(r.cpu_us_per_call, (x) => x.toFixed(1))} | ${r.errors} |`);
    }
    L.push('', 'The client is the bench driver (Node), sharing the cores: compare a row with its plain `echo` row, ' +
      'not with wrk\'s numbers. 2025-11-25 rows (a session): `summarize` costs one more POST (the answer) and one more event. ' +
      '2026-07-28 rows (no session): `summarize` is two tools/call POSTs, the first answered `input_required`, ' +
      'the second carrying `inputResponses` and `requestState`; calls/s, latency and CPU count the pair as one call.', '');
  }
  if (results.callgrind?.length) {
    L.push('## Instructions per request (callgrind, user space only; wrk at 4 connections)', '');
    L.push('| server | requests counted | instructions/request | vs nginx |', '|---|---:|---:|---:|');
    const ngx = results.callgrind.find((r) => r.server === 'nginx')?.instructions_per_request;
    for (const r of results.callgrind) {
      L.push(`| ${r.label} | ${fmtInt(r.requests)} | ${fmtInt(r.instructions_per_request)} | ${fmtRatio(ratio(r.instructions_per_request, ngx))} |`);
    }
    L.push('', 'The kernel\'s share (TCP on loopback, epoll, timers) is not counted here; it is in the CPU µs column above.', '');
  }
  if (results.memory) {
    const x = results.memory;
    L.push('## Memory: protocol_droid resident size (SSE mode server)', '');
    L.push('| state | RSS | per item |', '|---|---:|---:|');
    L.push(`| idle | ${fmtInt(x.idle_kib)} KiB | |`);
    L.push(`| ${fmtInt(x.sessions)} initialized idle sessions${x.sessions_refused ? ` (${x.sessions_refused} refused)` : ''} | ${fmtInt(x.sessions_kib)} KiB | ${x.kib_per_session.toFixed(2)} KiB/session |`);
    if (x.streams !== undefined) {
      L.push(`| + ${fmtInt(x.streams)} open SSE GET streams${x.streams_failed ? ` (${x.streams_failed} failed)` : ''} | ${fmtInt(x.streams_kib)} KiB | ${x.kib_per_stream.toFixed(2)} KiB/stream |`);
    }
    L.push('');
  }
  if (results.micro.length) {
    L.push('## Micro-benchmarks (Google Benchmark, CPU time)', '');
    L.push('| benchmark | ns/item | items/s |', '|---|---:|---:|');
    for (const b of results.micro) {
      L.push(`| ${b.executable}/${b.name} | ${b.error ? `FAILED: ${b.error}` : b.ns_per_item.toFixed(1)} | ${fmtInt(b.items_per_second)} |`);
    }
    L.push('');
  }
  if (results.notes.length) {
    L.push('## Notes', '', ...results.notes.map((n) => `- ${n}`), '');
  }
  return L.join('\n');
}

function plot() {
  const servers = [...new Set(results.http.map((r) => r.server))];
  if (!servers.length) return null;
  const dat = path.join(outDir, 'throughput.dat');
  const blocks = servers.map((s) => {
    const rs = results.http.filter((r) => r.server === s);
    return `# ${s}\n` + rs.map((r) => `${r.connections} ${r.rps.median} ${r.rps.min} ${r.rps.max}`).join('\n');
  });
  fs.writeFileSync(dat, blocks.join('\n\n\n') + '\n');
  const png = path.join(outDir, 'throughput.png');
  const labels = servers.map((s) => results.http.find((r) => r.server === s).label);
  const lines = servers.map((s, i) =>
    `'${dat}' index ${i} using 1:2:3:4 with yerrorlines lw 2 pt 7 title '${labels[i]}'`).join(', \\\n     ');
  const script = [
    'set terminal pngcairo size 1400,600 font ",10"',
    'set termoption noenhanced',
    `set output '${png}'`,
    'set multiplot layout 1,2 title ' +
      `"tools/call echo over HTTP keep-alive: median req/s with min-max bars; ${results.machine.cpus} cores shared with wrk"`,
    'set xlabel "connections"',
    'set ylabel "requests per second"',
    'set logscale x 2',
    'set xtics (1, 16, 64)',
    'set xrange [0.8:80]',
    'set grid',
    'set key top left',
    'set title "linear"',
    'set yrange [0:*]',
    `plot ${lines}`,
    'set title "logarithmic (equal distances are equal ratios)"',
    'set logscale y',
    'set yrange [*:*]',
    'set key off',
    `plot ${lines}`,
    'unset multiplot',
    '',
  ].join('\n');
  fs.writeFileSync(path.join(outDir, 'throughput.gp'), script);
  try {
    execFileSync('gnuplot', [path.join(outDir, 'throughput.gp')], { stdio: ['ignore', 'ignore', 'pipe'] });
    return png;
  } catch (e) {
    results.notes.push(`gnuplot failed: ${e.stderr?.toString().trim() ?? e.message}`);
    return null;
  }
}

// ---- main ----------------------------------------------------------------------------
function report() {
  const png = plot();
  const md = markdown() + (png ? `\nPlot: ${path.relative(root, png)}\n` : '');
  fs.writeFileSync(path.join(outDir, 'results.md'), md);
  fs.writeFileSync(path.join(outDir, 'results.json'), JSON.stringify(results, null, 2) + '\n');
  console.log(md);
}

async function main() {
  if (opt.reportOnly) {
    // Renders the table and the plot again from the last run's results.json.
    Object.assign(results, JSON.parse(fs.readFileSync(path.join(outDir, 'results.json'), 'utf8')));
    results.notes = results.notes.filter((n) => !n.startsWith('gnuplot failed'));
    results.headline = headline();
    report();
    return;
  }
  if (!fs.existsSync(everythingServer)) throw new Error(`${everythingServer} is not built`);
  for (const n of opt.servers ?? []) {
    // The callgrind section's own one-process nginx.
    if (n !== 'nginx' && !httpServers.some((s) => s.name === n)) throw new Error(`--servers: no server named ${n}`);
  }
  // The HTTPS rows' certificate, before any server that reads it starts. Without one they
  // fail their start and are named in the notes, like any server that does not answer.
  if (opt.sections.includes('http') && httpServers.some((s) => s.tls && picked(s))) {
    try {
      makeCertificate();
    } catch (e) {
      log(`openssl: no certificate for the TLS rows: ${e.stderr?.toString().trim() ?? e.message}`);
      results.notes.push(`no certificate for the TLS rows: ${e.message}`);
    }
  }
  const t0 = Date.now();
  const sections = {
    http: httpSection, stdio: stdioSection, exchange: exchangeSection, callgrind: callgrindSection,
    memory: memorySection, micro: microSection,
  };
  for (const name of opt.sections) {
    if (!sections[name]) throw new Error(`unknown section ${name}`);
    log(`---- ${name}`);
    try {
      await sections[name]();
    } catch (e) {
      log(`${name}: ${e.stack ?? e.message}`);
      results.notes.push(`section ${name} failed: ${e.message}`);
    }
  }
  results.headline = headline();
  results.seconds = (Date.now() - t0) / 1000;
  results.machine.loadavg_at_end = os.loadavg().map((x) => Number(x.toFixed(2)));
  report();
  log(`done in ${results.seconds.toFixed(0)} s; results in ${path.relative(root, outDir)}/`);
}

main().catch((e) => {
  console.error('bench:', e.stack ?? e.message);
  process.exit(1);
});
