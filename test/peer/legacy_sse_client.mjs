// SPDX-License-Identifier: BSL-1.0
// Peer test: the official MCP TypeScript SDK client drives everything-server over the
// legacy HTTP+SSE transport (MCP 2024-11-05), with the SDK's SSEClientTransport.
//
//     node test/peer/legacy_sse_client.mjs build/examples/everything-server
//
// Starts the server with `--http 127.0.0.1:0 --legacy-sse`, reads its URL from the first
// stdout line that starts with http:// (http://127.0.0.1:PORT/mcp) and connects to
// http://127.0.0.1:PORT/sse. There, GET /sse opens the session's event stream, whose first
// event (`endpoint`) names /messages?sessionId=...; the client POSTs every message there
// (202, no body) and every answer, and every request of the server's own, comes on the
// event stream. The session ends when the stream closes.
//
// Prints one `ok - <step>` or `not ok - <step>: <why>` line per step and exits 1 if any
// step failed. Exit 77 (Meson's "skipped") when the SDK is not installed, unless
// DROID_REQUIRE_PEERS=1, which turns that into a failure so CI can never skip silently.
// Install the SDK with `npm ci --prefix test/peer`.
//
// Set DROID_PEER_TRACE=1 to print every JSON-RPC message and every HTTP exchange (with the
// bytes of its body) to stderr.

import {
  answerExchanges, check, Check, checkPinnedSdk, describeExchange, exchangeCapabilities, exchangeSteps, exitWithSummary,
  HttpServer, loadSdk, notOk, sameJson, show, sleep, sseEvents, startWatchdog, step, tapHttp, tapWire, textOf,
} from './harness.mjs';

const serverPath = process.argv[2];
if (!serverPath || process.argv.length > 3) {
  console.log('not ok - arguments: usage: node legacy_sse_client.mjs <path to everything-server>');
  process.exit(1);
}

// The SDK is imported dynamically (see loadSdk in harness.mjs), never with a static import.
const [{ Client }, { SSEClientTransport }, {
  LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, CreateMessageRequestSchema, ListRootsRequestSchema, ElicitRequestSchema,
}] = await loadSdk(
  (specifier) => import(specifier),
  ['@modelcontextprotocol/sdk/client/index.js', '@modelcontextprotocol/sdk/client/sse.js', '@modelcontextprotocol/sdk/types.js']);

// ---------------------------------------------------------------------------------------
// The server process

const server = new HttpServer(serverPath, ['--legacy-sse']);

// Never hang: whatever goes wrong, give up after 60 s and kill the server.
startWatchdog(() => server.kill());

function finish() {
  server.kill();
  exitWithSummary();
}

await checkPinnedSdk(LATEST_PROTOCOL_VERSION, `${server.commandLine} (the legacy HTTP+SSE transport)`);

let sseUrl;
const started = await step('the server starts and prints its URL', async () => {
  const url = await server.start();
  // The server prints its Streamable HTTP endpoint; the legacy one sits beside it.
  sseUrl = new URL('/sse', url);
  console.log(`# the legacy transport: GET ${sseUrl}`);
});
if (!started) finish();

// ---------------------------------------------------------------------------------------
// Taps: every HTTP exchange the SDK makes (the event stream's bytes included), and every
// JSON-RPC message in either direction.

const { exchanges, fetch: tapFetch, until: tapUntil } = tapHttp();
const path = (x) => { try { return new URL(x.url).pathname; } catch { return x.url; } };
/// The session's event stream: the SDK's GET /sse.
const eventStream = () => exchanges.find((x) => x.method === 'GET' && path(x) === '/sse');
/// The JSON-RPC messages that came on the event stream (its `message` events), in order.
const streamMessages = () => sseEvents(eventStream()?.body ?? '').filter((e) => (e.event ?? 'message') === 'message').map((e) => {
  try { return JSON.parse(e.data); } catch { return { unparseable: e.data }; }
});
/// The last POST whose body satisfies `predicate`.
const exchangeFor = (predicate) => exchanges.findLast((x) => {
  try { return x.method === 'POST' && x.requestBody !== undefined && predicate(JSON.parse(x.requestBody)); } catch { return false; }
});
/// Waits until `condition()` holds, checked again whenever the HTTP tap records something
/// (every message on the event stream is bytes the tap records); returns whether it did
/// within 5 s.
const until = (condition) => tapUntil(condition);

const clientInfo = { name: 'droid-peer-ts-legacy-sse', version: '1.0.0' };
// Sampling, roots and elicitation (`elicitation: {}`, form mode): the client answers the
// server's requests, which come on the event stream like everything else.
const clientCapabilities = { experimental: { 'droid.peerTest': { marker: 42 } }, ...exchangeCapabilities };

