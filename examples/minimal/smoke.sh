#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Drives the minimal server through initialize, tools/list and tools/call over stdio and
# checks each answer.
set -euo pipefail
server=$1
out=$(printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"smoke","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
  '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada","times":2}}}' \
  '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"greet","arguments":{"times":2}}}' \
  '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Bo"}}}' \
  | "$server" 2>/dev/null)
fail() { echo "not ok - $1"; echo "$out"; exit 1; }
grep -q '"id":1,"result":{"protocolVersion":"2025-11-25"' <<<"$out" || fail "initialize"
grep -q '"name":"greet"' <<<"$out" || fail "tools/list lists greet"
grep -q 'Hello, Ada!\\nHello, Ada!\\n' <<<"$out" || fail "greet greets twice"
grep -q '"id":4,"result":{.*"isError":true' <<<"$out" || fail "a missing argument is a tool error"
grep -q '"id":5,"result":{"content":\[{"type":"text","text":"Hello, Bo!\\n"}\]' <<<"$out" || fail "times is optional"
echo "ok - the minimal server answers initialize, tools/list and tools/call"
