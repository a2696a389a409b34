"""A hostile Streamable HTTP MCP server for tests/gateway_http_hostile.rs (stdlib only).

Usage: hostile_http.py PORT_FILE. It listens on a free 127.0.0.1 port, writes the port to
PORT_FILE and serves until killed. What it does wrong is chosen by the tool called:

- `hang`: never answers (the POST's headers never come);
- `fast`: answers at once;
- `huge_sse`: an SSE response whose one `data:` line is 512 MiB and never ends;
- `trickle`: an SSE response whose one `data:` line grows by 1 KiB every 50 ms, for a
  minute, and never ends (it stays under the size limit: only the call's end stops it);
- `log_then_answer`: on its own POST stream, waits 1 s, sends a `notifications/message`
  naming the caller's `who` argument, then answers;
- `slow`: answers after 3 s (a call that is in flight while another one logs);
- `big_json`: a JSON reply of `bytes` bytes (default 2 MiB);
- `elicit_on_get`: sends an `elicitation/create` on every open GET stream (no request
  links it to a caller) and answers with whatever response came back within 5 s;
- every GET stream is held open (a comment every second) until the client goes away.

It speaks HTTP/1.0, so each response ends its TCP connection: the only sockets that stay
established are the streams it holds open.
"""

import json
import queue
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOOLS = ["hang", "fast", "huge_sse", "trickle", "log_then_answer", "slow", "big_json", "elicit_on_get"]


# Messages waiting to go out on each open GET stream.
GET_STREAMS = []
# Responses the client POSTed, by id, and who waits for them.
ANSWERS = {}
ANSWERED = threading.Condition()


def result(msg_id, value):
    return {"jsonrpc": "2.0", "id": msg_id, "result": value}


def text(msg_id, words):
    return result(msg_id, {"content": [{"type": "text", "text": words}]})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def send_json(self, value, extra=None):
        body = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        for key, val in (extra or {}).items():
            self.send_header(key, val)
        self.end_headers()
        self.wfile.write(body)

    def start_sse(self):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()

    def event(self, value):
        self.wfile.write(b"data: " + json.dumps(value).encode() + b"\n\n")
        self.wfile.flush()

    def do_DELETE(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self):
        self.start_sse()
        outbox = queue.Queue()
        GET_STREAMS.append(outbox)
        try:
            while True:
                try:
                    self.event(outbox.get(timeout=1))
                except queue.Empty:
                    self.wfile.write(b": held open\n\n")
                    self.wfile.flush()
        except OSError:
            return
        finally:
            GET_STREAMS.remove(outbox)

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        message = json.loads(self.rfile.read(length) or b"{}")
        method, msg_id = message.get("method"), message.get("id")
        if method is None and msg_id is not None:
            with ANSWERED:
                ANSWERS[msg_id] = message
                ANSWERED.notify_all()
        if method is None or msg_id is None:
            self.send_response(202)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        try:
            self.answer(method, msg_id, message.get("params") or {})
        except OSError:
            return

    def answer(self, method, msg_id, params):
        if method == "initialize":
            init = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
            self.send_json(result(msg_id, init), {"mcp-session-id": "hostile-session"})
        elif method == "tools/list":
            tools = [
                {"name": n, "inputSchema": {"type": "object"}} for n in TOOLS
            ]
            self.send_json(result(msg_id, {"tools": tools}))
        elif method == "tools/call":
            self.call(params.get("name"), msg_id, params.get("arguments") or {})
        else:
            self.send_json(result(msg_id, {}))

    def call(self, name, msg_id, args):
        if name == "hang":
            time.sleep(3600)
        elif name == "fast":
            self.send_json(text(msg_id, "fast"))
        elif name == "huge_sse":
            self.start_sse()
            self.wfile.write(b"data: ")
            chunk = b"x" * (1 << 20)
            for _ in range(512):
                self.wfile.write(chunk)
            self.wfile.flush()
            time.sleep(3600)
        elif name == "trickle":
            self.start_sse()
            self.wfile.write(b"data: ")
            for _ in range(1200):
                self.wfile.write(b"x" * 1024)
                self.wfile.flush()
                time.sleep(0.05)
        elif name == "log_then_answer":
            self.start_sse()
            time.sleep(1)
            who = args.get("who", "?")
            log = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "error", "data": f"private to {who}"},
            }
            self.event(log)
            self.event(text(msg_id, f"done for {who}"))
        elif name == "slow":
            time.sleep(3)
            self.send_json(text(msg_id, "slow"))
        elif name == "elicit_on_get":
            ask = {
                "jsonrpc": "2.0",
                "id": "ask-on-get",
                "method": "elicitation/create",
                "params": {"message": "whose?", "requestedSchema": {"type": "object"}},
            }
            for outbox in list(GET_STREAMS):
                outbox.put(ask)
            with ANSWERED:
                ANSWERED.wait_for(lambda: "ask-on-get" in ANSWERS, timeout=5)
                answer = ANSWERS.pop("ask-on-get", None)
            self.send_json(text(msg_id, json.dumps(answer)))
        elif name == "big_json":
            size = int(args.get("bytes", 2 << 20))
            self.send_json(text(msg_id, "y" * size))
        else:
            self.send_json(text(msg_id, f"no tool {name}"))


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os

    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    threading.Thread(target=server.serve_forever, daemon=True).start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
