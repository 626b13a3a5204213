// aiod.ts: a small AssemblyScript SDK for aiod plugins (ABI v1, reactor
// form; spec/abi/v1.md, spec/abi/languages.md). AssemblyScript 0.28 (npm
// package assemblyscript), no other dependency.
//
// A plugin registers its manifest document and one tool handler at top
// level, and re-exports the ABI entry points:
//
//   import { plugin, textResult } from "./aiod";
//   export { aiod_abi_version, aiod_call } from "./aiod";
//   plugin(DESCRIBE, (tool: string, args: string): string | null => {
//     if (tool == "hello") return textResult("hi", false);
//     return null; // unknown tool
//   });
//
// Build (the top level runs in the exported reactor initialiser; abort
// becomes a trap, so the only imports are aiod's):
//
//   asc main.ts -O --runtime incremental --exportStart _initialize --use abort= -o plugin.wasm
//
// Strings are UTF-16 inside AssemblyScript and UTF-8 on the wire; the SDK
// converts at the boundary.

export const ABI_VERSION: i32 = 1;
export const OP_DESCRIBE: i32 = 0;
export const OP_TOOL_CALL: i32 = 1;
export const RET_OK: i32 = 0;
export const RET_UNKNOWN_NAME: i32 = 1;
export const RET_BAD_INPUT: i32 = 2;
export const RET_UNKNOWN_OP: i32 = 3;

// Host function error codes (spec/abi/v1.md §5).
export const OK: u32 = 0;
export const NOT_FOUND: u32 = 3;
export const INTERNAL: u32 = 9;

@external("aiod:core", "input_read")
declare function input_read(ptr: usize): void;
@external("aiod:core", "output_write")
declare function output_write(ptr: usize, len: u32): i32;
@external("aiod:core", "response_read")
declare function response_read(ptr: usize): void;
@external("aiod:core", "log")
declare function core_log(level: u32, ptr: usize, len: u32): void;

// The aiod:state family (request the "state" capability). Unused imports
// are left out of the module by the compiler.
@external("aiod:state", "get")
declare function state_get(ptr: usize, len: u32): u64;
@external("aiod:state", "set")
declare function state_set(ptr: usize, len: u32): u64;

let describeDoc: string = "";
let toolHandler: (tool: string, args: string) => string | null = (tool: string, args: string): string | null => null;

// plugin registers the manifest document and the tools/call handler: it
// returns the CallToolResult JSON, or null for an unknown tool.
export function plugin(describe: string, handler: (tool: string, args: string) => string | null): void {
  describeDoc = describe;
  toolHandler = handler;
}

export function aiod_abi_version(): i32 {
  return ABI_VERSION;
}

export function aiod_call(op: i32, nameLen: u32, argsLen: u32): i32 {
  const n = nameLen + argsLen;
  const buf = new ArrayBuffer(<i32>n);
  if (n > 0) input_read(changetype<usize>(buf));
  if (op == OP_DESCRIBE) {
    writeOutput(describeDoc);
    return RET_OK;
  }
  if (op != OP_TOOL_CALL) return RET_UNKNOWN_OP;
  const base = changetype<usize>(buf);
  const name = String.UTF8.decodeUnsafe(base, nameLen);
  const args = String.UTF8.decodeUnsafe(base + nameLen, argsLen);
  const out = toolHandler(name, args);
  if (out === null) return RET_UNKNOWN_NAME;
  writeOutput(out);
  return RET_OK;
}

// writeOutput appends s (as UTF-8) to the call's output.
export function writeOutput(s: string): void {
  const b = String.UTF8.encode(s);
  if (b.byteLength > 0) output_write(changetype<usize>(b), <u32>b.byteLength);
}

// log logs a message (0 debug, 1 info, ... 4 error).
export function log(level: u32, msg: string): void {
  const b = String.UTF8.encode(msg);
  core_log(level, changetype<usize>(b), <u32>b.byteLength);
}

// FamilyResult is a family function's answer: code 0 and the response, or
// the error code and the error object.
export class FamilyResult {
  constructor(public code: u32, public body: string) {}
}

export function familyCall(fn: (ptr: usize, len: u32) => u64, req: string): FamilyResult {
  const b = String.UTF8.encode(req);
  const r = fn(changetype<usize>(b), <u32>b.byteLength);
  const code = <u32>(r >> 32);
  const n = <u32>(r & 0xffffffff);
  let body = "";
  if (n > 0) {
    const resp = new ArrayBuffer(<i32>n);
    response_read(changetype<usize>(resp));
    body = String.UTF8.decodeUnsafe(changetype<usize>(resp), n);
  }
  return new FamilyResult(code, body);
}

// stateGet reads key: code OK with the value, NOT_FOUND, or another code.
export function stateGet(key: string): FamilyResult {
  const r = familyCall((p: usize, n: u32): u64 => state_get(p, n), "{\"key\":" + quote(key) + "}");
  if (r.code != OK) return r;
  const found = jsonMember(r.body, "found");
  if (found == "false") return new FamilyResult(NOT_FOUND, "");
  const v = jsonString(r.body, "value");
  if (found != "true" || v === null) return new FamilyResult(INTERNAL, r.body);
  return new FamilyResult(OK, v);
}

// stateSet sets key to value; returns the error code.
export function stateSet(key: string, value: string): u32 {
  return familyCall((p: usize, n: u32): u64 => state_set(p, n), "{\"key\":" + quote(key) + ",\"value\":" + quote(value) + "}").code;
}

