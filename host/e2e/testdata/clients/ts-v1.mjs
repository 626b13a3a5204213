// ts-v1.mjs URL: the TypeScript SDK v1 client (@modelcontextprotocol/sdk 1.32.2, legacy era only)
// over Streamable HTTP: initialize, tools/list, tools/call echo {text:"hi"}, then close (DELETE of
// the session when the server minted one). Prints one JSON line; exits non-zero on any failure.
import { authHeaders, checkEcho, requireTool, run, urlArg } from './common.mjs';

const { Client } = requireTool('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = requireTool('@modelcontextprotocol/sdk/client/streamableHttp.js');

run('ts-v1', async () => {
  const url = urlArg('ts-v1.mjs');
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: authHeaders() } });
  const client = new Client({ name: 'aiod-e2e-ts-v1', version: '1.0.0' });
  await client.connect(transport);
  const protocolVersion = transport.protocolVersion;
  const sessionId = transport.sessionId;
  const { tools } = await client.listTools();
  const result = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
  const names = checkEcho(tools, result);
  if (sessionId) await transport.terminateSession();
  await client.close();
  return { client: 'ts-v1', protocolVersion, session: Boolean(sessionId), server: client.getServerVersion(), tools: names, result };
});
