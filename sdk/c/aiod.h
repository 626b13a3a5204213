/* aiod.h: a header-only C SDK for aiod plugins (ABI v1, reactor form,
 * spec/abi/v1.md; other languages: spec/abi/languages.md).
 *
 * Build (Debian: clang, lld, wasi-libc, libclang-rt-14-dev-wasm32):
 *
 *   clang --target=wasm32-wasi -mexec-model=reactor -O2 -I sdk/c -o plugin.wasm main.c
 *
 * A plugin defines its manifest document and one tool handler, then says
 * AIOD_PLUGIN(describe_json, handler) once:
 *
 *   static const char describe[] = "{\"name\":\"hello\",\"version\":\"1.0.0\",\"abi\":1,...}";
 *   static int handle(aiod_str tool, aiod_str args, aiod_buf *out) {
 *     if (aiod_str_eq(tool, "hello")) { ... return aiod_text_result(out, "hi", 2, 0); }
 *     return AIOD_RET_UNKNOWN_NAME;
 *   }
 *   AIOD_PLUGIN(describe, handle)
 *
 * JSON: aiod_json_string/aiod_json_int/aiod_json_bool read one member of a
 * flat JSON object (nested values are skipped correctly, not decoded);
 * aiod_buf_json_string writes an escaped JSON string. Nothing else: no
 * allocation beyond malloc/realloc of the buffers you own.
 */
#ifndef AIOD_H
#define AIOD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define AIOD_ABI_VERSION 1

/* aiod_call return codes (spec/abi/v1.md §2.3). */
enum {
  AIOD_RET_OK = 0,
  AIOD_RET_UNKNOWN_NAME = 1,
  AIOD_RET_BAD_INPUT = 2,
  AIOD_RET_UNKNOWN_OP = 3,
};

/* aiod_call operations (5 and 6: ABI v1.1, a guard plugin's hooks). */
enum { AIOD_OP_DESCRIBE = 0, AIOD_OP_TOOL_CALL = 1, AIOD_OP_HOOK_BEFORE = 5, AIOD_OP_HOOK_AFTER = 6 };

/* Host function error codes (spec/abi/v1.md §5). */
enum {
  AIOD_OK = 0, AIOD_DENIED = 1, AIOD_INVALID = 2, AIOD_NOT_FOUND = 3, AIOD_EXISTS = 4,
  AIOD_IO = 5, AIOD_TOO_LARGE = 6, AIOD_TIMEOUT = 7, AIOD_UNAVAILABLE = 8, AIOD_INTERNAL = 9,
};

#define AIOD_IMPORT(mod, fn) __attribute__((import_module(mod), import_name(fn)))

AIOD_IMPORT("aiod:core", "input_read") void aiod__input_read(void *ptr);
AIOD_IMPORT("aiod:core", "output_write") int32_t aiod__output_write(const void *ptr, uint32_t len);
AIOD_IMPORT("aiod:core", "response_read") void aiod__response_read(void *ptr);
AIOD_IMPORT("aiod:core", "log") void aiod__log(uint32_t level, const void *ptr, uint32_t len);

/* A read-only byte string (not NUL-terminated). */
typedef struct { const char *p; size_t n; } aiod_str;

/* A growable byte buffer; zero-initialise it, aiod_buf_free it. */
typedef struct { char *p; size_t n, cap; } aiod_buf;

static inline aiod_str aiod_cstr(const char *s) { aiod_str r = {s, strlen(s)}; return r; }
static inline int aiod_str_eq(aiod_str a, const char *s) {
  size_t n = strlen(s);
  return a.n == n && memcmp(a.p, s, n) == 0;
}

