/* tally-c: the tally example plugin in C (sdk/c/aiod.h). Tools: echo (the
 * text back) and count (a per-client counter kept in aiod:state). The same
 * tools, with the same answers, exist in Go, Rust and AssemblyScript
 * (plugins/examples/tally-*; host/e2e TestTallyLanguages).
 *
 * Build: aiod plugin build plugins/examples/tally-c, or by hand:
 *   clang --target=wasm32-wasi -mexec-model=reactor -O2 -o plugin.wasm main.c
 */
#include <stdio.h>

#define AIOD_STATE
#include "../../../sdk/c/aiod.h"

static const char describe[] =
    "{\"name\":\"tally-c\",\"version\":\"1.0.0\",\"abi\":1,"
    "\"description\":\"Example plugin in C: echo, and a per-client counter kept in aiod:state.\","
    "\"tools\":["
    "{\"name\":\"echo\",\"description\":\"Echo the given text back as one text content block.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\",\"description\":\"the text to echo back\"}},"
    "\"required\":[\"text\"],\"additionalProperties\":false}},"
    "{\"name\":\"count\",\"description\":\"Add one to the named counter (kept per client in aiod:state) and return its new value.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"description\":\"the counter's name\"}},"
    "\"required\":[\"name\"],\"additionalProperties\":false}}],"
    "\"capabilities\":{\"state\":{\"max_bytes\":65536}}}";

static int echo(aiod_str args, aiod_buf *out) {
  aiod_buf text = {0};
  int r = aiod_json_string(args, "text", &text);
  if (r != 1) return aiod_text_result(out, "text is required", 16, 1);
  aiod_text_result(out, text.p ? text.p : "", text.n, 0);
  aiod_buf_free(&text);
  return AIOD_RET_OK;
}

static int count(aiod_str args, aiod_buf *out) {
  aiod_buf name = {0}, key = {0}, old = {0};
  if (aiod_json_string(args, "name", &name) != 1 || name.n == 0)
    return aiod_text_result(out, "name is required", 16, 1);
  aiod_buf_puts(&key, "count/");
  aiod_buf_append(&key, name.p, name.n);
  aiod_buf_append(&key, "", 1); /* NUL */
  long long n = 0;
  uint32_t code = aiod_state_get(key.p, &old);
  if (code == AIOD_OK) {
    aiod_buf_append(&old, "", 1);
    n = atoll(old.p);
  } else if (code != AIOD_NOT_FOUND) {
    aiod_text_result(out, "state get failed", 16, 1);
    goto done;
  }
  char num[24];
  int len = snprintf(num, sizeof num, "%lld", n + 1);
  if (aiod_state_set(key.p, num, (size_t)len) != AIOD_OK) {
    aiod_text_result(out, "state set failed", 16, 1);
    goto done;
  }
  aiod_text_result(out, num, (size_t)len, 0);
done:
  aiod_buf_free(&name);
  aiod_buf_free(&key);
  aiod_buf_free(&old);
  return AIOD_RET_OK;
}

static int handle(aiod_str tool, aiod_str args, aiod_buf *out) {
  if (aiod_str_eq(tool, "echo")) return echo(args, out);
  if (aiod_str_eq(tool, "count")) return count(args, out);
  return AIOD_RET_UNKNOWN_NAME;
}

AIOD_PLUGIN(describe, handle)
