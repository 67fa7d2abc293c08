// SPDX-License-Identifier: BSL-1.0
// What the peer tests (stdio_client.mjs, http_client.mjs, legacy_sse_client.mjs) share:
// the skip-or-fail decision when the SDK is missing, loading the SDK, the `ok` / `not ok`
// reporting, the check that the installed SDK is the pinned one, the watchdog, a tap on
// the JSON-RPC wire and the steps of the exchange (sampling, roots, elicitation).
//
// This module must not import the SDK statically (see loadSdk), and it lives next to the
// scripts and package.json, so `here` and the SDK it resolves are theirs.

import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
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
/// The version of the npm package `name` as installed, `resolve` being the caller's
/// `import.meta.resolve` (packages resolve from the importing module's folder): read from
/// the package's own package.json, found by walking up from its entry point.
export function installedVersion(name, resolve) {
  try {
    let dir = dirname(fileURLToPath(resolve(name)));
    for (;;) {
      try {
        const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
        if (pkg.name === name) return pkg.version;
      } catch { /* no package.json here: keep walking up */ }
      const parent = dirname(dir);
      if (parent === dir) return 'unknown';
      dir = parent;
    }
  } catch {
    return 'unknown';
  }
}

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

/// Resolves once every microtask queued before the call has run (the next turn of the
/// event loop): what the SDK defers that way (its notification handlers) has then run.
/// Why not a short sleep: this is exact, and a sleep is only likely.
export const afterMicrotasks = () => new Promise((resolve) => setImmediate(resolve));

/// Whether `promise` settles within `ms`; the time is only a failure guard, so a wait on
/// an event that is bound to come never depends on it.
export async function within(promise, ms) {
  let timer;
  const guard = new Promise((resolve) => { timer = setTimeout(() => resolve(false), ms); });
  try {
    return await Promise.race([Promise.resolve(promise).then(() => true, () => true), guard]);
  } finally {
    clearTimeout(timer);
  }
}

/// What a tap (tapWire, tapHttp) uses to let a step wait for what it records: `until(
/// condition, ms)` resolves to true once `condition()` holds, checked again each time the
/// tap records something, or to false after `ms` (a failure guard, not a wait).
function conditionWaiters() {
  const waiters = new Set();
  return {
    changed() {
      for (const w of [...waiters]) {
        if (w.condition()) {
          waiters.delete(w);
          w.resolve(true);
        }
      }
    },
    until(condition, ms = 5000) {
      if (condition()) return Promise.resolve(true);
      return new Promise((resolve) => {
        const w = { condition, resolve: (v) => { clearTimeout(timer); resolve(v); } };
        const timer = setTimeout(() => { waiters.delete(w); resolve(false); }, ms);
        waiters.add(w);
      });
    },
  };
}

// ---------------------------------------------------------------------------------------
// The watchdog and the end of the run

let watchdog;

