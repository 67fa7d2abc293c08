// SPDX-License-Identifier: BSL-1.0
// Peer test: the official MCP TypeScript SDK client drives everything-server over stdio.
//
//     node test/peer/stdio_client.mjs build/examples/everything-server
//
// Prints one `ok - <step>` or `not ok - <step>: <why>` line per step and exits 1 if any
// step failed. Exit 77 (Meson's "skipped") when the SDK is not installed, unless
// DROID_REQUIRE_PEERS=1, which turns that into a failure so CI can never skip silently.
// Install the SDK with `npm ci --prefix test/peer`.
//
// Set DROID_PEER_TRACE=1 to print every JSON-RPC message on the wire (to stderr).

import {
  answerExchanges, check, Check, checkPinnedSdk, exchangeCapabilities, exchangeSteps, exchangeUndeclaredSteps, exitWithSummary,
  afterMicrotasks, loadSdk, sameJson, show, startWatchdog, step, tapWire, textOf, watchStderr,
} from './harness.mjs';

const serverPath = process.argv[2];
if (!serverPath) {
  console.log('not ok - arguments: usage: node stdio_client.mjs <path to everything-server>');
  process.exit(1);
}

// The SDK is imported dynamically (see loadSdk in harness.mjs), never with a static import.
const [{ Client }, { StdioClientTransport }, { McpError, ErrorCode, LATEST_PROTOCOL_VERSION, CreateMessageRequestSchema, ListRootsRequestSchema, ElicitRequestSchema }] = await loadSdk(
  (specifier) => import(specifier),
  ['@modelcontextprotocol/sdk/client/index.js', '@modelcontextprotocol/sdk/client/stdio.js', '@modelcontextprotocol/sdk/types.js']);

// ---------------------------------------------------------------------------------------
// The session

await checkPinnedSdk(LATEST_PROTOCOL_VERSION, serverPath);

const clientInfo = { name: 'droid-peer-ts-stdio', version: '1.0.0' };
// An experimental capability the server has no reason to know: client_info must echo it.
// Sampling, roots and elicitation: the client answers the server's requests (the exchange).
// Elicitation is declared the 2025-06-18 way, `elicitation: {}` (form mode); the HTTP
// client declares `{ form: {} }`.
const clientCapabilities = { experimental: { 'droid.peerTest': { marker: 42 } }, ...exchangeCapabilities };

// The server's stderr is piped and forwarded to ours unchanged, so a step can wait for a
// line the server logs.
const transport = new StdioClientTransport({ command: serverPath, args: [], stderr: 'pipe' });
const serverLog = watchStderr(transport.stderr);
const client = new Client(clientInfo, { capabilities: clientCapabilities });
const exchange = answerExchanges(client, { CreateMessageRequestSchema, ListRootsRequestSchema, ElicitRequestSchema });

// Everything the SDK finds wrong with the session (unparseable lines, responses to unknown
// ids, progress for unknown tokens, ...) arrives here; any of it fails the run.
const protocolErrors = [];
client.onerror = (error) => {
  protocolErrors.push(error?.message ?? String(error));
  console.error(`# client onerror (checked at the end): ${error?.message ?? error}`);
};

// Every JSON-RPC message both ways, tapped before connect() so initialize is seen too.
const wire = tapWire(transport);

// A second session, started near the end, whose client declares neither sampling nor roots.
let bareTransport;

// Never hang: whatever goes wrong, give up after 60 s and kill the servers.
startWatchdog(() => {
  for (const pid of [transport.pid, bareTransport?.pid]) {
    if (pid) try { process.kill(pid, 'SIGKILL'); } catch { /* already gone */ }
  }
});

const connected = await step('initialize', async () => {
  await client.connect(transport);
  const server = client.getServerVersion();
  check(server?.name === 'everything-server', `serverInfo.name is ${show(server?.name)}, want "everything-server"`);
  check(typeof server?.version === 'string' && server.version.length > 0, `serverInfo.version is ${show(server?.version)}`);
  const caps = client.getServerCapabilities();
  check(caps?.tools && typeof caps.tools === 'object', `capabilities.tools missing: ${show(caps)}`);
  const instructions = client.getInstructions();
  check(typeof instructions === 'string' && instructions.length > 0, `instructions are ${show(instructions)}`);
  const init = wire.find((w) => w.dir === 'in' && w.message.id !== undefined && w.message.result?.protocolVersion);
  console.log(`# negotiated protocolVersion ${init?.message.result.protocolVersion}, server ${server.name} ${server.version}`);
});

