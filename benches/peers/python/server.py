"""Reference MCP server on the official Python SDK (`mcp` 2.x, MCPServer), for the benchmarks.

* Streamable HTTP at http://127.0.0.1:<port>/mcp, served by uvicorn. Both protocol
  eras on the one endpoint: the SDK's session manager sends any request whose
  `MCP-Protocol-Version` header names a version that is not a handshake version
  (so 2026-07-28) to its stateless "modern" handler; everything else takes the
  handshake-era path, here stateful (`stateless_http=False`, the default), with the
  SDK's default SSE replies (`json_response=False`). There is no switch to turn the
  modern path on: mcp 2.3 routes by that header whatever the options.
* tools: echo {text}; sleep {ms}; progress {count}; ask {question} (form elicitation:
  a server->client `elicitation/create` in the handshake era, an `input_required`
  result in 2026-07-28; the SDK's `Resolve`/`Elicit` resolvers pick the mechanism
  from the request's protocol version).
* POST /bench/list-changed: `notifications/tools/list_changed` to every handshake-era
  session (`Connection.send_tool_list_changed`, a standalone notification, which
  rides the session's GET stream) and to every 2026-07-28 `subscriptions/listen` stream that asked for it
  (published on the server's subscription bus).

Usage: python server.py <port>
"""

from __future__ import annotations

import asyncio
import logging
import sys
import weakref
from typing import Annotated, Any

import uvicorn
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from mcp.server.elicitation import AcceptedElicitation, DeclinedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types import NotificationParams, SubscriptionsListenRequestParams

port = int(sys.argv[1])

bus = InMemorySubscriptionBus()
# WARNING keeps per-session INFO lines off stderr during load.
mcp = MCPServer("bench-peer-python", log_level="WARNING", subscriptions=bus)

# Handshake-era sessions' connections, registered on notifications/initialized; weak so
# a closed session is not kept alive by this set.
connections: weakref.WeakSet[Any] = weakref.WeakSet()


async def on_initialized(ctx: Any, params: NotificationParams) -> None:
    # ctx.session is a per-request proxy; the connection behind it lives as long as the
    # session does. mcp 2.3 has no public accessor for it.
    connections.add(ctx.session._connection)


mcp._lowlevel_server.add_notification_handler("notifications/initialized", NotificationParams, on_initialized)

# subscriptions/listen with a higher cap: MCPServer registers a ListenHandler with the
# SDK's default max_subscriptions=1024 (further listens get "-32603 Subscription limit
# reached") and has no option for it; the streams benchmark holds 10,000 streams. The
# SDK's documented seam is a ListenHandler of our own on the lowlevel Server, which
# replaces the default one (same bus, so bus.publish still reaches every stream).
mcp._lowlevel_server.add_request_handler(
    "subscriptions/listen",
    SubscriptionsListenRequestParams,
    ListenHandler(bus, max_subscriptions=20_000),
)


@mcp.tool(description="Return the given text unchanged")
def echo(text: str) -> str:
    return text


@mcp.tool(description='Sleep for ms milliseconds, then return "ok"')
async def sleep(ms: int) -> str:
    await asyncio.sleep(ms / 1000)
    return "ok"


@mcp.tool(description="Send count progress notifications, then return the count")
async def progress(count: int, ctx: Context) -> str:
    # report_progress sends nothing when the request carries no progressToken.
    for i in range(1, count + 1):
        await ctx.report_progress(i, count)
    return str(count)


class Answer(BaseModel):
    answer: str


def ask_user(question: str) -> Elicit[Answer]:
    return Elicit(question, Answer)


@mcp.tool(description="Ask the user a question (form elicitation) and return the answer")
async def ask(question: str, reply: Annotated[ElicitationResult[Answer], Resolve(ask_user)]) -> str:
    if isinstance(reply, AcceptedElicitation):
        return reply.data.answer
    if isinstance(reply, DeclinedElicitation):
        return "declined"
    return "cancelled"


async def list_changed(request: Request) -> PlainTextResponse:
    sent = 0
    for connection in list(connections):
        try:
            await connection.send_tool_list_changed()
            sent += 1
        except Exception:  # a session that went away meanwhile
            connections.discard(connection)
    await bus.publish(ToolsListChanged())
    return PlainTextResponse(f"{sent}\n")


def build_app():
    app = mcp.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=False,
        json_response=False,
        # No cap on sessions (the SDK's default is 10 000): the idle-session memory
        # scenario opens as many as it is asked to.
        max_sessions=None,
    )
    app.router.routes.append(Route("/bench/list-changed", list_changed, methods=["POST"]))
    return app


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    uvicorn.run(build_app(), host="127.0.0.1", port=port, log_level="warning", access_log=False)
