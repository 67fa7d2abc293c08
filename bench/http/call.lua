-- SPDX-License-Identifier: BSL-1.0
-- wrk script: tools/call of the example's echo tool on one initialized session.
-- The session id comes from the environment (MCP_SESSION), set by the bench driver.
local session = os.getenv("MCP_SESSION")
local body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
wrk.method = "POST"
wrk.body = body
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
if session and session ~= "" then wrk.headers["Mcp-Session-Id"] = session end

local counter = 0
request = function()
  counter = counter + 1
  -- A distinct id per request, so the session's duplicate-id check never trips across
  -- connections.
  local b = string.gsub(body, '"id":1', '"id":' .. counter .. math.random(1, 1000000000))
  return wrk.format(nil, nil, nil, b)
end
