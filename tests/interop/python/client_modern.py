#!/usr/bin/env python3
"""Interop flows: the official Python MCP SDK in its DEFAULT (modern) mode against mcp-actor.

Usage: python client_modern.py http://127.0.0.1:PORT/mcp CONFIG_FILE

CONFIG_FILE is the TOML file the server was started with (``--config``). It must set
``[reload] watch = true`` and declare the builtin tools echo, sleep, ask and sample; this
script appends one ``[[tools]]`` entry (``echo2``) to it to trigger a hot reload.

``mcp.Client`` (mcp 2.3.x, pinned in requirements.txt) defaults to ``mode="auto"``: it
POSTs ``server/discover`` at 2026-07-28 first and, when the server answers with a
``DiscoverResult`` listing 2026-07-28, stays on the stateless revision for the whole
connection (``client.session.discover_result`` set, ``initialize_result`` None; see
``mcp/client/_probe.py`` ``negotiate_auto``). Every later request is a self-contained
POST with the ``_meta`` envelope and no ``Mcp-Session-Id``.

The main flow passes ``streamable_http_client(url, http_client=...)`` to ``mcp.Client``
instead of the bare URL, only to plug in a recording HTTP transport (the SDK's documented
way to configure the HTTP client): ``Client(url)`` builds exactly that transport with a
default client, and the mode is left at its default. A second, short connection uses the
literal ``mcp.Client(url)``.

Checks:
  * discover: the client ended up modern (first request ``server/discover`` with
    ``MCP-Protocol-Version: 2026-07-28``, no ``initialize``, ``discover_result`` set);
  * list_tools; ``echo``;
  * elicitation through ``input_required``: ``ask`` with an elicitation callback; the
    SDK answers the ``InputRequiredResult`` and retries by itself;
  * sampling through ``input_required`` (``sample``);
  * progress: ``sleep {ms: 350}`` with a progress callback (>= 2 notifications);
  * ``client.listen(tools_list_changed=True)`` (``subscriptions/listen``), the config file
    gains ``echo2``, the subscription yields ``ToolsListChanged``, ``list_tools`` then shows
    ``echo2``;
  * no request or response carried ``Mcp-Session-Id``; ``GET /healthz`` reports
    ``"sessions": 0`` after the whole flow.

With ``MCP_INTEROP_TOKEN`` set (a server with ``[auth]``), the httpx clients handed to
``streamable_http_client`` send ``Authorization: Bearer <token>`` on every request, and a
first check makes sure the same client without the token is refused with 401 (the
``server/discover`` probe and the ``initialize`` the SDK falls back to). ``Client(url)``
builds its own httpx client and has no way to add a header, so with a token the second
connection is ``Client(streamable_http_client(url, http_client=<client with the header>))``.
Unset, the flow is the unauthenticated one.

Set ``INTEROP_WIRE=1`` to print every HTTP exchange (request body, response status,
headers and body) to stderr.

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
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged

MODERN = "2026-07-28"
WIRE_LOG = os.environ.get("INTEROP_WIRE") not in (None, "", "0")
TOKEN = os.environ.get("MCP_INTEROP_TOKEN") or None
AUTH_HEADERS = {"authorization": f"Bearer {TOKEN}"} if TOKEN else {}
# A 401's challenge names the protected resource metadata (spec basic/authorization, RFC 9728).
CHALLENGE = re.compile(r'^Bearer .*resource_metadata="')

# ---------------------------------------------------------------------------
# Tiny check harness (same output format as client.py)
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
# Recording HTTP transport: every exchange the SDK makes, with the response body
# teed as it streams through (SSE included), for wire-level checks and evidence.
# ---------------------------------------------------------------------------


@dataclass
class WireEntry:
    n: int
    method: str
    req_headers: dict[str, str]
    rpc: Any
    status: int | None = None
    resp_headers: dict[str, str] = field(default_factory=dict)
    body: bytearray = field(default_factory=bytearray)
    done: bool = False

    @property
    def rpc_method(self) -> str | None:
        return self.rpc.get("method") if isinstance(self.rpc, dict) else None

    @property
    def content_type(self) -> str:
        return self.resp_headers.get("content-type", "")

    def messages(self) -> list[Any]:
        """JSON-RPC messages of the response body (JSON or the data lines of SSE)."""
        text = bytes(self.body).decode("utf-8", "replace")
        if self.content_type.startswith("text/event-stream"):
            out = []
            for event in text.replace("\r\n", "\n").split("\n\n"):
                data = "\n".join(
                    line[5:].removeprefix(" ") for line in event.split("\n") if line.startswith("data:")
                )
                if data:
                    try:
                        out.append(json.loads(data))
                    except ValueError:
                        out.append(data)
            return out
        try:
            return [json.loads(text)] if text else []
        except ValueError:
            return [text]

    def sse_field_lines(self) -> list[str]:
        """SSE lines other than data/event/comments (id:, retry:)."""
        text = bytes(self.body).decode("utf-8", "replace").replace("\r\n", "\n")
        return [l for l in text.split("\n") if l.startswith("id:") or l.startswith("retry:")]

    def summary(self) -> str:
        return f"#{self.n} {self.method} {self.rpc_method or ''} -> {self.status} {self.content_type}"


class TeeStream(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, entry: WireEntry) -> None:
        self._inner = inner
        self._entry = entry

    async def __aiter__(self):  # type: ignore[override]
        try:
            async for chunk in self._inner:
                if len(self._entry.body) < 1 << 20:
                    self._entry.body.extend(chunk)
                if WIRE_LOG:
                    print(f"wire <- #{self._entry.n} chunk {bytes(chunk)!r}", file=sys.stderr, flush=True)
                yield chunk
        finally:
            self._entry.done = True

    async def aclose(self) -> None:
        await self._inner.aclose()


class RecordingTransport(httpx2.AsyncHTTPTransport):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.wire: list[WireEntry] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        rpc = None
        if request.method == "POST":
            try:
                rpc = json.loads(request.content)
            except Exception:
                rpc = None
        entry = WireEntry(
            n=len(self.wire) + 1,
            method=request.method,
            req_headers={k.lower(): v for k, v in request.headers.items()},
            rpc=rpc,
        )
        self.wire.append(entry)
        if WIRE_LOG:
            hdrs = {k: v for k, v in entry.req_headers.items() if k.startswith("mcp") or k == "accept"}
            print(f"wire -> #{entry.n} {request.method} {request.url} {hdrs} {request.content[:2000]!r}",
                  file=sys.stderr, flush=True)
        response = await super().handle_async_request(request)
        entry.status = response.status_code
        entry.resp_headers = {k.lower(): v for k, v in response.headers.items()}
        if WIRE_LOG:
            print(f"wire <- #{entry.n} HTTP {response.status_code} {entry.resp_headers}", file=sys.stderr, flush=True)
        response.stream = TeeStream(response.stream, entry)
        return response


def wire_posts(wire: list[WireEntry], method: str, tool: str | None = None) -> list[WireEntry]:
    out = []
    for w in wire:
        if w.method != "POST" or w.rpc_method != method:
            continue
        if tool is not None and ((w.rpc.get("params") or {}).get("name") != tool):
            continue
        out.append(w)
    return out


def result_of(w: WireEntry) -> Any:
    """The `result` (or `error`) of the JSON-RPC response on this exchange."""
    for m in w.messages():
        if isinstance(m, dict) and "id" in m and ("result" in m or "error" in m):
            return m.get("result", m.get("error"))
    return None


# ---------------------------------------------------------------------------
# Client callbacks
# ---------------------------------------------------------------------------


ANSWER = "forty-two, from the modern client"


class Callbacks:
    def __init__(self) -> None:
        self.elicit_mode = "accept"
        self.elicit_requests: list[Any] = []
        self.sampling_requests: list[types.CreateMessageRequestParams] = []
        self.transport_errors: list[str] = []
        self.notifications: list[Any] = []

    async def elicitation(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.elicit_requests.append(params)
        if self.elicit_mode == "accept":
            return types.ElicitResult(action="accept", content={"answer": ANSWER})
        return types.ElicitResult(action="decline")

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

    async def messages(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.transport_errors.append(err_text(message))
        else:
            self.notifications.append(message)


# ---------------------------------------------------------------------------
# Flows
# ---------------------------------------------------------------------------


def health_url(mcp_url: str) -> str:
    parts = urlsplit(mcp_url)
    return urlunsplit((parts.scheme, parts.netloc, "/healthz", "", ""))


async def get_health(url: str) -> tuple[int, Any]:
    async with httpx2.AsyncClient(timeout=10) as raw:
        res = await raw.get(health_url(url))
    try:
        return res.status_code, res.json()
    except ValueError:
        return res.status_code, res.text


async def refused_without_token(url: str) -> None:
    """The same client without the token must fail to connect, every exchange answered 401
    with the challenge."""
    recorder = RecordingTransport()
    error: BaseException | None = None
    try:
        with anyio.fail_after(15):
            async with httpx2.AsyncClient(transport=recorder, timeout=10) as http:
                async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=10):
                    pass
    except Exception as e:
        error = e
    refused = bool(recorder.wire) and all(
        w.status == 401 and CHALLENGE.match(w.resp_headers.get("www-authenticate", "")) for w in recorder.wire
    )
    checks.check(
        "connect without the token fails, every exchange answered 401 with a Bearer resource_metadata challenge",
        error is not None and refused,
        "connect succeeded without a token"
        if error is None
        else f"error {err_text(error)}; exchanges {[w.summary() for w in recorder.wire]}",
        f"{', '.join(w.rpc_method or w.method for w in recorder.wire)} answered 401; "
        f"SDK error: {err_text(error) if error else None}",
    )


async def flows(url: str, config_path: str) -> None:
    cb = Callbacks()
    recorder = RecordingTransport(limits=httpx2.Limits(max_connections=50, max_keepalive_connections=20))
    timeout = httpx2.Timeout(30.0, read=300.0)

    async def step(name: str, fn: Any) -> None:
        try:
            await fn()
        except Exception as e:
            checks.fail(name, err_text(e))

    if TOKEN:
        await step("connect without the token", lambda: refused_without_token(url))

    async with httpx2.AsyncClient(transport=recorder, timeout=timeout, headers=AUTH_HEADERS) as http:
        client_cm = Client(
            streamable_http_client(url, http_client=http),
            read_timeout_seconds=30,
            elicitation_callback=cb.elicitation,
            sampling_callback=cb.sampling,
            message_handler=cb.messages,
            client_info=types.Implementation(name="mcp-actor-interop-py-modern", version="0.0.0"),
        )
        connected = False
        try:
            # Entering runs the mode="auto" negotiation (server/discover, bounded by the SDK's
            # DISCOVER_TIMEOUT_SECONDS; main() bounds the whole run).
            async with client_cm as client:
                connected = True
                await modern_flow(url, config_path, client, recorder, cb, step)
        except Exception as e:
            checks.fail("connect (mode auto: server/discover)" if not connected else "modern flow", err_text(e))
            for w in recorder.wire[:5]:
                print(f"note: {w.summary()} body {bytes(w.body)[:300]!r}", flush=True)
            if not connected:
                return

        # Wire-level: the whole modern connection never touched a session.
        async def wire_checks() -> None:
            wire = recorder.wire
            sent_sid = [w.summary() for w in wire if "mcp-session-id" in w.req_headers]
            got_sid = [w.summary() + " " + w.resp_headers["mcp-session-id"] for w in wire if "mcp-session-id" in w.resp_headers]
            checks.check(
                "no request sent and no response carried Mcp-Session-Id",
                not sent_sid and not got_sid,
                f"requests with a session id: {sent_sid}; responses minting one: {got_sid}",
                f"{len(wire)} HTTP exchanges",
            )
            non_post = [w.summary() for w in wire if w.method != "POST"]
            checks.check(
                "only POSTs on the modern connection (no GET stream, no DELETE)",
                not non_post,
                f"other requests: {non_post}",
            )
            bad_pv = [
                f"{w.summary()} MCP-Protocol-Version={w.req_headers.get('mcp-protocol-version')!r}"
                for w in wire
                if w.req_headers.get("mcp-protocol-version") != MODERN
            ]
            checks.check(
                f"every POST carried MCP-Protocol-Version: {MODERN}",
                not bad_pv,
                "; ".join(bad_pv),
            )
            sse_ids = [(w.summary(), w.sse_field_lines()[:3]) for w in wire if w.sse_field_lines()]
            checks.check(
                "SSE responses carry no id:/retry: fields (not resumable at 2026-07-28)",
                not sse_ids,
                f"{sse_ids}",
            )
            no_rt = []
            for w in wire:
                r = result_of(w)
                if isinstance(r, dict) and "code" not in r and "resultType" not in r:
                    no_rt.append(w.summary())
            checks.check("every result carried resultType", not no_rt, f"results without resultType: {no_rt}")
            if TOKEN:
                without = [w.summary() for w in wire if w.req_headers.get("authorization") != f"Bearer {TOKEN}"]
                checks.check(
                    "every request carried the bearer token",
                    bool(wire) and not without,
                    f"{len(without)}/{len(wire)} without it: {without[:5]}",
                )

        await step("wire checks", wire_checks)

    # A second connection with the literal default constructor: Client(url). With a token,
    # the closest form that can carry it: the default mode, an httpx client with the header.
    async def literal_client() -> None:
        with anyio.fail_after(15):
            if TOKEN:
                async with httpx2.AsyncClient(headers=AUTH_HEADERS, timeout=timeout) as http:
                    async with Client(streamable_http_client(url, http_client=http)) as c:
                        dr = c.session.discover_result
                        ir = c.session.initialize_result
                        r = await c.call_tool("echo", {"text": "plain Client(url)"})
            else:
                async with Client(url) as c:
                    dr = c.session.discover_result
                    ir = c.session.initialize_result
                    r = await c.call_tool("echo", {"text": "plain Client(url)"})
        form = "mcp.Client(streamable_http_client(url, http_client=<with the token>))" if TOKEN else "literal mcp.Client(url)"
        checks.check(
            f"{form} (mode auto) ends up modern and calls echo",
            dr is not None and ir is None and first_text(r) == "plain Client(url)",
            f"discover_result={describe(dr) if dr else None}, result {describe(r)}",
            f"protocol {MODERN}",
        )

    await step("second connection (mode auto)", literal_client)

    # After the whole modern flow: no session was ever created.
    async def health() -> None:
        status, body = await get_health(url)
        ok = status == 200 and isinstance(body, dict) and body.get("status") == "ok" and body.get("sessions") == 0
        checks.check(
            'GET /healthz -> {"status":"ok","sessions":0,...} after the modern flow',
            ok,
            f"HTTP {status}, body {body!r}",
            json.dumps(body),
        )
        # The closed listen stream should be released too (the server notices the disconnect
        # at the latest with its next keep-alive write); informational only.
        streams = body.get("listenStreams") if isinstance(body, dict) else None
        deadline = time.monotonic() + 3
        while streams not in (0, None) and time.monotonic() < deadline:
            await anyio.sleep(0.2)
            _, body = await get_health(url)
            streams = body.get("listenStreams") if isinstance(body, dict) else None
        print(f"note: listenStreams after closing the subscription: {streams}", flush=True)

    await step("healthz", health)

    if checks.failed and cb.transport_errors:
        print(f"note: transport errors seen by the SDK: {cb.transport_errors[:10]}", flush=True)


async def modern_flow(url: str, config_path: str, client: Client, recorder: RecordingTransport, cb: Callbacks, step: Any) -> None:
    # 1. discover: the client must have ended up on the modern revision.
    session = client.session
    dr = session.discover_result
    first = recorder.wire[0] if recorder.wire else None
    checks.check(
        "first request is POST server/discover at 2026-07-28",
        first is not None
        and first.method == "POST"
        and first.rpc_method == "server/discover"
        and first.req_headers.get("mcp-protocol-version") == MODERN
        and first.req_headers.get("mcp-method") == "server/discover",
        f"first exchange {first.summary() if first else None}, headers {first.req_headers if first else None}",
        f"HTTP {first.status if first else None}",
    )
    checks.check(
        "client ended up modern (discover_result set, no initialize)",
        dr is not None
        and session.initialize_result is None
        and client.protocol_version == MODERN
        and not wire_posts(recorder.wire, "initialize"),
        f"discover_result={describe(dr) if dr else None}, initialize_result={describe(session.initialize_result)}, "
        f"protocol {session.protocol_version}, initialize posts {len(wire_posts(recorder.wire, 'initialize'))}",
        f"protocol {client.protocol_version}",
    )
    if dr is None:
        return
    raw = result_of(first) if first else None
    checks.check(
        "discover result: supportedVersions has 2026-07-28, tools capability, ttlMs, cacheScope, serverInfo",
        MODERN in dr.supported_versions
        and dr.capabilities.tools is not None
        and isinstance(raw, dict)
        and isinstance(raw.get("ttlMs"), int)
        and raw.get("cacheScope") in ("public", "private")
        and raw.get("resultType") == "complete"
        and client.server_info is not None,
        f"wire result {json.dumps(raw)[:400]}",
        f"server {client.server_info.name if client.server_info else None}, supported {dr.supported_versions}",
    )
    checks.check(
        "discover advertises tools.listChanged",
        dr.capabilities.tools is not None and bool(dr.capabilities.tools.list_changed),
        f"capabilities {describe(dr.capabilities)}",
    )

    # 2. list tools
    async def list_tools() -> None:
        with anyio.fail_after(10):
            res = await client.list_tools()
        names = [t.name for t in res.tools]
        missing = [n for n in ("echo", "sleep", "ask", "sample") if n not in names]
        checks.check(
            "list_tools contains echo, sleep, ask, sample",
            not missing,
            f"missing {missing}; got {names}",
            ", ".join(names),
        )
        post = wire_posts(recorder.wire, "tools/list")[-1:]
        raw = result_of(post[0]) if post else None
        checks.check(
            "tools/list result carries ttlMs and cacheScope",
            isinstance(raw, dict) and isinstance(raw.get("ttlMs"), int) and raw.get("cacheScope") in ("public", "private"),
            f"wire result keys {sorted(raw) if isinstance(raw, dict) else raw}",
        )

    await step("list_tools", list_tools)

    # 3. echo
    async def echo() -> None:
        with anyio.fail_after(10):
            r = await client.call_tool("echo", {"text": "hello modern"})
        checks.check('echo "hello modern"', first_text(r) == "hello modern" and not r.is_error, f"result was {describe(r)}")
        post = wire_posts(recorder.wire, "tools/call", "echo")[-1]
        checks.check(
            "tools/call carried Mcp-Method and Mcp-Name headers and the _meta envelope",
            post.req_headers.get("mcp-method") == "tools/call"
            and post.req_headers.get("mcp-name") == "echo"
            and MODERN == ((post.rpc.get("params") or {}).get("_meta") or {}).get("io.modelcontextprotocol/protocolVersion"),
            f"headers {post.req_headers}, body {json.dumps(post.rpc)[:300]}",
        )

    await step("echo", echo)

    # 4. elicitation through input_required (the SDK answers and retries by itself)
    async def ask_accept() -> None:
        cb.elicit_mode = "accept"
        before_cb = len(cb.elicit_requests)
        before_wire = len(wire_posts(recorder.wire, "tools/call", "ask"))
        with anyio.fail_after(15):
            r = await client.call_tool("ask", {"question": "What is the answer?"})
        reqs = cb.elicit_requests[before_cb:]
        checks.check(
            "ask: the elicitation callback was called once",
            len(reqs) == 1,
            f"called {len(reqs)} times",
        )
        if reqs and isinstance(reqs[0], types.ElicitRequestFormParams):
            schema = reqs[0].requested_schema
            props = schema.get("properties", {}) if isinstance(schema, dict) else {}
            checks.check(
                'ask: form elicitation with required string property "answer"',
                props.get("answer", {}).get("type") == "string" and "answer" in (schema.get("required") or []),
                f"requestedSchema was {json.dumps(schema)}",
                f"message {reqs[0].message!r}",
            )
        elif reqs:
            checks.fail("ask: form elicitation", f"got {describe(reqs[0])}")
        checks.check(
            "ask: result text equals the accepted answer",
            first_text(r) == ANSWER and not r.is_error,
            f"result was {describe(r)}",
            repr(first_text(r)),
        )
        posts = wire_posts(recorder.wire, "tools/call", "ask")[before_wire:]
        r1 = result_of(posts[0]) if posts else None
        p2 = (posts[1].rpc.get("params") or {}) if len(posts) > 1 else {}
        ok = (
            len(posts) == 2
            and isinstance(r1, dict)
            and r1.get("resultType") == "input_required"
            and isinstance(r1.get("inputRequests"), dict)
            and len(r1["inputRequests"]) == 1
            and all(set(v) <= {"method", "params"} and v.get("method") == "elicitation/create" for v in r1["inputRequests"].values())
            and posts[0].rpc.get("id") != posts[1].rpc.get("id")
            and set((p2.get("inputResponses") or {})) == set(r1["inputRequests"])
            and p2.get("requestState") == r1.get("requestState")
        )
        checks.check(
            "ask: wire shows input_required, then a retry with a new id, inputResponses and the requestState",
            ok,
            f"{len(posts)} POSTs; first result {json.dumps(r1)[:400]}; retry params {json.dumps(p2)[:400]}",
            f"key {list(r1['inputRequests'])[0] if ok else None}",
        )

    async def ask_decline() -> None:
        cb.elicit_mode = "decline"
        try:
            with anyio.fail_after(15):
                r = await client.call_tool("ask", {"question": "Will you decline?"})
        finally:
            cb.elicit_mode = "accept"
        checks.check('ask declined -> "declined"', first_text(r) == "declined", f"result was {describe(r)}")

    await step("ask (elicitation accept)", ask_accept)
    await step("ask (elicitation decline)", ask_decline)

    # 5. sampling through input_required
    async def sample() -> None:
        before = len(cb.sampling_requests)
        with anyio.fail_after(15):
            r = await client.call_tool("sample", {"prompt": "hi"})
        req = cb.sampling_requests[before] if len(cb.sampling_requests) > before else None
        msg = req.messages[0] if req and req.messages else None
        checks.check(
            "sample: sampling callback got the prompt as a user text message",
            msg is not None and msg.role == "user" and isinstance(msg.content, types.TextContent) and msg.content.text == "hi",
            f"createMessage params were {describe(req)}" if req else "the sampling callback was never called",
        )
        checks.check('sample -> "model says hi"', first_text(r) == "model says hi", f"result was {describe(r)}")

    await step("sample", sample)

    # 6. progress
    async def sleep_progress() -> None:
        progress: list[float] = []

        async def on_progress(p: float, total: float | None, message: str | None) -> None:
            progress.append(p)

        with anyio.fail_after(15):
            r = await client.call_tool("sleep", {"ms": 350}, progress_callback=on_progress)
        checks.check('sleep 350 -> "slept 350 ms"', first_text(r) == "slept 350 ms", f"result was {describe(r)}")
        checks.check(
            "sleep 350 delivered >= 2 progress notifications to the callback",
            len(progress) >= 2,
            f"got {len(progress)}: {progress}",
            f"{len(progress)} received: {progress}",
        )
        checks.check(
            "progress values strictly increase",
            all(b > a for a, b in zip(progress, progress[1:])),
            f"progress values {progress}",
        )
        post = wire_posts(recorder.wire, "tools/call", "sleep")[-1]
        token = ((post.rpc.get("params") or {}).get("_meta") or {}).get("progressToken")
        msgs = post.messages()
        prog = [m for m in msgs if isinstance(m, dict) and m.get("method") == "notifications/progress"]
        checks.check(
            "progress frames rode the request's own SSE stream with its progressToken, before the result",
            post.content_type.startswith("text/event-stream")
            and token is not None
            and prog
            and all((m.get("params") or {}).get("progressToken") == token for m in prog)
            and isinstance(msgs[-1], dict)
            and "result" in msgs[-1],
            f"content-type {post.content_type}, token {token!r}, messages {json.dumps(msgs)[:400]}",
        )

    await step("sleep with progress", sleep_progress)

    # 7. subscriptions/listen + hot reload -> notifications/tools/list_changed
    async def listen_reload() -> None:
        with anyio.fail_after(10):
            before = await client.list_tools()
        if any(t.name == "echo2" for t in before.tools):
            checks.fail("listen: echo2 absent before the reload", "echo2 is already listed; was the config file reused?")
            return
        async with client.listen(tools_list_changed=True) as sub:
            checks.check(
                "listen: acknowledged with toolsListChanged honored",
                bool(sub.honored.tools_list_changed),
                f"honored {describe(sub.honored)}",
                f"subscription id {sub.subscription_id!r}",
            )
            with open(config_path, "a", encoding="utf-8") as f:
                f.write('\n[[tools]]\nbuiltin = "echo"\nname = "echo2"\n')
            appended = time.monotonic()
            event = None
            try:
                with anyio.fail_after(8):
                    event = await sub.__anext__()
            except TimeoutError:
                pass
            elapsed = time.monotonic() - appended
            checks.check(
                "listen: tools/list_changed received after appending echo2 to the config file",
                isinstance(event, ToolsListChanged),
                f"got {event!r} within {elapsed:.1f} s",
                f"after {elapsed:.2f} s",
            )
            post = next(
                (w for w in reversed(recorder.wire) if w.rpc_method == "subscriptions/listen"),
                None,
            )
            msgs = post.messages() if post else []
            sid = post.rpc.get("id") if post else None
            ack = msgs[0] if msgs else None
            changed = [m for m in msgs if isinstance(m, dict) and m.get("method") == "notifications/tools/list_changed"]
            checks.check(
                "listen wire: SSE, ack first, every frame stamped with subscriptionId = the listen request id",
                post is not None
                and post.status == 200
                and post.content_type.startswith("text/event-stream")
                and isinstance(ack, dict)
                and ack.get("method") == "notifications/subscriptions/acknowledged"
                and changed
                and all(
                    isinstance(m, dict)
                    and ((m.get("params") or m.get("result") or {}).get("_meta") or {}).get(
                        "io.modelcontextprotocol/subscriptionId"
                    )
                    == sid
                    for m in msgs
                ),
                f"exchange {post.summary() if post else None}, frames {json.dumps(msgs)[:600]}",
                f"{len(msgs)} frames",
            )
            unrequested = [
                m.get("method")
                for m in msgs
                if isinstance(m, dict)
                and m.get("method") not in ("notifications/subscriptions/acknowledged", "notifications/tools/list_changed")
            ]
            checks.check("listen wire: no unrequested notification kinds", not unrequested, f"got {unrequested}")
            with anyio.fail_after(10):
                after = await client.list_tools()
            names = [t.name for t in after.tools]
            checks.check("list_tools after the change shows echo2", "echo2" in names, f"got {names}", ", ".join(names))
        with anyio.fail_after(10):
            r = await client.call_tool("echo2", {"text": "from echo2"})
        checks.check('echo2 "from echo2"', first_text(r) == "from echo2", f"result was {describe(r)}")

    await step("subscriptions/listen + reload", listen_reload)


async def main(url: str, config_path: str) -> None:
    try:
        with anyio.fail_after(120):
            await flows(url, config_path)
    except TimeoutError:
        checks.fail("overall", "flow did not finish within 120 s (hung request?)")
    except BaseException as e:  # noqa: BLE001 - report anything, including exception groups
        if isinstance(e, KeyboardInterrupt):
            raise
        checks.fail("overall", err_text(e))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(
            "usage: python client_modern.py <server-url, e.g. http://127.0.0.1:8080/mcp> <the server's --config file>",
            file=sys.stderr,
        )
        sys.exit(2)
    anyio.run(main, sys.argv[1], sys.argv[2])
    print(f"{checks.passed} passed, {checks.failed} failed", flush=True)
    sys.exit(1 if checks.failed else 0)
