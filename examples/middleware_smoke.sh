#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# everything-server's middleware flags over stdio: --rate-limit 1 lets a burst of two
# calls through and refuses the third with -32600 and data.retryAfterMs; --access-log
# writes one logfmt line per request on stderr (never on stdout, the protocol's).
set -euo pipefail
server=$1
err=$(mktemp)
trap 'rm -f "$err"' EXIT
call() { printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"t%d"}}}' "$1" "$1"; }
out=$(printf '%s\n' \
  '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"smoke","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  "$(call 1)" "$(call 2)" "$(call 3)" \
  | "$server" --stdio --no-skills --rate-limit 1 --access-log 2>"$err")
fail() { echo "not ok - $1"; echo "$out"; cat "$err"; exit 1; }
grep -q '"id":1,"result":{"content":\[{"type":"text","text":"t1"}\]' <<<"$out" || fail "the first call is served"
grep -q '"id":2,"result":{"content":\[{"type":"text","text":"t2"}\]' <<<"$out" || fail "the burst's second call is served"
grep -q '"id":3,"error":{"code":-32600,"message":"Too many requests[^"]*","data":{"retryAfterMs":[0-9]*}}' <<<"$out" ||
  fail "the third call is refused with -32600 and retryAfterMs"
[[ $(grep -c '^method=tools/call name=echo tenant="" era=2025-11-25 outcome=ok code=0 us=[0-9]*$' "$err") == 2 ]] ||
  fail "two access-log lines for the served calls"
grep -q '^method=tools/call name=echo tenant="" era=2025-11-25 outcome=error code=-32600 us=' "$err" ||
  fail "an access-log line for the refusal"
if grep -q '^method=' <<<"$out"; then fail "access-log lines on stdout"; fi
echo "ok - --rate-limit refuses past the burst and --access-log logs every call on stderr"
