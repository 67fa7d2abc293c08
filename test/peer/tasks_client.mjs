// SPDX-License-Identifier: BSL-1.0
// Peer test: the official MCP TypeScript SDK client drives everything-server's task tools
// (2025-11-25 experimental tasks, SEP-1686) through its experimental tasks API
// (client.experimental.tasks: callToolStream, getTask, getTaskResult, listTasks,
// cancelTask), over stdio or over Streamable HTTP.
//
//     node test/peer/tasks_client.mjs build/examples/everything-server stdio
//     node test/peer/tasks_client.mjs build/examples/everything-server http
//
// Over HTTP the server is started with `--http 127.0.0.1:0` and a second client (a second
// session) checks that the first session's tasks are invisible to it.
//
// Prints one `ok - <step>` or `not ok - <step>: <why>` line per step and exits 1 if any
// step failed. Exit 77 (Meson's "skipped") when the SDK is not installed, unless
// DROID_REQUIRE_PEERS=1, which turns that into a failure so CI can never skip silently.
// Install the SDK with `npm ci --prefix test/peer`.
//
// Set DROID_PEER_TRACE=1 to print every JSON-RPC message (and, over HTTP, every HTTP
// exchange) to stderr.

import {
  check, Check, checkPinnedSdk, describeExchange, exitWithSummary, HttpServer, loadSdk, sameJson, show, sseMessages,
  startWatchdog, step, tapHttp, tapWire, textOf, watchStderr,
} from './harness.mjs';

const usage = 'usage: node tasks_client.mjs <path to everything-server> stdio|http';
const serverPath = process.argv[2];
const mode = process.argv[3];
if (!serverPath || process.argv.length !== 4 || !['stdio', 'http'].includes(mode)) {
  console.log(`not ok - arguments: ${usage}`);
  process.exit(1);
}

// The SDK is imported dynamically (see loadSdk in harness.mjs), never with a static import.
const [{ Client }, { StdioClientTransport }, { StreamableHTTPClientTransport }, types] = await loadSdk(
  (specifier) => import(specifier),
  ['@modelcontextprotocol/sdk/client/index.js', '@modelcontextprotocol/sdk/client/stdio.js',
    '@modelcontextprotocol/sdk/client/streamableHttp.js', '@modelcontextprotocol/sdk/types.js']);
const { McpError, ErrorCode, LATEST_PROTOCOL_VERSION, CallToolResultSchema, ElicitRequestSchema, RELATED_TASK_META_KEY } = types;

// The revision tasks belong to: the SDK asks for it (its latest), the server must settle on it.
const TASKS_REVISION = '2025-11-25';
// The ttl the client asks for; the server may grant another.
const TTL = 60_000;
// No single step may take longer than this (the watchdog ends the whole run at 60 s).
const STEP_MS = 15_000;

// ---------------------------------------------------------------------------------------
// The server and the first session

const server = mode === 'http' ? new HttpServer(serverPath, []) : undefined;
let transport;

// Never hang: whatever goes wrong, give up after 60 s and kill the server.
startWatchdog(() => {
  server?.kill();
  if (transport?.pid) try { process.kill(transport.pid, 'SIGKILL'); } catch { /* already gone */ }
});

function finish() {
  server?.kill();
  exitWithSummary();
}

await checkPinnedSdk(LATEST_PROTOCOL_VERSION, mode === 'http' ? server.commandLine : `${serverPath} (stdio)`);

// The server's stderr is forwarded to ours unchanged (HttpServer does it over HTTP).
let url;
if (server) {
  const started = await step('the server starts and prints its URL', async () => {
    url = await server.start();
  });
  if (!started) finish();
}

const http = mode === 'http' ? tapHttp() : undefined;
if (mode === 'http') {
  transport = new StreamableHTTPClientTransport(new URL(url), { fetch: http.fetch });
} else {
  transport = new StdioClientTransport({ command: serverPath, args: [], stderr: 'pipe' });
  watchStderr(transport.stderr);
}

// Form-mode elicitation (the 2025-06-18 spelling, `{}`, which 2025-11-25 reads as form
// mode): confirm_delete asks for it while its task is input_required. `tasks: {}`: the
// client knows tasks, and claims none of the optional parts (it keeps no tasks of its own,
// so it neither lists, cancels nor runs sampling/elicitation as tasks).
const clientCapabilities = { elicitation: {}, tasks: {} };
const clientInfo = { name: `droid-peer-ts-tasks-${mode}`, version: '1.0.0' };
const client = new Client(clientInfo, { capabilities: clientCapabilities });

// Everything the SDK finds wrong with a session arrives here; any of it fails the run.
const protocolErrors = [];
client.onerror = (error) => {
  protocolErrors.push(error?.message ?? String(error));
  console.error(`# client onerror (checked at the end): ${error?.message ?? error}`);
};

// The elicitation handler: every request it sees (with the handler's `extra`) is kept;
// `answer(request)` answers, unset it throws.
const elicitation = { seen: [], answer: undefined };
client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
  elicitation.seen.push({ request, extra });
  if (!elicitation.answer) throw new Error('this step did not expect elicitation/create');
  return elicitation.answer(request);
});

// Every JSON-RPC message both ways, tapped before connect() so initialize is seen too.
const wire = tapWire(transport);

// ---------------------------------------------------------------------------------------
// Helpers

