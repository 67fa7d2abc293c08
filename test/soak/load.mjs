// SPDX-License-Identifier: BSL-1.0
// The soak run's load generator and monitor (scripts/soak; docs/reliability.md#soak-run):
// starts everything-server over HTTP with --diagnostics, drives it for MINUTES with a few
// concurrent workers mixing every kind of traffic, prints one line a minute, and ends with a
// verdict on whether the server's memory and descriptors stayed flat.
//
//   node test/soak/load.mjs EVERYTHING_SERVER MINUTES
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

const sdk = new URL('../peer/node_modules/@modelcontextprotocol/sdk/dist/esm/', import.meta.url);
const [{ Client }, { StreamableHTTPClientTransport }, { CreateMessageRequestSchema, ElicitRequestSchema }] =
  await Promise.all([import(new URL('client/index.js', sdk)), import(new URL('client/streamableHttp.js', sdk)),
    import(new URL('types.js', sdk))]);

const [serverPath, minutesArg] = process.argv.slice(2);
const minutes = Number(minutesArg ?? 30);
if (!serverPath || !(minutes > 0)) {
  console.error('usage: node test/soak/load.mjs EVERYTHING_SERVER MINUTES');
  process.exit(2);
}
const WORKERS = 3;
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

const server = spawn(serverPath, ['--http', '127.0.0.1:0', '--diagnostics', '10'], { stdio: ['ignore', 'pipe', 'pipe'] });
let exited = null;
server.on('exit', (code, signal) => { exited = { code, signal }; });
let diag = null, diagSeen = 0, errTail = '';
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
      diagSeen += 1;
    } else {
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
async function freshDiagnostics() {
  const seen = diagSeen;
  for (let waited = 0; diagSeen === seen && waited < 15_000; waited += 100) await sleep(100);
  return diag;
}

// ---------------------------------------------------------------------------------------
// Counting

const done = {}, failed = {}, firstErrors = [];
let clientSessions = 0;  // sessions the load generator holds open right now
function count(kind, ok, why) {
  (ok ? done : failed)[kind] = ((ok ? done : failed)[kind] ?? 0) + 1;
  if (!ok && firstErrors.length < 20) firstErrors.push(`${kind}: ${why}`);
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

async function sdkClient(name, withHandlers) {
  const client = new Client({ name, version: '1' },
    { capabilities: withHandlers ? { sampling: {}, elicitation: { form: {} } } : {} });
  if (withHandlers) {
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({ model: 'soak-model', role: 'assistant',
      content: { type: 'text', text: 'a short summary' } }));
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Soak', guests: 3 } }));
  }
  const transport = new StreamableHTTPClientTransport(new URL(url));
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

let running = true;
async function worker(w) {
  let c = null, sid = null, uses = 0;
  const kinds = ['churn', 'exchange', 'cancel', 'resume', 'drop', 'modern'];
  for (let turn = w; running; turn += 1) {
    const kind = kinds[turn % kinds.length];
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
      await sleep(200);
    }
    await sleep(10);
  }
  if (c) await sdkClose(c).catch(() => {});
  if (sid) await rawDelete(sid).catch(() => {});
}

const started = Date.now();
const samples = [];
const idleFrames = (await freshDiagnostics())?.frames ?? 0;
const startFds = fds();
console.log(`soak: ${serverPath} at ${url}, ${minutes} min, ${WORKERS} workers; idle: RSS ${rssMiB().toFixed(1)} MiB, ` +
  `${startFds} fds, ${idleFrames} live frames`);
console.log('  min   RSS MiB   fds  sessions(server/load)  conns  frames        ops  errors');
function sample(minute) {
  const s = { minute, rss: rssMiB(), fds: fds(), requests: total(done), errors: total(failed), ...diag };
  samples.push(s);
  console.log(`${String(minute).padStart(5)} ${s.rss.toFixed(1).padStart(9)} ${String(s.fds).padStart(5)} ` +
    `${`${s.sessions ?? '?'}/${clientSessions}`.padStart(22)} ${String(s.connections ?? '?').padStart(6)} ` +
    `${String(s.frames ?? '?').padStart(7)} ${String(s.requests).padStart(10)} ${String(s.errors).padStart(7)}`);
}
const workers = Array.from({ length: WORKERS }, (_, w) => worker(w));
for (let minute = 1; minute <= minutes; minute += 1) {
  await sleep(started + minute * 60_000 - Date.now());
  if (exited) break;
  sample(minute);
}
running = false;
await Promise.all(workers);

// Drained: every session the load opened is deleted; what is left is what leaked.
await sleep(2000);
const after = await freshDiagnostics();
const afterFds = fds();
const verdicts = [];
function verdict(ok, what) {
  verdicts.push(ok);
  console.log(`${ok ? 'ok' : 'NOT OK'} - ${what}`);
}
const inWindow = samples.filter((s) => s.minute >= windowStart);
const first = inWindow[0], last = inWindow.at(-1);
console.log(`soak: ${total(done)} operations done, ${total(failed)} failed; by kind: ${JSON.stringify(done)}` +
  (total(failed) ? `; failed: ${JSON.stringify(failed)}` : ''));
for (const e of firstErrors) console.log(`  error: ${e}`);
verdict(exited === null, `the server ran throughout${exited ? ` (exited: ${JSON.stringify(exited)}; ${errTail})` : ''}`);
verdict(total(failed) === 0, `no operation failed unexpectedly (${total(failed)} failed)`);
if (first && last && last.minute > first.minute) {
  verdict(last.rss - first.rss <= RSS_GROWTH_MIB, `RSS flat from minute ${first.minute} to ${last.minute}: ` +
    `${first.rss.toFixed(1)} -> ${last.rss.toFixed(1)} MiB (at most +${RSS_GROWTH_MIB})`);
  verdict(last.fds - first.fds <= FD_GROWTH, `descriptors flat from minute ${first.minute} to ${last.minute}: ` +
    `${first.fds} -> ${last.fds} (at most +${FD_GROWTH})`);
} else {
  verdict(false, `the run is too short for a verdict (the window starts at minute ${windowStart})`);
}
verdict(afterFds <= startFds + 2, `descriptors after the load: ${afterFds} (idle at the start: ${startFds})`);
verdict(after?.sessions === 0, `sessions after the load: ${after?.sessions} (want 0: the load deleted all it opened)`);
verdict(after?.frames !== undefined && after.frames <= idleFrames,
  `live coroutine frames after the load: ${after?.frames} (idle at the start: ${idleFrames})`);

server.kill('SIGTERM');
for (let waited = 0; exited === null && waited < 10_000; waited += 100) await sleep(100);
verdict(exited?.code === 0, `the server stopped cleanly on SIGTERM (${JSON.stringify(exited)})`);
const pass = verdicts.every(Boolean);
console.log(pass ? 'soak: PASS' : 'soak: FAIL');
process.exit(pass ? 0 : 1);
