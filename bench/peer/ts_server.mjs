// SPDX-License-Identifier: BSL-1.0
// The bench's reference peer: the official MCP TypeScript SDK (pinned in package.json)
// serving the same `echo` tool as protocol_droid's everything-server ({text} -> that text
// as text content), written the way the SDK's own examples write a server. It also has
// everything-server's `summarize` ({text} -> one sampling/createMessage to the client on
// the request's stream -> "summary from MODEL: TEXT"), for the exchange rows.
//
//   node bench/peer/ts_server.mjs --mode sse [--port N]        # stateful, event-stream answers
//   node bench/peer/ts_server.mjs --mode stateless [--port N]  # no sessions, JSON answers
//   node bench/peer/ts_server.mjs --mode stdio                 # newline-delimited JSON-RPC on stdin/stdout
//
// The port comes from --port or $PORT (0, the default, picks a free one). Over HTTP the URL
// (http://127.0.0.1:PORT/mcp) is printed alone on stdout once listening, as everything-server
// does; SIGTERM closes the listener and exits 0.
import { randomUUID } from 'node:crypto';
import http from 'node:http';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CreateMessageResultSchema, isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';

function option(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const mode = option('--mode', 'sse');
const port = Number(option('--port', process.env.PORT ?? '0'));

function makeServer() {
  const server = new McpServer({ name: 'ts-bench-server', version: '1.0.0' });
  server.registerTool(
    'echo',
    { description: 'Echoes its text back', inputSchema: { text: z.string().describe('The text to send back') } },
    async ({ text }) => ({ content: [{ type: 'text', text }] }),
  );
  server.registerTool(
    'summarize',
    {
      description: "Asks the client's model (sampling) to summarize a text",
      inputSchema: { text: z.string(), max_tokens: z.number().int().optional() },
    },
    async ({ text, max_tokens: maxTokens }, extra) => {
      // extra.sendRequest sends on this request's stream, as ctx.sample does in C++.
      const answer = await extra.sendRequest(
        {
          method: 'sampling/createMessage',
          params: {
            messages: [{ role: 'user', content: { type: 'text', text: `Summarize briefly:\n${text}` } }],
            systemPrompt: 'You write one-sentence summaries.',
            maxTokens: maxTokens ?? 200,
          },
        },
        CreateMessageResultSchema,
        { timeout: 60_000 },
      );
      const said = answer.content.type === 'text' ? answer.content.text : '';
      return { content: [{ type: 'text', text: `summary from ${answer.model}: ${said}` }] };
    },
  );
  return server;
}

if (mode === 'stdio') {
  await makeServer().connect(new StdioServerTransport());
} else if (mode === 'sse' || mode === 'stateless') {
  const sessions = new Map(); // session id -> transport (stateful mode)

  /// Reads and parses the body, as express.json() does in the SDK's examples.
  async function body(req) {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const text = Buffer.concat(chunks).toString('utf8');
    return text ? JSON.parse(text) : undefined;
  }

  function fail(res, status, message) {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
  }

  async function stateful(req, res) {
    const sid = req.headers['mcp-session-id'];
    const parsed = req.method === 'POST' ? await body(req) : undefined;
    let transport = sid ? sessions.get(sid) : undefined;
    if (!transport) {
      if (sid || req.method !== 'POST' || !isInitializeRequest(parsed)) return fail(res, 400, 'Bad Request: no valid session');
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: false,
        onsessioninitialized: (id) => sessions.set(id, transport),
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await makeServer().connect(transport);
    }
    await transport.handleRequest(req, res, parsed);
  }

  async function stateless(req, res) {
    if (req.method !== 'POST') return fail(res, 405, 'Method not allowed');
    const parsed = await body(req);
    // The SDK refuses to reuse a stateless transport: one server and transport per request.
    const server = makeServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, parsed);
  }

  const handle = mode === 'sse' ? stateful : stateless;
  const listener = http.createServer((req, res) => {
    if (!req.url.startsWith('/mcp')) return fail(res, 404, 'Not found');
    handle(req, res).catch((e) => {
      if (!res.headersSent) fail(res, 500, String(e?.message ?? e));
    });
  });
  listener.keepAliveTimeout = 60_000;
  listener.listen(port, '127.0.0.1', () => {
    process.stdout.write(`http://127.0.0.1:${listener.address().port}/mcp\n`);
  });
  process.on('SIGTERM', () => {
    listener.close();
    listener.closeAllConnections();
    process.exit(0);
  });
} else {
  process.stderr.write(`ts_server: unknown --mode ${mode} (sse, stateless or stdio)\n`);
  process.exit(2);
}
