// SPDX-License-Identifier: BSL-1.0
// Peer test: the official MCP TypeScript SDK client authorizes itself to everything-server
// as the MCP authorization specification says, against an authorization server run here.
//
//     node test/peer/auth_client.mjs build/examples/everything-server
//
// The authorization server (in this script, on a loopback port) publishes RFC 8414
// metadata, a JSON Web Key Set and a token endpoint for the client_credentials grant; it
// signs RS256 access tokens for the `resource` it is asked for. everything-server runs
// with --auth-issuer, --auth-audience and --auth-jwks (the key set fetched from its URL).
// The SDK client, given only a client id and secret (its ClientCredentialsProvider), must
// find everything else itself: the 401's challenge, the Protected Resource Metadata, the
// authorization server's metadata, the token; calling a tool that needs the scope `admin`
// it gets 403 `insufficient_scope`, retries, and is refused again (that client may not
// have `admin`). A user of the authorization code grant (PKCE; this script plays the
// browser) signs in, calls the same tool, is sent to sign in again for the scope the 403
// named, and the call goes through on the same session. Raw requests check tokens that
// must fail (forged, expired, for another audience, from another issuer, `alg: none`).
// Exit 77 (skipped) without the SDK, unless DROID_REQUIRE_PEERS=1.

import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';

import { check, exitWithSummary, HttpServer, loadSdk, show, startWatchdog, step, textOf } from './harness.mjs';

const serverPath = process.argv[2];
if (!serverPath || process.argv.length > 3) {
  console.log('not ok - arguments: usage: node auth_client.mjs <path to everything-server>');
  process.exit(1);
}

const [{ Client }, { StreamableHTTPClientTransport }, { ClientCredentialsProvider }] = await loadSdk(
  (specifier) => import(specifier),
  ['@modelcontextprotocol/sdk/client/index.js', '@modelcontextprotocol/sdk/client/streamableHttp.js',
    '@modelcontextprotocol/sdk/client/auth-extensions.js']);

// ---------------------------------------------------------------------------------------
// The authorization server

const b64url = (data) => Buffer.from(data).toString('base64url');
const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'key-1', alg: 'RS256', use: 'sig' };

/// A compact JWS of `claims` under `header`, signed by `key` (RS256).
function jwt(claims, { key = privateKey, header = { alg: 'RS256', kid: 'key-1', typ: 'at+jwt' } } = {}) {
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  if (header.alg === 'none') return `${input}.`;
  return `${input}.${b64url(sign('sha256', Buffer.from(input), key))}`;
}

/// The clients this authorization server knows, and the scopes each may have: `reader`, a
/// confidential client of the client_credentials grant, and `desk`, a public client of
/// the authorization code grant with PKCE, whose user (always `ada` here: the consent
/// screen approves at once) may have `admin` too.
const clients = {
  reader: { secret: 'reader-secret', scopes: ['mcp:read'] },
  desk: { secret: null, scopes: ['mcp:read', 'admin'] },
};
const tokenRequests = [];
const codes = new Map();
let jwksFetches = 0;
let issuer;

