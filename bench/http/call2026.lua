-- SPDX-License-Identifier: BSL-1.0
-- wrk script: tools/call of the example's echo tool as an MCP 2026-07-28 request. That
-- era has no initialize and no session: every POST carries the protocol version and the
-- routing headers (Mcp-Method, Mcp-Name), and its params._meta carries the version, the
-- client's info and its capabilities. The driver (bench/run.mjs) checks the answer
-- (resultType "complete", the echoed text) before and after the load.
local meta = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",' ..
  '"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},' ..
  '"io.modelcontextprotocol/clientCapabilities":{}}'
local body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},' ..
  meta .. '}}'
wrk.method = "POST"
wrk.body = body
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "echo"

-- Request ids distinct across wrk threads and within one, as in call.lua (a stateless
-- server does not need it, but both scripts then send the same ids).
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("thread_number", threads)
end

local counter = 0
local prefix = '{"jsonrpc":"2.0","id":'
local suffix = string.sub(body, #'{"jsonrpc":"2.0","id":1' + 1)
request = function()
  counter = counter + 1
  local id = (thread_number or 0) * 1000000000 + counter
  return wrk.format(nil, nil, nil, prefix .. string.format("%d", id) .. suffix)
end