static inline void aiod_buf_free(aiod_buf *b) { free(b->p); b->p = 0; b->n = b->cap = 0; }
/* aiod_buf_reserve makes room for n more bytes. */
static inline void aiod_buf_reserve(aiod_buf *b, size_t n) {
  if (b->n + n <= b->cap) return;
  size_t c = b->cap ? b->cap * 2 : 256;
  while (c < b->n + n) c *= 2;
  char *q = (char *)realloc(b->p, c);
  if (!q) __builtin_trap();
  b->p = q;
  b->cap = c;
}
static inline void aiod_buf_append(aiod_buf *b, const void *p, size_t n) {
  if (n == 0) return;
  aiod_buf_reserve(b, n);
  memcpy(b->p + b->n, p, n);
  b->n += n;
}
static inline void aiod_buf_puts(aiod_buf *b, const char *s) { aiod_buf_append(b, s, strlen(s)); }

/* aiod_buf_json_string appends s as a JSON string literal (quoted, escaped). */
static inline void aiod_buf_json_string(aiod_buf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  aiod_buf_append(b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', (char)c};
      aiod_buf_append(b, e, 2);
    } else if (c == '\n') {
      aiod_buf_append(b, "\\n", 2);
    } else if (c == '\r') {
      aiod_buf_append(b, "\\r", 2);
    } else if (c == '\t') {
      aiod_buf_append(b, "\\t", 2);
    } else if (c < 0x20) {
      char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
      aiod_buf_append(b, e, 6);
    } else {
      aiod_buf_append(b, &s[i], 1);
    }
  }
  aiod_buf_append(b, "\"", 1);
}

/* aiod_text_result writes a CallToolResult with one text block into out. */
static inline int aiod_text_result(aiod_buf *out, const char *text, size_t n, int is_error) {
  aiod_buf_puts(out, "{\"content\":[{\"type\":\"text\",\"text\":");
  aiod_buf_json_string(out, text, n);
  aiod_buf_puts(out, is_error ? "}],\"isError\":true}" : "}],\"isError\":false}");
  return AIOD_RET_OK;
}

/* aiod_log logs msg (0 debug, 1 info, ... 4 error). */
static inline void aiod_log(int level, const char *msg) { aiod__log((uint32_t)level, msg, (uint32_t)strlen(msg)); }

/* ---- a minimal JSON reader: one member of a top-level object ---- */

static inline size_t aiod__ws(aiod_str j, size_t i) {
  while (i < j.n && (j.p[i] == ' ' || j.p[i] == '\t' || j.p[i] == '\n' || j.p[i] == '\r')) i++;
  return i;
}

/* aiod__skip returns the index after the JSON value at i, or (size_t)-1. */
static inline size_t aiod__skip(aiod_str j, size_t i) {
  i = aiod__ws(j, i);
  if (i >= j.n) return (size_t)-1;
  char c = j.p[i];
  if (c == '"') {
    for (i++; i < j.n; i++) {
      if (j.p[i] == '\\') i++;
      else if (j.p[i] == '"') return i + 1;
    }
    return (size_t)-1;
  }
  if (c == '{' || c == '[') {
    int depth = 0;
    for (; i < j.n; i++) {
      char d = j.p[i];
      if (d == '"') {
        i = aiod__skip(j, i);
        if (i == (size_t)-1) return i;
        i--;
      } else if (d == '{' || d == '[') depth++;
      else if (d == '}' || d == ']') {
        if (--depth == 0) return i + 1;
      }
    }
    return (size_t)-1;
  }
  while (i < j.n && j.p[i] != ',' && j.p[i] != '}' && j.p[i] != ']' && j.p[i] != ' ' && j.p[i] != '\n' &&
         j.p[i] != '\r' && j.p[i] != '\t')
    i++;
  return i;
}

/* aiod_json_member finds member key of the object j and sets *val to its raw
 * JSON text. Returns 1 found, 0 absent, -1 not a JSON object. */
