/* guard-c: the example guard plugin in C (sdk/c/aiod.h, spec/hooks.md). It
 * sees every call before it runs and every result after, and lets them go
 * on: a no-op guard, the cheapest a guard can be (the SDK answers allow and
 * keep with one constant write). Its policy entry's config can make it
 * answer otherwise, which the hooks tests use:
 *
 *   "before": "deny" | "rewrite"   (deny with a reason naming the tool and
 *                                   tenant; rewrite to {"text":"rewritten"})
 *   "after":  "add" | "replace"    (add a text block; replace the result)
 *
 * The same guard exists in Rust (plugins/examples/guard-rust).
 *
 * Build: aiod plugin build plugins/examples/guard-c, or by hand:
 *   clang --target=wasm32-wasi -mexec-model=reactor -O2 -o plugin.wasm main.c
 */
#include "../../../sdk/c/aiod.h"

static const char describe[] =
    "{\"name\":\"guard-c\",\"version\":\"1.0.0\",\"abi\":1,"
    "\"description\":\"Example guard plugin in C: lets every call and result go on (its config can make it deny, rewrite, add or replace).\","
    "\"tools\":[],\"hooks\":{\"before\":[\"*\"],\"after\":[\"*\"]}}";

/* mode reads config member key of the event into m (NUL-terminated);
 * 0 when there is none. */
static int mode(aiod_str event, const char *key, aiod_buf *m) {
  aiod_str cfg;
  if (aiod_json_member(event, "config", &cfg) != 1) return 0;
  if (aiod_json_string(cfg, key, m) != 1) return 0;
  aiod_buf_append(m, "", 1);
  return 1;
}

static int before(aiod_str tool, aiod_str event, aiod_buf *out) {
  aiod_buf m = {0}, who = {0};
  int ret = AIOD_ALLOW;
  if (mode(event, "before", &m)) {
    if (strcmp(m.p, "deny") == 0) {
      aiod_buf_puts(&who, "guard-c says no to ");
      aiod_buf_append(&who, tool.p, tool.n);
      aiod_buf_puts(&who, " for ");
      aiod_json_string(event, "tenant", &who);
      ret = aiod_hook_deny(out, who.p, who.n);
    } else if (strcmp(m.p, "rewrite") == 0) {
      static const char args[] = "{\"text\":\"rewritten by guard-c\"}";
      ret = aiod_hook_rewrite(out, args, sizeof args - 1);
    }
  }
  aiod_buf_free(&m);
  aiod_buf_free(&who);
  return ret;
}

static int after(aiod_str tool, aiod_str event, aiod_buf *out) {
  aiod_buf m = {0}, text = {0};
  int ret = AIOD_KEEP;
  if (mode(event, "after", &m)) {
    if (strcmp(m.p, "add") == 0) {
      aiod_buf_puts(&text, "guard-c saw ");
      aiod_buf_append(&text, tool.p, tool.n);
      ret = aiod_hook_add(out, text.p, text.n);
    } else if (strcmp(m.p, "replace") == 0) {
      static const char res[] = "{\"content\":[{\"type\":\"text\",\"text\":\"replaced by guard-c\"}]}";
      ret = aiod_hook_replace(out, res, sizeof res - 1);
    }
  }
  aiod_buf_free(&m);
  aiod_buf_free(&text);
  return ret;
}

AIOD_GUARD(describe, 0, before, after)
