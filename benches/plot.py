#!/usr/bin/env python3
"""Draw server CPU per operation as an SVG, from a benches/compare.sh result folder or (the
older format) a benchmark kit result folder.

    python3 benches/plot.py OUT [OUT.svg]      # default docs/performance.svg

compare.sh folder (meta.json with "kind": "compare", runs.tsv, one JSON per run): one chart,
server CPU per operation for every workload (per request, round trip, progress event,
list_changed notification, resumed stream), the servers side by side, log scale. A server
that does not support a workload gets "n/s" at the axis; a figure from rounds where some run
failed carries a "!".

Kit folder (meta.json with "servers", <server>__<scenario>__rN.json with "rps"): throughput
and server CPU per request at 1x32 and 64x4, two panels.

Standard library only (no matplotlib, nothing to install). Values are medians over the
rounds of the run, as in the reports. If `rsvg-convert` (Debian: librsvg2-bin) is on PATH,
a PNG is written next to the SVG as well. Log scales: the servers span two orders of magnitude.
"""
import csv
import json, math, os, shutil, statistics, subprocess, sys

COLORS = {"mine": "#d62728", "mine-default": "#ff9896", "limit": "#7f7f7f", "rust": "#1f77b4", "ts": "#2ca02c", "python": "#9467bd"}
LABELS = {"mine": "mcp-actor (worker_threads = 1)", "mine-default": "mcp-actor (default: a thread per core)", "limit": "limit (bare axum)", "rust": "rmcp (Rust SDK)",
          "ts": "TypeScript SDK", "python": "Python SDK"}
# compare.sh scenarios: (group label, operation)
COMPARE = {
    "echo-legacy-1x32": ("echo legacy 1x32", "request"),
    "echo-legacy-64x4": ("echo legacy 64x4", "request"),
    "echo-modern-1x32": ("echo modern 1x32", "request"),
    "echo-modern-256": ("echo modern 256", "request"),
    "input-required-1x32": ("input_required 1x32", "round trip"),
    "elicit-legacy-1x32": ("elicit legacy 1x32", "round trip"),
    "progress-legacy-1x8": ("progress legacy", "event"),
    "progress-modern-1x8": ("progress modern", "event"),
    "streams-legacy": ("streams legacy", "notification"),
    "streams-modern": ("streams modern", "notification"),
    "resume-legacy": ("resume legacy", "resumed stream"),
}
SCEN = [("1x32", "1 session x 32 in flight"), ("64x4", "64 sessions x 4 in flight")]


def medians(d, servers):
    out = {}
    for s in servers:
        for sc, _ in SCEN:
            runs = []
            for f in sorted(os.listdir(d)):
                if f.startswith(f"{s}__{sc}__r") and f.endswith(".json"):
                    j = json.load(open(os.path.join(d, f)))
                    if not j.get("failed"):
                        runs.append(j)
            if runs:
                out[(s, sc)] = (statistics.median(r["rps"] for r in runs),
                                statistics.median(r["server_cpu_us_per_req"] for r in runs))
    return out


def fmt(v):
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def panel(x0, y0, w, h, title, unit, servers, vals, idx, better):
    """One log-scale grouped bar chart; returns SVG elements."""
    el = []
    vs = [vals[k][idx] for k in vals]
    lo = 10 ** math.floor(math.log10(min(vs)))
    hi = 10 ** math.ceil(math.log10(max(vs) * 1.6))
    def y(v):
        return y0 + h - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * h
    el.append(f'<text x="{x0 + w/2}" y="{y0 - 28}" text-anchor="middle" font-size="16" font-weight="bold">{title}</text>')
    el.append(f'<text x="{x0 + w/2}" y="{y0 - 10}" text-anchor="middle" font-size="12" fill="#555">{unit}, log scale, {better}</text>')
    p = lo
    while p <= hi * 1.0001:
        for m in (1, 2, 5):
            v = p * m
            if lo <= v <= hi * 1.0001:
                yy = y(v)
                major = m == 1
                el.append(f'<line x1="{x0}" x2="{x0 + w}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="{"#ccc" if major else "#eee"}"/>')
                el.append(f'<text x="{x0 - 6}" y="{yy + 4:.1f}" text-anchor="end" font-size="11" fill="#444">{fmt(v)}</text>')
        p *= 10
    el.append(f'<line x1="{x0}" x2="{x0}" y1="{y0}" y2="{y0 + h}" stroke="#333"/>')
    el.append(f'<line x1="{x0}" x2="{x0 + w}" y1="{y0 + h}" y2="{y0 + h}" stroke="#333"/>')
    gw = w / len(SCEN)
    bw = gw * 0.8 / len(servers)
    for gi, (sc, sctitle) in enumerate(SCEN):
        gx = x0 + gi * gw + gw * 0.1
        el.append(f'<text x="{x0 + gi*gw + gw/2}" y="{y0 + h + 18}" text-anchor="middle" font-size="12">{sctitle}</text>')
        for si, s in enumerate(servers):
            if (s, sc) not in vals:
                continue
            v = vals[(s, sc)][idx]
            bx = gx + si * bw
            by = y(v)
            el.append(f'<rect x="{bx + 1:.1f}" y="{by:.1f}" width="{bw - 2:.1f}" height="{y0 + h - by:.1f}" fill="{COLORS.get(s, "#999")}"/>')
            el.append(f'<text x="{bx + bw/2:.1f}" y="{by - 4:.1f}" text-anchor="middle" font-size="10">{fmt(v)}</text>')
    return el


