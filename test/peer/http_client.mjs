// SPDX-License-Identifier: BSL-1.0
// Peer test: the official MCP TypeScript SDK client drives everything-server over
// Streamable HTTP.
//
//     node test/peer/http_client.mjs build/examples/everything-server                   # event streams
//     node test/peer/http_client.mjs build/examples/everything-server --json-response   # JSON replies
//     node test/peer/http_client.mjs build/examples/everything-server --stateless       # no sessions
//
// Starts the server with `--http 127.0.0.1:0` (plus the mode flag), reads its URL from the
// first stdout line that starts with http://, and connects StreamableHTTPClientTransport.
// Prints one `ok - <step>` or `not ok - <step>: <why>` line per step and exits 1 if any
// step failed. Exit 77 (Meson's "skipped") when the SDK is not installed, unless
// DROID_REQUIRE_PEERS=1, which turns that into a failure so CI can never skip silently.
// Install the SDK with `npm ci --prefix test/peer`.
//
// Set DROID_PEER_TRACE=1 to print every JSON-RPC message and every HTTP exchange (with the
// bytes of its body) to stderr.

import {
  afterMicrotasks, answerExchanges, check, Check, checkPinnedSdk, describeExchange, exchangeCapabilities, exchangeRefusedSteps,
  exchangeSteps, exitWithSummary, formElicitation, HttpServer, loadSdk, notOk, sameJson, show, sseMessages, startWatchdog, step,
  tapHttp, tapWire, textOf,
} from './harness.mjs';

const usage = 'usage: node http_client.mjs <path to everything-server> [--json-response | --stateless]';
const serverPath = process.argv[2];
const modeFlag = process.argv[3];
if (!serverPath || process.argv.length > 4 || (modeFlag !== undefined && !['--json-response', '--stateless'].includes(modeFlag))) {
  console.log(`not ok - arguments: ${usage}`);
  process.exit(1);
}
const mode = modeFlag === '--json-response' ? 'json' : modeFlag === '--stateless' ? 'stateless' : 'sse';

// The SDK is imported dynamically (see loadSdk in harness.mjs), never with a static import.
const [{ Client }, { StreamableHTTPClientTransport }, { McpError, ErrorCode, LATEST_PROTOCOL_VERSION, CreateMessageRequestSchema, ListRootsRequestSchema, ElicitRequestSchema }] = await loadSdk(
  (specifier) => import(specifier),
  ['@modelcontextprotocol/sdk/client/index.js', '@modelcontextprotocol/sdk/client/streamableHttp.js', '@modelcontextprotocol/sdk/types.js']);

// ---------------------------------------------------------------------------------------
// The server process

const server = new HttpServer(serverPath, modeFlag ? [modeFlag] : []);

// Never hang: whatever goes wrong, give up after 60 s and kill the server.
startWatchdog(() => server.kill());

function finish() {
  server.kill();
  exitWithSummary();
}

// ---------------------------------------------------------------------------------------
// The pinned SDK

await checkPinnedSdk(LATEST_PROTOCOL_VERSION, `${server.commandLine} (mode ${mode})`);

// ---------------------------------------------------------------------------------------
// Start the server and wait for its URL

let url;
const started = await step('the server starts and prints its URL', async () => {
  url = await server.start();
});
if (!started) finish();
const serverLog = server.log; // the server's stderr, forwarded to ours unchanged (watchStderr)

// ---------------------------------------------------------------------------------------
// Taps: every HTTP exchange the SDK makes (with the bytes of each response body, read
// from a tee of the body the SDK reads), and every JSON-RPC message in either direction.

const { exchanges, fetch: tapFetch, until } = tapHttp();
const describe = describeExchange;
const exchangeFor = (predicate) => exchanges.findLast((x) => {
  try { return x.requestBody !== undefined && predicate(JSON.parse(x.requestBody)); } catch { return false; }
});

/// A POST the SDK did not make: a raw request against the endpoint.
async function rawPost(message, headers) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(message),
  });
  const body = await response.text();
  return { status: response.status, headers: Object.fromEntries(response.headers), body };
}

const clientInfo = { name: `droid-peer-ts-http-${mode}`, version: '1.0.0' };
// Sampling, roots and elicitation: the client answers the server's requests (the exchange).
// Elicitation is declared the 2025-11-25 way, `{ form: {} }` (the stdio client says `{}`).
const clientCapabilities = { experimental: { 'droid.peerTest': { marker: 42 } }, ...exchangeCapabilities, elicitation: formElicitation };

