// The authorization server of the upstream OAuth tests: oidc-provider (npm)
// on a loopback port, issuing JWT access tokens for one resource (the MCP
// server of the test). Its settings come from the environment:
//   OIDC_PROVIDER  path of the oidc-provider package's entry file
//   RESOURCE       the MCP server's URLs, comma-separated (the resources it serves)
//   ACCESS_TTL     access token lifetime in seconds (default 300)
//   GRANTED_RESOURCE=0  a refresh without "resource" gets no token for it
//   NODE_EXTRA_CA_CERTS the CA of the test's client metadata document server
// It prints {"issuer": "..."} on a line once it listens.
import http from 'node:http';
import { pathToFileURL } from 'node:url';

const { default: Provider, errors } = await import(pathToFileURL(process.env.OIDC_PROVIDER).href);
const resources = process.env.RESOURCE.split(',');
const resource = resources[0];
const ttl = Number(process.env.ACCESS_TTL || 300);

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [
      { client_id: 'aiod-public', token_endpoint_auth_method: 'none', application_type: 'native',
        redirect_uris: ['http://127.0.0.1/callback'], grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'] },
      { client_id: 'aiod-svc', client_secret: 'svc-secret-0123456789', grant_types: ['client_credentials'],
        redirect_uris: [], response_types: [] },
    ],
    scopes: ['openid', 'offline_access', 'mcp:tools', 'mcp:admin'],
    pkce: { required: () => true },
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    ttl: { AccessToken: ttl, ClientCredentials: ttl },
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      revocation: { enabled: true },
      clientCredentials: { enabled: true },
      // client ID metadata documents, fetched from the test's https server
      // on loopback (see fetch below)
      clientIdMetadataDocument: { enabled: true, ack: 'draft-02' },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => (process.env.GRANTED_RESOURCE === '0' ? undefined : resource),
        useGrantedResource: () => process.env.GRANTED_RESOURCE !== '0',
        getResourceServerInfo: (ctx, indicator) => {
          if (!resources.includes(indicator)) throw new errors.InvalidTarget();
          return { scope: 'mcp:tools mcp:admin', audience: indicator, accessTokenTTL: ttl,
            accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } };
        },
      },
    },
    // The provider refuses to fetch from special-use addresses (loopback
    // among them); the test's client metadata document is on loopback.
    fetch: (url, options) => { delete options.dispatcher; return fetch(url, options); },
    findAccount: (ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
  });
  provider.on('server_error', (ctx, err) => console.error('server_error', err));
  server.on('request', provider.callback());
  console.log(JSON.stringify({ issuer }));
});