def compare_values(d, meta):
    """(scenario, server) -> (median server CPU per op or None, not supported?, some run failed?)"""
    runs = {}
    for r in csv.DictReader(open(os.path.join(d, "runs.tsv")), delimiter="\t"):
        runs.setdefault((r["scenario"], r["server"]), []).append(r)
    vals = {}
    for key, rows in runs.items():
        unsupported = all(r["status"] == "not-supported" for r in rows)
        failed = any(r["status"] not in ("ok", "not-supported") for r in rows)
        vs = []
        for r in rows:
            if r["status"] == "not-supported" or not r.get("json"):
                continue
            try:
                j = json.load(open(os.path.join(d, r["json"])))
            except (OSError, ValueError):
                continue
            v = j.get("server_cpu_us_per_op")
            if isinstance(v, (int, float)) and v > 0:
                vs.append(v)
        vals[key] = (statistics.median(vs) if vs else None, unsupported, failed)
    return vals


def compare_svg(d, meta):
    """One log-scale grouped bar chart: server CPU per operation, every workload."""
    vals = compare_values(d, meta)
    scen = [s for s in meta.get("scenarios", []) if any(k[0] == s for k in vals)]
    servers = [s for s in meta.get("servers", []) if any(k[1] == s for k in vals)]
    x0, y0, h = 90, 80, 360
    gw = max(60, 16 * len(servers) + 30)
    w = gw * len(scen)
    W, H = x0 + w + 30, y0 + h + 110
    el = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif">',
          f'<rect width="{W}" height="{H}" fill="white"/>',
          f'<text x="{x0 + w / 2}" y="{y0 - 48}" text-anchor="middle" font-size="16" font-weight="bold">Server CPU per operation</text>',
          f'<text x="{x0 + w / 2}" y="{y0 - 30}" text-anchor="middle" font-size="12" fill="#555">microseconds, log scale, lower is better; '
          f'the operation of each workload is named under it; n/s: not supported, !: some run failed</text>']
    vs = [v for v, _, _ in vals.values() if v]
    if not vs:
        vs = [1.0]
    lo = 10 ** math.floor(math.log10(min(vs)))
    top = max(vs) * 1.8  # room for the rotated labels above the tallest bar
    hi = min(m * 10 ** math.ceil(math.log10(top / m)) for m in (1, 2, 5))
    if hi <= lo:
        hi = lo * 10

    def y(v):
        return y0 + h - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * h

    p = lo
    while p <= hi * 1.0001:
        for m in (1, 2, 5):
            v = p * m
            if lo <= v <= hi * 1.0001:
                yy = y(v)
                el.append(f'<line x1="{x0}" x2="{x0 + w}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="{"#ccc" if m == 1 else "#eee"}"/>')
                el.append(f'<text x="{x0 - 6}" y="{yy + 4:.1f}" text-anchor="end" font-size="11" fill="#444">{fmt(v)}</text>')
        p *= 10
    el.append(f'<line x1="{x0}" x2="{x0}" y1="{y0}" y2="{y0 + h}" stroke="#333"/>')
    el.append(f'<line x1="{x0}" x2="{x0 + w}" y1="{y0 + h}" y2="{y0 + h}" stroke="#333"/>')
    for gi, sc in enumerate(scen):
        name, op = COMPARE.get(sc, (sc, "operation"))
        cols = [s for s in servers if (sc, s) in vals]
        bw = gw * 0.8 / max(1, len(cols))
        gx = x0 + gi * gw + (gw - bw * len(cols)) / 2
        cx = x0 + gi * gw + gw / 2
        if gi:
            el.append(f'<line x1="{x0 + gi * gw}" x2="{x0 + gi * gw}" y1="{y0}" y2="{y0 + h}" stroke="#f4f4f4"/>')
        el.append(f'<text x="{cx:.1f}" y="{y0 + h + 16}" text-anchor="middle" font-size="11">{name}</text>')
        el.append(f'<text x="{cx:.1f}" y="{y0 + h + 30}" text-anchor="middle" font-size="10" fill="#555">per {op}</text>')
        for si, s in enumerate(cols):
            v, unsupported, failed = vals[(sc, s)]
            bx = gx + si * bw
            tx = bx + bw / 2
            if unsupported or v is None:
                label = "n/s" if unsupported else "failed"
                el.append(f'<text x="{tx:.1f}" y="{y0 + h - 4}" font-size="9" fill="#777" text-anchor="start" '
                          f'transform="rotate(-90 {tx + 3:.1f} {y0 + h - 4})">{label}</text>')
                continue
            by = y(v)
            el.append(f'<rect x="{bx + 1:.1f}" y="{by:.1f}" width="{max(1.0, bw - 2):.1f}" height="{y0 + h - by:.1f}" '
                      f'fill="{COLORS.get(s, "#999")}"><title>{s}, {sc}: {v:.3g} µs per {op}</title></rect>')
            el.append(f'<text x="{tx + 3:.1f}" y="{by - 3:.1f}" font-size="9" text-anchor="start" '
                      f'transform="rotate(-90 {tx + 3:.1f} {by - 3:.1f})">{fmt(v)}{" !" if failed else ""}</text>')
    lx, ly = x0, y0 + h + 58
    for s in servers:
        text = LABELS.get(s, s)
        if lx + 30 + 7 * len(text) > W - 20:
            lx, ly = x0, ly + 22
        el.append(f'<rect x="{lx}" y="{ly - 12}" width="14" height="14" fill="{COLORS.get(s, "#999")}"/>')
        el.append(f'<text x="{lx + 20}" y="{ly}" font-size="13">{text}</text>')
        lx += 30 + 7 * len(text)
    hst = meta.get("host", {})
    commit = (meta.get("git_commit") or "")[:9]
    note = (f"{meta.get('date', '')}, commit {commit}: {hst.get('nproc', '?')} CPUs ({hst.get('cpu_model', '')}), "
            f"load average before {' '.join(hst.get('loadavg_before', []))}; {meta.get('duration_s')} s after "
            f"{meta.get('warmup_s')} s warm-up, {meta.get('streams', 0):,} streams, median of {meta.get('rounds')} "
            f"round(s); server and load generator on the same machine")
    el.append(f'<text x="{W / 2}" y="{H - 14}" text-anchor="middle" font-size="11" fill="#555">{note}</text>')
    el.append("</svg>")
    return el


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    d = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "docs", "performance.svg")
    meta = json.load(open(os.path.join(d, "meta.json")))
    if meta.get("kind") == "compare" or os.path.exists(os.path.join(d, "runs.tsv")):
        write(out, compare_svg(d, meta))
        return
    servers = meta["servers"]
    vals = medians(d, servers)
    W, H = 1100, 520
    el = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif">',
          f'<rect width="{W}" height="{H}" fill="white"/>']
    el += panel(90, 70, 420, 330, "Throughput", "requests/s", servers, vals, 0, "higher is better")
    el += panel(650, 70, 420, 330, "Server CPU per request", "microseconds", servers, vals, 1, "lower is better")
    lx = 90
    for s in servers:
        el.append(f'<rect x="{lx}" y="455" width="14" height="14" fill="{COLORS.get(s, "#999")}"/>')
        el.append(f'<text x="{lx + 20}" y="467" font-size="13">{LABELS.get(s, s)}</text>')
        lx += 30 + 8 * len(LABELS.get(s, s))
    h = meta.get("host", {})
    note = (f"{meta.get('date', '')}: {h.get('cpus', '?')} CPUs ({h.get('cpu_model', '')}), echo tool, "
            f"{meta.get('duration_s')} s after {meta.get('warmup_s')} s warm-up, median of {meta.get('rounds')} rounds, "
            f"server and load generator on the same machine")
    el.append(f'<text x="{W/2}" y="505" text-anchor="middle" font-size="11" fill="#555">{note}</text>')
    el.append("</svg>")
    write(out, el)


def write(out, el):
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        f.write("\n".join(el) + "\n")
    print(out)
    if shutil.which("rsvg-convert"):  # optional: a PNG beside the SVG (apt: librsvg2-bin)
        png = os.path.splitext(out)[0] + ".png"
        subprocess.run(["rsvg-convert", "-o", png, out], check=True)
        print(png)


if __name__ == "__main__":
    main()
