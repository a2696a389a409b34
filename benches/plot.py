#!/usr/bin/env python3
"""Draw throughput and server CPU per request from a kit result folder, as an SVG.

    python3 benches/plot.py RESULTS_DIR [OUT.svg]      # default docs/performance.svg

Standard library only (no matplotlib, nothing to install). Values are medians over the
rounds of the run, as in the kit's report.md. If `rsvg-convert` (Debian: librsvg2-bin) is on PATH,
a PNG is written next to the SVG as well. Log scales: the servers span two orders of magnitude.
"""
import json, math, os, shutil, statistics, subprocess, sys

COLORS = {"mine": "#d62728", "mine-default": "#ff9896", "limit": "#7f7f7f", "rust": "#1f77b4", "ts": "#2ca02c", "python": "#9467bd"}
LABELS = {"mine": "mcp-actor (worker_threads = 1)", "mine-default": "mcp-actor (default: a thread per core)", "limit": "limit (bare axum)", "rust": "rmcp (Rust SDK)",
          "ts": "TypeScript SDK", "python": "Python SDK"}
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


def main():
    d = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "docs", "performance.svg")
    meta = json.load(open(os.path.join(d, "meta.json")))
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
