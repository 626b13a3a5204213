// tally-as: the tally example plugin in AssemblyScript
// (sdk/assemblyscript). Tools: echo (the text back) and count (a
// per-client counter kept in aiod:state). The same tools, with the same
// answers, exist in Go, C and Rust (plugins/examples/tally-*; host/e2e
// TestTallyLanguages).
//
// Build: aiod plugin build plugins/examples/tally-as, or by hand:
//   asc main.ts -O --runtime incremental --exportStart _initialize --use abort= -o plugin.wasm
import { plugin, textResult, jsonString, stateGet, stateSet, OK, NOT_FOUND } from "../../../sdk/assemblyscript/aiod";
export { aiod_abi_version, aiod_call } from "../../../sdk/assemblyscript/aiod";

const DESCRIBE = `{"name":"tally-as","version":"1.0.0","abi":1,"description":"Example plugin in AssemblyScript: echo, and a per-client counter kept in aiod:state.","tools":[{"name":"echo","description":"Echo the given text back as one text content block.","inputSchema":{"type":"object","properties":{"text":{"type":"string","description":"the text to echo back"}},"required":["text"],"additionalProperties":false}},{"name":"count","description":"Add one to the named counter (kept per client in aiod:state) and return its new value.","inputSchema":{"type":"object","properties":{"name":{"type":"string","description":"the counter's name"}},"required":["name"],"additionalProperties":false}}],"capabilities":{"state":{"max_bytes":65536}}}`;

function echo(args: string): string {
  const t = jsonString(args, "text");
  if (t === null) return textResult("text is required", true);
  return textResult(t, false);
}

function count(args: string): string {
  const name = jsonString(args, "name");
  if (name === null || name.length == 0) return textResult("name is required", true);
  const key = "count/" + name;
  const old = stateGet(key);
  let n: i64 = 0;
  if (old.code == OK) n = I64.parseInt(old.body);
  else if (old.code != NOT_FOUND) return textResult("state get failed", true);
  const next = (n + 1).toString();
  if (stateSet(key, next) != OK) return textResult("state set failed", true);
  return textResult(next, false);
}

plugin(DESCRIBE, (tool: string, args: string): string | null => {
  if (tool == "echo") return echo(args);
  if (tool == "count") return count(args);
  return null;
});
