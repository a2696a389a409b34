#!/usr/bin/env python3
"""Tables of a benches/compare.sh result folder: OUT/report.md.

    python3 benches/report.py OUT [REPORT.md]      # default OUT/report.md

Standard library only. Reads OUT/meta.json, OUT/runs.tsv and the mcp-bench JSON of every
run (OUT/<scenario>__<server>__r<N>.json). One section per workload, one table with the
servers side by side (mcp-actor, `mine`, first): each figure is the median over the rounds
whose run produced figures, counts (ok, failed, mismatched) are sums over the rounds, and
"(0.36x)" after a figure is its ratio to mine's. Then the ratios the project tracks for
mcp-actor, and every run that did not end `ok`.
"""
import csv, json, os, statistics, sys

# scenario -> (title, what one operation is, rate unit)
WORKLOADS = {
    "echo-legacy-1x32": ("Echo, handshake era, 1 session x 32 in flight", "request", "req/s"),
    "echo-legacy-64x4": ("Echo, handshake era, 64 sessions x 4 in flight", "request", "req/s"),
    "echo-modern-1x32": ("Echo, 2026-07-28, 32 in flight (1x32)", "request", "req/s"),
    "echo-modern-256": ("Echo, 2026-07-28, 256 connections x 1 in flight", "request", "req/s"),
    "input-required-1x32": ("input_required round trip, 2026-07-28, 32 in flight (next to echo-modern-1x32)",
                            "round trip (2 requests)", "round trips/s"),
    "elicit-legacy-1x32": ("Elicitation round trip, handshake era, 1 session x 32 in flight",
                           "round trip", "round trips/s"),
    "progress-legacy-1x8": ("Progress events, handshake era, 8 calls in flight x 100 events", "event", "events/s"),
    "progress-modern-1x8": ("Progress events, 2026-07-28, 8 calls in flight x 100 events", "event", "events/s"),
    "streams-legacy": ("Open streams, handshake era: a session and its GET stream each, list_changed fan-out",
                       "notification", None),
    "streams-modern": ("Open streams, 2026-07-28: subscriptions/listen each, list_changed fan-out",
                       "notification", None),
    "resume-legacy": ("Resumption with Last-Event-ID, handshake era, 4 sessions, a drop every 10 of 100 events",
                      "resumed stream", "resumes/s"),
}
ECHO = ["echo-legacy-1x32", "echo-legacy-64x4", "echo-modern-1x32", "echo-modern-256"]
PEERS = ["rust", "ts", "python"]
MB = "mcp-bench"


def load(out):
    meta = json.load(open(os.path.join(out, "meta.json")))
    rows = list(csv.DictReader(open(os.path.join(out, "runs.tsv")), delimiter="\t"))
    runs = {}  # (scenario, server) -> [(row, json or None)]
    for r in rows:
        j = None
        if r.get("json"):
            try:
                j = json.load(open(os.path.join(out, r["json"])))
            except (OSError, ValueError):
                j = None
        runs.setdefault((r["scenario"], r["server"]), []).append((r, j))
    return meta, rows, runs


class Cell:
    """Medians and sums of one (scenario, server)."""

    def __init__(self, entries):
        self.entries = entries
        self.statuses = [r["status"] for r, _ in entries]
        self.not_supported = next((j.get("not_supported") for r, j in entries
                                   if r["status"] == "not-supported" and j and j.get("not_supported")), None)
        if self.not_supported is None and "not-supported" in self.statuses:
            self.not_supported = "mcp-bench exit 3"
        # Figures from runs that measured something (not the not-supported ones).
        self.js = [j for r, j in entries if j and not j.get("not_supported") and r["status"] != "not-supported"]

    @property
    def unsupported(self):
        return bool(self.statuses) and all(s == "not-supported" for s in self.statuses)

    def med(self, key, f=None):
        vs = []
        for j in self.js:
            v = f(j) if f else j.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                vs.append(v)
        return statistics.median(vs) if vs else None

    def sum(self, key):
        vs = [j.get(key) for j in self.js if isinstance(j.get(key), (int, float)) and not isinstance(j.get(key), bool)]
        return sum(vs) if vs else None

    def status(self):
        counts = {}
        for s in self.statuses:
            counts[s] = counts.get(s, 0) + 1
        return ", ".join(f"{n} {s}" for s, n in counts.items()) or "not run"

    def failed(self):
        return any(s not in ("ok", "not-supported") for s in self.statuses)


def fmt(v):
    if v is None:
        return "—"
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) >= 1000):
        return f"{int(v):,}"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    if a == 0:
        return "0"
    return f"{v:.3f}"


def ratio(v, base):
    if v is None or base in (None, 0):
        return ""
    return f" ({v / base:.2f}x)"


