#!/usr/bin/env python3
"""Interop flows: drive a running mcp-actor server with the official Python MCP SDK.

Usage: python client.py http://127.0.0.1:PORT/mcp

Uses the low-level ``mcp.client.session.ClientSession`` over
``mcp.client.streamable_http.streamable_http_client`` (mcp 2.3.x, pinned in
requirements.txt) in its *legacy* mode: the initialize/session-based handshake
at protocol 2025-11-25.

How legacy mode is selected in mcp 2.x: the high-level ``mcp.client.Client``
defaults to ``mode="auto"``, which first sends a ``server/discover`` probe
(the stateless 2026-07-28 era) and only falls back to ``initialize`` when the
probe fails; ``Client(url, mode="legacy")`` skips the probe and performs the
initialize handshake directly. With the low-level ``ClientSession`` used here,
that choice is made by which handshake method is called: ``session.initialize()``
is the legacy path (``Client(mode="legacy")`` calls exactly that), while
``session.discover()`` / ``negotiate_auto`` would be the modern one. So this
script never sends ``server/discover``.

With ``MCP_INTEROP_TOKEN`` set (a server with ``[auth]``), the httpx client handed to
``streamable_http_client`` sends ``Authorization: Bearer <token>`` on every request (the
SDK's documented way to configure headers), and a first check makes sure a client without
the token is refused with 401. Unset, the flow is the unauthenticated one.

Output: one line per passing check ("ok N - ..."), one per failing check
("FAIL N - ...: reason"), then "<passed> passed, <failed> failed".
Exit status 1 if any check failed, 0 otherwise.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning

# logging/setLevel is deprecated as of 2026-07-28 but is exactly what a 2025-11-25 session uses.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

PROTOCOL_VERSION = "2025-11-25"
TOKEN = os.environ.get("MCP_INTEROP_TOKEN") or None
AUTH_HEADERS = {"authorization": f"Bearer {TOKEN}"} if TOKEN else {}
# A 401's challenge names the protected resource metadata (spec basic/authorization, RFC 9728).
CHALLENGE = re.compile(r'^Bearer .*resource_metadata="')

# ---------------------------------------------------------------------------
# Tiny check harness
# ---------------------------------------------------------------------------


class Checks:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0
        self.n = 0

    def ok(self, name: str, detail: str | None = None) -> None:
        self.n += 1
        self.passed += 1
        print(f"ok {self.n} - {name}" + (f" ({detail})" if detail else ""), flush=True)

    def fail(self, name: str, reason: str) -> None:
        self.n += 1
        self.failed += 1
        print(f"FAIL {self.n} - {name}: {reason}", flush=True)

    def check(self, name: str, cond: bool, reason: str, detail: str | None = None) -> bool:
        if cond:
            self.ok(name, detail)
        else:
            self.fail(name, reason)
        return cond


checks = Checks()


def err_text(e: BaseException) -> str:
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(err_text(x) for x in e.exceptions)
    code = getattr(getattr(e, "error", None), "code", None)
    return f"{type(e).__name__}: {e}" + (f" [code {code}]" if code is not None else "")


def first_text(result: Any) -> str | None:
    content = getattr(result, "content", None)
    if not content:
        return None
    c = content[0]
    return c.text if isinstance(c, types.TextContent) else None


def describe(result: Any) -> str:
    try:
        return result.model_dump_json(by_alias=True, exclude_none=True)[:400]
    except Exception:
        return repr(result)[:400]


# ---------------------------------------------------------------------------
# Recording HTTP transport: sees every HTTP exchange the SDK makes and can cut
# one response body on purpose (resumption step). Plugged in through the
# public `http_client=` argument of streamable_http_client.
# ---------------------------------------------------------------------------


@dataclass
class WireEntry:
    method: str
    session_id: str | None
    protocol_version: str | None
    last_event_id: str | None
    authorization: str | None
    rpc: Any
    status: int | None = None
    content_type: str | None = None
    response_session_id: str | None = None
    www_authenticate: str | None = None


@dataclass
class CutPlan:
    """Cut the first POST whose JSON-RPC body matches, after its first progress event."""

    match: Any
    progress_handled: anyio.Event = field(default_factory=anyio.Event)
    used: bool = False
    saw_sse: bool = False
    cut_at: float | None = None
    ids_before_cut: list[str] = field(default_factory=list)


class CutAfterFirstProgress(httpx2.AsyncByteStream):
    """Passes the SSE body through until a chunk with notifications/progress went by;
    on the next read it waits until the SDK handled that progress notification,
    closes the real connection and raises a network error, i.e. a connection cut."""

    def __init__(self, inner: Any, plan: CutPlan) -> None:
        self._inner = inner
        self._plan = plan
        self._closed = False

    async def __aiter__(self):  # type: ignore[override]
        plan = self._plan
        seen = b""
        progress_passed = False
        it = self._inner.__aiter__()
        while True:
            if progress_passed:
                with anyio.move_on_after(5):
                    await plan.progress_handled.wait()
                plan.cut_at = time.monotonic()
                await self.aclose()
                raise httpx2.ReadError("interop: SSE connection cut on purpose after the first progress event")
            try:
                chunk = await it.__anext__()
            except StopAsyncIteration:
                return
            yield chunk
            seen = (seen + chunk)[-65536:]
            # remember event ids of complete events that went through
            text = seen.replace(b"\r\n", b"\n").decode("utf-8", "replace")
            complete = text.rsplit("\n\n", 1)[0] if "\n\n" in text else ""
            for line in complete.split("\n"):
                if line.startswith("id:"):
                    v = line[3:].removeprefix(" ")
                    if not plan.ids_before_cut or plan.ids_before_cut[-1] != v:
                        plan.ids_before_cut.append(v)
            if b"notifications/progress" in seen:
                progress_passed = True

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await self._inner.aclose()


class RecordingTransport(httpx2.AsyncHTTPTransport):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.wire: list[WireEntry] = []
        self.cut_plan: CutPlan | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        rpc = None
        if request.method == "POST":
            try:
                rpc = json.loads(request.content)
            except Exception:
                rpc = None
        entry = WireEntry(
            method=request.method,
            session_id=request.headers.get("mcp-session-id"),
            protocol_version=request.headers.get("mcp-protocol-version"),
            last_event_id=request.headers.get("last-event-id"),
            authorization=request.headers.get("authorization"),
            rpc=rpc,
        )
        self.wire.append(entry)
        response = await super().handle_async_request(request)
        entry.status = response.status_code
        entry.content_type = response.headers.get("content-type")
        entry.response_session_id = response.headers.get("mcp-session-id")
        entry.www_authenticate = response.headers.get("www-authenticate")
        plan = self.cut_plan
        if plan is not None and not plan.used and request.method == "POST" and rpc is not None and plan.match(rpc):
            plan.used = True
            plan.saw_sse = (entry.content_type or "").lower().startswith("text/event-stream")
            response.stream = CutAfterFirstProgress(response.stream, plan)
        return response


# ---------------------------------------------------------------------------
# Client callbacks
# ---------------------------------------------------------------------------


class Callbacks:
    def __init__(self) -> None:
        self.elicit_mode = "accept"
        self.elicit_requests: list[Any] = []
        self.sampling_requests: list[types.CreateMessageRequestParams] = []
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.transport_errors: list[str] = []

    async def elicitation(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.elicit_requests.append(params)
        if self.elicit_mode == "accept":
            return types.ElicitResult(action="accept", content={"answer": "42"})
        if self.elicit_mode == "decline":
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="cancel")

    async def sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.sampling_requests.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="model says hi"),
            model="test",
            stop_reason="endTurn",
        )

    async def logging(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def messages(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.transport_errors.append(err_text(message))


# ---------------------------------------------------------------------------
# Flows
# ---------------------------------------------------------------------------


async def refused_without_token(url: str) -> None:
    """The same handshake without the token must fail, every exchange answered 401 with the challenge."""
    recorder = RecordingTransport()
    error: BaseException | None = None
    try:
        with anyio.fail_after(10):
            async with httpx2.AsyncClient(transport=recorder, timeout=10) as http:
                async with streamable_http_client(url, http_client=http) as (read_stream, write_stream):
                    async with ClientSession(read_stream, write_stream, read_timeout_seconds=10) as session:
                        await session.initialize()
    except Exception as e:
        error = e
    refused = bool(recorder.wire) and all(
        w.status == 401 and CHALLENGE.match(w.www_authenticate or "") for w in recorder.wire
    )
    checks.check(
        "connect without the token fails, every exchange answered 401 with a Bearer resource_metadata challenge",
        error is not None and refused,
        "connect succeeded without a token"
        if error is None
        else f"error {err_text(error)}; exchanges {[(w.method, w.status, w.www_authenticate) for w in recorder.wire]}",
        f"{len(recorder.wire)} exchange(s) answered 401; SDK error: {err_text(error) if error else None}",
    )


async def flows(url: str) -> None:
    cb = Callbacks()
    recorder = RecordingTransport(limits=httpx2.Limits(max_connections=300, max_keepalive_connections=50))
    timeout = httpx2.Timeout(30.0, read=300.0)
    session_id: str | None = None

    if TOKEN:
        try:
            await refused_without_token(url)
        except Exception as e:
            checks.fail("connect without the token", err_text(e))

    async with httpx2.AsyncClient(transport=recorder, timeout=timeout, headers=AUTH_HEADERS) as http:
        async with streamable_http_client(url, http_client=http) as (read_stream, write_stream):
            async with ClientSession(
                read_stream,
                write_stream,
                read_timeout_seconds=30,
                sampling_callback=cb.sampling,
                elicitation_callback=cb.elicitation,
                logging_callback=cb.logging,
                message_handler=cb.messages,
                client_info=types.Implementation(name="mcp-actor-interop-py", version="0.0.0"),
            ) as session:
                # 1. connect (legacy initialize handshake) + list_tools
                try:
                    with anyio.fail_after(10):
                        init = await session.initialize()
                except Exception as e:
                    checks.fail("connect (initialize)", err_text(e))
                    return
                init_post = next((w for w in recorder.wire if w.rpc and w.rpc.get("method") == "initialize"), None)
                session_id = init_post.response_session_id if init_post else None
                checks.ok("connect (initialize)", f"session {session_id}, protocol {init.protocol_version}")
                checks.check(
                    "no server/discover probe was sent (legacy mode)",
                    not any(w.rpc and w.rpc.get("method") == "server/discover" for w in recorder.wire),
                    "the client sent server/discover",
                )
                checks.check(
                    "session id assigned by the server",
                    bool(session_id),
                    "no Mcp-Session-Id header on the initialize response",
                )
                checks.check(
                    "negotiated protocol version is 2025-11-25",
                    init.protocol_version == PROTOCOL_VERSION,
                    f"server answered initialize with protocolVersion {init.protocol_version}",
                )

                async def step(name: str, fn: Any) -> None:
                    try:
                        await fn()
                    except Exception as e:
                        checks.fail(name, err_text(e))

                async def list_tools() -> None:
                    with anyio.fail_after(10):
                        res = await session.list_tools()
                    names = [t.name for t in res.tools]
                    missing = [n for n in ("echo", "sleep", "ask", "sample") if n not in names]
                    checks.check(
                        "list_tools contains echo, sleep, ask, sample",
                        not missing,
                        f"missing {missing}; got {names}",
                        ", ".join(names),
                    )

                await step("list_tools", list_tools)

                # 2. 200 concurrent echo calls in the one session
                async def concurrent_echo() -> None:
                    n = 200
                    results: list[Any] = [None] * n

                    async def one(i: int) -> None:
                        try:
                            results[i] = await session.call_tool("echo", {"text": f"msg-{i}"})
                        except Exception as e:
                            results[i] = e

                    with anyio.fail_after(60):
                        async with anyio.create_task_group() as tg:
                            for i in range(n):
                                tg.start_soon(one, i)
                    bad = [
                        (i, r)
                        for i, r in enumerate(results)
                        if isinstance(r, Exception) or first_text(r) != f"msg-{i}"
                    ]
                    shown = "; ".join(
                        f"#{i}: {err_text(r) if isinstance(r, Exception) else 'got ' + describe(r)}" for i, r in bad[:3]
                    )
                    checks.check(
                        "200 concurrent echo calls each return their own text",
                        not bad,
                        f"{len(bad)}/{n} wrong: {shown}",
                    )

                await step("200 concurrent echo calls", concurrent_echo)

                # 3. elicitation: accept, then decline
                async def ask_accept() -> None:
                    cb.elicit_mode = "accept"
                    before = len(cb.elicit_requests)
                    with anyio.fail_after(10):
                        r = await session.call_tool("ask", {"question": "What is the answer?"})
                    req = cb.elicit_requests[before] if len(cb.elicit_requests) > before else None
                    checks.check("ask sent elicitation/create", req is not None, "the elicitation callback was never called")
                    if isinstance(req, types.ElicitRequestFormParams):
                        schema = req.requested_schema
                        props = schema.get("properties", {}) if isinstance(schema, dict) else {}
                        checks.check(
                            'elicitation schema has required string property "answer"',
                            props.get("answer", {}).get("type") == "string" and "answer" in (schema.get("required") or []),
                            f"requestedSchema was {json.dumps(schema)}",
                        )
                    elif req is not None:
                        checks.fail("elicitation is form mode", f"got {describe(req)}")
                    checks.check('ask accepted -> "42"', first_text(r) == "42", f"result was {describe(r)}")

                async def ask_decline() -> None:
                    cb.elicit_mode = "decline"
                    try:
                        with anyio.fail_after(10):
                            r = await session.call_tool("ask", {"question": "Will you decline?"})
                    finally:
                        cb.elicit_mode = "accept"
                    checks.check('ask declined -> "declined"', first_text(r) == "declined", f"result was {describe(r)}")

                await step("ask (elicitation accept)", ask_accept)
                await step("ask (elicitation decline)", ask_decline)

                # 4. sampling
                async def sample() -> None:
                    before = len(cb.sampling_requests)
                    with anyio.fail_after(10):
                        r = await session.call_tool("sample", {"prompt": "hi"})
                    req = cb.sampling_requests[before] if len(cb.sampling_requests) > before else None
                    msg = req.messages[0] if req and req.messages else None
                    checks.check(
                        "sample sent sampling/createMessage with the prompt as a user text message",
                        msg is not None
                        and msg.role == "user"
                        and isinstance(msg.content, types.TextContent)
                        and msg.content.text == "hi",
                        f"createMessage params were {describe(req)}" if req else "the sampling callback was never called",
                    )
                    checks.check('sample -> "model says hi"', first_text(r) == "model says hi", f"result was {describe(r)}")

                await step("sample", sample)

                # 5. progress
                async def sleep_progress() -> None:
                    progress: list[float] = []

                    async def on_progress(p: float, total: float | None, message: str | None) -> None:
                        progress.append(p)

                    with anyio.fail_after(10):
                        r = await session.call_tool("sleep", {"ms": 350}, progress_callback=on_progress)
                    checks.check('sleep 350 -> "slept 350 ms"', first_text(r) == "slept 350 ms", f"result was {describe(r)}")
                    checks.check(
                        "sleep 350 sent >= 2 progress notifications",
                        len(progress) >= 2,
                        f"got {len(progress)}: {progress}",
                        f"{len(progress)} received",
                    )
                    checks.check(
                        "progress values strictly increase",
                        all(b > a for a, b in zip(progress, progress[1:])),
                        f"progress values {progress}",
                    )

                await step("sleep with progress", sleep_progress)

                # 6. logging
                async def logging_flow() -> None:
                    with anyio.fail_after(10):
                        await session.set_logging_level("debug")
                    checks.ok("logging/setLevel debug accepted")
                    before = len(cb.logs)
                    with anyio.fail_after(10):
                        r = await session.call_tool("sleep", {"ms": 50})
                    checks.check('sleep 50 -> "slept 50 ms"', first_text(r) == "slept 50 ms", f"result was {describe(r)}")
                    # log notifications may travel on the standalone GET stream: give them a moment
                    with anyio.move_on_after(2):
                        while len(cb.logs) == before:
                            await anyio.sleep(0.05)
                    got = cb.logs[before:]
                    checks.check(
                        "notifications/message received after setLevel debug",
                        len(got) >= 1,
                        "no notifications/message arrived within 2 s of the sleep call",
                        f"{len(got)} message(s), first: level={got[0].level} data={json.dumps(got[0].data)[:80]}"
                        if got
                        else None,
                    )

                await step("logging", logging_flow)

                # 7. resumption after the connection is cut. The Python client does reconnect
                # (StreamableHTTPTransport._handle_reconnection: GET + Last-Event-ID after the
                # server's `retry`), so this is exercised here too, through the public
                # `http_client=` hook with a transport that cuts the response body.
                async def resumption() -> None:
                    plan = CutPlan(
                        match=lambda rpc: rpc.get("method") == "tools/call"
                        and (rpc.get("params") or {}).get("name") == "sleep"
                        and ((rpc.get("params") or {}).get("arguments") or {}).get("ms") == 1500
                    )
                    recorder.cut_plan = plan
                    wire_start = len(recorder.wire)
                    progress: list[float] = []

                    async def on_progress(p: float, total: float | None, message: str | None) -> None:
                        progress.append(p)
                        plan.progress_handled.set()

                    r = None
                    call_error = None
                    try:
                        with anyio.fail_after(20):
                            r = await session.call_tool("sleep", {"ms": 1500}, progress_callback=on_progress)
                    except Exception as e:
                        # keep going: the wire-level checks below say what went wrong
                        call_error = err_text(e)
                    finally:
                        plan.used = True
                        recorder.cut_plan = None
                    new_wire = recorder.wire[wire_start:]
                    post = next((w for w in new_wire if w.method == "POST" and w.rpc and w.rpc.get("method") == "tools/call"), None)
                    last_before_cut = plan.ids_before_cut[-1] if plan.ids_before_cut else None
                    resume_get = next((w for w in new_wire if w.method == "GET" and w.last_event_id), None)
                    checks.check(
                        "POST tools/call sleep 1500 answered with an SSE stream carrying event ids",
                        post is not None and post.status == 200 and plan.saw_sse and last_before_cut is not None,
                        f"POST status {post and post.status}, content-type {post and post.content_type}, "
                        f"event ids before cut: {plan.ids_before_cut}",
                        f"last id before cut: {last_before_cut}",
                    )
                    checks.check(
                        "SSE connection was cut after the first progress event",
                        plan.cut_at is not None,
                        "the cut never happened (no progress event on the POST stream?)",
                    )
                    checks.check(
                        "SDK reconnected with GET + Last-Event-ID of the last event it saw",
                        resume_get is not None and resume_get.last_event_id == last_before_cut,
                        f"GET Last-Event-ID {resume_get.last_event_id}, expected {last_before_cut}"
                        if resume_get
                        else f"no GET with Last-Event-ID was sent; requests: {[(w.method, w.status) for w in new_wire]}",
                        f"Last-Event-ID {resume_get.last_event_id if resume_get else None}",
                    )
                    if resume_get is not None:
                        checks.check(
                            "resumption GET answered 200 text/event-stream",
                            resume_get.status == 200 and (resume_get.content_type or "").startswith("text/event-stream"),
                            f"GET status {resume_get.status}, content-type {resume_get.content_type}",
                        )
                    checks.check(
                        'result arrives after reconnect: "slept 1500 ms"',
                        first_text(r) == "slept 1500 ms",
                        call_error or f"result was {describe(r)}",
                        f"{len(progress)} progress notifications in total",
                    )
                    checks.check(
                        "replayed progress continues without duplicates",
                        all(b > a for a, b in zip(progress, progress[1:])),
                        f"progress values {progress}",
                    )

                await step("resumption", resumption)

        # 8. leaving streamable_http_client (terminate_on_close=True) sends DELETE;
        # afterwards the old session id must be unknown (404).
        async def terminated() -> None:
            dels = [w for w in recorder.wire if w.method == "DELETE"]
            d = dels[-1] if dels else None
            checks.check(
                "closing the client sent DELETE with the session id",
                d is not None and d.session_id == session_id and d.status is not None and 200 <= d.status < 300,
                f"DELETE session {d.session_id} -> HTTP {d.status}" if d else "no DELETE was sent",
                f"HTTP {d.status if d else None}",
            )
            async with httpx2.AsyncClient(timeout=10) as raw:
                res = await raw.post(
                    url,
                    headers={
                        "content-type": "application/json",
                        "accept": "application/json, text/event-stream",
                        "mcp-session-id": session_id or "",
                        "mcp-protocol-version": PROTOCOL_VERSION,
                        **AUTH_HEADERS,
                    },
                    content=json.dumps({"jsonrpc": "2.0", "id": "after-delete", "method": "tools/list", "params": {}}),
                )
            checks.check(
                "POST with the terminated session id -> HTTP 404",
                res.status_code == 404,
                f"HTTP {res.status_code}, body {res.text[:200]}",
            )

        if session_id:
            try:
                await terminated()
            except Exception as e:
                checks.fail("terminate session", err_text(e))

    # 9. with a token: it went out on every exchange of the session (POSTs, the GET
    # streams, the DELETE), not only on initialize.
    if TOKEN:
        without = [w for w in recorder.wire if w.authorization != f"Bearer {TOKEN}"]
        checks.check(
            "every request of the session carried the bearer token",
            bool(recorder.wire) and not without,
            f"{len(without)}/{len(recorder.wire)} without it: {[(w.method, w.status) for w in without[:5]]}",
            f"{len(recorder.wire)} exchanges: {', '.join(sorted({w.method for w in recorder.wire}))}",
        )

    if checks.failed and cb.transport_errors:
        print(f"note: transport errors seen by the SDK: {cb.transport_errors[:10]}", flush=True)


async def main(url: str) -> None:
    try:
        with anyio.fail_after(120):
            await flows(url)
    except TimeoutError:
        checks.fail("overall", "flow did not finish within 120 s (hung request?)")
    except BaseException as e:  # noqa: BLE001 - report anything, including exception groups
        if isinstance(e, KeyboardInterrupt):
            raise
        checks.fail("overall", err_text(e))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: python client.py <server-url, e.g. http://127.0.0.1:8080/mcp>", file=sys.stderr)
        sys.exit(2)
    anyio.run(main, sys.argv[1])
    print(f"{checks.passed} passed, {checks.failed} failed", flush=True)
    sys.exit(1 if checks.failed else 0)
