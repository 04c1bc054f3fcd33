"""A line chart as SVG text, standard library only: throughput against threads.

line_chart() takes panels (one chart each, side by side), each with series of points
(x, median, min, max); x is drawn on a log2 axis (1, 2, 4, 8 threads), y from 0, the
median as a line with a marker, min..max as an error bar.  Every point also carries a
<title> (its figures, shown on hover) and data-* attributes, so the SVG can be checked
by reading it back.  Pure: text in, text out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
PANEL_W, PANEL_H = 420, 300
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 70, 20, 40, 50
LEGEND_H = 22


@dataclass(frozen=True)
class Point:
    x: float
    y: float          # median
    y_min: float
    y_max: float


@dataclass
class Panel:
    title: str
    x_label: str
    y_label: str
    series: dict[str, list[Point]] = field(default_factory=dict)


def nice_max(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 times a power of ten that is >= value (> 0)."""
    if value <= 0:
        return 1.0
    exp = math.floor(math.log10(value))
    for m in (1, 2, 2.5, 5, 10):
        if m * 10 ** exp >= value:
            return m * 10 ** exp
    return 10 ** (exp + 1)


def _fmt(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:g}M"
    if v >= 1e3:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


def _panel(p: Panel, ox: float, colours: dict[str, str]) -> list[str]:
    out = [f'<g class="panel" data-title={quoteattr(p.title)}>']
    pts = [pt for s in p.series.values() for pt in s]
    xs = sorted({pt.x for pt in pts}) or [1.0]
    lo, hi = math.log2(min(xs)), math.log2(max(xs))
    span = hi - lo or 1.0
    y_top = nice_max(max((pt.y_max for pt in pts), default=1.0))
    x0, x1 = ox + MARGIN_L, ox + PANEL_W - MARGIN_R
    y0, y1 = MARGIN_T + PANEL_H - MARGIN_T - MARGIN_B, MARGIN_T

    def sx(x: float) -> float:
        return x0 + (math.log2(x) - lo) / span * (x1 - x0)

    def sy(y: float) -> float:
        return y0 - y / y_top * (y0 - y1)

    out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{MARGIN_T - 15}" text-anchor="middle" '
               f'font-weight="bold">{escape(p.title)}</text>')
    out.append(f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="black"/>')
    out.append(f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="black"/>')
    for i in range(5):
        v = y_top * i / 4
        out.append(f'<line x1="{x0 - 4}" y1="{sy(v):.1f}" x2="{x1}" y2="{sy(v):.1f}" '
                   f'stroke="#ddd"/>')
        out.append(f'<text x="{x0 - 6}" y="{sy(v) + 4:.1f}" text-anchor="end">'
                   f'{_fmt(v)}</text>')
    for x in xs:
        out.append(f'<text x="{sx(x):.1f}" y="{y0 + 16}" text-anchor="middle">{x:g}</text>')
    out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{y0 + 36}" text-anchor="middle">'
               f'{escape(p.x_label)}</text>')
    out.append(f'<text transform="translate({ox + 16},{(y0 + y1) / 2:.1f}) rotate(-90)" '
               f'text-anchor="middle">{escape(p.y_label)}</text>')
    for name, series in p.series.items():
        c = colours[name]
        series = sorted(series, key=lambda pt: pt.x)
        path = " ".join(f"{sx(pt.x):.1f},{sy(pt.y):.1f}" for pt in series)
        out.append(f'<polyline class="series" data-series={quoteattr(name)} fill="none" '
                   f'stroke="{c}" stroke-width="2" points="{path}"/>')
        for pt in series:
            cx = sx(pt.x)
            out.append(f'<line x1="{cx:.1f}" y1="{sy(pt.y_min):.1f}" x2="{cx:.1f}" '
                       f'y2="{sy(pt.y_max):.1f}" stroke="{c}"/>')
            out.append(f'<circle class="point" data-series={quoteattr(name)} '
                       f'data-x="{pt.x:g}" data-y="{pt.y:g}" data-min="{pt.y_min:g}" '
                       f'data-max="{pt.y_max:g}" cx="{cx:.1f}" cy="{sy(pt.y):.1f}" r="3.5" '
                       f'fill="{c}"><title>{escape(name)}: {pt.x:g} threads, median '
                       f'{pt.y:g} (min {pt.y_min:g}, max {pt.y_max:g})</title></circle>')
    out.append("</g>")
    return out


def line_chart(panels: list[Panel], title: str = "", note: str = "") -> str:
    """The SVG document: panels side by side, one shared legend, a title and a note."""
    names: list[str] = []
    for p in panels:
        names += [n for n in p.series if n not in names]
    colours = {n: COLOURS[i % len(COLOURS)] for i, n in enumerate(names)}
    width = PANEL_W * max(len(panels), 1)
    top = 30 if title else 0
    height = top + PANEL_H + LEGEND_H + (20 if note else 0) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    if title:
        out.append(f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="15" '
                   f'font-weight="bold">{escape(title)}</text>')
    out.append(f'<g transform="translate(0,{top})">')
    for i, p in enumerate(panels):
        out += _panel(p, i * PANEL_W, colours)
    out.append("</g>")
    ly = top + PANEL_H + 12
    lx = float(MARGIN_L)
    for n in names:
        out.append(f'<rect x="{lx}" y="{ly - 9}" width="14" height="4" fill="{colours[n]}"/>')
        out.append(f'<text x="{lx + 18}" y="{ly - 3}">{escape(n)}</text>')
        lx += 30 + 7 * len(n)
    if note:
        out.append(f'<text x="{MARGIN_L}" y="{ly + 18}" fill="#555">{escape(note)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
