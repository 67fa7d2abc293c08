// SPDX-License-Identifier: BSL-1.0
// Peer test: the tools that ask the client something (sampling, form elicitation, roots)
// give the same results in both protocol eras, driven by the official MCP TypeScript
// client 2.x (@modelcontextprotocol/client, pinned in package.json here) through one set
// of request handlers.
//
//     node test/peer-modern/rounds.mjs stdio 2026-07-28 build/examples/everything-server
//     node test/peer-modern/rounds.mjs http  2026-07-28 build/examples/everything-server
//     node test/peer-modern/rounds.mjs stdio 2025-11-25 build/examples/everything-server
//     node test/peer-modern/rounds.mjs http  2025-11-25 build/examples/everything-server
//
// 2026-07-28 (versionNegotiation pinned): a tool's question is not a server request but
// an `input_required` result; the client's multi round-trip driver answers its
// inputRequests through the handlers registered with setRequestHandler and retries the
// call (new id, `inputResponses`, `requestState` echoed) until the result is complete. The
// wire checks hold the server to that: each round's first response is input_required, the
// retry carries the answers and the exact requestState, and the server never sends a
// JSON-RPC request (2026-07-28 has no server-to-client request channel).
//
// 2025-11-25 (versionNegotiation 'legacy', supportedProtocolVersions ['2025-11-25']: the
// 2.x client refuses to pin a 2025 revision): initialize, then the same questions arrive
// as real server requests on the call's stream and the same handlers answer them. The
// expected tool results are the same constants in both eras: one tool, two eras,
// identical results.
//
// Over stdio the client spawns the server; over HTTP the server is run as
// `<server> --http 127.0.0.1:0` and its URL read from its stdout. Needs Node >= 20. Prints
// one `ok - <step>` or `not ok - <step>: <why>` line per step and exits 1 if any step
// failed; exit 77 (skipped) when the client is not installed or Node is too old, unless
// DROID_REQUIRE_PEERS=1, which makes that a failure. DROID_PEER_TRACE=1 prints every
// JSON-RPC message to stderr.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  bookingMessage, bookingSchema, check, exitWithSummary, HttpServer, missingPrerequisite, peerRoots, sameJson, show,
  installedVersion, sseMessages, startWatchdog, step, tapHttp, tapWire, textOf, watchStderr,
} from '../peer/harness.mjs';

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const PACKAGE = '@modelcontextprotocol/client';
const CAPABILITIES_META = 'io.modelcontextprotocol/clientCapabilities';
const here = dirname(fileURLToPath(import.meta.url));

const usage = `usage: node rounds.mjs <stdio|http> <${MODERN}|${LEGACY}> <path to everything-server>`;
const [transportKind, era, serverPath, ...extra] = process.argv.slice(2);
if (!['stdio', 'http'].includes(transportKind) || ![MODERN, LEGACY].includes(era) || !serverPath || extra.length > 0) {
  console.log(`not ok - arguments: ${usage}`);
  process.exit(1);
}
const modern = era === MODERN;

// ---------------------------------------------------------------------------------------
// Prerequisites: Node >= 20 and the pinned client

if (Number(process.versions.node.split('.')[0]) < 20) {
  missingPrerequisite(`${PACKAGE} needs Node >= 20, this is ${process.version} (${process.execPath}); ` +
    'run `npm ci --prefix test/conformance` for the Node 22 the tests use, and reconfigure');
}

