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
// land elsewhere, and service going on when an instance is killed. Needs Node >= 20; exit
// 77 (skipped) without the client, nginx or redis-server, unless DROID_REQUIRE_PEERS=1.

import { check, exitWithSummary, show, startWatchdog, step, textOf, missingPrerequisite, tapWire } from '../peer/harness.mjs';
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

await step('an instance is killed (SIGKILL): requests go on through the others', async () => {
  const victim = cluster.instances[1];
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