/// Never hang: whatever goes wrong, give up after 60 s; `kill` kills the server.
export function startWatchdog(kill, seconds = 60) {
  watchdog = setTimeout(() => {
    console.log(`not ok - watchdog: the run took longer than ${seconds} s`);
    kill();
    process.exit(1);
  }, seconds * 1000);
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
/// it fills, whose `until(condition, ms)` waits for what it records (conditionWaiters).
/// Protocol.connect() chains to an onmessage that is already set, and send() is
/// wrapped before connect() so the initialize request is seen too: call this before
/// client.connect(transport).
export function tapWire(transport) {
  const wire = [];
  const waiters = conditionWaiters();
  wire.until = waiters.until;
  transport.onmessage = (message) => {
    wire.push({ at: Date.now(), dir: 'in', message });
    if (trace) console.error(`# <- ${show(message)}`);
    waiters.changed();
  };
  const originalSend = transport.send.bind(transport);
  transport.send = (message, options) => {
    wire.push({ at: Date.now(), dir: 'out', message });
    if (trace) console.error(`# -> ${show(message)}`);
    waiters.changed();
    return originalSend(message, options);
  };
  return wire;
}

// ---------------------------------------------------------------------------------------
// The server's stderr

/// Forwards `stream` (the server's stderr, piped) to our stderr unchanged and keeps its
/// lines, so a step can wait for something the server logs. Returns `{ lines, waitFor }`;
/// `waitFor(pattern, ms)` resolves to the first line (from `since` on) that matches, or
/// undefined after `ms`.
export function watchStderr(stream) {
  const lines = [];
  let partial = '';
  const waiters = new Set();
  stream.setEncoding?.('utf8');
  stream.on('data', (chunk) => {
    process.stderr.write(chunk);
    const parts = (partial + chunk).split('\n');
    partial = parts.pop();
    for (const line of parts) {
      lines.push(line);
      for (const w of waiters) w(line);
    }
  });
  async function waitFor(pattern, ms, since = 0) {
    const seen = lines.slice(since).find((l) => pattern.test(l));
    if (seen !== undefined) return seen;
    let waiter;
    const found = await Promise.race([
      new Promise((resolve) => { waiter = (l) => { if (pattern.test(l)) resolve(l); }; waiters.add(waiter); }),
      sleep(ms).then(() => undefined),
    ]);
    waiters.delete(waiter);
    return found;
  }
  return { lines, waitFor };
}

// ---------------------------------------------------------------------------------------
// The server over HTTP (http_client.mjs, legacy_sse_client.mjs)

/// The example server run as `<path> --http 127.0.0.1:0 <args...>`. `start()` spawns it,
/// forwards its stderr (`log`, the watchStderr() result) and resolves to the URL it prints
/// on stdout (`url`); `exit` is `{ code, signal, at }` once it has exited, and `exited` a
/// promise of it; `kill()` SIGKILLs it if it still runs; `stopWithSigterm()` is the SIGTERM
/// check.
export class HttpServer {
  constructor(path, args = []) {
    this.path = path;
    this.args = ['--http', '127.0.0.1:0', ...args];
    this.child = undefined;
    this.exit = null;
    this.log = undefined;
    this.url = undefined;
    let exited;
    this.exited = new Promise((resolve) => { exited = resolve; });
    this.onExit = exited;
  }

  /// Whether the server exits within `ms` (it may have already).
  waitForExit(ms) {
    return within(this.exited, ms);
  }

  get commandLine() {
    return [this.path, ...this.args].join(' ');
  }

  kill() {
    if (this.child && this.exit === null) try { this.child.kill('SIGKILL'); } catch { /* already gone */ }
  }

  /// Spawns the server and waits (up to 10 s) for the first stdout line that starts with
  /// http:// or https://, which must be http(s)://127.0.0.1:<port>/mcp; other stdout lines
  /// are echoed as comments.
  async start() {
    const child = spawn(this.path, this.args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    // A server started again (after it exited) gets a fresh exit to wait for.
    this.exit = null;
    this.exited = new Promise((resolve) => { this.onExit = resolve; });
    this.log = watchStderr(child.stderr);
    child.on('exit', (code, signal) => {
      this.exit = { code, signal, at: Date.now() };
      this.onExit(this.exit);
    });
    const lines = createInterface({ input: child.stdout });
    let url;
    url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Check('no http:// line on stdout within 10 s')), 10_000);
      child.once('error', (error) => { clearTimeout(timer); reject(new Check(`cannot start ${this.path}: ${error.message}`)); });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Check(`the server exited (status ${code}, signal ${signal}) before printing its URL`));
      });
      lines.on('line', (line) => {
        if (url === undefined && /^https?:\/\//.test(line)) {
          clearTimeout(timer);
          url = line.trim();
          resolve(url);
        } else {
          console.log(`# server stdout: ${line}`);
        }
      });
    });
    check(/^https?:\/\/127\.0\.0\.1:[1-9][0-9]*\/mcp$/.test(url), `the URL line is ${show(url)}, want http(s)://127.0.0.1:<port>/mcp`);
    this.url = url;
    console.log(`# server (pid ${child.pid}) listening at ${url}`);
    return url;
  }

  /// SIGTERM: the server must exit with status 0 within 3 s.
  async stopWithSigterm() {
    check(this.exit === null, `the server had already exited: ${show(this.exit)}`);
    const sent = Date.now();
    this.child.kill('SIGTERM');
    await this.waitForExit(3000);
    check(this.exit !== null, `the server (pid ${this.child.pid}) had not exited 3 s after SIGTERM`);
    check(this.exit.signal === null, `the server died of ${this.exit.signal} after SIGTERM`);
    check(this.exit.code === 0, `the server exited with status ${this.exit.code} after SIGTERM`);
    console.log(`# server (pid ${this.child.pid}) exited with status 0 ${this.exit.at - sent} ms after SIGTERM`);
  }
}

