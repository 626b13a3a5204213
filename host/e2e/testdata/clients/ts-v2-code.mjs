// ts-v2-code.mjs URL [modern|legacy]: the TypeScript SDK v2 client runs a JavaScript program with
// sandbox_execute_code that calls a read-only tool and a write tool (spec/code-tools.md); prints
// one JSON line (the era and the program's stdout) and exits non-zero on any failure.
import { authHeaders, requireTool, run, urlArg } from './common.mjs';

const { Client, StreamableHTTPClientTransport } = requireTool('@modelcontextprotocol/client');

run('ts-v2-code', async () => {
  const url = urlArg('ts-v2-code.mjs');
  const era = process.argv[3] || 'modern';
  const mode = era === 'modern' ? { pin: '2026-07-28' } : era;
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: authHeaders() } });
  const client = new Client({ name: 'aiod-e2e-ts-v2-code', version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(transport);
  const code = [
    'const c = JSON.parse(tools.sandbox_get_context());',
    "let kind = '';",
    "try { tools.sandbox_execute_bash({cmd: 'id'}) } catch (e) { kind = e.kind }",
    'console.log(typeof c.home_dir, kind)',
  ].join('\n');
  const result = await client.callTool({ name: 'sandbox_execute_code', arguments: { language: 'javascript', code } });
  if (result.isError) throw new Error(`sandbox_execute_code: ${JSON.stringify(result)}`);
  const out = JSON.parse(result.content[0].text);
  if (out.status !== 'ok') throw new Error(`the program failed: ${JSON.stringify(out)}`);
  const negotiatedEra = client.getProtocolEra();
  await client.close();
  return { client: 'ts-v2', era: negotiatedEra, stdout: out.stdout };
});
