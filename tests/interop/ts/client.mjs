#!/usr/bin/env node
// Interop flows: drive a running mcp-actor server with the official TypeScript MCP SDK
// (@modelcontextprotocol/sdk, pinned in package.json).
//
// Usage: node client.mjs http://127.0.0.1:PORT/mcp
//
// With MCP_INTEROP_TOKEN set (a server with [auth]), every request carries
// `Authorization: Bearer <token>` through the transport's `requestInit` option, and a
// first check makes sure a client without the token is refused with 401. Unset, the flow
// is the unauthenticated one.
//
// Prints one line per passing check ("ok N - ..."), one line per failing check
// ("FAIL N - ...: reason"), then a final line "<passed> passed, <failed> failed".
// Exits 1 if any check failed (or the flow could not run at all), 0 otherwise.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
    CreateMessageRequestSchema,
    ElicitRequestSchema,
    LoggingMessageNotificationSchema
} from '@modelcontextprotocol/sdk/types.js';

const url = process.argv[2];
if (!url) {
    console.error('usage: node client.mjs <server-url, e.g. http://127.0.0.1:8080/mcp>');
    process.exit(2);
}
const token = process.env.MCP_INTEROP_TOKEN || undefined;
const authHeaders = token ? { Authorization: `Bearer ${token}` } : {};

// ---------------------------------------------------------------------------
// Tiny check harness
// ---------------------------------------------------------------------------

let passed = 0;
let failed = 0;
let checkNo = 0;

function pass(name, detail) {
    checkNo += 1;
    passed += 1;
    console.log(`ok ${checkNo} - ${name}${detail ? ` (${detail})` : ''}`);
}

function fail(name, reason) {
    checkNo += 1;
    failed += 1;
    console.log(`FAIL ${checkNo} - ${name}: ${reason}`);
}

function check(name, condition, reason, detail) {
    if (condition) pass(name, detail);
    else fail(name, reason);
    return condition;
}

function errText(e) {
    if (e instanceof Error) {
        const code = e.code !== undefined ? ` [code ${e.code}]` : '';
        return `${e.name}: ${e.message}${code}`;
    }
    return String(e);
}