const as = createServer((req, res) => {
  const answer = (status, body) => {
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(JSON.stringify(body));
  };
  const url = new URL(req.url, issuer);
  if (req.method === 'GET' && url.pathname === '/.well-known/oauth-authorization-server') {
    return answer(200, {
      issuer,
      authorization_endpoint: `${issuer}/authorize`,  // required by RFC 8414; never used here
      token_endpoint: `${issuer}/token`,
      jwks_uri: `${issuer}/jwks`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'client_credentials'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'none'],
      scopes_supported: ['mcp:read', 'admin'],
    });
  }
  if (req.method === 'GET' && url.pathname === '/jwks') {
    jwksFetches += 1;
    return answer(200, { keys: [jwk] });
  }
  if (req.method === 'GET' && url.pathname === '/authorize') {
    // The user consents at once; the scope granted is what was asked that the client may have.
    const q = url.searchParams;
    const client = clients[q.get('client_id')];
    if (!client || q.get('response_type') !== 'code' || q.get('code_challenge_method') !== 'S256')
      return answer(400, { error: 'invalid_request' });
    const code = createHash('sha256').update(`${Math.random()}`).digest('hex');
    const asked = (q.get('scope') ?? '').split(' ').filter(Boolean);
    codes.set(code, { client: q.get('client_id'), challenge: q.get('code_challenge'), resource: q.get('resource'),
      scope: asked.filter((x) => client.scopes.includes(x)), asked: q.get('scope') });
    const back = new URL(q.get('redirect_uri'));
    back.searchParams.set('code', code);
    if (q.get('state')) back.searchParams.set('state', q.get('state'));
    res.writeHead(302, { location: back.href });
    return res.end();
  }
  if (req.method === 'POST' && url.pathname === '/token') {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      const form = new URLSearchParams(body);
      const now = Math.floor(Date.now() / 1000);
      const issue = (sub, clientId, scopes, audience) => {
        const token = jwt({
          iss: issuer, sub, client_id: clientId, aud: audience, scope: scopes.join(' '), iat: now, exp: now + 300,
          jti: createHash('sha256').update(`${sub}${now}${Math.random()}`).digest('hex'),
        });
        return answer(200, { access_token: token, token_type: 'Bearer', expires_in: 300, scope: scopes.join(' ') });
      };
      if (form.get('grant_type') === 'authorization_code') {
        const grant = codes.get(form.get('code'));
        codes.delete(form.get('code'));
        const verifier = createHash('sha256').update(form.get('code_verifier') ?? '').digest('base64url');
        if (!grant || grant.client !== form.get('client_id') || verifier !== grant.challenge)
          return answer(400, { error: 'invalid_grant' });
        tokenRequests.push({ client: grant.client, scope: grant.asked, resource: grant.resource });
        return issue('ada', grant.client, grant.scope, grant.resource);
      }
      const [id, secret] = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64')
        .toString().split(':').map(decodeURIComponent);
      const client = clients[id];
      if (!client || !client.secret || client.secret !== secret) return answer(401, { error: 'invalid_client' });
      if (form.get('grant_type') !== 'client_credentials') return answer(400, { error: 'unsupported_grant_type' });
      // No scope asked (the SDK's client_credentials provider asks none): the client's
      // own, as RFC 6749 §3.3 lets an authorization server default.
      const asked = (form.get('scope') ?? '').split(' ').filter(Boolean);
      const granted = asked.length ? asked.filter((x) => client.scopes.includes(x)) : client.scopes;
      tokenRequests.push({ client: id, scope: form.get('scope'), resource: form.get('resource') });
      return issue(id, id, granted, form.get('resource'));
    });
    return undefined;
  }
  return answer(404, { error: 'not_found' });
});
await new Promise((resolve) => as.listen(0, '127.0.0.1', resolve));
issuer = `http://127.0.0.1:${as.address().port}`;

// ---------------------------------------------------------------------------------------
// The MCP server, on a port chosen first: its resource identifier (the audience its
// tokens must name) is its URL, which the SDK checks against the metadata.

const freePort = () => new Promise((resolve) => {
  const probe = createNetServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address();
    probe.close(() => resolve(port));
  });
});
const port = await freePort();
const resource = `http://127.0.0.1:${port}/mcp`;
const server = new HttpServer(serverPath);
server.args = ['--http', `127.0.0.1:${port}`, '--json-response', '--auth-issuer', issuer, '--auth-audience', resource,
  '--auth-jwks', `${issuer}/jwks`];
startWatchdog(() => server.kill(), 90);
const finish = () => {
  server.kill();
  as.close();
  exitWithSummary();
};