def label(meta, s):
    v = meta.get("versions", {}).get(s, "").split()
    version = v[1] if len(v) > 1 else ""
    names = {"mine": "mine (mcp-actor)", "limit": "limit (bare axum)"}
    if s in names:
        return names[s]
    sdk = {"rust": "rmcp", "ts": "TS SDK", "python": "mcp"}.get(s, "")
    return f"{s} ({sdk} {version})" if version else s


def table(meta, scenario, servers, cells):
    kind = "streams" if scenario.startswith("streams-") else "load"
    _, op, rate_unit = WORKLOADS.get(scenario, (scenario, "op", "ops/s"))
    mine = cells.get("mine")
    rows = []  # (name, getter returning a number or None, compare-with-mine?)
    if kind == "load":
        rows += [
            (f"rate ({rate_unit})", lambda c: c.med("rate_per_s"), True),
            (f"server CPU per {op} (µs)", lambda c: c.med("server_cpu_us_per_op"), True),
            ("latency p50 (ms)", lambda c: c.med("latency_p50_ms"), True),
            ("latency p99 (ms)", lambda c: c.med("latency_p99_ms"), True),
        ]
        if scenario.startswith(("progress-", "resume-")):
            rows.append(("calls/s", lambda c: c.med("calls_per_s"), True))
        rows += [
            ("server CPU (% of a core)", lambda c: c.med("server_cpu_pct"), False),
            ("client CPU (% of a core)", lambda c: c.med("client_cpu_pct"), False),
            ("server RSS at the end (MiB)", lambda c: c.med("rss_kib_after", lambda j: j["rss_kib_after"] / 1024
                                                             if isinstance(j.get("rss_kib_after"), (int, float)) else None), True),
        ]
    else:
        rows += [
            ("streams opened", lambda c: c.med("opened"), False),
            ("open time (s)", lambda c: c.med("open_time_s"), True),
            ("RSS per stream (KiB)", lambda c: c.med("rss_per_stream_kib"), True),
            ("server RSS, all open (MiB)", lambda c: c.med("rss_kib_after", lambda j: j["rss_kib_after"] / 1024
                                                            if isinstance(j.get("rss_kib_after"), (int, float)) else None), True),
            ("list_changed fan-out p50 (ms)", lambda c: c.med("latency_p50_ms"), True),
            ("list_changed fan-out p99 (ms)", lambda c: c.med("latency_p99_ms"), True),
            ("list_changed fan-out max (ms)", lambda c: c.med("latency_max_ms"), True),
            ("trigger (ms)", lambda c: c.med(None, lambda j: statistics.median(
                [p["trigger_ms"] for p in j.get("per_round", []) if isinstance(p.get("trigger_ms"), (int, float))] or [None])
                if j.get("per_round") else None), False),
            (f"server CPU per {op} (µs)", lambda c: c.med("server_cpu_us_per_op"), True),
            ("client CPU (% of a core)", lambda c: c.med("client_cpu_pct"), False),
        ]
    counts = [("ok / failed / mismatched", ("ok", "failed", "mismatched"))]
    if kind == "streams":
        counts.append(("open failed / extra notifications", ("open_failed", "extra_notifications")))
    lines = ["| | " + " | ".join(label(meta, s) for s in servers) + " |",
             "|---|" + "---|" * len(servers)]
    notes = []
    for i, (name, get, cmp) in enumerate(rows):
        out = []
        for s in servers:
            c = cells[s]
            if c.unsupported:
                out.append("**not supported**" if i == 0 else "")
                continue
            v = get(c)
            text = fmt(v)
            if name.startswith("client CPU") and v is not None and v > 90:
                text += "\\*"
                if "\\* the load generator" not in " ".join(notes):
                    notes.append("\\* the load generator used more than 90% of its core: the server's rate is partly the client's limit.")
            if cmp and s != "mine" and mine is not None and not mine.unsupported:
                text += ratio(v, get(mine))
            out.append(text)
        lines.append(f"| {name} | " + " | ".join(out) + " |")
    for name, keys in counts:
        out = []
        for s in servers:
            c = cells[s]
            if c.unsupported:
                out.append("")
                continue
            out.append(" / ".join(fmt(c.sum(k)) for k in keys))
        lines.append(f"| {name} (all rounds) | " + " | ".join(out) + " |")
    out = []
    for s in servers:
        c = cells[s]
        t = c.status()
        out.append(f"**{t}**" if c.failed() else t)
    lines.append("| runs | " + " | ".join(out) + " |")
    for s in servers:
        if cells[s].unsupported:
            notes.append(f"{s}, not supported: {cells[s].not_supported}.")
    if kind == "streams":
        notes.append("Each run opens the streams, reads RSS, then triggers list_changed 3 times (mcp-bench "
                     "`--rounds`, default 3): `ok` counts notifications received over the 3 triggers. Fan-out is "
                     "trigger → arrival per stream; the server's CPU over the triggers is read in 10 ms clock "
                     "ticks, so with few streams it may round to 0. mine's trigger is a config rewrite + SIGHUP "
                     "(benches/loadgen/mcp-actor-toggle-tool.sh), the limit's and the peers' a POST to "
                     "/bench/list-changed.")
    return lines, notes


