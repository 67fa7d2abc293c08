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

-- MCP_SESSIONS (comma-separated), when set: each request goes to the next of these
-- sessions in turn, so that a run's sessions live on every shard as a real server's
-- clients do (wrk has no hook per connection to tie one session to each).
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
  if #sessions > 0 then
    -- Threads start at different sessions, so two threads do not move in step.
    wrk.headers["Mcp-Session-Id"] = sessions[(counter + (thread_number or 0) * 7) % #sessions + 1]
  end
  return wrk.format(nil, nil, nil, prefix .. string.format("%d", id) .. suffix)
end
