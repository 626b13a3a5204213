#!/usr/bin/env python3
"""aoi-notes: a Machine Mode tool (AOI-CLI v0.2) written from the public
specification for aiod's adapter tests (host/machinetest). It uses the bare
event names of the earlier revision (meta, summary, error, progress).

  notes.py capabilities --output json
  notes.py schema --output json --command NAME
  notes.py COMMAND [--flag=value...] --output jsonl [--] [operands...]
"""
import json
import os
import sys
import time

TOOL, VERSION, SCHEMA = "aoi-notes", "0.3.1", "com.example.notes.events"

COMMANDS = [
    {"name": "list", "summary": "List the notes, oldest first.", "read_only": True, "bounded": True,
     "supports_cursor": True, "event_types": ["meta", "note", "progress", "summary"],
     "flags": {"limit": {"type": "int", "description": "At most this many notes"},
               "contains": {"type": "str", "description": "Only notes with this text"}}},
    {"name": "add", "summary": "Add a note.", "read_only": False, "destructive": False,
     "supports_idempotency_key": True, "event_types": ["meta", "note", "error", "summary"],
     "operands": [{"name": "words", "type": "string", "variadic": True, "required": True}]},
    {"name": "boom", "summary": "Raise an exception half way.", "read_only": True,
     "event_types": ["meta", "note", "summary"]},
    {"name": "slow-count", "summary": "Count slowly, reporting progress.", "read_only": True,
     "event_types": ["meta", "progress", "note", "summary"],
     "flags": [{"name": "to", "type": "integer", "required": True}]},
]

NOTES = ["buy tea", "read the AOI-CLI spec", "water the plants", "call the agent vendor",
         "write the adapter", "test the cursor", "ship it"]


def emit(ev):
    try:
        sys.stdout.write(json.dumps(ev, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        os._exit(141)


def schema_for(cmd):
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "aoi-notes " + cmd["name"] + " event",
        "description": cmd["summary"],
        "type": "object",
        "required": ["type"],
        "properties": {
            "type": {"type": "string", "enum": cmd["event_types"]},
            "n": {"type": "integer", "minimum": 0},
            "text": {"type": "string"},
        },
    }


def parse(args):
    flags, ops, i = {}, [], 0
    while i < len(args):
        a = args[i]
        if a == "--":
            ops.extend(args[i + 1:])
            break
        if a == "--output" and i + 1 < len(args):
            flags["output"] = args[i + 1]
            i += 2
            continue
        if a.startswith("--"):
            k, _, v = a[2:].partition("=")
            flags[k] = v if v or "=" in a else "true"
        else:
            ops.append(a)
        i += 1
    return flags, ops


def main(argv):
    if not argv:
        print("usage: notes.py COMMAND", file=sys.stderr)
        return 2
    cmd, args = argv[0], argv[1:]
    if cmd == "capabilities":
        print(json.dumps({"tool": TOOL, "tool_version": VERSION, "aoi_versions": ["0.2"],
                          "schemas": [{"name": SCHEMA, "versions": ["1.0.0"], "default": "1.0.0"}],
                          "commands": COMMANDS}))
        return 0
    if cmd == "schema":
        flags, _ = parse(args)
        want = args[args.index("--command") + 1] if "--command" in args else ""
        for c in COMMANDS:
            if c["name"] == want:
                print(json.dumps(schema_for(c)))
                return 0
        print("no such command", file=sys.stderr)
        return 2
    flags, ops = parse(args)
    if flags.get("output") != "jsonl":
        print("aoi-notes: use --output jsonl")
        return 2
    emit({"type": "meta", "tool": TOOL, "tool_version": VERSION, "aoi_version": "0.2",
          "schema_name": SCHEMA, "schema_version": "1.0.0", "command": cmd})
    if cmd == "list":
        limit = int(flags.get("limit", "2"))
        start = int(flags.get("cursor", "0") or "0")
        notes = [n for n in NOTES if flags.get("contains", "") in n]
        page = notes[start:start + limit]
        for k, text in enumerate(page):
            emit({"type": "note", "n": start + k, "text": text})
        more = start + len(page) < len(notes)
        summary = {"type": "summary", "ok": True, "count": len(page), "truncated": more}
        if more:
            summary["next_cursor"] = str(start + len(page))
        emit(summary)
        return 0
    if cmd == "add":
        text = " ".join(ops)
        if not text:
            emit({"type": "error", "scope": "process", "category": "usage", "code": "EMPTY",
                  "message": "nothing to add", "retryable": False})
            emit({"type": "summary", "ok": False, "count": 0, "truncated": False})
            return 2
        emit({"type": "note", "n": len(NOTES), "text": text, "key": flags.get("idempotency-key", "")})
        emit({"type": "summary", "ok": True, "count": 1, "truncated": False})
        return 0
    if cmd == "boom":
        emit({"type": "note", "n": 0, "text": NOTES[0]})
        raise RuntimeError("the notes file is unreadable (secret=stderr-only)")
    if cmd == "slow-count":
        to = int(flags["to"])
        for i in range(1, to + 1):
            emit({"type": "progress", "current": i, "total": to, "message": "counted %d" % i})
            time.sleep(0.3)
        emit({"type": "note", "n": to, "text": "counted to %d" % to})
        emit({"type": "summary", "ok": True, "count": 1, "truncated": False})
        return 0
    emit({"type": "error", "scope": "process", "category": "usage", "code": "UNKNOWN",
          "message": "unknown command " + cmd, "retryable": False})
    emit({"type": "summary", "ok": False, "count": 0, "truncated": False})
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
