// SPDX-License-Identifier: BSL-1.0
// The cluster's fault suite (docs/scale-out.md, "What always holds"): real instances of
// everything-server sharing one real redis-server, faults caused for real (kill -9, a
// restart under the same instance id), and what each client sees checked against the
// invariants. Requests go straight to the instance each step names, so that the fault
// meets the path it is meant for; loopback only, every loop bounded in count and time.
//
//     node test/peer/cluster_faults.mjs build/examples/everything-server
//
// Cases:
// - no message crosses sessions or incarnations: a slow call of session S1 forwarded
//   through instance B to its owner A; B is killed and restarted under the same name
//   between two of S1's events; a call of a new session S2 (owned by A too) through the
//   new B, whose first forward has the same tag as the dead B's, gets its own progress
//   and its own answer, never S1's, and is not cut short. Repeated.
// - a stream exists from its first byte: a call that has sent only its priming event when
//   its owner is killed (kill -9) is resumed with Last-Event-ID through each other
//   instance, and each resume ends it with the same -32603 naming what happened.
// - at most one owner: an owner stopped (SIGSTOP) past its lease; the call through
//   another instance is served there once the lease is gone, and the old owner, woken,
//   neither serves the request it was sent while stopped from its stale copy nor writes
//   the record back (the lease and the epoch fence it).
// - nothing refused runs later: a request forwarded to a stopped owner runs once, on the
//   instance that takes the session over, never again when the owner wakes (its runs are
//   counted on Redis's common channel, where update_resource announces each).
// - a task whose owner is stopped past its lease: a cancel through another instance,
//   then the owner woken past the moment its tool would have finished: every instance
//   tells the same end, and it is "cancelled" or "failed", never "completed".
// - a restart under the same instance id (kill -9, then started again at once): the old
//   life's session is served through the new life and through another instance, its
//   running task answers "failed" and its finished one "completed" through both.
// - a dropped subscription (CLIENT KILL TYPE pubsub) moves no session: publishes that
//   reached nobody are made again while the owner's lease lasts.
// - nothing relayed is lost silently: Redis stalled for 2 s (DEBUG SLEEP) under a relayed
//   call; the client sees every progress event once and in order, and the answer,
//   resuming with Last-Event-ID if its stream was cut.
// - recovery is not sampled: Redis emptied (FLUSHALL), every session's record is written
//   again within a heartbeat of the lease's renewal finding the lease gone.
//
// Exit 77 (skipped) without nginx or redis-server, unless DROID_REQUIRE_PEERS=1.

import { spawn } from 'node:child_process';

import { check, exitWithSummary, show, sseEvents, sseMessages, startWatchdog, step } from './harness.mjs';
import { Cluster, clusterPrerequisites } from './cluster_harness.mjs';

const serverPath = process.argv[2];
if (!serverPath || process.argv.length > 3) {
  console.log('not ok - arguments: usage: node cluster_faults.mjs <path to everything-server>');
  process.exit(1);
}
clusterPrerequisites();

const cluster = new Cluster(serverPath, 3);
startWatchdog(() => cluster.stop(), 110);
const finish = () => {
  cluster.stop();
  exitWithSummary();
};

const headers = (sid) => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-11-25',
  ...(sid ? { 'mcp-session-id': sid } : {}),
});

/// Opens a session on `instance` and returns its id.
async function openSession(instance) {
  const init = await fetch(instance.url, {
    method: 'POST',
    headers: headers(),
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'faults', version: '1' } } }),
  });
  check(init.status === 200, `initialize on ${instance.name}: ${init.status}`);
  const sid = init.headers.get('mcp-session-id');
  await init.text();
  const done = await fetch(instance.url, {
    method: 'POST',
    headers: headers(sid),
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  check(done.status === 202, `notifications/initialized: ${done.status}`);
  return sid;
}

/// A tools/call of `count` (progress after each step) with progress token `token`,
/// posted to `instance`: resolves to the response, whose body is read by the caller.
const countCall = (instance, sid, id, token, steps, intervalMs) => fetch(instance.url, {
  method: 'POST',
  headers: headers(sid),
  body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call',
    params: { name: 'count', arguments: { steps, interval_ms: intervalMs }, _meta: { progressToken: token } } }),
});

