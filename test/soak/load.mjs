// SPDX-License-Identifier: BSL-1.0
// The soak run's load generator and monitor (scripts/soak; docs/reliability.md#soak-run),
// and its short form, test `example-load` (test/soak/meson.build): starts everything-server
// over HTTP with --diagnostics, drives it with a few concurrent workers mixing every kind of
// traffic, stops the load and checks that the server is back to idle, then starts the load
// again and stops the server with SIGTERM in the middle of it.
//
//   node test/soak/load.mjs EVERYTHING_SERVER MINUTES            # the soak: a line a minute
//   node test/soak/load.mjs EVERYTHING_SERVER --seconds SECONDS  # the short run: a line every 5 s
//
// The soak's verdict is on whether the server's memory and descriptors stayed flat, which
// takes minutes to say. The short run is for the sanitizer builds (ThreadSanitizer above
// all): it runs the server with two shards (--threads 2), so sessions, connections and the
// requests that cross between them land on different threads, and its verdict is what a few
// seconds can show: every kind of operation ran and none failed, and afterwards the server
// holds no session and no connection, no more live frames or descriptors than when idle,
// and exits 0 on SIGTERM under load (a sanitizer report makes it exit otherwise).
//
// The traffic, each worker taking the kinds in turn:
// - churn: a new SDK client initializes, lists tools, calls echo and add, DELETEs its session;
// - exchange: summarize (the server asks the client's model: sampling) and book_table (it
//   asks the user: elicitation), answered by the SDK client's handlers;
// - cancel: a 30 s `sleep` call aborted after 100 ms (the SDK sends notifications/cancelled);
// - resume: a `count` stream dropped after its first progress event, then resumed with GET
//   and Last-Event-ID until its response;
// - drop: a `count` stream dropped after its first event and never resumed;
// - modern: a 2026-07-28 request (no session, routing headers, _meta).
// The SDK is the one test/peer installs (test/peer/node_modules); Node 22 runs it.

import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

import { missingPrerequisite } from '../peer/harness.mjs';

const usage = 'usage: node test/soak/load.mjs EVERYTHING_SERVER MINUTES | --seconds SECONDS';
const [serverPath, ...rest] = process.argv.slice(2);
const short = rest[0] === '--seconds';
const minutes = short ? Number(rest[1]) / 60 : Number(rest[0] ?? 30);
if (!serverPath || !(minutes > 0) || rest.length > (short ? 2 : 1) || (!short && !Number.isInteger(minutes))) {
  console.error(usage);
  process.exit(2);
}

// A missing SDK is a skip (exit 77), or a failure under DROID_REQUIRE_PEERS=1 (as in CI),
// like every peer test's: imported dynamically, so that decision can be made at all.
const sdk = new URL('../peer/node_modules/@modelcontextprotocol/sdk/dist/esm/', import.meta.url);
let Client, StreamableHTTPClientTransport, CreateMessageRequestSchema, ElicitRequestSchema;
try {
  [{ Client }, { StreamableHTTPClientTransport }, { CreateMessageRequestSchema, ElicitRequestSchema }] =
    await Promise.all([import(new URL('client/index.js', sdk)), import(new URL('client/streamableHttp.js', sdk)),
      import(new URL('types.js', sdk))]);
} catch (error) {
  if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
  missingPrerequisite(`@modelcontextprotocol/sdk is not installed in test/peer/node_modules; run scripts/install-deps (${error.message.split('\n')[0]})`);
}

const WORKERS = 3;
// The short run samples every 5 s and reads the server's diagnostics every second; the
// soak a line a minute and diagnostics every 10 s (a line a second for half an hour is noise).
const SAMPLE_MS = short ? 5_000 : 60_000;
const DIAGNOSTICS_S = short ? 1 : 10;
const runMs = minutes * 60_000;
// The verdict's window: the last 10 minutes, or from minute 2 in a shorter run (the first
// minutes fill the allocator's pools and the event rings).
const windowStart = Math.max(2, minutes - 10);
// Flat means: RSS grew by at most this much over the window (a leak of one small object per
// request, at thousands of requests a minute, grows by megabytes a minute), and descriptors
// by at most a few (each worker holds one or two connections at any moment).
const RSS_GROWTH_MIB = 8;
const FD_GROWTH = 2 * WORKERS;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------
// The server

