// Shared helpers for aiod's end-to-end Node clients: where the pinned packages live, the
// optional API key header, and a uniform way to print a result or fail.
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

// The packages are installed by ../install.sh into AIOD_NODE_TOOLS (default <repo>/.tools/node),
// outside this directory, so bare imports cannot find them: resolve them from there instead.
export const toolsDir = process.env.AIOD_NODE_TOOLS || resolve(here, '../../../../.tools/node');
export const requireTool = createRequire(join(toolsDir, 'package.json'));

// AIOD_CLIENT_API_KEY, when set, is sent as `Authorization: Bearer <key>`, or as
// `x-api-key: <key>` when AIOD_CLIENT_API_KEY_HEADER=x-api-key.
export function authHeaders() {
  const key = process.env.AIOD_CLIENT_API_KEY;
  if (!key) return {};
  if ((process.env.AIOD_CLIENT_API_KEY_HEADER || '').toLowerCase() === 'x-api-key') return { 'x-api-key': key };
  return { Authorization: `Bearer ${key}` };
}

export function urlArg(name) {
  const url = process.argv[2];
  if (!url) {
    process.stderr.write(`usage: ${name} URL\n`);
    process.exit(2);
  }
  return new URL(url);
}

// checkEcho throws unless the tools list has `echo` and the call result echoed "hi".
export function checkEcho(tools, result) {
  const names = tools.map((t) => t.name);
  if (!names.includes('echo')) throw new Error(`tools/list has no echo tool: ${JSON.stringify(names)}`);
  if (result.isError) throw new Error(`echo returned isError: ${JSON.stringify(result)}`);
  const texts = (result.content || []).filter((c) => c.type === 'text').map((c) => c.text);
  if (!texts.some((t) => t.includes('hi'))) throw new Error(`echo result does not carry "hi": ${JSON.stringify(result)}`);
  return names;
}

export async function run(name, fn) {
  const timer = setTimeout(() => {
    process.stderr.write(`${name}: timed out after 30s\n`);
    process.exit(1);
  }, 30000);
  try {
    const out = await fn();
    process.stdout.write(JSON.stringify(out) + '\n');
    clearTimeout(timer);
    process.exit(0);
  } catch (err) {
    process.stderr.write(`${name}: FAIL: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  }
}