/// Reads `response`'s event stream until `until(text so far)` holds, the stream ends, or
/// `guardMs` pass (a guard against a hang, never a wait: what was read is returned, and
/// the step's checks say what was missing).
async function readUntil(response, until, guardMs = 20_000) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const deadline = Date.now() + guardMs;
  for (;;) {
    let timer;
    const guard = new Promise((resolve) => { timer = setTimeout(() => resolve({ timedOut: true }), deadline - Date.now()); });
    const next = await Promise.race([reader.read(), guard]);
    clearTimeout(timer);
    if (next.timedOut || next.done) break;
    text += decoder.decode(next.value, { stream: true });
    if (until(text)) break;
  }
  return { text, reader };
}

if (!await step('redis-server and three instances sharing it', async () => {
  await cluster.start();
})) finish();

const [a, b] = cluster.instances;

await step('no message crosses sessions or incarnations: B killed and restarted under its name, 2 rounds', async () => {
  for (let round = 0; round < 2; ++round) {
    // S1 lives on A; its slow call goes through B, which relays A's events to its client.
    const s1 = await openSession(a);
    const call1 = await countCall(b, s1, 1, `s1-${round}`, 10, 2000);
    check(call1.status === 200, `S1's call through B: ${call1.status}`);
    const first = await readUntil(call1, (t) => t.includes('notifications/progress'));
    check(first.text.includes(`s1-${round}`), `S1's first progress did not come: ${show(first.text)}`);
    // B dies with the forward open, between two of S1's events; A still runs S1's call.
    // B comes back under its name before S1's next event.
    b.kill();
    check(await b.waitForExit(5000), 'B did not die');
    first.reader.cancel().catch(() => {});
    await b.start();
    // S2 lives on A too (so the sender of S1's events is S2's owner as well); its call
    // through the new B has B's first tag again, and lasts past S1's next event.
    const s2 = await openSession(a);
    const call2 = await countCall(b, s2, 1, `s2-${round}`, 30, 100);
    check(call2.status === 200, `S2's call through the new B: ${call2.status}`);
    const { text } = await readUntil(call2, () => false);
    const messages = sseMessages(text);
    const progress = messages.filter((m) => m.method === 'notifications/progress');
    const foreign = progress.filter((m) => m.params.progressToken !== `s2-${round}`);
    check(foreign.length === 0, `S2's stream carried another session's progress: ${show(foreign)}`);
    check(progress.length === 30, `S2 got ${progress.length} progress notifications, want 30`);
    const answers = messages.filter((m) => m.id !== undefined);
    check(answers.length === 1 && answers[0].result?.content?.[0]?.text === 'counted to 30',
      `S2's answer: ${show(answers)}`);
  }
});