static inline int aiod_json_member(aiod_str j, const char *key, aiod_str *val) {
  size_t klen = strlen(key), i = aiod__ws(j, 0);
  if (i >= j.n || j.p[i] != '{') return -1;
  i = aiod__ws(j, i + 1);
  if (i < j.n && j.p[i] == '}') return 0;
  while (i < j.n) {
    if (j.p[i] != '"') return -1;
    size_t ks = i + 1, ke = aiod__skip(j, i);
    if (ke == (size_t)-1) return -1;
    int match = ke - 1 - ks == klen && memcmp(j.p + ks, key, klen) == 0;
    i = aiod__ws(j, ke);
    if (i >= j.n || j.p[i] != ':') return -1;
    size_t vs = aiod__ws(j, i + 1), ve = aiod__skip(j, vs);
    if (ve == (size_t)-1) return -1;
    if (match) {
      val->p = j.p + vs;
      val->n = ve - vs;
      return 1;
    }
    i = aiod__ws(j, ve);
    if (i < j.n && j.p[i] == ',') i = aiod__ws(j, i + 1);
    else if (i < j.n && j.p[i] == '}') return 0;
    else return -1;
  }
  return -1;
}

static inline void aiod__utf8(aiod_buf *b, uint32_t c) {
  char u[4];
  if (c < 0x80) { u[0] = (char)c; aiod_buf_append(b, u, 1); }
  else if (c < 0x800) { u[0] = (char)(0xc0 | c >> 6); u[1] = (char)(0x80 | (c & 63)); aiod_buf_append(b, u, 2); }
  else if (c < 0x10000) {
    u[0] = (char)(0xe0 | c >> 12); u[1] = (char)(0x80 | (c >> 6 & 63)); u[2] = (char)(0x80 | (c & 63));
    aiod_buf_append(b, u, 3);
  } else {
    u[0] = (char)(0xf0 | c >> 18); u[1] = (char)(0x80 | (c >> 12 & 63)); u[2] = (char)(0x80 | (c >> 6 & 63));
    u[3] = (char)(0x80 | (c & 63));
    aiod_buf_append(b, u, 4);
  }
}

static inline int aiod__hex4(const char *p, uint32_t *v) {
  *v = 0;
  for (int k = 0; k < 4; k++) {
    char c = p[k];
    *v <<= 4;
    if (c >= '0' && c <= '9') *v |= (uint32_t)(c - '0');
    else if (c >= 'a' && c <= 'f') *v |= (uint32_t)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') *v |= (uint32_t)(c - 'A' + 10);
    else return 0;
  }
  return 1;
}

/* aiod_json_decode_string decodes the JSON string literal s into out
 * (appended, not NUL-terminated). Returns 1, or 0 if s is not a string. */
static inline int aiod_json_decode_string(aiod_str s, aiod_buf *out) {
  if (s.n < 2 || s.p[0] != '"' || s.p[s.n - 1] != '"') return 0;
  for (size_t i = 1; i < s.n - 1; i++) {
    char c = s.p[i];
    if (c != '\\') { aiod_buf_append(out, &c, 1); continue; }
    if (++i >= s.n - 1) return 0;
    switch (s.p[i]) {
      case '"': aiod_buf_append(out, "\"", 1); break;
      case '\\': aiod_buf_append(out, "\\", 1); break;
      case '/': aiod_buf_append(out, "/", 1); break;
      case 'b': aiod_buf_append(out, "\b", 1); break;
      case 'f': aiod_buf_append(out, "\f", 1); break;
      case 'n': aiod_buf_append(out, "\n", 1); break;
      case 'r': aiod_buf_append(out, "\r", 1); break;
      case 't': aiod_buf_append(out, "\t", 1); break;
      case 'u': {
        uint32_t c1, c2;
        if (i + 4 >= s.n || !aiod__hex4(s.p + i + 1, &c1)) return 0;
        i += 4;
        if (c1 >= 0xd800 && c1 < 0xdc00 && i + 6 < s.n && s.p[i + 1] == '\\' && s.p[i + 2] == 'u' &&
            aiod__hex4(s.p + i + 3, &c2) && c2 >= 0xdc00 && c2 < 0xe000) {
          c1 = 0x10000 + ((c1 - 0xd800) << 10) + (c2 - 0xdc00);
          i += 6;
        } else if (c1 >= 0xd800 && c1 < 0xe000) {
          c1 = 0xfffd;
        }
        aiod__utf8(out, c1);
        break;
      }
      default: return 0;
    }
  }
  return 1;
}