function withTimeout(promise, ms, what) {
    let timer;
    const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

function firstText(result) {
    const c = result?.content?.[0];
    return c && c.type === 'text' ? c.text : undefined;
}

function describeResult(result) {
    return JSON.stringify(result)?.slice(0, 400);
}

function finish() {
    console.log(`${passed} passed, ${failed} failed`);
    process.exit(failed > 0 ? 1 : 0);
}

// Hard stop so a hung server cannot hang CI forever.
const hardStop = setTimeout(() => {
    fail('overall', 'flow did not finish within 120 s (hung request?)');
    finish();
}, 120_000);
hardStop.unref();

// ---------------------------------------------------------------------------
// Recording fetch: lets the flows see the HTTP exchanges the SDK makes (method,
// headers, status), and cut one response body on purpose (step 7).
// It is passed through the transport's public `fetch` option.
// ---------------------------------------------------------------------------

/** @type {Array<{method: string, sessionId: string|null, protocolVersion: string|null, lastEventId: string|null, authorization: string|null, rpc: any, status?: number, contentType?: string|null, wwwAuthenticate?: string|null, error?: string}>} */
const wire = [];

/**
 * When set, the first POST whose JSON-RPC body satisfies `match` gets its
 * response body cut right after the first notifications/progress event has
 * been consumed by the SDK.
 * @type {null | {match: (rpc: any) => boolean, used: boolean, progressHandled: Promise<void>, cutAt?: number, cutAfterBytes?: number, sawSse?: boolean}}
 */
let cutPlan = null;

function parseBody(body) {
    if (typeof body !== 'string') return undefined;
    try {
        return JSON.parse(body);
    } catch {
        return undefined;
    }
}

async function recordingFetch(input, init = {}) {
    const headers = new Headers(init.headers);
    const entry = {
        method: (init.method ?? 'GET').toUpperCase(),
        sessionId: headers.get('mcp-session-id'),
        protocolVersion: headers.get('mcp-protocol-version'),
        lastEventId: headers.get('last-event-id'),
        authorization: headers.get('authorization'),
        rpc: parseBody(init.body)
    };
    wire.push(entry);

    const plan = cutPlan;
    const cutThis = plan && !plan.used && entry.method === 'POST' && entry.rpc !== undefined && plan.match(entry.rpc);
    let cutController;
    let requestInit = init;
    if (cutThis) {
        plan.used = true;
        cutController = new AbortController();
        const signal = init.signal ? AbortSignal.any([init.signal, cutController.signal]) : cutController.signal;
        requestInit = { ...init, signal };
    }

    let response;
    try {
        response = await fetch(input, requestInit);
    } catch (e) {
        entry.error = errText(e);
        throw e;
    }
    entry.status = response.status;
    entry.contentType = response.headers.get('content-type');
    entry.wwwAuthenticate = response.headers.get('www-authenticate');
    if (!cutThis || !response.body) return response;

    plan.sawSse = (entry.contentType ?? '').toLowerCase().startsWith('text/event-stream');
    const cutBody = cutAfterFirstProgress(response.body, plan, cutController);
    return new Response(cutBody, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/**
 * Passes the response body through until a chunk containing a
 * notifications/progress event went by; on the next read it waits until the SDK
 * has handled that progress notification (so the SDK has recorded the event id),
 * then aborts the underlying HTTP request (the server sees the connection drop)
 * and errors the stream the SDK reads — exactly what a network cut looks like.
 */
function cutAfterFirstProgress(body, plan, cutController) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let seen = '';
    let bytes = 0;
    let progressPassed = false;
    return new ReadableStream({
        async pull(controller) {
            if (progressPassed) {
                await withTimeout(plan.progressHandled, 5000, 'the SDK to handle the first progress notification').catch(() => {});
                plan.cutAt = Date.now();
                plan.cutAfterBytes = bytes;
                cutController.abort(new Error('interop: cutting SSE connection'));
                reader.cancel('interop: cutting SSE connection').catch(() => {});
                controller.error(new TypeError('interop: SSE connection cut on purpose after the first progress event'));
                return;
            }
            let chunk;
            try {
                chunk = await reader.read();
            } catch (e) {
                controller.error(e);
                return;
            }
            if (chunk.done) {
                controller.close();
                return;
            }
            bytes += chunk.value.byteLength;
            controller.enqueue(chunk.value);
            seen = (seen + decoder.decode(chunk.value, { stream: true })).slice(-65536);
            if (seen.includes('notifications/progress')) progressPassed = true;
        },
        cancel(reason) {
            return reader.cancel(reason);
        }
    });
}

// ---------------------------------------------------------------------------
// Client setup
// ---------------------------------------------------------------------------

const transportErrors = [];
const logMessages = [];

const client = new Client(
    { name: 'mcp-actor-interop-ts', version: '0.0.0' },
    { capabilities: { elicitation: {}, sampling: {} } }
);
client.onerror = e => transportErrors.push(errText(e));

// Elicitation: the behaviour is switched per step.
let elicitMode = 'accept';
const elicitRequests = [];
client.setRequestHandler(ElicitRequestSchema, async request => {
    elicitRequests.push(request.params);
    if (elicitMode === 'accept') return { action: 'accept', content: { answer: '42' } };
    if (elicitMode === 'decline') return { action: 'decline' };
    return { action: 'cancel' };
});

const samplingRequests = [];
client.setRequestHandler(CreateMessageRequestSchema, async request => {
    samplingRequests.push(request.params);
    return {
        role: 'assistant',
        content: { type: 'text', text: 'model says hi' },
        model: 'test',
        stopReason: 'endTurn'
    };
});

client.setNotificationHandler(LoggingMessageNotificationSchema, notification => {
    logMessages.push(notification.params);
});

const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: recordingFetch,
    ...(token ? { requestInit: { headers: authHeaders } } : {})
});

// ---------------------------------------------------------------------------
// Flows
// ---------------------------------------------------------------------------

async function step(name, fn) {
    try {
        await fn();
    } catch (e) {
        fail(name, errText(e));
    }
}