const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: tapFetch });
const client = new Client(clientInfo, { capabilities: clientCapabilities });
const exchange = answerExchanges(client, { CreateMessageRequestSchema, ListRootsRequestSchema, ElicitRequestSchema });

// Everything the SDK finds wrong with the session (unparseable events, failed requests,
// responses to unknown ids, progress for unknown tokens, ...) arrives here; any of it
// fails the run.
const protocolErrors = [];
client.onerror = (error) => {
  protocolErrors.push(error?.message ?? String(error));
  console.error(`# client onerror (checked at the end): ${error?.message ?? error}`);
};

// Every JSON-RPC message both ways, tapped before connect() so initialize is seen too.
const wire = tapWire(transport);

// ---------------------------------------------------------------------------------------
// Steps shared by the modes

const expectedTools = ['echo', 'add', 'forecast', 'count', 'sleep', 'fail', 'client_info', 'summarize', 'roots', 'book_table'];
let listedTools = new Set();

async function initialize() {
  await client.connect(transport);
  const server = client.getServerVersion();
  check(server?.name === 'everything-server', `serverInfo.name is ${show(server?.name)}, want "everything-server"`);
  check(typeof server?.version === 'string' && server.version.length > 0, `serverInfo.version is ${show(server?.version)}`);
  const caps = client.getServerCapabilities();
  check(caps?.tools && typeof caps.tools === 'object', `capabilities.tools missing: ${show(caps)}`);
  const init = wire.find((w) => w.dir === 'in' && w.message.id !== undefined && w.message.result?.protocolVersion);
  const negotiated = init?.message.result.protocolVersion;
  check(negotiated === LATEST_PROTOCOL_VERSION, `initialize negotiated ${show(negotiated)}; the SDK asked for ${LATEST_PROTOCOL_VERSION}`);
  const post = exchangeFor((m) => m.method === 'initialize');
  console.log(`# negotiated protocolVersion ${negotiated}, server ${server.name} ${server.version}; ` +
    `initialize answered ${post?.status} ${post?.headers?.['content-type']}, session ${show(transport.sessionId ?? null)}`);
}

async function listTools() {
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined);
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  const byName = new Map(tools.map((t) => [t.name, t]));
  for (const name of expectedTools) {
    const tool = byName.get(name);
    check(tool, `tool ${name} missing from ${show([...byName.keys()])}`);
    check(typeof tool.description === 'string' && tool.description.length > 0, `${name}: empty description`);
    check(tool.inputSchema?.type === 'object', `${name}: inputSchema.type is ${show(tool.inputSchema?.type)}`);
  }
  check(byName.get('add').outputSchema?.type === 'object', `add: outputSchema is ${show(byName.get('add').outputSchema)}`);
  listedTools = new Set(byName.keys());
  const extra = [...listedTools].filter((name) => !expectedTools.includes(name));
  if (extra.length > 0) console.log(`# tools besides the expected ones: ${extra.join(', ')}`);
}

async function echo() {
  const text = 'héllo "world" ✓';
  const result = await client.callTool({ name: 'echo', arguments: { text } });
  check(!result.isError, `isError: ${show(result)}`);
  check(result.content.length === 1 && result.content[0].type === 'text', `content is ${show(result.content)}`);
  check(result.content[0].text === text, `text is ${show(result.content[0].text)}, want ${show(text)}`);
}

async function add() {
  // callTool() validates structuredContent against the outputSchema cached by listTools.
  const result = await client.callTool({ name: 'add', arguments: { a: 1, b: 2.5 } });
  check(!result.isError, `isError: ${show(result)}`);
  check(result.structuredContent?.result === 3.5, `structuredContent is ${show(result.structuredContent)}`);
}

/// POSTs carrying requests must have been answered the way the mode says.
function repliesAre(contentType) {
  const posts = exchanges.filter((x) => x.method === 'POST' && (() => {
    try { const m = JSON.parse(x.requestBody); return m.method !== undefined && m.id !== undefined; } catch { return false; }
  })());
  check(posts.length > 0, 'no POSTs carrying requests were seen');
  const wrong = posts.filter((x) => x.status !== 200 || (x.headers?.['content-type'] ?? '').split(';')[0].trim() !== contentType);
  check(wrong.length === 0, `requests not answered 200 ${contentType}: ${show(wrong.map(describe))}`);
  const notifications = exchanges.filter((x) => x.method === 'POST' && (() => {
    try { const m = JSON.parse(x.requestBody); return m.id === undefined; } catch { return false; }
  })());
  const not202 = notifications.filter((x) => x.status !== 202);
  check(not202.length === 0, `notifications not answered 202: ${show(not202.map(describe))}`);
}

