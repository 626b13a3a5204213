/* echo-c: the echo example in C (sdk/c/aiod.h). Tool "echo" returns its
 * text as one text content block, byte for byte the answer of the Go echo
 * (plugins/examples/echo), in a few hundred nanoseconds of guest work: the
 * benchmarks serve it to see the host's share of a call without the
 * standard-Go guest's (BENCHMARKS.md, "HTTP echo throughput").
 *
 * Its tool has the Go echo's name, so the two are never in one plugins
 * directory: make bench builds it into a directory of its own.
 *
 * Build: aiod plugin build plugins/examples/echo-c, or by hand:
 *   clang --target=wasm32-wasi -mexec-model=reactor -O2 -o plugin.wasm main.c
 */
#include "../../../sdk/c/aiod.h"

static const char describe[] =
    "{\"name\":\"echo-c\",\"version\":\"1.0.0\",\"abi\":1,"
    "\"description\":\"Example plugin in C: echoes text.\","
    "\"tools\":[{\"name\":\"echo\",\"title\":\"Echo\","
    "\"description\":\"Echo the given text back as one text content block.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\",\"description\":\"the text to echo back\"}},"
    "\"required\":[\"text\"],\"additionalProperties\":false},"
    "\"annotations\":{\"readOnlyHint\":true,\"idempotentHint\":true}}]}";

static int handle(aiod_str tool, aiod_str args, aiod_buf *out) {
  if (!aiod_str_eq(tool, "echo")) return AIOD_RET_UNKNOWN_NAME;
  aiod_buf text = {0};
  if (aiod_json_string(args, "text", &text) != 1) return aiod_text_result(out, "text is required", 16, 1);
  aiod_text_result(out, text.p ? text.p : "", text.n, 0);
  aiod_buf_free(&text);
  return AIOD_RET_OK;
}

AIOD_PLUGIN(describe, handle)