// Two shards in the short run, whatever the machine: it is there to put sessions and their
// connections on different threads. The soak keeps the default (one per core), what users run.
const serverArgs = ['--http', '127.0.0.1:0', '--diagnostics', String(DIAGNOSTICS_S), ...(short ? ['--threads', '2'] : [])];
const server = spawn(serverPath, serverArgs, { stdio: ['ignore', 'pipe', 'pipe'] });
let exited = null, exitedAt = null;
const exitedPromise = new Promise((resolve) => server.on('exit', (code, signal) => {
  exited = { code, signal };
  exitedAt = Date.now();
  resolve();
}));
let diag = null, errTail = '';
// Waiters on the server's diagnostics lines: each `{ until, resolve }` is resolved with the
// first line `until` accepts.
const diagWaiters = new Set();
server.stderr.setEncoding('utf8');
let partial = '';
server.stderr.on('data', (d) => {
  partial += d;
  const lines = partial.split('\n');
  partial = lines.pop();
  for (const line of lines) {
    const m = /diagnostics: sessions (\d+) connections (\d+) live_frames (-?\d+)/.exec(line);
    if (m) {
      diag = { sessions: Number(m[1]), connections: Number(m[2]), frames: Number(m[3]) };
      for (const w of diagWaiters) if (w.until(diag)) w.resolve(diag);
    } else {
      // Everything else the server says (a sanitizer's report above all) goes to our
      // stderr as it comes, and its end is kept for the verdict.
      process.stderr.write(`server: ${line}\n`);
      errTail = (errTail + line + '\n').slice(-4000);
    }
  }
});
const url = await new Promise((resolve, reject) => {
  let out = '';
  server.stdout.on('data', (d) => {
    out += d;
    if (out.includes('\n')) resolve(out.split('\n')[0].trim());
  });
  server.on('exit', () => reject(new Error(`the server exited before listening: ${errTail}`)));
});
const rssMiB = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'))[1]) / 1024;
const fds = () => readdirSync(`/proc/${server.pid}/fd`).length;
/// The first diagnostics line from now on that `until` accepts; after `ms` without one,
/// the last line seen (or null), for the verdict to show.
function diagnostics(until = () => true, ms = 3 * DIAGNOSTICS_S * 1000) {
  return new Promise((resolve) => {
    const w = { until, resolve: (d) => { diagWaiters.delete(w); clearTimeout(timer); resolve(d); } };
    const timer = setTimeout(() => w.resolve(diag), ms);
    diagWaiters.add(w);
  });
}

// ---------------------------------------------------------------------------------------
// Counting

// The operations of the load phase. Those of the shutdown (see the end) are counted apart:
// they are expected to fail once the server is gone.
let done = {}, failed = {}, firstErrors = [];
let clientSessions = 0;  // sessions the load generator holds open right now
function count(kind, ok, why) {
  (ok ? done : failed)[kind] = ((ok ? done : failed)[kind] ?? 0) + 1;
  if (!ok && firstErrors.length < 20) firstErrors.push(`${kind}: ${why}`);
  settle();
}
let inFlight = 0;  // operations under way right now
// Who waits for the counts to reach some state: `until` is checked again whenever an
// operation starts or ends.
const loadWaiters = new Set();
function settle() {
  for (const w of loadWaiters) {
    if (w.until()) {
      loadWaiters.delete(w);
      w.resolve();
    }
  }
}
function whenLoad(until) {
  return until() ? Promise.resolve() : new Promise((resolve) => loadWaiters.add({ until, resolve }));
}
const total = (o) => Object.values(o).reduce((a, b) => a + b, 0);
class Unexpected extends Error {}
function expect(condition, why) {
  if (!condition) throw new Unexpected(why);
}
const textOf = (result) => (result?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');

// ---------------------------------------------------------------------------------------
// Raw HTTP

const mcpHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
async function rawInitialize() {
  const r = await fetch(url, { method: 'POST', headers: mcpHeaders, body: JSON.stringify({ jsonrpc: '2.0', id: 0,
    method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'soak-raw', version: '1' } } }) });
  await r.text();
  const sid = r.headers.get('mcp-session-id');
  expect(r.status === 200 && sid, `initialize: HTTP ${r.status}`);
  const n = await fetch(url, { method: 'POST', headers: { ...mcpHeaders, 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  await n.text();
  clientSessions += 1;
  return sid;
}
async function rawDelete(sid) {
  const r = await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': sid } });
  await r.text();
  clientSessions -= 1;
  expect(r.status === 200, `DELETE: HTTP ${r.status}`);
}

/// Reads SSE events from `response` and calls `onEvent({id, data})` for each whole one,
/// until it returns true (then the stream is dropped) or the stream ends.
async function readEvents(response, controller, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { value, done: ended } = await reader.read();
      if (ended) return false;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const id = /^id: (.*)$/m.exec(block)?.[1];
        const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
        if (onEvent({ id, data: data ? JSON.parse(data) : null })) {
          controller.abort();
          return true;
        }
      }
    }
  } catch (error) {
    if (error.name === 'AbortError') return true;
    throw error;
  }
}