/// After DELETE, the server must end the session's GET streams too (the standalone one,
/// and any the SDK opened to resume a POST's stream).
async function sessionStreamsEnded() {
  const gets = () => exchanges.filter((x) => x.method === 'GET' && x.status === 200);
  check(gets().length > 0, `the SDK's standalone GET stream was not opened: ${show(exchanges.filter((x) => x.method === 'GET').map(describe))}`);
  await until(() => gets().every((x) => x.ended));
  const open = gets().filter((x) => !x.ended);
  check(open.length === 0, `GET streams still open 5 s after DELETE: ${show(open.map((x) => `${describe(x)}${x.requestHeaders['last-event-id'] ? ` (Last-Event-ID ${x.requestHeaders['last-event-id']})` : ''}`))}`);
}

/// A POST's stream ends after its response (or after the request was cancelled); one left
/// open would tie up a connection. The final chunk may trail the response a little.
async function postStreamsEnded() {
  const streams = () => exchanges.filter((x) => x.method === 'POST' && x.headers?.['content-type']?.startsWith('text/event-stream'));
  await until(() => streams().every((x) => x.ended));
  const open = streams().filter((x) => !x.ended);
  check(open.length === 0, `still open 5 s later: ${show(open.map((x) => `${x.requestBody} -> ${show(x.body)}`))}`);
}

async function closeAndStop(afterClose) {
  await step('close the client', async () => {
    await client.close();
  });
  if (afterClose) await afterClose();

  await step('SIGTERM: the server exits with status 0 within 3 s', () => server.stopWithSigterm());
}

/// Drops reports the SDK makes about its own standalone GET stream being cut when the
/// client closes (an abort the SDK reports through onerror); returns what was dropped.
function dropClosingNoise(sinceIndex) {
  const noise = (e) => /SSE stream disconnected: AbortError|This operation was aborted/.test(e);
  const dropped = protocolErrors.slice(sinceIndex).filter(noise);
  for (const e of dropped) protocolErrors.splice(protocolErrors.indexOf(e), 1);
  return dropped;
}

// ---------------------------------------------------------------------------------------
// Mode: event streams (the default)

