// SPDX-License-Identifier: BSL-1.0
// Peer test: the official MCP TypeScript SDK client spawns examples/minimal over stdio, as
// an MCP host would, and uses its one tool.
//
//     node test/peer/minimal_client.mjs build/examples/minimal/minimal-server
//
// Exit 77 (skipped) without the SDK, unless DROID_REQUIRE_PEERS=1.

import { check, exitWithSummary, loadSdk, show, startWatchdog, step, textOf } from './harness.mjs';

const serverPath = process.argv[2];
if (!serverPath || process.argv.length > 3) {
  console.log('not ok - arguments: usage: node minimal_client.mjs <path to minimal-server>');
  process.exit(1);
}

const [{ Client }, { StdioClientTransport }] = await loadSdk(
  (specifier) => import(specifier),
  ['@modelcontextprotocol/sdk/client/index.js', '@modelcontextprotocol/sdk/client/stdio.js']);

const transport = new StdioClientTransport({ command: serverPath, args: [], stderr: 'pipe' });
let stderr = '';
transport.stderr?.on('data', (chunk) => { stderr += chunk; });
const client = new Client({ name: 'minimal-peer', version: '1.0.0' });
startWatchdog(() => transport.close());

await step('the SDK client spawns the server and initializes', async () => {
  await client.connect(transport);
  check(client.getServerVersion()?.name === 'minimal', `serverInfo: ${show(client.getServerVersion())}`);
});

await step('tools/list: greet, with name required and times optional', async () => {
  const { tools } = await client.listTools();
  check(tools.length === 1 && tools[0].name === 'greet', `tools: ${show(tools)}`);
  const schema = tools[0].inputSchema;
  check(show(schema.required) === show(['name']), `required: ${show(schema.required)}`);
  check(schema.properties?.times?.type === 'integer', `times: ${show(schema.properties?.times)}`);
});

await step('greet greets as many times as asked, and once by default', async () => {
  const twice = await client.callTool({ name: 'greet', arguments: { name: 'Ada', times: 2 } });
  check(textOf(twice) === 'Hello, Ada!\nHello, Ada!\n', `twice: ${show(twice)}`);
  const once = await client.callTool({ name: 'greet', arguments: { name: 'Bo' } });
  check(textOf(once) === 'Hello, Bo!\n', `once: ${show(once)}`);
});

await step('a missing or mistyped argument is a tool error naming it', async () => {
  const missing = await client.callTool({ name: 'greet', arguments: { times: 2 } });
  check(missing.isError === true && /name/.test(textOf(missing)), `no name: ${show(missing)}`);
  const typed = await client.callTool({ name: 'greet', arguments: { name: 'Cy', times: 'two' } });
  check(typed.isError === true && /times/.test(textOf(typed)), `times "two": ${show(typed)}`);
});

await step('closing the client ends the server, with nothing on stderr', async () => {
  await client.close();
  check(stderr === '', `stderr: ${show(stderr)}`);
});

exitWithSummary();
