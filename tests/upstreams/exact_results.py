#!/usr/bin/env python3
"""A stdio MCP server for tests/gateway_results.rs, on the standard library only.

Its tool results are written as fixed JSON text, with members out of alphabetical order,
numbers spelled `2.50`, an integer of 30 digits, and a `_meta` of their own: what a
gateway that decodes and re-encodes results would change.
"""
import json
import sys

RESULTS = {
    "exact": '{"z":1,"content":[{"type":"text","text":"t"}],"n":2.50,'
    '"big":123456789012345678901234567890,"x-extra":{"b":1,"a":2}}',
    "meta": '{"content":[],"_meta":{"z":1,"a":2.50}}',
    "failing": '{"content":[{"type":"text","text":"bad"}],"isError":true}',
}
TOOLS = [{"name": n, "description": n, "inputSchema": {"type": "object"}} for n in RESULTS]


def send(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, id_ = message.get("method"), message.get("id")
    params = message.get("params") or {}
    if method == "initialize":
        send(json.dumps({"jsonrpc": "2.0", "id": id_, "result": {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "exact", "version": "1"},
        }}))
    elif method == "tools/list":
        send(json.dumps({"jsonrpc": "2.0", "id": id_, "result": {"tools": TOOLS}}))
    elif method == "tools/call":
        result = RESULTS.get(params.get("name"), RESULTS["failing"])
        send('{"jsonrpc":"2.0","id":%s,"result":%s}' % (json.dumps(id_), result))
    elif id_ is not None and method is not None:
        send(json.dumps({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": method}}))
