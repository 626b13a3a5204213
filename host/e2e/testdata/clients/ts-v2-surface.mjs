// ts-v2-surface.mjs URL modern|legacy PREFIX: the TypeScript SDK v2 client against an upstream's
// prompts, resources and input requests through aiod (the everything server under PREFIX). It
// declares elicitation and sampling and answers them (a name; a fixed completion); lists and gets
// a prompt, completes an argument, lists and reads a resource and a template's URI, and calls the
// upstream's elicitation and sampling tools. Prints one JSON line; exits non-zero on any failure.
import { authHeaders, requireTool, run, urlArg } from './common.mjs';

const { Client, StreamableHTTPClientTransport } = requireTool('@modelcontextprotocol/client');

const texts = (content) => (content || []).filter((c) => c.type === 'text').map((c) => c.text).join('');

run('ts-v2-surface', async () => {
  const url = urlArg('ts-v2-surface.mjs');
  const era = process.argv[3] || 'modern';
  const p = process.argv[4] || 'ev';
  const mode = era === 'modern' ? { pin: '2026-07-28' } : era;
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: authHeaders() } });
  const client = new Client({ name: 'aiod-e2e-ts-v2-surface', version: '1.0.0' },
    { versionNegotiation: { mode }, capabilities: { elicitation: { form: {} }, sampling: {} } });
  let asked = 0;
  client.setRequestHandler('elicitation/create', async () => {
    asked++;
    return { action: 'accept', content: { name: `Katherine Johnson ${era}` } };
  });
  client.setRequestHandler('sampling/createMessage', async () => ({
    model: 'aiod-e2e', role: 'assistant', content: { type: 'text', text: `sampled by ts-v2 in ${era}` },
  }));
  await client.connect(transport);
  if (client.getProtocolEra() !== era) throw new Error(`asked for ${era}, negotiated ${client.getProtocolEra()}`);
  const { prompts } = await client.listPrompts();
  const names = prompts.map((x) => x.name);
  if (!names.includes(`${p}_args-prompt`)) throw new Error(`prompts/list: ${JSON.stringify(names)}`);
  const got = await client.getPrompt({ name: `${p}_args-prompt`, arguments: { city: 'Oslo' } });
  const said = texts(got.messages.map((m) => m.content));
  if (said !== "What's weather in Oslo?") throw new Error(`prompts/get: ${JSON.stringify(got)}`);
  const done = await client.complete({ ref: { type: 'ref/prompt', name: `${p}_completable-prompt` }, argument: { name: 'department', value: 'Sa' } });
  if (!done.completion.values.includes('Sales')) throw new Error(`completion/complete: ${JSON.stringify(done)}`);
  const { resources } = await client.listResources();
  const doc = resources.find((r) => r.uri.startsWith(`upstream://${p}/demo://resource/static/document/`));
  if (!doc) throw new Error(`resources/list: no document among ${resources.length}`);
  const read = await client.readResource({ uri: doc.uri });
  if (read.contents[0].uri !== doc.uri || !read.contents[0].text) throw new Error(`resources/read: ${JSON.stringify(read).slice(0, 300)}`);
  const { resourceTemplates } = await client.listResourceTemplates();
  const tpl = resourceTemplates.map((x) => x.uriTemplate);
  if (!tpl.includes(`upstream://${p}/demo://resource/dynamic/text/{resourceId}`)) throw new Error(`resources/templates/list: ${JSON.stringify(tpl)}`);
  const elicited = await client.callTool({ name: `${p}_trigger-elicitation-request`, arguments: {} });
  if (elicited.isError || !texts(elicited.content).includes(`Katherine Johnson ${era}`)) throw new Error(`elicitation: ${JSON.stringify(elicited)}`);
  const sampled = await client.callTool({ name: `${p}_trigger-sampling-request`, arguments: { prompt: 'hello', maxTokens: 20 } });
  if (sampled.isError || !texts(sampled.content).includes(`sampled by ts-v2 in ${era}`)) throw new Error(`sampling: ${JSON.stringify(sampled)}`);
  const negotiated = client.getProtocolEra();
  await client.close();
  return { client: 'ts-v2', era: negotiated, prompts: names.length, resources: resources.length, asked, said };
});
