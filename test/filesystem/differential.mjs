// SPDX-License-Identifier: BSL-1.0
// Differential test: the same sequence of calls, made by the official TypeScript SDK client
// (test/peer/node_modules), against the reference filesystem server (pinned in
// test/filesystem/package.json, run with this Node) and against examples/filesystem, each
// on a fresh copy of the same scratch directory. Answers are compared after the scratch
// paths, timestamps and random temporary names are replaced by placeholders.
//
//     node test/filesystem/differential.mjs build/examples/filesystem/filesystem-server
//
// What is compared: tools/list (names, titles, descriptions and annotations exactly;
// input schemas loosely: property names, types and `required`, since zod's generator and
// ours write JSON Schema in different forms); every tools/call result exactly (content,
// structuredContent, isError), except that a call whose arguments fail the schema is only
// required to be an error on both (each validator words its message its own way); the
// files both servers leave behind; and the allowed directories a client's roots set.
// Expected differences are listed in `expectedDifferences` with their reason; every other
// difference fails the test. DROID_PEER_TRACE=1 prints each reference answer on stderr.
// Prints `ok` / `not ok` lines and exits 1 on any failure; exit
// 77 (skipped) when the SDK or the reference server is missing, unless
// DROID_REQUIRE_PEERS=1, which makes that a failure.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, lstatSync, readlinkSync, rmSync, symlinkSync, writeFileSync, cpSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve as resolvePath } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isDeepStrictEqual } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const ours = process.argv[2] && resolvePath(process.argv[2]);
const sdkDir = join(here, '..', 'peer', 'node_modules', '@modelcontextprotocol', 'sdk', 'dist', 'esm');
const reference = join(here, 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');

function missing(why) {
  if (process.env.DROID_REQUIRE_PEERS === '1') {
    console.log(`not ok - prerequisites: ${why} (DROID_REQUIRE_PEERS=1, so this is a failure, not a skip)`);
    process.exit(1);
  }
  console.log(`# SKIP ${why}`);
  process.exit(77);
}
if (!ours || !existsSync(ours)) missing(`the example server was not given or does not exist: ${ours}`);
if (!existsSync(join(sdkDir, 'client', 'index.js'))) missing(`the TypeScript SDK is not installed; run \`npm ci --prefix test/peer\``);
if (!existsSync(reference)) missing(`the reference filesystem server is not installed; run \`npm ci --prefix test/filesystem\``);

const { Client } = await import(pathToFileURL(join(sdkDir, 'client', 'index.js')).href);
const { StdioClientTransport } = await import(pathToFileURL(join(sdkDir, 'client', 'stdio.js')).href);
const { ListRootsRequestSchema } = await import(pathToFileURL(join(sdkDir, 'types.js')).href);

let failures = 0;
let passes = 0;
const ok = (what) => { passes++; console.log(`ok - ${what}`); };
const notOk = (what, why) => { failures++; console.log(`not ok - ${what}\n${why.split('\n').map((l) => `#   ${l}`).join('\n')}`); };

// A hard stop, so a server that hangs fails the test instead of its timeout.
setTimeout(() => { notOk('watchdog', 'the test did not finish within 100 s'); process.exit(1); }, 100_000).unref();

// ---------------------------------------------------------------------------------------
// The scratch directory

const base = realpathSync(mkdtempSync(join(tmpdir(), 'droid-fs-diff-')));
process.on('exit', () => rmSync(base, { recursive: true, force: true }));

/// The template every run copies: text with and without a final newline, CRLF, a file
/// larger than the reference's 1 KiB tail block, invalid UTF-8, media, names that sort
/// differently by bytes and by locale, hidden files, symlinks in, out and dangling, and a
/// directory outside the allowed one.
function makeTemplate(dir) {
  const root = join(dir, 'root');
  const put = (rel, data) => { mkdirSync(dirname(join(dir, rel)), { recursive: true }); writeFileSync(join(dir, rel), data); };
  put('root/notes.txt', 'alpha\nbeta\ngamma\ndelta\n');
  put('root/noeol.txt', 'one\ntwo\nthree');
  put('root/crlf.txt', 'first\r\nsecond\r\nthird\r\n');
  put('root/big.txt', Array.from({ length: 300 }, (_, i) => `line ${i + 1} ${'x'.repeat(i % 17)}`).join('\n') + '\n');
  put('root/bad.txt', Buffer.from([0x61, 0xff, 0x62, 0xe2, 0x82, 0x0a, 0xf0, 0x9f, 0x98, 0x80, 0x0a]));
  put('root/code.py', 'def f():\n    if x:\n        return 1\n    return 2\n');
  put('root/long.txt', Array.from({ length: 40 }, (_, i) => `row ${i + 1}`).join('\n') + '\n');
  put('root/ticks.md', 'text\n```\ncode\n```\n');
  put('root/image.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 3]));
  put('root/song.MP3', Buffer.from('ID3fake'));
  put('root/data bin#1.dat', Buffer.from([0, 1, 2, 250, 251, 252]));
  put('root/B.txt', 'upper b\n');
  put('root/a.txt', 'lower a\n');
  put('root/_under.txt', 'underscore\n');
  put('root/10.log', 'ten\n');
  put('root/9.log', 'nine\n');
  put('root/.hidden', 'secret-ish\n');
  put('root/moveme.txt', 'to be moved\n');
  put('root/sub/inner.txt', 'inner\n');
  put('root/sub/deep/x.js', 'let x = 1;\n');
  put('root/sub/deep/y.txt', 'why\n');
  put('root/node_modules/pkg/index.js', 'module.exports = 1;\n');
  put('root/other-root/o.txt', 'other\n');
  put('root/tie.bin', Buffer.alloc(1152, 0x41));  // 1.125 KB: toFixed(2) rounds it up to 1.13
  put('root/café ünï.txt', 'accents\n');
  put('root/rep.txt', 'x\ny\nx\ny\nx\ny\n');
  // Lines from a three-letter alphabet: many equally short diffs, so the hunks show
  // whether the same one of them was chosen.
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
  put('root/random.txt', Array.from({ length: 200 }, () => 'abc'[next() % 3]).join('\n') + '\n');
  mkdirSync(join(root, 'empty'));
  put('outside/secret.txt', 'do not read\n');
  symlinkSync(join(root, 'notes.txt'), join(root, 'link_inside'));
  symlinkSync(join(dir, 'outside'), join(root, 'link_outside'));
  symlinkSync(join(dir, 'outside', 'secret.txt'), join(root, 'link_file_outside'));
  symlinkSync(join(root, 'nowhere'), join(root, 'link_dangling'));
}

const template = join(base, 'template');
mkdirSync(template);
makeTemplate(template);

/// A fresh copy of the template for one run; symlinks are re-made to point into the copy.
function freshCopy(name) {
  const dir = join(base, name);
  cpSync(template, dir, { recursive: true, verbatimSymlinks: true });
  for (const link of ['link_inside', 'link_outside', 'link_file_outside', 'link_dangling']) {
    const at = join(dir, 'root', link);
    const target = readlinkSync(at).replace(template, dir);
    rmSync(at);
    symlinkSync(target, at);
  }
  return dir;
}

/// Every file under `dir` with its contents (or link target), for comparing what the two
/// servers left behind.
function snapshot(dir, prefix = '') {
  const out = {};
  for (const name of readdirSync(join(dir, prefix)).sort()) {
    const rel = prefix ? `${prefix}/${name}` : name;
    const st = lstatSync(join(dir, rel));
    if (st.isSymbolicLink()) out[rel] = `-> ${readlinkSync(join(dir, rel)).replace(dir, '<SCRATCH>')}`;
    else if (st.isDirectory()) Object.assign(out, { [rel + '/']: (st.mode & 0o777).toString(8) }, snapshot(dir, rel));
    else out[rel] = `${(st.mode & 0o777).toString(8)} ${readFileSync(join(dir, rel)).toString('base64')}`;
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Running a server

/// Connects the SDK client to one server. `roots`, when given, is a function returning the
/// client's current roots, and the client declares the roots capability.
async function connect(kind, args, roots) {
  const command = kind === 'reference' ? process.execPath : ours;
  const transport = new StdioClientTransport({
    command,
    args: kind === 'reference' ? [reference, ...args] : args,
    cwd: base,
    env: { ...process.env, TZ: 'UTC' },
    stderr: 'pipe',
  });
  const capabilities = roots ? { roots: { listChanged: true } } : {};
  const client = new Client({ name: 'differential', version: '1.0.0' }, { capabilities });
  const log = stderrLines(transport.stderr);
  let rootsAsked = 0;
  if (roots) {
    client.setRequestHandler(ListRootsRequestSchema, () => {
      rootsAsked++;
      const r = roots();
      return r === 'never' ? new Promise(() => {}) : { roots: r };
    });
  }
  await client.connect(transport);
  return { client, rootsAsked: () => rootsAsked, log };
}

/// The lines a server writes on stderr, and a wait for the first one from a mark on that
/// matches. The reference updates its roots in the background and says on stderr when it
/// is done, which is the only sign a test can wait for instead of sleeping.
function stderrLines(stream) {
  const lines = [];
  const waiters = new Set();
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    partial += chunk;
    for (let i; (i = partial.indexOf('\n')) >= 0;) {
      lines.push(partial.slice(0, i));
      partial = partial.slice(i + 1);
    }
    for (const check of [...waiters]) check();
  });
  return {
    mark: () => lines.length,
    after: (from, pattern) => new Promise((resolve) => {
      const check = () => {
        const hit = lines.slice(from).find((l) => pattern.test(l));
        if (hit !== undefined) { waiters.delete(check); resolve(hit); }
      };
      waiters.add(check);
      check();
    }),
  };
}

/// The result of one call, or the JSON-RPC error it got, as plain JSON.
async function call(client, name, args) {
  try {
    const r = await client.callTool({ name, arguments: args });
    const out = { content: r.content };
    if (r.structuredContent !== undefined) out.structuredContent = r.structuredContent;
    if (r.isError) out.isError = true;
    return out;
  } catch (error) {
    return { jsonRpcError: error.code ?? String(error) };
  }
}

/// Scratch paths, times and random names replaced, so the two runs can be compared.
function normalise(value, dir) {
  const text = JSON.stringify(value)
    .split(dir).join('<SCRATCH>')
    .replace(/(created|modified|accessed): [A-Z][a-z]{2} [A-Z][a-z]{2} \d{2} \d{4} \d{2}:\d{2}:\d{2} GMT[+-]\d{4} \([^)]*\)/g, '$1: <TIME>')
    .replace(/\.[0-9a-f]{32}\.tmp/g, '.<HEX>.tmp');
  return JSON.parse(text);
}

// ---------------------------------------------------------------------------------------
// The sequence

/// Each step: [label, tool, arguments, how to compare]. `schema` steps only require both
/// answers to be errors. Paths use R (the allowed directory) and O (outside it).
function sequence(R, O) {
  const S = 'schema';
  return [
    ['list_allowed_directories', 'list_allowed_directories', {}],
    ['read_text_file whole', 'read_text_file', { path: `${R}/notes.txt` }],
    ['read_text_file relative', 'read_text_file', { path: 'notes.txt' }],
    ['read_text_file head 2', 'read_text_file', { path: `${R}/notes.txt`, head: 2 }],
    ['read_text_file tail 2 (final newline)', 'read_text_file', { path: `${R}/notes.txt`, tail: 2 }],
    ['read_text_file tail 3 of a file without final newline', 'read_text_file', { path: `${R}/noeol.txt`, tail: 3 }],
    ['read_text_file head 5 of a file without final newline', 'read_text_file', { path: `${R}/noeol.txt`, head: 5 }],
    ['read_text_file tail across 1 KiB blocks', 'read_text_file', { path: `${R}/big.txt`, tail: 90 }],
    ['read_text_file head of a big file', 'read_text_file', { path: `${R}/big.txt`, head: 3 }],
    ['read_text_file tail of CRLF', 'read_text_file', { path: `${R}/crlf.txt`, tail: 2 }],
    ['read_text_file head of CRLF', 'read_text_file', { path: `${R}/crlf.txt`, head: 2 }],
    ['read_text_file head 0 reads everything', 'read_text_file', { path: `${R}/noeol.txt`, head: 0 }],
    ['read_text_file head and tail', 'read_text_file', { path: `${R}/notes.txt`, head: 1, tail: 1 }],
    ['read_text_file invalid UTF-8', 'read_text_file', { path: `${R}/bad.txt` }],
    ['read_text_file missing file', 'read_text_file', { path: `${R}/missing.txt` }],
    ['read_text_file a directory', 'read_text_file', { path: `${R}/sub` }],
    ['read_text_file ../ relative escape', 'read_text_file', { path: '../outside/secret.txt' }],
    ['read_text_file ../ absolute escape', 'read_text_file', { path: `${R}/../outside/secret.txt` }],
    ['read_text_file /etc/passwd', 'read_text_file', { path: '/etc/passwd' }],
    ['read_text_file a sibling prefix', 'read_text_file', { path: `${R}-evil/x` }],
    ['read_text_file through a symlink to outside', 'read_text_file', { path: `${R}/link_outside/secret.txt` }],
    ['read_text_file a symlink to an outside file', 'read_text_file', { path: `${R}/link_file_outside` }],
    ['read_text_file a symlink inside', 'read_text_file', { path: `${R}/link_inside` }],
    ['read_text_file a dangling symlink', 'read_text_file', { path: `${R}/link_dangling` }],
    ['read_text_file below a file', 'read_text_file', { path: `${R}/notes.txt/x` }],
    ['read_text_file a Windows path', 'read_text_file', { path: 'C:\\Windows\\win.ini' }],
    ['read_text_file a number as path', 'read_text_file', { path: 1 }, S],
    ['read_file (deprecated alias)', 'read_file', { path: `${R}/notes.txt`, head: 1 }],
    ['read_media_file png', 'read_media_file', { path: `${R}/image.png` }],
    ['read_media_file mp3 (upper-case extension)', 'read_media_file', { path: `${R}/song.MP3` }],
    ['read_media_file other binary (file URI escaping)', 'read_media_file', { path: `${R}/data bin#1.dat` }],
    ['read_media_file missing', 'read_media_file', { path: `${R}/missing.png` }],
    ['read_media_file outside', 'read_media_file', { path: `${O}/secret.txt` }],
    ['read_multiple_files mixed', 'read_multiple_files', { paths: [`${R}/notes.txt`, 'missing.txt', '../outside/secret.txt', `${R}/a.txt`] }],
    ['read_multiple_files empty list', 'read_multiple_files', { paths: [] }, S],
    ['write_file new', 'write_file', { path: `${R}/new.txt`, content: 'fresh\ncontent' }],
    ['write_file overwrite', 'write_file', { path: `${R}/a.txt`, content: 'replaced\n' }],
    ['write_file relative', 'write_file', { path: 'sub/rel.txt', content: 'relative\n' }],
    ['write_file into a missing directory', 'write_file', { path: `${R}/nodir/x.txt`, content: 'x' }],
    ['write_file onto a directory', 'write_file', { path: `${R}/empty`, content: 'x' }],
    ['write_file outside', 'write_file', { path: `${R}/../outside/evil.txt`, content: 'x' }],
    ['write_file through a symlink to outside', 'write_file', { path: `${R}/link_outside/evil.txt`, content: 'x' }],
    ['write_file a missing argument', 'write_file', { path: `${R}/x.txt` }, S],
    ['edit_file dry run', 'edit_file', { path: `${R}/notes.txt`, edits: [{ oldText: 'beta', newText: 'BETA' }], dryRun: true }],
    ['edit_file applied', 'edit_file', { path: `${R}/notes.txt`, edits: [{ oldText: 'gamma\n', newText: 'gamma\nepsilon\n' }] }],
    ['edit_file several edits', 'edit_file', { path: `${R}/long.txt`, edits: [{ oldText: 'row 2\n', newText: '' }, { oldText: 'row 30', newText: 'row thirty\nrow 30.5' }] }],
    ['edit_file whitespace-flexible match', 'edit_file', { path: `${R}/code.py`, edits: [{ oldText: 'if x:\n    return 1', newText: 'if y:\n      return 10\n    return 11' }], dryRun: true }],
    ['edit_file no final newline', 'edit_file', { path: `${R}/noeol.txt`, edits: [{ oldText: 'three', newText: 'THREE' }] }],
    ['edit_file CRLF', 'edit_file', { path: `${R}/crlf.txt`, edits: [{ oldText: 'second\r\n', newText: 'middle\r\n' }], dryRun: true }],
    ['edit_file backticks in the diff', 'edit_file', { path: `${R}/ticks.md`, edits: [{ oldText: 'code', newText: '````' }], dryRun: true }],
    ['edit_file an ambiguous diff', 'edit_file', { path: `${R}/rep.txt`, edits: [{ oldText: 'y\nx\ny\n', newText: 'z\n' }], dryRun: true }],
    ['edit_file many ambiguous hunks', 'edit_file', { path: `${R}/random.txt`, edits: [
      { oldText: 'a\nb\nc\n', newText: 'c\nb\na\nb\n' }, { oldText: 'c\nc\n', newText: 'a\n' },
      { oldText: 'b\na\na\n', newText: '' }, { oldText: 'a\nc\nb\na\n', newText: 'b\nc\nc\nb\na\nc\n' }] }],
    ['edit_file no change', 'edit_file', { path: `${R}/a.txt`, edits: [{ oldText: 'replaced', newText: 'replaced' }], dryRun: true }],
    ['edit_file no match', 'edit_file', { path: `${R}/notes.txt`, edits: [{ oldText: 'zeta', newText: 'eta' }] }],
    ['edit_file outside', 'edit_file', { path: `${O}/secret.txt`, edits: [{ oldText: 'do', newText: 'did' }] }],
    ['edit_file missing edits', 'edit_file', { path: `${R}/notes.txt` }, S],
    ['create_directory nested', 'create_directory', { path: `${R}/made/a/b` }],
    ['create_directory existing', 'create_directory', { path: `${R}/sub` }],
    ['create_directory onto a file', 'create_directory', { path: `${R}/notes.txt` }],
    ['create_directory below a file', 'create_directory', { path: `${R}/notes.txt/x` }],
    ['create_directory outside', 'create_directory', { path: `${O}/made` }],
    ['list_directory root', 'list_directory', { path: R }],
    ['list_directory sub', 'list_directory', { path: `${R}/sub` }],
    ['list_directory missing', 'list_directory', { path: `${R}/nope` }],
    ['list_directory a file', 'list_directory', { path: `${R}/notes.txt` }],
    ['list_directory outside', 'list_directory', { path: O }],
    ['list_directory_with_sizes by name', 'list_directory_with_sizes', { path: R }],
    ['list_directory_with_sizes by size', 'list_directory_with_sizes', { path: R, sortBy: 'size' }],
    ['list_directory_with_sizes empty', 'list_directory_with_sizes', { path: `${R}/empty` }],
    ['list_directory_with_sizes bad sortBy', 'list_directory_with_sizes', { path: R, sortBy: 'date' }, S],
    ['directory_tree', 'directory_tree', { path: R }],
    ['directory_tree excluding a name', 'directory_tree', { path: R, excludePatterns: ['node_modules', 'deep'] }],
    ['directory_tree excluding a glob', 'directory_tree', { path: `${R}/sub`, excludePatterns: ['*.txt'] }],
    ['directory_tree excluding **', 'directory_tree', { path: R, excludePatterns: ['**/*.js', '.hidden'] }],
    ['directory_tree outside', 'directory_tree', { path: `${R}/link_outside` }],
    ['move_file', 'move_file', { source: `${R}/moveme.txt`, destination: `${R}/sub/moved.txt` }],
    ['move_file onto an existing file', 'move_file', { source: `${R}/B.txt`, destination: `${R}/a.txt` }],
    ['move_file onto a dangling symlink', 'move_file', { source: `${R}/B.txt`, destination: `${R}/link_dangling` }],
    ['move_file missing source', 'move_file', { source: `${R}/ghost.txt`, destination: `${R}/ghost2.txt` }],
    ['move_file out', 'move_file', { source: `${R}/B.txt`, destination: `${O}/B.txt` }],
    ['move_file in from outside', 'move_file', { source: `${O}/secret.txt`, destination: `${R}/stolen.txt` }],
    ['search_files *.txt', 'search_files', { path: R, pattern: '*.txt' }],
    ['search_files **/*.js', 'search_files', { path: R, pattern: '**/*.js' }],
    ['search_files with excludes', 'search_files', { path: R, pattern: '**/*.txt', excludePatterns: ['sub/**', 'node_modules'] }],
    ['search_files braces and classes', 'search_files', { path: R, pattern: '{a,B}.txt' }],
    ['search_files character class', 'search_files', { path: R, pattern: '[0-9]*.log' }],
    ['search_files **', 'search_files', { path: `${R}/sub`, pattern: '**' }],
    ['search_files no match', 'search_files', { path: R, pattern: 'nothing-*' }],
    ['search_files a file as root', 'search_files', { path: `${R}/notes.txt`, pattern: '*' }],
    ['search_files outside', 'search_files', { path: O, pattern: '*' }],
    ['get_file_info file', 'get_file_info', { path: `${R}/notes.txt` }],
    ['get_file_info directory', 'get_file_info', { path: `${R}/sub` }],
    ['get_file_info missing', 'get_file_info', { path: `${R}/missing` }],
    ['get_file_info outside', 'get_file_info', { path: `${O}/secret.txt` }],
    ['read_text_file a trailing slash on a file', 'read_text_file', { path: `${R}/notes.txt/` }],
    ['read_text_file ~ (outside)', 'read_text_file', { path: '~/nothing-here' }],
    ['read_text_file a quoted path', 'read_text_file', { path: '"notes.txt"' }],
    ['read_text_file a dot path inside', 'read_text_file', { path: `${R}/./sub/../notes.txt` }],
    ['write_file Unicode content', 'write_file', { path: `${R}/unicode.txt`, content: 'héllo wörld ✓ 😀\n' }],
    ['read_text_file Unicode content', 'read_text_file', { path: 'unicode.txt' }],
    ['read_multiple_files a directory and a symlink', 'read_multiple_files', { paths: [`${R}/sub`, `${R}/link_inside`, `${R}/link_outside/secret.txt`] }],
    ['list_directory a trailing slash', 'list_directory', { path: `${R}/sub/` }],
    ['list_directory_with_sizes sub', 'list_directory_with_sizes', { path: `${R}/sub` }],
    ['directory_tree relative', 'directory_tree', { path: 'sub' }],
    ['directory_tree excluding a path', 'directory_tree', { path: R, excludePatterns: ['sub/deep', 'node_modules', 'made'] }],
    ['search_files relative', 'search_files', { path: 'sub', pattern: 'deep/*' }],
    ['search_files negation', 'search_files', { path: `${R}/sub`, pattern: '!**/*.txt' }],
    ['search_files a comment', 'search_files', { path: R, pattern: '#*.txt' }],
    ['search_files ? and a range', 'search_files', { path: R, pattern: '?.{log,txt}' }],
    ['get_file_info a symlink inside', 'get_file_info', { path: `${R}/link_inside` }],
    ['create_directory through a symlink to outside', 'create_directory', { path: `${R}/link_outside/new` }],
    ['move_file a directory', 'move_file', { source: `${R}/other-root`, destination: `${R}/sub/other` }],
    ['list_directory after the moves', 'list_directory', { path: `${R}/sub` }],
    ['an unknown tool', 'no_such_tool', {}],
  ];
}

/// Differences that are known and explained (examples/filesystem/README.md, "Differences").
const expectedDifferences = {
  'an unknown tool': 'the reference answers an unknown tool with an isError result; protocol_droid answers -32602 Unknown tool, as MCP specifies',
};

function compareResults(label, how, a, b) {
  if (process.env.DROID_PEER_TRACE === '1') console.error(`# ${label}\n${JSON.stringify(a, null, 1)}`);
  if (expectedDifferences[label]) {
    if (isDeepStrictEqual(a, b)) notOk(label, `expected a known difference (${expectedDifferences[label]}) but both answered the same`);
    else ok(`${label} (known difference: ${expectedDifferences[label]})`);
    return;
  }
  if (how === 'schema') {
    if ((a.isError || a.jsonRpcError) && (b.isError || b.jsonRpcError)) ok(`${label} (both refuse the arguments)`);
    else notOk(label, `reference: ${JSON.stringify(a)}\nours:      ${JSON.stringify(b)}`);
    return;
  }
  if (isDeepStrictEqual(a, b)) ok(label);
  else notOk(label, `reference: ${JSON.stringify(a)}\nours:      ${JSON.stringify(b)}`);
}

// ---------------------------------------------------------------------------------------
// tools/list

function schemaShape(s) {
  const props = {};
  for (const [k, v] of Object.entries(s?.properties ?? {})) {
    props[k] = { type: v.type, items: v.items?.type, enum: v.enum, description: v.description, default: v.default };
  }
  return { type: s?.type, properties: props, required: [...(s?.required ?? [])].sort() };
}

/// protocol_droid also writes the title into `annotations.title` (where 2025-03-26 clients
/// look for it); that copy is left out of the comparison when it is the tool's title.
function toolShape(t) {
  const annotations = { ...t.annotations };
  if (annotations.title === t.title) delete annotations.title;
  return { name: t.name, title: t.title, description: t.description, annotations,
           input: schemaShape(t.inputSchema), output: schemaShape(t.outputSchema) };
}

async function compareToolLists() {
  const dirA = freshCopy('list-reference'), dirB = freshCopy('list-ours');
  const a = await connect('reference', [join(dirA, 'root')]);
  const b = await connect('ours', [join(dirB, 'root')]);
  const la = (await a.client.listTools()).tools, lb = (await b.client.listTools()).tools;
  await a.client.close();
  await b.client.close();
  const byName = (l) => Object.fromEntries(l.map((t) => [t.name, toolShape(t)]));
  const ta = byName(la), tb = byName(lb);
  const names = [...new Set([...Object.keys(ta), ...Object.keys(tb)])].sort();
  for (const n of names) {
    if (!ta[n] || !tb[n]) notOk(`tools/list: ${n}`, `listed by ${ta[n] ? 'the reference only' : 'ours only'}`);
    else if (isDeepStrictEqual(ta[n], tb[n])) ok(`tools/list: ${n}`);
    else notOk(`tools/list: ${n}`, `reference: ${JSON.stringify(ta[n])}\nours:      ${JSON.stringify(tb[n])}`);
  }
}

// ---------------------------------------------------------------------------------------
// The tool calls, on fresh copies

async function runSequence(kind) {
  const dir = freshCopy(`calls-${kind}`);
  const R = join(dir, 'root'), O = join(dir, 'outside');
  const { client } = await connect(kind, [R]);
  const answers = [];
  for (const [label, tool, args, how] of sequence(R, O)) answers.push([label, how, normalise(await call(client, tool, args), dir)]);
  await client.close();
  return { answers, files: normalise(snapshot(dir), dir) };
}

async function compareCalls() {
  const a = await runSequence('reference');
  const b = await runSequence('ours');
  for (let i = 0; i < a.answers.length; i++) compareResults(a.answers[i][0], a.answers[i][1], a.answers[i][2], b.answers[i][2]);
  const keys = [...new Set([...Object.keys(a.files), ...Object.keys(b.files)])].sort();
  const diffs = keys.filter((k) => a.files[k] !== b.files[k]).map((k) => `${k}: reference ${a.files[k]} / ours ${b.files[k]}`);
  if (diffs.length === 0) ok('both servers leave the same files behind');
  else notOk('both servers leave the same files behind', diffs.join('\n'));
}

// ---------------------------------------------------------------------------------------
// Roots

/// The roots outcomes both servers write on stderr once they have handled a roots answer.
const rootsSettled = /^(Updated allowed directories|No valid root directories|Failed to request roots)/;

/// Waits, for the reference only, until it has handled the roots answer that `from` (a
/// log mark taken before the roots were asked for) precedes. Ours fetches the roots
/// lazily, at the next tool call, which then waits for them; the reference fetches them
/// in the background and its calls meanwhile see the old list.
async function rootsHandled(kind, log, from) {
  if (kind === 'reference') await log.after(from, rootsSettled);
}

async function runRoots(kind) {
  const dir = freshCopy(`roots-${kind}`);
  const R = join(dir, 'root');
  let roots = [{ uri: pathToFileURL(join(R, 'sub')).href, name: 'sub' }];
  const { client, log } = await connect(kind, [R], () => roots);
  const out = [];
  const record = async (label, value) => out.push([label, normalise(await value, dir)]);
  const listChanged = async () => {
    const from = log.mark();
    await client.sendRootsListChanged();
    await rootsHandled(kind, log, from);
  };
  await rootsHandled(kind, log, 0);
  await record('roots: the client\'s roots replace the arguments', call(client, 'list_allowed_directories', {}));
  await record('roots: outside the root is refused', call(client, 'read_text_file', { path: `${R}/notes.txt` }));
  await record('roots: inside the root is read', call(client, 'read_text_file', { path: `${R}/sub/inner.txt` }));
  roots = [{ uri: pathToFileURL(join(R, 'other-root')).href }, { uri: pathToFileURL(join(R, 'missing')).href },
           { uri: pathToFileURL(join(R, 'notes.txt')).href }, { uri: pathToFileURL(join(R, 'sub', 'deep')).href }];
  await listChanged();
  await record('roots: list_changed replaces them again (files and missing paths skipped)', call(client, 'list_allowed_directories', {}));
  await record('roots: relative paths resolve against the first root', call(client, 'read_text_file', { path: 'o.txt' }));
  roots = [{ uri: pathToFileURL(join(R, 'missing')).href }];
  await listChanged();
  await record('roots: roots with no usable directory leave the list unchanged', call(client, 'list_allowed_directories', {}));
  // MCP roots are file:// URIs; an answer with any other URI is refused whole.
  roots = [{ uri: join(R, 'sub') }, { uri: pathToFileURL(join(R, 'sub')).href }];
  await listChanged();
  await record('roots: an answer with a root that is not a file:// URI is refused whole', call(client, 'list_allowed_directories', {}));
  await client.close();
  return out;
}

async function runNoDirectories(kind) {
  const dir = freshCopy(`nodirs-${kind}`);
  const { client } = await connect(kind, []);
  const out = [];
  out.push(['no directories: none are listed', normalise(await call(client, 'list_allowed_directories', {}), dir)]);
  out.push(['no directories: everything is refused', normalise(await call(client, 'read_text_file', { path: `${dir}/root/notes.txt` }), dir)]);
  await client.close();
  return out;
}

/// A client that declares roots but never answers roots/list: the tools still run, on
/// the directories from the arguments (ours waits 5 s for the answer first).
async function runUnansweredRoots(kind) {
  const dir = freshCopy(`unanswered-${kind}`);
  const { client } = await connect(kind, [join(dir, 'root')], () => 'never');
  const out = [];
  out.push(['unanswered roots: the arguments stay', normalise(await call(client, 'list_allowed_directories', {}), dir)]);
  out.push(['unanswered roots: and are used', normalise(await call(client, 'read_text_file', { path: 'a.txt' }), dir)]);
  await client.close();
  return out;
}

async function compareRoots() {
  for (const run of [runRoots, runNoDirectories, runUnansweredRoots]) {
    const a = await run('reference');
    const b = await run('ours');
    for (let i = 0; i < a.length; i++) compareResults(a[i][0], undefined, a[i][1], b[i][1]);
  }
}

function startsWithBadArgument() {
  const r = spawnSync(ours, [join(base, 'does-not-exist')], { encoding: 'utf8', input: '' });
  const s = spawnSync(process.execPath, [reference, join(base, 'does-not-exist')], { encoding: 'utf8', input: '' });
  if (r.status === 1 && s.status === 1) ok('an inaccessible directory as the only argument ends the server with status 1');
  else notOk('an inaccessible directory as the only argument ends the server with status 1', `reference ${s.status}, ours ${r.status}`);
}

try {
  await compareToolLists();
  await compareCalls();
  await compareRoots();
  startsWithBadArgument();
} catch (error) {
  notOk('the differential run', error?.stack ?? String(error));
}
console.log(`${passes} passed, ${failures} failed`);
process.exit(failures ? 1 : 0);
