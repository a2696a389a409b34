#!/usr/bin/env node
// Calls `echo` in a loop on one session with the official TypeScript SDK, as an
// application would, until the file STOP exists (tests/cluster/store.rs restarts and kills
// nodes meanwhile).
//
// Usage: node loop.mjs http://HOST/mcp STOP
//
// Prints one JSON line at the end: {"ok": N, "failed": N, "tail": successes since the last
// failure, "sessions": [ids seen], "errors": [first few errors]}. Exits 0 when it could run at all.

import { existsSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, stop] = process.argv.slice(2);
if (!url || !stop) {
    console.error('usage: node loop.mjs <server-url> <stop-file>');
    process.exit(2);
}

const client = new Client({ name: 'mcp-actor-loop-ts', version: '0.0.0' }, { capabilities: {} });
const transport = new StreamableHTTPClientTransport(new URL(url));
const sessions = new Set();
const errors = [];
let ok = 0;
let failed = 0;
// Calls that succeeded since the last failure.
let tail = 0;

await client.connect(transport);
sessions.add(transport.sessionId);
for (let n = 0; !existsSync(stop); n++) {
    try {
        const result = await client.callTool(
            { name: 'echo', arguments: { text: `ts ${n}` } },
            undefined,
            { timeout: 10_000 }
        );
        if (result?.content?.[0]?.text === `ts ${n}`) {
            ok++;
            tail++;
        } else {
            failed++;
            tail = 0;
            if (errors.length < 5) errors.push(`call ${n}: ${JSON.stringify(result)}`);
        }
    } catch (e) {
        failed++;
        tail = 0;
        if (errors.length < 5) errors.push(`call ${n}: ${e?.message ?? e}`);
    }
    sessions.add(transport.sessionId);
    await new Promise(r => setTimeout(r, 20));
}
console.log(JSON.stringify({ ok, failed, tail, sessions: [...sessions], errors }));
// Leaves the session open: the test reads the id, and ending it is not what is measured.
process.exit(0);
