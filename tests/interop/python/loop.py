"""Calls ``echo`` in a loop on one session with the official Python SDK (mcp 2.3, legacy
mode), as an application would, until the file STOP exists (tests/cluster/store.rs
restarts and kills nodes meanwhile).

Usage: python loop.py http://HOST/mcp STOP

Prints one JSON line at the end: {"ok": N, "failed": N, "sessions": [ids seen],
"errors": [first few errors]}.
"""

from __future__ import annotations

import json
import os
import sys
import warnings

import anyio
import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning

warnings.simplefilter("ignore", MCPDeprecationWarning)


async def main(url: str, stop: str) -> None:
    sessions: list[str] = []
    errors: list[str] = []
    ok = failed = 0

    async def record(response: httpx2.Response) -> None:
        sid = response.request.headers.get("mcp-session-id") or response.headers.get("mcp-session-id")
        if sid and sid not in sessions:
            sessions.append(sid)

    async with httpx2.AsyncClient(timeout=10, event_hooks={"response": [record]}) as http:
        async with streamable_http_client(url, http_client=http, terminate_on_close=False) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=10) as session:
                await session.initialize()
                n = 0
                while not os.path.exists(stop):
                    try:
                        with anyio.fail_after(10):
                            result = await session.call_tool("echo", {"text": f"py {n}"})
                        if not result.is_error and result.content and result.content[0].text == f"py {n}":
                            ok += 1
                        else:
                            failed += 1
                            if len(errors) < 5:
                                errors.append(f"call {n}: {result}")
                    except Exception as e:  # noqa: BLE001 - every failure is counted
                        failed += 1
                        if len(errors) < 5:
                            errors.append(f"call {n}: {type(e).__name__}: {e}")
                    n += 1
                    await anyio.sleep(0.02)
    print(json.dumps({"ok": ok, "failed": failed, "sessions": sessions, "errors": errors}), flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
