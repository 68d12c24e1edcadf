#!/usr/bin/env python3
"""Draws the figures of BENCHMARKS.md and RELIABILITY.md as SVG line charts.

Python 3 standard library only: the SVG is written by hand. Two charts:

* `contention` (the default): the `contention` group of the `overhead` bench,
  herta vs the bare `tokio::sync::Semaphore` vs the tower stack, in
  nanoseconds per call against the number of concurrent callers. Each point
  is the estimate `cargo bench` prints (the middle figure of criterion's
  `time:` line: the slope of its linear sampling, else the mean; `--stat
  median` for the median), with its 95 % confidence interval as a bar. It
  reads `<criterion>/contention/<series>/<callers>/new/estimates.json`.

      cargo bench -p herta-benches --bench overhead -- \\
          --warm-up-time 1 --measurement-time 2 --noplot '^contention/(semaphore|herta|tower)/'
      python3 benches/plot.py contention --note "2 vCPU shared VM, quiet"

* `queue-scaling`: the cancellation checks of `tests/tests/suite/queue_scaling.rs`
  (their `--nocapture` output, saved to a file), the CPU time per cancelled
  waiter against the number of queued waiters, from cold caches: a flat line
  is a constant cost per cancel, i.e. linear in the queue.

      cargo test -p herta-tests --release --test suite queue_scaling::cancelling \\
          -- --ignored --nocapture --test-threads 1 | tee target/queue_scaling.txt
      python3 benches/plot.py queue-scaling target/queue_scaling.txt --note "..."

Each prints its figures as a Markdown table and writes `--out`.
"""

import argparse
import json
import math
import re
import sys
from pathlib import Path

COLOURS = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e"]
DASHES = ["", "6 4", "2 3", "8 3 2 3", "1 2"]

WIDTH, HEIGHT = 720, 440
LEFT, RIGHT, TOP, BOTTOM = 72, 24, 64, 96


def log_ticks(low: float, high: float) -> list:
    """The 1, 2, 5 × 10^k values spanning [low, high]: the last one at or
    below `low` to the first one at or above `high`, at least two."""
    k = math.floor(math.log10(low))
    ticks = []
    while not ticks or ticks[-1] < high or len(ticks) < 2:
        ticks.extend(step * 10**k for step in (1, 2, 5))
        k += 1
    while len(ticks) > 2 and ticks[1] <= low:
        ticks.pop(0)
    while len(ticks) > 2 and ticks[-2] >= high:
        ticks.pop()
    return ticks


def esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def chart(series: list, xs: list, title: str, note: str, x_label: str, y_label: str) -> str:
    """An SVG line chart: `series` is a list of (label, {x: (y, low, high)}),
    `xs` the x values in order (drawn evenly spaced), y on a log scale."""
    values = [v for _, pts in series for point in pts.values() for v in point if v > 0]
    ticks = log_ticks(min(values), max(values))
    y_low, y_high = math.log10(ticks[0]), math.log10(ticks[-1])
    plot_w = WIDTH - LEFT - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM

    def x(i: int) -> float:
        return LEFT + plot_w * (i + 0.5) / len(xs)

    def y(v: float) -> float:
        return TOP + plot_h * (1 - (math.log10(max(v, ticks[0])) - y_low) / (y_high - y_low))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="13">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="24" text-anchor="middle" font-size="16" '
        f'font-weight="bold">{esc(title)}</text>',
    ]
    if note:
        out.append(
            f'<text x="{WIDTH / 2}" y="44" text-anchor="middle" fill="#555">{esc(note)}</text>'
        )
    for v in ticks:
        yy = y(v)
        out.append(
            f'<line x1="{LEFT}" y1="{yy:.1f}" x2="{WIDTH - RIGHT}" y2="{yy:.1f}" stroke="#ddd"/>'
        )
        out.append(f'<text x="{LEFT - 8}" y="{yy + 4:.1f}" text-anchor="end">{v:g}</text>')
    mid = TOP + plot_h / 2
    out.append(
        f'<text x="18" y="{mid}" text-anchor="middle" '
        f'transform="rotate(-90 18 {mid})">{esc(y_label)}</text>'
    )
    base = TOP + plot_h
    out.append(f'<line x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}" stroke="#333"/>')
    out.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{base}" stroke="#333"/>')
    for i, n in enumerate(xs):
        out.append(f'<text x="{x(i):.1f}" y="{base + 18}" text-anchor="middle">{n}</text>')
    out.append(
        f'<text x="{LEFT + plot_w / 2}" y="{base + 38}" text-anchor="middle">'
        f"{esc(x_label)}</text>"
    )
    drawn = []
    for k, (label, pts) in enumerate(series):
        coords = [(x(i), y(pts[n][0])) for i, n in enumerate(xs) if n in pts]
        if not coords:
            continue
        colour, dash = COLOURS[k % len(COLOURS)], DASHES[k % len(DASHES)]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        path = " ".join(f"{cx:.1f},{cy:.1f}" for cx, cy in coords)
        out.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" '
            f'stroke-width="2.5"{dash_attr}/>'
        )
        for i, n in enumerate(xs):
            if n not in pts:
                continue
            mid_value, low, high = pts[n]
            cx = x(i)
            if high > low:
                out.append(
                    f'<line x1="{cx:.1f}" y1="{y(low):.1f}" x2="{cx:.1f}" y2="{y(high):.1f}" '
                    f'stroke="{colour}" stroke-width="1.5"/>'
                )
            out.append(f'<circle cx="{cx:.1f}" cy="{y(mid_value):.1f}" r="4" fill="{colour}"/>')
        drawn.append((label, colour, dash_attr))
    # The legend, under the x axis's title, wrapped to the chart's width.
    lx, ly = LEFT, HEIGHT - 34
    for label, colour, dash_attr in drawn:
        width = 46 + 7.2 * len(label)
        if lx + width > WIDTH and lx > LEFT:
            lx, ly = LEFT, ly + 20
        out.append(
            f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 28}" y2="{ly - 4}" stroke="{colour}" '
            f'stroke-width="2.5"{dash_attr}/>'
        )
        out.append(f'<text x="{lx + 34}" y="{ly}">{esc(label)}</text>')
        lx += width
    out.append("</svg>")
    return "\n".join(out) + "\n"