// Imported dynamically: a static import of a missing package throws before the
// skip-or-fail decision could be made.
let sdk, stdioSdk;
try {
  sdk = await import(PACKAGE);
  stdioSdk = await import(`${PACKAGE}/stdio`);
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

// ---------------------------------------------------------------------------------------
// Clients

// Every client of the run, for the watchdog and the end-of-run checks.
const clients = [];

startWatchdog(() => {
  httpServer?.kill();
  for (const c of clients) if (c.transport.pid) try { process.kill(c.transport.pid, 'SIGKILL'); } catch { /* already gone */ }
});

function finish() {
  httpServer?.kill();
  exitWithSummary();
}

/// A client of `era` over the run's transport declaring `capabilities`, with the wire
/// tapped (and, over HTTP, every exchange). Not connected yet.
function makeClient(name, capabilities) {
  const clientInfo = { name: `droid-peer-rounds-${name}-${transportKind}-${era}`, version: '2.0.0' };
  const options = modern
    ? { capabilities, versionNegotiation: { mode: { pin: MODERN } } }
    // { pin: '2025-11-25' } is a TypeError in 2.4.0 (pinning is for 2026-07-28 and
    // later): 'legacy' is the plain initialize handshake, offering the first 2025 entry.
    : { capabilities, versionNegotiation: { mode: 'legacy' }, supportedProtocolVersions: [LEGACY] };
  const client = new Client(clientInfo, options);
  const errors = [];
  client.onerror = (error) => {
    errors.push(error?.message ?? String(error));
    console.error(`# ${name}: client onerror (checked at the end): ${error?.message ?? error}`);
  };
  let transport;
  let exchanges = [];
  if (transportKind === 'stdio') {
    transport = new StdioClientTransport({ command: serverPath, args: [], stderr: 'pipe' });
    watchStderr(transport.stderr);
  } else {
    const tap = tapHttp();
    exchanges = tap.exchanges;
    transport = new StreamableHTTPClientTransport(new URL(httpServer.url), { fetch: tap.fetch });
  }
  const wire = tapWire(transport); // before connect(), so initialize is seen too
  const c = { name, client, transport, wire, exchanges, errors };
  clients.push(c);
  return c;
}

async function connect(c) {
  await c.client.connect(c.transport);
  const version = c.client.getNegotiatedProtocolVersion();
  check(version === era, `getNegotiatedProtocolVersion() is ${show(version)}, want ${era}`);
  const initialize = c.wire.filter((w) => w.dir === 'out' && w.message.method === 'initialize');
  if (modern) {
    check(c.client.getProtocolEra() === 'modern', `getProtocolEra() is ${show(c.client.getProtocolEra())}`);
    check(initialize.length === 0, `the client sent initialize: ${show(initialize.map((w) => w.message))}`);
  } else {
    check(initialize.length === 1, `${initialize.length} initialize requests went out`);
    check(initialize[0].message.params?.protocolVersion === LEGACY, `initialize offered ${show(initialize[0].message.params?.protocolVersion)}`);
  }
}

// What the handlers answer. The content and the texts built from it are fixed, so each
// tool's text is a constant the two eras must both produce.
const sampled = { role: 'assistant', content: { type: 'text', text: 'a short summary' }, model: 'peer-model', stopReason: 'endTurn' };
const rootsText = `${peerRoots.length} root(s)\n${peerRoots.map((r) => (r.name ? `${r.uri} (${r.name})` : r.uri)).join('\n')}`;

/// Registers the sampling, elicitation and roots handlers on `c.client`. Every call is
/// recorded in `c.handled` as `{ method, id, params, answer }`: `id` is the context's
/// request id (the server's JSON-RPC id in 2025, the inputRequests key in 2026), `answer`
/// what the handler returned. Elicitation answers `c.answerElicitation(params)`; unset, it
/// throws, so a step that did not expect a form fails.
function registerHandlers(c) {
  c.handled = [];
  const record = (method) => async (request, ctx) => {
    const entry = { method, id: ctx?.mcpReq?.id, params: request.params, answer: undefined };
    c.handled.push(entry);
    if (method === 'sampling/createMessage') entry.answer = sampled;
    else if (method === 'roots/list') entry.answer = { roots: peerRoots };
    else if (!c.answerElicitation) throw new Error('this step did not expect elicitation/create');
    else entry.answer = await c.answerElicitation(request.params);
    return entry.answer;
  };
  for (const method of ['sampling/createMessage', 'elicitation/create', 'roots/list']) c.client.setRequestHandler(method, record(method));
}

// The main client: declares everything the tools ask for. `elicitation: {}` reads as form
// mode in both eras (2.4.0's getSupportedElicitationModes).
const main = makeClient('main', { sampling: {}, roots: { listChanged: true }, elicitation: {} });
registerHandlers(main);

const connected = await step(`connect: the session is on ${era}${modern ? ' (pinned, no initialize)' : ' (initialize)'}`, async () => {
  await connect(main);
});
if (!connected) finish();

// ---------------------------------------------------------------------------------------
// One call and its rounds

const serverRequestsIn = (wire, from = 0) => wire.slice(from).filter((w) => w.dir === 'in' && w.message.method !== undefined && w.message.id !== undefined);
const withoutMode = (p) => { const { mode, ...rest } = p ?? {}; return rest; };

/// Calls tool `name` on `c` and returns `{ result, legs, handled }`: `legs` are the
/// tools/call requests for it on the wire (one per round) with their responses, `handled`
/// the handler calls it caused. `_meta`, when given, goes into the request's params.
async function call(c, name, args, _meta) {
  const from = c.wire.length;
  const handledBefore = c.handled?.length ?? 0;
  const result = await c.client.callTool({ name, arguments: args, ...(_meta && { _meta }) });
  const legs = c.wire.slice(from)
    .filter((w) => w.dir === 'out' && w.message.method === 'tools/call' && w.message.params?.name === name)
    .map((w) => ({ request: w.message, response: c.wire.find((r) => r.dir === 'in' && r.message.method === undefined && r.message.id === w.message.id)?.message }));
  return { result, legs, handled: (c.handled ?? []).slice(handledBefore), from };
}

/// The wire of one call whose tool asked `rounds`: a list, per round, of the questions
/// asked together, `{ key, method }` each (`key` as the tool names it; in 2025 keys do not
/// travel). 2026: one leg per round plus the last, each retry carrying the round's answers
/// and its exact requestState on a new id, and no server request. 2025: one leg, the
/// questions as server requests before its response, each answered with the handler's
/// answer.
function checkRounds(c, { legs, handled, from }, rounds) {
  const asked = rounds.flat();
  check(handled.length === asked.length, `the handlers ran ${handled.length} time(s), want ${asked.length}: ${show(handled.map((h) => h.method))}`);
  const ids = legs.map((l) => l.request.id);
  if (!modern) {
    check(legs.length === 1, `${legs.length} tools/call requests went out, want 1`);
    check(legs[0].response?.result?.resultType !== 'input_required', `a 2025 session got ${show(legs[0].response)}`);
    const requests = serverRequestsIn(c.wire, from);
    check(sameJson(requests.map((w) => w.message.method).sort(), asked.map((q) => q.method).sort()),
      `the server sent ${show(requests.map((w) => w.message.method))}, want ${show(asked.map((q) => q.method))}`);
    const responseAt = c.wire.findIndex((w) => w.dir === 'in' && w.message.method === undefined && w.message.id === ids[0]);
    for (const r of requests) {
      check(c.wire.indexOf(r) < responseAt, `${r.message.method} arrived after the tools/call response`);
      const reply = c.wire.find((w) => w.dir === 'out' && w.message.method === undefined && w.message.id === r.message.id);
      const h = handled.find((x) => x.id === r.message.id);
      check(h, `no handler call has the id ${show(r.message.id)} of ${r.message.method}: ${show(handled.map((x) => x.id))}`);
      check(reply && sameJson(reply.message.result, h.answer), `our answer to ${show(r.message.id)} is ${show(reply?.message)}, the handler said ${show(h.answer)}`);
    }
    return;
  }
  check(legs.length === rounds.length + 1, `${legs.length} tools/call requests went out, want ${rounds.length + 1} (${rounds.length} round(s) and the last): ${show(legs)}`);
  check(new Set(ids).size === ids.length, `the retries reused an id: ${show(ids)}`);
  const first = legs[0].request.params;
  check(first.inputResponses === undefined && first.requestState === undefined, `the first request carried ${show(first)}`);
  for (let i = 0; i < rounds.length; ++i) {
    const answer = legs[i].response?.result;
    check(answer?.resultType === 'input_required', `response ${i + 1} is ${show(legs[i].response)}, want resultType "input_required"`);
    const inputs = answer.inputRequests ?? {};
    check(sameJson(Object.keys(inputs).sort(), rounds[i].map((q) => q.key).sort()), `round ${i + 1} asks ${show(Object.keys(inputs))}, want ${show(rounds[i].map((q) => q.key))}`);
    check(typeof answer.requestState === 'string' && answer.requestState.length > 0, `round ${i + 1} has requestState ${show(answer.requestState)}`);
    const retry = legs[i + 1].request.params;
    check(retry.requestState === answer.requestState, `retry ${i + 1} echoes requestState ${show(retry.requestState)}, the server said ${show(answer.requestState)}`);
    check(retry.name === first.name && sameJson(retry.arguments, first.arguments), `retry ${i + 1} is ${show(retry)}, the first request ${show(first)}`);
    check(sameJson(Object.keys(retry.inputResponses ?? {}).sort(), Object.keys(inputs).sort()), `retry ${i + 1} answers ${show(retry.inputResponses)}, the round asked ${show(Object.keys(inputs))}`);
    for (const { key, method } of rounds[i]) {
      check(inputs[key].method === method, `inputRequests.${key} is ${show(inputs[key])}, want method ${method}`);
      const h = handled.find((x) => x.id === key);
      check(h?.method === method, `no ${method} handler call for key ${key}: ${show(handled.map((x) => [x.method, x.id]))}`);
      // The elicitation wrapper fills in `mode: "form"` before our handler sees the params.
      check(sameJson(withoutMode(h.params), withoutMode(inputs[key].params)), `the handler for ${key} saw ${show(h.params)}, the server asked ${show(inputs[key].params)}`);
      check(sameJson(retry.inputResponses[key], h.answer), `inputResponses.${key} is ${show(retry.inputResponses[key])}, the handler said ${show(h.answer)}`);
    }
  }
  const last = legs.at(-1).response?.result;
  check(last?.resultType === 'complete', `the last response is ${show(legs.at(-1).response)}, want resultType "complete"`);
  const requests = serverRequestsIn(c.wire, from);
  check(requests.length === 0, `the server sent requests: ${show(requests.map((w) => w.message))}`);
}

const form = (key) => ({ key, method: 'elicitation/create' });

// ---------------------------------------------------------------------------------------
// The tools

await step('summarize: the sampling handler\'s text is the summary (one sampling call)', async () => {
  const text = 'The peer test asks for a summary of this text.';
  const outcome = await call(main, 'summarize', { text, max_tokens: 77 });
  check(!outcome.result.isError, `isError: ${show(outcome.result)}`);
  check(textOf(outcome.result) === 'summary from peer-model: a short summary', `text is ${show(textOf(outcome.result))}`);
  // summarize names no key: the server picks one, which the wire check reads back.
  const key = modern ? Object.keys(outcome.legs[0].response?.result?.inputRequests ?? {})[0] : undefined;
  checkRounds(main, outcome, [[{ key, method: 'sampling/createMessage' }]]);
  const p = outcome.handled[0].params;
  check(p.maxTokens === 77 && p.messages?.[0]?.content?.text?.includes(text), `the sampling request was ${show(p)}`);
  if (modern) console.log(`# summarize round 1: ${show(outcome.legs[0].response.result)}`);
});

await step('book_table: an accepted form is the booking built from its fields', async () => {
  main.answerElicitation = () => ({ action: 'accept', content: { name: 'Ada', guests: 4, place: 'terrace', notes: 'birthday' } });
  const outcome = await call(main, 'book_table', {}).finally(() => { main.answerElicitation = undefined; });
  check(!outcome.result.isError, `isError: ${show(outcome.result)}`);
  const want = 'booked a table on the terrace for 4, name Ada (birthday)';
  check(textOf(outcome.result) === want, `text is ${show(textOf(outcome.result))}, want ${show(want)}`);
  const key = modern ? Object.keys(outcome.legs[0].response?.result?.inputRequests ?? {})[0] : undefined;
  checkRounds(main, outcome, [[form(key)]]);
  const p = outcome.handled[0].params;
  check(p.message === bookingMessage, `message is ${show(p.message)}`);
  check(sameJson(p.requestedSchema, bookingSchema), `requestedSchema is ${show(p.requestedSchema)}, want ${show(bookingSchema)}`);
});

await step('book_table: a declined form is "booking declined"', async () => {
  main.answerElicitation = () => ({ action: 'decline' });
  const outcome = await call(main, 'book_table', {}).finally(() => { main.answerElicitation = undefined; });
  check(!outcome.result.isError, `isError: ${show(outcome.result)}`);
  check(textOf(outcome.result) === 'booking declined', `text is ${show(textOf(outcome.result))}`);
  const key = modern ? Object.keys(outcome.legs[0].response?.result?.inputRequests ?? {})[0] : undefined;
  checkRounds(main, outcome, [[form(key)]]);
});

await step('roots: the tool lists the roots handler\'s roots', async () => {
  const outcome = await call(main, 'roots', {});
  check(!outcome.result.isError, `isError: ${show(outcome.result)}`);
  check(textOf(outcome.result) === rootsText, `text is ${show(textOf(outcome.result))}, want ${show(rootsText)}`);
  const key = modern ? Object.keys(outcome.legs[0].response?.result?.inputRequests ?? {})[0] : undefined;
  checkRounds(main, outcome, [[{ key, method: 'roots/list' }]]);
});

await step('test_input_required_result_multi_round: two forms, one after the other, make "Ada likes teal"', async () => {
  main.answerElicitation = (p) => {
    const fields = Object.keys(p.requestedSchema?.properties ?? {});
    if (sameJson(fields, ['name'])) return { action: 'accept', content: { name: 'Ada' } };
    if (sameJson(fields, ['color'])) return { action: 'accept', content: { color: 'teal' } };
    throw new Error(`unexpected form ${show(p.requestedSchema)}`);
  };
  const outcome = await call(main, 'test_input_required_result_multi_round', {}).finally(() => { main.answerElicitation = undefined; });
  check(!outcome.result.isError, `isError: ${show(outcome.result)}`);
  check(textOf(outcome.result) === 'Ada likes teal', `text is ${show(textOf(outcome.result))}, want "Ada likes teal"`);
  const messages = outcome.handled.map((h) => h.params.message);
  check(sameJson(messages, ['What is your name?', 'Hello Ada, what is your favourite colour?']), `the forms asked ${show(messages)}`);
  checkRounds(main, outcome, [[form('step1')], [form('step2')]]);
});

await step('test_input_required_result_multiple_inputs: a form, a sample and the roots in one round', async () => {
  main.answerElicitation = () => ({ action: 'accept', content: { name: 'Ada' } });
  const outcome = await call(main, 'test_input_required_result_multiple_inputs', {}).finally(() => { main.answerElicitation = undefined; });
  check(!outcome.result.isError, `isError: ${show(outcome.result)}`);
  const want = `name: Ada; model: a short summary; roots: ${peerRoots.length}`;
  check(textOf(outcome.result) === want, `text is ${show(textOf(outcome.result))}, want ${show(want)}`);
  check(sameJson(outcome.handled.map((h) => h.method).sort(), ['elicitation/create', 'roots/list', 'sampling/createMessage']),
    `the handlers called: ${show(outcome.handled.map((h) => h.method))}`);
  checkRounds(main, outcome, [[form('user_name'), { key: 'greeting', method: 'sampling/createMessage' }, { key: 'client_roots', method: 'roots/list' }]]);
});

// A form handler that throws. 2025: the client answers the server's request with a
// JSON-RPC error and the tool makes a tool error of it. 2026: the 2.4.0 driver rejects the
// whole call with the handler's error and never retries, so the server is not told.
await step(`book_table: a throwing form handler ${modern ? 'rejects the call, with no retry' : 'is a tool error with its message'}`, async () => {
  const message = 'the user closed the form (peer test)';
  main.answerElicitation = () => { throw new Error(message); };
  let outcome, error;
  try {
    outcome = await call(main, 'book_table', {});
  } catch (e) {
    error = e;
  } finally {
    main.answerElicitation = undefined;
  }
  if (modern) {
    check(error !== undefined, `callTool resolved with ${show(outcome?.result)}`);
    check(String(error?.message).includes(message), `callTool rejected with ${error?.name} ${error?.message}`);
    const legs = main.wire.filter((w) => w.dir === 'out' && w.message.method === 'tools/call' && w.message.params?.name === 'book_table');
    check(legs.at(-1).message.params.inputResponses === undefined, `the driver retried: ${show(legs.at(-1).message)}`);
    console.log(`# callTool rejected with ${error?.name}: ${error?.message}`);
  } else {
    check(error === undefined, `callTool rejected with ${error?.name} ${error?.message}`);
    check(outcome.result.isError === true && textOf(outcome.result) === message, `the tool answered ${show(outcome.result)}`);
  }
});

// ---------------------------------------------------------------------------------------
// A client without elicitation

/// book_table asked by a client whose capabilities (for the whole connection, or in 2026
/// for one request) lack elicitation: a tool error naming it, nothing asked.
function checkRefused(c, outcome) {
  check(outcome.result.isError === true, `isError is ${show(outcome.result.isError)}: ${show(outcome.result)}`);
  check(textOf(outcome.result).includes('elicitation'), `text ${show(textOf(outcome.result))} does not name elicitation`);
  check(outcome.handled.length === 0, `a handler ran: ${show(outcome.handled.map((h) => h.method))}`);
  check(outcome.legs.length === 1, `${outcome.legs.length} tools/call requests went out, want 1`);
  const answer = outcome.legs[0].response?.result;
  if (modern) check(answer?.resultType === 'complete', `the response is ${show(outcome.legs[0].response)}, want resultType "complete"`);
  const requests = serverRequestsIn(c.wire, outcome.from);
  check(requests.length === 0, `the server sent ${show(requests.map((w) => w.message))}`);
  console.log(`# book_table: ${show(textOf(outcome.result))}`);
}

if (modern) {
  // 2026-07-28 capabilities travel in every request's envelope, and 2.4.0 lets a
  // request's own `_meta` override the envelope's keys: the main client, whose form
  // handler is registered, asks without elicitation for this one call.
  await step('book_table with this request\'s capabilities lacking elicitation is a tool error naming it', async () => {
    const caps = { sampling: {}, roots: { listChanged: true } };
    const outcome = await call(main, 'book_table', {}, { [CAPABILITIES_META]: caps });
    const sent = outcome.legs[0].request.params._meta?.[CAPABILITIES_META];
    check(sameJson(sent, caps), `the request declared ${show(sent)}, want ${show(caps)}`);
    checkRefused(main, outcome);
  });
}

await step('book_table from a client that did not declare elicitation is a tool error naming it', async () => {
  // setRequestHandler('elicitation/create') throws without the capability, so this
  // client answers sampling and roots only.
  const bare = makeClient('no-elicitation', { sampling: {}, roots: { listChanged: true } });
  bare.handled = [];
  for (const method of ['sampling/createMessage', 'roots/list']) {
    bare.client.setRequestHandler(method, async (request, ctx) => {
      bare.handled.push({ method, id: ctx?.mcpReq?.id, params: request.params });
      return method === 'roots/list' ? { roots: peerRoots } : sampled;
    });
  }
  await connect(bare);
  try {
    checkRefused(bare, await call(bare, 'book_table', {}));
  } finally {
    bare.closeFrom = bare.errors.length;
    await bare.client.close();
  }
});

// ---------------------------------------------------------------------------------------
// The whole run

await step(modern ? 'the server sent no JSON-RPC request, and every result carries resultType' : 'the server\'s requests were all answered', async () => {
  for (const c of clients) {
    const requests = serverRequestsIn(c.wire);
    if (modern) {
      check(requests.length === 0, `${c.name}: the server sent ${show(requests.map((w) => w.message))}`);
      const untyped = c.wire.filter((w) => w.dir === 'in' && w.message.result !== undefined && typeof w.message.result.resultType !== 'string');
      check(untyped.length === 0, `${c.name}: results without resultType: ${show(untyped.map((w) => w.message))}`);
    } else {
      const unanswered = requests.filter((r) => !c.wire.some((w) => w.dir === 'out' && w.message.method === undefined && w.message.id === r.message.id));
      check(unanswered.length === 0, `${c.name}: unanswered: ${show(unanswered.map((w) => w.message))}`);
    }
    // Over HTTP, also what the transport read, in case it kept a message from onmessage.
    for (const x of c.exchanges) {
      const type = x.headers?.['content-type'] ?? '';
      let bodies = [];
      if (type.startsWith('text/event-stream')) bodies = sseMessages(x.body);
      else if (type.startsWith('application/json') && x.body) try { bodies = [JSON.parse(x.body)].flat(); } catch { /* not JSON-RPC */ }
      const raw = bodies.filter((m) => m?.method !== undefined && m?.id !== undefined);
      if (modern) check(raw.length === 0, `${c.name}: an HTTP response carried ${show(raw)}`);
    }
  }
});

if (modern && transportKind === 'http') {
  await step('every round was its own POST with Mcp-Method and Mcp-Name, and no session', async () => {
    const posts = main.exchanges.filter((x) => x.method === 'POST' && x.requestBody?.includes('"tools/call"'));
    const problems = [];
    for (const x of posts) {
      const message = JSON.parse(x.requestBody);
      const h = x.requestHeaders;
      if (h['mcp-method'] !== 'tools/call' || h['mcp-name'] !== message.params?.name)
        problems.push(`${message.params?.name} (id ${message.id}): Mcp-Method ${show(h['mcp-method'])}, Mcp-Name ${show(h['mcp-name'])}`);
      if (h['mcp-session-id'] !== undefined) problems.push(`${message.params?.name}: Mcp-Session-Id ${show(h['mcp-session-id'])}`);
    }
    check(problems.length === 0, problems.join('; '));
    const retries = posts.filter((x) => x.requestBody.includes('"inputResponses"'));
    check(retries.length >= 6, `${retries.length} retry POSTs were seen`);
  });
}

await step('close', async () => {
  main.closeFrom = main.errors.length;
await main.client.close();
});
if (httpServer) {
  await step('SIGTERM: the server exits with status 0', async () => {
    await httpServer.stopWithSigterm();
  });
}
await step('no protocol errors', async () => {
  // The SDK reports its own standalone GET stream being cut by close() through onerror
  // (as the 1.32 peer test also sees); only those, and only once close() began, are noise.
  const noise = (e) => /SSE stream disconnected: AbortError|This operation was aborted/.test(e);
  const errors = clients.flatMap((c) =>
    c.errors.filter((e, i) => !(i >= (c.closeFrom ?? Infinity) && noise(e))).map((e) => `${c.name}: ${e}`));
  check(errors.length === 0, `the clients reported: ${show(errors)}`);
});

finish();
