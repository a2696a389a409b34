// Reference MCP server on the official TypeScript SDK v2 (@modelcontextprotocol/server),
// for the benchmarks.
//
// * Streamable HTTP at http://127.0.0.1:<port>/mcp on plain node:http, both protocol eras
//   on the one endpoint, wired the way the SDK documents for "a sessionful legacy
//   deployment next to a strict modern endpoint":
//   - isLegacyRequest() (the SDK's own era classification, body-primary) sends 2025-era
//     traffic to a stateful wiring: one NodeStreamableHTTPServerTransport + one McpServer
//     per Mcp-Session-Id (@modelcontextprotocol/node), the SDK's default SSE replies;
//   - everything else goes to createMcpHandler(factory, { legacy: 'reject' }), which
//     serves 2026-07-28 statelessly, one McpServer per request (responseMode 'auto', the
//     default: JSON unless the handler sends something before its result), mounted on
//     node:http with toNodeHandler().
// * tools: echo {text}; sleep {ms}; progress {count}; ask {question} (form elicitation:
//   an elicitation/create request on the call's stream in the handshake era, an inputRequired() result and the
//   client's retry on 2026-07-28).
// * POST /bench/list-changed: McpServer.sendToolListChanged() on every session (it rides
//   the session's GET stream) and handler.notify.toolsChanged() for every
//   subscriptions/listen stream that asked for toolsListChanged.
//
// Usage: node server.mjs <port>

import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { z } from 'zod';
import {
    McpServer,
    createMcpHandler,
    inputRequired,
    inputResponse,
    isInitializeRequest,
    isLegacyRequest,
} from '@modelcontextprotocol/server';
import { NodeStreamableHTTPServerTransport, toNodeHandler, toWebRequest } from '@modelcontextprotocol/node';

const port = Number(process.argv[2]);
if (!Number.isInteger(port)) {
    console.error('usage: node server.mjs PORT');
    process.exit(2);
}

const answerSchema = z.object({ answer: z.string() });
const ANSWER_JSON_SCHEMA = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };
const ASK_KEY = 'answer';

const text = (t) => ({ content: [{ type: 'text', text: t }] });

/** One McpServer with the four tools; `era` is 'legacy' or 'modern'. */
function buildServer(era) {
    const server = new McpServer(
        { name: 'bench-peer-ts', version: '0.1.0' },
        { capabilities: { tools: { listChanged: true } } },
    );
    server.registerTool(
        'echo',
        { description: 'Return the given text unchanged', inputSchema: z.object({ text: z.string() }) },
        async ({ text: t }) => text(t),
    );
    server.registerTool(
        'sleep',
        { description: 'Sleep for ms milliseconds, then return "ok"', inputSchema: z.object({ ms: z.number().int().nonnegative() }) },
        async ({ ms }) => {
            await new Promise((resolve) => setTimeout(resolve, ms));
            return text('ok');
        },
    );
    server.registerTool(
        'progress',
        { description: 'Send count progress notifications, then return the count', inputSchema: z.object({ count: z.number().int().nonnegative() }) },
        async ({ count }, ctx) => {
            const progressToken = ctx.mcpReq._meta?.progressToken;
            if (progressToken !== undefined) {
                for (let i = 1; i <= count; i++) {
                    await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, progress: i, total: count } });
                }
            }
            return text(String(count));
        },
    );
    server.registerTool(
        'ask',
        { description: 'Ask the user a question (form elicitation) and return the answer', inputSchema: z.object({ question: z.string() }) },
        async ({ question }, ctx) => {
            if (era === 'legacy') {
                // ctx.mcpReq.send relates the request to this call, so it rides the call's SSE
                // stream; ctx.mcpReq.elicitInput would send it unrelated, on the GET stream.
                const result = await ctx.mcpReq.send({
                    method: 'elicitation/create',
                    params: { mode: 'form', message: question, requestedSchema: ANSWER_JSON_SCHEMA },
                });
                return text(answerText(result.action, result.content));
            }
            const reply = inputResponse(ctx.mcpReq.inputResponses, ASK_KEY);
            if (reply.kind === 'elicit') return text(answerText(reply.action, reply.content));
            return inputRequired({
                inputRequests: { [ASK_KEY]: inputRequired.elicit({ message: question, requestedSchema: answerSchema }) },
            });
        },
    );
    return server;
}