/* aiod_json_string reads string member key of object j into out.
 * Returns 1 found, 0 absent, -1 malformed or not a string. */
static inline int aiod_json_string(aiod_str j, const char *key, aiod_buf *out) {
  aiod_str v;
  int r = aiod_json_member(j, key, &v);
  if (r != 1) return r;
  return aiod_json_decode_string(v, out) ? 1 : -1;
}

/* aiod_json_int reads integer member key. Returns 1, 0 absent, -1 not an integer. */
static inline int aiod_json_int(aiod_str j, const char *key, int64_t *out) {
  aiod_str v;
  int r = aiod_json_member(j, key, &v);
  if (r != 1) return r;
  size_t i = 0;
  int neg = 0;
  int64_t x = 0;
  if (i < v.n && v.p[i] == '-') { neg = 1; i++; }
  if (i >= v.n) return -1;
  for (; i < v.n; i++) {
    if (v.p[i] < '0' || v.p[i] > '9') return -1;
    x = x * 10 + (v.p[i] - '0');
  }
  *out = neg ? -x : x;
  return 1;
}

/* aiod_json_bool reads boolean member key. Returns 1, 0 absent, -1 not a boolean. */
static inline int aiod_json_bool(aiod_str j, const char *key, int *out) {
  aiod_str v;
  int r = aiod_json_member(j, key, &v);
  if (r != 1) return r;
  if (v.n == 4 && memcmp(v.p, "true", 4) == 0) { *out = 1; return 1; }
  if (v.n == 5 && memcmp(v.p, "false", 5) == 0) { *out = 0; return 1; }
  return -1;
}

/* ---- gated families: (req_ptr, req_len) -> code<<32 | resp_len ---- */

typedef uint64_t (*aiod_family_fn)(const void *req, uint32_t len);

/* aiod_family_call calls a family function with the JSON request req and
 * appends its response (the result, or the error object) to resp. Returns
 * the error code (AIOD_OK on success). */
static inline uint32_t aiod_family_call(aiod_family_fn fn, const char *req, size_t n, aiod_buf *resp) {
  uint64_t r = fn(req, (uint32_t)n);
  uint32_t code = (uint32_t)(r >> 32), len = (uint32_t)r;
  if (len > 0) {
    aiod_buf_reserve(resp, len);
    aiod__response_read(resp->p + resp->n);
    resp->n += len;
  }
  return code;
}

/* The aiod:state family (spec/abi/v1/state.md); request the "state" capability. */
#ifdef AIOD_STATE
AIOD_IMPORT("aiod:state", "get") uint64_t aiod__state_get(const void *, uint32_t);
AIOD_IMPORT("aiod:state", "set") uint64_t aiod__state_set(const void *, uint32_t);
AIOD_IMPORT("aiod:state", "delete") uint64_t aiod__state_delete(const void *, uint32_t);

/* aiod_state_get reads key into value. Returns AIOD_OK (found), AIOD_NOT_FOUND, or another code. */
static inline uint32_t aiod_state_get(const char *key, aiod_buf *value) {
  aiod_buf req = {0}, resp = {0};
  aiod_buf_puts(&req, "{\"key\":");
  aiod_buf_json_string(&req, key, strlen(key));
  aiod_buf_puts(&req, "}");
  uint32_t code = aiod_family_call(aiod__state_get, req.p, req.n, &resp);
  if (code == AIOD_OK) {
    aiod_str j = {resp.p, resp.n};
    int found = 0;
    if (aiod_json_bool(j, "found", &found) != 1) code = AIOD_INTERNAL;
    else if (!found) code = AIOD_NOT_FOUND;
    else if (aiod_json_string(j, "value", value) != 1) code = AIOD_INTERNAL;
  }
  aiod_buf_free(&req);
  aiod_buf_free(&resp);
  return code;
}