async function runSse() {
  const connected = await step('initialize', async () => {
    await initialize();
    const id = transport.sessionId;
    check(typeof id === 'string' && id.length >= 22, `transport.sessionId is ${show(id)}, want a string of 22+ characters`);
    check(/^[\x21-\x7e]+$/.test(id), `session id ${show(id)} has characters outside 0x21..0x7E`);
  });
  if (!connected) return;

  await step('tools/list', listTools);
  await step('echo returns its text unchanged', echo);
  await step('add returns structured content that matches its outputSchema', add);

  await step('forecast with defaults', async () => {
    const result = await client.callTool({ name: 'forecast', arguments: { city: 'Oslo' } });
    check(!result.isError, `isError: ${show(result)}`);
    const s = result.structuredContent;
    check(s?.city === 'Oslo', `city is ${show(s?.city)}`);
    check(Array.isArray(s?.highs) && s.highs.length === 3, `highs is ${show(s?.highs)}, want 3 entries`);
  });

  await step('forecast with a mistyped argument is a tool error naming it', async () => {
    const result = await client.callTool({ name: 'forecast', arguments: { city: 'Oslo', days: 'x' } });
    check(result.isError === true, `isError is ${show(result.isError)}: ${show(result)}`);
    check(textOf(result).includes('days'), `text ${show(textOf(result))} does not mention days`);
  });

  await step('forecast whose handler throws is a tool error naming days', async () => {
    const result = await client.callTool({ name: 'forecast', arguments: { city: 'Oslo', days: 50 } });
    check(result.isError === true, `isError is ${show(result.isError)}: ${show(result)}`);
    check(textOf(result).includes('days must be between 1 and 10'), `text is ${show(textOf(result))}`);
  });

  await step('fail is a tool error with its message', async () => {
    const result = await client.callTool({ name: 'fail', arguments: { message: 'boom' } });
    check(result.isError === true, `isError is ${show(result.isError)}: ${show(result)}`);
    check(textOf(result) === 'boom', `text is ${show(textOf(result))}, want "boom"`);
  });

  await step('unknown tool is JSON-RPC error -32602', async () => {
    let result;
    try {
      result = await client.callTool({ name: 'no_such_tool', arguments: {} });
    } catch (error) {
      check(error instanceof McpError, `rejected with ${error?.name}: ${error?.message}`);
      check(error.code === ErrorCode.InvalidParams, `code is ${error.code} (${error.message}), want -32602`);
      return;
    }
    check(false, `resolved instead of rejecting: ${show(result)}`);
  });

  await step('count reports progress on the POST\'s event stream', async () => {
    const seen = [];
    const errorsBefore = protocolErrors.length;
    const result = await client.callTool({ name: 'count', arguments: { steps: 3, interval_ms: 10 } }, undefined,
      { onprogress: (p) => seen.push(p) });
    await afterMicrotasks(); // let notification handlers the SDK deferred to a microtask run
    check(!result.isError, `isError: ${show(result)}`);
    check(textOf(result) === 'counted to 3', `text is ${show(textOf(result))}`);

    // The server's side of the contract, from the bytes of the POST's own event stream:
    // three progress notifications, then the response, then the end of the stream.
    const request = wire.findLast((w) => w.dir === 'out' && w.message.params?.name === 'count');
    const id = request.message.id;
    const token = request.message.params._meta?.progressToken;
    const post = exchangeFor((m) => m.id === id && m.params?.name === 'count');
    check(post, 'the count POST was not seen');
    check(post.status === 200 && post.headers['content-type']?.startsWith('text/event-stream'),
      `the count POST was answered ${describe(post)}`);
    await until(() => post.ended);
    check(post.ended, `the count POST's event stream was still open 5 s after its response: ${describe(post)}`);
    const messages = sseMessages(post.body);
    const responseAt = messages.findIndex((m) => m.id === id && m.method === undefined);
    check(responseAt === messages.length - 1, `the response is not the last event on the stream: ${show(messages)}`);
    const sent = messages.slice(0, responseAt)
      .filter((m) => m.method === 'notifications/progress' && m.params?.progressToken === token).map((m) => m.params);
    check(sent.length === 3, `${sent.length} progress notifications on the stream before the response, want 3: ${show(post.body)}`);
    for (let i = 0; i < sent.length; ++i) {
      check(sent[i].total === 3, `progress ${i} has total ${show(sent[i].total)}: ${show(sent)}`);
      if (i > 0) check(sent[i].progress > sent[i - 1].progress, `progress does not increase: ${show(sent)}`);
    }
    const elsewhere = exchanges.filter((x) => x !== post && sseMessages(x.body).some((m) => m.params?.progressToken === token));
    check(elsewhere.length === 0, `progress for the count request also arrived on other streams: ${show(elsewhere.map(describe))}`);

    // What the SDK delivered to onprogress. SDK 1.32.2 dispatches notifications on a
    // microtask but responses synchronously, so progress that arrives in the same read as
    // the response can find its handler already gone, and is reported through onerror as
    // "unknown token" (modelcontextprotocol/typescript-sdk#2580). The stream check above is
    // the server's contract; here, the SDK must have delivered a prefix, and the rest
    // must be exactly those reports.
    check(show(seen) === show(sent.slice(0, seen.length).map(({ progressToken, ...p }) => p)),
      `onprogress saw ${show(seen)}, the server sent ${show(sent)}`);
    const lost = sent.slice(seen.length);
    const unknownToken = (e) => e.startsWith('Received a progress notification for an unknown token:');
    const reported = protocolErrors.slice(errorsBefore).filter(unknownToken);
    check(reported.length === lost.length, `onprogress missed ${show(lost)}, but the SDK reported ${show(reported)}`);
    for (const e of reported) protocolErrors.splice(protocolErrors.indexOf(e), 1);
    if (lost.length > 0)
      console.log(`# the SDK dropped the last ${lost.length} of ${sent.length} progress notifications, which arrived with the response (typescript-sdk#2580); the stream order was right`);
  });

  await step('cancellation', async () => {
    const controller = new AbortController();
    const startedAt = Date.now();
    const call = client.callTool({ name: 'sleep', arguments: { seconds: 30 } }, undefined, { signal: controller.signal });
    // Aborted once the call is running: the head of its event stream goes out once the
    // server has admitted it and the tool has begun.
    const running = await until(() => exchangeFor((m) => m.method === 'tools/call' && m.params?.name === 'sleep')?.status !== undefined);
    controller.abort();
    check(running, 'the sleep POST got no answer within 5 s');
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
    console.log(`# sleep (id ${id}) rejected after ${elapsed} ms with ${rejection?.name}: ${rejection?.message}`);

    // The session must carry on.
    await client.ping();
    const echoed = await client.callTool({ name: 'echo', arguments: { text: 'still here' } });
    check(textOf(echoed) === 'still here', `echo after cancel returned ${show(echoed)}`);
    // The server ends the request's stream once the request is over, answered or
    // cancelled: then all it said about the request is in the stream's bytes (an answer
    // would go there before the end), so no answer there is no answer at all.
    const post = exchangeFor((m) => m.id === id && m.params?.name === 'sleep');
    check(post?.status === 200, `the sleep POST was answered ${describe(post)}`);
    check(await until(() => post.ended), `the sleep POST's event stream was still open 5 s after the cancellation: ${describe(post)}`);
    const answered = sseMessages(post.body).filter((m) => m.id === id && m.method === undefined);
    check(answered.length === 0, `the server answered the cancelled request ${id}: ${show(answered)}`);
    const late = wire.filter((w) => w.dir === 'in' && w.message.id === id && w.message.method === undefined);
    check(late.length === 0, `the server answered the cancelled request ${id}: ${show(late.map((w) => w.message))}`);
    console.log(`# the sleep POST's event stream ended ${post.endedAt - startedAt} ms after the call; its bytes: ${show(post.body)}`);
  });

  // A later addition to the example: a tool that closes its own POST stream before it
  // answers (SEP-1699), so the client must resume with Last-Event-ID to get the result.
  if (listedTools.has('reconnect')) {
    await step('reconnect: the SDK resumes the closed stream with Last-Event-ID and gets the result', async () => {
      const before = exchanges.length;
      const startedAt = Date.now();
      const result = await client.callTool({ name: 'reconnect', arguments: {} });
      const elapsed = Date.now() - startedAt;
      check(!result.isError, `isError: ${show(result)}`);
      check(textOf(result) === 'answered after the stream was resumed', `text is ${show(textOf(result))}`);
      const request = wire.findLast((w) => w.dir === 'out' && w.message.params?.name === 'reconnect');
      const id = request.message.id;
      const post = exchangeFor((m) => m.id === id && m.params?.name === 'reconnect');
      check(post?.status === 200 && post.headers['content-type']?.startsWith('text/event-stream'), `the POST was answered ${describe(post)}`);
      check(await until(() => post.ended), `the POST's stream is still open: ${describe(post)}`);
      check(/^id: *\S+$/m.test(post.body), `the POST's stream carried no event id to resume from: ${show(post.body)}`);
      check(!sseMessages(post.body).some((m) => m.id === id), `the response came on the POST's stream: ${show(post.body)}`);
      // Other streams above may be resumed meanwhile (see the next step): pick this one's.
      const lastId = [...post.body.matchAll(/^id: *(\S+)$/gm)].at(-1)[1];
      const resumes = exchanges.slice(before).filter((x) => x.method === 'GET' && x.requestHeaders['last-event-id'] === lastId);
      check(resumes.length === 1, `${resumes.length} GETs with Last-Event-ID ${lastId} (the POST's last event id): ` +
        `${show(exchanges.slice(before).filter((x) => x.method === 'GET').map((x) => `${x.requestHeaders['last-event-id']}: ${describe(x)}`))}`);
      check(resumes[0].status === 200 && sseMessages(resumes[0].body).some((m) => m.id === id && m.result),
        `the resuming GET did not carry the response: ${describe(resumes[0])}`);
      console.log(`# reconnect answered after ${elapsed} ms: POST ${show(post.body)}, then GET Last-Event-ID ${lastId} -> ${resumes[0].status} ${show(resumes[0].body)}`);
    });
  }

  await step('past the retry interval, the SDK\'s stream resumptions raise no errors', async () => {
    // A 2025-11-25 server primes each POST stream with an event id and a retry interval.
    // A stream that then ends without a result response is, to SDK 1.32.2, a stream to
    // resume: after `retry` ms it GETs with Last-Event-ID. Two streams above end that way:
    // the cancelled sleep (no response, by design) and the unknown tool (the SDK counts
    // only result responses as final, not error ones: typescript-sdk#2638). Wait until
    // the resumptions have played out, so a slow machine sees the same run as a fast one,
    // then require that none of it went wrong. Played out means: every primed stream that
    // ended without a result has been resumed by a GET naming its last event id, and every
    // request made has been answered. (A resumed stream of a request that is over idles
    // until the session ends, so nothing more follows.)
    const retry = Math.max(0, ...exchanges.flatMap((x) => [...x.body.matchAll(/^retry: *(\d+)$/gm)].map((m) => Number(m[1]))));
    const primed = exchanges.filter((x) => x.method === 'POST' && /^id:/m.test(x.body));
    check(await until(() => primed.every((x) => x.ended)), `primed POST streams still open: ${show(primed.filter((x) => !x.ended).map(describe))}`);
    const lastIdOf = (x) => [...x.body.matchAll(/^id: *(\S+)$/gm)].at(-1)?.[1];
    const unanswered = primed.filter((x) => {
      const id = JSON.parse(x.requestBody).id;
      return !sseMessages(x.body).some((m) => m.id === id && 'result' in m);
    });
    const resumedBy = (x) => exchanges.find((g) => g.method === 'GET' && g.requestHeaders['last-event-id'] === lastIdOf(x));
    const played = await until(() => unanswered.every((x) => resumedBy(x)?.status !== undefined) &&
      exchanges.every((x) => x.status !== undefined || x.ended), 2 * retry + 10_000);
    check(played, `streams that ended without a result and were not resumed: ${show(unanswered.filter((x) => resumedBy(x)?.status === undefined).map(describe))}`);

    const resumes = exchanges.filter((x) => x.method === 'GET' && x.requestHeaders['last-event-id'] !== undefined);
    const after = exchanges.filter((x) => x.method === 'GET' && x.n >= Math.min(...resumes.map((r) => r.n)));
    const resumeErrors = (e) => /Failed to open SSE stream|Failed to reconnect SSE stream|Maximum reconnection attempts|SSE stream disconnected/.test(e);
    const errors = protocolErrors.filter(resumeErrors);
    for (const e of errors) protocolErrors.splice(protocolErrors.indexOf(e), 1);
    const clip = (t) => (t.length > 100 ? `${t.slice(0, 100)}...` : t);
    const gets = after.map((x) => `GET${x.requestHeaders['last-event-id'] ? ` Last-Event-ID ${x.requestHeaders['last-event-id']}` : ''} -> ` +
      `${x.status} ${clip(x.body)}${x.ended ? ' (ended)' : ' (open)'}`);
    console.log(`# retry ${retry} ms; GETs since the first resumption: ${show(gets)}`);
    check(errors.length === 0, `${errors.length} SDK error(s): ${show(errors)} (the GETs are listed above)`);
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
    check(info.protocolVersion === LATEST_PROTOCOL_VERSION, `protocolVersion is ${show(info.protocolVersion)}, want ${LATEST_PROTOCOL_VERSION}`);
    check(info.clientInfo?.name === clientInfo.name, `clientInfo is ${show(info.clientInfo)}`);
    check(info.capabilities?.experimental?.['droid.peerTest']?.marker === 42, `capabilities are ${show(info.capabilities)}`);
    check(sameJson(info.capabilities?.elicitation, clientCapabilities.elicitation),
      `capabilities.elicitation is ${show(info.capabilities?.elicitation)}, we declared ${show(clientCapabilities.elicitation)}`);
  });

  // The exchange: the tools ask the client (sampling/createMessage, roots/list,
  // elicitation/create) while the tools/call is in flight, and the SDK's handlers answer
  // (book_table's form included: see elicitationSteps). Over HTTP the question must
  // come on the tools/call POST's own event stream, and the POST carrying the answer is
  // accepted with 202.
  await exchangeSteps({
    client, wire, state: exchange, clientName: clientInfo.name, serverLog,
    onAnswered: async (method, request, call, answer) => {
      const post = exchangeFor((m) => m.id === call.message.id && m.method === 'tools/call');
      check(post?.status === 200 && post.headers['content-type']?.startsWith('text/event-stream'), `the tools/call POST was answered ${describe(post)}`);
      await until(() => post.ended);
      const messages = sseMessages(post.body);
      const at = messages.findIndex((m) => m.method === method && m.id === request.message.id);
      const responseAt = messages.findIndex((m) => m.id === call.message.id && m.method === undefined);
      check(at >= 0, `${method} (id ${show(request.message.id)}) did not come on the tools/call POST's stream: ${show(post.body)}`);
      check(responseAt > at, `the tools/call response is not after ${method} on the POST's stream: ${show(post.body)}`);
      const reply = exchangeFor((m) => m.id === answer.message.id && m.method === undefined && ('result' in m || 'error' in m));
      check(reply, `the POST carrying our answer to ${show(answer.message.id)} was not seen`);
      await until(() => reply.status !== undefined);
      check(reply.status === 202, `the POST carrying our answer was answered ${describe(reply)}, want 202`);
    },
  });

  await step('requests were answered with event streams, notifications with 202', async () => {
    repliesAre('text/event-stream');
    const get = exchanges.find((x) => x.method === 'GET');
    console.log(`# the SDK's standalone GET stream: ${get ? `${get.status} ${get.headers?.['content-type']}` : 'not opened'}`);
  });

  await step('a POST with a foreign Origin is 403 with a JSON-RPC error whose id is null', async () => {
    // Node's fetch lets a script set Origin (it is forbidden only in browsers); Host it
    // silently replaces, so that half of the DNS rebinding check is not testable here.
    const reply = await rawPost({ jsonrpc: '2.0', id: 'evil', method: 'ping' }, {
      origin: 'http://evil.com',
      'mcp-session-id': transport.sessionId,
      'mcp-protocol-version': transport.protocolVersion,
    });
    check(reply.status === 403, `status ${reply.status}, want 403; body ${show(reply.body)}`);
    let body;
    try {
      body = JSON.parse(reply.body);
    } catch (error) {
      check(false, `the body is not JSON (${error.message}): ${show(reply.body)} (content-type ${show(reply.headers['content-type'])})`);
    }
    check(body.jsonrpc === '2.0' && 'id' in body && body.id === null, `the body's id is not null: ${show(reply.body)}`);
    check(typeof body.error?.code === 'number' && typeof body.error?.message === 'string', `the body has no error: ${show(reply.body)}`);
    check((reply.headers['content-type'] ?? '').startsWith('application/json'), `content-type is ${show(reply.headers['content-type'])}`);
    // The same POST from a loopback origin goes through: the 403 was about the Origin.
    const fine = await rawPost({ jsonrpc: '2.0', id: 'local', method: 'ping' }, {
      origin: new URL(url).origin,
      'mcp-session-id': transport.sessionId,
      'mcp-protocol-version': transport.protocolVersion,
    });
    check(fine.status === 200, `the same ping from origin ${new URL(url).origin} got ${fine.status}: ${show(fine.body)}`);
  });

  await step('every event stream the server opened for a POST has ended', postStreamsEnded);

  const sessionId = transport.sessionId;
  const protocolVersion = transport.protocolVersion;
  await step('terminateSession sends DELETE, which ends the session\'s GET streams', async () => {
    const before = exchanges.length;
    await transport.terminateSession();
    const deletes = exchanges.slice(before).filter((x) => x.method === 'DELETE');
    check(deletes.length === 1, `${deletes.length} DELETE requests, want 1: ${show(exchanges.slice(before).map(describe))}`);
    check(deletes[0].requestHeaders['mcp-session-id'] === sessionId, `the DELETE carried session ${show(deletes[0].requestHeaders['mcp-session-id'])}`);
    check(deletes[0].status >= 200 && deletes[0].status < 300, `DELETE answered ${describe(deletes[0])}`);
    check(transport.sessionId === undefined, `transport.sessionId is still ${show(transport.sessionId)}`);
    await sessionStreamsEnded();
  });

  const errorsBeforeClose = protocolErrors.length;
  // The 404 is checked after close(): the SDK answers the end of its standalone stream by
  // reconnecting retry ms later, session or not, and only close() cancels that.
  await closeAndStop(async () => {
    await step('a POST with the ended session id gets 404', async () => {
      const reply = await rawPost({ jsonrpc: '2.0', id: 'after-delete', method: 'ping' },
        { 'mcp-session-id': sessionId, 'mcp-protocol-version': protocolVersion });
      check(reply.status === 404, `a POST with the ended session id got ${reply.status}, want 404; body ${show(reply.body)}`);
      console.log(`# after DELETE: 404 ${show(reply.headers['content-type'] ?? null)} ${reply.body.trim()}`);
    });
  });
  const dropped = dropClosingNoise(errorsBeforeClose);
  if (dropped.length > 0) console.log(`# ignored ${dropped.length} SDK report(s) of its own streams being aborted by close(): ${show(dropped)}`);
}

