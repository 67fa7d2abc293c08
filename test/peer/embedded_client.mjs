// SPDX-License-Identifier: BSL-1.0
// Peer test: the official MCP TypeScript SDK client drives examples/embedded (a server
// whose HTTP listener runs on the application's own io_context) over Streamable HTTP.
//
//     node test/peer/embedded_client.mjs build/examples/embedded/embedded-server
//
// What it proves: the listener serves on a context it does not own while the
// application's own work (a timer) keeps running on it; tools see the application's state;
// SIGTERM stops the listener and then the application, and the process exits 0.
// Exit 77 (skipped) without the SDK, unless DROID_REQUIRE_PEERS=1.

import { check, exitWithSummary, HttpServer, loadSdk, show, sleep, startWatchdog, step, textOf } from './harness.mjs';

const serverPath = process.argv[2];
if (!serverPath || process.argv.length > 3) {
  console.log('not ok - arguments: usage: node embedded_client.mjs <path to embedded-server>');
  process.exit(1);
}

const [{ Client }, { StreamableHTTPClientTransport }] = await loadSdk(
  (specifier) => import(specifier),
  ['@modelcontextprotocol/sdk/client/index.js', '@modelcontextprotocol/sdk/client/streamableHttp.js']);

const server = new HttpServer(serverPath);
startWatchdog(() => server.kill());
const finish = () => {
  server.kill();
  exitWithSummary();
};

let url;
if (!await step('the embedded server starts and prints its URL', async () => { url = await server.start(); })) finish();

const connect = async (name) => {
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
};
const ticksOf = (text) => Number(/after (\d+) ticks/.exec(text)?.[1]);

let client;
await step('a client connects and lists the two tools', async () => {
  client = await connect('embedded-peer');
  const { tools } = await client.listTools();
  check(show(tools.map((t) => t.name).sort()) === show(['reading', 'set_target']), `tools: ${show(tools.map((t) => t.name))}`);
  const target = tools.find((t) => t.name === 'set_target');
  check(target.inputSchema.required?.includes('celsius'), `set_target's schema: ${show(target.inputSchema)}`);
});

await step("the application's own timer keeps running beside the listener", async () => {
  const first = ticksOf(textOf(await client.callTool({ name: 'reading', arguments: {} })));
  // A tick is the application's own 100 ms timer, the very thing this step watches: no
  // event but time says one has passed, so five of them are waited for.
  await sleep(500);
  const second = ticksOf(textOf(await client.callTool({ name: 'reading', arguments: {} })));
  check(Number.isInteger(first) && second > first, `ticks went from ${first} to ${second} in 500 ms`);
});

await step("a tool changes the application's state, which another session sees", async () => {
  const set = await client.callTool({ name: 'set_target', arguments: { celsius: 25 } });
  check(!set.isError && /target set to 25/.test(textOf(set)), `set_target answered ${show(set)}`);
  const other = await connect('embedded-peer-2');
  const reading = textOf(await other.callTool({ name: 'reading', arguments: {} }));
  check(/target 25\.0/.test(reading), `the second session reads ${show(reading)}`);
  await other.close();
});

await step('an out-of-range target is a tool error, and a missing argument too', async () => {
  const high = await client.callTool({ name: 'set_target', arguments: { celsius: 99 } });
  check(high.isError === true && /between 5 and 30/.test(textOf(high)), `celsius 99 answered ${show(high)}`);
  const none = await client.callTool({ name: 'set_target', arguments: {} });
  check(none.isError === true && /celsius/.test(textOf(none)), `no celsius answered ${show(none)}`);
});

await step('SIGTERM stops the listener, then the application; the process exits 0', async () => {
  await client.close();
  await server.stopWithSigterm();
});

finish();
