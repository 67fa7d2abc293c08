// SPDX-License-Identifier: BSL-1.0
// Peer test: the official MCP TypeScript client 2.x, pinned to 2026-07-28, through nginx
// over three instances of everything-server (round robin, no stickiness), which share a
// redis-server and one requestState secret (docs/scale-out.md).
//
//     node test/peer-modern/cluster.mjs build/examples/everything-server
//
// A 2026-07-28 request has no session, so the balancer spreads every request, and every
// multi round-trip retry, over the instances: consecutive requests of one client go to
// consecutive instances, so each retry reaches an instance that does not hold the tool's
// frame and replays it from the sealed requestState. Checks: tools/call answered from
// every instance, sampling and form elicitation over input_required rounds whose retries
// land elsewhere, calls made while an instance is stopped past its lease (SIGSTOP) all
// answered, and service going on when an instance is killed. Needs Node >= 20; exit
// 77 (skipped) without the client, nginx or redis-server, unless DROID_REQUIRE_PEERS=1.

import { check, exitWithSummary, show, sleep, sseMessages, startWatchdog, step, textOf, missingPrerequisite, tapWire } from '../peer/harness.mjs';
import { Cluster, clusterPrerequisites } from '../peer/cluster_harness.mjs';

const MODERN = '2026-07-28';
const PACKAGE = '@modelcontextprotocol/client';
const serverPath = process.argv[2];
if (!serverPath || process.argv.length > 3) {
  console.log('not ok - arguments: usage: node cluster.mjs <path to everything-server>');
  process.exit(1);
}
if (Number(process.versions.node.split('.')[0]) < 20) missingPrerequisite(`${PACKAGE} needs Node >= 20, this is ${process.version}`);
clusterPrerequisites();
let sdk;
try {
  sdk = await import(PACKAGE);
} catch (error) {
  if (error?.code === 'ERR_MODULE_NOT_FOUND') missingPrerequisite(`${PACKAGE} is not installed; run \`npm ci --prefix test/peer-modern\``);
  console.log(`not ok - import ${PACKAGE}: ${error?.stack ?? error}`);
  process.exit(1);
}
const { Client, StreamableHTTPClientTransport } = sdk;

const cluster = new Cluster(serverPath, 3);
startWatchdog(() => cluster.stop(), 100);
const finish = () => {
  cluster.stop();
  exitWithSummary();
};

if (!await step('redis-server, three instances sharing it and one requestState secret, and nginx in front', async () => {
  await cluster.start();
})) finish();

const client = new Client({ name: 'droid-cluster-modern', version: '2.0.0' },
  { capabilities: { sampling: {}, elicitation: {} }, versionNegotiation: { mode: { pin: MODERN } } });
const sampled = { role: 'assistant', content: { type: 'text', text: 'a short summary' }, model: 'peer-model', stopReason: 'endTurn' };
let asked = 0;
let elicitation;
client.setRequestHandler('sampling/createMessage', async () => {
  ++asked;
  return sampled;
});
client.setRequestHandler('elicitation/create', async (request) => {
  ++asked;
  if (!elicitation) throw new Error('this step did not expect elicitation/create');
  return elicitation(request.params);
});
const transport = new StreamableHTTPClientTransport(cluster.url);
const wire = tapWire(transport);

if (!await step(`connect through the balancer, pinned to ${MODERN}`, async () => {
  await client.connect(transport);
  check(client.getNegotiatedProtocolVersion() === MODERN, `negotiated ${show(client.getNegotiatedProtocolVersion())}`);
})) finish();

/// The tools/call legs of the last call on the wire: its first request and every retry.
const legsSince = (from, name) => wire.slice(from)
  .filter((w) => w.dir === 'out' && w.message.method === 'tools/call' && w.message.params?.name === name)
  .map((w) => w.message);

await step('30 calls spread over the three instances, each answered', async () => {
  for (let i = 0; i < 30; ++i) {
    const r = await client.callTool({ name: 'echo', arguments: { text: `modern ${i}` } });
    check(textOf(r) === `modern ${i}`, `call ${i} answered ${show(r)}`);
  }
});

await step('sampling over input_required rounds: each retry lands on another instance, which replays the tool', async () => {
  for (let i = 0; i < 5; ++i) {
    const from = wire.length;
    const before = asked;
    const r = await client.callTool({ name: 'summarize', arguments: { text: `text ${i}` } });
    check(textOf(r) === 'summary from peer-model: a short summary', `summarize answered ${show(r)}`);
    check(asked === before + 1, `the client was asked ${asked - before} times`);
    const legs = legsSince(from, 'summarize');
    check(legs.length === 2, `${legs.length} legs`);
    check(typeof legs[1].params?.requestState === 'string', 'the retry carries the requestState');
  }
});

await step('form elicitation over rounds across instances', async () => {
  elicitation = () => ({ action: 'accept', content: { name: 'Ada', guests: 4, place: 'terrace', notes: 'birthday' } });
  const r = await client.callTool({ name: 'book_table', arguments: {} });
  elicitation = undefined;
  check(textOf(r) === 'booked a table on the terrace for 4, name Ada (birthday)', `book_table answered ${show(r)}`);
});