/// `promise`, or a Check failure naming `what` after `ms`.
async function within(promise, what, ms = STEP_MS) {
  let timer;
  try {
    return await Promise.race([
      promise,
      new Promise((_, reject) => { timer = setTimeout(() => reject(new Check(`${what} did not finish within ${ms} ms`)), ms); }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/// The rejection of `promise`; a Check failure if it resolves.
async function rejection(promise, what) {
  let result;
  try {
    result = await within(promise, what);
  } catch (error) {
    if (error instanceof Check) throw error;
    return error;
  }
  throw new Check(`${what} resolved instead of rejecting: ${show(result)}`);
}

/// `error` is an McpError with `code`.
function checkCode(error, code, what) {
  check(error instanceof McpError, `${what} rejected with ${error?.name}: ${error?.message}`);
  check(error.code === code, `${what} rejected with code ${error.code} (${error.message}), want ${code}`);
}

const isoTime = (s) => typeof s === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/.test(s) && !Number.isNaN(Date.parse(s));

/// `task` is a Task with `want`'s taskId and status. What else a Task must hold (times,
/// ttl, pollInterval) is checked once, for every Task on the wire, by the step "every
/// Task the server sent is well-formed", so one malformed field does not hide the rest.
function checkTask(task, what, want = {}) {
  check(task && typeof task === 'object', `${what}: no task: ${show(task)}`);
  check(typeof task.taskId === 'string' && task.taskId.length > 0, `${what}: taskId is ${show(task.taskId)}`);
  if (want.taskId !== undefined) check(task.taskId === want.taskId, `${what}: taskId is ${show(task.taskId)}, want ${show(want.taskId)}`);
  if (want.status !== undefined)
    check(task.status === want.status, `${what}: status is ${show(task.status)}, want ${show(want.status)} (task ${show(task)})`);
}

/// What is wrong with the Task `task` as sent (2025-11-25 tasks: "Task Metadata"), as a
/// list of sentences.
function taskProblems(task) {
  const problems = [];
  if (!task || typeof task !== 'object') return [`not an object: ${show(task)}`];
  if (typeof task.taskId !== 'string' || task.taskId.length === 0) problems.push(`taskId is ${show(task.taskId)}`);
  if (!['working', 'input_required', 'completed', 'failed', 'cancelled'].includes(task.status)) problems.push(`status is ${show(task.status)}`);
  if (!isoTime(task.createdAt)) problems.push(`createdAt is ${show(task.createdAt)}, want an ISO 8601 time`);
  if (!isoTime(task.lastUpdatedAt)) problems.push(`lastUpdatedAt is ${show(task.lastUpdatedAt)}, want an ISO 8601 time`);
  else if (isoTime(task.createdAt) && Date.parse(task.lastUpdatedAt) < Date.parse(task.createdAt))
    problems.push(`lastUpdatedAt ${task.lastUpdatedAt} is before createdAt ${task.createdAt}`);
  if (!(task.ttl === null || (typeof task.ttl === 'number' && task.ttl > 0))) problems.push(`ttl is ${show(task.ttl)}, want a positive number or null`);
  if (task.pollInterval !== undefined && !(typeof task.pollInterval === 'number' && task.pollInterval > 0))
    problems.push(`pollInterval is ${show(task.pollInterval)}`);
  if (task.statusMessage !== undefined && typeof task.statusMessage !== 'string') problems.push(`statusMessage is ${show(task.statusMessage)}`);
  return problems;
}

/// Every Task on `w` in the order it came: `{ at, method, task, notification }`, from
/// CreateTaskResults (tools/call with task), tasks/get, tasks/cancel and tasks/list
/// results, and notifications/tasks/status (`notification` true).
function tasksOnWire(w) {
  const out = [];
  const requests = new Map(w.filter((e) => e.dir === 'out' && e.message.method !== undefined && e.message.id !== undefined)
    .map((e) => [e.message.id, e.message]));
  for (const [at, e] of w.entries()) {
    if (e.dir === 'in' && e.message.method === 'notifications/tasks/status') {
      const { _meta, ...task } = e.message.params ?? {};
      out.push({ at, method: 'notifications/tasks/status', task, notification: true });
      continue;
    }
    if (e.dir !== 'in' || e.message.method !== undefined || !e.message.result) continue;
    const request = requests.get(e.message.id);
    const result = e.message.result;
    if (request?.method === 'tools/call' && request.params?.task !== undefined && result.task) out.push({ at, method: 'tools/call (CreateTaskResult)', task: result.task });
    else if (request?.method === 'tasks/get' || request?.method === 'tasks/cancel') out.push({ at, method: request.method, task: result });
    else if (request?.method === 'tasks/list') for (const task of result.tasks ?? []) out.push({ at, method: 'tasks/list', task });
  }
  return out;
}

/// A stream message, for a failure message.
const describeMessage = (m) => {
  if (m.type === 'taskCreated' || m.type === 'taskStatus') return `${m.type}(${m.task?.status})`;
  if (m.type === 'result') return `result(${show(m.result)})`;
  return `error(${m.error?.code} ${m.error?.message})`;
};
const describeStream = (messages) => messages.map(describeMessage).join(', ');

/// Runs callToolStream(params, CallToolResultSchema, {task: {ttl}}) to its end; returns
/// every message it yielded. `stopAfterCreated`: leave the stream (and its polling) as
/// soon as the task is created.
async function streamTool(params, { stopAfterCreated = false } = {}) {
  const messages = [];
  const run = (async () => {
    const stream = client.experimental.tasks.callToolStream(params, CallToolResultSchema, { task: { ttl: TTL } });
    for await (const message of stream) {
      messages.push(message);
      if (stopAfterCreated && message.type === 'taskCreated') break;
    }
  })();
  try {
    await within(run, `callToolStream(${params.name})`);
  } catch (error) {
    if (error instanceof Check) throw new Check(`${error.message}; the stream had yielded: ${describeStream(messages) || 'nothing'}`);
    throw error;
  }
  return messages;
}

/// The stream's messages must be taskCreated (status working), then at least one
/// taskStatus of the same task, then one final message of type `last`. Returns
/// { created, statuses, final }.
function checkStreamShape(messages, last, what) {
  const shape = describeStream(messages);
  check(messages.length >= 3, `${what}: the stream yielded ${shape || 'nothing'}; want taskCreated, taskStatus..., ${last}`);
  check(messages[0].type === 'taskCreated', `${what}: the stream began ${describeMessage(messages[0])}, want taskCreated (stream: ${shape})`);
  const final = messages.at(-1);
  check(final.type === last, `${what}: the stream ended ${describeMessage(final)}, want ${last} (stream: ${shape})`);
  const statuses = messages.slice(1, -1);
  check(statuses.length >= 1 && statuses.every((m) => m.type === 'taskStatus'),
    `${what}: between taskCreated and the end the stream yielded ${describeStream(statuses) || 'nothing'}, want taskStatus messages`);
  const created = messages[0].task;
  checkTask(created, `${what}: the created task`, { status: 'working' });
  for (const m of statuses) checkTask(m.task, `${what}: taskStatus`, { taskId: created.taskId });
  return { created, statuses: statuses.map((m) => m.task), final };
}

/// Outgoing requests with `method` on `w` since `from`, matching `predicate`.
const sentRequests = (w, from, method, predicate = () => true) =>
  w.slice(from).filter((e) => e.dir === 'out' && e.message.method === method && e.message.id !== undefined && predicate(e.message));
/// The response on `w` to our request `id`, as a wire entry.
const responseEntry = (w, id) => w.find((e) => e.dir === 'in' && e.message.method === undefined && e.message.id === id);

/// The CreateTaskResult on the wire for the tools/call of `name` sent since `from`: checks
/// the request carried `task` and returns the response message.
function createTaskOnWire(from, name) {
  const calls = sentRequests(wire, from, 'tools/call', (m) => m.params?.name === name);
  check(calls.length === 1, `${calls.length} tools/call of ${name} went out, want 1`);
  check(sameJson(calls[0].message.params.task, { ttl: TTL }), `the tools/call carried task ${show(calls[0].message.params.task)}, want ${show({ ttl: TTL })}`);
  const response = responseEntry(wire, calls[0].message.id);
  check(response, `no response to the tools/call of ${name} on the wire`);
  return response.message;
}

/// The tasks/result responses on the wire, since `from`, for `taskId`.
function taskResultsOnWire(from, taskId) {
  return sentRequests(wire, from, 'tasks/result', (m) => m.params?.taskId === taskId)
    .map((request) => ({ request, response: responseEntry(wire, request.message.id) }));
}

/// The result's _meta must name the task it belongs to.
function checkRelatedTask(result, taskId, what) {
  const related = result?._meta?.[RELATED_TASK_META_KEY];
  check(sameJson(related, { taskId }), `${what}: _meta[${show(RELATED_TASK_META_KEY)}] is ${show(related)}, want ${show({ taskId })}`);
}

/// Every task of `c`'s session, following nextCursor.
async function allTasks(c) {
  const tasks = [];
  let cursor;
  let pages = 0;
  do {
    const page = await within(c.experimental.tasks.listTasks(cursor), 'tasks/list');
    check(Array.isArray(page.tasks), `tasks/list answered ${show(page)}`);
    tasks.push(...page.tasks);
    check(page.nextCursor === undefined || (typeof page.nextCursor === 'string' && page.nextCursor !== cursor),
      `tasks/list nextCursor is ${show(page.nextCursor)} after cursor ${show(cursor)}`);
    cursor = page.nextCursor;
    check(++pages <= 100, 'tasks/list gave more than 100 pages');
  } while (cursor);
  return { tasks, pages };
}

// The ids of every task this session created (tasks/list must list them all).
const created = [];
let computed; // the slow_compute (seconds 1) task, completed

// ---------------------------------------------------------------------------------------
// The steps

const connected = await step('initialize', async () => {
  await within(client.connect(transport), 'initialize');
  const server = client.getServerVersion();
  check(server?.name === 'everything-server', `serverInfo.name is ${show(server?.name)}, want "everything-server"`);
});
if (!connected) {
  await step('close', async () => { await client.close(); });
  finish();
}

await step(`initialize negotiated ${TASKS_REVISION}; the server declares tasks (list, cancel, requests.tools.call)`, async () => {
  const init = wire.find((w) => w.dir === 'in' && w.message.id !== undefined && w.message.result?.protocolVersion);
  const negotiated = init?.message.result.protocolVersion;
  check(LATEST_PROTOCOL_VERSION === TASKS_REVISION, `the SDK's latest revision is ${LATEST_PROTOCOL_VERSION}; this test is written for ${TASKS_REVISION}`);
  check(negotiated === TASKS_REVISION, `initialize negotiated ${show(negotiated)}, want ${TASKS_REVISION}`);
  const caps = client.getServerCapabilities();
  const tasks = caps?.tasks;
  check(tasks && typeof tasks === 'object', `capabilities.tasks is missing: ${show(caps)}`);
  check(tasks.list && typeof tasks.list === 'object', `capabilities.tasks.list is ${show(tasks.list)}, want an object (tasks ${show(tasks)})`);
  check(tasks.cancel && typeof tasks.cancel === 'object', `capabilities.tasks.cancel is ${show(tasks.cancel)}, want an object (tasks ${show(tasks)})`);
  check(tasks.requests?.tools?.call && typeof tasks.requests.tools.call === 'object',
    `capabilities.tasks.requests.tools.call is ${show(tasks.requests?.tools?.call)}, want an object (tasks ${show(tasks)})`);
  console.log(`# negotiated ${negotiated}; capabilities.tasks ${show(tasks)}${transport.sessionId ? `; session ${transport.sessionId}` : ''}`);
});

await step('tools/list marks the task tools with execution.taskSupport', async () => {
  const tools = [];
  let cursor;
  do {
    const page = await within(client.listTools(cursor ? { cursor } : undefined), 'tools/list');
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  const byName = new Map(tools.map((t) => [t.name, t]));
  // `greet` is no task: execution.taskSupport absent (which means forbidden), or forbidden.
  const want = { greet: undefined, slow_compute: 'optional', failing_job: 'required', protocol_error_job: 'optional', confirm_delete: 'optional' };
  for (const [name, support] of Object.entries(want)) {
    const tool = byName.get(name);
    check(tool, `tool ${name} missing from ${show([...byName.keys()])}`);
    const got = tool.execution?.taskSupport;
    if (support === undefined)
      check(got === undefined || got === 'forbidden', `${name}: execution is ${show(tool.execution)}, want no taskSupport (or "forbidden")`);
    else
      check(got === support, `${name}: execution is ${show(tool.execution)}, want taskSupport ${show(support)}`);
  }
  // What the SDK concluded from the listing and the capability: callToolStream adds `task`
  // by itself for these (the steps below pass it explicitly all the same).
  for (const name of ['slow_compute', 'failing_job', 'protocol_error_job', 'confirm_delete'])
    check(client.isToolTask(name), `the SDK does not take ${name} for a task tool (isToolTask)`);
  check(!client.isToolTask('greet'), 'the SDK takes greet for a task tool (isToolTask)');
  check(client.isToolTaskRequired('failing_job'), 'the SDK does not take failing_job for a task-required tool');
});

await step('greet is a plain call: callToolStream sends no task and yields the result alone', async () => {
  const from = wire.length;
  const messages = [];
  await within((async () => {
    for await (const m of client.experimental.tasks.callToolStream({ name: 'greet', arguments: { name: 'Ada' } })) messages.push(m);
  })(), 'callToolStream(greet)');
  check(messages.length === 1 && messages[0].type === 'result', `the stream yielded ${describeStream(messages)}, want one result`);
  const calls = sentRequests(wire, from, 'tools/call', (m) => m.params?.name === 'greet');
  check(calls.length === 1 && calls[0].message.params.task === undefined, `the tools/call carried task: ${show(calls.map((c) => c.message))}`);
  check(!messages[0].result.isError && textOf(messages[0].result) === 'Hello, Ada!', `greet answered ${show(messages[0].result)}, want "Hello, Ada!"`);
});

await step('slow_compute (1 s) through callToolStream: taskCreated, taskStatus, then the result', async () => {
  const from = wire.length;
  const label = 'peer-label-7';
  const started = Date.now();
  const messages = await streamTool({ name: 'slow_compute', arguments: { seconds: 1, label } });
  const elapsed = Date.now() - started;
  const { created: task, statuses, final } = checkStreamShape(messages, 'result', 'slow_compute');
  created.push(task.taskId);
  check(statuses.at(-1).status === 'completed', `the last taskStatus is ${show(statuses.at(-1).status)}, want completed`);
  const notTerminal = statuses.slice(0, -1).filter((t) => t.status !== 'working');
  check(notTerminal.length === 0, `before completed the task was ${show(notTerminal.map((t) => t.status))}, want working`);
  // The CreateTaskResult as the server sent it.
  const createResponse = createTaskOnWire(from, 'slow_compute');
  const wireTask = createResponse.result?.task;
  check(wireTask && typeof wireTask.pollInterval === 'number', `the CreateTaskResult has no pollInterval: ${show(createResponse)}`);
  check(wireTask.ttl !== undefined, `the CreateTaskResult has no ttl: ${show(createResponse)}`);
  // The result: what tasks/result answered, with the related-task _meta.
  const result = final.result;
  check(!result.isError, `isError: ${show(result)}`);
  check(textOf(result).includes(label), `the result text ${show(textOf(result))} does not contain the label ${show(label)}`);
  checkRelatedTask(result, task.taskId, 'the tasks/result result');
  const results = taskResultsOnWire(from, task.taskId);
  check(results.length === 1 && results[0].response?.message.result, `tasks/result exchanges on the wire: ${show(results.map((r) => r.response?.message))}`);
  check(elapsed >= 900, `the task completed ${elapsed} ms after the call, but slow_compute sleeps 1 s`);
  computed = { taskId: task.taskId, createdAt: task.createdAt, label, text: textOf(result) };
  console.log(`# slow_compute task ${task.taskId}: ${describeStream(messages)} in ${elapsed} ms; ` +
    `created ${show(wireTask)}`);
});

await step('getTask of the completed slow_compute task', async () => {
  check(computed, 'no completed slow_compute task (the step above failed)');
  const task = await within(client.experimental.tasks.getTask(computed.taskId), 'tasks/get');
  checkTask(task, 'tasks/get', { taskId: computed.taskId, status: 'completed' });
  check(task.createdAt === computed.createdAt, `createdAt is ${show(task.createdAt)}, the CreateTaskResult said ${show(computed.createdAt)}`);
});

await step('getTaskResult of the completed slow_compute task gives its result again', async () => {
  check(computed, 'no completed slow_compute task (the step above failed)');
  const result = await within(client.experimental.tasks.getTaskResult(computed.taskId, CallToolResultSchema), 'tasks/result');
  check(!result.isError, `isError: ${show(result)}`);
  check(textOf(result) === computed.text, `the text is ${show(textOf(result))}, the first tasks/result said ${show(computed.text)}`);
  checkRelatedTask(result, computed.taskId, 'tasks/result');
});

await step('an unknown taskId is -32602 for tasks/get, tasks/result and tasks/cancel', async () => {
  const id = 'no-such-task-peer-test';
  checkCode(await rejection(client.experimental.tasks.getTask(id), 'tasks/get'), ErrorCode.InvalidParams, 'tasks/get');
  checkCode(await rejection(client.experimental.tasks.getTaskResult(id, CallToolResultSchema), 'tasks/result'), ErrorCode.InvalidParams, 'tasks/result');
  checkCode(await rejection(client.experimental.tasks.cancelTask(id), 'tasks/cancel'), ErrorCode.InvalidParams, 'tasks/cancel');
});

/// confirm_delete through callToolStream, the elicitation handler answering `answer`;
/// checks the exchange and returns { task, result, seen }.
async function confirmDelete(filename, answer) {
  const from = wire.length;
  const httpFrom = http?.exchanges.length ?? 0;
  const before = elicitation.seen.length;
  elicitation.answer = answer;
  let messages;
  try {
    messages = await streamTool({ name: 'confirm_delete', arguments: { filename } });
  } finally {
    elicitation.answer = undefined;
  }
  // The SDK ends the stream with tasks/result as soon as it sees input_required; the
  // result comes from that tasks/result.
  const { created: task, statuses, final } = checkStreamShape(messages, 'result', 'confirm_delete');
  created.push(task.taskId);
  // The SDK calls tasks/result once tasks/get says input_required (or a terminal status);
  // before that every status must be working.
  const seenStatuses = statuses.map((t) => t.status);
  check(seenStatuses.slice(0, -1).every((st) => st === 'working') && ['input_required', 'completed'].includes(seenStatuses.at(-1)),
    `the statuses were ${show(seenStatuses)}, want working..., then input_required`);
  const seen = elicitation.seen.slice(before);
  check(seen.length === 1, `the elicitation handler ran ${seen.length} time(s), want 1`);
  const request = seen[0].request;
  checkRelatedTask(request.params, task.taskId, 'the elicitation/create request');
  const p = request.params;
  check(p.mode === undefined || p.mode === 'form', `the elicitation mode is ${show(p.mode)}, want form`);
  check(p.requestedSchema?.properties?.confirm?.type === 'boolean',
    `the requestedSchema is ${show(p.requestedSchema)}, want a boolean property "confirm"`);
  // On the wire: the server's request came while our tasks/result was pending, and the
  // result of that tasks/result is the tool's.
  const asks = wire.slice(from).filter((w) => w.dir === 'in' && w.message.method === 'elicitation/create');
  check(asks.length === 1, `${asks.length} elicitation/create requests on the wire, want 1`);
  const results = taskResultsOnWire(from, task.taskId);
  check(results.length === 1, `${results.length} tasks/result requests for the task, want 1`);
  const askAt = wire.indexOf(asks[0]);
  const resultRequestAt = wire.indexOf(results[0].request);
  const resultResponseAt = results[0].response ? wire.indexOf(results[0].response) : -1;
  check(resultResponseAt > askAt, 'the tasks/result response came before the elicitation/create request');
  if (askAt < resultRequestAt)
    console.log(`# the elicitation/create came before the client's tasks/result, not in answer to it (over ${mode})`);
  const answerEntry = wire.find((w) => w.dir === 'out' && w.message.method === undefined && w.message.id === asks[0].message.id);
  check(answerEntry?.message.result, `our answer to the elicitation is ${show(answerEntry?.message)}`);
  if (http) {
    // Over HTTP the elicitation/create must come on the event stream of the tasks/result POST.
    const post = http.exchanges.slice(httpFrom).find((x) => {
      try { const m = JSON.parse(x.requestBody ?? ''); return m.method === 'tasks/result' && m.params?.taskId === task.taskId; } catch { return false; }
    });
    check(post, 'the tasks/result POST was not seen');
    check(post.status === 200 && post.headers['content-type']?.startsWith('text/event-stream'),
      `the tasks/result POST was answered ${describeExchange(post)}, want an event stream`);
    await http.until(() => post.ended);
    const onStream = sseMessages(post.body);
    const at = onStream.findIndex((m) => m.method === 'elicitation/create' && m.id === asks[0].message.id);
    const responseAt = onStream.findIndex((m) => m.id === results[0].request.message.id && m.method === undefined);
    check(at >= 0, `the elicitation/create (id ${show(asks[0].message.id)}) did not come on the tasks/result POST's event stream: ${show(post.body)}`);
    check(responseAt > at, `the tasks/result response is not after the elicitation/create on its stream: ${show(post.body)}`);
    const answerPost = http.exchanges.slice(httpFrom).find((x) => {
      try { const m = JSON.parse(x.requestBody ?? ''); return m.id === asks[0].message.id && m.method === undefined; } catch { return false; }
    });
    check(answerPost, 'the POST carrying our answer was not seen');
    await http.until(() => answerPost.status !== undefined);
    check(answerPost.status === 202, `the POST carrying our answer was answered ${describeExchange(answerPost)}, want 202`);
  }
  console.log(`# confirm_delete task ${task.taskId}: ${describeStream(messages)}; elicitation ${show(p)}`);
  return { task, result: final.result, seen: seen[0] };
}

await step('confirm_delete: the task asks (elicitation/create with the related task), accept {confirm: true} is "Deleted ..."', async () => {
  const { task, result } = await confirmDelete('report.txt', () => ({ action: 'accept', content: { confirm: true } }));
  check(!result.isError, `isError: ${show(result)}`);
  check(textOf(result) === 'Deleted report.txt', `the text is ${show(textOf(result))}, want "Deleted report.txt"`);
  checkRelatedTask(result, task.taskId, 'the tasks/result result');
  const after = await within(client.experimental.tasks.getTask(task.taskId), 'tasks/get');
  checkTask(after, 'tasks/get after the result', { taskId: task.taskId, status: 'completed' });
});

await step('confirm_delete: accept {confirm: false} is "Kept ..."', async () => {
  const { result } = await confirmDelete('notes.md', () => ({ action: 'accept', content: { confirm: false } }));
  check(!result.isError, `isError: ${show(result)}`);
  check(textOf(result) === 'Kept notes.md', `the text is ${show(textOf(result))}, want "Kept notes.md"`);
});

await step('cancelTask of a running slow_compute (30 s): cancelled, stays cancelled, a second cancel is -32602', async () => {
  const messages = await streamTool({ name: 'slow_compute', arguments: { seconds: 30, label: 'to-cancel' } }, { stopAfterCreated: true });
  check(messages.length === 1 && messages[0].type === 'taskCreated', `the stream yielded ${describeStream(messages)}, want taskCreated`);
  const task = messages[0].task;
  checkTask(task, 'the created task', { status: 'working' });
  created.push(task.taskId);
  const started = Date.now();
  const cancelled = await within(client.experimental.tasks.cancelTask(task.taskId), 'tasks/cancel');
  checkTask(cancelled, 'tasks/cancel', { taskId: task.taskId, status: 'cancelled' });
  const got = await within(client.experimental.tasks.getTask(task.taskId), 'tasks/get');
  checkTask(got, 'tasks/get after tasks/cancel', { taskId: task.taskId, status: 'cancelled' });
  // The work stops; nothing may move the task out of cancelled afterwards. The tool's end
  // (it answers a tool error when cancelled) is what could: the cancellation woke it on
  // the session's shard before the next call, sent after the cancel was answered, starts
  // there, so once a task of the same tool that does not wait has run to its end, the
  // cancelled tool has ended too.
  const after = await streamTool({ name: 'slow_compute', arguments: { seconds: 0, label: 'after-cancel' } });
  check(after.at(-1)?.type === 'result' && textOf(after.at(-1).result).startsWith('computed after-cancel'),
    `the slow_compute task after the cancel yielded ${describeStream(after)}`);
  created.push(after[0].task.taskId);
  const later = await within(client.experimental.tasks.getTask(task.taskId), 'tasks/get');
  checkTask(later, 'tasks/get after a later task of the same tool ended', { taskId: task.taskId, status: 'cancelled' });
  const again = await rejection(client.experimental.tasks.cancelTask(task.taskId), 'the second tasks/cancel');
  checkCode(again, ErrorCode.InvalidParams, 'the second tasks/cancel');
  console.log(`# cancelled task ${task.taskId} ${Date.now() - started} ms after creating it; second cancel: ${again.message}`);
});

await step('failing_job: the task fails, and getTaskResult gives the tool\'s result with isError true', async () => {
  const messages = await streamTool({ name: 'failing_job', arguments: {} });
  // The SDK ends a failed task's stream with its own error, without tasks/result.
  const { created: task, statuses } = checkStreamShape(messages, 'error', 'failing_job');
  created.push(task.taskId);
  check(statuses.at(-1).status === 'failed', `the last taskStatus is ${show(statuses.at(-1))}, want failed`);
  const result = await within(client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema), 'tasks/result');
  check(result.isError === true, `isError is ${show(result.isError)}: ${show(result)}`);
  check(textOf(result).length > 0, `the tool error has no text: ${show(result)}`);
  checkRelatedTask(result, task.taskId, 'tasks/result');
  console.log(`# failing_job task ${task.taskId}: ${describeStream(messages)}; statusMessage ${show(statuses.at(-1).statusMessage)}; tasks/result ${show(textOf(result))}`);
});

await step('protocol_error_job: the task fails, and getTaskResult rejects with the JSON-RPC error the call itself gives', async () => {
  // What the tool answers without a task (it is `optional`): tasks/result must return
  // exactly that (2025-11-25, tasks, "Result Retrieval").
  const plain = await rejection(client.callTool({ name: 'protocol_error_job', arguments: {} }), 'protocol_error_job without a task');
  check(plain instanceof McpError, `protocol_error_job without a task rejected with ${plain?.name}: ${plain?.message}`);
  const plainCall = wire.findLast((w) => w.dir === 'out' && w.message.method === 'tools/call' && w.message.params?.name === 'protocol_error_job');
  const plainError = plainCall && responseEntry(wire, plainCall.message.id)?.message.error;
  check(plainError && typeof plainError.code === 'number', `protocol_error_job without a task was answered ${show(plainCall && responseEntry(wire, plainCall.message.id)?.message)}, want a JSON-RPC error`);
  const from = wire.length;
  const messages = await streamTool({ name: 'protocol_error_job', arguments: {} });
  const { created: task, statuses } = checkStreamShape(messages, 'error', 'protocol_error_job');
  created.push(task.taskId);
  check(statuses.at(-1).status === 'failed', `the last taskStatus is ${show(statuses.at(-1))}, want failed`);
  const error = await rejection(client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema), 'tasks/result');
  check(error instanceof McpError, `tasks/result rejected with ${error?.name}: ${error?.message}`);
  const results = taskResultsOnWire(from, task.taskId);
  check(results.length === 1, `${results.length} tasks/result requests for the task, want 1`);
  const wireError = results[0].response?.message.error;
  check(wireError && typeof wireError.code === 'number' && typeof wireError.message === 'string',
    `the tasks/result response is ${show(results[0].response?.message)}, want a JSON-RPC error`);
  check(error.code === wireError.code, `the SDK rejected with code ${error.code}, the server sent ${wireError.code}`);
  check(wireError.code === plainError.code && wireError.message === plainError.message && sameJson(wireError.data, plainError.data),
    `tasks/result answered ${show(wireError)}; the call without a task answered ${show(plainError)}`);
  console.log(`# protocol_error_job task ${task.taskId}: ${describeStream(messages)}; statusMessage ${show(statuses.at(-1).statusMessage)}; tasks/result error ${show(wireError)}`);
});

await step('a required-task tool called without a task (failing_job) is -32601', async () => {
  // client.callTool() refuses a task-required tool itself (McpError -32600, nothing sent)
  // once tools/list said so; client.request() sends the same tools/call without that guard.
  let from = wire.length;
  const local = await rejection(client.callTool({ name: 'failing_job', arguments: {} }), 'client.callTool(failing_job)');
  const sentByCallTool = sentRequests(wire, from, 'tools/call', (m) => m.params?.name === 'failing_job').length > 0;
  console.log(`# client.callTool(failing_job) ${sentByCallTool ? 'sent the call' : 'refused it without sending'}: ${local?.code} ${local?.message}`);
  from = wire.length;
  const error = await rejection(client.request({ method: 'tools/call', params: { name: 'failing_job', arguments: {} } }, CallToolResultSchema),
    'tools/call of failing_job without task');
  const calls = sentRequests(wire, from, 'tools/call', (m) => m.params?.name === 'failing_job');
  check(calls.length === 1 && calls[0].message.params.task === undefined, `the tools/call did not go out without task: ${show(calls.map((c) => c.message))}`);
  checkCode(error, ErrorCode.MethodNotFound, 'tools/call of failing_job without task');
  console.log(`# the server answered ${show(responseEntry(wire, calls[0].message.id)?.message.error)}`);
});

await step('listTasks lists every task this session created', async () => {
  check(created.length > 0, 'no task was created');
  const { tasks, pages } = await allTasks(client);
  const ids = tasks.map((t) => t.taskId);
  check(new Set(ids).size === ids.length, `tasks/list lists a task twice: ${show(ids)}`);
  const missing = created.filter((id) => !ids.includes(id));
  check(missing.length === 0, `tasks/list lacks ${show(missing)} (listed ${show(ids)})`);
  const byId = new Map(tasks.map((t) => [t.taskId, t]));
  if (computed) check(byId.get(computed.taskId)?.status === 'completed', `the slow_compute task is listed as ${show(byId.get(computed.taskId))}`);
  console.log(`# tasks/list: ${tasks.length} task(s) in ${pages} page(s): ${show(tasks.map((t) => `${t.taskId} ${t.status}`))}`);
});

/// Over HTTP: lets the SDK's resumptions of ended event streams play out, then requires
/// that each resuming GET was answered with a stream. A 2025-11-25 server primes each POST
/// stream with an event id and a retry interval; SDK 1.32.2 resumes (GET with
/// Last-Event-ID, `retry` ms later) a primed stream that ended without a *result* response,
/// which every error response above is (typescript-sdk#2638). The SDK's reports of a
/// resumption that failed are taken out of protocolErrors here, and reported by this step.
async function resumptionsSettled() {
  const { exchanges } = http;
  const retry = Math.min(2000, Math.max(0, ...exchanges.flatMap((x) => [...x.body.matchAll(/^retry: *(\d+)$/gm)].map((m) => Number(m[1])))));
  const primed = exchanges.filter((x) => x.method === 'POST' && /^id:/m.test(x.body));
  // Played out: every primed stream that ended without a result has been resumed by a GET
  // naming its last event id, and every request made has been answered (a resumed stream
  // of a request that is over idles until its session ends: nothing more follows).
  check(await http.until(() => primed.every((x) => x.ended)), `primed POST streams still open: ${show(primed.filter((x) => !x.ended).map(describeExchange))}`);
  const lastIdOf = (x) => [...x.body.matchAll(/^id: *(\S+)$/gm)].at(-1)?.[1];
  const unanswered = primed.filter((x) => {
    const id = JSON.parse(x.requestBody).id;
    return !sseMessages(x.body).some((m) => m.id === id && 'result' in m);
  });
  const resumedBy = (x) => exchanges.find((g) => g.method === 'GET' && g.requestHeaders['last-event-id'] === lastIdOf(x) &&
    g.requestHeaders['mcp-session-id'] === x.requestHeaders['mcp-session-id']);
  const played = await http.until(() => unanswered.every((x) => resumedBy(x)?.status !== undefined) &&
    exchanges.every((x) => x.status !== undefined || x.ended), 2 * retry + 10_000);
  check(played, `streams that ended without a result and were not resumed: ${show(unanswered.filter((x) => resumedBy(x)?.status === undefined).map(describeExchange))}`);
  // Each resuming GET, with the POST whose stream it resumes (the one that carried the
  // event id it names).
  const resumes = exchanges.filter((x) => x.method === 'GET' && x.requestHeaders['last-event-id'] !== undefined);
  const resumed = (x) => {
    const id = x.requestHeaders['last-event-id'];
    const session = x.requestHeaders['mcp-session-id'];
    const post = primed.find((p) => p.requestHeaders['mcp-session-id'] === session &&
      p.body.split(/\r?\n/).some((l) => l.startsWith('id:') && l.replace(/^id: ?/, '') === id));
    let what = 'a stream no POST carried';
    const clip = (t) => (t.length > 200 ? `${t.slice(0, 200)}...` : t);
    try { if (post) { const m = JSON.parse(post.requestBody); what = `the ${m.method} POST (id ${m.id}, answered ${clip(show(sseMessages(post.body).at(-1)))})`; } } catch { /* keep it */ }
    if (session !== transport.sessionId) what += ' of the second session';
    return `GET Last-Event-ID ${id} (resuming ${what}) -> ${x.status} ${x.body.trim().slice(0, 200)}`;
  };
  console.log(`# retry ${retry} ms; ${resumes.length} resuming GET(s):`);
  for (const x of resumes) console.log(`#   ${resumed(x)}`);
  const resumeErrors = (e) => /Failed to open SSE stream|Failed to reconnect SSE stream|Maximum reconnection attempts|SSE stream disconnected/.test(e);
  const errors = protocolErrors.filter(resumeErrors);
  for (const e of errors) protocolErrors.splice(protocolErrors.indexOf(e), 1);
  const refused = resumes.filter((x) => x.status !== 200);
  check(refused.length === 0 && errors.length === 0,
    `${refused.length} of ${resumes.length} resuming GET(s) refused: ${show(refused.map(resumed))}; the SDK reported ${show(errors)}`);
}

// ---------------------------------------------------------------------------------------
// A second session (HTTP): the first session's tasks are not its own.

let secondWire = [];

if (mode === 'http') {
  const secondTransport = new StreamableHTTPClientTransport(new URL(url), { fetch: http.fetch });
  const second = new Client({ name: 'droid-peer-ts-tasks-http-second', version: '1.0.0' }, { capabilities: clientCapabilities });
  secondWire = tapWire(secondTransport);
  second.onerror = (error) => {
    protocolErrors.push(`(second client) ${error?.message ?? String(error)}`);
    console.error(`# second client onerror (checked at the end): ${error?.message ?? error}`);
  };
  const secondConnected = await step('a second client connects (a second session)', async () => {
    await within(second.connect(secondTransport), 'initialize (second client)');
    check(secondTransport.sessionId && secondTransport.sessionId !== transport.sessionId,
      `the second session id is ${show(secondTransport.sessionId)}, the first ${show(transport.sessionId)}`);
  });
  if (secondConnected) {
    await step('the second session cannot see the first one\'s task: tasks/get and tasks/result are -32602', async () => {
      check(computed, 'no completed slow_compute task in the first session (a step above failed)');
      checkCode(await rejection(second.experimental.tasks.getTask(computed.taskId), 'tasks/get from the second session'),
        ErrorCode.InvalidParams, 'tasks/get from the second session');
      checkCode(await rejection(second.experimental.tasks.getTaskResult(computed.taskId, CallToolResultSchema), 'tasks/result from the second session'),
        ErrorCode.InvalidParams, 'tasks/result from the second session');
    });
    await step('the second session\'s listTasks lists none of the first one\'s tasks', async () => {
      const { tasks } = await allTasks(second);
      const leaked = tasks.filter((t) => created.includes(t.taskId));
      check(leaked.length === 0, `the second session lists the first one's tasks: ${show(leaked)}`);
      console.log(`# the second session lists ${tasks.length} task(s)`);
    });
    await step('the first session still sees its task', async () => {
      check(computed, 'no completed slow_compute task in the first session (a step above failed)');
      const task = await within(client.experimental.tasks.getTask(computed.taskId), 'tasks/get');
      checkTask(task, 'tasks/get', { taskId: computed.taskId, status: 'completed' });
    });
  }
  await step('the SDK\'s resumptions of ended event streams (both sessions) are answered', resumptionsSettled);
  await step('the second client closes', async () => {
    await secondTransport.terminateSession().catch(() => {});
    await second.close();
  });
}

await step('every Task the server sent is well-formed, and consistent from one response to the next', async () => {
  // createdAt and lastUpdatedAt ISO 8601 times, ttl a number or null, ... in every Task
  // (responses and notifications/tasks/status); and from one response to the next, per
  // task: createdAt never changes, lastUpdatedAt never goes back, a terminal status stays.
  const problems = [];
  let count = 0;
  for (const [who, w] of [['', wire], ['(second session) ', secondWire]]) {
    const seen = tasksOnWire(w);
    count += seen.length;
    const last = new Map();
    for (const { method, task, notification } of seen) {
      for (const p of taskProblems(task)) problems.push(`${who}${method} ${task?.taskId}: ${p}`);
      // Over HTTP a notification may come on another stream than the responses, so out
      // of their order: only responses are held to the order checks.
      if (notification) continue;
      const before = last.get(task?.taskId);
      if (before) {
        if (before.createdAt !== task.createdAt) problems.push(`${who}${method} ${task.taskId}: createdAt changed from ${before.createdAt} to ${task.createdAt}`);
        if (isoTime(before.lastUpdatedAt) && isoTime(task.lastUpdatedAt) && Date.parse(task.lastUpdatedAt) < Date.parse(before.lastUpdatedAt))
          problems.push(`${who}${method} ${task.taskId}: lastUpdatedAt went back from ${before.lastUpdatedAt} to ${task.lastUpdatedAt}`);
        if (['completed', 'failed', 'cancelled'].includes(before.status) && task.status !== before.status)
          problems.push(`${who}${method} ${task.taskId}: status went from terminal ${before.status} to ${task.status}`);
      }
      if (task?.taskId) last.set(task.taskId, task);
    }
  }
  check(count > 0, 'the server sent no Task at all');
  // Notes, not failures: what the spec leaves optional or only recommends.
  const methodOf = (id) => wire.find((o) => o.dir === 'out' && o.message.id === id && o.message.method !== undefined)?.message.method;
  const withMeta = wire.filter((e) => e.dir === 'in' && e.message.method === undefined && e.message.result?._meta?.[RELATED_TASK_META_KEY] !== undefined)
    .map((e) => methodOf(e.message.id)).filter((m) => ['tasks/get', 'tasks/list', 'tasks/cancel'].includes(m));
  if (withMeta.length > 0) console.log(`# note: ${withMeta.length} tasks/get, tasks/list or tasks/cancel result(s) carry the related-task _meta (SHOULD NOT): ${show(withMeta)}`);
  const statusNotes = wire.filter((e) => e.dir === 'in' && e.message.method === 'notifications/tasks/status');
  const notesWithMeta = statusNotes.filter((e) => e.message.params?._meta?.[RELATED_TASK_META_KEY] !== undefined);
  console.log(`# note: ${statusNotes.length} notifications/tasks/status received (optional)` +
    `${notesWithMeta.length > 0 ? `, ${notesWithMeta.length} of them with the related-task _meta (SHOULD NOT)` : ''}`);
  // The same fault shows in every response: name each distinct one once, with a count.
  const distinct = new Map();
  for (const p of problems) {
    const key = p.replace(/^(\(second session\) )?\S+( \(CreateTaskResult\))? \S+: /, '').replace(/\d{4}-\d{2}-\d{2}T[\d:.]+Z/g, '<time>');
    if (!distinct.has(key)) distinct.set(key, { example: p, n: 0 });
    distinct.get(key).n += 1;
  }
  check(problems.length === 0, `${problems.length} problem(s) in ${count} Task(s): ` +
    [...distinct.values()].map(({ example, n }) => `${example}${n > 1 ? ` (and ${n - 1} more like it)` : ''}`).join('; '));
  console.log(`# ${count} Task(s) on the wire, all well-formed`);
});

// ---------------------------------------------------------------------------------------
// The end

if (mode === 'http') {
  // Not a failure, a note: 2025-11-25 tasks says servers SHOULD NOT upgrade a tasks/get
  // to an event stream "where possible" (the client said it polls).
  const gets = http.exchanges.filter((x) => x.method === 'POST' && /"method":"tasks\/get"/.test(x.requestBody ?? ''));
  const streamed = gets.filter((x) => x.headers?.['content-type']?.startsWith('text/event-stream'));
  console.log(`# note: ${streamed.length} of ${gets.length} tasks/get POSTs were answered with an event stream ` +
    '(2025-11-25 tasks: servers SHOULD NOT upgrade tasks/get to SSE where possible)');
  await step('close the client', async () => {
    await transport.terminateSession().catch(() => {});
    await client.close();
  });
  await step('SIGTERM: the server exits with status 0 within 3 s', () => server.stopWithSigterm());
} else {
  await step('close: the server exits on end of input', async () => {
    const child = transport._process;
    const pid = transport.pid;
    check(child && pid, 'no server process to close');
    let exit = child.exitCode !== null || child.signalCode !== null ? { code: child.exitCode, signal: child.signalCode, at: Date.now() } : null;
    child.once('exit', (code, signal) => { exit = { code, signal, at: Date.now() }; });
    const started = Date.now();
    await client.close();
    check(exit, `the server (pid ${pid}) had not exited when close() returned after ${Date.now() - started} ms`);
    check(exit.signal === null, `the server was killed by ${exit.signal} after ${exit.at - started} ms: it did not exit on end of input`);
    check(exit.code === 0, `the server exited with status ${exit.code}`);
  });
}

await step('no protocol errors', async () => {
  // Reports of the SDK's own streams being aborted by close() are not the server's doing.
  const noise = (e) => /SSE stream disconnected: AbortError|This operation was aborted/.test(e);
  const errors = protocolErrors.filter((e) => !noise(e));
  check(errors.length === 0, `the SDK reported: ${show(errors)}`);
});

finish();