// ---------------------------------------------------------------------------------------
// Mode: JSON replies

async function runJson() {
  const connected = await step('initialize', async () => {
    await initialize();
    const id = transport.sessionId;
    check(typeof id === 'string' && id.length >= 22, `transport.sessionId is ${show(id)}, want a string of 22+ characters`);
  });
  if (!connected) return;

  await step('tools/list', listTools);
  await step('echo returns its text unchanged', echo);
  await step('add returns structured content that matches its outputSchema', add);

  await step('count returns its result (progress is not delivered in JSON mode)', async () => {
    const seen = [];
    const result = await client.callTool({ name: 'count', arguments: { steps: 3, interval_ms: 10 } }, undefined,
      { onprogress: (p) => seen.push(p) });
    check(!result.isError, `isError: ${show(result)}`);
    check(textOf(result) === 'counted to 3', `text is ${show(textOf(result))}`);
    const request = wire.findLast((w) => w.dir === 'out' && w.message.params?.name === 'count');
    const post = exchangeFor((m) => m.id === request.message.id && m.params?.name === 'count');
    check(post?.status === 200 && post.headers['content-type']?.startsWith('application/json'), `the count POST was answered ${describe(post)}`);
    console.log(`# onprogress saw ${seen.length} report(s) in JSON mode`);
  });

  // The exchange needs an event stream to ask on: with JSON replies there is none.
  await exchangeRefusedSteps({ client, wire, state: exchange, setting: 'event_stream', why: 'with JSON replies' });

  await step('requests were answered with JSON documents, notifications with 202', async () => {
    repliesAre('application/json');
  });

  await step('terminateSession sends DELETE', async () => {
    const before = exchanges.length;
    await transport.terminateSession();
    const deletes = exchanges.slice(before).filter((x) => x.method === 'DELETE');
    check(deletes.length === 1 && deletes[0].status >= 200 && deletes[0].status < 300,
      `DELETE exchanges: ${show(deletes.map(describe))}`);
    await sessionStreamsEnded();
  });

  const errorsBeforeClose = protocolErrors.length;
  await closeAndStop();
  const dropped = dropClosingNoise(errorsBeforeClose);
  if (dropped.length > 0) console.log(`# ignored ${dropped.length} SDK report(s) of its own streams being aborted by close(): ${show(dropped)}`);
}

