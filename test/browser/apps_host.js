// SPDX-License-Identifier: BSL-1.0
// The host page of apps.mjs, run in Chromium after esbuild bundles it: an MCP host built
// on the official client (@modelcontextprotocol/client) and the official MCP Apps host
// side (@modelcontextprotocol/ext-apps app-bridge). It connects to the server named in
// its URL (?server=...), calls weather_card, and either renders the tool's view in a
// sandboxed iframe (the app then talks to the host through the bridge, and its tool
// calls go on to the server) or, for a tool with no view, shows the tool's text.
// What happened is kept in window.host for the test to read.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  AppBridge, PostMessageTransport, RESOURCE_MIME_TYPE, getToolUiResourceUri, isToolVisibilityAppOnly,
} from '@modelcontextprotocol/ext-apps/app-bridge';

const host = { state: 'starting', events: [] };
window.host = host;
const note = (event) => host.events.push(event);

async function main() {
  const server = new URL(new URLSearchParams(location.search).get('server'));
  const client = new Client({ name: 'droid-apps-host', version: '1.0.0' },
    { capabilities: { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: [RESOURCE_MIME_TYPE] } } } });
  await client.connect(new StreamableHTTPClientTransport(server));
  host.protocol = client.getNegotiatedProtocolVersion?.();
  const { tools } = await client.listTools();
  host.agentTools = tools.filter((t) => !isToolVisibilityAppOnly(t)).map((t) => t.name);
  const tool = tools.find((t) => t.name === 'weather_card');
  if (!tool) throw new Error('the server has no weather_card tool');
  const args = { city: 'Paris' };
  const result = await client.callTool({ name: tool.name, arguments: args });
  host.result = result;
  const uri = getToolUiResourceUri(tool);
  if (!uri) {
    // A host with Apps shows a tool without a view as any host would: its text.
    document.getElementById('fallback').textContent = result.content.map((c) => c.text ?? '').join('\n');
    host.state = 'fallback';
    return;
  }
  const read = await client.readResource({ uri });
  const view = read.contents.find((c) => c.uri === uri);
  if (!view || view.mimeType !== RESOURCE_MIME_TYPE) throw new Error(`the view ${uri} is not ${RESOURCE_MIME_TYPE}`);
  host.viewMeta = view._meta ?? null;

  // The view runs in a sandboxed frame of its own opaque origin: scripts, and nothing of
  // this page. The bridge listens before the document loads, since the view's first
  // message (ui/initialize) is sent as soon as its script runs.
  const frame = document.createElement('iframe');
  frame.id = 'view';
  frame.setAttribute('sandbox', 'allow-scripts');
  document.getElementById('views').appendChild(frame);
  const bridge = new AppBridge(client, { name: 'droid-apps-host', version: '1.0.0' }, { serverTools: {}, logging: {} });
  bridge.oninitialized = async () => {
    note('initialized');
    await bridge.sendToolInput({ arguments: args });
    await bridge.sendToolResult(result);
    host.state = 'rendered';
  };
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  frame.srcdoc = view.text;
}

main().catch((error) => {
  host.state = 'failed';
  host.error = String(error?.stack ?? error);
});