await step('a stream exists from its first byte: a killed owner\'s silent call resumes through every instance with -32603', async () => {
  // The call has sent nothing but its priming event when its owner dies (the usual case
  // of a long call).
  const c = cluster.instances[2];
  const sid = await openSession(c);
  const call = await fetch(c.url, {
    method: 'POST',
    headers: headers(sid),
    body: JSON.stringify({ jsonrpc: '2.0', id: 42, method: 'tools/call', params: { name: 'sleep', arguments: { seconds: 60 } } }),
  });
  check(call.status === 200, `the call: ${call.status}`);
  const primed = await readUntil(call, (t) => /id: \S+\n/.test(t));
  const eventId = /id: (\S+)\n/.exec(primed.text)?.[1];
  check(eventId !== undefined, `no priming event: ${show(primed.text)}`);
  c.kill();
  check(await c.waitForExit(5000), 'the owner did not die');
  primed.reader.cancel().catch(() => {});
  for (const through of [a, b]) {
    const resumed = await fetch(through.url, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25', 'last-event-id': eventId },
    });
    // The body is read only when the status is wrong: a right one is a stream that stays open.
    if (resumed.status !== 200) check(false, `the resume through ${through.name}: ${resumed.status} ${await resumed.text()}`);
    const { text, reader } = await readUntil(resumed, (t) => t.includes('-32603'));
    reader.cancel().catch(() => {});
    const answers = sseMessages(text).filter((m) => m.id === 42);
    check(answers.length === 1 && answers[0].error?.code === -32603 && /stopped/.test(answers[0].error.message),
      `through ${through.name}: ${show(text)}`);
  }
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const ownerOf = (sid) => cluster.redisCall('HGET', `droid:s:${sid}`, 'owner');
/// Posts one JSON-RPC request of session `sid` to `instance`; resolves to its status and
/// the message answering `id` (from a JSON body or an event stream), read whole.
async function ask(instance, sid, id, method, params) {
  const response = await fetch(instance.url, {
    method: 'POST', headers: headers(sid), body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
  });
  const { text, reader } = await readUntil(response, (t) => t.includes(`"id":${id}`));
  reader.cancel().catch(() => {});
  let answer;
  try {
    answer = JSON.parse(text);
  } catch {
    answer = sseMessages(text).find((m) => m.id === id);
  }
  return { status: response.status, answer, text };
}
const echo = (instance, sid, id, text) => ask(instance, sid, id, 'tools/call', { name: 'echo', arguments: { text } });

await step('an owner stopped past its lease: the session is served by the next owner, and the old one wakes fenced', async () => {
  // B owns the session and is stopped (SIGSTOP): its inbox subscription stays open, so
  // what A forwards there counts as delivered, and nobody takes it up. Once B's lease is
  // gone, A takes the session over and serves the call itself. A request sent straight to
  // B meanwhile waits in B's socket; when B wakes, it must not serve it from its stale
  // copy, nor write the record back: it is served by A, or refused unrun.
  const sid = await openSession(b);
  check(ownerOf(sid).startsWith('i2#'), `the record names B: ${ownerOf(sid)}`);
  process.kill(b.child.pid, 'SIGSTOP');
  let stopped = true;
  try {
    const direct = ask(b, sid, 8, 'logging/setLevel', { level: 'debug' });
    const started = Date.now();
    const served = await echo(a, sid, 7, 'served');
    check(served.status === 200 && served.answer?.result?.content?.[0]?.text === 'served',
      `the call through A: ${served.status} ${show(served.text)}`);
    check(Date.now() - started < 10_000, `the call through A took ${Date.now() - started} ms`);
    const owner = ownerOf(sid);
    check(owner.startsWith('i1#'), `the record names A after the takeover: ${owner}`);
    process.kill(b.child.pid, 'SIGCONT');
    stopped = false;
    const late = await direct;
    const ran = late.status === 200 && late.answer?.result !== undefined;
    const refused = late.status === 503 || late.answer?.error?.code === -32603;
    check(ran || refused, `the request B held while stopped: ${late.status} ${show(late.text)}`);
    // Served, it was served by A (the record's level is A's to write); refused, it did not run.
    if (ran) check(cluster.redisCall('HGET', `droid:s:${sid}`, 'level') === 'debug', 'the level B was asked to set is not the owner\'s');
    const again = await echo(b, sid, 9, 'again');
    check(again.status === 200 && again.answer?.result?.content?.[0]?.text === 'again',
      `a call through B after it woke: ${again.status} ${show(again.text)}`);
    check(ownerOf(sid) === owner, `B wrote itself back as the owner: ${ownerOf(sid)}`);
  } finally {
    if (stopped) process.kill(b.child.pid, 'SIGCONT');
  }
});

await step('a request forwarded to a stopped owner runs once: where the session is taken over, never again when the owner wakes', async () => {
  // update_resource announces its URI on Redis's common channel each time it runs, so a
  // watcher there counts the runs. The call through A reaches B's inbox while B is
  // stopped; A serves it once B's lease is gone; B, woken, finds it queued and must refuse
  // it (nothing refused runs later).
  const sid = await openSession(b);
  const uri = `faults://once/${Date.now()}`;
  const watcher = spawn(cluster.paths.redisCli, ['-p', String(cluster.redisPort), '--raw', 'SUBSCRIBE', 'droid:all']);
  let heard = '';
  watcher.stdout.on('data', (d) => { heard += d; });
  const runs = () => heard.split(uri).length - 1;
  for (let i = 0; i < 100 && !heard.includes('subscribe'); ++i) await sleep(20);
  process.kill(b.child.pid, 'SIGSTOP');
  let stopped = true;
  try {
    const r = await ask(a, sid, 21, 'tools/call', { name: 'update_resource', arguments: { uri } });
    check(r.status === 200 && r.answer?.result !== undefined, `the call through A: ${r.status} ${show(r.text)}`);
    process.kill(b.child.pid, 'SIGCONT');
    stopped = false;
    await sleep(2_000);  // B wakes, renews, recovers, and meets the request in its inbox
    check(runs() === 1, `update_resource ran ${runs()} times`);
  } finally {
    if (stopped) process.kill(b.child.pid, 'SIGCONT');
    watcher.kill();
  }
});

/// A 2026-07-28 request (tasks declared) to `instance`; resolves to its one answer.
async function modern(instance, id, method, name, params) {
  const response = await fetch(instance.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28', 'mcp-method': method, 'mcp-name': name },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } } } }),
  });
  const { text, reader } = await readUntil(response, (t) => t.includes(`"id":${id}`));
  reader.cancel().catch(() => {});
  try {
    return { status: response.status, answer: JSON.parse(text), text };
  } catch {
    return { status: response.status, answer: sseMessages(text).find((m) => m.id === id), text };
  }
}

