//! aiod: a small Rust SDK for aiod plugins (ABI v1, reactor form;
//! spec/abi/v1.md, spec/abi/languages.md). No dependencies: Debian's
//! rustc 1.63 with libstd-rust-dev-wasm32, no cargo, no crate registry.
//!
//! Use it as a module (one rustc invocation, the way `aiod plugin new
//! --lang rust` lays a project out):
//!
//! ```ignore
//! #[path = "aiod.rs"]
//! mod aiod;
//! const DESCRIBE: &str = r#"{"name":"hello","version":"1.0.0","abi":1,"tools":[...]}"#;
//! fn handle(tool: &str, args: &str) -> Result<String, i32> {
//!     match tool {
//!         "hello" => Ok(aiod::text_result("hi", false)),
//!         _ => Err(aiod::RET_UNKNOWN_NAME),
//!     }
//! }
//! aiod_plugin!(DESCRIBE, handle);
//! ```
//!
//! and build it as a cdylib:
//!
//! ```text
//! /usr/bin/rustc --target wasm32-wasi --crate-type cdylib -C opt-level=s -C strip=symbols -o plugin.wasm main.rs
//! ```
//!
//! The module's exports are `aiod_abi_version` and `aiod_call`
//! (`#[no_mangle] extern "C"`); rustc 1.63's wasm32-wasi cdylib has no
//! `_initialize` of its own, so the macro exports one that runs the C
//! library's constructors once, as a WASI reactor's initialiser does.
#![allow(dead_code)]

/// The ABI version (the value of `aiod_abi_version`).
pub const ABI_VERSION: i32 = 1;

/// `aiod_call` operations.
pub const OP_DESCRIBE: i32 = 0;
pub const OP_TOOL_CALL: i32 = 1;
/// A guard plugin's hooks (ABI v1.1, spec/hooks.md).
pub const OP_HOOK_BEFORE: i32 = 5;
pub const OP_HOOK_AFTER: i32 = 6;

/// `aiod_call` return codes.
pub const RET_OK: i32 = 0;
pub const RET_UNKNOWN_NAME: i32 = 1;
pub const RET_BAD_INPUT: i32 = 2;
pub const RET_UNKNOWN_OP: i32 = 3;

/// Host function error codes (spec/abi/v1.md §5).
pub const OK: u32 = 0;
pub const DENIED: u32 = 1;
pub const INVALID: u32 = 2;
pub const NOT_FOUND: u32 = 3;
pub const TOO_LARGE: u32 = 6;
pub const INTERNAL: u32 = 9;

pub mod sys {
    #[link(wasm_import_module = "aiod:core")]
    extern "C" {
        pub fn input_read(ptr: *mut u8);
        pub fn output_write(ptr: *const u8, len: u32) -> i32;
        pub fn response_read(ptr: *mut u8);
        pub fn log(level: u32, ptr: *const u8, len: u32);
    }
    #[link(wasm_import_module = "aiod:state")]
    extern "C" {
        #[link_name = "get"]
        pub fn state_get(ptr: *const u8, len: u32) -> u64;
        #[link_name = "set"]
        pub fn state_set(ptr: *const u8, len: u32) -> u64;
        #[link_name = "delete"]
        pub fn state_delete(ptr: *const u8, len: u32) -> u64;
    }
    extern "C" {
        pub fn __wasm_call_ctors();
    }
}

/// Reads the call's input (name ‖ arguments); used by `aiod_plugin!`.
pub fn read_input(name_len: u32, args_len: u32) -> Vec<u8> {
    let n = name_len as usize + args_len as usize;
    let mut v = vec![0u8; n];
    if n > 0 {
        unsafe { sys::input_read(v.as_mut_ptr()) }
    }
    v
}

/// Appends bytes to the call's output.
pub fn write_output(b: &[u8]) {
    if !b.is_empty() {
        unsafe {
            sys::output_write(b.as_ptr(), b.len() as u32);
        }
    }
}

