#!/usr/bin/env python3
"""report.md of a benches/gateway.sh run (standard library only).

    report.py OUT SESSIONS CONCURRENCY "GATEWAYS" "KINDS"

Reads OUT/<kind>__<gateway>.json (mcp-bench echo with --tree), OUT/<kind>__<gateway>.unsupported
(why a gateway cannot run a workload), OUT/<kind>__<gateway>.upstream_ticks (the HTTP
upstream's CPU ticks over the run, and the clock rate), OUT/http__direct.json and
OUT/versions.txt; prints Markdown.
"""

import json
import sys
from pathlib import Path

KIND_TITLES = {
    "http": "Streamable HTTP upstream (an mcp-actor on benches/compare.toml)",
    "stdio-shared": "stdio upstream, one child shared by every session (echo_stdio.py)",
    "stdio-session": "stdio upstream, one child per client session (echo_stdio.py)",
}


def load(out, name):
    p = out / f"{name}.json"
    return json.loads(p.read_text()) if p.exists() else None


def upstream_us_per_call(out, name, ok):
    p = out / f"{name}.upstream_ticks"
    if not p.exists() or not ok:
        return None
    ticks, hz = map(float, p.read_text().split())
    return ticks / hz * 1e6 / ok


def fmt(x, unit="", digits=1):
    return "–" if x is None else f"{x:,.{digits}f}{unit}"


def ratio(x, base):
    return "" if x is None or not base else f" ({x / base:.2f}×)"


def main():
    out = Path(sys.argv[1])
    sessions, concurrency = int(sys.argv[2]), int(sys.argv[3])
    gateways, kinds = sys.argv[4].split(), sys.argv[5].split()
    direct = load(out, "http__direct")
    lines = [f"# Gateways side by side: {sessions} sessions × {concurrency} in flight, echo, every reply verified", ""]
    versions = out / "versions.txt"
    if versions.exists():
        lines += [f"- {v}" for v in versions.read_text().splitlines()] + [""]

    mine = load(out, "http__mcp-actor")
    if direct and mine:
        d_cpu, g_cpu = direct["server_cpu_us_per_op"], mine["server_cpu_us_per_op"]
        u_cpu = upstream_us_per_call(out, "http__mcp-actor", mine["ok"])
        both = None if None in (g_cpu, u_cpu) else g_cpu + u_cpu
        lines += [
            "## mcp-actor's gateway against a direct call (HTTP upstream)",
            "",
            "| path | requests | rps | server CPU per request |",
            "|---|---:|---:|---:|",
            f"| direct to the upstream | {direct['ops_in_window']} | {direct['rate_per_s']:.0f} | {fmt(d_cpu, ' µs')} |",
            f"| through the gateway: gateway | {mine['ops_in_window']} | {mine['rate_per_s']:.0f} | {fmt(g_cpu, ' µs')}{ratio(g_cpu, d_cpu)} |",
            f"| through the gateway: upstream | | | {fmt(u_cpu, ' µs')} |",
            f"| through the gateway: both | | | {fmt(both, ' µs')}{ratio(both, d_cpu)} |",
            "",
        ]

    for kind in kinds:
        rows = []
        runs = {gw: load(out, f"{kind}__{gw}") for gw in gateways}
        done = {gw: r for gw, r in runs.items() if r}
        if kind == "http" and direct:
            base_p50, base_p99 = direct["latency_p50_ms"], direct["latency_p99_ms"]
            base_name = "the direct call"
        elif done:
            base_p50 = min(r["latency_p50_ms"] for r in done.values())
            base_p99 = min(r["latency_p99_ms"] for r in done.values())
            base_name = "the fastest gateway of this table"
        else:
            base_p50 = base_p99 = None
            base_name = "–"
        mine_cpu = done.get("mcp-actor", {}).get("server_cpu_us_per_op")
        for gw in gateways:
            r = runs[gw]
            if r is None:
                why = out / f"{kind}__{gw}.unsupported"
                reason = why.read_text().strip() if why.exists() else "not run"
                rows.append(f"| {gw} | – | – | – | – | – | – | – | – | {reason} |")
                continue
            cpu = r["server_cpu_us_per_op"]
            other = (upstream_us_per_call(out, f"{kind}__{gw}", r["ok"]) if kind == "http"
                     else r.get("child_cpu_us_per_op"))
            before, after = r.get("rss_kib_before"), r.get("rss_kib_after")
            per_session = None if None in (before, after) else (after - before) / sessions
            added50 = None if base_p50 is None else r["latency_p50_ms"] - base_p50
            added99 = None if base_p99 is None else r["latency_p99_ms"] - base_p99
            rows.append(
                f"| {gw} | {r['ops_in_window']} | {r['rate_per_s']:,.0f} | {fmt(cpu, ' µs')}{ratio(cpu, mine_cpu)} "
                f"| {fmt(other, ' µs')} | {r['latency_p50_ms']:.2f} / {r['latency_p99_ms']:.2f} ms "
                f"| {fmt(added50, '', 2)} / {fmt(added99, '', 2)} ms "
                f"| {fmt(after / 1024 if after else None, ' MiB')} | {fmt(per_session, ' KiB')} "
                f"| tree of {r.get('tree_processes_after', '–')}, children {r.get('child_processes_after', '–')}; "
                f"`--tool {r.get('tool', 'echo')}` |"
            )
        other_col = "upstream CPU per call" if kind == "http" else "child CPU per call"
        lines += [
            f"## {KIND_TITLES.get(kind, kind)}",
            "",
            f"| gateway | calls | rps | gateway CPU per call (× mcp-actor) | {other_col} | latency p50 / p99 "
            f"| added p50 / p99 (vs {base_name}) | RSS, {sessions} sessions open, children counted | RSS per session | notes |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
            *rows,
            "",
        ]
        if kind == "http" and direct:
            lines += [f"Direct to the upstream: {direct['ops_in_window']} calls, {direct['rate_per_s']:,.0f}/s, "
                      f"{fmt(direct['server_cpu_us_per_op'], ' µs')} per call, p50 {direct['latency_p50_ms']:.2f} ms, "
                      f"p99 {direct['latency_p99_ms']:.2f} ms.", ""]
    lines += [
        "Gateway CPU: user + system time of the gateway's process tree over the measured window, less the",
        "echo children's, per verified call. RSS: VmRSS summed over the tree (shared pages count once per",
        "process) at the window's end; per session: its growth over the idle gateway, divided by the sessions.",
        "The HTTP upstream's CPU is read around the whole run, warm-up included, per verified call.",
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