// ---------------------------------------------------------------------------------------
// Mode: stateless

async function runStateless() {
  const connected = await step('initialize without a session', async () => {
    await initialize();
    check(transport.sessionId === undefined, `transport.sessionId is ${show(transport.sessionId)}, want undefined`);
    const withSession = exchanges.filter((x) => x.headers?.['mcp-session-id'] !== undefined);
    check(withSession.length === 0, `responses carried Mcp-Session-Id: ${show(withSession.map((x) => `${x.method} ${x.headers['mcp-session-id']}`))}`);
  });
  if (!connected) return;

  await step('tools/list', listTools);
  await step('echo returns its text unchanged', echo);
  await step('add returns structured content that matches its outputSchema', add);

  // The exchange needs a session to route the answer to: stateless, there is none.
  await exchangeRefusedSteps({ client, wire, state: exchange, setting: 'stateless', why: 'without sessions' });

  await step('the standalone GET stream is refused with 405', async () => {
    // After notifications/initialized the SDK tries GET; 405 tells it there is none.
    await until(() => exchanges.some((x) => x.method === 'GET' && x.status !== undefined));
    const gets = exchanges.filter((x) => x.method === 'GET');
    check(gets.length === 1, `${gets.length} GET requests: ${show(gets.map(describe))}`);
    check(gets[0].status === 405, `GET answered ${describe(gets[0])}`);
  });

  await step('terminateSession is a no-op without a session; a raw DELETE is 405', async () => {
    // The SDK sends DELETE only when it holds a session id; stateless, it holds none.
    const before = exchanges.length;
    await transport.terminateSession();
    check(exchanges.length === before, `terminateSession made requests: ${show(exchanges.slice(before).map(describe))}`);
    const response = await fetch(url, { method: 'DELETE' });
    const body = await response.text();
    check(response.status === 405, `DELETE got ${response.status}, want 405: ${show(body)}`);
    const allow = response.headers.get('allow') ?? '';
    check(/\bPOST\b/.test(allow) && !/\bDELETE\b/.test(allow), `Allow is ${show(allow)}, want POST without DELETE`);
    // The client carries on: nothing depended on a session.
    await echo();
  });

  await step('every event stream the server opened for a POST has ended', postStreamsEnded);

  const errorsBeforeClose = protocolErrors.length;
  await closeAndStop();
  const dropped = dropClosingNoise(errorsBeforeClose);
  if (dropped.length > 0) console.log(`# ignored ${dropped.length} SDK report(s) of its own streams being aborted by close(): ${show(dropped)}`);
}

// ---------------------------------------------------------------------------------------

try {
  if (mode === 'sse') await runSse();
  else if (mode === 'json') await runJson();
  else await runStateless();
} catch (error) {
  notOk('run', error?.stack ?? String(error));
}

await step('no protocol errors', async () => {
  check(protocolErrors.length === 0, `the SDK reported: ${show(protocolErrors)}`);
});

finish();