const transport = new SSEClientTransport(sseUrl, { fetch: tapFetch });
const client = new Client(clientInfo, { capabilities: clientCapabilities });
const exchange = answerExchanges(client, { CreateMessageRequestSchema, ListRootsRequestSchema, ElicitRequestSchema });

// Everything the SDK finds wrong with the session (unparseable events, failed POSTs,
// responses to unknown ids, ...) arrives here; any of it fails the run.
const protocolErrors = [];
client.onerror = (error) => {
  protocolErrors.push(error?.message ?? String(error));
  console.error(`# client onerror (checked at the end): ${error?.message ?? error}`);
};

// Every JSON-RPC message both ways, tapped before connect() so initialize is seen too.
const wire = tapWire(transport);

// ---------------------------------------------------------------------------------------
// The session

let endpoint; // the endpoint event's /messages?sessionId=... (a path)
let negotiated;

async function run() {
  const connected = await step('initialize: GET /sse names the endpoint, initialize goes by POST and is answered on the stream', async () => {
    await client.connect(transport);
    const server = client.getServerVersion();
    check(server?.name === 'everything-server', `serverInfo.name is ${show(server?.name)}, want "everything-server"`);
    check(typeof server?.version === 'string' && server.version.length > 0, `serverInfo.version is ${show(server?.version)}`);
    const caps = client.getServerCapabilities();
    check(caps?.tools && typeof caps.tools === 'object', `capabilities.tools missing: ${show(caps)}`);

    // The event stream, and the endpoint event first on it.
    const get = eventStream();
    check(get, `the SDK did not GET /sse: ${show(exchanges.map(describeExchange))}`);
    check(get.status === 200 && (get.headers?.['content-type'] ?? '').startsWith('text/event-stream'), `GET /sse was answered ${describeExchange(get)}`);
    const events = sseEvents(get.body);
    check(events[0]?.event === 'endpoint', `the first event on the stream is ${show(events[0])}, want an endpoint event: ${show(get.body)}`);
    endpoint = events[0].data;
    check(/^\/messages\?sessionId=[\x21-\x7e]+$/.test(endpoint), `the endpoint event names ${show(endpoint)}, want /messages?sessionId=...`);
    const id = new URL(endpoint, sseUrl).searchParams.get('sessionId');
    check(id.length >= 22, `the session id ${show(id)} is shorter than 22 characters`);
    check(transport._endpoint?.href === new URL(endpoint, sseUrl).href, `the SDK POSTs to ${show(transport._endpoint?.href)}`);

    // Whatever the server chose (SDK 1.32.2's legacy client still asks for its latest): the
    // SDK checked that it knows the version, and says so again here.
    const asked = wire.find((w) => w.dir === 'out' && w.message.method === 'initialize')?.message.params?.protocolVersion;
    negotiated = wire.find((w) => w.dir === 'in' && w.message.id !== undefined && w.message.result?.protocolVersion)?.message.result.protocolVersion;
    check(SUPPORTED_PROTOCOL_VERSIONS.includes(negotiated), `initialize negotiated ${show(negotiated)}, which SDK 1.32.2 does not support`);

    // initialize went by POST, was accepted with 202, and its answer came on the stream.
    const post = exchangeFor((m) => m.method === 'initialize');
    check(post && path(post) === '/messages', `the initialize POST went to ${show(post?.url)}`);
    check(post.status === 202, `the initialize POST was answered ${describeExchange(post)}, want 202`);
    const initId = JSON.parse(post.requestBody).id;
    await until(() => streamMessages().some((m) => m.id === initId));
    check(streamMessages().some((m) => m.id === initId && m.result?.protocolVersion === negotiated),
      `the initialize response did not come on the event stream: ${show(get.body)}`);
    console.log(`# endpoint ${endpoint}; client asked ${asked}, server answered protocolVersion ${negotiated}; ${server.name} ${server.version}`);
  });
  if (!connected) return;

  await step('tools/list', async () => {
    const tools = [];
    let cursor;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined);
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const name of ['echo', 'add', 'sleep', 'summarize', 'roots', 'book_table', 'client_info']) {
      const tool = byName.get(name);
      check(tool, `tool ${name} missing from ${show([...byName.keys()])}`);
      check(tool.inputSchema?.type === 'object', `${name}: inputSchema.type is ${show(tool.inputSchema?.type)}`);
    }
    check(byName.get('add').outputSchema?.type === 'object', `add: outputSchema is ${show(byName.get('add').outputSchema)}`);
  });

  await step('echo returns its text unchanged', async () => {
    const text = 'héllo "world" ✓ over the legacy stream';
    const result = await client.callTool({ name: 'echo', arguments: { text } });
    check(!result.isError, `isError: ${show(result)}`);
    check(result.content.length === 1 && result.content[0].type === 'text', `content is ${show(result.content)}`);
    check(result.content[0].text === text, `text is ${show(result.content[0].text)}, want ${show(text)}`);
  });

  await step('add returns structured content that matches its outputSchema', async () => {
    // callTool() validates structuredContent against the outputSchema cached by listTools.
    const result = await client.callTool({ name: 'add', arguments: { a: 1, b: 2.5 } });
    check(!result.isError, `isError: ${show(result)}`);
    check(result.structuredContent?.result === 3.5, `structuredContent is ${show(result.structuredContent)}`);
  });

  await step('client_info reports what initialize declared', async () => {
    const result = await client.callTool({ name: 'client_info', arguments: {} });
    check(!result.isError, `isError: ${show(result)}`);
    let info;
    try {
      info = JSON.parse(textOf(result));
    } catch (error) {
      check(false, `text is not JSON (${error.message}): ${show(textOf(result))}`);
    }
    check(info.protocolVersion === negotiated, `protocolVersion is ${show(info.protocolVersion)}, initialize negotiated ${show(negotiated)}`);
    check(info.clientInfo?.name === clientInfo.name, `clientInfo is ${show(info.clientInfo)}`);
    check(info.capabilities?.experimental?.['droid.peerTest']?.marker === 42, `capabilities are ${show(info.capabilities)}`);
    check(sameJson(info.capabilities?.elicitation, clientCapabilities.elicitation),
      `capabilities.elicitation is ${show(info.capabilities?.elicitation)}, we declared ${show(clientCapabilities.elicitation)}`);
  });

  // The exchange: the tools ask the client (sampling/createMessage, roots/list,
  // elicitation/create) while the tools/call is in flight. On the legacy transport the
  // question comes on the session's one event stream, before the tools/call's response,
  // and our answer goes by POST to the endpoint, accepted with 202.
  await exchangeSteps({
    client, wire, state: exchange, clientName: clientInfo.name, serverLog: server.log,
    onAnswered: async (method, request, call, answer) => {
      const callId = call.message.id;
      await until(() => streamMessages().some((m) => m.id === callId && m.method === undefined));
      const messages = streamMessages();
      const at = messages.findIndex((m) => m.method === method && m.id === request.message.id);
      const responseAt = messages.findIndex((m) => m.id === callId && m.method === undefined);
      check(at >= 0, `${method} (id ${show(request.message.id)}) did not come on the event stream: ${show(eventStream()?.body)}`);
      check(responseAt > at, `the tools/call response is not after ${method} on the event stream`);
      // The 202 and the event stream travel on different connections: the question (even
      // the response) may be read before the POST's status is.
      const callPost = exchangeFor((m) => m.id === callId && m.method === 'tools/call');
      await until(() => callPost?.ended);
      check(callPost?.status === 202 && callPost.body === '', `the tools/call POST was answered ${describeExchange(callPost)}, want 202 without a body`);
      const reply = exchangeFor((m) => m.id === answer.message.id && m.method === undefined && ('result' in m || 'error' in m));
      check(reply && path(reply) === '/messages', `the POST carrying our answer to ${show(answer.message.id)} was not seen`);
      await until(() => reply.ended);
      check(reply.status === 202, `the POST carrying our answer was answered ${describeExchange(reply)}, want 202`);
    },
  });

  await step('cancellation', async () => {
    const controller = new AbortController();
    const startedAt = Date.now();
    const call = client.callTool({ name: 'sleep', arguments: { seconds: 30 } }, undefined, { signal: controller.signal });
    // Aborted once the session has the call: a ping sent after the call's POST was
    // answered reaches the session behind the call, so its answer says the call is in.
    await until(() => exchangeFor((m) => m.method === 'tools/call' && m.params?.name === 'sleep')?.ended);
    await client.ping();
    controller.abort();
    let rejection;
    try {
      const result = await call;
      check(false, `resolved instead of rejecting: ${show(result)}`);
    } catch (error) {
      if (error instanceof Check) throw error;
      rejection = error;
    }
    const elapsed = Date.now() - startedAt;
    check(elapsed < 5000, `rejected after ${elapsed} ms`);
    const request = wire.find((w) => w.dir === 'out' && w.message.method === 'tools/call' && w.message.params?.name === 'sleep');
    check(request, 'the sleep request never went out');
    const id = request.message.id;
    const cancelled = wire.find((w) => w.dir === 'out' && w.message.method === 'notifications/cancelled');
    check(cancelled?.message.params?.requestId === id, `notifications/cancelled for ${show(id)} not sent: ${show(cancelled?.message)}`);
    const post = exchangeFor((m) => m.method === 'notifications/cancelled' && m.params?.requestId === id);
    await until(() => post?.ended);
    check(post?.status === 202, `the POST carrying notifications/cancelled was answered ${describeExchange(post)}, want 202`);
    console.log(`# sleep (id ${id}) rejected after ${elapsed} ms with ${rejection?.name}: ${rejection?.message}`);

    // The session must carry on. The echo also flushes anything the server might still say
    // about the cancelled request: the cancellation wakes the sleeping tool before the
    // echo, sent after it, starts (both on the session's shard, in order), and every answer
    // travels on the one event stream, so an answer to the cancelled request would come
    // before the echo's.
    await client.ping();
    const echoed = await client.callTool({ name: 'echo', arguments: { text: 'still here' } });
    check(textOf(echoed) === 'still here', `echo after cancel returned ${show(echoed)}`);
    const late = streamMessages().filter((m) => m.id === id && m.method === undefined);
    check(late.length === 0, `the server answered the cancelled request ${id}: ${show(late)}`);
  });

  await step('every POST was answered 202 without a body, every answer came on the event stream', async () => {
    const posts = exchanges.filter((x) => x.method === 'POST');
    check(posts.length > 0, 'no POSTs were seen');
    await until(() => posts.every((x) => x.ended));
    const wrong = posts.filter((x) => x.status !== 202 || x.body !== '' || path(x) !== '/messages');
    check(wrong.length === 0, `POSTs not answered 202 without a body: ${show(wrong.map((x) => `${x.url} ${x.requestBody} -> ${describeExchange(x)}`))}`);
    const others = exchanges.filter((x) => x.method !== 'POST' && x !== eventStream());
    check(others.length === 0, `the SDK made other requests: ${show(others.map((x) => `${x.method} ${x.url} -> ${describeExchange(x)}`))}`);
    // Every message the SDK received came as one of the stream's message events, in order.
    const key = (m) => `${m.method ?? (m.error ? 'error' : 'result')} ${show(m.id ?? null)}`;
    const received = wire.filter((w) => w.dir === 'in').map((w) => key(w.message));
    const onStream = streamMessages().map(key);
    check(sameJson(received, onStream), `the SDK received ${show(received)}, the stream carried ${show(onStream)}`);
    console.log(`# ${posts.length} POSTs, ${onStream.length} messages on the event stream`);
  });

  await step('a POST to /messages with an unknown sessionId is 404', async () => {
    const response = await fetch(new URL('/messages?sessionId=no-such-session-0000000000', sseUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'stray', method: 'ping' }),
    });
    const body = await response.text();
    check(response.status === 404, `status ${response.status}, want 404; body ${show(body)}`);
  });

  await step('close the client: the event stream ends', async () => {
    await client.close();
    const get = eventStream();
    check(await until(() => get.ended), `GET /sse is still open 5 s after close(): ${describeExchange(get)}`);
  });

  // Polled: the server ends the session when it sees the stream's connection close, and
  // says so to nobody; a POST is the only way to ask, and each one is a real request.
  await step('after close, a POST to the old endpoint gets 404 within 1 s', async () => {
    const target = new URL(endpoint, sseUrl);
    const closedAt = Date.now();
    const seen = [];
    let reply;
    for (let n = 0; ; ++n) {
      const response = await fetch(target, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'mcp-protocol-version': negotiated },
        body: JSON.stringify({ jsonrpc: '2.0', id: `after-close-${n}`, method: 'ping' }),
      });
      reply = { status: response.status, type: response.headers.get('content-type'), body: await response.text(), at: Date.now() - closedAt };
      seen.push(reply.status);
      if (reply.status === 404 || reply.at >= 1000) break;
      await sleep(25);
    }
    check(reply.status === 404, `POSTs to ${endpoint} after close were answered ${show(seen)} for ${reply.at} ms, want 404; last body ${show(reply.body)}`);
    console.log(`# after close: 404 after ${reply.at} ms (${seen.length} POST(s)) ${show(reply.type)} ${reply.body.trim()}`);
  });
}

try {
  await run();
} catch (error) {
  notOk('run', error?.stack ?? String(error));
}

await step('SIGTERM: the server exits with status 0 within 3 s', () => server.stopWithSigterm());

await step('no protocol errors', async () => {
  check(protocolErrors.length === 0, `the SDK reported: ${show(protocolErrors)}`);
});

finish();
