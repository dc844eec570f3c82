"""Hand-written inline SVG plots (no plotting library, no network): forest plots, interval bars, line charts.

Every function returns one ``<svg>`` element as a string, sized in CSS pixels with a ``viewBox`` so it scales.
Text is escaped; colours are attributes (not external CSS) so a plot also renders when copied on its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

from deltap.report.figures import wilson_interval
from deltap.report.run_data import CandidateRecord

__all__ = [
    "PALETTE",
    "SOURCE_SHAPES",
    "VERDICT_COLORS",
    "Series",
    "interval_rows",
    "forest_plot",
    "line_chart",
    "nice_ticks",
    "stacked_bar",
]

VERDICT_COLORS: dict[str, str] = {
    "relevant": "#1a9850",
    "harmful": "#d73027",
    "irrelevant": "#8c8c8c",
    "undecided": "#e69f00",
}
SOURCE_SHAPES: dict[str, str] = {"gold": "diamond", "retrieved": "circle", "placebo": "square"}
PALETTE = ("#2563eb", "#db2777", "#059669", "#7c3aed", "#ea580c", "#0891b2", "#65a30d", "#9f1239")
FONT = "font-family=\"system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif\""
AXIS = "#444"
GRID = "#e5e7eb"


def _f(x: float) -> str:
    """Compact coordinate formatting."""
    return f"{x:.1f}".rstrip("0").rstrip(".") if math.isfinite(x) else "0"


def _num(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values covering [lo, hi] (steps of 1, 2, 2.5 or 5 × 10^k)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0]
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(1, n)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks: list[float] = []
    t = first
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 10) + 0.0)
        t += step
    return ticks


def _tick_label(t: float) -> str:
    if t == 0:
        return "0"
    return f"{t:.3g}"


def marker(shape: str, cx: float, cy: float, r: float, fill: str, stroke: str = "#111", extra: str = "") -> str:
    """A plot marker: ``diamond`` (gold), ``circle`` (retrieved), ``square`` (placebo), else a triangle."""
    common = f'fill="{fill}" stroke="{stroke}" stroke-width="1" {extra}'.strip()
    if shape == "circle":
        return f'<circle cx="{_f(cx)}" cy="{_f(cy)}" r="{_f(r)}" {common}/>'
    if shape == "square":
        s = r * 0.9
        return f'<rect x="{_f(cx - s)}" y="{_f(cy - s)}" width="{_f(2 * s)}" height="{_f(2 * s)}" {common}/>'
    if shape == "diamond":
        d = r * 1.25
        pts = f"{_f(cx)},{_f(cy - d)} {_f(cx + d)},{_f(cy)} {_f(cx)},{_f(cy + d)} {_f(cx - d)},{_f(cy)}"
        return f'<polygon points="{pts}" {common}/>'
    pts = f"{_f(cx)},{_f(cy - r)} {_f(cx + r)},{_f(cy + r)} {_f(cx - r)},{_f(cy + r)}"
    return f'<polygon points="{pts}" {common}/>'


def _truncate(text: str, n: int) -> str:
    return text if len(text) <= n else "…" + text[-(n - 1) :]


def _x_axis(
    x0: float, x1: float, y: float, lo: float, hi: float, label: str, grid_top: float | None = None
) -> list[str]:
    out = [f'<line x1="{_f(x0)}" y1="{_f(y)}" x2="{_f(x1)}" y2="{_f(y)}" stroke="{AXIS}"/>']
    for t in nice_ticks(lo, hi):
        if t < lo - 1e-12 or t > hi + 1e-12:
            continue
        x = x0 + (t - lo) / (hi - lo) * (x1 - x0)
        if grid_top is not None:
            out.append(f'<line x1="{_f(x)}" y1="{_f(grid_top)}" x2="{_f(x)}" y2="{_f(y)}" stroke="{GRID}"/>')
        out.append(f'<line x1="{_f(x)}" y1="{_f(y)}" x2="{_f(x)}" y2="{_f(y + 4)}" stroke="{AXIS}"/>')
        out.append(
            f'<text x="{_f(x)}" y="{_f(y + 16)}" text-anchor="middle" font-size="11" fill="{AXIS}">{_tick_label(t)}</text>'
        )
    out.append(
        f'<text x="{_f((x0 + x1) / 2)}" y="{_f(y + 32)}" text-anchor="middle" font-size="12" fill="#222">{escape(label)}</text>'
    )
    return out


def _svg(width: float, height: float, body: Sequence[str], title: str, css_class: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{css_class}" role="img" width="{_f(width)}" height="{_f(height)}" '
        f'viewBox="0 0 {_f(width)} {_f(height)}" {FONT}><title>{escape(title)}</title>' + "".join(body) + "</svg>"
    )


def forest_plot(
    candidates: Sequence[CandidateRecord],
    *,
    effect_label: str,
    margin: float | None = None,
    min_effect: float | None = None,
    coalition: Sequence[str] = (),
    title: str = "ΔP per candidate",
) -> str:
    """A forest plot: one row per candidate, ΔP as a marker and its confidence interval as a whisker.

    The marker and whisker are the estimate the verdict rests on (:attr:`CandidateRecord.effect`: the joint-regression
    effect adjusted for the other candidates when recorded, else ΔP); a grey cross marks the raw difference in means
    when both exist. Colour = verdict, marker shape = source (◆ gold, ● retrieved, ■ placebo). The shaded band is the
    equivalence region ±margin (inside it a document is proven not to matter); the dashed line is the minimum effect
    for ``relevant``. Rows are sorted by the estimate, largest first; candidates without one come last.
    """
    rows = sorted(candidates, key=lambda c: (c.effect[0] is None, -(c.effect[0] or 0.0), c.doc_id))
    values = [v for c in rows for v in (*c.effect, c.delta_p) if v is not None]
    values += [0.0] + ([margin, -margin] if margin else []) + ([min_effect] if min_effect else [])
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.06 or 0.1
    lo, hi = lo - pad, hi + pad
    row_h, top, label_w, stats_w, width = 22.0, 14.0, 290.0, 150.0, 860.0
    x0, x1 = label_w + 10, width - stats_w - 10
    height = top + row_h * max(1, len(rows)) + 44

    def sx(v: float) -> float:
        return x0 + (v - lo) / (hi - lo) * (x1 - x0)

    bottom = top + row_h * max(1, len(rows))
    body: list[str] = []
    if margin:
        body.append(
            f'<rect x="{_f(sx(-margin))}" y="{_f(top)}" width="{_f(sx(margin) - sx(-margin))}" height="{_f(bottom - top)}" '
            f'fill="#eef2f7"><title>equivalence region ±{margin:g}</title></rect>'
        )
    body += _x_axis(x0, x1, bottom, lo, hi, effect_label, grid_top=top)
    body.append(f'<line x1="{_f(sx(0))}" y1="{_f(top)}" x2="{_f(sx(0))}" y2="{_f(bottom)}" stroke="#333"/>')
    if min_effect:
        body.append(
            f'<line x1="{_f(sx(min_effect))}" y1="{_f(top)}" x2="{_f(sx(min_effect))}" y2="{_f(bottom)}" '
            f'stroke="{VERDICT_COLORS["relevant"]}" stroke-dasharray="4 3"><title>minimum effect {min_effect:g}</title></line>'
        )
    body.append(
        f'<text x="{_f(width - stats_w)}" y="{_f(top - 3)}" font-size="10" fill="#666">q-value · n in/out</text>'
    )
    members = set(coalition)
    for i, c in enumerate(rows):
        y = top + row_h * i + row_h / 2
        color = VERDICT_COLORS.get(c.verdict, "#555")
        est, low, high = c.effect
        adjusted = (
            f"adjusted effect (joint regression) {_num(c.adjusted)} [{_num(c.adjusted_low)}, {_num(c.adjusted_high)}]\n"
            if c.adjusted is not None
            else ""
        )
        vi = c.verdict_interval
        rests = (
            f"the verdict rests on its own interval [{_num(vi[0])}, {_num(vi[1])}] (level {_num(vi[2], 4)}: "
            f"{vi[3]}), not on the whisker: it is corrected for the looks and for testing every candidate\n"
            if vi is not None and (vi[0] is not None or vi[1] is not None)
            else ""
        )
        tip = (
            f"{c.doc_id}\nverdict: {c.verdict}\nsource: {', '.join(c.sources) or '?'}\n{rests}{adjusted}"
            f"ΔP (difference in means) {_num(c.delta_p)} [{_num(c.ci_low)}, {_num(c.ci_high)}]\n"
            f"p_in {_num(c.p_in)} (n={c.n_in if c.n_in is not None else '–'}), "
            f"p_out {_num(c.p_out)} (n={c.n_out if c.n_out is not None else '–'})\n"
            f"p {_num(c.p_value, 4)}, q {_num(c.q_value, 4)}"
        )
        body.append(
            f'<g class="forest-row" data-verdict="{escape(c.verdict)}" data-source="{escape(c.primary_source)}">'
        )
        body.append(f"<title>{escape(tip)}</title>")
        if i % 2:
            body.append(
                f'<rect x="0" y="{_f(y - row_h / 2)}" width="{_f(width)}" height="{_f(row_h)}" fill="#f8fafc" opacity="0.6"/>'
            )
        star = " ★" if c.doc_id in members else ""
        body.append(
            f'<text x="{_f(label_w)}" y="{_f(y + 4)}" text-anchor="end" font-size="11.5" fill="#111">'
            f"{escape(_truncate(c.doc_id, 40))}{star}</text>"
        )
        if low is not None and high is not None:
            body.append(
                f'<line x1="{_f(sx(low))}" y1="{_f(y)}" x2="{_f(sx(high))}" y2="{_f(y)}" stroke="{color}" stroke-width="2.2"/>'
            )
            for v in (low, high):
                body.append(
                    f'<line x1="{_f(sx(v))}" y1="{_f(y - 4)}" x2="{_f(sx(v))}" y2="{_f(y + 4)}" stroke="{color}" stroke-width="1.5"/>'
                )
        if vi is not None and vi[0] is not None and vi[1] is not None and math.isfinite(vi[0]) and math.isfinite(vi[1]):
            # the interval the verdict rests on: a thin dashed line under the whisker (wider: corrected for the looks
            # and for testing every candidate), so a whisker clear of 0 beside "undecided" explains itself
            vl, vh = max(lo, vi[0]), min(hi, vi[1])
            body.append(
                f'<line class="verdict-interval" x1="{_f(sx(vl))}" y1="{_f(y + 6)}" x2="{_f(sx(vh))}" y2="{_f(y + 6)}" '
                f'stroke="{color}" stroke-width="1" stroke-dasharray="3 2"/>'
            )
        if c.adjusted is not None and c.delta_p is not None:
            # the raw difference in means, for comparison: a small grey cross
            xr = sx(c.delta_p)
            body.append(
                f'<path class="raw" d="M{_f(xr - 3.5)},{_f(y - 3.5)}L{_f(xr + 3.5)},{_f(y + 3.5)}M{_f(xr - 3.5)},{_f(y + 3.5)}'
                f'L{_f(xr + 3.5)},{_f(y - 3.5)}" stroke="#6b7280" stroke-width="1.4"/>'
            )
        if est is not None:
            body.append(marker(SOURCE_SHAPES.get(c.primary_source, "triangle"), sx(est), y, 5.5, color))
        else:
            body.append(f'<text x="{_f(x0 + 4)}" y="{_f(y + 4)}" font-size="11" fill="#888">no estimate</text>')
        n_txt = f"{c.n_in if c.n_in is not None else '–'}/{c.n_out if c.n_out is not None else '–'}"
        body.append(
            f'<text x="{_f(width - stats_w)}" y="{_f(y + 4)}" font-size="11" fill="#333">'
            f"q {_num(c.q_value, 3)} · {n_txt}</text>"
        )
        body.append("</g>")
    return _svg(width, height, body, title, "plot forest")


def interval_rows(
    rows: Sequence[tuple[str, float | None, float | None, float | None, str]],
    *,
    x_label: str,
    x_range: tuple[float, float] | None = None,
    reference: tuple[float, str] | None = None,
    title: str = "",
    label_width: float = 210.0,
    row_height: float = 24.0,
) -> str:
    """Point-and-interval rows: ``(label, value, low, high, colour)`` each, with an optional reference line.

    Used for the placebo calibration (achieved false-positive rate vs nominal) and the retriever metrics.
    """
    vals = [v for r in rows for v in r[1:4] if v is not None] + ([reference[0]] if reference else [])
    lo, hi = x_range if x_range else (min([0.0, *vals]), max([1e-9, *vals]) * 1.15)
    row_h, top, width = row_height, 12.0, 760.0
    x0, x1 = label_width + 10, width - 80
    bottom = top + row_h * max(1, len(rows))
    height = bottom + 44

    def sx(v: float) -> float:
        return x0 + (min(max(v, lo), hi) - lo) / (hi - lo) * (x1 - x0)

    body = _x_axis(x0, x1, bottom, lo, hi, x_label, grid_top=top)
    for i, (label, value, low, high, color) in enumerate(rows):
        y = top + row_h * i + row_h / 2
        tip = f"{label}: {_num(value)} [{_num(low)}, {_num(high)}]"
        body.append(f'<g class="interval-row"><title>{escape(tip)}</title>')
        body.append(
            f'<text x="{_f(label_width)}" y="{_f(y + 4)}" text-anchor="end" font-size="12" fill="#111">{escape(label)}</text>'
        )
        if low is not None and high is not None:
            body.append(
                f'<line x1="{_f(sx(low))}" y1="{_f(y)}" x2="{_f(sx(high))}" y2="{_f(y)}" stroke="{color}" stroke-width="2.2"/>'
            )
            for v in (low, high):
                body.append(
                    f'<line x1="{_f(sx(v))}" y1="{_f(y - 4)}" x2="{_f(sx(v))}" y2="{_f(y + 4)}" stroke="{color}" stroke-width="1.5"/>'
                )
        if value is not None:
            body.append(marker("circle", sx(value), y, 5, color))
            body.append(f'<text x="{_f(x1 + 8)}" y="{_f(y + 4)}" font-size="11" fill="#333">{_num(value)}</text>')
        else:
            body.append(f'<text x="{_f(x0 + 4)}" y="{_f(y + 4)}" font-size="11" fill="#888">not available</text>')
        body.append("</g>")
    if reference:
        xr = sx(reference[0])
        body.append(
            f'<line x1="{_f(xr)}" y1="{_f(top - 4)}" x2="{_f(xr)}" y2="{_f(bottom)}" stroke="#111" stroke-dasharray="5 3"/>'
            f'<text x="{_f(xr + 4)}" y="{_f(top + 6)}" font-size="11" fill="#111">{escape(reference[1])}</text>'
        )
    return _svg(width, height, body, title, "plot intervals")


def placebo_rows(placebo: Mapping[str, object]) -> list[tuple[str, float | None, float | None, float | None, str]]:
    """Rows for :func:`interval_rows` from a placebo summary: any-label, relevant, harmful rates with Wilson CIs."""
    n = placebo.get("n")
    if not isinstance(n, int) or n <= 0:
        return []
    rel = int(placebo.get("labelled_relevant") or 0)  # type: ignore[call-overload]
    harm = int(placebo.get("labelled_harmful") or 0)  # type: ignore[call-overload]
    rows: list[tuple[str, float | None, float | None, float | None, str]] = []
    for label, k, color in (
        ("labelled relevant or harmful", rel + harm, "#111827"),
        ("labelled relevant", rel, VERDICT_COLORS["relevant"]),
        ("labelled harmful", harm, VERDICT_COLORS["harmful"]),
    ):
        low, high = wilson_interval(min(k, n), n)
        rows.append((f"{label} ({k}/{n})", k / n, low, high, color))
    return rows


@dataclass(frozen=True)
class Series:
    """One line of :func:`line_chart`: points ``(x, y)`` and an optional band ``(low, high)`` per point."""

    name: str
    points: Sequence[tuple[float, float]]
    band: Sequence[tuple[float, float]] | None = None
    color: str | None = None


def line_chart(
    series: Sequence[Series],
    *,
    x_label: str,
    y_label: str,
    y_range: tuple[float, float] = (0.0, 1.0),
    title: str = "",
    x_integer: bool = True,
) -> str:
    """Lines with optional shaded bands and a legend (recall@K curves, convergence of the mean)."""
    width, height = 760.0, 330.0
    x0, x1, y0, y1 = 60.0, 560.0, 286.0, 16.0
    xs = [p[0] for s in series for p in s.points] or [0.0, 1.0]
    xlo, xhi = min(xs), max(xs)
    if xhi == xlo:
        xhi = xlo + 1
    ylo, yhi = y_range

    def sx(v: float) -> float:
        return x0 + (v - xlo) / (xhi - xlo) * (x1 - x0)

    def sy(v: float) -> float:
        return y0 - (min(max(v, ylo), yhi) - ylo) / (yhi - ylo) * (y0 - y1)

    body: list[str] = []
    for t in nice_ticks(ylo, yhi):
        if ylo - 1e-12 <= t <= yhi + 1e-12:
            body.append(f'<line x1="{_f(x0)}" y1="{_f(sy(t))}" x2="{_f(x1)}" y2="{_f(sy(t))}" stroke="{GRID}"/>')
            body.append(
                f'<text x="{_f(x0 - 6)}" y="{_f(sy(t) + 4)}" text-anchor="end" font-size="11" fill="{AXIS}">{_tick_label(t)}</text>'
            )
    body.append(f'<line x1="{_f(x0)}" y1="{_f(y1)}" x2="{_f(x0)}" y2="{_f(y0)}" stroke="{AXIS}"/>')
    distinct = sorted({p[0] for s in series for p in s.points})
    if x_integer and 1 < len(distinct) <= 15:
        xt = distinct  # few x values (K = 1, 2, 3, 5, 10 ...): label each one
    else:
        xt = [
            t
            for t in nice_ticks(xlo, xhi)
            if xlo - 1e-9 <= t <= xhi + 1e-9 and (not x_integer or float(t).is_integer())
        ]
    body.append(f'<line x1="{_f(x0)}" y1="{_f(y0)}" x2="{_f(x1)}" y2="{_f(y0)}" stroke="{AXIS}"/>')
    for t in xt:
        body.append(f'<line x1="{_f(sx(t))}" y1="{_f(y0)}" x2="{_f(sx(t))}" y2="{_f(y0 + 4)}" stroke="{AXIS}"/>')
        body.append(
            f'<text x="{_f(sx(t))}" y="{_f(y0 + 16)}" text-anchor="middle" font-size="11" fill="{AXIS}">{_tick_label(t)}</text>'
        )
    body.append(
        f'<text x="{_f((x0 + x1) / 2)}" y="{_f(y0 + 34)}" text-anchor="middle" font-size="12" fill="#222">{escape(x_label)}</text>'
    )
    body.append(
        f'<text x="16" y="{_f((y0 + y1) / 2)}" text-anchor="middle" font-size="12" fill="#222" '
        f'transform="rotate(-90 16 {_f((y0 + y1) / 2)})">{escape(y_label)}</text>'
    )
    for i, s in enumerate(series):
        color = s.color or PALETTE[i % len(PALETTE)]
        body.append(f'<g class="series" data-name="{escape(s.name)}">')
        if s.band and len(s.band) == len(s.points) and s.points:
            upper = " ".join(f"{_f(sx(x))},{_f(sy(h))}" for (x, _), (_, h) in zip(s.points, s.band, strict=True))
            lower = " ".join(
                f"{_f(sx(x))},{_f(sy(lo_))}" for (x, _), (lo_, _) in reversed(list(zip(s.points, s.band, strict=True)))
            )
            body.append(f'<polygon points="{upper} {lower}" fill="{color}" opacity="0.13" stroke="none"/>')
        if s.points:
            pts = " ".join(f"{_f(sx(x))},{_f(sy(y))}" for x, y in s.points)
            body.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2.2"/>')
            if len(s.points) <= 30:
                for x, y in s.points:
                    body.append(
                        f'<circle cx="{_f(sx(x))}" cy="{_f(sy(y))}" r="2.8" fill="{color}"><title>{escape(s.name)}: {_tick_label(x)} → {y:.3f}</title></circle>'
                    )
        ly = y1 + 6 + 20 * i
        body.append(
            f'<line x1="{_f(x1 + 24)}" y1="{_f(ly)}" x2="{_f(x1 + 48)}" y2="{_f(ly)}" stroke="{color}" stroke-width="3"/>'
        )
        last = f" ({s.points[-1][1]:.3f})" if s.points else ""
        body.append(
            f'<text x="{_f(x1 + 54)}" y="{_f(ly + 4)}" font-size="12" fill="#111">{escape(_truncate(s.name, 18))}{last}</text>'
        )
        body.append("</g>")
    return _svg(width, height, body, title, "plot lines")


def stacked_bar(counts: Sequence[tuple[str, int, str]], *, title: str = "", width: float = 760.0) -> str:
    """A single 100 % stacked horizontal bar with a legend: ``(label, count, colour)`` per segment."""
    total = sum(max(0, n) for _, n, _ in counts)
    height = 58.0
    body: list[str] = []
    x = 0.0
    if total == 0:
        body.append('<text x="0" y="20" font-size="12" fill="#888">no candidates</text>')
    for label, n, color in counts:
        if n <= 0 or total == 0:
            continue
        w = n / total * width
        body.append(
            f'<rect class="segment" x="{_f(x)}" y="0" width="{_f(w)}" height="26" fill="{color}">'
            f"<title>{escape(label)}: {n} ({n / total:.0%})</title></rect>"
        )
        if w > 28:
            body.append(
                f'<text x="{_f(x + w / 2)}" y="17" text-anchor="middle" font-size="12" fill="#fff" font-weight="600">{n}</text>'
            )
        x += w
    lx = 0.0
    for label, n, color in counts:
        body.append(f'<rect x="{_f(lx)}" y="38" width="12" height="12" fill="{color}"/>')
        text = f"{label} {n}"
        body.append(f'<text x="{_f(lx + 16)}" y="48" font-size="12" fill="#111">{escape(text)}</text>')
        lx += 26 + 7.2 * len(text)
    return _svg(width, height, body, title, "plot stacked")
