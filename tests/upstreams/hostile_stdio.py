#!/usr/bin/env python3
"""A hostile stdio MCP server for tests/gateway_stdio_hostile.rs, on the standard library only.

Usage: hostile_stdio.py MODE MARKER [FILE]. MARKER only makes its processes findable by
command line. Every mode serves the tools below; MODE decides what it does besides:
  bigline    nothing more (the tool `spew` writes 512 MiB to stderr without a newline);
  badbyte    SIGPIPE has its default action, so a closed stderr kills it on the next write;
  forks      at start, forks a child and a `setsid` grandchild that sleep;
  trap       records SIGTERM in FILE.PID and exits 0; it ignores the end of its stdin;
  slowstart  sleeps 3 s before it reads its first message;
  early      prints a line to stderr and exits 1 before it reads anything.
Tools: echo (writes its `text` to stderr, then returns it), spew, badbyte (writes a 0xff
byte to stderr), crash (prints a path to stderr and exits 1), leak (sends a log message
holding the last `text` echo saw), ask (sends an elicitation/create request and returns
the answer it got, result or error, as JSON text), pid.
"""
import json
import os
import signal
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else ""
FILE = sys.argv[3] if len(sys.argv) > 3 else None
last_text = ""


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(id_, value):
    send({"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": value}]}})


def err(line):
    sys.stderr.buffer.write(line)
    sys.stderr.buffer.flush()


TOOLS = [
    {"name": n, "description": n, "inputSchema": {"type": "object"}}
    for n in ["echo", "spew", "badbyte", "crash", "leak", "ask", "pid"]
]


def detach(new_session):
    """A sleeping descendant that holds none of the upstream's pipes."""
    if os.fork() != 0:
        return
    if new_session:
        if os.fork() != 0:
            os._exit(0)
        os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    time.sleep(600)
    os._exit(0)


def on_term(_signum, _frame):
    with open(f"{FILE}.{os.getpid()}", "w") as f:
        f.write("TERM")
    os._exit(0)


def call(id_, name, args):
    global last_text
    if name == "echo":
        last_text = str(args.get("text", ""))
        err(f"echo: {last_text}\n".encode())
        text(id_, last_text)
    elif name == "spew":
        chunk = b"x" * (1 << 20)
        for _ in range(512):
            err(chunk)
        err(b"\n")
        text(id_, "spewed")
    elif name == "badbyte":
        err(b"bad \xff byte\n")
        text(id_, "sent")
    elif name == "crash":
        err(b"cannot open /home/alice/.config/hostile/secret.json\n")
        os._exit(1)
    elif name == "leak":
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "error", "data": f"last echo: {last_text}"}})
        text(id_, "leaked")
    elif name == "ask":
        send({"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create",
              "params": {"message": "Your name?", "requestedSchema": {
                  "type": "object", "properties": {"name": {"type": "string"}}}}})
        for line in sys.stdin:
            answer = json.loads(line)
            if answer.get("id") == "ask-1" and "method" not in answer:
                text(id_, json.dumps(answer.get("error") or answer.get("result")))
                return
    elif name == "pid":
        text(id_, str(os.getpid()))


def main():
    if MODE == "early":
        err(b"hostile: early failure, missing HOSTILE_TOKEN\n")
        sys.exit(1)
    if MODE == "badbyte":
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if MODE == "trap":
        signal.signal(signal.SIGTERM, on_term)
    if MODE == "forks":
        detach(False)
        detach(True)
    if MODE == "slowstart":
        time.sleep(3)
    for line in sys.stdin:
        message = json.loads(line)
        method, id_ = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": id_, "result": {
                "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": id_, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            call(id_, params.get("name"), params.get("arguments") or {})
        elif id_ is not None and method is not None:
            send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": method}})
    if MODE == "trap":
        while True:
            signal.pause()


if __name__ == "__main__":
    main()