/* aiod_state_set sets key to value (n bytes). Returns the error code. */
static inline uint32_t aiod_state_set(const char *key, const char *value, size_t n) {
  aiod_buf req = {0}, resp = {0};
  aiod_buf_puts(&req, "{\"key\":");
  aiod_buf_json_string(&req, key, strlen(key));
  aiod_buf_puts(&req, ",\"value\":");
  aiod_buf_json_string(&req, value, n);
  aiod_buf_puts(&req, "}");
  uint32_t code = aiod_family_call(aiod__state_set, req.p, req.n, &resp);
  aiod_buf_free(&req);
  aiod_buf_free(&resp);
  return code;
}
#endif

/* ---- guard plugins (ABI v1.1, spec/hooks.md) ----
 *
 * A hook handler sees a call of another tool before it runs (op 5) or its
 * result after (op 6): int hook(aiod_str tool, aiod_str event, aiod_buf *out),
 * where event is the hook event JSON ({"config","tenant","era","session",
 * "tool","arguments"} and, after, "result"; read it with aiod_json_member
 * and friends). It returns AIOD_ALLOW (before) or AIOD_KEEP (after) to let the
 * call or result go on, which the SDK answers with one constant write and no
 * allocation; or AIOD_RET_OK with an answer written by aiod_hook_deny,
 * aiod_hook_rewrite (before), aiod_hook_replace or aiod_hook_add (after). */
enum { AIOD_ALLOW = 0x100, AIOD_KEEP = 0x101 };

typedef int (*aiod_hook_fn)(aiod_str tool, aiod_str event, aiod_buf *out);
typedef int (*aiod_tool_fn)(aiod_str tool, aiod_str args, aiod_buf *out);

/* aiod_hook_deny stops the call before it runs; the model is shown reason. */
static inline int aiod_hook_deny(aiod_buf *out, const char *reason, size_t n) {
  aiod_buf_puts(out, "{\"action\":\"deny\",\"reason\":");
  aiod_buf_json_string(out, reason, n);
  aiod_buf_puts(out, "}");
  return AIOD_RET_OK;
}

/* aiod_hook_rewrite lets the call go on with args (a JSON object, n bytes). */
static inline int aiod_hook_rewrite(aiod_buf *out, const char *args, size_t n) {
  aiod_buf_puts(out, "{\"action\":\"rewrite\",\"arguments\":");
  aiod_buf_append(out, args, n);
  aiod_buf_puts(out, "}");
  return AIOD_RET_OK;
}

/* aiod_hook_replace puts result (a CallToolResult object, n bytes) in the
 * place of the call's result. */
static inline int aiod_hook_replace(aiod_buf *out, const char *result, size_t n) {
  aiod_buf_puts(out, "{\"action\":\"replace\",\"result\":");
  aiod_buf_append(out, result, n);
  aiod_buf_puts(out, "}");
  return AIOD_RET_OK;
}

/* aiod_hook_add adds text (n bytes) to the result, as a block marked as the
 * guard's. */
static inline int aiod_hook_add(aiod_buf *out, const char *text, size_t n) {
  aiod_buf_puts(out, "{\"action\":\"add\",\"text\":");
  aiod_buf_json_string(out, text, n);
  aiod_buf_puts(out, "}");
  return AIOD_RET_OK;
}

/* aiod__input is the input buffer, kept between calls (grown, never freed). */
static inline char *aiod__input(size_t n) {
  static char *buf;
  static size_t cap;
  if (n > cap) {
    size_t c = cap ? cap : 1024;
    while (c < n) c *= 2;
    char *q = (char *)realloc(buf, c);
    if (!q) __builtin_trap();
    buf = q;
    cap = c;
  }
  return buf;
}