/// Logs a message (0 debug, 1 info, ... 4 error).
pub fn log(level: u32, msg: &str) {
    unsafe { sys::log(level, msg.as_ptr(), msg.len() as u32) }
}

/// Calls a gated family function with a JSON request: Ok(response) or
/// Err((code, error object)).
pub fn family_call(f: unsafe extern "C" fn(*const u8, u32) -> u64, req: &str) -> Result<String, (u32, String)> {
    let r = unsafe { f(req.as_ptr(), req.len() as u32) };
    let code = (r >> 32) as u32;
    let n = (r & 0xffff_ffff) as usize;
    let mut v = vec![0u8; n];
    if n > 0 {
        unsafe { sys::response_read(v.as_mut_ptr()) }
    }
    let s = String::from_utf8_lossy(&v).into_owned();
    if code == OK {
        Ok(s)
    } else {
        Err((code, s))
    }
}

/// The `aiod:state` family (request the "state" capability).
pub mod state {
    /// Reads key: Ok(Some(value)), Ok(None) when unset, Err(code).
    pub fn get(key: &str) -> Result<Option<String>, u32> {
        let req = format!("{{\"key\":{}}}", super::quote(key));
        let resp = super::family_call(super::sys::state_get, &req).map_err(|e| e.0)?;
        match super::json_member(&resp, "found") {
            Some("true") => {}
            Some("false") => return Ok(None),
            _ => return Err(super::INTERNAL),
        }
        super::json_string(&resp, "value").map(Some).ok_or(super::INTERNAL)
    }
    /// Sets key to value.
    pub fn set(key: &str, value: &str) -> Result<(), u32> {
        let req = format!("{{\"key\":{},\"value\":{}}}", super::quote(key), super::quote(value));
        super::family_call(super::sys::state_set, &req).map(|_| ()).map_err(|e| e.0)
    }
}

/// A CallToolResult with one text block.
pub fn text_result(text: &str, is_error: bool) -> String {
    let mut s = String::from("{\"content\":[{\"type\":\"text\",\"text\":");
    s.push_str(&quote(text));
    s.push_str(if is_error { "}],\"isError\":true}" } else { "}],\"isError\":false}" });
    s
}

/// s as a JSON string literal.
pub fn quote(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// The index after the JSON value starting at i (whitespace first).
fn skip(b: &[u8], i: usize) -> Option<usize> {
    let mut i = ws(b, i);
    match *b.get(i)? {
        b'"' => {
            i += 1;
            while i < b.len() {
                match b[i] {
                    b'\\' => i += 2,
                    b'"' => return Some(i + 1),
                    _ => i += 1,
                }
            }
            None
        }
        b'{' | b'[' => {
            let mut depth = 0;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = skip(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                i += 1;
            }
            Some(i)
        }
    }
}

/// The raw JSON text of member key of the object j (None: absent or not an object).
pub fn json_member<'a>(j: &'a str, key: &str) -> Option<&'a str> {
    let b = j.as_bytes();
    let mut i = ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return None;
    }
    while i < b.len() {
        if b[i] != b'"' {
            return None;
        }
        let ke = skip(b, i)?;
        // a key without escapes is compared as it is (no allocation)
        let raw = &j[i + 1..ke - 1];
        let found = if raw.contains('\\') { decode_string(&j[i..ke])? == key } else { raw == key };
        i = ws(b, ke);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let vs = ws(b, i + 1);
        let ve = skip(b, vs)?;
        if found {
            return Some(&j[vs..ve]);
        }
        i = ws(b, ve);
        match b.get(i) {
            Some(b',') => i = ws(b, i + 1),
            _ => return None,
        }
    }
    None
}