await step('an instance stopped past its lease (SIGSTOP): calls made meanwhile, sampling rounds included, are all answered', async () => {
  // Those that nginx hands to the stopped instance wait in its socket and are served
  // when it wakes (once it has its lease back); the others are served where they land.
  const victim = cluster.instances[1];
  process.kill(victim.child.pid, 'SIGSTOP');
  let stopped = true;
  try {
    const calls = Array.from({ length: 6 }, (_, i) => client.callTool({ name: 'echo', arguments: { text: `paused ${i}` } })
      .then((r) => textOf(r), (error) => `error: ${error.message}`));
    const summary = client.callTool({ name: 'summarize', arguments: { text: 'during the pause' } })
      .then((r) => textOf(r), (error) => `error: ${error.message}`);
    await sleep(4_500);
    process.kill(victim.child.pid, 'SIGCONT');
    stopped = false;
    const texts = await Promise.all(calls);
    check(texts.every((t, i) => t === `paused ${i}`), `the calls made during the pause: ${show(texts)}`);
    check(await summary === 'summary from peer-model: a short summary', `summarize during the pause: ${show(await summary)}`);
  } finally {
    if (stopped) process.kill(victim.child.pid, 'SIGCONT');
  }
});

// The client has no API for the tasks extension: its requests are written as the
// extension specifies and sent through the balancer with fetch.
const taskCapabilities = { elicitation: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } };
let rpcId = 1000;
async function rpc(method, name, params) {
  const body = { jsonrpc: '2.0', id: ++rpcId, method, params: { ...params, _meta: {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': taskCapabilities,
    'io.modelcontextprotocol/clientInfo': { name: 'droid-cluster-modern-tasks', version: '2.0.0' } } } };
  const r = await fetch(cluster.url, { method: 'POST', body: JSON.stringify(body), headers: {
    'content-type': 'application/json', accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN, 'mcp-method': method, 'mcp-name': name } });
  const text = await r.text();
  check(r.status === 200, `${method} answered ${r.status}: ${text}`);
  const message = (r.headers.get('content-type') ?? '').startsWith('text/event-stream') ? sseMessages(text).at(-1) : JSON.parse(text);
  check(message?.result !== undefined, `${method} answered ${text}`);
  return message.result;
}
/// Polls tasks/get through the balancer (each poll reaching the next instance) until the
/// task is `want` (a guard of 20 s: the task moves on its own instance, unannounced).
async function until(taskId, want) {
  let task;
  for (let i = 0; i < 400; ++i) {
    task = await rpc('tasks/get', taskId, { taskId });
    if (task.status === want) return task;
    await sleep(50);
  }
  return task;
}

await step('a task polled through every instance; its instance killed, it is reported failed', async () => {
  let created = await rpc('tools/call', 'slow_compute', { name: 'slow_compute', arguments: { seconds: 0.3, label: 'a' } });
  check(created.resultType === 'task', `tools/call answered ${show(created)}`);
  let task = await until(created.taskId, 'completed');
  check(task.status === 'completed', `the task is ${show(task)}`);
  check(textOf(task.result).startsWith('computed a in 0.3'), `its result is ${show(task.result)}`);

  created = await rpc('tools/call', 'slow_compute', { name: 'slow_compute', arguments: { seconds: 60, label: 'long' } });
  check(created.resultType === 'task', `tools/call answered ${show(created)}`);
  const owner = cluster.redisCall('HGET', `droid:t:${created.taskId}`, 'owner').split('#')[0];
  const victim = cluster.instances.find((i) => i.name === owner);
  check(victim !== undefined, `the task's record names ${show(owner)}`);
  check((await rpc('tasks/get', created.taskId, { taskId: created.taskId })).status === 'working', 'the task is working');
  victim.child.kill('SIGKILL');
  check(await victim.waitForExit(5000), 'the instance did not die');
  task = await until(created.taskId, 'failed');
  check(task.status === 'failed', `the task is ${show(task)}`);
  check(/stopped before it finished/.test(task.statusMessage ?? ''), `its message is ${show(task.statusMessage)}`);
});

await step('an instance is killed (SIGKILL): requests go on through the others', async () => {
  const victim = cluster.instances.find((i) => i.exit === null);
  victim.child.kill('SIGKILL');
  check(await victim.waitForExit(5000), 'the instance did not die');
  for (let i = 0; i < 10; ++i) {
    const r = await client.callTool({ name: 'echo', arguments: { text: `after ${i}` } });
    check(textOf(r) === `after ${i}`, `call ${i} after the kill answered ${show(r)}`);
  }
  const r = await client.callTool({ name: 'summarize', arguments: { text: 'after the kill' } });
  check(textOf(r) === 'summary from peer-model: a short summary', `summarize after the kill answered ${show(r)}`);
  await client.close();
});

finish();