/// A tap on HTTP: `fetch` (give it to the SDK's transport) records every exchange in
/// `exchanges`, with the bytes of each response body, read from a tee of the body the SDK
/// reads. An exchange is `{ n, url, method, requestHeaders, requestBody, status, headers,
/// body, ended, sentAt, endedAt, error }`. `until(condition, ms)` waits for what the tap
/// records (conditionWaiters): an exchange begun, answered, given bytes or ended.
export function tapHttp() {
  const exchanges = [];
  const waiters = conditionWaiters();
  async function tapFetch(input, init = {}) {
    const x = {
      n: exchanges.length + 1,
      url: String(input?.url ?? input),
      method: (init.method ?? 'GET').toUpperCase(),
      requestHeaders: Object.fromEntries(new Headers(init.headers ?? {})),
      requestBody: typeof init.body === 'string' ? init.body : undefined,
      status: undefined,
      headers: undefined,
      body: '',
      ended: false,
      sentAt: Date.now(),
    };
    exchanges.push(x);
    if (trace) console.error(`# http ${x.n} -> ${x.method} ${x.url} ${show(x.requestHeaders)} ${x.requestBody ?? ''}`);
    waiters.changed();
    let response;
    try {
      response = await fetch(input, init);
    } catch (error) {
      x.error = String(error);
      x.ended = true;
      waiters.changed();
      throw error;
    }
    x.status = response.status;
    x.headers = Object.fromEntries(response.headers);
    if (trace) console.error(`# http ${x.n} <- ${x.status} ${show(x.headers)}`);
    if (!response.body || [101, 103, 204, 205, 304].includes(response.status)) {
      x.ended = true;
      waiters.changed();
      return response;
    }
    waiters.changed();
    const [mine, theirs] = response.body.tee();
    (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of mine) {
          const text = decoder.decode(chunk, { stream: true });
          x.body += text;
          if (trace) console.error(`# http ${x.n} <- ${show(text)}`);
          waiters.changed();
        }
      } catch (error) {
        x.error = String(error);
      }
      x.ended = true;
      x.endedAt = Date.now();
      if (trace) console.error(`# http ${x.n} <- end of body${x.error ? ` (${x.error})` : ''}`);
      waiters.changed();
    })();
    const copy = new Response(theirs, { status: response.status, statusText: response.statusText, headers: response.headers });
    Object.defineProperty(copy, 'url', { value: response.url });
    return copy;
  }
  return { exchanges, fetch: tapFetch, until: waiters.until };
}

/// One tapped exchange, for a failure message.
export const describeExchange = (x) => x && `${x.method} -> ${x.status} ${show(x.headers?.['content-type'] ?? null)} body ${show(x.body)}${x.error ? ` (${x.error})` : ''}`;

/// The events of a text/event-stream body: `{ event, id, data }` each (`event` and `id`
/// undefined when the event has none; comments and events without data left out).
export function sseEvents(body) {
  const out = [];
  for (const block of body.replace(/\r\n?/g, '\n').split('\n\n')) {
    const lines = block.split('\n');
    const field = (name) => lines.filter((l) => l.startsWith(`${name}:`)).map((l) => l.slice(name.length + 1).replace(/^ /, ''));
    const data = field('data');
    if (data.length === 0) continue;
    out.push({ event: field('event').at(-1), id: field('id').at(-1), data: data.join('\n') });
  }
  return out;
}

/// The `data:` payloads of a text/event-stream body, parsed.
export function sseMessages(body) {
  return sseEvents(body).map(({ data }) => {
    try { return JSON.parse(data); } catch { return { unparseable: data }; }
  });
}

// ---------------------------------------------------------------------------------------
// The exchange: the server's requests to the client (sampling/createMessage, roots/list,
// elicitation/create)