// 0. with a token in play: the same client without it must be refused, 401 with the
// challenge (spec basic/authorization: the resource server answers 401 and names its
// protected resource metadata in WWW-Authenticate).
if (token) {
    await step('connect without the token', async () => {
        const wireStart = wire.length;
        const anonymous = new Client({ name: 'mcp-actor-interop-ts-no-token', version: '0.0.0' });
        const bare = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch });
        let error;
        try {
            await withTimeout(anonymous.connect(bare), 10_000, 'initialize without a token');
        } catch (e) {
            error = e;
        }
        await anonymous.close().catch(() => {});
        const exchanges = wire.slice(wireStart);
        const refused = exchanges.length > 0 && exchanges.every(w => w.status === 401 && /^Bearer .*resource_metadata="/.test(w.wwwAuthenticate ?? ''));
        check(
            'connect without the token fails with 401 and a Bearer resource_metadata challenge',
            error !== undefined && (error.code === 401 || /\b401\b/.test(errText(error))) && refused,
            error === undefined
                ? 'connect succeeded without a token'
                : `error ${errText(error)}; exchanges ${JSON.stringify(exchanges.map(w => [w.method, w.status, w.wwwAuthenticate]))}`,
            `${error?.name} code ${error?.code}; ${exchanges.length} exchange(s) answered 401`
        );
    });
}
const sessionWireStart = wire.length;

// 1. connect + listTools
let connected = false;
await step('connect', async () => {
    await withTimeout(client.connect(transport), 10_000, 'initialize');
    connected = true;
    pass('connect', `session ${transport.sessionId}, protocol ${transport.protocolVersion}`);
    check(
        'session id assigned by the server',
        typeof transport.sessionId === 'string' && transport.sessionId.length > 0,
        `no Mcp-Session-Id header on the initialize response (sessionId=${transport.sessionId})`
    );
    check(
        'negotiated protocol version is 2025-11-25',
        transport.protocolVersion === '2025-11-25',
        `server answered initialize with protocolVersion ${transport.protocolVersion}`
    );
});
if (!connected) finish();

await step('listTools', async () => {
    const { tools } = await withTimeout(client.listTools(), 10_000, 'tools/list');
    const names = tools.map(t => t.name);
    const missing = ['echo', 'sleep', 'ask', 'sample'].filter(n => !names.includes(n));
    check('listTools contains echo, sleep, ask, sample', missing.length === 0, `missing ${missing.join(', ')}; got [${names.join(', ')}]`, names.join(', '));
});

// 2. 200 concurrent echo calls in the one session
await step('200 concurrent echo calls', async () => {
    const N = 200;
    const calls = Array.from({ length: N }, (_, i) =>
        client.callTool({ name: 'echo', arguments: { text: `msg-${i}` } }).then(
            r => ({ i, text: firstText(r), raw: r }),
            e => ({ i, error: errText(e) })
        )
    );
    const results = await withTimeout(Promise.all(calls), 30_000, `${N} echo results`);
    const bad = results.filter(r => r.error !== undefined || r.text !== `msg-${r.i}`);
    const show = bad
        .slice(0, 3)
        .map(r => (r.error !== undefined ? `#${r.i}: ${r.error}` : `#${r.i}: expected "msg-${r.i}", got ${describeResult(r.raw)}`))
        .join('; ');
    check('200 concurrent echo calls each return their own text', bad.length === 0, `${bad.length}/${N} wrong: ${show}`);
});

// 3. elicitation: accept, then decline
await step('ask (elicitation accept)', async () => {
    elicitMode = 'accept';
    const before = elicitRequests.length;
    const r = await withTimeout(client.callTool({ name: 'ask', arguments: { question: 'What is the answer?' } }), 10_000, 'ask result');
    const req = elicitRequests[before];
    check('ask sent elicitation/create', req !== undefined, 'the elicitation handler was never called');
    if (req) {
        const schema = req.requestedSchema;
        check(
            'elicitation schema has required string property "answer"',
            schema?.properties?.answer?.type === 'string' && Array.isArray(schema?.required) && schema.required.includes('answer'),
            `requestedSchema was ${JSON.stringify(schema)}`
        );
    }
    check('ask accepted -> "42"', firstText(r) === '42', `result was ${describeResult(r)}`);
});

await step('ask (elicitation decline)', async () => {
    elicitMode = 'decline';
    const r = await withTimeout(client.callTool({ name: 'ask', arguments: { question: 'Will you decline?' } }), 10_000, 'ask result');
    check('ask declined -> "declined"', firstText(r) === 'declined', `result was ${describeResult(r)}`);
    elicitMode = 'accept';
});