let rawId = 1;
/// Starts `count` on `sid` and drops its stream after the first progress event; returns the
/// last event id seen and the request's id.
async function startCountAndDrop(sid, steps) {
  const id = rawId++;
  const controller = new AbortController();
  const r = await fetch(url, { method: 'POST', headers: { ...mcpHeaders, 'mcp-session-id': sid }, signal: controller.signal,
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call',
      params: { name: 'count', arguments: { steps, interval_ms: 30 }, _meta: { progressToken: `p${id}` } } }) });
  expect(r.status === 200, `count: HTTP ${r.status}`);
  let last = null, progress = 0;
  await readEvents(r, controller, (e) => {
    if (e.id) last = e.id;
    if (e.data?.method === 'notifications/progress') progress += 1;
    return progress >= 1;
  });
  expect(last && progress >= 1, 'count: no progress event before the drop');
  return { id, last, progress };
}

async function resume(sid) {
  const { id, last, progress } = await startCountAndDrop(sid, 4);
  const controller = new AbortController();
  const r = await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'last-event-id': last },
    signal: controller.signal });
  expect(r.status === 200, `resume: HTTP ${r.status}`);
  let result = null, more = 0;
  const timer = setTimeout(() => controller.abort(), 10_000);
  await readEvents(r, controller, (e) => {
    if (e.data?.method === 'notifications/progress') more += 1;
    if (e.data?.id === id) result = e.data.result;
    return result !== null;
  });
  clearTimeout(timer);
  expect(textOf(result) === 'counted to 4', `resume: result ${JSON.stringify(result)}`);
  expect(progress + more === 4, `resume: ${progress} + ${more} progress events, want 4 (none lost, none twice)`);
}

async function modern() {
  const text = `modern ${rawId}`;
  const id = rawId++;
  const r = await fetch(url, { method: 'POST', headers: { ...mcpHeaders, 'mcp-protocol-version': '2026-07-28',
    'mcp-method': 'tools/call', 'mcp-name': 'echo' }, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call',
    params: { name: 'echo', arguments: { text }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {} } } }) });
  const body = await r.text();
  expect(r.status === 200, `2026 echo: HTTP ${r.status} ${body.slice(0, 200)}`);
  expect(body.includes(`"text":"${text}"`) && body.includes('"resultType":"complete"'), `2026 echo: ${body.slice(0, 200)}`);
}

// ---------------------------------------------------------------------------------------
// The SDK client

async function sdkClient(name, withHandlers, fetchImpl = undefined) {
  const client = new Client({ name, version: '1' },
    { capabilities: withHandlers ? { sampling: {}, elicitation: { form: {} } } : {} });
  if (withHandlers) {
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({ model: 'soak-model', role: 'assistant',
      content: { type: 'text', text: 'a short summary' } }));
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Soak', guests: 3 } }));
  }
  const transport = new StreamableHTTPClientTransport(new URL(url), fetchImpl ? { fetch: fetchImpl } : undefined);
  await client.connect(transport);
  clientSessions += 1;
  return { client, transport };
}
async function sdkClose({ client, transport }) {
  await transport.terminateSession();
  clientSessions -= 1;
  await client.close();
}

async function churn(w) {
  const c = await sdkClient(`soak-churn-${w}`, false);
  try {
    const tools = await c.client.listTools();
    expect(tools.tools.some((t) => t.name === 'echo'), 'churn: no echo tool');
    expect(textOf(await c.client.callTool({ name: 'echo', arguments: { text: 'churn' } })) === 'churn', 'churn: echo');
    const sum = await c.client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
    expect(sum.structuredContent?.result === 5, `churn: add gave ${JSON.stringify(sum)}`);
  } finally {
    await sdkClose(c);
  }
}

async function exchange(c) {
  const s = await c.client.callTool({ name: 'summarize', arguments: { text: 'a long text' } });
  expect(textOf(s) === 'summary from soak-model: a short summary', `summarize: ${JSON.stringify(s)}`);
  const b = await c.client.callTool({ name: 'book_table', arguments: {} });
  expect(textOf(b).startsWith('booked a table indoors for 3, name Soak'), `book_table: ${JSON.stringify(b)}`);
}

async function cancel(c) {
  const controller = new AbortController();
  const call = c.client.callTool({ name: 'sleep', arguments: { seconds: 30 } }, undefined, { signal: controller.signal });
  await sleep(100);
  controller.abort();
  let aborted = false;
  try {
    await call;
  } catch (error) {
    aborted = true;
  }
  expect(aborted, 'cancel: the aborted sleep call resolved');
  await c.client.ping();
}

