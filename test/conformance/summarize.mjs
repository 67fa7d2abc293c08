// SPDX-License-Identifier: BSL-1.0
// Reads the checks.json files one conformance run wrote (`-o <dir>`) and the console log
// of that run, prints the totals and every check that is not clean, and judges the run.
//
//   node summarize.mjs <results-dir> <console-log> <strict|json> <run-name>
//
// Why not trust the CLI's exit code: it ignores WARNINGs (strict runs forbid them:
// docs/conformance.md), and a scenario that throws writes no checks.json but may still not
// count as a FAILURE.
//
// strict: every scenario the console lists must have written checks, with no FAILURE and
//   no WARNING.
// json (the server answers each request with one JSON document, --json-response): the
//   same, except for the scenarios that need an event stream (a server-to-client request
//   or notification during a call). Those may fail, but only for that reason: where the
//   check recorded the tool's result, its text must be the framework's named refusal.
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const [dir, logPath, mode, runName] = process.argv.slice(2);
if (!dir || !logPath || !['strict', 'json'].includes(mode)) {
  console.error('usage: summarize.mjs <results-dir> <console-log> <strict|json> <run-name>');
  process.exit(2);
}

// Scenarios that cannot pass when every request gets a single JSON answer: the server
// must send something to the client while a tool call is still running. For a request
// (sampling, elicitation) the framework refuses by name, and the tool's result says so.
// Notifications (logs, progress) have no answer to carry a refusal: the framework drops
// them, so the result is the tool's normal one and only the suite's failure shows it.
const needsStream = new Map([
  ['tools-call-with-logging', 'notification'],     // notifications/message during the call
  ['tools-call-with-progress', 'notification'],    // notifications/progress during the call
  ['tools-call-sampling', 'request'],              // sampling/createMessage during the call
  ['tools-call-elicitation', 'request'],           // elicitation/create during the call
  ['elicitation-sep1034-defaults', 'request'],     // elicitation/create during the call
  ['elicitation-sep1330-enums', 'request'],        // elicitation/create during the call
]);
// The framework's refusal of a server-to-client request on a JSON-answering session
// names the setting that would allow it.
const refusal = /streaming::json/;

const statuses = ['SUCCESS', 'FAILURE', 'WARNING', 'SKIPPED', 'INFO'];
const scenarios = new Map();  // name -> { counts, checks }
for (const entry of existsSync(dir) ? readdirSync(dir) : []) {
  const m = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(entry);
  const file = join(dir, entry, 'checks.json');
  if (!m || !existsSync(file)) continue;
  const checks = JSON.parse(readFileSync(file, 'utf8'));
  const counts = Object.fromEntries(statuses.map((s) => [s, 0]));
  for (const c of checks) counts[c.status] = (counts[c.status] ?? 0) + 1;
  scenarios.set(m[1], { counts, checks });
}

// The console's summary lists every scenario that ran, including one that threw.
const log = existsSync(logPath) ? readFileSync(logPath, 'utf8') : '';
const listed = [...log.matchAll(/^[✓✗] ([^:]+): \d+ passed, \d+ failed/gmu)].map((m) => m[1]);
const cliTotal = /^Total: .*$/m.exec(log)?.[0] ?? '(no Total line)';

const problems = [];
const notes = [];
for (const name of listed)
  if (!scenarios.has(name)) problems.push(`${name}: listed by the suite but wrote no checks (it threw?)`);
if (listed.length === 0) problems.push('the suite printed no scenario summary (see the log above)');

const totals = Object.fromEntries(statuses.map((s) => [s, 0]));
for (const [name, { counts, checks }] of [...scenarios].sort()) {
  for (const s of statuses) totals[s] += counts[s];
  const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
  if (bad.length === 0) continue;
  const describe = (c) => `${c.status} ${c.id}: ${c.errorMessage ?? c.description ?? ''}`;
  if (mode === 'json' && needsStream.has(name) && bad.every((c) => c.status === 'FAILURE')) {
    const texts = bad
      .map((c) => c.details?.result?.content?.find?.((b) => b.type === 'text')?.text)
      .filter((t) => t !== undefined);
    const kind = needsStream.get(name);
    if (kind === 'request' && texts.some((t) => !refusal.test(t))) {
      problems.push(`${name} (needs a stream) failed, but not with the named refusal: ${texts.join(' / ')}`);
    } else {
      const how = kind === 'notification' ? 'notifications dropped (no answer to name a refusal in)'
                : texts.length ? 'refused by name' : 'refused (the suite does not record the result)';
      notes.push(`${name}: needs a stream; ${how} (${bad.map((c) => c.errorMessage).join('; ')})`);
    }
    continue;
  }
  for (const c of bad) problems.push(`${name}: ${describe(c)}`);
}

console.log(`conformance ${runName}: ${scenarios.size} scenarios; checks: ${totals.SUCCESS} passed, ` +
            `${totals.FAILURE} failed, ${totals.WARNING} warnings, ${totals.SKIPPED} skipped, ${totals.INFO} info` +
            ` [suite's own line: ${cliTotal}]`);
for (const n of notes) console.log(`  expected in JSON-response mode: ${n}`);
for (const p of problems) console.log(`  not ok: ${p}`);
console.log(problems.length ? `conformance ${runName}: FAILED (${problems.length} problem(s))`
                            : `conformance ${runName}: ok`);
process.exit(problems.length ? 1 : 0);