/// What a client declares to answer the example's summarize, roots and book_table tools.
/// `elicitation: {}` is the 2025-06-18 form, which 2025-11-25 reads as form mode only; a
/// client may say `{ form: {} }` instead (SDK 1.32.2 understands both), see
/// `formElicitation`.
export const exchangeCapabilities = { sampling: {}, roots: { listChanged: true }, elicitation: {} };
/// The 2025-11-25 spelling of form-mode elicitation.
export const formElicitation = { form: {} };

/// The roots the client exposes, and the text the example's roots tool makes of them (one
/// root without a name: the tool then prints the bare uri).
export const peerRoots = [
  { uri: 'file:///work/peer-project', name: 'peer project' },
  { uri: 'file:///tmp/peer-scratch' },
];
const rootsText = `${peerRoots.length} root(s)\n${peerRoots.map((r) => (r.name ? `${r.uri} (${r.name})` : r.uri)).join('\n')}`;

/// Registers the client's sampling, roots and elicitation handlers (the client must have
/// declared `exchangeCapabilities`; `schemas` are CreateMessageRequestSchema,
/// ListRootsRequestSchema and ElicitRequestSchema from the SDK's types.js). Every request a
/// handler sees is kept in `sampled` / `rootsAsked` / `elicited`; `answerSampling` and
/// `answerElicitation` (functions of the request) answer sampling and elicitation, or,
/// unset, make the handler throw.
export function answerExchanges(client, { CreateMessageRequestSchema, ListRootsRequestSchema, ElicitRequestSchema }) {
  const state = { sampled: [], rootsAsked: [], elicited: [], answerSampling: undefined, answerElicitation: undefined };
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    state.sampled.push(request);
    if (!state.answerSampling) throw new Error('this step did not expect sampling/createMessage');
    return state.answerSampling(request);
  });
  client.setRequestHandler(ListRootsRequestSchema, async (request) => {
    state.rootsAsked.push(request);
    return { roots: peerRoots };
  });
  // The SDK wraps this handler (Client.setRequestHandler): it checks the request against
  // its ElicitRequestSchema and the declared modes, and our answer against ElicitResultSchema
  // (the action, and content as a flat record of strings, numbers, booleans and string
  // arrays). It does not check the content against the requestedSchema, so an answer that
  // breaks the form's bounds reaches the server as it is.
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    state.elicited.push(request);
    if (!state.answerElicitation) throw new Error('this step did not expect elicitation/create');
    return state.answerElicitation(request);
  });
  return state;
}

/// The server's requests (incoming messages with a method and an id) tapped on `wire`
/// since `from`, with `method`.
const serverRequests = (wire, from, method) =>
  wire.slice(from).filter((w) => w.dir === 'in' && w.message.method === method && w.message.id !== undefined);

/// Our answer on `wire` to the server's request `id`.
const answerTo = (wire, id) => wire.find((w) => w.dir === 'out' && w.message.method === undefined && w.message.id === id);

/// `a` and `b` are the same JSON: objects compare whatever their key order, arrays in order.
export function sameJson(a, b) {
  if (Array.isArray(a) || Array.isArray(b))
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    return sameJson(ka, kb) && ka.every((k) => sameJson(a[k], b[k]));
  }
  return a === b;
}

/// The form the example's book_table asks for: the requestedSchema generated from its
/// `booking` struct (titles and bounds from elicit_hints, the titled enum from
/// enum_titles, defaults from the struct's initializers, `required` from the members that
/// are neither optional nor defaulted).
export const bookingSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', title: 'Name for the booking', minLength: 1 },
    guests: { type: 'integer', title: 'Guests', minimum: 1, maximum: 12, default: 2 },
    place: {
      type: 'string',
      title: 'Seating',
      oneOf: [{ const: 'indoor', title: 'Indoors' }, { const: 'terrace', title: 'On the terrace' }],
      default: 'indoor',
    },
    notes: { type: 'string', title: 'Notes', description: 'Allergies, occasions, ...' },
  },
  required: ['name'],
};
export const bookingMessage = 'Who is the table for?';