// textResult is a CallToolResult with one text block.
export function textResult(text: string, isError: bool): string {
  return "{\"content\":[{\"type\":\"text\",\"text\":" + quote(text) + (isError ? "}],\"isError\":true}" : "}],\"isError\":false}");
}

const HEX = "0123456789abcdef";

// quote returns s as a JSON string literal.
export function quote(s: string): string {
  let o = "\"";
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let esc = "";
    if (c == 0x22) esc = "\\\"";
    else if (c == 0x5c) esc = "\\\\";
    else if (c == 0x0a) esc = "\\n";
    else if (c == 0x0d) esc = "\\r";
    else if (c == 0x09) esc = "\\t";
    else if (c < 0x20) esc = "\\u00" + HEX.charAt(c >> 4) + HEX.charAt(c & 15);
    else continue;
    o += s.substring(start, i) + esc;
    start = i + 1;
  }
  return o + s.substring(start) + "\"";
}

function ws(s: string, i: i32): i32 {
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (c != 0x20 && c != 0x09 && c != 0x0a && c != 0x0d) break;
    i++;
  }
  return i;
}

// skip returns the index after the JSON value at i, or -1.
function skip(s: string, i: i32): i32 {
  i = ws(s, i);
  if (i >= s.length) return -1;
  const c = s.charCodeAt(i);
  if (c == 0x22) {
    for (i++; i < s.length; i++) {
      const d = s.charCodeAt(i);
      if (d == 0x5c) i++;
      else if (d == 0x22) return i + 1;
    }
    return -1;
  }
  if (c == 0x7b || c == 0x5b) {
    let depth = 0;
    while (i < s.length) {
      const d = s.charCodeAt(i);
      if (d == 0x22) {
        i = skip(s, i);
        if (i < 0) return -1;
        continue;
      }
      if (d == 0x7b || d == 0x5b) depth++;
      else if (d == 0x7d || d == 0x5d) {
        depth--;
        if (depth == 0) return i + 1;
      }
      i++;
    }
    return -1;
  }
  while (i < s.length) {
    const d = s.charCodeAt(i);
    if (d == 0x2c || d == 0x7d || d == 0x5d || d == 0x20 || d == 0x09 || d == 0x0a || d == 0x0d) break;
    i++;
  }
  return i;
}

// jsonMember returns the raw JSON text of member key of the object j, or
// null when absent or j is not an object.
export function jsonMember(j: string, key: string): string | null {
  let i = ws(j, 0);
  if (i >= j.length || j.charCodeAt(i) != 0x7b) return null;
  i = ws(j, i + 1);
  if (i < j.length && j.charCodeAt(i) == 0x7d) return null;
  while (i < j.length) {
    if (j.charCodeAt(i) != 0x22) return null;
    const ke = skip(j, i);
    if (ke < 0) return null;
    const k = decodeString(j.substring(i, ke));
    i = ws(j, ke);
    if (i >= j.length || j.charCodeAt(i) != 0x3a) return null;
    const vs = ws(j, i + 1);
    const ve = skip(j, vs);
    if (ve < 0) return null;
    if (k !== null && k == key) return j.substring(vs, ve);
    i = ws(j, ve);
    if (i < j.length && j.charCodeAt(i) == 0x2c) i = ws(j, i + 1);
    else return null;
  }
  return null;
}

function hex4(s: string, i: i32): i32 {
  let v = 0;
  for (let k = 0; k < 4; k++) {
    const c = s.charCodeAt(i + k);
    v <<= 4;
    if (c >= 0x30 && c <= 0x39) v |= c - 0x30;
    else if (c >= 0x61 && c <= 0x66) v |= c - 0x61 + 10;
    else if (c >= 0x41 && c <= 0x46) v |= c - 0x41 + 10;
    else return -1;
  }
  return v;
}

// decodeString decodes a JSON string literal, or returns null.
export function decodeString(s: string): string | null {
  if (s.length < 2 || s.charCodeAt(0) != 0x22 || s.charCodeAt(s.length - 1) != 0x22) return null;
  const end = s.length - 1;
  let o = "";
  let start = 1;
  for (let i = 1; i < end; i++) {
    if (s.charCodeAt(i) != 0x5c) continue;
    o += s.substring(start, i);
    i++;
    if (i >= end) return null;
    const e = s.charCodeAt(i);
    if (e == 0x22) o += "\"";
    else if (e == 0x5c) o += "\\";
    else if (e == 0x2f) o += "/";
    else if (e == 0x62) o += "\b";
    else if (e == 0x66) o += "\f";
    else if (e == 0x6e) o += "\n";
    else if (e == 0x72) o += "\r";
    else if (e == 0x74) o += "\t";
    else if (e == 0x75) {
      if (i + 4 >= s.length) return null;
      const v = hex4(s, i + 1);
      if (v < 0) return null;
      o += String.fromCharCode(v); // surrogate pairs arrive as two escapes: UTF-16 keeps them
      i += 4;
    } else return null;
    start = i + 1;
  }
  return o + s.substring(start, end);
}

// jsonString returns string member key of the object j, or null.
export function jsonString(j: string, key: string): string | null {
  const v = jsonMember(j, key);
  if (v === null) return null;
  return decodeString(v);
}
