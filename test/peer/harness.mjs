// SPDX-License-Identifier: BSL-1.0
// What the peer tests (stdio_client.mjs, http_client.mjs) share: the skip-or-fail decision
// when the SDK is missing, loading the SDK, the `ok` / `not ok` reporting, the check that
// the installed SDK is the pinned one, the watchdog and a tap on the JSON-RPC wire.
//
// This module must not import the SDK statically (see loadSdk), and it lives next to the
// scripts and package.json, so `here` and the SDK it resolves are theirs.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
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

// ---------------------------------------------------------------------------------------
// The watchdog and the end of the run

let watchdog;

/// Never hang: whatever goes wrong, give up after 60 s; `kill` kills the server.
export function startWatchdog(kill) {
  watchdog = setTimeout(() => {
    console.log('not ok - watchdog: the run took longer than 60 s');
    kill();
    process.exit(1);
  }, 60_000);
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
/// it fills. Protocol.connect() chains to an onmessage that is already set, and send() is
/// wrapped before connect() so the initialize request is seen too: call this before
/// client.connect(transport).
export function tapWire(transport) {
  const wire = [];
  transport.onmessage = (message) => {
    wire.push({ at: Date.now(), dir: 'in', message });
    if (trace) console.error(`# <- ${show(message)}`);
  };
  const originalSend = transport.send.bind(transport);
  transport.send = (message, options) => {
    wire.push({ at: Date.now(), dir: 'out', message });
    if (trace) console.error(`# -> ${show(message)}`);
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
// The exchange: the server's requests to the client (sampling/createMessage, roots/list)

/// What a client declares to answer the example's summarize and roots tools.
export const exchangeCapabilities = { sampling: {}, roots: { listChanged: true } };

/// The roots the client exposes, and the text the example's roots tool makes of them (one
/// root without a name: the tool then prints the bare uri).
export const peerRoots = [
  { uri: 'file:///work/peer-project', name: 'peer project' },
  { uri: 'file:///tmp/peer-scratch' },
];
const rootsText = `${peerRoots.length} root(s)\n${peerRoots.map((r) => (r.name ? `${r.uri} (${r.name})` : r.uri)).join('\n')}`;

/// Registers the client's sampling and roots handlers (the client must have declared
/// `exchangeCapabilities`; `schemas` are CreateMessageRequestSchema and
/// ListRootsRequestSchema from the SDK's types.js). Every request a handler sees is kept in
/// `sampled` / `rootsAsked`; `answerSampling` (a function of the request) answers
/// sampling, or, unset, makes the handler throw.
export function answerExchanges(client, { CreateMessageRequestSchema, ListRootsRequestSchema }) {
  const state = { sampled: [], rootsAsked: [], answerSampling: undefined };
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    state.sampled.push(request);
    if (!state.answerSampling) throw new Error('this step did not expect sampling/createMessage');
    return state.answerSampling(request);
  });
  client.setRequestHandler(ListRootsRequestSchema, async (request) => {
    state.rootsAsked.push(request);
    return { roots: peerRoots };
  });
  return state;
}

/// The server's requests (incoming messages with a method and an id) tapped on `wire`
/// since `from`, with `method`.
const serverRequests = (wire, from, method) =>
  wire.slice(from).filter((w) => w.dir === 'in' && w.message.method === method && w.message.id !== undefined);

/// Our answer on `wire` to the server's request `id`.
const answerTo = (wire, id) => wire.find((w) => w.dir === 'out' && w.message.method === undefined && w.message.id === id);

/// The steps that drive the exchange through a client that answers it (stdio, and HTTP
/// with event streams). `onAnswered(method, request, tool)` may add transport checks: it
/// gets the wire entries of the server's request and of the tools/call. `serverLog`, when
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
}

/// The steps for a session that cannot carry the server's requests (HTTP with JSON replies,
/// stateless HTTP): both tools are tool errors naming `setting`, and no handler runs.
export async function exchangeRefusedSteps({ client, wire, state, setting, why }) {
  for (const [tool, method, args] of [['summarize', 'sampling/createMessage', { text: 'anything' }], ['roots', 'roots/list', {}]]) {
    await step(`${tool} is refused ${why}, naming ${setting}`, async () => {
      const from = wire.length;
      const sampled = state.sampled.length;
      const rootsAsked = state.rootsAsked.length;
      const result = await client.callTool({ name: tool, arguments: args });
      check(result.isError === true, `isError is ${show(result.isError)}: ${show(result)}`);
      check(textOf(result).includes(setting), `text ${show(textOf(result))} does not name ${setting}`);
      check(state.sampled.length === sampled && state.rootsAsked.length === rootsAsked,
        `a handler ran: sampling ${state.sampled.length - sampled} time(s), roots ${state.rootsAsked.length - rootsAsked} time(s)`);
      const requests = serverRequests(wire, from, method);
      check(requests.length === 0, `the server sent ${show(requests.map((w) => w.message))}`);
      console.log(`# ${tool}: ${show(textOf(result))}`);
    });
  }
}

/// The steps for a client that declared neither sampling nor roots: both tools are tool
/// errors naming the capability, and the server asks nothing.
export async function exchangeUndeclaredSteps({ client, wire }) {
  for (const [tool, method, capability, args] of [
    ['summarize', 'sampling/createMessage', 'sampling', { text: 'anything' }],
    ['roots', 'roots/list', 'roots', {}],
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