/// The steps that drive book_table's form (elicitation/create) through a client that
/// answers it: the form as asked, then each of the user's answers. Called by
/// exchangeSteps; `onAnswered` as there.
export async function elicitationSteps({ client, wire, state, onAnswered }) {
  const toolCall = (from, name) => wire.slice(from).find((w) => w.dir === 'out' && w.message.method === 'tools/call' && w.message.params?.name === name);

  /// Calls book_table with the handler answering `answer(request)`; returns the tool's
  /// result, the server's request and our answer on the wire.
  async function book(answer) {
    const from = wire.length;
    const before = state.elicited.length;
    state.answerElicitation = answer;
    let result;
    try {
      result = await client.callTool({ name: 'book_table', arguments: {} });
    } finally {
      state.answerElicitation = undefined;
    }
    check(state.elicited.length === before + 1, `the elicitation handler ran ${state.elicited.length - before} time(s), want 1`);
    const requests = serverRequests(wire, from, 'elicitation/create');
    check(requests.length === 1, `${requests.length} elicitation/create requests on the wire: ${show(requests.map((w) => w.message))}`);
    const reply = answerTo(wire, requests[0].message.id);
    check(reply, `our answer to ${show(requests[0].message.id)} is not on the wire`);
    const call = toolCall(from, 'book_table');
    const response = wire.slice(from).findIndex((w) => w.dir === 'in' && w.message.id === call.message.id && w.message.method === undefined);
    check(response >= 0 && wire.indexOf(requests[0]) < from + response, 'the tools/call response arrived before the elicitation request');
    if (onAnswered) await onAnswered('elicitation/create', requests[0], call, reply);
    return { result, request: requests[0], reply };
  }
  const answered = (action, content) => () => (content === undefined ? { action } : { action, content });

  await step('book_table: elicitation/create asks for the booking form, as generated from the struct', async () => {
    const { result, request, reply } = await book(answered('decline'));
    const p = request.message.params;
    check(p?.mode === undefined || p.mode === 'form', `mode is ${show(p?.mode)}, want absent or "form"`);
    check(p?.message === bookingMessage, `message is ${show(p?.message)}, want ${show(bookingMessage)}`);
    const schema = p?.requestedSchema;
    const props = schema?.properties ?? {};
    // Piece by piece first, so a failure names what differs; then the whole of it.
    check(schema?.type === 'object', `requestedSchema.type is ${show(schema?.type)}`);
    check(sameJson(schema?.required, ['name']), `required is ${show(schema?.required)}, want ["name"]`);
    check(sameJson(Object.keys(props).sort(), ['guests', 'name', 'notes', 'place']), `properties are ${show(Object.keys(props))}`);
    for (const [name, want] of Object.entries(bookingSchema.properties))
      check(sameJson(props[name], want), `properties.${name} is ${show(props[name])}, want ${show(want)}`);
    check(sameJson(schema, bookingSchema), `requestedSchema is ${show(schema)}, want ${show(bookingSchema)}`);
    check(sameJson(reply.message.result, { action: 'decline' }), `our answer is ${show(reply.message)}`);
    check(!result.isError && textOf(result) === 'booking declined', `the tool answered ${show(result)}`);
    console.log(`# elicitation/create (id ${show(request.message.id)}) ${show(p)}`);
  });

  await step('book_table: accept with every field is the booking', async () => {
    const content = { name: 'Ada', guests: 4, place: 'terrace', notes: 'birthday' };
    const { result, reply } = await book(answered('accept', content));
    check(sameJson(reply.message.result, { action: 'accept', content }), `our answer is ${show(reply.message)}`);
    check(!result.isError, `isError: ${show(result)}`);
    const want = 'booked a table on the terrace for 4, name Ada (birthday)';
    check(textOf(result) === want, `text is ${show(textOf(result))}, want ${show(want)}`);
  });

  await step('book_table: accept with the name alone takes the form\'s defaults', async () => {
    const { result } = await book(answered('accept', { name: 'Bo' }));
    check(!result.isError, `isError: ${show(result)}`);
    const want = 'booked a table indoors for 2, name Bo';
    check(textOf(result) === want, `text is ${show(textOf(result))}, want ${show(want)}`);
  });

  await step('book_table: decline is "booking declined"', async () => {
    const { result, reply } = await book(answered('decline'));
    check(reply.message.result?.action === 'decline', `our answer is ${show(reply.message)}`);
    check(!result.isError, `isError: ${show(result)}`);
    check(textOf(result) === 'booking declined', `text is ${show(textOf(result))}, want "booking declined"`);
  });

  await step('book_table: cancel is "booking cancelled"', async () => {
    const { result, reply } = await book(answered('cancel'));
    check(reply.message.result?.action === 'cancel', `our answer is ${show(reply.message)}`);
    check(!result.isError, `isError: ${show(result)}`);
    check(textOf(result) === 'booking cancelled', `text is ${show(textOf(result))}, want "booking cancelled"`);
  });

  await step('book_table: accepted content outside the form (guests 50) is a tool error saying it was malformed', async () => {
    // SDK 1.32.2 sends this as it is (see answerExchanges): the server is what checks it.
    const content = { name: 'Ada', guests: 50, place: 'terrace' };
    const { result, reply } = await book(answered('accept', content));
    check(sameJson(reply.message.result, { action: 'accept', content }), `the SDK did not send our answer as it was: ${show(reply.message)}`);
    check(result.isError === true, `isError is ${show(result.isError)}: ${show(result)}`);
    check(/malformed/.test(textOf(result)), `text ${show(textOf(result))} does not say malformed`);
    check(/guests/.test(textOf(result)), `text ${show(textOf(result))} does not name guests`);
    console.log(`# book_table with guests 50: ${show(textOf(result))}`);
  });

  await step('book_table: an elicitation handler that throws is a tool error with the client\'s message', async () => {
    const message = 'the user closed the form (peer test)';
    const { result, reply } = await book(() => { throw new Error(message); });
    check(reply.message.error?.message === message, `the SDK answered ${show(reply.message)}, want a JSON-RPC error with our message`);
    check(result.isError === true, `isError is ${show(result.isError)}: ${show(result)}`);
    check(textOf(result) === message, `text is ${show(textOf(result))}, want ${show(message)}`);
  });
}

