#!/usr/bin/env python3
"""A stdio MCP server for the gateway tests (tests/gateway.rs), on the standard library only.

Its tools show what a gateway must get right and the real servers cannot show on demand:
  pid        its process id, so a test can find and kill it;
  wait       answers after `ms` milliseconds, or never once cancelled; first it reports
             progress once, with the request's progress token, if it has one;
  cancelled  the ids of the requests `notifications/cancelled` named so far;
  crash      exits at once, after a line on stderr, leaving its call unanswered;
  grow       adds the tool `extra` (for every process: it creates the file named by the
             second argument) and announces `notifications/tools/list_changed`.
It writes a line on stderr when it starts, so an error report can quote its tail.
"""
import json
import os
import sys
import threading

out = threading.Lock()
cancelled = []


def send(message):
    with out:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def result(id_, value):
    send({"jsonrpc": "2.0", "id": id_, "result": value})


def text(id_, value):
    result(id_, {"content": [{"type": "text", "text": value}]})


TOOLS = [
    {"name": name, "description": doc, "inputSchema": {"type": "object", "properties": props}}
    for name, doc, props in [
        ("pid", "This process's id", {}),
        ("wait", "Answers after ms milliseconds", {"ms": {"type": "integer"}}),
        ("cancelled", "Request ids cancelled so far", {}),
        ("crash", "Exits during the call", {}),
        ("grow", "Adds the tool extra", {}),
    ]
]
EXTRA = {"name": "extra", "description": "Added by grow", "inputSchema": {"type": "object"}}
STATE = sys.argv[2] if len(sys.argv) > 2 else None


def tools():
    grown = STATE is not None and os.path.exists(STATE)
    return TOOLS + [EXTRA] if grown else TOOLS


def wait(id_, ms, done):
    if not done.wait(ms / 1000.0):
        text(id_, "waited")


waiting = {}


def main():
    print(f"fixture {os.getpid()} started", file=sys.stderr, flush=True)
    for line in sys.stdin:
        message = json.loads(line)
        method, id_ = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "initialize":
            result(id_, {
                "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fixture", "version": "1"},
            })
        elif method == "tools/list":
            result(id_, {"tools": tools()})
        elif method == "notifications/cancelled":
            cancelled.append(params.get("requestId"))
            done = waiting.pop(params.get("requestId"), None)
            if done:
                done.set()
        elif method == "tools/call":
            name, args = params.get("name"), params.get("arguments") or {}
            if name == "pid":
                text(id_, str(os.getpid()))
            elif name == "wait":
                token = (params.get("_meta") or {}).get("progressToken")
                if token is not None:
                    send({"jsonrpc": "2.0", "method": "notifications/progress",
                          "params": {"progressToken": token, "progress": 1, "message": str(id_)}})
                done = threading.Event()
                waiting[id_] = done
                threading.Thread(target=wait, args=(id_, args.get("ms", 1000), done), daemon=True).start()
            elif name == "cancelled":
                text(id_, json.dumps(cancelled))
            elif name in ("grow", "extra"):
                if STATE is not None and name == "grow":
                    open(STATE, "w").close()
                    send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
                text(id_, name)
            elif name == "crash":
                print("fixture: crashing on request", file=sys.stderr, flush=True)
                os._exit(3)
            else:
                send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32602, "message": f"unknown tool {name}"}})
        elif id_ is not None and method is not None:
            send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": f"method not found: {method}"}})


if __name__ == "__main__":
    main()