if (connected) {
  const expectedTools = ['echo', 'add', 'forecast', 'count', 'sleep', 'fail', 'client_info', 'summarize', 'roots', 'book_table'];

  await step('tools/list', async () => {
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
    check(byName.get('forecast').outputSchema?.type === 'object', `forecast: outputSchema is ${show(byName.get('forecast').outputSchema)}`);
  });

  await step('echo returns its text unchanged', async () => {
    const text = 'héllo "world"';
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

  await step('forecast with defaults', async () => {
    const result = await client.callTool({ name: 'forecast', arguments: { city: 'Oslo' } });
    check(!result.isError, `isError: ${show(result)}`);
    const s = result.structuredContent;
    check(s?.city === 'Oslo', `city is ${show(s?.city)}`);
    check(Array.isArray(s?.highs) && s.highs.length === 3, `highs is ${show(s?.highs)}, want 3 entries`);
    check(s?.unit === 'metric', `unit is ${show(s?.unit)}`);
  });

  await step('forecast with a mistyped argument is a tool error naming it', async () => {
    const result = await client.callTool({ name: 'forecast', arguments: { city: 'Oslo', days: 'x' } });
    check(result.isError === true, `isError is ${show(result.isError)}: ${show(result)}`);
    check(textOf(result).includes('days'), `text ${show(textOf(result))} does not mention days`);
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

  await step('count reports progress', async () => {
    const seen = [];
    const errorsBefore = protocolErrors.length;
    const result = await client.callTool({ name: 'count', arguments: { steps: 3, interval_ms: 10 } }, undefined,
      { onprogress: (p) => seen.push(p) });
    await afterMicrotasks(); // let notification handlers the SDK deferred to a microtask run
    check(!result.isError, `isError: ${show(result)}`);
    check(textOf(result) === 'counted to 3', `text is ${show(textOf(result))}`);

    // What the server sent, in wire order: the server's side of the contract.
    const request = wire.findLast((w) => w.dir === 'out' && w.message.params?.name === 'count');
    const id = request.message.id;
    const token = request.message.params._meta?.progressToken;
    const responseAt = wire.findIndex((w) => w.dir === 'in' && w.message.id === id && w.message.method === undefined);
    const progressFor = (w) => w.dir === 'in' && w.message.method === 'notifications/progress' && w.message.params?.progressToken === token;
    const sent = wire.slice(0, responseAt).filter(progressFor).map((w) => w.message.params);
    const late = wire.slice(responseAt + 1).filter(progressFor).map((w) => w.message);
    check(late.length === 0, `progress after the response: ${show(late)}`);
    check(sent.length === 3, `${sent.length} progress notifications before the response, want 3: ${show(sent)}`);
    for (let i = 0; i < sent.length; ++i) {
      check(sent[i].total === 3, `progress ${i} has total ${show(sent[i].total)}: ${show(sent)}`);
      if (i > 0) check(sent[i].progress > sent[i - 1].progress, `progress does not increase: ${show(sent)}`);
    }

    // What the SDK delivered to onprogress. SDK 1.32.2 dispatches notifications on a
    // microtask but responses synchronously, so progress that arrives in the same read as
    // the response finds its handler already gone and is reported through onerror as
    // "unknown token" (modelcontextprotocol/typescript-sdk#2580). The wire check above is
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
      console.log(`# the SDK dropped the last ${lost.length} of ${sent.length} progress notifications, which arrived with the response (typescript-sdk#2580); the wire order was right`);
  });

  await step('cancellation', async () => {
    const controller = new AbortController();
    const started = Date.now();
    const call = client.callTool({ name: 'sleep', arguments: { seconds: 30 } }, undefined, { signal: controller.signal });
    // Aborted once the server has the call: stdin is read in order, so a ping sent after
    // it is answered once the call is in.
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
    const elapsed = Date.now() - started;
    check(elapsed < 5000, `rejected after ${elapsed} ms`);
    const request = wire.find((w) => w.dir === 'out' && w.message.method === 'tools/call' && w.message.params?.name === 'sleep');
    check(request, 'the sleep request never went out');
    const id = request.message.id;
    const cancelled = wire.find((w) => w.dir === 'out' && w.message.method === 'notifications/cancelled');
    check(cancelled?.message.params?.requestId === id, `notifications/cancelled for ${show(id)} not sent: ${show(cancelled?.message)}`);
    console.log(`# sleep (id ${id}) rejected after ${elapsed} ms with ${rejection?.name}: ${rejection?.message}`);

    // The session must carry on. The echo also flushes anything the server might still say
    // about the cancelled request: the cancellation wakes the sleeping tool before the
    // echo, read after it, starts, and stdout is one ordered channel, so an answer to the
    // cancelled request would come before the echo's.
    await client.ping();
    const echoed = await client.callTool({ name: 'echo', arguments: { text: 'still here' } });
    check(textOf(echoed) === 'still here', `echo after cancel returned ${show(echoed)}`);
    const late = wire.filter((w) => w.dir === 'in' && w.message.id === id && w.message.method === undefined);
    check(late.length === 0, `the server answered the cancelled request ${id}: ${show(late.map((w) => w.message))}`);
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
    const negotiated = wire.find((w) => w.dir === 'in' && w.message.result?.protocolVersion)?.message.result.protocolVersion;
    check(negotiated === LATEST_PROTOCOL_VERSION,
      `initialize negotiated ${show(negotiated)}; the SDK asked for its latest, ${LATEST_PROTOCOL_VERSION}`);
    check(info.protocolVersion === LATEST_PROTOCOL_VERSION, `protocolVersion is ${show(info.protocolVersion)}, want ${LATEST_PROTOCOL_VERSION}`);
    check(info.clientInfo?.name === clientInfo.name, `clientInfo is ${show(info.clientInfo)}`);
    check(info.clientInfo?.version === clientInfo.version, `clientInfo is ${show(info.clientInfo)}`);
    check(info.capabilities?.experimental?.['droid.peerTest']?.marker === 42, `capabilities are ${show(info.capabilities)}`);
    check(sameJson(info.capabilities?.elicitation, clientCapabilities.elicitation),
      `capabilities.elicitation is ${show(info.capabilities?.elicitation)}, we declared ${show(clientCapabilities.elicitation)}`);
  });

  // The exchange: the tools ask the client (sampling/createMessage, roots/list,
  // elicitation/create) while the tools/call is in flight, and the SDK's handlers answer.
  await exchangeSteps({ client, wire, state: exchange, clientName: clientInfo.name, serverLog });
}

await step('close: the server exits on end of input', async () => {
  // StdioClientTransport.close() ends the child's stdin, waits up to 2 s for it to exit,
  // then sends SIGTERM (and SIGKILL 2 s later). Its ChildProcess is the private
  // `_process`; listening to it tells an exit on end of input apart from a kill.
  const child = transport._process;
  const pid = transport.pid;
  check(child && pid, 'no server process to close (the transport was never started or has already closed)');
  let exit = child.exitCode !== null || child.signalCode !== null ? { code: child.exitCode, signal: child.signalCode, at: Date.now() } : null;
  child.once('exit', (code, signal) => { exit = { code, signal, at: Date.now() }; });
  const started = Date.now();
  await client.close();
  const elapsed = Date.now() - started;
  check(exit, `the server (pid ${pid}) had not exited when close() returned after ${elapsed} ms`);
  check(exit.signal === null, `the server was killed by ${exit.signal} after ${exit.at - started} ms: it did not exit on end of input`);
  check(exit.at - started < 2000, `the server took ${exit.at - started} ms to exit`);
  check(exit.code === 0, `the server exited with status ${exit.code}`);
  console.log(`# server (pid ${pid}) exited with status 0 ${exit.at - started} ms after close()`);
});

// A client that declared none of sampling, roots and elicitation: the server must not ask
// it, and the tools say which capability was missing.
if (connected) {
  const bareInfo = { name: 'droid-peer-ts-stdio-bare', version: '1.0.0' };
  bareTransport = new StdioClientTransport({ command: serverPath, args: [], stderr: 'inherit' });
  const bare = new Client(bareInfo, { capabilities: {} });
  bare.onerror = (error) => {
    protocolErrors.push(`(client without sampling) ${error?.message ?? String(error)}`);
    console.error(`# client without sampling: onerror (checked at the end): ${error?.message ?? error}`);
  };
  const bareWire = tapWire(bareTransport);
  const bareConnected = await step('a second client, without sampling, roots or elicitation, connects', async () => {
    await bare.connect(bareTransport);
    check(bare.getServerVersion()?.name === 'everything-server', `serverInfo is ${show(bare.getServerVersion())}`);
  });
  if (bareConnected) await exchangeUndeclaredSteps({ client: bare, wire: bareWire });
  await step('the second client closes', async () => {
    await bare.close();
  });
}

await step('no protocol errors', async () => {
  check(protocolErrors.length === 0, `the SDK reported: ${show(protocolErrors)}`);
});

exitWithSummary();