function answerText(action, content) {
    if (action === 'accept') return String(content?.answer ?? '');
    return action === 'decline' ? 'declined' : 'cancelled';
}

// ----- 2025-era sessions -----

/** Mcp-Session-Id -> { transport, server } */
const sessions = new Map();

function jsonError(res, status, message) {
    res.writeHead(status, { 'content-type': 'application/json' }).end(
        JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }),
    );
}

async function legacy(req, res, parsedBody) {
    const sid = req.headers['mcp-session-id'];
    let entry = sid ? sessions.get(sid) : undefined;
    if (!entry) {
        if (sid) return jsonError(res, 404, 'Session not found');
        if (req.method !== 'POST' || !isInitializeRequest(parsedBody)) {
            return jsonError(res, 400, 'Bad Request: no valid session id');
        }
        const transport = new NodeStreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: (id) => {
                sessions.set(id, entry);
            },
        });
        const server = buildServer('legacy');
        entry = { transport, server };
        transport.onclose = () => {
            if (transport.sessionId) sessions.delete(transport.sessionId);
        };
        await server.connect(transport);
    }
    await entry.transport.handleRequest(req, res, parsedBody);
}

// ----- 2026-07-28 -----

// maxSubscriptions: the SDK refuses a subscriptions/listen beyond 1,024 open streams
// ("-32603 Subscription limit reached"); the streams benchmark holds 10,000 of them.
const modern = createMcpHandler(() => buildServer('modern'), { legacy: 'reject', maxSubscriptions: 20_000 });
const modernNode = toNodeHandler(modern, { onerror: (e) => console.error('mcp handler:', e) });

// ----- one endpoint for both -----

function readBody(req) {
    return new Promise((resolve, reject) => {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        req.on('error', reject);
    });
}

async function serveMcp(req, res) {
    // Parse a POST body once, for the classification and for whichever leg serves it.
    let parsedBody;
    if (req.method === 'POST') {
        const raw = await readBody(req);
        try {
            parsedBody = JSON.parse(raw);
        } catch {
            res.writeHead(400, { 'content-type': 'application/json' }).end(
                JSON.stringify({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null }),
            );
            return;
        }
    }
    // The SDK's own classification, fed the parsed body (no second read of the stream).
    const probe = await toWebRequest(req, parsedBody ?? null);
    if (await isLegacyRequest(probe, parsedBody)) return legacy(req, res, parsedBody);
    return modernNode(req, res, parsedBody);
}

async function listChanged(res) {
    let sent = 0;
    for (const { server } of sessions.values()) {
        try {
            await server.sendToolListChanged();
            sent++;
        } catch {
            // a session closing meanwhile
        }
    }
    modern.notify.toolsChanged();
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`${sent}\n`);
}

const httpServer = http.createServer((req, res) => {
    const path = req.url.split('?', 1)[0];
    if (path === '/mcp') {
        serveMcp(req, res).catch((e) => {
            console.error('mcp handler:', e);
            if (!res.headersSent) res.writeHead(500).end();
        });
    } else if (path === '/bench/list-changed' && req.method === 'POST') {
        req.resume();
        void listChanged(res);
    } else {
        res.writeHead(404).end();
    }
});
httpServer.keepAliveTimeout = 60_000;
httpServer.listen(port, '127.0.0.1', () => {
    if (process.env.LOG_LEVEL === 'info') console.error(`ts-sdk peer listening on http://127.0.0.1:${port}/mcp`);
});

// Exit cleanly on SIGINT/SIGTERM (lets `node --cpu-prof` write its profile).
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));
