#!/usr/bin/env python3
"""A stdlib-only MCP server for checking mcp-bench's `progress` and `resume` subcommands
where the server under test has no `progress` tool yet. Not a benchmark target.

Serves POST/GET/DELETE on /mcp (threads, HTTP/1.1 keep-alive):
  * handshake era: initialize (Mcp-Session-Id), notifications/initialized (202),
    tools/call echo (JSON) and progress (SSE: a priming event, `count` progress
    notifications, the result; every event has an id `<stream>.<seq>`), GET +
    Last-Event-ID replaying a POST stream's events after that id, DELETE;
  * 2026-07-28 (MCP-Protocol-Version: 2026-07-28): tools/call echo and progress
    (SSE without ids).
  * list_changed: GET without Last-Event-ID opens a session's GET stream (handshake era),
    `subscriptions/listen` a listen stream (2026-07-28); `POST /bench/list-changed` sends
    notifications/tools/list_changed to every open stream.
  --no-resume answers GET with 405 (to see `mcp-bench resume` report "not supported").
  --faulty breaks replies on a fixed schedule: every 7th echo returns another text, every
    11th request is answered with another id, every 5th progress call loses one progress
    notification and every 9th repeats one (`mcp-bench` must count them as mismatched).

    python3 progress_server.py PORT [--no-resume] [--faulty]
"""
import json, sys, threading, uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STREAMS = {}  # stream id -> list of (event id, data)
LOCK = threading.Lock()
NO_RESUME = "--no-resume" in sys.argv
FAULTY = "--faulty" in sys.argv
COUNTER = {"echo": 0, "progress": 0, "all": 0}
CHANGED = threading.Condition()
GENERATION = [0]


def fault(kind, every):
    if not FAULTY:
        return False
    with LOCK:
        COUNTER[kind] += 1
        return COUNTER[kind] % every == 0


def sse(events):
    out = []
    for eid, data in events:
        if eid is not None:
            out.append(f"id: {eid}\n")
        out.append(f"data: {data}\n\n")
    return "".join(out).encode()


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, status, body=b"", ctype="application/json", headers=()):
        self.send_response(status)
        if body:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_DELETE(self):
        self.send(200)

    def hold_stream(self, first, sub_id):
        """Streams `first` (if any), then one list_changed per POST /bench/list-changed."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        if first is not None:
            self.wfile.write(sse([(None, json.dumps(first))]))
            self.wfile.flush()
        with CHANGED:
            seen = GENERATION[0]
        params = {"_meta": {"io.modelcontextprotocol/subscriptionId": sub_id}} if sub_id is not None else {}
        note = json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": params})
        try:
            while True:
                with CHANGED:
                    CHANGED.wait_for(lambda: GENERATION[0] != seen)
                    seen = GENERATION[0]
                self.wfile.write(sse([(None, note)]))
                self.wfile.flush()
        except OSError:
            pass

    def do_GET(self):
        last = self.headers.get("Last-Event-ID")
        if not last and self.headers.get("Mcp-Session-Id"):
            return self.hold_stream(None, None)
        if NO_RESUME or not last:
            return self.send(405, b'{"error":"no resumption"}')
        sid = last.split(".")[0]
        with LOCK:
            events = STREAMS.get(sid)
        if events is None:
            return self.send(404, b'{"error":"unknown stream"}')
        ids = [e[0] for e in events]
        if last not in ids:
            return self.send(400, b'{"error":"unknown event id"}')
        rest = events[ids.index(last) + 1:]
        self.send(200, sse(rest), "text/event-stream")

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        if self.path == "/bench/list-changed":
            with CHANGED:
                GENERATION[0] += 1
                CHANGED.notify_all()
            return self.send(200)
        msg = json.loads(body)
        modern = self.headers.get("MCP-Protocol-Version") == "2026-07-28"
        if "id" not in msg:
            return self.send(202)
        rid, method, params = msg["id"], msg["method"], msg.get("params", {})
        if method == "initialize":
            res = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "progress-test", "version": "0"}}
            body = json.dumps({"jsonrpc": "2.0", "id": rid, "result": res}).encode()
            return self.send(200, body, headers=[("Mcp-Session-Id", uuid.uuid4().hex)])
        if method == "subscriptions/listen" and modern:
            ack = {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                   "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": rid},
                              "notifications": {"toolsListChanged": True}}}
            return self.hold_stream(ack, rid)
        if method != "tools/call":
            err = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}}
            return self.send(404, json.dumps(err).encode())
        name, args = params["name"], params.get("arguments", {})
        extra = {"resultType": "complete"} if modern else {}
        if fault("all", 11):
            rid = rid + 1 if isinstance(rid, int) else rid + "x"
        if name == "echo":
            text = args["text"] + ("!" if fault("echo", 7) else "")
            res = {"content": [{"type": "text", "text": text}], **extra}
            return self.send(200, json.dumps({"jsonrpc": "2.0", "id": rid, "result": res}).encode())
        count = int(args["count"])
        token = params.get("_meta", {}).get("progressToken")
        msgs = []
        if token is not None:
            for i in range(count):
                msgs.append({"jsonrpc": "2.0", "method": "notifications/progress",
                             "params": {"progressToken": token, "progress": i + 1, "total": count}})
            if msgs and fault("progress", 5):
                msgs.pop(len(msgs) // 2)
            elif msgs and COUNTER["progress"] % 9 == 8:
                msgs.insert(len(msgs) // 2, msgs[len(msgs) // 2])
        res = {"content": [{"type": "text", "text": str(count)}], **extra}
        msgs.append({"jsonrpc": "2.0", "id": rid, "result": res})
        if modern:
            events = [(None, json.dumps(m)) for m in msgs]
        else:
            sid = uuid.uuid4().hex[:12]
            events = [(f"{sid}.0", "")] + [(f"{sid}.{i + 1}", json.dumps(m)) for i, m in enumerate(msgs)]
            with LOCK:
                STREAMS[sid] = events
        self.send(200, sse(events), "text/event-stream")


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