// ---------------------------------------------------------------------------------------
// Workers and the monitor

const kinds = ['churn', 'exchange', 'cancel', 'resume', 'drop', 'modern'];
let running = true;
async function worker(w) {
  let c = null, sid = null, uses = 0;
  for (let turn = w; running; turn += 1) {
    const kind = kinds[turn % kinds.length];
    inFlight += 1;
    settle();
    try {
      // The long-lived sessions are renewed now and then, so they churn too.
      if (uses >= 30) {
        if (c) await sdkClose(c);
        if (sid) await rawDelete(sid);
        c = sid = null;
        uses = 0;
      }
      c ??= await sdkClient(`soak-${w}`, true);
      sid ??= await rawInitialize();
      uses += 1;
      if (kind === 'churn') await churn(w);
      else if (kind === 'exchange') await exchange(c);
      else if (kind === 'cancel') await cancel(c);
      else if (kind === 'resume') await resume(sid);
      else if (kind === 'drop') await startCountAndDrop(sid, 10);
      else await modern();
      count(kind, true);
    } catch (error) {
      count(kind, false, error instanceof Unexpected ? error.message : (error?.stack ?? String(error)).split('\n').slice(0, 3).join(' | '));
      // Start the worker's sessions afresh: one of them may be what failed.
      c = sid = null;
      uses = 0;
      inFlight -= 1;
      await sleep(200);
      continue;
    }
    inFlight -= 1;
    await sleep(10);
  }
  if (c) await sdkClose(c).catch(() => {});
  if (sid) await rawDelete(sid).catch(() => {});
}

const started = Date.now();
const samples = [];
const idleFrames = (await diagnostics())?.frames ?? 0;
const startFds = fds();
const unit = short ? 's' : 'min';
console.log(`soak: ${serverPath} at ${url}, ${short ? `${runMs / 1000} s` : `${minutes} min`}, ${WORKERS} workers, ` +
  `server ${serverArgs.join(' ')}; idle: RSS ${rssMiB().toFixed(1)} MiB, ${startFds} fds, ${idleFrames} live frames`);
console.log(`${unit.padStart(5)}   RSS MiB   fds  sessions(server/load)  conns  frames        ops  errors`);
function sample(at) {
  const s = { at, rss: rssMiB(), fds: fds(), requests: total(done), errors: total(failed), ...diag };
  samples.push(s);
  console.log(`${String(at).padStart(5)} ${s.rss.toFixed(1).padStart(9)} ${String(s.fds).padStart(5)} ` +
    `${`${s.sessions ?? '?'}/${clientSessions}`.padStart(22)} ${String(s.connections ?? '?').padStart(6)} ` +
    `${String(s.frames ?? '?').padStart(7)} ${String(s.requests).padStart(10)} ${String(s.errors).padStart(7)}`);
}
const workers = Array.from({ length: WORKERS }, (_, w) => worker(w));
for (let n = 1; n * SAMPLE_MS <= runMs; n += 1) {
  await Promise.race([sleep(started + n * SAMPLE_MS - Date.now()), exitedPromise]);
  if (exited) break;
  sample(short ? n * SAMPLE_MS / 1000 : n);
}
await Promise.race([sleep(started + runMs - Date.now()), exitedPromise]);
running = false;
await Promise.all(workers);

// Drained: every session the load opened is deleted, and the client's pooled keep-alive
// connections close on their own within seconds (Node's fetch keeps one idle for 4 s).
// What is left after that is what leaked: waited for as a diagnostics line that shows it,
// for at most 20 s or three diagnostics periods before the verdict reads what it has.
const idle = (d) => d.sessions === 0 && d.connections === 0 && d.frames <= idleFrames;
const after = exited ? diag : await diagnostics(idle, Math.max(20_000, 3 * DIAGNOSTICS_S * 1000));
const afterFds = exited ? NaN : fds();
const verdicts = [];
function verdict(ok, what) {
  verdicts.push(ok);
  console.log(`${ok ? 'ok' : 'NOT OK'} - ${what}`);
}
console.log(`soak: ${total(done)} operations done, ${total(failed)} failed; by kind: ${JSON.stringify(done)}` +
  (total(failed) ? `; failed: ${JSON.stringify(failed)}` : ''));
