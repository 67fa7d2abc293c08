#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Drives the filesystem server over stdio on a scratch directory: initialize, tools/list,
# a write, a read, a dry-run edit, and a path that climbs out, which must be refused.
set -euo pipefail
server=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
dir=$(cd "$dir" && pwd -P)
printf 'alpha\nbeta\n' >"$dir/notes.txt"
out=$(printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"smoke","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
  '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"notes.txt","head":1}}}' \
  '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"../../etc/passwd"}}}' \
  '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"edit_file","arguments":{"path":"notes.txt","edits":[{"oldText":"beta","newText":"gamma"}],"dryRun":true}}}' \
  '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"list_allowed_directories","arguments":{}}}' \
  | (cat; sleep 0.5) | "$server" "$dir" 2>/dev/null)
fail() { echo "not ok - $1"; echo "$out"; exit 1; }
grep -q '"id":1,"result":{"protocolVersion":"2025-11-25"' <<<"$out" || fail "initialize"
grep -q '"name":"directory_tree"' <<<"$out" || fail "tools/list lists directory_tree"
grep -q '"id":3,"result":{"content":\[{"type":"text","text":"alpha"}\]' <<<"$out" || fail "head reads the first line"
grep -q '"id":4,"result":{"content":\[{"type":"text","text":"Access denied - path outside allowed directories: /etc/passwd not in ' <<<"$out" ||
  fail "a path out of the allowed directory is refused"
grep -q '"id":5,.*-beta\\n+gamma' <<<"$out" || fail "a dry-run edit shows its diff"
[[ $(cat "$dir/notes.txt") == $'alpha\nbeta' ]] || fail "a dry run writes nothing"
grep -q "\"id\":6,\"result\":{\"content\":\[{\"type\":\"text\",\"text\":\"Allowed directories:\\\\n$dir\"" <<<"$out" ||
  fail "list_allowed_directories names the argument"
echo "ok - the filesystem server reads, refuses a way out, previews an edit and lists its directory"
