#!/usr/bin/env python3
"""Open N MCP sessions that each hold one GET SSE stream, and measure the server's RSS.

Stdlib only (asyncio + raw HTTP/1.1). For each session: POST initialize, POST
notifications/initialized, then GET /mcp with Accept: text/event-stream on a connection of
its own, kept open. Reads VmRSS of --pid before, with all streams open, and after closing
the streams and DELETEing every session. Prints one JSON object as the last line.
"""
import argparse, asyncio, json, time

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1

async def request(host, port, method, path, headers, body=b""):
    """One request on a fresh connection; returns (status, headers dict, body bytes)."""
    r, w = await asyncio.open_connection(host, port)
    head = f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n"
    for k, v in headers.items():
        head += f"{k}: {v}\r\n"
    head += f"Content-Length: {len(body)}\r\n\r\n"
    w.write(head.encode() + body)
    await w.drain()
    data = await r.read()
    w.close()
    top, _, rest = data.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {l.split(":", 1)[0].strip().lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
    return status, hdrs, rest

async def open_session(host, port, path, pv, mode="get"):
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": pv, "capabilities": {}, "clientInfo": {"name": "streams.py", "version": "0"}}}).encode()
    base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    st, h, _ = await request(host, port, "POST", path, base, init)
    sid = h.get("mcp-session-id")
    if st != 200 or not sid:
        raise RuntimeError(f"initialize: HTTP {st}")
    sh = dict(base, **{"Mcp-Session-Id": sid, "MCP-Protocol-Version": pv})
    st, _, _ = await request(host, port, "POST", path, sh,
                             b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    if st // 100 != 2:
        raise RuntimeError(f"initialized: HTTP {st}")
    r, w = await asyncio.open_connection(host, port)
    if mode == "get":
        # the GET stream, left open
        w.write((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n"
                 f"Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: {pv}\r\n\r\n").encode())
    else:
        # control: one ping on a keep-alive connection of its own, then the connection sits idle
        body = b'{"jsonrpc":"2.0","id":2,"method":"ping"}'
        w.write((f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                 f"Accept: application/json, text/event-stream\r\nMcp-Session-Id: {sid}\r\n"
                 f"MCP-Protocol-Version: {pv}\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body)
    await w.drain()
    status_line = await r.readline()
    st = int(status_line.split()[1])
    hdr = b""
    while True:
        line = await r.readline()
        if line in (b"\r\n", b""):
            break
        hdr += line
    if mode == "get":
        if st != 200 or b"text/event-stream" not in hdr.lower():
            raise RuntimeError(f"GET: HTTP {st}")
    else:
        n = [int(l.split(b":")[1]) for l in hdr.lower().split(b"\r\n") if l.startswith(b"content-length:")]
        if st != 200 or not n:
            raise RuntimeError(f"ping: HTTP {st}")
        await r.readexactly(n[0])
    return sid, r, w

async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--path", default="/mcp")
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("-k", "--sessions", type=int, default=1000)
    ap.add_argument("--parallel", type=int, default=16)
    ap.add_argument("--settle", type=float, default=2.0)
    ap.add_argument("--protocol-version", default="2025-06-18")
    ap.add_argument("--mode", choices=["get", "conn"], default="get",
                    help="get: each session holds a GET SSE stream; conn (control): each session "
                         "holds an idle keep-alive connection after one ping, no stream")
    a = ap.parse_args()

    # warm-up: one session with a stream, then closed and deleted
    sid, r, w = await open_session(a.host, a.port, a.path, a.protocol_version)
    w.close()
    await request(a.host, a.port, "DELETE", a.path, {"Mcp-Session-Id": sid, "MCP-Protocol-Version": a.protocol_version})
    await asyncio.sleep(a.settle)
    before = rss_kib(a.pid)

    sem = asyncio.Semaphore(a.parallel)
    async def one():
        async with sem:
            return await open_session(a.host, a.port, a.path, a.protocol_version, a.mode)
    t0 = time.monotonic()
    res = await asyncio.gather(*[one() for _ in range(a.sessions)], return_exceptions=True)
    open_s = time.monotonic() - t0
    ok = [x for x in res if not isinstance(x, BaseException)]
    errs = [repr(x) for x in res if isinstance(x, BaseException)]
    await asyncio.sleep(a.settle)
    held = rss_kib(a.pid)
    # every stream must still be open: no EOF pending on any of them
    async def probe(r):
        try:
            return await asyncio.wait_for(r.read(1), 0.5) != b""
        except asyncio.TimeoutError:
            return True  # nothing to read yet: still open
    alive = sum(await asyncio.gather(*[probe(r) for _, r, _ in ok]))
    for _, _, w in ok:
        w.close()
    sem2 = asyncio.Semaphore(a.parallel)
    async def delete(sid):
        async with sem2:
            st, _, _ = await request(a.host, a.port, "DELETE", a.path,
                                     {"Mcp-Session-Id": sid, "MCP-Protocol-Version": a.protocol_version})
            return st
    dels = await asyncio.gather(*[delete(s) for s, _, _ in ok], return_exceptions=True)
    await asyncio.sleep(a.settle)
    after = rss_kib(a.pid)
    out = {
        "mode": "streams" if a.mode == "get" else "connections", "sessions_requested": a.sessions, "sessions_with_stream": len(ok),
        "errors": len(errs), "error_samples": errs[:3], "streams_alive_at_reading": alive,
        "open_s": round(open_s, 2), "server_rss_before_kib": before, "server_rss_streams_kib": held,
        "server_rss_after_delete_kib": after,
        "rss_per_session_with_stream_bytes" if a.mode == "get" else "rss_per_session_with_connection_bytes": round((held - before) * 1024 / max(len(ok), 1)),
        "deleted_ok": sum(1 for d in dels if d == 200 or d == 204),
    }
    for k, v in out.items():
        print(f"{k:36} {v}")
    print(json.dumps(out))

asyncio.run(main())
