// SPDX-License-Identifier: BSL-1.0
// A small cluster for the peer tests (docs/scale-out.md): a real redis-server, instances
// of everything-server sharing their sessions through it, and nginx in front of them
// with the configuration docs/scale-out.md shows (round robin, no stickiness). Used by
// test/peer/cluster_client.mjs (the 1.32 client, 2025 sessions) and
// test/peer-modern/cluster.mjs (the 2.x client, 2026-07-28 requests).

import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { check, HttpServer, missingPrerequisite, sleep } from './harness.mjs';

/// Skips (or fails, under DROID_REQUIRE_PEERS=1) without nginx or redis-server; returns
/// their paths.
export function clusterPrerequisites() {
  const nginx = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => spawnSync(p, ['-v']).status === 0);
  if (!nginx) missingPrerequisite('nginx is not installed (apt-get install nginx)');
  const redisServer = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((p) => spawnSync(p, ['--version']).status === 0);
  if (!redisServer) missingPrerequisite('redis-server is not installed (apt-get install redis-server)');
  return { nginx, redisServer, redisCli: redisServer.replace(/redis-server$/, 'redis-cli') };
}

export const freePort = () => new Promise((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address();
    probe.close(() => resolve(port));
  });
});

/// The code block that follows the line "`name`:" on `page`.
function block(page, name) {
  const lines = page.split('\n');
  const at = lines.findIndex((l) => l.trim() === `\`${name}\`:`);
  if (at < 0) throw new Error(`docs/scale-out.md has no block named ${name}`);
  const open = lines.findIndex((l, i) => i > at && l.startsWith('```'));
  const close = lines.findIndex((l, i) => i > open && l.startsWith('```'));
  return lines.slice(open + 1, close).join('\n');
}

/// A cluster not started yet: `start()` runs redis-server, `count` instances of
/// `serverPath` (named i1, i2, ...; each an HttpServer with `.name` and `.port`) and nginx;
/// `url` is then the balancer's MCP URL; `stop()` kills everything and removes the files.
export class Cluster {
  constructor(serverPath, count = 3) {
    this.serverPath = serverPath;
    this.count = count;
    this.paths = clusterPrerequisites();
    this.dir = mkdtempSync(join(tmpdir(), 'droid-cluster-peer-'));
    this.instances = [];
    this.redis = undefined;
    this.proxy = undefined;
  }

  /// A redis-cli command's output (trimmed), against this cluster's Redis.
  redisCall(...args) {
    return spawnSync(this.paths.redisCli, ['-p', String(this.redisPort), '--raw', ...args], { encoding: 'utf8' }).stdout.trim();
  }

  /// Starts redis-server on `redisPort`, empty (no persistence), and waits until it
  /// accepts connections.
  async startRedis() {
    // DEBUG (local connections only): the fault suite stalls Redis with DEBUG SLEEP.
    this.redis = spawn(this.paths.redisServer, ['--port', String(this.redisPort), '--bind', '127.0.0.1', '--save', '',
      '--appendonly', 'no', '--enable-debug-command', 'local'], { stdio: ['ignore', 'pipe', 'inherit'] });
    // Its own line says when it accepts connections: waited for, not slept on.
    await new Promise((resolve, reject) => {
      const lines = createInterface({ input: this.redis.stdout });
      lines.on('line', (line) => { if (line.includes('Ready to accept connections')) resolve(); });
      this.redis.once('exit', () => reject(new Error('redis-server exited before accepting connections')));
    });
  }

  /// Kills redis-server (SIGKILL) and starts it again on the same port, empty: what a
  /// restart without persistence does to the instances.
  async restartRedis() {
    const old = this.redis;
    const gone = new Promise((resolve) => old.once('exit', resolve));
    old.kill('SIGKILL');
    await gone;
    await this.startRedis();
  }

  stop() {
    for (const i of this.instances) i.kill();
    this.proxy?.kill('SIGKILL');
    this.redis?.kill('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }

  async start() {
    const { dir } = this;
    this.redisPort = await freePort();
    this.proxyPort = await freePort();
    await this.startRedis();
    // The same sealing secret for every instance: a 2026 retry may land on any of them.
    writeFileSync(join(dir, 'state-secret'), 'a-secret-every-instance-shares-0123456789');
    for (let n = 1; n <= this.count; ++n) {
      const instance = new HttpServer(this.serverPath, ['--redis', `redis://127.0.0.1:${this.redisPort}`,
        '--instance-id', `i${n}`, '--threads', '2', '--state-secret-file', join(dir, 'state-secret')]);
      await instance.start();
      instance.name = `i${n}`;
      instance.port = Number(new URL(instance.url).port);
      this.instances.push(instance);
    }
    const page = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'scale-out.md'), 'utf8');
    let site = block(page, 'nginx-cluster.conf').replace('listen 127.0.0.1:8080;', `listen 127.0.0.1:${this.proxyPort};`);
    const upstream = this.instances.map((i) => `    server 127.0.0.1:${i.port};`).join('\n');
    site = site.replace(/( *server 127\.0\.0\.1:808[1-9];\n)+/, `${upstream}\n`);
    check(this.instances.every((i) => site.includes(`:${i.port};`)), 'the upstream block names every instance');
    writeFileSync(join(dir, 'site.conf'), site);
    for (const t of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, t));
    writeFileSync(join(dir, 'nginx.conf'), `daemon off;
master_process off;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path ${join(dir, 'body')};
  proxy_temp_path ${join(dir, 'proxy')};
  fastcgi_temp_path ${join(dir, 'fastcgi')};
  uwsgi_temp_path ${join(dir, 'uwsgi')};
  scgi_temp_path ${join(dir, 'scgi')};
  include ${join(dir, 'site.conf')};
}
`);
    const { nginx } = this.paths;
    const test = spawnSync(nginx, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log'), '-t']);
    check(test.status === 0, `nginx -t: ${test.stderr}`);
    this.proxy = spawn(nginx, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')], { stdio: 'ignore' });
    this.url = new URL(`http://127.0.0.1:${this.proxyPort}/mcp`);
    // Polled: nginx announces nothing once it listens (5 s guard).
    for (let i = 0; i < 100; ++i) {
      try {
        await fetch(`http://127.0.0.1:${this.proxyPort}/`);
        return;
      } catch {
        await sleep(50);
      }
    }
    check(false, `nginx did not answer: ${readFileSync(join(dir, 'error.log'), 'utf8')}`);
  }
}