if (!await step('the server starts protected, on the port chosen for it', async () => {
  const url = await server.start();
  check(url === resource, `it printed ${show(url)}`);
})) finish();

const initialize = JSON.stringify({
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});
const post = (headers = {}) => fetch(resource, {
  method: 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
  body: initialize,
});

await step('without a token: 401, whose challenge names the metadata and the scope every request needs', async () => {
  const r = await post();
  check(r.status === 401, `status ${r.status}`);
  const challenge = r.headers.get('www-authenticate') ?? '';
  check(challenge.includes(`resource_metadata="http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp"`),
    `challenge: ${challenge}`);
  check(challenge.includes('scope="mcp:read"'), `challenge: ${challenge}`);
});

await step('the Protected Resource Metadata names this resource and its authorization server', async () => {
  const r = await fetch(`http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`);
  check(r.status === 200, `status ${r.status}`);
  const meta = await r.json();
  check(meta.resource === resource, `resource ${show(meta.resource)}`);
  check(show(meta.authorization_servers) === show([issuer]), `authorization_servers ${show(meta.authorization_servers)}`);
  check(show(meta.scopes_supported) === show(['mcp:read', 'admin']), `scopes_supported ${show(meta.scopes_supported)}`);
});

/// The SDK's side of the authorization code grant for a user at a browser: the SDK builds
/// the authorization URL (PKCE, scope, resource) and this "browser" follows it, the
/// consent is given at once, and the code the redirect carries waits for `finishAuth`.
class BrowserUser {
  constructor(clientId) {
    this.clientId = clientId;
    this.saved = undefined;
    this.verifier = undefined;
    this.code = undefined;
    this.askedScopes = [];
  }
  get redirectUrl() { return 'http://127.0.0.1:9/callback'; }
  get clientMetadata() {
    return { client_name: 'auth-peer', redirect_uris: [this.redirectUrl], grant_types: ['authorization_code'],
      response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  clientInformation() { return { client_id: this.clientId }; }
  tokens() { return this.saved; }
  saveTokens(tokens) { this.saved = tokens; }
  saveCodeVerifier(verifier) { this.verifier = verifier; }
  codeVerifier() { return this.verifier; }
  async redirectToAuthorization(url) {
    this.askedScopes.push(url.searchParams.get('scope'));
    const r = await fetch(url, { redirect: 'manual' });
    this.code = new URL(r.headers.get('location')).searchParams.get('code');
  }
}

/// An SDK client that knows only its client id and secret.
async function connectAs(id) {
  const client = new Client({ name: `auth-peer-${id}`, version: '1.0.0' });
  // expectedIssuer: the client's credentials go to this authorization server only, whatever
  // the MCP server's metadata says.
  const authProvider = new ClientCredentialsProvider({ clientId: id, clientSecret: clients[id].secret, expectedIssuer: issuer });
  await client.connect(new StreamableHTTPClientTransport(new URL(resource), { authProvider }));
  return client;
}

let reader;
await step('the SDK client discovers the authorization server, gets a token for this resource and connects', async () => {
  try {
    reader = await connectAs('reader');
  } catch (e) {
    throw new Error(`${e.message}; token requests: ${show(tokenRequests)}`);
  }
  const first = tokenRequests[0];
  check(first?.client === 'reader', `token requests: ${show(tokenRequests)}`);
  check(first.resource === resource, `it asked a token for ${show(first.resource)}`);
  check(jwksFetches >= 1, 'the server never fetched the key set');
  const who = JSON.parse(textOf(await reader.callTool({ name: 'whoami', arguments: {} })));
  check(who.subject === 'reader' && who.issuer === issuer, `whoami: ${show(who)}`);
  check(show(who.scopes) === show(['mcp:read']) && who.client_id === 'reader', `whoami: ${show(who)}`);
});

await step('a tool needing a scope the client may not have: 403 insufficient_scope, a step-up, still refused', async () => {
  let error;
  try {
    await reader.callTool({ name: 'admin_reset', arguments: {} });
  } catch (e) {
    error = e;
  }
  check(error && String(error.message).includes('403 after trying upscoping'), `admin_reset gave ${show(error?.message)}`);
  const tries = tokenRequests.filter((t) => t.client === 'reader');
  check(tries.length === 2, `the reader's token requests: ${show(tries)}`);
  await reader.close();
});

await step('a user signs in (authorization code, PKCE), steps up on the 403, and keeps the session', async () => {
  const user = new BrowserUser('desk');
  const transport = () => new StreamableHTTPClientTransport(new URL(resource), { authProvider: user });
  let first = transport();
  let client = new Client({ name: 'auth-peer-desk', version: '1.0.0' });
  let redirected = false;
  try {
    await client.connect(first);
  } catch (e) {
    redirected = e.name === 'UnauthorizedError' || String(e).includes('Unauthorized');
  }
  check(redirected && user.code, 'the first connect did not end in a sign-in');
  await first.finishAuth(user.code);
  const session = transport();
  client = new Client({ name: 'auth-peer-desk', version: '1.0.0' });
  await client.connect(session);
  const who = JSON.parse(textOf(await client.callTool({ name: 'whoami', arguments: {} })));
  check(who.subject === 'ada' && show(who.scopes) === show(['mcp:read']), `whoami: ${show(who)}`);
  const sessionId = session.sessionId;
  // admin_reset: the 403 asks for what the token has plus admin; the SDK sends the user to
  // sign in again with that scope, and the call is made again with the new token.
  let stepped = false;
  try {
    await client.callTool({ name: 'admin_reset', arguments: {} });
  } catch (e) {
    stepped = e.name === 'UnauthorizedError' || String(e).includes('Unauthorized');
  }
  check(stepped, 'admin_reset did not send the user to sign in again');
  check(user.askedScopes.at(-1) === 'mcp:read admin', `the step-up asked for ${show(user.askedScopes)}`);
  await session.finishAuth(user.code);
  const r = await client.callTool({ name: 'admin_reset', arguments: {} });
  check(textOf(r) === 'reset by ada', `admin_reset answered ${show(r)}`);
  check(session.sessionId === sessionId, 'the step-up cost the session');
  const again = JSON.parse(textOf(await client.callTool({ name: 'whoami', arguments: {} })));
  check(show(again.scopes) === show(['mcp:read', 'admin']), `whoami after the step-up: ${show(again)}`);
  await client.close();
});

await step('tokens that must fail: forged, expired, another audience, another issuer, alg none', async () => {
  const now = Math.floor(Date.now() / 1000);
  const good = { iss: issuer, sub: 'mallory', aud: resource, scope: 'mcp:read admin', iat: now, exp: now + 300 };
  const cases = {
    forged: jwt(good, { key: other.privateKey }),
    expired: jwt({ ...good, iat: now - 7200, exp: now - 3600 }),
    'another audience': jwt({ ...good, aud: 'http://127.0.0.1:1/mcp' }),
    'another issuer': jwt({ ...good, iss: 'https://evil.example' }),
    'alg none': jwt(good, { header: { alg: 'none', kid: 'key-1' } }),
  };
  for (const [name, token] of Object.entries(cases)) {
    const r = await post({ authorization: `Bearer ${token}` });
    const challenge = r.headers.get('www-authenticate') ?? '';
    check(r.status === 401 && challenge.includes('error="invalid_token"'), `${name}: ${r.status} ${challenge}`);
  }
  const r = await post({ authorization: `Bearer ${jwt(good)}` });
  check(r.status === 200, `the same claims, properly signed: ${r.status}`);
});

await step('SIGTERM: the server stops cleanly', async () => {
  server.child.kill('SIGTERM');
  await server.waitForExit(10_000);
  check(server.exit?.code === 0, `exit ${show(server.exit)}`);
});

finish();