/// The steps that drive the exchange through a client that answers it (stdio, HTTP with
/// event streams, the legacy HTTP+SSE transport); the elicitation steps come last.
/// `onAnswered(method, request, tool, answer)` may add transport checks: it gets the wire
/// entries of the server's request, of the tools/call and of our answer. `serverLog`, when
/// the server's stderr is watched, is the watchStderr() result.
export async function exchangeSteps({ client, wire, state, clientName, serverLog, onAnswered }) {
  const toolCall = (from, name) => wire.slice(from).find((w) => w.dir === 'out' && w.message.method === 'tools/call' && w.message.params?.name === name);

  await step('summarize: the client\'s model answers sampling/createMessage', async () => {
    const text = 'The peer test asks for a summary of this text: ünïcode, "quotes" and a\nnewline.';
    const maxTokens = 77;
    const problems = [];
    state.answerSampling = (request) => {
      const p = request.params;
      const first = p.messages?.[0];
      if (first?.role !== 'user') problems.push(`messages[0].role is ${show(first?.role)}, want "user"`);
      if (first?.content?.type !== 'text' || !first.content.text?.includes(text))
        problems.push(`messages[0].content is ${show(first?.content)}, want text containing ${show(text)}`);
      if (p.maxTokens !== maxTokens) problems.push(`maxTokens is ${show(p.maxTokens)}, want ${maxTokens}`);
      if (typeof p.systemPrompt !== 'string' || p.systemPrompt.length === 0) problems.push(`systemPrompt is ${show(p.systemPrompt)}`);
      return { role: 'assistant', content: { type: 'text', text: 'a short summary' }, model: 'peer-model', stopReason: 'endTurn' };
    };
    const from = wire.length;
    const before = state.sampled.length;
    let result;
    try {
      result = await client.callTool({ name: 'summarize', arguments: { text, max_tokens: maxTokens } });
    } finally {
      state.answerSampling = undefined;
    }
    check(state.sampled.length === before + 1, `the sampling handler ran ${state.sampled.length - before} time(s), want 1`);
    check(problems.length === 0, `the sampling request was not what summarize asks: ${problems.join('; ')}: ${show(state.sampled.at(-1)?.params)}`);
    check(!result.isError, `isError: ${show(result)}`);
    check(textOf(result) === 'summary from peer-model: a short summary', `text is ${show(textOf(result))}, want "summary from peer-model: a short summary"`);
    const requests = serverRequests(wire, from, 'sampling/createMessage');
    check(requests.length === 1, `${requests.length} sampling/createMessage requests on the wire: ${show(requests.map((w) => w.message))}`);
    const answer = answerTo(wire, requests[0].message.id);
    check(answer?.message.result?.model === 'peer-model', `our answer to ${show(requests[0].message.id)} is ${show(answer?.message)}`);
    const call = toolCall(from, 'summarize');
    const response = wire.slice(from).findIndex((w) => w.dir === 'in' && w.message.id === call.message.id && w.message.method === undefined);
    check(wire.indexOf(requests[0]) < from + response, 'the tools/call response arrived before the sampling request');
    console.log(`# sampling/createMessage (id ${show(requests[0].message.id)}) ${show(requests[0].message.params)}`);
    if (onAnswered) await onAnswered('sampling/createMessage', requests[0], call, answer);
  });

  await step('summarize: a sampling handler that throws is a tool error with the client\'s message', async () => {
    const message = 'the user declined to sample (peer test)';
    state.answerSampling = () => { throw new Error(message); };
    const from = wire.length;
    const before = state.sampled.length;
    let result;
    try {
      result = await client.callTool({ name: 'summarize', arguments: { text: 'anything' } });
    } finally {
      state.answerSampling = undefined;
    }
    check(state.sampled.length === before + 1, `the sampling handler ran ${state.sampled.length - before} time(s), want 1`);
    const requests = serverRequests(wire, from, 'sampling/createMessage');
    check(requests.length === 1, `${requests.length} sampling/createMessage requests on the wire`);
    check(requests[0].message.params?.maxTokens === 200, `maxTokens is ${show(requests[0].message.params?.maxTokens)}, want the default 200`);
    const answer = answerTo(wire, requests[0].message.id);
    check(answer?.message.error?.message === message, `the SDK answered ${show(answer?.message)}, want a JSON-RPC error with our message`);
    check(result.isError === true, `isError is ${show(result.isError)}: ${show(result)}`);
    check(textOf(result) === message, `text is ${show(textOf(result))}, want ${show(message)}`);
    console.log(`# the SDK answered ${show(answer.message.error)}; the tool said ${show(textOf(result))}`);
    if (onAnswered) await onAnswered('sampling/createMessage', requests[0], toolCall(from, 'summarize'), answer);
  });

  await step('roots: the tool lists the client\'s roots (roots/list)', async () => {
    const from = wire.length;
    const before = state.rootsAsked.length;
    const result = await client.callTool({ name: 'roots', arguments: {} });
    check(state.rootsAsked.length === before + 1, `the roots handler ran ${state.rootsAsked.length - before} time(s), want 1`);
    check(!result.isError, `isError: ${show(result)}`);
    check(textOf(result) === rootsText, `text is ${show(textOf(result))}, want ${show(rootsText)}`);
    const requests = serverRequests(wire, from, 'roots/list');
    check(requests.length === 1, `${requests.length} roots/list requests on the wire`);
    const answer = answerTo(wire, requests[0].message.id);
    check(show(answer?.message.result?.roots) === show(peerRoots), `our answer is ${show(answer?.message)}`);
    if (onAnswered) await onAnswered('roots/list', requests[0], toolCall(from, 'roots'), answer);
  });

  await step('sendRootsListChanged: the server takes the notification', async () => {
    const from = wire.length;
    const since = serverLog?.lines.length ?? 0;
    await client.sendRootsListChanged();
    const sent = wire.slice(from).filter((w) => w.dir === 'out' && w.message.method === 'notifications/roots/list_changed');
    check(sent.length === 1, `${sent.length} notifications/roots/list_changed went out`);
    await client.ping(); // the session carries on
    if (!serverLog) {
      console.log('# the server\'s stderr is not watched here: its log of the change is not checked');
      return;
    }
    const pattern = new RegExp(`roots of client ${clientName.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} changed`);
    const line = await serverLog.waitFor(pattern, 2000, since);
    check(line !== undefined, `the server did not log ${pattern} on stderr within 2 s`);
    console.log(`# the server logged: ${show(line)}`);
  });

  await elicitationSteps({ client, wire, state, onAnswered });
}