/* aiod__hook runs hook h for op 5 or 6 (an absent one: unknown op). */
static inline int32_t aiod__hook(aiod_hook_fn h, int32_t op, uint32_t name_len, uint32_t args_len) {
  static const char allow[] = "{\"action\":\"allow\"}", keep[] = "{\"action\":\"keep\"}";
  if (!h) return AIOD_RET_UNKNOWN_OP;
  char *in = aiod__input((size_t)name_len + args_len);
  if (name_len + args_len) aiod__input_read(in);
  aiod_str tool = {in, name_len}, event = {in + name_len, args_len};
  aiod_buf out = {0};
  int ret = h(tool, event, &out);
  if (ret == AIOD_ALLOW || ret == AIOD_KEEP) {
    /* the answer the host recognises without decoding */
    if (ret == (op == AIOD_OP_HOOK_BEFORE ? AIOD_ALLOW : AIOD_KEEP)) {
      if (ret == AIOD_ALLOW) aiod__output_write(allow, sizeof allow - 1);
      else aiod__output_write(keep, sizeof keep - 1);
      ret = AIOD_RET_OK;
    } else {
      ret = AIOD_RET_BAD_INPUT; /* allow after a call, keep before: a mistake */
    }
  } else if (out.n) {
    aiod__output_write(out.p, (uint32_t)out.n);
  }
  aiod_buf_free(&out);
  return ret;
}

/* AIOD_PLUGIN(describe, handler) defines the module's exports: describe is
 * the manifest document (a NUL-terminated JSON string), handler answers
 * tools/call: int handler(aiod_str tool, aiod_str args, aiod_buf *out),
 * returning an AIOD_RET_* code with the CallToolResult in out.
 *
 * AIOD_GUARD(describe, handler, before, after) defines a guard plugin's:
 * before and after are hook handlers (above), handler the tools' (0 for
 * each it does not have). Its manifest declares "hooks" with the globs of
 * each handler it has: the host never calls a hook the manifest does not
 * declare. */
#define AIOD_PLUGIN(describe, handler) AIOD_GUARD(describe, handler, 0, 0)

#define AIOD_GUARD(describe, handler, before, after)                                      \
  __attribute__((export_name("aiod_abi_version"))) int32_t aiod_abi_version(void) {      \
    return AIOD_ABI_VERSION;                                                             \
  }                                                                                      \
  __attribute__((export_name("aiod_call"))) int32_t aiod_call(int32_t op, uint32_t name_len, \
                                                             uint32_t args_len) {         \
    aiod_tool_fn tool_fn = (handler);                                                    \
    if (op == AIOD_OP_HOOK_BEFORE) return aiod__hook((before), op, name_len, args_len);  \
    if (op == AIOD_OP_HOOK_AFTER) return aiod__hook((after), op, name_len, args_len);    \
    size_t n = (size_t)name_len + args_len;                                              \
    char *in = (char *)malloc(n ? n : 1);                                                \
    if (!in) __builtin_trap();                                                           \
    if (n) aiod__input_read(in);                                                         \
    aiod_buf out = {0};                                                                  \
    int32_t ret;                                                                         \
    if (op == AIOD_OP_DESCRIBE) {                                                        \
      aiod_buf_puts(&out, describe);                                                     \
      ret = AIOD_RET_OK;                                                                 \
    } else if (op == AIOD_OP_TOOL_CALL && tool_fn) {                                     \
      aiod_str tool = {in, name_len}, args = {in + name_len, args_len};                  \
      ret = tool_fn(tool, args, &out);                                                   \
    } else {                                                                             \
      ret = AIOD_RET_UNKNOWN_OP;                                                         \
    }                                                                                    \
    if (out.n) aiod__output_write(out.p, (uint32_t)out.n);                               \
    aiod_buf_free(&out);                                                                 \
    free(in);                                                                            \
    return ret;                                                                          \
  }

#endif /* AIOD_H */
