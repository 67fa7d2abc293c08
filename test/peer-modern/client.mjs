// SPDX-License-Identifier: BSL-1.0
// Peer test: the official MCP TypeScript client 2.x (@modelcontextprotocol/client, pinned in
// package.json here) drives everything-server on protocol revision 2026-07-28: stateless
// requests, no initialize, every request carrying its `_meta` envelope.
//
//     node test/peer-modern/client.mjs stdio pin  build/examples/everything-server
//     node test/peer-modern/client.mjs stdio auto build/examples/everything-server
//     node test/peer-modern/client.mjs http  pin  build/examples/everything-server [server flags]
//     node test/peer-modern/client.mjs http  auto build/examples/everything-server [server flags]
//
// `pin`: versionNegotiation { mode: { pin: '2026-07-28' } }, no fallback. `auto`: the client
// probes with server/discover and may fall back to initialize; it must settle on 2026-07-28.
// Over stdio the client spawns the server itself (twice: the 2.x client probes on a
// short-lived sibling process, then starts the session's own); over HTTP the server is run
// as `<server> --http 127.0.0.1:0 [server flags]` and its URL read from its stdout.
//
// Needs Node >= 20 (the client's engines field); meson runs it with the Node 22 that
// test/conformance installs. Prints one `ok - <step>` or `not ok - <step>: <why>` line per
// step and exits 1 if any step failed. Exit 77 (Meson's "skipped") when the client is not
// installed or Node is too old, unless DROID_REQUIRE_PEERS=1, which turns that into a
// failure so CI can never skip silently. Install the client with
// `npm ci --prefix test/peer-modern`.
//
// Set DROID_PEER_TRACE=1 to print every JSON-RPC message (and, over HTTP, every exchange
// with its headers and body bytes) to stderr.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  afterMicrotasks, check, Check, exitWithSummary, HttpServer, missingPrerequisite, sameJson, show, sseMessages, startWatchdog, step,
  installedVersion, tapHttp, tapWire, textOf, trace, watchStderr,
} from '../peer/harness.mjs';

const MODERN = '2026-07-28';
const PACKAGE = '@modelcontextprotocol/client';
const here = dirname(fileURLToPath(import.meta.url));
const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
};

const usage = 'usage: node client.mjs <stdio|http> <pin|auto> <path to everything-server> [server flags]';
const [transportKind, negotiation, serverPath, ...serverFlags] = process.argv.slice(2);
if (!['stdio', 'http'].includes(transportKind) || !['pin', 'auto'].includes(negotiation) || !serverPath ||
    (transportKind === 'stdio' && serverFlags.length > 0)) {
  console.log(`not ok - arguments: ${usage}`);
  process.exit(1);
}

// ---------------------------------------------------------------------------------------
// Prerequisites: Node >= 20 and the pinned client