await step('a task whose owner is stopped past its lease: an acknowledged cancel holds, and every instance tells the same end', async () => {
  const created = await modern(b, 1, 'tools/call', 'slow_compute', { name: 'slow_compute', arguments: { seconds: 4, label: 'x' } });
  const taskId = created.answer?.result?.taskId;
  check(created.answer?.result?.resultType === 'task' && typeof taskId === 'string', `the task: ${show(created.text)}`);
  process.kill(b.child.pid, 'SIGSTOP');
  let stopped = true;
  try {
    // Through A while B is stopped: answered once B's lease is gone (A adopts the task,
    // and reports it failed: its instance stopped).
    const cancel = await modern(a, 2, 'tasks/cancel', taskId, { taskId });
    // 2026-07-28 acknowledges a cancel with an empty result whatever the task's state:
    // what it promises is that the task does not complete afterwards.
    check(cancel.answer?.result?.resultType === 'complete', `the cancel: ${show(cancel.text)}`);
    process.kill(b.child.pid, 'SIGCONT');
    stopped = false;
    await sleep(5_000);  // past the moment B's tool would have finished the task
    const ends = [];
    for (const through of [a, b]) {
      const got = await modern(through, 3, 'tasks/get', taskId, { taskId });
      ends.push(got.answer?.result?.status ?? `error ${show(got.text)}`);
    }
    check(ends[0] === ends[1], `the instances disagree about the task: ${show(ends)}`);
    check(ends[0] === 'cancelled' || ends[0] === 'failed', `the task ended ${ends[0]} after an acknowledged cancel`);
    check(cluster.redisCall('HGET', `droid:t:${taskId}`, 'owner').startsWith('i1#'), 'the task record names A');
  } finally {
    if (stopped) process.kill(b.child.pid, 'SIGCONT');
  }
});

await step('a restart under the same instance id: the old life\'s sessions are served and its tasks answered, through every instance', async () => {
  const sid = await openSession(b);
  const done = await modern(b, 11, 'tools/call', 'slow_compute', { name: 'slow_compute', arguments: { seconds: 0, label: 'done' } });
  const running = await modern(b, 12, 'tools/call', 'slow_compute', { name: 'slow_compute', arguments: { seconds: 60, label: 'long' } });
  const finished = done.answer?.result?.taskId ?? null;
  const unfinished = running.answer?.result?.taskId;
  check(typeof unfinished === 'string', `the long task: ${show(running.text)}`);
  b.kill();
  check(await b.waitForExit(5000), 'B did not die');
  await b.start();
  for (const [n, through] of [b, a].entries()) {
    const r = await echo(through, sid, 400 + n, `after restart ${n}`);
    check(r.status === 200 && r.answer?.result?.content?.[0]?.text === `after restart ${n}`,
      `the old session through ${through.name}: ${r.status} ${show(r.text)}`);
  }
  for (const through of [b, a]) {
    const got = await modern(through, 13, 'tasks/get', unfinished, { taskId: unfinished });
    check(got.answer?.result?.status === 'failed', `the task that was running, through ${through.name}: ${show(got.text)}`);
    if (finished) {
      // (a task of 0 s may have been answered at once rather than become a task)
      const kept = await modern(through, 14, 'tasks/get', finished, { taskId: finished });
      check(kept.answer?.result?.status === 'completed', `the finished task through ${through.name}: ${show(kept.text)}`);
    }
  }
});

