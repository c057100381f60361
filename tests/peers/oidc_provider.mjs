// node-oidc-provider (npm `oidc-provider`, pinned in package.json) as a test peer: an
// OpenID-certified authorization server on 127.0.0.1, with its default policies
// (a refresh token only for offline_access asked with prompt=consent), for the MCP
// server at --resource.
//
//   node oidc_provider.mjs --peers DIR --resource URL [--client-jwks JSON]
//
// DIR is the npm peer install (.cache/peers). Listens on an ephemeral port and prints
// one line `listening http://127.0.0.1:PORT` once it serves. Configured with:
//   * clients: `app` (public, code + refresh), `svc-basic` / `svc-post` (client secret
//     `secret-<method>`, client credentials), `svc-jwt` (private_key_jwt with the
//     public keys --client-jwks gives), each registered with its one method;
//   * dynamic registration (open), PKCE S256, the dev login/consent pages;
//   * `svc-steady` (client_secret_basic, `secret-steady`), whose tokens last 5 minutes,
//     for tests that must not see a token expire on a slow machine;
//   * resource indicators: the one resource, scopes mcp:tools and mcp:admin, JWT
//     access tokens (ES256) that last 4 s;
//   * DPoP, always demanding a nonce of its own.
// GET /_log answers the requests seen so far (route, grant type, how the client
// authenticated, status, error), the record the tests count exchanges, refreshes and
// nonce round trips with. (The provider takes either secret method from a client
// registered for one of them, so the log is where the method used shows.)
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

function option(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  if (at === -1) {
    if (fallback === undefined) throw new Error(`--${name} is required`);
    return fallback;
  }
  return process.argv[at + 1];
}

const peers = option("peers");
const resource = option("resource");
const clientJwks = JSON.parse(option("client-jwks", '{"keys": []}'));
const { default: Provider, errors } = await import(
  pathToFileURL(join(peers, "node_modules", "oidc-provider", "lib", "index.js")).href
);

function signingKey(type, options, alg) {
  const jwk = generateKeyPairSync(type, options).privateKey.export({ format: "jwk" });
  return { ...jwk, kid: `${alg}-${randomBytes(4).toString("hex")}`, alg, use: "sig" };
}

const TOKEN_SECONDS = 4;
const methods = ["client_secret_basic", "client_secret_post"];
const clients = [
  {
    client_id: "app",
    token_endpoint_auth_method: "none",
    application_type: "native",
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    redirect_uris: ["http://127.0.0.1:8790/callback"],
  },
  ...methods.map((method) => ({
    client_id: `svc-${method.slice("client_secret_".length)}`,
    client_secret: `secret-${method}`,
    token_endpoint_auth_method: method,
    grant_types: ["client_credentials"],
    response_types: [],
    redirect_uris: [],
  })),
  {
    client_id: "svc-steady",
    client_secret: "secret-steady",
    token_endpoint_auth_method: "client_secret_basic",
    grant_types: ["client_credentials"],
    response_types: [],
    redirect_uris: [],
  },
];
if (clientJwks.keys.length) {
  clients.push({
    client_id: "svc-jwt",
    token_endpoint_auth_method: "private_key_jwt",
    token_endpoint_auth_signing_alg: clientJwks.keys[0].alg || "ES256",
    jwks: clientJwks,
    grant_types: ["client_credentials"],
    response_types: [],
    redirect_uris: [],
  });
}

const server = createServer();
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients,
  jwks: {
    keys: [
      signingKey("rsa", { modulusLength: 2048 }, "RS256"),
      signingKey("ec", { namedCurve: "P-256" }, "ES256"),
    ],
  },
  cookies: { keys: [randomBytes(16).toString("hex")] },
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    registration: { enabled: true },
    dPoP: { enabled: true, nonceSecret: randomBytes(32), requireNonce: () => true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator, client) => {
        if (indicator !== resource) throw new errors.InvalidTarget();
        return {
          scope: "mcp:tools mcp:admin",
          audience: resource,
          accessTokenTTL: client?.clientId === "svc-steady" ? 300 : TOKEN_SECONDS,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: "ES256" } },
        };
      },
    },
  },
  ttl: { AccessToken: TOKEN_SECONDS, ClientCredentials: TOKEN_SECONDS },
});

const log = [];
provider.use(async (ctx, next) => {
  if (ctx.path === "/_log") {
    ctx.body = log;
    return;
  }
  await next();
  const params = ctx.oidc?.params ?? {};
  let clientAuth = null;
  if (ctx.oidc?.route === "token") {
    if (ctx.headers.authorization !== undefined) clientAuth = "client_secret_basic";
    else if (params.client_secret !== undefined) clientAuth = "client_secret_post";
    else if (params.client_assertion !== undefined) clientAuth = "private_key_jwt";
    else clientAuth = "none";
  }
  log.push({
    method: ctx.method,
    path: ctx.path,
    route: ctx.oidc?.route ?? null,
    grant_type: params.grant_type ?? null,
    client_id: ctx.oidc?.client?.clientId ?? null,
    client_auth: clientAuth,
    scope: params.scope ?? null,
    prompt: params.prompt ?? null,
    status: ctx.status,
    error: (ctx.body && typeof ctx.body === "object" && ctx.body.error) || null,
    refresh_token_issued: Boolean(ctx.body && typeof ctx.body === "object" && ctx.body.refresh_token),
  });
});
provider.on("server_error", (ctx, err) => console.error("server_error", err));

server.on("request", provider.callback());
process.on("SIGTERM", () => process.exit(0));
console.log(`listening ${issuer}`);