for (const e of firstErrors) console.log(`  error: ${e}`);
verdict(exited === null, `the server ran throughout${exited ? ` (exited: ${JSON.stringify(exited)}; ${errTail})` : ''}`);
verdict(total(failed) === 0, `no operation failed unexpectedly (${total(failed)} failed)`);
if (short) {
  // Without this a server that served nothing would pass every other line.
  const missing = kinds.filter((k) => !done[k]);
  verdict(missing.length === 0, `every kind of operation ran at least once${missing.length ? ` (never: ${missing.join(', ')})` : ''}`);
} else {
  const inWindow = samples.filter((s) => s.at >= windowStart);
  const first = inWindow[0], last = inWindow.at(-1);
  if (first && last && last.at > first.at) {
    verdict(last.rss - first.rss <= RSS_GROWTH_MIB, `RSS flat from minute ${first.at} to ${last.at}: ` +
      `${first.rss.toFixed(1)} -> ${last.rss.toFixed(1)} MiB (at most +${RSS_GROWTH_MIB})`);
    verdict(last.fds - first.fds <= FD_GROWTH, `descriptors flat from minute ${first.at} to ${last.at}: ` +
      `${first.fds} -> ${last.fds} (at most +${FD_GROWTH})`);
  } else {
    verdict(false, `the run is too short for a verdict (the window starts at minute ${windowStart})`);
  }
}
verdict(afterFds <= startFds + 2, `descriptors after the load: ${afterFds} (idle at the start: ${startFds})`);
verdict(after?.sessions === 0, `sessions after the load: ${after?.sessions} (want 0: the load deleted all it opened)`);
verdict(after?.connections === 0, `connections after the load: ${after?.connections} (want 0: the load closed all it opened)`);
verdict(after?.frames !== undefined && after.frames <= idleFrames,
  `live coroutine frames after the load: ${after?.frames} (idle at the start: ${idleFrames})`);

// Last, a shutdown under load: the workers start again, one more client holds a 30 s
// `sleep` call (which the drain deadline, 2 s, must cut short), and SIGTERM comes once
// every worker has an operation under way. The server must exit 0, and in bounded time;
// what the workers see meanwhile is not judged (their requests fail as the server goes).
if (!exited) {
  // From the SIGTERM on, the SDK's own sends (a cancel, a reconnection) fail with nobody
  // awaiting them; before it, an unhandled rejection is a failure as usual.
  let stopping = false;
  process.on('unhandledRejection', (reason) => {
    if (stopping) return;
    console.log(`NOT OK - an unhandled rejection under load: ${reason?.stack ?? reason}`);
    process.exit(1);
  });
  done = {};
  failed = {};
  firstErrors = [];
  running = true;
  // Not awaited: what they are doing when the server goes is left to fail, and
  // process.exit below ends it.
  for (let w = 0; w < WORKERS; w += 1) worker(w);
  // The held call is under way once the server has answered its POST with the head of an
  // event stream.
  let heldStarted;
  const heldUnderWay = new Promise((resolve) => { heldStarted = resolve; });
  const holder = await sdkClient('soak-holder', false, async (input, init) => {
    const response = await fetch(input, init);
    if (typeof init?.body === 'string' && init.body.includes('"sleep"') && response.ok) heldStarted();
    return response;
  }).catch(() => null);
  holder?.client.callTool({ name: 'sleep', arguments: { seconds: 30 } }).catch(() => {});
  // Every worker past its first operations (its sessions open) and in the middle of one.
  // (30 s is only the guard of a load that never gets going.)
  const loaded = await Promise.race([Promise.all([holder ? heldUnderWay : null,
    whenLoad(() => total(done) >= 2 * WORKERS && inFlight >= WORKERS)]).then(() => true),
  exitedPromise.then(() => false), sleep(30_000).then(() => false)]);
  const inFlightAtStop = inFlight, sessionsAtStop = clientSessions;
  const sent = Date.now();
  stopping = true;
  server.kill('SIGTERM');
  await Promise.race([exitedPromise, sleep(15_000)]);
  running = false;
  verdict(exited?.code === 0 && exited?.signal === null && loaded,
    `the server stopped cleanly on SIGTERM under load (${JSON.stringify(exited)}, ` +
    `${exited ? `${exitedAt - sent} ms after it` : 'not within 15 s'}; ${inFlightAtStop} operations under way, ` +
    `${sessionsAtStop} sessions open${holder ? ', a 30 s call held' : ', the holding client failed to connect'}` +
    `${loaded ? '' : '; the load never got going, or the server had exited'})`);
} else {
  verdict(false, `the server stopped cleanly on SIGTERM under load (it had exited: ${JSON.stringify(exited)})`);
}
server.kill('SIGKILL');
const pass = verdicts.every(Boolean);
console.log(pass ? 'soak: PASS' : 'soak: FAIL');
process.exit(pass ? 0 : 1);