def table(series: list, xs: list, x_name: str) -> str:
    rows = [
        f"| {x_name} | " + " | ".join(label for label, _ in series) + " |",
        "|---" * (len(series) + 1) + "|",
    ]
    for n in xs:
        cells = [f"{pts[n][0]:.1f}" if n in pts else "—" for _, pts in series]
        rows.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


# ---------------------------------------------------------------- contention

CONTENTION = [
    ("herta", "herta"),
    ("semaphore", "bare tokio Semaphore"),
    ("tower", "tower (ConcurrencyLimit + Retry + Timeout)"),
]


def read_criterion(root: Path, group: str, fn: str, stat: str) -> dict:
    """{parameter: (estimate, low, high)} in ns for one function of a group."""
    points = {}
    base = root / group / fn
    if not base.is_dir():
        return points
    for param in base.iterdir():
        est = param / "new" / "estimates.json"
        if not (param.name.isdigit() and est.is_file()):
            continue
        estimates = json.loads(est.read_text())
        chosen = (estimates.get("slope") or estimates["mean"]) if stat == "printed" else estimates[stat]
        ci = chosen["confidence_interval"]
        points[int(param.name)] = (chosen["point_estimate"], ci["lower_bound"], ci["upper_bound"])
    return points


def contention(args) -> tuple:
    series = [
        (label, read_criterion(args.criterion, "contention", fn, args.stat))
        for fn, label in CONTENTION
    ]
    xs = sorted({n for _, pts in series for n in pts})
    if not xs:
        sys.exit(f"no criterion estimates under {args.criterion / 'contention'}: run the bench first")
    stat = "estimate" if args.stat == "printed" else args.stat
    svg = chart(
        series,
        xs,
        args.title or "Contended calls: herta vs a bare semaphore vs tower",
        args.note,
        "concurrent callers (capacity 4, 2 worker threads)",
        f"ns per call ({stat}, log scale)",
    )
    return svg, table(series, xs, "callers")


# ------------------------------------------------------------- queue scaling

DURATION = re.compile(r"(\d+): ([\d.]+)(ns|µs|us|ms|s)\b")
SCALE = {"ns": 1.0, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}


def short_label(what: str) -> str:
    what = re.sub(r",? (cold|Cold)$", "", what)
    what = what.replace("cancel queued calls on a full budget", "herta: a budget")
    what = what.replace("cancel queued calls on one key", "herta: one key")
    return what.replace("baseline: cancel queued acquires on a ", "")


def queue_scaling(args) -> tuple:
    series = []
    for line in args.log.read_text(encoding="utf-8").splitlines():
        head, sep, _ = line.partition(" (medians)")
        if not sep or ": " not in head:
            continue
        what = head[: DURATION.search(head).start()].rstrip(": ") if DURATION.search(head) else ""
        if not what.lower().endswith("cold"):
            continue
        pts = {}
        for n, value, unit in DURATION.findall(head[len(what):]):
            per = float(value) * SCALE[unit] / int(n)
            pts[int(n)] = (per, per, per)
        series.append((short_label(what), pts))
    xs = sorted({n for _, pts in series for n in pts})
    if not xs:
        sys.exit(f"no cold cancellation medians in {args.log}: run the queue_scaling checks first")
    svg = chart(
        series,
        xs,
        args.title or "Cancelling queued waiters: CPU time per cancel",
        args.note,
        "waiters queued, then cancelled in a scrambled order (cold caches)",
        "ns per cancelled waiter (median, log scale)",
    )
    return svg, table(series, xs, "queued")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="chart")
    c = sub.add_parser("contention", help="the overhead bench's contention group")
    c.add_argument("--criterion", default=Path("target/criterion"), type=Path)
    c.add_argument("--stat", default="printed", choices=["printed", "median", "mean", "slope"])
    c.add_argument("--out", default=Path("benches/contention.svg"), type=Path)
    q = sub.add_parser("queue-scaling", help="queue_scaling's cancellation checks")
    q.add_argument("log", type=Path, help="their --nocapture output")
    q.add_argument("--out", default=Path("benches/queue_scaling.svg"), type=Path)
    for p in (c, q):
        p.add_argument("--title", default="")
        p.add_argument("--note", default="", help="a line under the title: machine, load")
    argv = sys.argv[1:]
    if not argv or argv[0] not in ("contention", "queue-scaling", "-h", "--help"):
        argv = ["contention"] + argv
    args = parser.parse_args(argv)
    svg, figures = (contention if args.chart == "contention" else queue_scaling)(args)
    args.out.write_text(svg, encoding="utf-8")
    print(figures)
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
