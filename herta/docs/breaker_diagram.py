#!/usr/bin/env python3
"""Writes herta/docs/images/breaker-states.svg: the circuit breaker's states
and transitions, as herta/docs/breakers.md describes them.

Run from the repository root: `python3 herta/docs/breaker_diagram.py`.
Python 3 only, no packages.
"""

from pathlib import Path

WIDTH, HEIGHT = 760, 330
STATES = {  # name: (centre x, centre y, fill)
    "closed": (130, 165, "#e3f4e1"),
    "open": (630, 165, "#fbe0dc"),
    "half-open": (380, 285, "#fff4d6"),
}
RX, RY = 78, 34


def state(name: str) -> str:
    x, y, fill = STATES[name]
    return (
        f'<ellipse cx="{x}" cy="{y}" rx="{RX}" ry="{RY}" fill="{fill}" stroke="#333" stroke-width="1.5"/>'
        f'<text x="{x}" y="{y + 6}" text-anchor="middle" font-size="18" font-weight="bold">{name}</text>'
    )


def arrow(path: str, label: str, lx: int, ly: int, anchor: str = "middle") -> str:
    lines = label.split("\n")
    text = "".join(
        f'<tspan x="{lx}" dy="{0 if i == 0 else 16}">{line}</tspan>' for i, line in enumerate(lines)
    )
    return (
        f'<path d="{path}" fill="none" stroke="#333" stroke-width="1.5" marker-end="url(#head)"/>'
        f'<text x="{lx}" y="{ly}" text-anchor="{anchor}" font-size="13">{text}</text>'
    )


def svg() -> str:
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif">',
        '<defs><marker id="head" markerWidth="10" markerHeight="8" refX="9" refY="4" orient="auto">'
        '<path d="M0,0 L10,4 L0,8 z" fill="#333"/></marker></defs>',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        arrow("M 200 150 Q 380 60 552 150",
              "failure (or slow) rate ≥ threshold\nwith ≥ min_calls in the window", 380, 70),
        arrow("M 600 197 Q 560 270 458 283",
              "open_for elapsed:\nthe next caller reserves a probe", 640, 260, "start"),
        arrow("M 302 283 Q 190 270 150 199",
              "all `probes` probes\nsucceeded (new window)", 120, 260, "end"),
        arrow("M 440 260 Q 560 200 575 195",
              "a probe failed:\nopen for a full open_for", 470, 205, "start"),
    ]
    parts += [state(name) for name in STATES]
    parts.append(
        '<text x="380" y="20" text-anchor="middle" font-size="13" fill="#555">'
        "open: every call refused before it queues (Busy::Breaker, retry_after = time left); "
        "half-open: beyond the probes, refused</text>"
    )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    out = Path(__file__).resolve().parent / "images" / "breaker-states.svg"
    out.write_text(svg(), encoding="utf-8")
    print(f"wrote {out}")