/// The steps for a session that cannot carry the server's requests (HTTP with JSON replies,
/// stateless HTTP): the three tools are tool errors naming `setting`, and no handler runs.
export async function exchangeRefusedSteps({ client, wire, state, setting, why }) {
  for (const [tool, method, args] of [
    ['summarize', 'sampling/createMessage', { text: 'anything' }],
    ['roots', 'roots/list', {}],
    ['book_table', 'elicitation/create', {}],
  ]) {
    await step(`${tool} is refused ${why}, naming ${setting}`, async () => {
      const from = wire.length;
      const sampled = state.sampled.length;
      const rootsAsked = state.rootsAsked.length;
      const elicited = state.elicited.length;
      const result = await client.callTool({ name: tool, arguments: args });
      check(result.isError === true, `isError is ${show(result.isError)}: ${show(result)}`);
      check(textOf(result).includes(setting), `text ${show(textOf(result))} does not name ${setting}`);
      check(state.sampled.length === sampled && state.rootsAsked.length === rootsAsked && state.elicited.length === elicited,
        `a handler ran: sampling ${state.sampled.length - sampled} time(s), roots ${state.rootsAsked.length - rootsAsked} time(s), ` +
        `elicitation ${state.elicited.length - elicited} time(s)`);
      const requests = serverRequests(wire, from, method);
      check(requests.length === 0, `the server sent ${show(requests.map((w) => w.message))}`);
      console.log(`# ${tool}: ${show(textOf(result))}`);
    });
  }
}