/// Decodes a JSON string literal.
pub fn decode_string(s: &str) -> Option<String> {
    let b = s.as_bytes();
    if b.len() < 2 || b[0] != b'"' || b[b.len() - 1] != b'"' {
        return None;
    }
    let inner = &s[1..s.len() - 1];
    if !inner.contains('\\') {
        return Some(inner.to_string());
    }
    let mut o = String::with_capacity(inner.len());
    let mut it = inner.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            o.push(c);
            continue;
        }
        match it.next()? {
            '"' => o.push('"'),
            '\\' => o.push('\\'),
            '/' => o.push('/'),
            'b' => o.push('\u{8}'),
            'f' => o.push('\u{c}'),
            'n' => o.push('\n'),
            'r' => o.push('\r'),
            't' => o.push('\t'),
            'u' => {
                let hex: String = (&mut it).take(4).collect();
                let mut cp = u32::from_str_radix(&hex, 16).ok()?;
                if (0xd800..0xdc00).contains(&cp) {
                    let rest = it.as_str();
                    if rest.starts_with("\\u") && rest.len() >= 6 {
                        if let Ok(lo) = u32::from_str_radix(&rest[2..6], 16) {
                            if (0xdc00..0xe000).contains(&lo) {
                                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                                for _ in 0..6 {
                                    it.next();
                                }
                            }
                        }
                    }
                }
                o.push(char::from_u32(cp).unwrap_or('\u{fffd}'));
            }
            _ => return None,
        }
    }
    Some(o)
}

/// String member key of the object j.
pub fn json_string(j: &str, key: &str) -> Option<String> {
    decode_string(json_member(j, key)?)
}

/// Integer member key of the object j.
pub fn json_int(j: &str, key: &str) -> Option<i64> {
    json_member(j, key)?.parse().ok()
}

