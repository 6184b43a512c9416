"""Charts as inline SVG, drawn on the server: no script, no library, nothing fetched by the page.

Every label passes through :func:`html.escape`; each bar carries a ``<title>`` with its exact value, which a
browser shows on hover.
"""

from __future__ import annotations

import time
from html import escape

BAR = "#4a7bd0"
BAR_ALT = "#d08a4a"
AXIS = "#888"


def _num(n: float) -> str:
    if abs(n) >= 1e6:
        return f"{n / 1e6:.1f}M"
    if abs(n) >= 1e4:
        return f"{n / 1e3:.0f}k"
    return f"{n:,.0f}" if float(n).is_integer() else f"{n:,.1f}"


def hbars(items: list[tuple[str, float]], *, title: str, unit: str = "", width: int = 640,
          color: str = BAR) -> str:
    """Horizontal bars, one per (label, value), largest first as given; an empty list says so."""
    if not items:
        return f'<p class="empty">{escape(title)}: nothing recorded yet.</p>'
    row, label_w, pad = 22, 260, 60
    height = row * len(items) + 30
    top = max(v for _, v in items) or 1
    span = width - label_w - pad
    out = [f'<svg class="chart" role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>',
           f'<text x="0" y="14" class="ct">{escape(title)}</text>']
    for i, (label, value) in enumerate(items):
        y = 24 + i * row
        w = max(1.0, span * value / top) if value else 0
        shown = label if len(label) <= 40 else label[:39] + "…"
        out.append(f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end" class="cl">{escape(shown)}</text>')
        out.append(f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row - 6}" fill="{color}">'
                   f'<title>{escape(label)}: {value:,.0f}{escape(unit)}</title></rect>')
        out.append(f'<text x="{label_w + w + 4:.1f}" y="{y + 14}" class="cv">{_num(value)}{escape(unit)}</text>')
    out.append("</svg>")
    return "".join(out)


def columns(series: list[tuple[int, float]], *, title: str, bucket: str = "hour", unit: str = "",
            width: int = 720, height: int = 180, cumulative: bool = False, color: str = BAR) -> str:
    """A column per time bucket ((epoch ms, value), oldest first), with the first and last times marked;
    ``cumulative`` draws running totals instead."""
    if not series:
        return f'<p class="empty">{escape(title)}: nothing recorded yet.</p>'
    values = [v for _, v in series]
    if cumulative:
        run, values = 0.0, []
        for _, v in series:
            run += v
            values.append(run)
    left, bottom, top_pad = 50, 24, 24
    plot_w, plot_h = width - left - 10, height - bottom - top_pad
    top = max(values) or 1
    step = plot_w / len(series)
    fmt = "%m-%d %H:00" if bucket == "hour" else "%Y-%m-%d"
    out = [f'<svg class="chart" role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>',
           f'<text x="0" y="14" class="ct">{escape(title)}</text>',
           f'<line x1="{left}" y1="{top_pad + plot_h}" x2="{width - 10}" y2="{top_pad + plot_h}" stroke="{AXIS}"/>',
           f'<text x="{left - 4}" y="{top_pad + 8}" text-anchor="end" class="cv">{_num(top)}</text>',
           f'<text x="{left - 4}" y="{top_pad + plot_h}" text-anchor="end" class="cv">0</text>']
    for i, ((at, _), value) in enumerate(zip(series, values, strict=True)):
        h = plot_h * value / top
        x = left + i * step
        when = time.strftime(fmt, time.localtime(at / 1000))
        out.append(f'<rect x="{x + 0.5:.1f}" y="{top_pad + plot_h - h:.1f}" width="{max(1.0, step - 1):.1f}" '
                   f'height="{h:.1f}" fill="{color}"><title>{escape(when)}: {value:,.0f}{escape(unit)}</title></rect>')
    first = time.strftime(fmt, time.localtime(series[0][0] / 1000))
    last = time.strftime(fmt, time.localtime(series[-1][0] / 1000))
    out.append(f'<text x="{left}" y="{height - 6}" class="cv">{escape(first)}</text>')
    out.append(f'<text x="{width - 10}" y="{height - 6}" text-anchor="end" class="cv">{escape(last)}</text>')
    out.append("</svg>")
    return "".join(out)


def filled(buckets: dict[int, float], start: int, end: int, step: int) -> list[tuple[int, float]]:
    """Buckets from ``start`` to ``end`` (epoch ms, multiples of ``step``) with the empty ones as zero."""
    first = start - start % step
    return [(t, buckets.get(t, 0)) for t in range(first, end + 1, step)]
