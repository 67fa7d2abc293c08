#!/bin/sh
# SPDX-License-Identifier: BSL-1.0
# Prometheus's own parser and linter on what everything-server --metrics serves: starts the
# example over HTTP, makes MCP requests of several outcomes with curl, scrapes /metrics on
# the same listener and runs `promtool check metrics` on it. Why promtool and not only the
# exact-text unit tests: they prove the text is what we meant; this proves Prometheus
# reads it (escaping, histogram shape, HELP/TYPE, counter suffixes).
#
#   promtool_check.sh EVERYTHING_SERVER PROMTOOL CURL
set -eu
server=$1 promtool=$2 curl=$3
dir=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

"$server" --http 127.0.0.1:0 --metrics --threads 2 >"$dir/url" 2>"$dir/stderr" &
pid=$!
i=0
while [ ! -s "$dir/url" ]; do
  i=$((i + 1))
  if [ $i -gt 100 ]; then echo "not ok - everything-server did not print its URL"; cat "$dir/stderr"; exit 1; fi
  sleep 0.1
done
url=$(head -n 1 "$dir/url")
base=${url%/mcp}

post() {
  "$curl" -sS -X POST "$url" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2025-11-25' "$@"
}
post -D "$dir/headers" -o /dev/null -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"promtool","version":"1"}}}'
sid=$(tr -d '\r' <"$dir/headers" | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: //p')
[ -n "$sid" ] || { echo "not ok - no Mcp-Session-Id"; exit 1; }
post -o /dev/null -H "Mcp-Session-Id: $sid" -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}'
post -o /dev/null -H "Mcp-Session-Id: $sid" -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fail","arguments":{}}}'
post -o /dev/null -H "Mcp-Session-Id: $sid" -d '{"jsonrpc":"2.0","id":3,"method":"no/such/method"}'
post -o /dev/null -H "Mcp-Session-Id: $sid" -d '{"jsonrpc":"2.0","id":4,"method":"tools/list"}'

"$curl" -sSf "$base/metrics" >"$dir/metrics"
if ! "$promtool" check metrics <"$dir/metrics" >"$dir/lint" 2>&1; then
  echo "not ok - promtool check metrics"
  cat "$dir/lint"
  cat "$dir/metrics"
  exit 1
fi
echo "ok - promtool check metrics: $(wc -l <"$dir/metrics") lines"
for line in 'droid_mcp_requests_total{method="tools/call",outcome="ok"} 1' \
            'droid_mcp_requests_total{method="tools/call",outcome="tool_error"} 1' \
            'droid_mcp_requests_total{method="other",outcome="error"} 1' \
            'droid_mcp_request_duration_seconds_count{method="tools/call"} 2' \
            'droid_http_sessions 1'; do
  if ! grep -qxF "$line" "$dir/metrics"; then
    echo "not ok - missing: $line"
    cat "$dir/metrics"
    exit 1
  fi
done
echo "ok - the scrape counts what was served"
