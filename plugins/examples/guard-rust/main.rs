//! guard-rust: the example guard plugin in Rust (sdk/rust, spec/hooks.md).
//! It sees every call before it runs and every result after, and lets
//! them go on: a no-op guard, the cheapest a guard can be (the SDK answers
//! Allow and Keep with one constant write). Its policy entry's config can
//! make it answer otherwise, as the C example's (plugins/examples/guard-c):
//! "before": "deny" or "rewrite"; "after": "add" or "replace".
//!
//! Build: aiod plugin build plugins/examples/guard-rust, or by hand:
//!   /usr/bin/rustc --target wasm32-wasi --crate-type cdylib -C opt-level=s -C strip=symbols -o plugin.wasm main.rs

#[path = "../../../sdk/rust/lib.rs"]
#[macro_use]
mod aiod;

use aiod::HookAnswer;

const DESCRIBE: &str = r#"{"name":"guard-rust","version":"1.0.0","abi":1,"description":"Example guard plugin in Rust: lets every call and result go on (its config can make it deny, rewrite, add or replace).","tools":[],"hooks":{"before":["*"],"after":["*"]}}"#;

/// The config member key of the event, if any.
fn mode(event: &str, key: &str) -> Option<String> {
    aiod::json_member(event, "config").and_then(|cfg| aiod::json_string(cfg, key))
}

fn before(tool: &str, event: &str) -> HookAnswer {
    match mode(event, "before").as_deref() {
        Some("deny") => {
            let tenant = aiod::json_string(event, "tenant").unwrap_or_default();
            HookAnswer::Deny(format!("guard-rust says no to {} for {}", tool, tenant))
        }
        Some("rewrite") => HookAnswer::Rewrite(r#"{"text":"rewritten by guard-rust"}"#.to_string()),
        _ => HookAnswer::Allow,
    }
}

fn after(tool: &str, event: &str) -> HookAnswer {
    match mode(event, "after").as_deref() {
        Some("add") => HookAnswer::Add(format!("guard-rust saw {}", tool)),
        Some("replace") => HookAnswer::Replace(r#"{"content":[{"type":"text","text":"replaced by guard-rust"}]}"#.to_string()),
        _ => HookAnswer::Keep,
    }
}

aiod_guard!(DESCRIBE, None, Some(before), Some(after));
