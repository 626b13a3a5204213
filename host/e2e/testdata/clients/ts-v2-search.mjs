// ts-v2-search.mjs URL [modern|legacy]: the TypeScript SDK v2 client against aiod with tool search
// on (spec/protocol.md §10): lists the short tools/list, finds echo with aiod_tool_search, gets its
// definition with aiod_tool_describe, and calls it by name; prints one JSON line (the era, what was
// listed, found and answered) and exits non-zero on any failure.
import { authHeaders, requireTool, run, urlArg } from './common.mjs';

const { Client, StreamableHTTPClientTransport } = requireTool('@modelcontextprotocol/client');

run('ts-v2-search', async () => {
  const url = urlArg('ts-v2-search.mjs');
  const era = process.argv[3] || 'modern';
  const mode = era === 'modern' ? { pin: '2026-07-28' } : era;
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: authHeaders() } });
  const client = new Client({ name: 'aiod-e2e-ts-v2-search', version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(transport);
  const { tools } = await client.listTools();
  const listed = tools.map((t) => t.name);
  const withOutputSchema = tools.filter((t) => t.outputSchema).map((t) => t.name);
  const search = await client.callTool({ name: 'aiod_tool_search', arguments: { query: 'echo text back', limit: 3 } });
  if (search.isError) throw new Error(`aiod_tool_search: ${JSON.stringify(search)}`);
  const found = search.structuredContent.results.map((r) => r.name);
  const describe = await client.callTool({ name: 'aiod_tool_describe', arguments: { names: ['echo', 'no_such_tool'] } });
  if (describe.isError) throw new Error(`aiod_tool_describe: ${JSON.stringify(describe)}`);
  const described = describe.structuredContent.tools.map((t) => t.name);
  const echoSchema = describe.structuredContent.tools[0]?.inputSchema ?? null;
  const unknown = describe.structuredContent.unknown;
  const echo = await client.callTool({ name: 'echo', arguments: { text: 'found by search' } });
  if (echo.isError) throw new Error(`echo: ${JSON.stringify(echo)}`);
  const negotiatedEra = client.getProtocolEra();
  await client.close();
  return {
    client: 'ts-v2', era: negotiatedEra, listed, withOutputSchema, found, described, unknown,
    echoHasSchema: echoSchema !== null && typeof echoSchema === 'object',
    echo: echo.content.filter((c) => c.type === 'text').map((c) => c.text).join(''),
  };
});
