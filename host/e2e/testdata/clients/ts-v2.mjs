// ts-v2.mjs URL [modern|auto|legacy]: the TypeScript SDK v2 client (@modelcontextprotocol/client
// 2.4.0). The default era is modern: the client is pinned to 2026-07-28 (server/discover, no
// initialize, per-request _meta and headers); `auto` probes and may fall back; `legacy` runs the
// 2025 handshake. Lists tools and calls echo {text:"hi"}; prints one JSON line; exits non-zero on
// any failure, including a negotiated era other than the one asked for (auto accepts either).
import { authHeaders, checkEcho, requireTool, run, urlArg } from './common.mjs';

const { Client, StreamableHTTPClientTransport } = requireTool('@modelcontextprotocol/client');

run('ts-v2', async () => {
  const url = urlArg('ts-v2.mjs');
  const era = process.argv[3] || 'modern';
  const mode = era === 'modern' ? { pin: '2026-07-28' } : era;
  if (!['modern', 'auto', 'legacy'].includes(era)) throw new Error(`unknown era ${era}`);
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: authHeaders() } });
  const client = new Client({ name: 'aiod-e2e-ts-v2', version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(transport);
  const protocolVersion = client.getNegotiatedProtocolVersion();
  const negotiatedEra = client.getProtocolEra();
  if (era !== 'auto' && negotiatedEra !== era) throw new Error(`asked for the ${era} era, negotiated ${negotiatedEra} (${protocolVersion})`);
  const { tools } = await client.listTools();
  const result = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
  const names = checkEcho(tools, result);
  await client.close();
  return { client: 'ts-v2', era: negotiatedEra, protocolVersion, server: client.getServerVersion(), tools: names, result };
});
