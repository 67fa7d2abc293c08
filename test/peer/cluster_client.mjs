// SPDX-License-Identifier: BSL-1.0
// Peer test: the official MCP TypeScript SDK client (1.32) reaches three instances of
// everything-server through nginx, round robin with no stickiness, configured as
// docs/scale-out.md shows; the instances share their sessions through a real
// redis-server (docs/scale-out.md).
//
//     node test/peer/cluster_client.mjs build/examples/everything-server
//
// Checks: one session served by every instance (50 tool calls), 10 sampling exchanges
// whose answers reach whichever instance, a stream the server closes resumed through the
// balancer, a resource change raised on another instance reaching the session, the session's owner killed with SIGKILL (the session goes on elsewhere, a
// call that was running there ends with an error, never silence), the owner stopped past
// its lease (calls made meanwhile all answered, none failed), DELETE, and that no
// key is left in Redis without an expiry. Exit 77 (skipped) without the SDK, nginx or
// redis-server, unless DROID_REQUIRE_PEERS=1.

import { answerExchanges, check, exchangeCapabilities, exitWithSummary, loadSdk, show, sleep, startWatchdog, step,
  textOf, within } from './harness.mjs';
import { Cluster, clusterPrerequisites } from './cluster_harness.mjs';

const serverPath = process.argv[2];
if (!serverPath || process.argv.length > 3) {
  console.log('not ok - arguments: usage: node cluster_client.mjs <path to everything-server>');
  process.exit(1);
}
clusterPrerequisites();

const [{ Client }, { StreamableHTTPClientTransport }, { CreateMessageRequestSchema, ListRootsRequestSchema, ElicitRequestSchema,
  ResourceUpdatedNotificationSchema }] =
  await loadSdk((specifier) => import(specifier), ['@modelcontextprotocol/sdk/client/index.js',
    '@modelcontextprotocol/sdk/client/streamableHttp.js', '@modelcontextprotocol/sdk/types.js']);

const cluster = new Cluster(serverPath, 3);
const instances = cluster.instances;
const redisCall = (...args) => cluster.redisCall(...args);
startWatchdog(() => cluster.stop(), 100);
const finish = () => {
  cluster.stop();
  exitWithSummary();
};

if (!await step('redis-server, three instances sharing it, and nginx in front (docs/scale-out.md)', async () => {
  await cluster.start();
})) finish();

const url = cluster.url;
const client = new Client({ name: 'cluster-peer', version: '1.0.0' }, { capabilities: exchangeCapabilities });
const exchange = answerExchanges(client, { CreateMessageRequestSchema, ListRootsRequestSchema, ElicitRequestSchema });
const transport = new StreamableHTTPClientTransport(url);
// A record names its owner as a member: the instance's name and its incarnation ("i2#9f...").
const ownerOf = (sid) => redisCall('HGET', `droid:s:${sid}`, 'owner').split('#')[0];

if (!await step('the SDK client connects through the balancer; the session is recorded in Redis', async () => {
  await client.connect(transport);
  check(typeof transport.sessionId === 'string', `session ${show(transport.sessionId)}`);
  check(/^i[123]$/.test(ownerOf(transport.sessionId)), `record owner ${show(ownerOf(transport.sessionId))}`);
  const ttl = Number(redisCall('PTTL', `droid:s:${transport.sessionId}`));
  check(ttl > 0, `the record's time to live is ${ttl} ms`);
})) finish();

await step('50 tool calls, round robin over three instances, all answered once and in order', async () => {
  for (let i = 0; i < 50; ++i) {
    const r = await client.callTool({ name: 'echo', arguments: { text: `call ${i}` } });
    check(textOf(r) === `call ${i}`, `call ${i} answered ${show(r)}`);
  }
});

await step('10 sampling exchanges: the question comes from the owner, the answer reaches it from any instance', async () => {
  exchange.answerSampling = (request) => ({ role: 'assistant', model: 'peer-model', content: { type: 'text', text: `summary ${exchange.sampled.length}` } });
  for (let i = 0; i < 10; ++i) {
    const r = await client.callTool({ name: 'summarize', arguments: { text: `text ${i}` } });
    check(textOf(r) === `summary from peer-model: summary ${i + 1}`, `exchange ${i} answered ${show(r)}`);
  }
  check(exchange.sampled.length === 10, `${exchange.sampled.length} questions asked`);
});

await step('a stream the server closes is resumed through the balancer (Last-Event-ID, any instance)', async () => {
  for (let i = 0; i < 3; ++i) {
    const r = await client.callTool({ name: 'reconnect', arguments: {} });
    check(textOf(r) === 'answered after the stream was resumed', `reconnect answered ${show(r)}`);
  }
});

