-- SPDX-License-Identifier: BSL-1.0
-- wrk script: tools/call of the example's echo tool on one initialized session.
-- The session id comes from the environment (MCP_SESSION), set by the bench driver
-- (bench/run.mjs); without it the requests carry no session (stateless servers, nginx).
local session = os.getenv("MCP_SESSION")
local body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
wrk.method = "POST"
wrk.body = body
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
if session and session ~= "" then wrk.headers["Mcp-Session-Id"] = session end

-- MCP_SESSIONS (comma-separated), when set: each wrk thread sends every request of its
-- own on one of these sessions (thread N on the Nth). The driver runs this row with one
-- thread per connection, so each connection has its own session, as each client of a
-- real server has (wrk has no hook per connection, only per thread).
local sessions = {}
for id in string.gmatch(os.getenv("MCP_SESSIONS") or "", "[^,]+") do sessions[#sessions + 1] = id end

-- Each wrk thread runs its own Lua state: setup() (main state) numbers them, so that
-- request ids are distinct across threads as well as within one, and the session's
-- duplicate-id check never trips (nor the SDK's request-to-stream map collides).
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
  if #sessions > 0 then wrk.headers["Mcp-Session-Id"] = sessions[((thread_number or 1) - 1) % #sessions + 1] end
  return wrk.format(nil, nil, nil, prefix .. string.format("%d", id) .. suffix)
end
