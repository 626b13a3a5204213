// ts-v2-listchanged.mjs URL STAGING DEST [modern|legacy]: the TypeScript SDK v2 client told of a
// tool list change. It connects (2026-07-28 by default: the client opens subscriptions/listen for
// ClientOptions.listChanged itself; legacy: the GET stream), lists the tools, renames the plugin
// package STAGING to DEST inside aiod's watched plugins directory, and waits for its listChanged
// callback with the refreshed list. Prints one JSON line {era, before, after, changes}.
import { requireTool, run, urlArg } from './common.mjs';
import { renameSync } from 'node:fs';

const { Client, StreamableHTTPClientTransport } = requireTool('@modelcontextprotocol/client');

run('ts-v2-listchanged', async () => {
  const url = urlArg('ts-v2-listchanged.mjs');
  const [staging, dest, era = 'modern'] = process.argv.slice(3);
  let changes = 0;
  let resolveChanged;
  const changed = new Promise((r) => { resolveChanged = r; });
  const transport = new StreamableHTTPClientTransport(url);
  const client = new Client({ name: 'aiod-e2e-listchanged', version: '1.0.0' }, {
    versionNegotiation: { mode: era === 'modern' ? { pin: '2026-07-28' } : 'legacy' },
    listChanged: {
      tools: {
        debounceMs: 0,
        onChanged: (err, items) => {
          if (err) throw err;
          changes++;
          resolveChanged(items.map((t) => t.name).sort());
        },
      },
    },
  });
  await client.connect(transport);
  const negotiated = client.getProtocolEra();
  const before = (await client.listTools()).tools.map((t) => t.name).sort();
  await new Promise((r) => setTimeout(r, 500)); // the subscription or stream is open
  renameSync(staging, dest);
  const after = await changed;
  await new Promise((r) => setTimeout(r, 500)); // one swap, one notice
  await client.close();
  return { era: negotiated, before, after, changes };
});