const nodeMajor = Number(process.versions.node.split('.')[0]);
if (nodeMajor < 20) {
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
const { Client, StreamableHTTPClientTransport, ProtocolError, LATEST_PROTOCOL_VERSION } = sdk;
const { StdioClientTransport } = stdioSdk;

const pinned = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')).dependencies[PACKAGE];
const installed = installedVersion(PACKAGE, (name) => import.meta.resolve(name));
const httpServer = transportKind === 'http' ? new HttpServer(serverPath, serverFlags) : undefined;
console.log(`# ${PACKAGE} ${installed} (pinned ${pinned}), node ${process.version}, LATEST_PROTOCOL_VERSION ${LATEST_PROTOCOL_VERSION}`);
console.log(`# server: ${httpServer ? httpServer.commandLine : serverPath} over ${transportKind}, negotiation ${negotiation === 'pin' ? `{ pin: '${MODERN}' }` : "'auto'"}`);
await step('the installed client is the pinned one', async () => {
  check(installed === pinned, `node_modules holds ${PACKAGE} ${installed}, package.json pins ${pinned}; run \`npm ci --prefix test/peer-modern\``);
});

// ---------------------------------------------------------------------------------------
// The connection

const clientInfo = { name: `droid-peer-ts2-${transportKind}-${negotiation}`, version: '2.0.0' };
// An experimental capability the server has no reason to know: it travels in every
// request's envelope.
const clientCapabilities = { experimental: { 'droid.peerTest': { marker: 42 } } };
const versionNegotiation = { mode: negotiation === 'pin' ? { pin: MODERN } : 'auto' };
const client = new Client(clientInfo, { capabilities: clientCapabilities, versionNegotiation });

// Everything the client finds wrong with the connection arrives here; any of it fails the run.
const protocolErrors = [];
client.onerror = (error) => {
  protocolErrors.push(error?.message ?? String(error));
  console.error(`# client onerror (checked at the end): ${error?.message ?? error}`);
};

let transport;
let exchanges = []; // HTTP only: every exchange the client made (tapHttp)
let httpUntil; // HTTP only: waits for what the tap records (tapHttp's until)
// stdio only: what the client said to, and heard from, the probe sibling (the disposable
// process it sends server/discover to before it starts the session's own).
const probeWire = [];

if (transportKind === 'stdio') {
  transport = new StdioClientTransport({ command: serverPath, args: [], stderr: 'pipe' });
  watchStderr(transport.stderr); // the server's stderr, forwarded to ours unchanged
  // The sibling is `new transport.constructor(params)`: tap it on the prototype. (The
  // client probes on a sibling only when the transport is exactly StdioClientTransport,
  // so the tap cannot be a subclass.)
  const proto = StdioClientTransport.prototype;
  const send = proto.send;
  proto.send = function (message, ...rest) {
    if (this !== transport) {
      probeWire.push({ at: Date.now(), dir: 'out', message });
      if (trace) console.error(`# probe -> ${show(message)}`);
    }
    return send.call(this, message, ...rest);
  };
  const processReadBuffer = proto.processReadBuffer;
  proto.processReadBuffer = function (...args) {
    if (this === transport || typeof this.onmessage !== 'function') return processReadBuffer.apply(this, args);
    const onmessage = this.onmessage;
    this.onmessage = (message, ...more) => {
      probeWire.push({ at: Date.now(), dir: 'in', message });
      if (trace) console.error(`# probe <- ${show(message)}`);
      return onmessage.call(this, message, ...more);
    };
    try {
      return processReadBuffer.apply(this, args);
    } finally {
      this.onmessage = onmessage;
    }
  };
} else {
  const started = await step('the server starts and prints its URL', async () => {
    await httpServer.start();
  });
  if (!started) {
    httpServer.kill();
    exitWithSummary();
  }
  const tap = tapHttp();
  exchanges = tap.exchanges;
  httpUntil = tap.until;
  transport = new StreamableHTTPClientTransport(new URL(httpServer.url), { fetch: tap.fetch });
}

// Every JSON-RPC message of the session both ways, tapped before connect().
const wire = tapWire(transport);

// Never hang: whatever goes wrong, give up after 60 s and kill the server.
startWatchdog(() => {
  httpServer?.kill();
  if (transport.pid) try { process.kill(transport.pid, 'SIGKILL'); } catch { /* already gone */ }
});

function finish() {
  httpServer?.kill();
  exitWithSummary();
}

/// The JSON-RPC bodies the client POSTed, parsed, with their exchange.
const posted = () => exchanges.filter((x) => x.method === 'POST' && x.requestBody !== undefined).map((x) => {
  try { return { x, message: JSON.parse(x.requestBody) }; } catch { return { x, message: undefined }; }
});
const requestsOut = () => wire.filter((w) => w.dir === 'out' && w.message.method !== undefined && w.message.id !== undefined);
const responseTo = (id) => wire.find((w) => w.dir === 'in' && w.message.id === id && w.message.method === undefined);
const lastRequest = (method, name) => requestsOut().findLast((w) => w.message.method === method && (name === undefined || w.message.params?.name === name));

/// The error `promise` rejects with; fails the step if it resolves.
async function rejection(promise) {
  try {
    const value = await promise;
    throw new Check(`resolved instead of rejecting: ${show(value)}`);
  } catch (error) {
    if (error instanceof Check) throw error;
    return error;
  }
}
const describeError = (e) => `${e?.name} ${e?.code !== undefined ? `(code ${e.code}) ` : ''}${e?.message}${e?.data !== undefined ? ` data ${show(e.data)}` : ''}`;

// ---------------------------------------------------------------------------------------
// Connect: server/discover, no initialize

const connected = await step(`connect: ${negotiation === 'pin' ? `pinned ${MODERN}` : 'auto'} negotiation settles on ${MODERN}`, async () => {
  let error;
  try {
    await client.connect(transport);
  } catch (e) {
    error = e;
  }
  // What the client sent first, and what it heard: the facts that explain a failure.
  const probe = transportKind === 'stdio' ? probeWire : posted().map(({ x, message }) => ({ dir: 'out', message, x }));
  const first = probe.find((w) => w.dir === 'out')?.message;
  console.log(`# first message: ${show(first)}`);
  if (transportKind === 'http') {
    const x = exchanges[0];
    if (x) console.log(`# first exchange: ${x.method} ${show(x.requestHeaders)} -> ${x.status} ${show(x.headers?.['content-type'] ?? null)} ${show(x.body)}`);
  } else {
    for (const w of probeWire.filter((p) => p.dir === 'in')) console.log(`# the probe sibling answered: ${show(w.message)}`);
  }
  check(error === undefined, `connect() threw ${describeError(error)}${error?.cause ? ` (cause: ${error.cause?.message ?? error.cause})` : ''}`);
  check(first?.method === 'server/discover', `the first request was ${show(first?.method)}, want "server/discover"`);
  const envelope = first.params?._meta ?? {};
  check(envelope[META.protocolVersion] === MODERN, `the probe's ${META.protocolVersion} is ${show(envelope[META.protocolVersion])}`);
  check(sameJson(envelope[META.clientInfo], clientInfo), `the probe's ${META.clientInfo} is ${show(envelope[META.clientInfo])}`);
  const version = client.getNegotiatedProtocolVersion();
  const era = client.getProtocolEra();
  console.log(`# negotiated ${show(version)} (era ${show(era)}); server ${show(client.getServerVersion())}`);
  check(version === MODERN, `getNegotiatedProtocolVersion() is ${show(version)}, want ${MODERN}`);
  check(era === 'modern', `getProtocolEra() is ${show(era)}, want "modern"`);
  const initialize = [...wire, ...probeWire, ...posted().map(({ message }) => ({ dir: 'out', message }))]
    .filter((w) => w.dir === 'out' && w.message?.method === 'initialize');
  check(initialize.length === 0, `the client sent initialize: ${show(initialize.map((w) => w.message))}`);
  const discover = client.getDiscoverResult();
  check(discover?.supportedVersions?.includes(MODERN), `discover supportedVersions is ${show(discover?.supportedVersions)}`);
  const server = client.getServerVersion();
  check(server?.name === 'everything-server', `serverInfo (discover _meta ${META.serverInfo}) is ${show(server)}, want name "everything-server"`);
  const caps = client.getServerCapabilities();
  for (const c of ['tools', 'resources', 'prompts', 'completions'])
    check(caps?.[c] && typeof caps[c] === 'object', `capabilities.${c} missing: ${show(caps)}`);
});

if (!connected) finish();

// ---------------------------------------------------------------------------------------
// The session

await step('server/discover on the session: the same answer, resultType "complete"', async () => {
  const result = await client.discover();
  check(result.supportedVersions?.includes(MODERN), `supportedVersions is ${show(result.supportedVersions)}`);
  const raw = responseTo(lastRequest('server/discover').message.id)?.message.result;
  check(raw?.resultType === 'complete', `the result on the wire has resultType ${show(raw?.resultType)}: ${show(raw)}`);
  console.log(`# server/discover result on the wire: ${show(raw)}`);
});

const expectedTools = ['echo', 'add', 'forecast', 'count', 'sleep', 'fail'];
await step('tools/list', async () => {
  const { tools } = await client.listTools();
  const byName = new Map(tools.map((t) => [t.name, t]));
  for (const name of expectedTools) {
    const tool = byName.get(name);
    check(tool, `tool ${name} missing from ${show([...byName.keys()])}`);
    check(typeof tool.description === 'string' && tool.description.length > 0, `${name}: empty description`);
    check(tool.inputSchema?.type === 'object', `${name}: inputSchema.type is ${show(tool.inputSchema?.type)}`);
  }
  check(byName.get('add').outputSchema?.type === 'object', `add: outputSchema is ${show(byName.get('add').outputSchema)}`);
  check(byName.get('forecast').outputSchema?.type === 'object', `forecast: outputSchema is ${show(byName.get('forecast').outputSchema)}`);
});

await step('echo returns its text unchanged', async () => {
  const text = 'héllo "world" ✓';
  const result = await client.callTool({ name: 'echo', arguments: { text } });
  check(!result.isError, `isError: ${show(result)}`);
  check(result.content.length === 1 && result.content[0].type === 'text', `content is ${show(result.content)}`);
  check(result.content[0].text === text, `text is ${show(result.content[0].text)}, want ${show(text)}`);
  const raw = responseTo(lastRequest('tools/call', 'echo').message.id)?.message.result;
  check(raw?.resultType === 'complete', `the result on the wire has resultType ${show(raw?.resultType)}`);
});

await step('add returns structured content that matches its outputSchema', async () => {
  // callTool() validates structuredContent against the outputSchema cached by listTools.
  const result = await client.callTool({ name: 'add', arguments: { a: 1, b: 2.5 } });
  check(!result.isError, `isError: ${show(result)}`);
  check(result.structuredContent?.result === 3.5, `structuredContent is ${show(result.structuredContent)}`);
});

await step('forecast with typed arguments and defaults', async () => {
  const result = await client.callTool({ name: 'forecast', arguments: { city: 'Oslo', days: 2, unit: 'imperial' } });
  check(!result.isError, `isError: ${show(result)}`);
  check(sameJson(result.structuredContent, { city: 'Oslo', highs: [68, 70], unit: 'imperial' }), `structuredContent is ${show(result.structuredContent)}`);
  const defaults = await client.callTool({ name: 'forecast', arguments: { city: 'Oslo' } });
  check(!defaults.isError, `isError: ${show(defaults)}`);
  check(sameJson(defaults.structuredContent, { city: 'Oslo', highs: [20, 21, 22], unit: 'metric' }), `with defaults: ${show(defaults.structuredContent)}`);
});

await step('forecast with a mistyped argument is a tool error naming it', async () => {
  const result = await client.callTool({ name: 'forecast', arguments: { city: 'Oslo', days: 'x' } });
  check(result.isError === true, `isError is ${show(result.isError)}: ${show(result)}`);
  check(textOf(result).includes('days'), `text ${show(textOf(result))} does not mention days`);
  console.log(`# forecast days "x": ${show(textOf(result))}`);
});

await step('forecast whose handler throws is a tool error with the message', async () => {
  const result = await client.callTool({ name: 'forecast', arguments: { city: 'Oslo', days: 50 } });
  check(result.isError === true, `isError is ${show(result.isError)}: ${show(result)}`);
  check(textOf(result).includes('days must be between 1 and 10'), `text is ${show(textOf(result))}`);
});

await step('fail is a tool error with its message', async () => {
  const result = await client.callTool({ name: 'fail', arguments: { message: 'boom' } });
  check(result.isError === true, `isError is ${show(result.isError)}: ${show(result)}`);
  check(textOf(result) === 'boom', `text is ${show(textOf(result))}, want "boom"`);
});

await step('unknown tool is a JSON-RPC error -32602', async () => {
  const error = await rejection(client.callTool({ name: 'no_such_tool', arguments: {} }));
  check(error instanceof ProtocolError, `rejected with ${describeError(error)}`);
  check(error.code === -32602, `code is ${error.code} (${error.message}), want -32602`);
});

await step('count reports progress', async () => {
  const seen = [];
  const result = await client.callTool({ name: 'count', arguments: { steps: 3, interval_ms: 20 } }, { onprogress: (p) => seen.push(p) });
  await afterMicrotasks(); // let notification handlers the client deferred to a microtask run
  check(!result.isError, `isError: ${show(result)}`);
  check(textOf(result) === 'counted to 3', `text is ${show(textOf(result))}`);
  const request = lastRequest('tools/call', 'count').message;
  const token = request.params._meta?.progressToken;
  check(token !== undefined, `the request carries no progressToken: ${show(request.params._meta)}`);
  const responseAt = wire.indexOf(responseTo(request.id));
  const progressFor = (w) => w.dir === 'in' && w.message.method === 'notifications/progress' && w.message.params?.progressToken === token;
  const sent = wire.slice(0, responseAt).filter(progressFor).map((w) => w.message.params);
  const late = wire.slice(responseAt + 1).filter(progressFor);
  check(late.length === 0, `progress after the response: ${show(late.map((w) => w.message))}`);
  check(sent.length === 3, `${sent.length} progress notifications before the response, want 3: ${show(sent)}`);
  for (let i = 0; i < sent.length; ++i) {
    check(sent[i].total === 3, `progress ${i} has total ${show(sent[i].total)}: ${show(sent)}`);
    if (i > 0) check(sent[i].progress > sent[i - 1].progress, `progress does not increase: ${show(sent)}`);
  }
  // The 2.4.0 client dispatches notifications on a microtask but responses at once, so a
  // progress notification that reaches it in the same read as the response (stdio batches
  // what is queued into one write) is handled after the response and reported as "for an
  // unknown token". The wire order above is what the server controls; such a late
  // dispatch is accepted only when the client reported exactly those notifications.
  check(seen.every((p, i) => p.progress === sent[i].progress && p.total === 3),
    `onprogress saw ${show(seen)}, the server sent ${show(sent)}`);
  const missed = sent.slice(seen.length);
  for (const p of missed) {
    const i = protocolErrors.findIndex((e) => e.includes('progress notification for an unknown token') &&
      e.includes(`"progress":${p.progress},`));
    check(i >= 0, `onprogress saw ${show(seen)}, the server sent ${show(sent)}, and the client did not report the rest`);
    if (i >= 0) protocolErrors.splice(i, 1);
  }
  if (missed.length) console.log(`# the client dispatched ${missed.length} progress notification(s) after the response (same read)`);
  console.log(`# tools/call count: ${show(request)}; progress ${show(sent)}`);
});

await step('cancellation by AbortSignal', async () => {
  const controller = new AbortController();
  const started = Date.now();
  const call = client.callTool({ name: 'sleep', arguments: { seconds: 30 } }, { signal: controller.signal });
  // Aborted once the server has the call: over HTTP, the head of its event stream goes out
  // once the tool has begun; on stdio, stdin is read in order, so a call sent after it is
  // answered once it is in.
  if (transportKind === 'stdio') {
    await client.callTool({ name: 'echo', arguments: { text: 'behind sleep' } });
  } else {
    check(await httpUntil(() => posted().find(({ message }) => message?.method === 'tools/call' && message.params?.name === 'sleep')?.x.status !== undefined),
      'the POST for sleep got no answer within 5 s');
  }
  controller.abort(new Error('the peer test aborts sleep'));
  const error = await rejection(call);
  const elapsed = Date.now() - started;
  check(elapsed < 5000, `rejected after ${elapsed} ms`);
  const request = lastRequest('tools/call', 'sleep');
  check(request, 'the sleep request never went out');
  const id = request.message.id;
  const cancelled = wire.filter((w) => w.dir === 'out' && w.message.method === 'notifications/cancelled');
  console.log(`# sleep (id ${id}) rejected after ${elapsed} ms with ${describeError(error)}; notifications/cancelled sent: ${show(cancelled.map((w) => w.message))}`);
  if (transportKind === 'stdio') {
    // On stdio the only way to say it: notifications/cancelled, with the envelope.
    check(cancelled.length === 1 && cancelled[0].message.params?.requestId === id,
      `want one notifications/cancelled for ${show(id)}: ${show(cancelled.map((w) => w.message))}`);
    check(cancelled[0].message.params?._meta?.[META.protocolVersion] === MODERN, `notifications/cancelled carries no envelope: ${show(cancelled[0].message)}`);
  } else {
    // Over HTTP the 2.x client cancels by closing the request's own stream (the POST).
    const x = posted().find(({ message }) => message?.id === id && message.method === 'tools/call')?.x;
    check(x, 'the POST for sleep was not seen');
    check(await httpUntil(() => x.ended), `the POST for sleep is still open: ${x.status} ${show(x.body)}`);
    console.log(`# the POST for sleep: ${x.status} ${show(x.headers?.['content-type'] ?? null)} body ${show(x.body)}${x.error ? ` ended with ${x.error}` : ''}`);
  }
  // The connection carries on, and the cancelled request gets no answer. On stdio the
  // echo also flushes it: the cancellation wakes the sleeping tool before the echo, read
  // after it, starts, and stdout is one ordered channel. Over HTTP an answer could only
  // travel on the stream the client closed, so the wire cannot see one either way.
  const echoed = await client.callTool({ name: 'echo', arguments: { text: 'still here' } });
  check(textOf(echoed) === 'still here', `echo after cancel returned ${show(echoed)}`);
  const late = wire.filter((w) => w.dir === 'in' && w.message.id === id && w.message.method === undefined);
  check(late.length === 0, `the server answered the cancelled request ${id}: ${show(late.map((w) => w.message))}`);
});

await step('resources/list and resources/templates/list', async () => {
  const { resources } = await client.listResources();
  const uris = resources.map((r) => r.uri);
  check(uris.includes('test://static-text'), `test://static-text missing from ${show(uris)}`);
  const { resourceTemplates } = await client.listResourceTemplates();
  const templates = resourceTemplates.map((t) => t.uriTemplate);
  check(templates.includes('test://template/{id}/data'), `test://template/{id}/data missing from ${show(templates)}`);
});

await step('resources/read: a static resource and a templated one', async () => {
  const result = await client.readResource({ uri: 'test://static-text' });
  check(result.contents?.length === 1, `contents are ${show(result.contents)}`);
  check(result.contents[0].uri === 'test://static-text', `uri is ${show(result.contents[0].uri)}`);
  check(result.contents[0].text === 'This is the content of the static text resource.', `text is ${show(result.contents[0].text)}`);
  const templated = await client.readResource({ uri: 'test://template/42/data' });
  let data;
  try { data = JSON.parse(templated.contents?.[0]?.text); } catch { /* checked below */ }
  check(data?.id === '42' && data?.templateTest === true, `test://template/42/data is ${show(templated)}`);
});

await step('prompts/list and prompts/get with arguments', async () => {
  const { prompts } = await client.listPrompts();
  const byName = new Map(prompts.map((p) => [p.name, p]));
  check(byName.has('test_simple_prompt'), `test_simple_prompt missing from ${show([...byName.keys()])}`);
  const withArgs = byName.get('test_prompt_with_arguments');
  check(withArgs, `test_prompt_with_arguments missing from ${show([...byName.keys()])}`);
  check(sameJson(withArgs.arguments?.map((a) => a.name).sort(), ['arg1', 'arg2']), `its arguments are ${show(withArgs.arguments)}`);
  const result = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'a', arg2: 'b' } });
  const text = result.messages?.[0]?.content?.text;
  check(text === "Prompt with arguments: arg1='a', arg2='b'", `messages are ${show(result.messages)}`);
});

