#!/usr/bin/env python3
"""Draws herta/docs/img/rate-bucket.svg, the picture in herta/docs/limits.md:
a rate budget of 5 units per second with burst 3, over 4 seconds, computed
with the arbiter's integer arithmetic (arbiter/rate.rs): GCRA in ticks (here a
tick is a nanosecond and a unit costs P = period / count ticks); x is the
theoretical arrival time, and at tick s the bucket holds
floor((s + burst * P - max(x, s)) / P) units.

    python3 herta/docs/img/rate_bucket.py   # rewrites rate-bucket.svg

Script: six Wait calls at 0 s (three granted at once from the full bucket,
three queued and granted at 200, 400 and 600 ms, each as of the instant its
unit exists), idle until 2 s (the bucket refills to its burst, no further),
then a Reject call every 100 ms until 3.5 s: every other one is refused with
a Retry-After of the time until the next unit.
"""
from pathlib import Path

COUNT, PERIOD, BURST = 5, 1_000_000_000, 3
MS = 1_000_000
P = PERIOD // COUNT  # ticks per unit; gcd(5, 10^9) = 5, so a tick is 1 ns
FULL = BURST * P


def room(x, s):
    return (s + FULL - max(x, s)) // P


def ready_at(x, units):
    """First tick s with max(x, s) + units * P <= s + FULL."""
    return max(0, x + units * P - FULL)


def simulate():
    x, events, level = 0, [], []
    # Wait calls at 0: granted in order, each as of its unit's instant.
    for _ in range(6):
        at = ready_at(x, 1)
        x = max(x, at) + P
        events.append((at, "granted"))
    for t in range(2000 * MS, 3500 * MS + 1, 100 * MS):
        if room(x, t) >= 1:
            x = max(x, t) + P
            events.append((t, "granted"))
        else:
            events.append((t, "refused"))
    # The bucket's level, sampled every millisecond (grants at the same
    # instant applied before the sample).
    x2 = 0
    grants = sorted(t for t, kind in events if kind == "granted")
    for ms in range(0, 4001):
        t = ms * MS
        while grants and grants[0] <= t:
            x2 = max(x2, grants.pop(0)) + P
        level.append((ms, room(x2, t)))
    return events, level


def svg(events, level):
    w, h, left, top, bottom = 760, 230, 50, 20, 190
    x = lambda ms: left + ms * (w - left - 20) / 4000
    y = lambda units: bottom - units * (bottom - top) / BURST
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h+20}" font-family="sans-serif" font-size="11">',
           f'<rect width="{w}" height="{h+20}" fill="white"/>']
    for u in range(BURST + 1):
        out.append(f'<line x1="{left}" x2="{w-20}" y1="{y(u)}" y2="{y(u)}" stroke="#ddd"/>')
        out.append(f'<text x="{left-8}" y="{y(u)+4}" text-anchor="end">{u}</text>')
    for s in range(5):
        out.append(f'<text x="{x(s*1000)}" y="{bottom+16}" text-anchor="middle">{s} s</text>')
    points = []
    for ms, units in level:
        if points:
            points.append(f"{x(ms):.1f},{y(points_level):.1f}")
        points.append(f"{x(ms):.1f},{y(units):.1f}")
        points_level = units
    out.append(f'<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{" ".join(points)}"/>')
    for t, kind in events:
        ms = t / MS
        if kind == "granted":
            out.append(f'<circle cx="{x(ms):.1f}" cy="{bottom+28}" r="3" fill="#2ca02c"/>')
        else:
            out.append(f'<text x="{x(ms):.1f}" y="{bottom+32}" text-anchor="middle" fill="#d62728">x</text>')
    out.append(f'<text x="{left}" y="{top-6}">units in the bucket (5 per second, burst 3); dots: grants, x: Reject refusals</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    events, level = simulate()
    target = Path(__file__).with_name("rate-bucket.svg")
    target.write_text(svg(events, level))
    granted = sum(1 for _, k in events if k == "granted")
    print(f"{target}: {granted} grants, {len(events) - granted} refusals")
