#!/usr/bin/env python3
"""Probe one benchmark peer on both protocol eras and print what it supports.

    python3 benches/peers/check.py PORT            # the peer must already be running
    python3 benches/peers/check.py --start rust    # start benches/peers/rust/run.sh on a free port

Standard library only. Each probe prints `ok` or `FAIL <why>`; the exit status is the
number of failed probes. Probes (handshake era = 2025-11-25 with a session, modern =
2026-07-28 stateless):

  legacy: echo, progress (3 notifications with a progressToken, then "3"), ask
          (elicitation/create on the call's stream, answered by a POSTed response),
          list-changed (notifications/tools/list_changed on the session's GET stream),
          resume (a sleep call's stream is dropped after its first event that has an id;
          a GET with Last-Event-ID must bring the call's result)
  modern: echo, progress, ask (input_required, then the retry with inputResponses and
          requestState), list-changed (subscriptions/listen with toolsListChanged)
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time

HOST = "127.0.0.1"
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
TIMEOUT = 10.0


class Sse:
    """Reads one HTTP response as JSON or as an SSE stream of events."""

    def __init__(self, resp: http.client.HTTPResponse):
        self.resp = resp
        self.ctype = resp.getheader("content-type", "")
        self.status = resp.status

    def events(self):
        """Yields (id, data-as-JSON-or-None) per event; a JSON body is one event."""
        if "application/json" in self.ctype:
            body = self.resp.read()
            yield None, json.loads(body) if body else None
            return
        if "text/event-stream" not in self.ctype:
            body = self.resp.read()
            raise RuntimeError(f"status {self.status} {self.ctype!r}: {body[:300]!r}")
        ev_id, data = None, []
        while True:
            line = self.resp.readline()
            if not line:
                return
            line = line.decode().rstrip("\r\n")
            if line == "":
                if data or ev_id is not None:
                    text = "\n".join(data)
                    yield ev_id, (json.loads(text) if text.strip() else None)
                ev_id, data = None, []
            elif line.startswith(":"):
                continue
            else:
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "id":
                    ev_id = value
                elif field == "data":
                    data.append(value)

    def messages(self):
        for _, msg in self.events():
            if msg is not None:
                yield msg


def request(port, method, path="/mcp", body=None, headers=None, timeout=TIMEOUT):
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    h = {"Accept": "application/json, text/event-stream"}
    if body is not None:
        h["Content-Type"] = "application/json"
    h.update(headers or {})
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=h)
    resp = conn.getresponse()
    return conn, resp


def reply_to(port, body, headers, want_id):
    """POST body; return (list of messages before the reply, the reply, the response)."""
    conn, resp = request(port, "POST", body=body, headers=headers)
    before = []
    for msg in Sse(resp).messages():
        if msg.get("id") == want_id and ("result" in msg or "error" in msg):
            conn.close()
            return before, msg, resp
        before.append(msg)
    conn.close()
    raise RuntimeError(f"no reply to id {want_id}; got {before}")


def text_of(reply):
    if "error" in reply:
        raise RuntimeError(f"error {reply['error']}")
    return reply["result"]["content"][0]["text"]


# ----- handshake era -----


class Legacy:
    def __init__(self, port):
        self.port = port
        self.next_id = 1
        init = {
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {"elicitation": {"form": {}}},
                       "clientInfo": {"name": "peer-check", "version": "1"}},
        }
        _, reply, resp = reply_to(port, init, {}, 0)
        self.session = resp.getheader("mcp-session-id")
        if not self.session:
            raise RuntimeError("no Mcp-Session-Id")
        self.version = reply["result"]["protocolVersion"]
        conn, resp = request(port, "POST", body={"jsonrpc": "2.0", "method": "notifications/initialized"},
                             headers=self.headers())
        resp.read()
        conn.close()
        if resp.status != 202:
            raise RuntimeError(f"notifications/initialized: {resp.status}")

    def headers(self):
        return {"Mcp-Session-Id": self.session, "MCP-Protocol-Version": self.version}

    def call_body(self, name, arguments, meta=None):
        self.next_id += 1
        params = {"name": name, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        return self.next_id, {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call", "params": params}

    def call(self, name, arguments, meta=None):
        rid, body = self.call_body(name, arguments, meta)
        return reply_to(self.port, body, self.headers(), rid)


def legacy_echo(port):
    _, reply, _ = Legacy(port).call("echo", {"text": "héllo"})
    assert text_of(reply) == "héllo", reply


def check_progress(before, reply, count):
    prog = [m for m in before if m.get("method") == "notifications/progress"]
    got = [(m["params"]["progress"], m["params"].get("total")) for m in prog]
    assert got == [(i, count) for i in range(1, count + 1)], f"progress frames {got}"
    assert text_of(reply) == str(count), reply


def legacy_progress(port):
    before, reply, _ = Legacy(port).call("progress", {"count": 3}, {"progressToken": "p1"})
    check_progress(before, reply, 3)


def legacy_ask(port):
    s = Legacy(port)
    rid, body = s.call_body("ask", {"question": "What is six times seven?"})
    conn, resp = request(port, "POST", body=body, headers=s.headers())
    for msg in Sse(resp).messages():
        if msg.get("method") == "elicitation/create":
            schema = msg["params"]["requestedSchema"]
            assert schema["properties"]["answer"]["type"] == "string", schema
            answer = {"jsonrpc": "2.0", "id": msg["id"],
                      "result": {"action": "accept", "content": {"answer": "42"}}}
            c2, r2 = request(port, "POST", body=answer, headers=s.headers())
            r2.read()
            c2.close()
            assert r2.status == 202, f"posting the answer: {r2.status}"
        elif msg.get("id") == rid:
            conn.close()
            assert text_of(msg) == "42", msg
            return
    raise RuntimeError("the call's stream ended without a reply")


def open_stream(port, method, body, headers, first_wanted):
    """Opens a long-lived stream; returns (conn, iterator of messages) after first_wanted(msg)."""
    conn, resp = request(port, method, body=body, headers=headers, timeout=TIMEOUT)
    it = Sse(resp).messages()
    return conn, resp, it


def wait_for(it, pred, what):
    result = {}

    def run():
        try:
            for msg in it:
                if pred(msg):
                    result["msg"] = msg
                    return
        except Exception as e:  # socket timeout
            result["err"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(TIMEOUT)
    if "msg" not in result:
        raise RuntimeError(f"no {what}: {result.get('err', 'timeout')}")
    return result["msg"]


def trigger_list_changed(port):
    conn, resp = request(port, "POST", path="/bench/list-changed", body={})
    resp.read()
    conn.close()
    assert resp.status == 200, f"/bench/list-changed: {resp.status}"


def legacy_list_changed(port):
    s = Legacy(port)
    conn, resp = request(port, "GET", headers={**s.headers(), "Accept": "text/event-stream"})
    if resp.status != 200:
        raise RuntimeError(f"GET stream: {resp.status} {resp.read()[:200]!r}")
    it = Sse(resp).messages()
    time.sleep(0.3)  # let the server register the stream
    trigger_list_changed(port)
    wait_for(it, lambda m: m.get("method") == "notifications/tools/list_changed", "list_changed on the GET stream")
    conn.close()


def legacy_resume(port):
    s = Legacy(port)
    rid, body = s.call_body("sleep", {"ms": 1000})
    conn, resp = request(port, "POST", body=body, headers=s.headers())
    sse = Sse(resp)
    if "text/event-stream" not in sse.ctype:
        raise RuntimeError(f"the call answered {sse.ctype}, not SSE")
    last = None
    for ev_id, msg in sse.events():
        if ev_id:
            last = ev_id
            break
        if msg and msg.get("id") == rid:
            break
    conn.close()  # drop the stream mid-call
    if not last:
        raise RuntimeError("no SSE event with an id before the reply")
    conn, resp = request(port, "GET", headers={**s.headers(), "Accept": "text/event-stream", "Last-Event-ID": last})
    if resp.status != 200:
        raise RuntimeError(f"GET with Last-Event-ID: {resp.status} {resp.read()[:200]!r}")
    msg = wait_for(Sse(resp).messages(), lambda m: m.get("id") == rid, "the replayed reply")
    conn.close()
    assert text_of(msg) == "ok", msg


# ----- 2026-07-28 -----

ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "peer-check", "version": "1"},
}


def modern_headers(method, name=None):
    h = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name:
        h["Mcp-Name"] = name
    return h


def modern_call(port, rid, name, arguments, meta=None, extra=None):
    params = {"name": name, "arguments": arguments, "_meta": {**ENVELOPE, **(meta or {})}, **(extra or {})}
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
    before, reply, resp = reply_to(port, body, modern_headers("tools/call", name), rid)
    assert resp.getheader("mcp-session-id") is None, "a modern reply carries Mcp-Session-Id"
    if "result" in reply:
        assert "resultType" in reply["result"], f"no resultType: {reply}"
    return before, reply


def modern_echo(port):
    _, reply = modern_call(port, 1, "echo", {"text": "héllo"})
    assert reply["result"]["resultType"] == "complete", reply
    assert text_of(reply) == "héllo", reply


def modern_progress(port):
    before, reply = modern_call(port, 2, "progress", {"count": 3}, {"progressToken": "p1"})
    check_progress(before, reply, 3)


def modern_ask(port):
    _, first = modern_call(port, 3, "ask", {"question": "What is six times seven?"})
    result = first.get("result", {})
    if result.get("resultType") != "input_required":
        raise RuntimeError(f"first round is not input_required: {first}")
    (key, req), = result["inputRequests"].items()
    assert req["method"] == "elicitation/create", req
    assert req["params"]["requestedSchema"]["properties"]["answer"]["type"] == "string", req
    extra = {"inputResponses": {key: {"action": "accept", "content": {"answer": "42"}}}}
    if "requestState" in result:
        extra["requestState"] = result["requestState"]
    _, second = modern_call(port, 4, "ask", {"question": "What is six times seven?"}, extra=extra)
    assert second["result"]["resultType"] == "complete", second
    assert text_of(second) == "42", second


def modern_list_changed(port):
    body = {"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
            "params": {"notifications": {"toolsListChanged": True}, "_meta": ENVELOPE}}
    conn, resp = request(port, "POST", body=body, headers=modern_headers("subscriptions/listen"))
    if resp.status != 200:
        raise RuntimeError(f"listen: {resp.status} {resp.read()[:300]!r}")
    it = Sse(resp).messages()
    ack = wait_for(it, lambda m: True, "first message")
    assert ack.get("method") == "notifications/subscriptions/acknowledged", ack
    assert ack["params"]["notifications"].get("toolsListChanged") is True, ack
    trigger_list_changed(port)
    msg = wait_for(it, lambda m: m.get("method") == "notifications/tools/list_changed", "list_changed on listen")
    assert msg["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1", msg
    conn.close()


PROBES = [
    ("legacy echo", legacy_echo),
    ("legacy progress", legacy_progress),
    ("legacy ask", legacy_ask),
    ("legacy list-changed", legacy_list_changed),
    ("legacy resume", legacy_resume),
    ("modern echo", modern_echo),
    ("modern progress", modern_progress),
    ("modern ask", modern_ask),
    ("modern list-changed", modern_list_changed),
]


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def main():
    args = sys.argv[1:]
    proc = None
    if args and args[0] == "--start":
        port = free_port()
        run = os.path.join(os.path.dirname(os.path.abspath(__file__)), args[1], "run.sh")
        proc = subprocess.Popen([run, str(port)])
        for _ in range(100):
            try:
                socket.create_connection((HOST, port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
    else:
        port = int(args[0])
    failed = 0
    try:
        for name, probe in PROBES:
            try:
                probe(port)
                print(f"{name:22} ok", flush=True)
            except Exception as e:  # report and go on
                failed += 1
                print(f"{name:22} FAIL {type(e).__name__}: {str(e)[:300]}", flush=True)
    finally:
        if proc:
            proc.terminate()
            proc.wait(5)
    sys.exit(failed)


if __name__ == "__main__":
    main()