await step('completion/complete: a prompt argument and a template variable', async () => {
  const prompt = await client.complete({ ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' }, argument: { name: 'arg1', value: 'test' } });
  check(sameJson(prompt.completion?.values, ['testValue1', 'testing']), `arg1 "test" completes to ${show(prompt.completion)}`);
  const variable = await client.complete({ ref: { type: 'ref/resource', uri: 'test://template/{id}/data' }, argument: { name: 'id', value: '4' } });
  check(sameJson(variable.completion?.values, ['456']), `id "4" completes to ${show(variable.completion)}`);
});

// ---------------------------------------------------------------------------------------
// The wire: every request carried the envelope (and, over HTTP, the headers)

await step('every request carried the 2026-07-28 _meta envelope', async () => {
  const out = wire.filter((w) => w.dir === 'out' && w.message.method !== undefined);
  check(out.length > 0, 'nothing went out');
  const bad = out.filter((w) => {
    const meta = w.message.params?._meta ?? {};
    return meta[META.protocolVersion] !== MODERN || !sameJson(meta[META.clientInfo], clientInfo) ||
      !sameJson(meta[META.clientCapabilities], clientCapabilities);
  });
  check(bad.length === 0, `messages without the envelope: ${show(bad.map((w) => w.message))}`);
  const responses = wire.filter((w) => w.dir === 'in' && w.message.result !== undefined);
  const untyped = responses.filter((w) => typeof w.message.result.resultType !== 'string');
  check(untyped.length === 0, `results without resultType: ${show(untyped.map((w) => w.message))}`);
});

if (transportKind === 'http') {
  await step('every POST carried MCP-Protocol-Version, Mcp-Method and Mcp-Name', async () => {
    const posts = posted().filter(({ message }) => message?.method !== undefined);
    check(posts.length > 0, 'no POSTs were seen');
    const problems = [];
    for (const { x, message } of posts) {
      const h = x.requestHeaders;
      if (h['mcp-protocol-version'] !== MODERN) problems.push(`${message.method}: MCP-Protocol-Version ${show(h['mcp-protocol-version'])}`);
      if (message.id === undefined) continue; // notifications: the version header is what is required
      if (h['mcp-method'] !== message.method) problems.push(`${message.method}: Mcp-Method ${show(h['mcp-method'])}`);
      const name = message.method === 'tools/call' || message.method === 'prompts/get' ? message.params?.name
        : message.method === 'resources/read' ? message.params?.uri : undefined;
      if (name !== undefined && h['mcp-name'] !== name) problems.push(`${message.method}: Mcp-Name ${show(h['mcp-name'])}, want ${show(name)}`);
      if (h['mcp-session-id'] !== undefined) problems.push(`${message.method}: Mcp-Session-Id ${show(h['mcp-session-id'])} (2026-07-28 has no sessions)`);
    }
    check(problems.length === 0, problems.join('; '));
    const call = posts.find(({ message }) => message.method === 'tools/call' && message.params?.name === 'count');
    if (call) console.log(`# POST tools/call count: headers ${show(call.x.requestHeaders)} -> ${call.x.status} ${show(call.x.headers?.['content-type'] ?? null)}`);
    const events = call ? sseMessages(call.x.body) : [];
    if (events.length > 0) console.log(`# its event stream: ${show(events)}`);
  });
}

await step('close', async () => {
  await client.close();
});
if (httpServer) {
  await step('SIGTERM: the server exits with status 0', async () => {
    await httpServer.stopWithSigterm();
  });
}

await step('no protocol errors', async () => {
  check(protocolErrors.length === 0, `the client reported: ${show(protocolErrors)}`);
});

finish();
