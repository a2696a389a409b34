#!/usr/bin/env python3
"""Replay-log memory per stream: RSS growth of an mcp-actor process per finished POST stream.

    python3 benches/scale/replay.py PORT PID STREAMS EVENTS

Against a running mcp-actor on 127.0.0.1:PORT (process PID) that offers the `progress`
builtin: one session calls `progress` with `count = EVENTS` and a progressToken STREAMS + 1
times on POST streams (the first as a warm-up), reading each reply to its end. Every
stream's events stay in its replay log (up to `replay.max_events_per_stream`), and a
session keeps up to `replay.max_finished_streams` finished streams, so with STREAMS at or
below that limit the RSS growth divided by STREAMS is the memory of one full log. Prints
one JSON line. Standard library only.
"""
import http.client
import json
import sys
import time

ACCEPT = "application/json, text/event-stream"
VERSION = "2025-11-25"


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise SystemExit(f"no VmRSS for process {pid}")


def main():
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    port, pid, streams, events = (int(a) for a in sys.argv[1:])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/json", "Accept": ACCEPT}

    def post(body):
        conn.request("POST", "/mcp", json.dumps(body), headers)
        reply = conn.getresponse()
        return reply, reply.read()

    reply, _ = post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "replay", "version": "1"}}})
    session = reply.getheader("mcp-session-id")
    if reply.status != 200 or not session:
        raise SystemExit(f"initialize failed: HTTP {reply.status}")
    headers.update({"mcp-session-id": session, "mcp-protocol-version": VERSION})
    post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(i):
        reply, body = post({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
            "name": "progress", "arguments": {"count": events},
            "_meta": {"progressToken": i}}})
        # A reader slower than the server may be cut off mid-stream (and would resume from
        # the log); the log holds every event either way.
        if reply.status != 200:
            raise SystemExit(f"call {i}: HTTP {reply.status}")

    call(1)  # warm-up: allocations the first stream makes once
    time.sleep(0.5)
    before = rss_kib(pid)
    for i in range(2, 2 + streams):
        call(i)
    time.sleep(0.5)
    after = rss_kib(pid)
    print(json.dumps({"streams": streams, "events_each": events, "rss_before_kib": before,
                      "rss_after_kib": after,
                      "kib_per_stream": round((after - before) / streams, 1)}))


if __name__ == "__main__":
    main()
