#!/usr/bin/env python3
"""The stdio MCP server every gateway in benches/gateway.sh fronts: one tool, `echo`.

Standard library only, so every gateway runs the very same child whatever its own language.
It reads newline-delimited JSON-RPC on stdin and writes one line per response on stdout
(MCP stdio transport), one message at a time: `echo` answers at once, so nothing is gained
by answering out of order. It answers

- `initialize`: the client's protocolVersion when it is one of KNOWN_VERSIONS (else the
  newest of them), capabilities `{"tools": {}}`;
- `ping`: `{}`;
- `tools/list`: `echo {"text": string}`;
- `tools/call echo {"text": T}`: `{"content": [{"type": "text", "text": T}]}`, the shape
  mcp-bench verifies;

and any other request with -32601; notifications (`notifications/initialized`,
`notifications/cancelled`, ...) get nothing.

The harness tells its CPU and memory from the gateway's by its command line (`mcp-bench
--child-cmd echo_stdio.py`: the script is the interpreter's first argument), however the
gateway starts it: directly, through `sh -c`, or under a supervisor.
"""

import json
import sys

KNOWN_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
ECHO_TOOL = {
    "name": "echo",
    "description": "Returns its text.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


def error(msg_id, code, message):
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def answer(msg):
    method = msg.get("method")
    msg_id = msg.get("id")
    params = msg.get("params") or {}
    if method == "initialize":
        asked = params.get("protocolVersion")
        version = asked if asked in KNOWN_VERSIONS else KNOWN_VERSIONS[-1]
        return {
            "jsonrpc": "2.0",
            "id": msg_id,
            "result": {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "mcp-echo-stdio", "version": "1.0.0"},
            },
        }
    if method == "ping":
        return {"jsonrpc": "2.0", "id": msg_id, "result": {}}
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": msg_id, "result": {"tools": [ECHO_TOOL]}}
    if method == "tools/call":
        if params.get("name") != "echo":
            return error(msg_id, -32602, f"unknown tool {params.get('name')!r}: this server has only echo")
        text = (params.get("arguments") or {}).get("text")
        if not isinstance(text, str):
            return error(msg_id, -32602, "echo needs arguments.text, a string")
        return {"jsonrpc": "2.0", "id": msg_id, "result": {"content": [{"type": "text", "text": text}]}}
    return error(msg_id, -32601, f"method {method!r} not found: this server answers initialize, ping, tools/list, tools/call")


def main():
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            reply = error(None, -32700, "not JSON: one JSON-RPC message per line")
        else:
            if not isinstance(msg, dict):
                reply = error(None, -32600, "a JSON-RPC message is an object (batches are not used over stdio)")
            elif "method" not in msg or "id" not in msg:
                continue  # a notification, or a response to a request this server never sends
            else:
                reply = answer(msg)
        out.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