/// The steps for a client that declared none of sampling, roots and elicitation: the three
/// tools are tool errors naming the capability, and the server asks nothing.
export async function exchangeUndeclaredSteps({ client, wire }) {
  for (const [tool, method, capability, args] of [
    ['summarize', 'sampling/createMessage', 'sampling', { text: 'anything' }],
    ['roots', 'roots/list', 'roots', {}],
    ['book_table', 'elicitation/create', 'elicitation', {}],
  ]) {
    await step(`without the ${capability} capability, ${tool} is a tool error naming it`, async () => {
      const from = wire.length;
      const result = await client.callTool({ name: tool, arguments: args });
      check(result.isError === true, `isError is ${show(result.isError)}: ${show(result)}`);
      check(textOf(result).includes(capability), `text ${show(textOf(result))} does not name ${capability}`);
      const requests = serverRequests(wire, from, method);
      check(requests.length === 0, `the server sent ${show(requests.map((w) => w.message))}`);
      console.log(`# ${tool}: ${show(textOf(result))}`);
    });
  }
}

// ---------------------------------------------------------------------------------------
// Certificates

/// Makes, with the openssl command line, a CA in `dir` (ca.pem, ca.key) and, for each of
/// `names`, a P-256 key and a certificate for 127.0.0.1 signed by it (NAME.key,
/// NAME.pem). Why a CA and not self-signed certificates: the clients under test verify
/// the server as they would a real deployment's, trusting the CA through
/// NODE_EXTRA_CA_CERTS. Throws when openssl fails.
export function makeTestCertificates(dir, names) {
  const at = (f) => join(dir, f);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', at('ca.key'), '-out', at('ca.pem'), '-subj', '/CN=droid test CA', '-days', '2'], { stdio: 'ignore' });
  for (const name of names) {
    execFileSync('openssl', ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
      '-keyout', at(`${name}.key`), '-out', at(`${name}.csr`), '-subj', `/CN=${name}`], { stdio: 'ignore' });
    execFileSync('bash', ['-c', `openssl x509 -req -in ${at(`${name}.csr`)} -CA ${at('ca.pem')} -CAkey ${at('ca.key')} `
      + `-CAcreateserial -out ${at(`${name}.pem`)} -days 2 -extfile <(printf 'subjectAltName=IP:127.0.0.1')`], { stdio: 'ignore' });
  }
}