def cpu(runs, scenario, server):
    e = runs.get((scenario, server))
    if not e:
        return None
    c = Cell(e)
    return None if c.unsupported else c.med("server_cpu_us_per_op")


def med(runs, scenario, server, key):
    e = runs.get((scenario, server))
    if not e:
        return None
    c = Cell(e)
    return None if c.unsupported else c.med(key)


def steal_line(rows):
    """The hypervisor's steal time over the runs (runs.tsv's steal_pct, when recorded)."""
    stolen = []
    for r in rows:
        try:
            stolen.append((float(r.get("steal_pct") or ""), f"{r['scenario']} {r['server']} r{r['round']}"))
        except ValueError:
            continue
    if not stolen:
        return "- hypervisor steal time: not recorded"
    values = sorted(v for v, _ in stolen)
    worst = max(stolen)
    busy = sum(1 for v in values if v >= 5)
    return (f"- hypervisor steal time (CPU the host gave to other guests) during a run: median "
            f"{values[len(values) // 2]:.1f}%, max {worst[0]:.1f}% ({worst[1]}); {busy} run(s) at 5% or more "
            f"were slowed by the host")


def tracked(runs, servers):
    """The ratios the project tracks for mcp-actor: (ratio, mine, other, value) rows."""
    rows = []

    def add(name, a, b, what_b):
        v = f"**{a / b:.2f}x**" if a is not None and b not in (None, 0) else "—"
        rows.append(f"| {name} | {fmt(a)} | {fmt(b)}{' ' + what_b if what_b else ''} | {v} |")

    for sc in ECHO:
        add(f"CPU per request ÷ the limit's, {sc}", cpu(runs, sc, "mine"), cpu(runs, sc, "limit"), "")
    for sc in ECHO:
        peers = [(cpu(runs, sc, p), p) for p in PEERS if p in servers]
        peers = [(v, p) for v, p in peers if v is not None]
        best = min(peers) if peers else (None, "")
        add(f"CPU per request ÷ the best peer's, {sc}", cpu(runs, sc, "mine"), best[0], f"({best[1]})" if best[1] else "")
    add("input_required round trip CPU ÷ plain modern call CPU (input-required-1x32 ÷ echo-modern-1x32)",
        cpu(runs, "input-required-1x32", "mine"), cpu(runs, "echo-modern-1x32", "mine"), "")
    for sc in ("progress-legacy-1x8", "progress-modern-1x8"):
        add(f"progress CPU per event ÷ rmcp's, {sc}", cpu(runs, sc, "mine"), cpu(runs, sc, "rust"), "")
    add("elicitation CPU per round trip ÷ rmcp's, elicit-legacy-1x32",
        cpu(runs, "elicit-legacy-1x32", "mine"), cpu(runs, "elicit-legacy-1x32", "rust"), "")
    add("resumption CPU per resumed stream ÷ rmcp's, resume-legacy",
        cpu(runs, "resume-legacy", "mine"), cpu(runs, "resume-legacy", "rust"), "")
    for sc in ("streams-legacy", "streams-modern"):
        add(f"RSS per stream ÷ the limit's, {sc}", med(runs, sc, "mine", "rss_per_stream_kib"),
            med(runs, sc, "limit", "rss_per_stream_kib"), "")
        add(f"RSS per stream ÷ rmcp's, {sc}", med(runs, sc, "mine", "rss_per_stream_kib"),
            med(runs, sc, "rust", "rss_per_stream_kib"), "")
        add(f"list_changed fan-out p99 ÷ rmcp's, {sc}", med(runs, sc, "mine", "latency_p99_ms"),
            med(runs, sc, "rust", "latency_p99_ms"), "")
    return rows