// 4. sampling
await step('sample', async () => {
    const before = samplingRequests.length;
    const r = await withTimeout(client.callTool({ name: 'sample', arguments: { prompt: 'hi' } }), 10_000, 'sample result');
    const req = samplingRequests[before];
    const msg = req?.messages?.[0];
    check(
        'sample sent sampling/createMessage with the prompt as a user text message',
        msg?.role === 'user' && msg?.content?.type === 'text' && msg?.content?.text === 'hi',
        req ? `createMessage params were ${JSON.stringify(req).slice(0, 400)}` : 'the sampling handler was never called'
    );
    check('sample -> "model says hi"', firstText(r) === 'model says hi', `result was ${describeResult(r)}`);
});

// 5. progress
await step('sleep with progress', async () => {
    const progress = [];
    const r = await withTimeout(
        client.callTool({ name: 'sleep', arguments: { ms: 350 } }, undefined, { onprogress: p => progress.push(p) }),
        10_000,
        'sleep result'
    );
    check('sleep 350 -> "slept 350 ms"', firstText(r) === 'slept 350 ms', `result was ${describeResult(r)}`);
    check('sleep 350 sent >= 2 progress notifications', progress.length >= 2, `got ${progress.length}: ${JSON.stringify(progress)}`, `${progress.length} received`);
    const increasing = progress.every((p, i) => i === 0 || p.progress > progress[i - 1].progress);
    check('progress values strictly increase', increasing, `progress values ${JSON.stringify(progress.map(p => p.progress))}`);
});

// 6. logging
await step('logging', async () => {
    await withTimeout(client.setLoggingLevel('debug'), 10_000, 'logging/setLevel');
    pass('logging/setLevel debug accepted');
    const before = logMessages.length;
    const r = await withTimeout(client.callTool({ name: 'sleep', arguments: { ms: 50 } }), 10_000, 'sleep result');
    check('sleep 50 -> "slept 50 ms"', firstText(r) === 'slept 50 ms', `result was ${describeResult(r)}`);
    // Log notifications may travel on the standalone GET stream: give them a moment.
    for (let waited = 0; logMessages.length === before && waited < 2000; waited += 50) await sleep(50);
    const got = logMessages.slice(before);
    check(
        'notifications/message received after setLevel debug',
        got.length >= 1,
        'no notifications/message arrived within 2 s of the sleep call',
        `${got.length} message(s), first: level=${got[0]?.level} data=${JSON.stringify(got[0]?.data)?.slice(0, 80)}`
    );
});

