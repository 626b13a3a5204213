// ts-v2-machine.mjs URL [modern|legacy]: the TypeScript SDK v2 client calls Machine Mode tools
// (spec/machine-mode.md) published by aiod: a command reporting progress (with a progress token and
// without), a bounded search whose cursor it follows to the end, a command that requires confirmation
// (accepted, then declined, through the client's elicitation handler; then from a client without the
// elicitation capability), and aiod's own CLI registered as a tool. Prints one JSON line with what it saw.
import { authHeaders, requireTool, run, urlArg } from './common.mjs';

const { Client, StreamableHTTPClientTransport } = requireTool('@modelcontextprotocol/client');

async function connect(url, era, elicit) {
  const mode = era === 'modern' ? { pin: '2026-07-28' } : era;
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: authHeaders() } });
  const caps = elicit ? { capabilities: { elicitation: { form: {} } } } : {};
  const client = new Client({ name: 'aiod-e2e-ts-v2-machine', version: '1.0.0' }, { versionNegotiation: { mode }, ...caps });
  if (elicit) client.setRequestHandler('elicitation/create', elicit);
  await client.connect(transport);
  const negotiated = client.getProtocolEra();
  if (negotiated !== era) throw new Error(`asked for the ${era} era, negotiated ${negotiated}`);
  return client;
}

run('ts-v2-machine', async () => {
  const url = urlArg('ts-v2-machine.mjs');
  const era = process.argv[3] || 'modern';
  if (!['modern', 'legacy'].includes(era)) throw new Error(`unknown era ${era}`);
  const asked = [];
  let answer = 'accept';
  const client = await connect(url, era, async (req) => {
    asked.push({ message: req.params.message, schema: req.params.requestedSchema });
    return answer === 'accept' ? { action: 'accept', content: { confirm: true } } : { action: answer };
  });
  const { tools } = await client.listTools();
  const listed = Object.fromEntries(tools.map((t) => [t.name, { annotations: t.annotations || {}, input: t.inputSchema, hasOutputSchema: !!t.outputSchema }]));

  // progress, with a token (onprogress) and without
  const progress = [];
  const withToken = await client.callTool({ name: 'docs_progress', arguments: { steps: 4, pause_ms: 150 } }, {
    onprogress: (p) => progress.push({ progress: p.progress, total: p.total, message: p.message }),
  });
  const before = progress.length;
  const without = await client.callTool({ name: 'docs_progress', arguments: { steps: 2, pause_ms: 10 } });

  // a bounded search, its cursor followed to the end
  const pages = [];
  let cursor;
  for (let i = 0; i < 10; i++) {
    const args = { query: 'agent', limit: 2 };
    if (cursor) args.cursor = cursor;
    const r = await client.callTool({ name: 'docs_search', arguments: args });
    if (r.isError) throw new Error(`search page ${i}: ${JSON.stringify(r)}`);
    pages.push(r.structuredContent);
    cursor = r.structuredContent.summary.next_cursor;
    if (!r.structuredContent.summary.truncated) break;
  }

  // confirmation: accepted, then declined
  answer = 'accept';
  const accepted = await client.callTool({ name: 'docs_delete', arguments: { id: 'doc_3' } });
  answer = 'decline';
  const declined = await client.callTool({ name: 'docs_delete', arguments: { id: 'doc_4' } });
  await client.close();

  // a client that cannot be asked
  const mute = await connect(url, era, null);
  const unasked = await mute.callTool({ name: 'docs_delete', arguments: { id: 'doc_5' } });
  // aiod's own CLI, behind the same adapter
  const key = await mute.callTool({ name: 'aiod_key_new', arguments: {} });
  const missing = await mute.callTool({ name: 'aiod_plugin_inspect', arguments: { path: '/nonexistent/plugin' } });
  await mute.close();

  return {
    era, listed, progress: progress.slice(0, before), extra: progress.length - before, withToken, without,
    pages, asked, accepted, declined, unasked, key, missing,
  };
});
