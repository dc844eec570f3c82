"""The self-contained HTML page of a pipeline check (``deltap check --html``), in the mining report's style.

Sections: the verdict and one row per criterion; the latency histogram (every timed search, with p50, p95 and the
limit); the calibration plot (top-1 score of every in-scope and out-of-scope query against the score threshold,
the picture behind ``--calibrate``); every query with its verdict and top hits; the settings. Inline CSS and SVG
only: nothing is fetched.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from deltap.report.plots import AXIS, GRID, _f, _svg, _x_axis, nice_ticks

__all__ = ["calibration_plot", "latency_histogram", "render_check_html", "write_check_html"]

STATUS_COLORS = {"PASS": "#166534", "FAIL": "#b91c1c", "SKIP": "#6b7280"}
IN_COLOR = "#2563eb"
OUT_COLOR = "#ea580c"

CHECK_CSS = """
.verdict { display:inline-block; font-size:18px; font-weight:700; padding:2px 12px; border-radius:8px; color:#fff; }
.verdict.PASS { background:#166534; } .verdict.FAIL { background:#b91c1c; } .verdict.CAL { background:#374151; }
td.PASS { color:#166534; font-weight:600; } td.FAIL { color:#b91c1c; font-weight:600; } td.SKIP { color:#6b7280; }
tr.fail td { background:#fef2f2; }
"""


def _e(value: Any) -> str:
    return escape(str(value))


def latency_histogram(
    samples_ms: Sequence[float],
    *,
    p50: float | None = None,
    p95: float | None = None,
    limit: float | None = None,
    title: str = "latency",
    x_label: str = "milliseconds per search",
    bins: int = 20,
    width: float = 620.0,
    height: float = 230.0,
) -> str:
    """A histogram of ``samples_ms`` with vertical lines at p50, p95 and the gate's limit (SVG)."""
    xs = [float(x) for x in samples_ms]
    left, right, top, bottom = 48.0, 16.0, 26.0, 46.0
    x0, x1, y0, y1 = left, width - right, top, height - bottom
    if not xs:
        return _svg(width, 60, [f'<text x="10" y="30" fill="{AXIS}">no timed searches</text>'], title, "plot")
    marks = [v for v in (p50, p95, limit) if v is not None]
    lo = 0.0
    hi = max([*xs, *marks]) * 1.05 or 1.0
    step = (hi - lo) / bins
    counts = [0] * bins
    for x in xs:
        counts[min(bins - 1, int((x - lo) / step))] += 1
    top_count = max(counts) or 1

    def sx(v: float) -> float:
        return x0 + (v - lo) / (hi - lo) * (x1 - x0)

    body = _x_axis(x0, x1, y1, lo, hi, x_label, grid_top=y0)
    for t in nice_ticks(0, top_count, 4):
        y = y1 - t / top_count * (y1 - y0)
        body.append(f'<line x1="{_f(x0)}" y1="{_f(y)}" x2="{_f(x1)}" y2="{_f(y)}" stroke="{GRID}"/>')
        body.append(
            f'<text x="{_f(x0 - 6)}" y="{_f(y + 4)}" text-anchor="end" font-size="11" fill="{AXIS}">{t:g}</text>'
        )
    body.append(
        f'<text x="12" y="{_f((y0 + y1) / 2)}" font-size="12" fill="#222" transform="rotate(-90 12 {_f((y0 + y1) / 2)})" '
        'text-anchor="middle">searches</text>'
    )
    for b, n in enumerate(counts):
        if not n:
            continue
        bx0, bx1 = sx(lo + b * step), sx(lo + (b + 1) * step)
        h = n / top_count * (y1 - y0)
        body.append(
            f'<rect class="bar" x="{_f(bx0 + 0.5)}" y="{_f(y1 - h)}" width="{_f(max(1.0, bx1 - bx0 - 1))}" height="{_f(h)}" '
            f'fill="{IN_COLOR}" fill-opacity="0.75"><title>{n} searches in [{lo + b * step:.2f}, {lo + (b + 1) * step:.2f}) ms</title></rect>'
        )
    for value, label, color, dash in (
        (p50, "p50", "#111", "3,3"),
        (p95, "p95", "#7c3aed", "6,3"),
        (limit, "limit", "#b91c1c", ""),
    ):
        if value is None:
            continue
        x = sx(value)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        body.append(
            f'<line x1="{_f(x)}" y1="{_f(y0 - 4)}" x2="{_f(x)}" y2="{_f(y1)}" stroke="{color}" stroke-width="1.6"{dash_attr}/>'
        )
        body.append(f'<text x="{_f(x + 3)}" y="{_f(y0 + 6)}" font-size="11" fill="{color}">{label} {value:.1f}</text>')
    return _svg(width, height, body, title, "plot latency")


def calibration_plot(
    in_scores: Sequence[float],
    out_scores: Sequence[float],
    threshold: float | None,
    *,
    title: str = "top-1 score per query",
    width: float = 620.0,
) -> str:
    """One dot per query at its top-1 score, in-scope on one row and out-of-scope on the other, with the score
    threshold as a vertical line: a good threshold has every in-scope dot to its right and every out-of-scope dot
    to its left (SVG)."""
    rows = [
        ("in-scope", [float(x) for x in in_scores], IN_COLOR),
        ("out-of-scope", [float(x) for x in out_scores], OUT_COLOR),
    ]
    every = [x for _, xs, _ in rows for x in xs] + ([threshold] if threshold is not None else [])
    left, right, top, row_h = 110.0, 16.0, 24.0, 44.0
    height = top + row_h * 2 + 48
    x0, x1 = left, width - right
    y_axis = top + row_h * 2
    if not every:
        return _svg(width, 60, [f'<text x="10" y="30" fill="{AXIS}">no scores to plot</text>'], title, "plot")
    lo, hi = min(every), max(every)
    pad = (hi - lo) * 0.08 or 0.05
    lo, hi = lo - pad, hi + pad

    def sx(v: float) -> float:
        return x0 + (v - lo) / (hi - lo) * (x1 - x0)

    body = _x_axis(x0, x1, y_axis, lo, hi, "top-1 score of the query", grid_top=top)
    for r, (label, xs, color) in enumerate(rows):
        cy = top + row_h * r + row_h / 2
        body.append(
            f'<text x="{_f(x0 - 8)}" y="{_f(cy + 4)}" text-anchor="end" font-size="12" fill="#222">{label} ({len(xs)})</text>'
        )
        for i, x in enumerate(sorted(xs)):
            jitter = ((i * 7) % 5 - 2) * 3.0  # deterministic spread so equal scores stay visible
            body.append(
                f'<circle class="dot" cx="{_f(sx(x))}" cy="{_f(cy + jitter)}" r="4" fill="{color}" fill-opacity="0.8" '
                f'stroke="#111" stroke-width="0.6"><title>{label}: {x:.4f}</title></circle>'
            )
    if threshold is not None:
        x = sx(threshold)
        body.append(
            f'<line x1="{_f(x)}" y1="{_f(top - 6)}" x2="{_f(x)}" y2="{_f(y_axis)}" stroke="#b91c1c" stroke-width="1.8"/>'
        )
        body.append(
            f'<text x="{_f(x + 4)}" y="{_f(top - 8)}" font-size="11" fill="#b91c1c">threshold {threshold:.3f}</text>'
        )
    return _svg(width, height, body, title, "plot calibration")


def _as_dict(report: Any) -> dict[str, Any]:
    return dict(report.to_dict()) if hasattr(report, "to_dict") else dict(report)


def _latency_section(data: Mapping[str, Any]) -> str:
    lat = data.get("latency") or {}
    settings = data.get("settings") or {}
    out = ['<section id="latency"><h2>Latency</h2>']
    shown = False
    for key, label, limit_key in (
        ("embed_plus_search", "embedding + search", "p95_embed_search_ms"),
        ("end_to_end", "end to end (as the application sees it)", "p95_end_to_end_ms"),
    ):
        stats = lat.get(key)
        if not isinstance(stats, Mapping) or not stats.get("samples_ms"):
            continue
        shown = True
        limit = settings.get(limit_key)
        out.append(f"<h3>{_e(label)}: {int(stats['n'])} timed searches</h3>")
        out.append(
            f"<p>p50 {stats['p50_ms']:.1f} ms · p95 {stats['p95_ms']:.1f} ms · p99 {stats['p99_ms']:.1f} ms · max "
            f"{stats['max_ms']:.1f} ms"
            + (f" · the gate needs p95 below {float(limit):g} ms" if limit is not None else "")
            + "</p>"
        )
        out.append(
            latency_histogram(
                stats["samples_ms"],
                p50=stats["p50_ms"],
                p95=stats["p95_ms"],
                limit=float(limit) if limit is not None else None,
                title=f"latency, {label}",
            )
        )
    if not shown:
        why = (
            "the latency gate was skipped or this was a --calibrate run"
            if not lat
            else "no timed searches were recorded"
        )
        out.append(f'<p class="na">Latency histogram not available: {_e(why)}.</p>')
    return "".join(out) + "</section>"


def _calibration_section(data: Mapping[str, Any]) -> str:
    cal = data.get("calibration")
    settings = data.get("settings") or {}
    queries = data.get("queries") or []
    out = ['<section id="calibration"><h2>Calibration: in-scope vs out-of-scope scores</h2>']
    if isinstance(cal, Mapping):
        ins, outs, thr = cal.get("in_scores") or [], cal.get("out_scores") or [], cal.get("threshold")
        out.append(
            f"<p>Proposed <code>score_threshold: {float(thr or 0.0):.4f}</code>: keeps {cal.get('in_kept')}/{cal.get('in_total')} "
            f"in-scope queries and rejects {cal.get('out_rejected')}/{cal.get('out_total')} out-of-scope ones "
            f"(Youden J {float(cal.get('youden_j', 0)):.2f}; the distributions "
            + ("separate" if cal.get("separable") else "<b>overlap</b>")
            + ").</p>"
        )
    else:
        ins = [q["top_score"] for q in queries if q.get("kind") == "in_scope" and q.get("top_score") is not None]
        outs = [q["top_score"] for q in queries if q.get("kind") == "out_of_scope" and q.get("top_score") is not None]
        thr = settings.get("score_threshold")
        out.append(
            "<p>Every query's top-1 score against the suite's <code>score_threshold</code>: out-of-scope queries "
            "must stay left of the line; in-scope queries right of it. <code>deltap check --calibrate</code> "
            "proposes a threshold.</p>"
        )
    if not ins and not outs:
        out.append('<p class="na">Calibration plot not available: no query returned a hit.</p>')
    else:
        out.append(calibration_plot(ins, outs, float(thr) if thr is not None else None))
    return "".join(out) + "</section>"


def _criteria_section(data: Mapping[str, Any]) -> str:
    out = ['<section id="criteria"><h2>Gates</h2><table><tr><th>status</th><th>criterion</th><th>measured</th></tr>']
    for c in data.get("criteria") or []:
        status = str(c.get("status"))
        out.append(
            f'<tr><td class="{_e(status)}">{_e(status)}</td><td>{_e(c.get("criterion"))}</td><td>{_e(c.get("figure"))}</td></tr>'
        )
    out.append("</table>")
    for c in data.get("criteria") or []:
        fails = (c.get("details") or {}).get("failures") or []
        if c.get("status") == "FAIL" and fails:
            out.append(f"<h3>{_e(c.get('criterion'))}: why it failed</h3><ul>")
            out += [f"<li>{_e(f)}</li>" for f in fails[:20]]
            out.append("</ul>")
    return "".join(out) + "</section>"


def _queries_section(data: Mapping[str, Any]) -> str:
    queries = data.get("queries") or []
    out = ['<section id="queries"><h2>Queries</h2>']
    if not queries:
        return "".join(out) + '<p class="na">No queries.</p></section>'
    out.append(
        "<table><tr><th>kind</th><th>query</th><th>passed</th><th>first expected rank</th><th>top score</th>"
        "<th>top hits (section)</th></tr>"
    )
    for q in queries:
        passed = q.get("passed")
        mark = "–" if passed is None else ("yes" if passed else "no")
        hits = "<br>".join(
            f"<code>{_e(h.get('doc_id'))}</code> {float(h.get('score') or 0):.3f}"
            + (f" ({_e(h['section'])})" if h.get("section") else "")
            for h in (q.get("hits") or [])[:5]
        )
        top = q.get("top_score")
        missing = q.get("missing") or []
        query = f"<b>{_e(q.get('query_id'))}</b><br>{_e(q.get('query'))}" + (
            f'<br><span class="na">missing: {_e(", ".join(missing))}</span>' if missing else ""
        )
        out.append(
            f'<tr class="{"fail" if passed is False else ""}"><td>{_e(str(q.get("kind", "")).replace("_", "-"))}</td><td>{query}</td>'
            f'<td>{mark}</td><td class="num">{_e(q.get("first_rank") if q.get("first_rank") is not None else "–")}</td>'
            f'<td class="num">{"–" if top is None else f"{float(top):.4f}"}</td><td>{hits}</td></tr>'
        )
    return "".join(out) + "</table></section>"


def render_check_html(report: Any, title: str | None = None) -> str:
    """The page as one HTML string. ``report`` is a :class:`~deltap.check.PipelineCheckResult` or its ``to_dict()``."""
    from deltap._version import __version__
    from deltap.report.html import CSS

    data = _as_dict(report)
    title = title or f"deltap check — {Path(str(data.get('suite', 'suite'))).name}"
    generated = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    if data.get("calibration") is not None and not data.get("criteria"):
        verdict = '<span class="verdict CAL">CALIBRATION</span> no gate judged; a threshold is proposed below'
    elif data.get("passed"):
        verdict = '<span class="verdict PASS">PASS</span> every enabled gate passed (exit code 0)'
    else:
        n = sum(c.get("status") == "FAIL" for c in data.get("criteria") or [])
        verdict = f'<span class="verdict FAIL">FAIL</span> {n} criterion{"" if n == 1 else "s"} failed (exit code 1)'
    settings = data.get("settings") or {}
    rows = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in settings.items())
    nav = "".join(
        f'<a href="#{a}">{label}</a>'
        for a, label in (
            ("criteria", "Gates"),
            ("latency", "Latency"),
            ("calibration", "Calibration"),
            ("queries", "Queries"),
            ("settings", "Settings"),
        )
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{CSS}{CHECK_CSS}</style></head><body>",
        f'<header><h1>{_e(title)}</h1><div class="sub">{_e(data.get("suite"))} against {_e(data.get("retriever"))} · '
        f"generated {generated} by deltap {__version__}</div></header>",
        f"<nav>{nav}</nav><main>",
        f'<section id="verdict"><p>{verdict}</p></section>',
        _criteria_section(data),
        _latency_section(data),
        _calibration_section(data),
        _queries_section(data),
        f'<section id="settings"><h2>Settings</h2><table>{rows}</table></section>',
        "</main>",
        f"<footer>deltap {__version__} · self-contained page: no network requests, plots are inline SVG.</footer>",
        "</body></html>",
    ]
    return "\n".join(parts)


def write_check_html(report: Any, path: str | Path, title: str | None = None) -> Path:
    """Write :func:`render_check_html` to ``path`` (atomically: a temporary file, then a rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(render_check_html(report, title), encoding="utf-8")
    tmp.replace(path)
    return path