// 7. resumption after the SSE connection is cut.
// Done entirely through the SDK's public surface, no raw-fetch fallback needed: the
// transport's `fetch` option (recordingFetch above) cuts the POST response body of this
// one call after its first progress event; the SDK's own reconnection logic
// (StreamableHTTPClientTransport._handleSseStream -> _scheduleReconnection) then waits the
// server's `retry` and sends GET with Last-Event-ID, and the result must arrive on that
// replayed stream.
await step('resumption', async () => {
    let resolveProgress;
    const progressHandled = new Promise(resolve => (resolveProgress = resolve));
    cutPlan = {
        match: rpc => rpc?.method === 'tools/call' && rpc?.params?.name === 'sleep' && rpc?.params?.arguments?.ms === 1500,
        used: false,
        progressHandled
    };
    const tokens = [];
    const progress = [];
    const wireStart = wire.length;
    let r;
    let callError;
    try {
        r = await withTimeout(
            client.callTool({ name: 'sleep', arguments: { ms: 1500 } }, undefined, {
                onprogress: p => {
                    progress.push(p);
                    resolveProgress();
                },
                onresumptiontoken: token => tokens.push({ token, at: Date.now() })
            }),
            20_000,
            'sleep 1500 result after reconnect'
        );
    } catch (e) {
        // keep going: the wire-level checks below say what went wrong
        callError = errText(e);
    } finally {
        cutPlan.used = true;
    }
    const plan = cutPlan;
    cutPlan = null;
    const newWire = wire.slice(wireStart);
    const post = newWire.find(w => w.method === 'POST' && w.rpc?.params?.name === 'sleep');
    const tokensBeforeCut = plan.cutAt === undefined ? tokens : tokens.filter(t => t.at <= plan.cutAt);
    const lastBeforeCut = tokensBeforeCut.at(-1)?.token;
    const resumeGet = newWire.find(w => w.method === 'GET' && w.lastEventId);

    check(
        'POST tools/call sleep 1500 answered with an SSE stream carrying event ids',
        post?.status === 200 && plan.sawSse && lastBeforeCut !== undefined,
        `POST status ${post?.status}, content-type ${post?.contentType}, event ids seen before cut: ${JSON.stringify(tokensBeforeCut.map(t => t.token))}`,
        `priming/last id before cut: ${lastBeforeCut}`
    );
    check('SSE connection was cut after the first progress event', plan.cutAt !== undefined, 'the cut never happened (no progress event on the POST stream?)');
    check(
        'SDK reconnected with GET + Last-Event-ID of the last event it saw',
        resumeGet !== undefined && resumeGet.lastEventId === lastBeforeCut,
        resumeGet ? `GET Last-Event-ID ${resumeGet.lastEventId}, expected ${lastBeforeCut}` : `no GET with Last-Event-ID was sent; requests: ${JSON.stringify(newWire.map(w => [w.method, w.status, w.lastEventId]))}`,
        `Last-Event-ID ${resumeGet?.lastEventId}`
    );
    if (resumeGet) {
        check('resumption GET answered 200 text/event-stream', resumeGet.status === 200 && (resumeGet.contentType ?? '').startsWith('text/event-stream'), `GET status ${resumeGet.status}, content-type ${resumeGet.contentType}`);
    }
    check(
        'result arrives after reconnect: "slept 1500 ms"',
        firstText(r) === 'slept 1500 ms',
        callError ?? `result was ${describeResult(r)}`,
        `${progress.length} progress notifications in total`
    );
    const increasing = progress.every((p, i) => i === 0 || p.progress > progress[i - 1].progress);
    check('replayed progress continues without duplicates', increasing, `progress values ${JSON.stringify(progress.map(p => p.progress))}`);
});

// 8. terminate the session (DELETE), then the old session id must be gone (404)
await step('terminate session', async () => {
    const sessionId = transport.sessionId;
    const protocolVersion = transport.protocolVersion;
    const wireStart = wire.length;
    await withTimeout(transport.terminateSession(), 10_000, 'DELETE');
    const del = wire.slice(wireStart).find(w => w.method === 'DELETE');
    check(
        'terminateSession sent DELETE with the session id',
        del !== undefined && del.sessionId === sessionId && del.status >= 200 && del.status < 300,
        del ? `DELETE session ${del.sessionId} -> HTTP ${del.status}` : 'no DELETE was sent',
        `HTTP ${del?.status}`
    );
    await client.close();
    pass('client.close()');
    const res = await fetch(url, {
        method: 'POST',
        headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-session-id': sessionId,
            'mcp-protocol-version': protocolVersion ?? '2025-11-25',
            ...authHeaders
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 'after-delete', method: 'tools/list', params: {} })
    });
    const body = await res.text().catch(() => '');
    check('POST with the terminated session id -> HTTP 404', res.status === 404, `HTTP ${res.status}, body ${body.slice(0, 200)}`);
});

// 9. with a token: the SDK sent it on every exchange of the session (POSTs, the standalone
// GET stream, the resumption GET and the DELETE), not only on initialize.
if (token) {
    const exchanges = wire.slice(sessionWireStart);
    const without = exchanges.filter(w => w.authorization !== `Bearer ${token}`);
    const methods = [...new Set(exchanges.map(w => w.method))].sort().join(', ');
    check(
        'every request of the session carried the bearer token',
        exchanges.length > 0 && without.length === 0,
        `${without.length}/${exchanges.length} without it: ${JSON.stringify(without.slice(0, 5).map(w => [w.method, w.rpc?.method, w.status]))}`,
        `${exchanges.length} exchanges: ${methods}`
    );
}

if (failed > 0 && transportErrors.length > 0) {
    console.log(`note: transport errors seen by the SDK: ${JSON.stringify(transportErrors.slice(0, 10))}`);
}
finish();
