//! tally-rust: the tally example plugin in Rust (sdk/rust). Tools: echo
//! (the text back) and count (a per-client counter kept in aiod:state).
//! The same tools, with the same answers, exist in Go, C and
//! AssemblyScript (plugins/examples/tally-*; host/e2e TestTallyLanguages).
//!
//! Build: aiod plugin build plugins/examples/tally-rust, or by hand:
//!   /usr/bin/rustc --target wasm32-wasi --crate-type cdylib -C opt-level=s -C strip=symbols -o plugin.wasm main.rs

#[path = "../../../sdk/rust/lib.rs"]
#[macro_use]
mod aiod;

const DESCRIBE: &str = r#"{"name":"tally-rust","version":"1.0.0","abi":1,"description":"Example plugin in Rust: echo, and a per-client counter kept in aiod:state.","tools":[{"name":"echo","description":"Echo the given text back as one text content block.","inputSchema":{"type":"object","properties":{"text":{"type":"string","description":"the text to echo back"}},"required":["text"],"additionalProperties":false}},{"name":"count","description":"Add one to the named counter (kept per client in aiod:state) and return its new value.","inputSchema":{"type":"object","properties":{"name":{"type":"string","description":"the counter's name"}},"required":["name"],"additionalProperties":false}}],"capabilities":{"state":{"max_bytes":65536}}}"#;

fn echo(args: &str) -> String {
    match aiod::json_string(args, "text") {
        Some(t) => aiod::text_result(&t, false),
        None => aiod::text_result("text is required", true),
    }
}

fn count(args: &str) -> String {
    let name = match aiod::json_string(args, "name") {
        Some(n) if !n.is_empty() => n,
        _ => return aiod::text_result("name is required", true),
    };
    let key = format!("count/{}", name);
    let n: i64 = match aiod::state::get(&key) {
        Ok(Some(v)) => v.parse().unwrap_or(0),
        Ok(None) => 0,
        Err(_) => return aiod::text_result("state get failed", true),
    };
    let next = (n + 1).to_string();
    if aiod::state::set(&key, &next).is_err() {
        return aiod::text_result("state set failed", true);
    }
    aiod::text_result(&next, false)
}

fn handle(tool: &str, args: &str) -> Result<String, i32> {
    match tool {
        "echo" => Ok(echo(args)),
        "count" => Ok(count(args)),
        _ => Err(aiod::RET_UNKNOWN_NAME),
    }
}

aiod_plugin!(DESCRIBE, handle);