/// Boolean member key of the object j.
pub fn json_bool(j: &str, key: &str) -> Option<bool> {
    match json_member(j, key)? {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// Runs one aiod_call: describe answers `describe`, tools/call runs
/// handler(tool, arguments) -> Ok(CallToolResult JSON) or Err(return code).
pub fn dispatch(op: i32, name_len: u32, args_len: u32, describe: &str, handler: fn(&str, &str) -> Result<String, i32>) -> i32 {
    let input = read_input(name_len, args_len);
    match op {
        OP_DESCRIBE => {
            write_output(describe.as_bytes());
            RET_OK
        }
        OP_TOOL_CALL => {
            let (name, args) = input.split_at(name_len as usize);
            let name = String::from_utf8_lossy(name);
            let args = String::from_utf8_lossy(args);
            match handler(&name, &args) {
                Ok(out) => {
                    write_output(out.as_bytes());
                    RET_OK
                }
                Err(code) => code,
            }
        }
        _ => RET_UNKNOWN_OP,
    }
}

/// A guard's answer (spec/hooks.md §1): before a call `Allow`, `Deny`
/// (the reason) or `Rewrite` (the new arguments, a JSON object); after it
/// `Keep`, `Replace` (the new CallToolResult, a JSON object) or `Add` (a
/// text block marked as the guard's).
pub enum HookAnswer {
    Allow,
    Deny(String),
    Rewrite(String),
    Keep,
    Replace(String),
    Add(String),
}

/// A hook handler: the tool's name and the hook event JSON
/// (`{"config","tenant","era","session","tool","arguments"}` and, after a
/// call, `"result"`; read it with `json_member` and friends).
pub type HookFn = fn(tool: &str, event: &str) -> HookAnswer;

/// A tool handler (`dispatch`).
pub type ToolFn = fn(tool: &str, args: &str) -> Result<String, i32>;

/// The input buffer of the hook ops, kept between calls (wasm32-wasi runs
/// one call at a time).
static mut HOOK_INPUT: Vec<u8> = Vec::new();

/// Runs hook h for op 5 or 6. Allow and Keep are one constant write: no
/// allocation, and the bytes the host recognises without decoding.
pub fn dispatch_hook(op: i32, name_len: u32, args_len: u32, h: Option<HookFn>) -> i32 {
    let h = match h {
        Some(h) => h,
        None => return RET_UNKNOWN_OP,
    };
    let n = name_len as usize + args_len as usize;
    // SAFETY: one call at a time; the buffer is not used elsewhere.
    let input = unsafe { &mut *std::ptr::addr_of_mut!(HOOK_INPUT) };
    input.clear();
    input.resize(n, 0);
    if n > 0 {
        unsafe { sys::input_read(input.as_mut_ptr()) }
    }
    let (name, event) = input.split_at(name_len as usize);
    let (name, event) = match (std::str::from_utf8(name), std::str::from_utf8(event)) {
        (Ok(a), Ok(b)) => (a, b),
        _ => return RET_BAD_INPUT,
    };
    let before = op == OP_HOOK_BEFORE;
    let mut out = String::new();
    match h(name, event) {
        HookAnswer::Allow if before => write_output(br#"{"action":"allow"}"#),
        HookAnswer::Keep if !before => write_output(br#"{"action":"keep"}"#),
        HookAnswer::Deny(reason) if before => {
            out.push_str(r#"{"action":"deny","reason":"#);
            out.push_str(&quote(&reason));
        }
        HookAnswer::Rewrite(args) if before => {
            out.push_str(r#"{"action":"rewrite","arguments":"#);
            out.push_str(&args);
        }
        HookAnswer::Replace(result) if !before => {
            out.push_str(r#"{"action":"replace","result":"#);
            out.push_str(&result);
        }
        HookAnswer::Add(text) if !before => {
            out.push_str(r#"{"action":"add","text":"#);
            out.push_str(&quote(&text));
        }
        _ => return RET_BAD_INPUT, // an answer of the other phase
    }
    if !out.is_empty() {
        out.push('}');
        write_output(out.as_bytes());
    }
    RET_OK
}

/// Runs one aiod_call of a guard plugin: ops 5 and 6 go to before and
/// after (`dispatch_hook`), the others to `dispatch` with the tool
/// handler (none: every tool is unknown).
pub fn dispatch_guard(op: i32, name_len: u32, args_len: u32, describe: &str, handler: Option<ToolFn>, before: Option<HookFn>, after: Option<HookFn>) -> i32 {
    match op {
        OP_HOOK_BEFORE => dispatch_hook(op, name_len, args_len, before),
        OP_HOOK_AFTER => dispatch_hook(op, name_len, args_len, after),
        _ => dispatch(op, name_len, args_len, describe, handler.unwrap_or(|_, _| Err(RET_UNKNOWN_NAME))),
    }
}

/// Defines a guard plugin's exports: the manifest document (which declares
/// "hooks" with the globs of each handler given), the tool handler and the
/// before and after hook handlers, each an `Option` (`None` for one the
/// plugin does not have; the host never calls a hook the manifest does
/// not declare).
#[macro_export]
macro_rules! aiod_guard {
    ($describe:expr, $handler:expr, $before:expr, $after:expr) => {
        #[no_mangle]
        pub extern "C" fn aiod_abi_version() -> i32 {
            aiod::ABI_VERSION
        }
        #[no_mangle]
        pub extern "C" fn aiod_call(op: i32, name_len: u32, args_len: u32) -> i32 {
            aiod::dispatch_guard(op, name_len, args_len, $describe, $handler, $before, $after)
        }
        #[no_mangle]
        pub extern "C" fn _initialize() {
            unsafe { aiod::sys::__wasm_call_ctors() }
        }
    };
}

/// Defines the module's exports from the manifest document and the tool handler.
#[macro_export]
macro_rules! aiod_plugin {
    ($describe:expr, $handler:expr) => {
        #[no_mangle]
        pub extern "C" fn aiod_abi_version() -> i32 {
            aiod::ABI_VERSION
        }
        #[no_mangle]
        pub extern "C" fn aiod_call(op: i32, name_len: u32, args_len: u32) -> i32 {
            aiod::dispatch(op, name_len, args_len, $describe, $handler)
        }
        #[no_mangle]
        pub extern "C" fn _initialize() {
            unsafe { aiod::sys::__wasm_call_ctors() }
        }
    };
}