await step('a dropped subscription (CLIENT KILL TYPE pubsub) moves nothing: the owner keeps its session, every call is answered; 5 rounds', async () => {
  const sid = await openSession(a);
  const owner = ownerOf(sid);
  // Every call is answered: with its result, or, when B forwarded it before noticing
  // that its own subscription was gone and the owner's first batch was published to
  // nobody, with -32603 saying the answer was lost (pub/sub delivers at most once; the
  // stream had no event id yet to resume from). Never an empty stream, never silence.
  let lost = 0;
  for (let round = 0; round < 5; ++round) {
    cluster.redisCall('CLIENT', 'KILL', 'TYPE', 'pubsub');
    const r = await echo(b, sid, 100 + round, `round ${round}`);
    const answered = r.answer?.result?.content?.[0]?.text === `round ${round}`;
    const toldLost = r.answer?.error?.code === -32603 && /the answer was lost/.test(r.answer.error.message);
    if (toldLost) ++lost;
    check(r.status === 200 && (answered || toldLost), `round ${round} through B: ${r.status} ${show(r.text)}`);
    check(ownerOf(sid) === owner, `round ${round}: the session moved from ${owner} to ${ownerOf(sid)}`);
  }
  check(lost < 5, 'no round got its answer');
  if (lost > 0) console.log(`# ${lost} of 5 rounds were told their answer was lost (their forward raced the dropped subscription)`);
});

await step('Redis stalls for 2 s (DEBUG SLEEP 2) under a relayed call: every event reaches the client once, in order, with the answer', async () => {
  // The call runs on A and reaches its client through B; Redis, which carries every
  // relayed batch, stops for 2 s in the middle. Either the relay carries on whole, or the
  // client's stream is ended where it stands and the client resumes it: never a hole, a
  // duplicate, or a hang.
  const sid = await openSession(a);
  const call = await countCall(b, sid, 300, 'stall', 20, 150);
  check(call.status === 200, `the call through B: ${call.status}`);
  // Redis is stalled from inside the read, once the first progress is there.
  let stalled = false;
  const deadline = Date.now() + 20_000;
  const read = await readUntil(call, (t) => {
    if (!stalled && t.includes('notifications/progress')) {
      stalled = true;
      check(cluster.redisCall('DEBUG', 'SLEEP', '2') === 'OK', 'DEBUG SLEEP 2');
    }
    return t.includes('"id":300');
  });
  read.reader.cancel().catch(() => {});
  const { text } = read;
  check(Date.now() < deadline, 'the stream neither ended nor answered within 20 s: it hung');
  let events = sseEvents(text);
  if (!text.includes('"id":300')) {
    // Cut where it stood: resumed from the last event the client saw.
    const last = events.filter((e) => e.id).at(-1)?.id;
    check(last !== undefined, `no event id to resume from: ${show(text)}`);
    const resumed = await fetch(a.url, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25', 'last-event-id': last },
    });
    check(resumed.status === 200, `the resume: ${resumed.status}`);
    const more = await readUntil(resumed, (t) => t.includes('"id":300'));
    more.reader.cancel().catch(() => {});
    events = events.concat(sseEvents(more.text));
    console.log('# the stream was cut during the stall and resumed');
  }
  const messages = events.map((e) => { try { return JSON.parse(e.data); } catch { return {}; } });
  const steps = messages.filter((m) => m.method === 'notifications/progress').map((m) => m.params.progress);
  check(JSON.stringify(steps) === JSON.stringify(Array.from({ length: 20 }, (_, k) => k + 1)),
    `the progress the client saw: ${show(steps)}`);
  const answers = messages.filter((m) => m.id === 300);
  check(answers.length === 1 && answers[0].result?.content?.[0]?.text === 'counted to 20', `the answers: ${show(answers)}`);
});

await step('Redis emptied (FLUSHALL, as after a restart without persistence): every session is back within two heartbeats', async () => {
  // (The third instance died in an earlier step: each session is asked for through the
  // instance that does not own it.)
  const sessions = [[await openSession(a), b], [await openSession(a), b], [await openSession(b), a], [await openSession(b), a]];
  check(cluster.redisCall('FLUSHALL') === 'OK', 'FLUSHALL');
  await sleep(2_500);  // two heartbeats of 1 s, and the margin of one
  for (const [n, [sid, through]] of sessions.entries()) {
    check(ownerOf(sid) !== '', `session ${n}'s record was not written again`);
    const r = await echo(through, sid, 200 + n, `back ${n}`);
    check(r.status === 200 && r.answer?.result?.content?.[0]?.text === `back ${n}`,
      `session ${n} through ${through.name}: ${r.status} ${show(r.text)}`);
  }
});

finish();