await step('a change raised on another instance reaches the session (resources/updated on its GET stream)', async () => {
  const updates = [];
  let updated;
  const arrived = new Promise((resolve) => { updated = resolve; });
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updates.push(n.params.uri);
    updated();
  });
  await client.subscribeResource({ uri: 'test://watched-resource' });
  // A second client, whose session another instance owns, changes the resource there.
  const owner = ownerOf(transport.sessionId);
  let other;
  let otherTransport;
  for (let attempt = 0; attempt < 6; ++attempt) {
    other = new Client({ name: 'cluster-peer-2', version: '1.0.0' });
    otherTransport = new StreamableHTTPClientTransport(url);
    await other.connect(otherTransport);
    if (ownerOf(otherTransport.sessionId) !== owner) break;
    await otherTransport.terminateSession();
    await other.close();
  }
  const otherOwner = ownerOf(otherTransport.sessionId);
  check(otherOwner !== owner, `both sessions are owned by ${owner}`);
  const r = await other.callTool({ name: 'update_resource', arguments: { uri: 'test://watched-resource' } });
  check(textOf(r) === 'told the subscribers of test://watched-resource', `update_resource answered ${show(r)}`);
  check(await within(arrived, 10_000), `no notifications/resources/updated arrived (raised on ${otherOwner}, session on ${owner})`);
  check(updates[0] === 'test://watched-resource', `updated ${show(updates)}`);
  await otherTransport.terminateSession();
  await other.close();
});

await step('the owner is killed (SIGKILL): a call it was running ends with an error, and the session goes on elsewhere', async () => {
  const owner = ownerOf(transport.sessionId);
  const victim = instances.find((i) => i.name === owner);
  check(victim !== undefined, `owner ${show(owner)}`);
  const running = client.callTool({ name: 'sleep', arguments: { seconds: 30 } }).then(
    (r) => ({ result: r }), (error) => ({ error }));
  // The call is running once the owner has it; the sleep has 30 s, the kill comes first.
  await sleep(300);
  victim.child.kill('SIGKILL');
  check(await victim.waitForExit(5000), 'the owner did not die');
  const outcome = await running;
  const said = outcome.error ? String(outcome.error.message) : textOf(outcome.result);
  check(outcome.error !== undefined || outcome.result?.isError === true, `the running call ended with ${show(outcome)}`);
  check(/instance running this request stopped/.test(said), `the error says why: ${show(said)}`);
  // The next calls are served: the session is taken over where they land.
  for (let i = 0; i < 6; ++i) {
    const r = await client.callTool({ name: 'echo', arguments: { text: `after ${i}` } });
    check(textOf(r) === `after ${i}`, `call after the kill answered ${show(r)}`);
  }
  const next = ownerOf(transport.sessionId);
  check(next !== owner && /^i[123]$/.test(next), `the session's owner is now ${show(next)}`);
  exchange.answerSampling = () => ({ role: 'assistant', model: 'peer-model', content: { type: 'text', text: 'still here' } });
  const r = await client.callTool({ name: 'summarize', arguments: { text: 'after the takeover' } });
  check(textOf(r) === 'summary from peer-model: still here', `an exchange after the takeover answered ${show(r)}`);
});

await step('the owner is stopped past its lease (SIGSTOP): calls made meanwhile are all answered, none fails', async () => {
  const owner = ownerOf(transport.sessionId);
  const victim = instances.find((i) => i.name === owner && i.exit === null);
  check(victim !== undefined, `owner ${show(owner)}`);
  process.kill(victim.child.pid, 'SIGSTOP');
  let stopped = true;
  try {
    // Some reach the stopped instance through nginx and wait in its socket; the others
    // are served where they land once its lease is gone (3 s).
    const calls = Array.from({ length: 6 }, (_, i) => client.callTool({ name: 'echo', arguments: { text: `stopped ${i}` } })
      .then((r) => textOf(r), (error) => `error: ${error.message}`));
    await sleep(4_500);
    process.kill(victim.child.pid, 'SIGCONT');
    stopped = false;
    const texts = await Promise.all(calls);
    check(texts.every((t, i) => t === `stopped ${i}`), `the calls made while the owner was stopped: ${show(texts)}`);
    const next = ownerOf(transport.sessionId);
    check(next !== owner, `the session still belongs to the stopped owner ${show(owner)}`);
    const r = await client.callTool({ name: 'echo', arguments: { text: 'after the wake' } });
    check(textOf(r) === 'after the wake', `a call after the old owner woke: ${show(r)}`);
    check(ownerOf(transport.sessionId) === next, 'the woken owner took the session back');
  } finally {
    if (stopped) process.kill(victim.child.pid, 'SIGCONT');
  }
});

await step('DELETE ends the session and removes its keys; what Redis keeps of others expires', async () => {
  const sid = transport.sessionId;
  await transport.terminateSession();
  await client.close();
  check(redisCall('EXISTS', `droid:s:${sid}`) === '0', 'the record is gone');
  // Its streams too, at once (they would otherwise linger for the idle timeout).
  const left = redisCall('--scan', '--pattern', `droid:*${sid}*`).split('\n').filter((k) => k.length > 0);
  check(left.length === 0, `keys of the deleted session: ${show(left)}`);
  const keys = redisCall('--scan', '--pattern', 'droid:*').split('\n').filter((k) => k.length > 0);
  const lasting = keys.filter((k) => Number(redisCall('PTTL', k)) < 0);
  check(lasting.length === 0, `keys without a time to live: ${show(lasting)}`);
});

finish();
