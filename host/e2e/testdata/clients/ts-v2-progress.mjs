// ts-v2-progress.mjs URL [modern|legacy]: the TypeScript SDK v2 client calls sandbox_execute_bash
// with a command printing six lines 0.3 s apart, once with onprogress (so with a progress token)
// and once without; prints one JSON line with the progress notifications seen and both results.
import { authHeaders, requireTool, run, urlArg } from './common.mjs';

const { Client, StreamableHTTPClientTransport } = requireTool('@modelcontextprotocol/client');

run('ts-v2-progress', async () => {
  const url = urlArg('ts-v2-progress.mjs');
  const era = process.argv[3] || 'modern';
  if (!['modern', 'legacy'].includes(era)) throw new Error(`unknown era ${era}`);
  const mode = era === 'modern' ? { pin: '2026-07-28' } : era;
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: authHeaders() } });
  const client = new Client({ name: 'aiod-e2e-ts-v2-progress', version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(transport);
  const negotiatedEra = client.getProtocolEra();
  if (negotiatedEra !== era) throw new Error(`asked for the ${era} era, negotiated ${negotiatedEra}`);
  const args = { cmd: 'for i in 1 2 3 4 5 6; do echo line$i; sleep 0.3; done' };
  const progress = [];
  const start = Date.now();
  const withToken = await client.callTool({ name: 'sandbox_execute_bash', arguments: args }, {
    onprogress: (p) => progress.push({ progress: p.progress, message: p.message, at: Date.now() - start }),
  });
  const ms = Date.now() - start;
  const before = progress.length;
  const without = await client.callTool({ name: 'sandbox_execute_bash', arguments: args });
  await client.close();
  return { era: negotiatedEra, progress, ms, extra: progress.length - before, withToken, without };
});