def main():
    out = sys.argv[1]
    dest = sys.argv[2] if len(sys.argv) > 2 else os.path.join(out, "report.md")
    meta, rows, runs = load(out)
    servers = [s for s in meta.get("servers", []) if any(k[1] == s for k in runs)]
    scenarios = [s for s in meta.get("scenarios", []) if any(k[0] == s for k in runs)]
    h = meta.get("host", {})
    md = [f"# mcp-actor compared ({meta.get('date', '')})", ""]
    commit = meta.get("git_commit", "?")
    md += [
        f"- commit `{commit[:12]}`{' (with uncommitted changes)' if meta.get('git_dirty') else ''}; "
        f"command `{meta.get('command', '')}`",
        f"- load scenarios: {meta.get('duration_s')} s measured after {meta.get('warmup_s')} s warm-up; "
        f"streams scenarios: {meta.get('streams'):,} streams; {meta.get('rounds')} round(s), each on a fresh "
        f"server process; figures are medians over the rounds, counts are sums",
        f"- machine: {h.get('nproc', '?')} CPUs ({h.get('cpu_model', '')}), {h.get('mem_gib', '?')} GiB, "
        f"Linux {h.get('kernel', '')}; load average before {' '.join(h.get('loadavg_before', []))}, "
        f"after {' '.join(h.get('loadavg_after', []) or ['?'])}; server and load generator share the machine",
        f"- busiest processes before the start (% CPU, name): {'; '.join(h.get('busiest_processes_before', [])) or '?'}",
        f"- load generator: {meta.get('mcp_bench', MB)} (one thread); {meta.get('elapsed_s', '?')} s for "
        f"{len(rows)} runs",
        steal_line(rows),
        "",
        "| server | version |",
        "|---|---|",
    ]
    for s in servers:
        md.append(f"| {s} | {meta.get('versions', {}).get(s, '')} |")
    md += ["", "`mine` is mcp-actor on `benches/compare.toml` (`worker_threads = 1`: the load generator "
           "takes the other core); `limit` is the bare axum server of `benches/limit` (echo and open streams), the "
           "ceiling of any server on this stack. Ratios in parentheses are value ÷ mine.", ""]

    md += ["## mcp-actor's tracked ratios", "", "| ratio | mine | other | mine ÷ other |", "|---|---|---|---|"]
    md += tracked(runs, servers)
    md += ["", "CPU figures are server CPU (µs) per the scenario's operation, medians over the rounds; "
           "RSS per stream in KiB, fan-out in ms.", ""]

    for sc in scenarios:
        title, op, _ = WORKLOADS.get(sc, (sc, "op", "ops/s"))
        cols = [s for s in servers if (sc, s) in runs]
        cells = {s: Cell(runs[(sc, s)]) for s in cols}
        example = next((r for r, _ in runs[(sc, cols[0])]), None)
        md += [f"## {sc}: {title}", ""]
        lines, notes = table(meta, sc, cols, cells)
        if sc == "input-required-1x32":
            plain = []
            for s in cols:
                c = cells[s]
                a = None if c.unsupported else c.med("server_cpu_us_per_op")
                b = cpu(runs, "echo-modern-1x32", s)
                plain.append((b, a / b if a is not None and b else None))
            lines.insert(-3, "| server CPU per plain call, echo-modern-1x32 (µs) | "
                         + " | ".join(fmt(b) for b, _ in plain) + " |")
            lines.insert(-3, "| round trip CPU ÷ plain call CPU | "
                         + " | ".join(f"{x:.2f}x" if x is not None else "—" for _, x in plain) + " |")
        md += lines
        if notes:
            md += [""] + notes
        if example is not None:
            cmd = ""
            try:
                with open(os.path.join(out, example["bench_log"])) as f:
                    first = f.readline().strip()
                if first.startswith("+ "):
                    cmd = first[2:]
                    cmd = " ".join(("…/" + os.path.basename(w)) if w.startswith("/") else w for w in cmd.split())
            except OSError:
                pass
            if cmd:
                md += ["", f"Command (first run): `{cmd}`"]
        md.append("")

    bad = [r for r in rows if r["status"] not in ("ok", "not-supported")]
    md += ["## Runs that did not end ok", ""]
    if not bad:
        md += ["None: every run ended ok or not supported.", ""]
    else:
        md += ["| scenario | server | round | status | mcp-bench exit | logs |", "|---|---|---|---|---|---|"]
        for r in bad:
            md.append(f"| {r['scenario']} | {r['server']} | {r['round']} | {r['status']} | {r['bench_exit'] or '—'} | "
                      f"`{r['bench_log']}`, `{r['server_log']}` |")
        md.append("")
    md += ["Statuses: `ok`; `not-supported` (mcp-bench exit 3, the server lacks the feature); `failed` (exit 1: "
           "failed or mismatched operations); `setup-error` (exit 2); `timeout`; `start-failed` (the server "
           "never answered); `server-exited` (it died during the run). Per-run figures: "
           "`<scenario>__<server>__r<N>.json`, listed in `runs.tsv`.", ""]
    with open(dest, "w") as f:
        f.write("\n".join(md))
    print(dest)


if __name__ == "__main__":
    main()
