"""The self-contained HTML report of a mining run (inline CSS, inline JS, inline SVG; nothing fetched).

Sections: run summary, placebo calibration, retriever comparison with recall@K curves, convergence of the
dataset-level mean hit@5, failure analysis (why each retriever missed a question), one forest plot per case with a
drill-down into every solver call of the case, notes on anything that was missing, and a plain-words guide.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from deltap.mining.plan import plan_vs_spent_rows
from deltap.mining.readability import readability_line, readability_warned
from deltap.report.audit_section import audit_html
from deltap.report.comparison import ComparisonView, read_comparison
from deltap.report.endtoend import endtoend_html
from deltap.report.figures import convergence, hit_at_k, recall_curve
from deltap.report.plots import (
    PALETTE,
    VERDICT_COLORS,
    Series,
    forest_plot,
    interval_rows,
    line_chart,
    marker,
    placebo_rows,
    stacked_bar,
)
from deltap.report.run_data import VERDICTS, CaseRecord, RunData, load_run_dir
from deltap.run_layout import RunDir

__all__ = ["render_html", "write_html_report"]

CONVERGENCE_K = 5
CURVE_KS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 20)

CSS = """
:root { --fg:#111827; --muted:#6b7280; --line:#e5e7eb; --bg:#ffffff; --panel:#f9fafb; --accent:#2563eb; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif; color:var(--fg);
  background:var(--bg); }
header { padding:18px 28px 10px; border-bottom:1px solid var(--line); }
header h1 { margin:0; font-size:22px; } header .sub { color:var(--muted); font-size:13px; word-break:break-all; }
nav { position:sticky; top:0; z-index:2; background:#fff; border-bottom:1px solid var(--line); padding:6px 28px; }
nav a { margin-right:16px; color:var(--accent); text-decoration:none; font-size:13px; }
main { padding:8px 28px 40px; max-width:1180px; }
section { margin-top:22px; } h2 { font-size:18px; margin:0 0 8px; border-bottom:2px solid var(--line); padding-bottom:4px; }
h3 { font-size:15px; margin:14px 0 6px; }
.cards { display:grid; grid-template-columns:repeat(auto-fill,minmax(150px,1fr)); gap:10px; margin:10px 0 14px; }
.card { background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:8px 12px; }
.card.wide { grid-column:span 2; } .card.wide .v { font-size:14px; }
.card .k { color:var(--muted); font-size:12px; } .card .v { font-size:18px; font-weight:600; word-break:break-word; }
table { border-collapse:collapse; margin:6px 0 12px; font-size:13px; }
th, td { border:1px solid var(--line); padding:4px 9px; text-align:left; vertical-align:top; }
th { background:var(--panel); } td.num { text-align:right; font-variant-numeric:tabular-nums; }
.na { color:var(--muted); font-style:italic; }
.ok { color:#166534; font-weight:600; } .warn { color:#b91c1c; font-weight:600; }
.legend { display:flex; flex-wrap:wrap; gap:14px; font-size:12px; color:#374151; margin:4px 0 8px; align-items:center; }
.legend svg { vertical-align:middle; }
details.case { border:1px solid var(--line); border-radius:8px; margin:10px 0; background:#fff; }
details.case > summary { cursor:pointer; padding:8px 12px; background:var(--panel); border-radius:8px; list-style:none; }
details.case > summary::-webkit-details-marker { display:none; }
details.case > summary::before { content:'▸ '; color:var(--muted); } details.case[open] > summary::before { content:'▾ '; }
details.case .body { padding:6px 14px 10px; overflow-x:auto; }
.badge { display:inline-block; border-radius:10px; padding:0 8px; font-size:12px; margin-left:6px; color:#fff; }
.status { background:#374151; } .status-saturated, .status-unsolvable { background:#b45309; } .status-error { background:#b91c1c; }
.status-mined { background:#166534; } .status-budget_exhausted { background:#6b7280; }
.answer { background:#eff6ff; border:1px solid #bfdbfe; border-radius:8px; padding:10px 16px; margin-top:16px; }
.answer p.headline { font-size:16px; margin:4px 0; } .answer p.sub { color:var(--muted); font-size:13px; margin:4px 0; }
.q { font-weight:600; } .ref code { background:#f3f4f6; padding:1px 4px; border-radius:4px; }
.toolbar { display:flex; gap:10px; align-items:center; margin:6px 0; flex-wrap:wrap; }
.toolbar input, .toolbar select, .toolbar button { font:inherit; padding:3px 8px; border:1px solid #d1d5db; border-radius:6px; background:#fff; }
.guide dt { font-weight:600; margin-top:6px; } .guide dd { margin:0 0 4px 16px; }
svg.plot { max-width:100%; height:auto; display:block; }
.pair { display:flex; flex-wrap:wrap; gap:18px; } .pair > div { flex:1 1 480px; min-width:0; }
details.trials { margin:8px 0; } details.trials > summary { cursor:pointer; color:var(--accent); }
ol.cands { columns:2; font-size:12px; margin:4px 0 8px; }
.trialwrap { max-height:420px; overflow:auto; border:1px solid var(--line); }
table.trials { margin:0; font-size:12px; } table.trials td, table.trials th { padding:1px 5px; text-align:center; }
table.trials td:last-child { text-align:left; } tr.o-error td { color:#b91c1c; }
footer { color:var(--muted); font-size:12px; padding:16px 28px; border-top:1px solid var(--line); }
"""

JS = """
(function () {
  'use strict';
  var filter = document.getElementById('case-filter');
  var status = document.getElementById('case-status');
  var count = document.getElementById('case-count');
  var cases = Array.prototype.slice.call(document.querySelectorAll('details.case'));
  function apply() {
    var text = filter ? filter.value.toLowerCase() : '';
    var want = status ? status.value : '';
    var shown = 0;
    cases.forEach(function (el) {
      var ok = (!text || el.getAttribute('data-search').indexOf(text) >= 0) &&
               (!want || el.getAttribute('data-status') === want ||
                (want === 'has-relevant' && el.getAttribute('data-relevant') !== '0'));
      el.style.display = ok ? '' : 'none';
      if (ok) { shown += 1; }
    });
    if (count) { count.textContent = shown + ' of ' + cases.length + ' cases shown'; }
  }
  if (filter) { filter.addEventListener('input', apply); }
  if (status) { status.addEventListener('change', apply); }
  var expand = document.getElementById('expand-all');
  var collapse = document.getElementById('collapse-all');
  if (expand) { expand.addEventListener('click', function () { cases.forEach(function (el) { el.open = true; }); }); }
  if (collapse) { collapse.addEventListener('click', function () { cases.forEach(function (el) { el.open = false; }); }); }
  apply();
})();
"""


def _e(value: Any) -> str:
    return escape(str(value))


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return '<span class="na">–</span>'
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return _e(value)


def _seconds(value: Any) -> str:
    try:
        s = float(value)
    except (TypeError, ValueError):
        return '<span class="na">not recorded</span>'
    if s < 120:
        return f"{s:.1f} s"
    return f"{int(s // 60)} min {s % 60:02.0f} s"


def _na(what: str, why: str) -> str:
    return f'<p class="na">{_e(what)} not available: {_e(why)}</p>'


def _card(key: str, value: str) -> str:
    wide = " wide" if len(value) > 16 else ""
    return f'<div class="card{wide}"><div class="k">{_e(key)}</div><div class="v">{value}</div></div>'


def _legend(outcome_is_logprob: bool) -> str:
    items = []
    for verdict in VERDICTS:
        items.append(
            f'<span><svg width="14" height="14">{marker("circle", 7, 7, 5, VERDICT_COLORS[verdict])}</svg> {verdict}</span>'
        )
    for source, shape in (("gold", "diamond"), ("retrieved", "circle"), ("placebo", "square")):
        items.append(f'<span><svg width="16" height="16">{marker(shape, 8, 8, 5, "#fff")}</svg> {source}</span>')
    items.append("<span>★ in the winning coalition</span>")
    items.append(
        '<span><svg width="22" height="12"><rect width="22" height="12" fill="#eef2f7"/></svg> ±margin (equivalence)</span>'
    )
    unit = "nats" if outcome_is_logprob else "success probability"
    items.append(
        '<span><svg width="12" height="12"><path d="M2,2L10,10M2,10L10,2" stroke="#6b7280" stroke-width="1.4"/></svg>'
        " raw ΔP (difference in means)</span>"
    )
    items.append(f"<span>marker + whisker: effect adjusted for the other candidates, 95% CI ({unit})</span>")
    items.append(
        '<span><svg width="22" height="8"><line x1="1" y1="4" x2="21" y2="4" stroke="#374151" stroke-dasharray="3 2"/>'
        "</svg> the interval the verdict rests on (wider: corrected for the looks and for testing every candidate)</span>"
    )
    return '<div class="legend">' + "".join(items) + "</div>"


# --- sections -----------------------------------------------------------------------------------------------------


def _time_cards(data: RunData) -> list[str]:
    """Wall time and solver time that a rerun cannot reset.

    ``run.json`` records the wall time of the session that wrote it. When that session found every trial already in
    the log (a rerun of a finished run) its wall time says nothing about the mining, so the card says which session
    it is; the solver time comes from the trial log itself (the sum of every logged call's latency) and so covers
    every session.
    """
    cards = []
    calls = data.total_calls()
    this = data.summary.get("calls_this_process")
    wall = data.get("wall_seconds")
    if isinstance(this, int) and isinstance(calls, int) and this < calls:
        cards.append(_card("wall time, last session", f"{_seconds(wall)} ({this:,} of {calls:,} calls)"))
    else:
        cards.append(_card("wall time", _seconds(wall)))
    log = data.trial_log
    if log is not None and log.calls:
        cards.append(_card("solver time (all sessions)", _seconds(log.solver_seconds)))
        per_call = log.seconds_per_call
        if per_call is not None:
            cards.append(_card("solver time per call", f"{per_call:.2f} s"))
    return cards


def _spend_cards(data: RunData) -> list[str]:
    """Tokens in/out and their cost over every session: ``run.json``'s ``spend`` (cost at the run's prices), else the
    trial log's own token counts (no cost). Nothing when no call recorded tokens."""
    raw = data.summary.get("spend")
    spend: dict[str, Any] = raw if isinstance(raw, dict) else {}
    log = data.trial_log
    tokens_in, tokens_out = spend.get("tokens_in"), spend.get("tokens_out")
    if tokens_in is None and log is not None and log.token_calls:
        tokens_in, tokens_out = log.tokens_in, log.tokens_out
    if tokens_in is None:
        return []
    cards = [_card("tokens in / out (all sessions)", f"{int(tokens_in):,} / {int(tokens_out or 0):,}")]
    prices = spend.get("prices") or {}
    if spend.get("cost_usd") is not None and (prices.get("usd_per_million_in") or prices.get("usd_per_million_out")):
        source = prices.get("source", "")
        cards.append(_card("cost", f"${float(spend['cost_usd']):,.2f}" + (f" ({_e(source)})" if source else "")))
    return cards


def _summary(data: RunData) -> str:
    cands = sum(len(c.candidates) for c in data.cases)
    tool = data.get("tool_version") or data.get("tool")
    cards = [
        _card("cases", _fmt(len(data.cases))),
        _card("candidates judged", _fmt(cands)),
        _card("trials", _fmt(data.total_trials())),
        _card("solver calls", _fmt(data.total_calls())),
        *_time_cards(data),
        *_spend_cards(data),
        *[_card(k, _e(v)) for k, v in plan_vs_spent_rows(data.summary.get("plan_vs_spent"))],
        _card("solver", _fmt(data.get("solver_id") or data.get("solver"))),
        _card("outcome", _fmt(data.outcome)),
        _card("seed", _fmt(data.get("seed"))),
        _card("trial budget per case", _fmt(data.get("budget"))),
        _card("FDR level q", _fmt(data.get("q"))),
        _card("inclusion prob. π", _fmt(data.get("pi"))),
        _card("tool", _fmt(tool)),
    ]
    out = ['<section id="summary"><h2>Run summary</h2>', '<div class="cards">', *cards, "</div>"]
    started, ended = data.get("started"), data.get("ended")
    if started or ended:
        out.append(f'<p class="sub">started {_fmt(started)} · ended {_fmt(ended)}</p>')
    status = data.status_counts()
    out.append("<h3>Cases by status</h3>")
    if status:
        out.append("<table><tr><th>status</th><th>cases</th></tr>")
        out += [f'<tr><td>{_e(k)}</td><td class="num">{v}</td></tr>' for k, v in status.items()]
        out.append("</table>")
    else:
        out.append(_na("Case status counts", "no cases in the dataset"))
    verdicts = data.verdict_counts()
    out.append("<h3>Verdicts over all (case, candidate) pairs</h3>")
    segs = [(v, int(verdicts.get(v, 0)), VERDICT_COLORS[v]) for v in VERDICTS]
    segs += [(k, n, "#555") for k, n in verdicts.items() if k not in VERDICTS]
    out.append(stacked_bar(segs, title="verdict counts"))
    gold = [c for case in data.cases for c in case.candidates if "gold" in c.sources]
    if gold:
        confirmed = sum(c.verdict == "relevant" for c in gold)
        out.append(
            f"<p>The benchmark's seeded gold documents: <b>{confirmed} of {len(gold)}</b> came out <i>relevant</i>; "
            f"{sum(c.verdict == 'irrelevant' for c in gold)} proven irrelevant, "
            f"{sum(c.verdict == 'harmful' for c in gold)} harmful, {sum(c.verdict == 'undecided' for c in gold)} undecided.</p>"
        )
    retrieved_rel = sum(
        c.verdict == "relevant" and "gold" not in c.sources and "retrieved" in c.sources
        for case in data.cases
        for c in case.candidates
    )
    if retrieved_rel:
        out.append(
            f"<p>Relevant documents the benchmark did not list (found by the retriever): <b>{retrieved_rel}</b>.</p>"
        )
    if data.trial_outcomes:
        parts = ", ".join(f"{_e(k)}: {v:,}" for k, v in sorted(data.trial_outcomes.items()))
        out.append(f"<p>Trial log outcomes: {parts}.</p>")
    out.append("</section>")
    return "".join(out)


def _placebo(data: RunData) -> str:
    pl = data.placebo()
    out = ['<section id="placebo"><h2>Placebo calibration</h2>']
    out.append(
        "<p>Placebo documents are random documents mixed into every candidate pool as a control group. "
        "They cannot truly matter, so every placebo labelled relevant or harmful is a false positive. "
        "Under Benjamini–Hochberg a null is labelled about q·R/M of the time (R labels among M tests), "
        "so that is the reference the achieved rate is tested against (an exact binomial test).</p>"
    )
    rows = placebo_rows(pl)
    if not rows:
        out.append(_na("Placebo calibration", "this run has no placebo candidates"))
        out.append("</section>")
        return "".join(out)
    nominal = pl.get("nominal")
    ref = (float(nominal), f"nominal {float(nominal):g}") if isinstance(nominal, float | int) else None
    hi = max(0.25, *(r[3] or 0 for r in rows), (ref[0] * 2 if ref else 0))
    out.append(
        interval_rows(
            rows,
            x_label="rate among placebo candidates (95% Wilson interval)",
            x_range=(0.0, min(1.0, hi)),
            reference=ref,
            title="placebo false-positive rate",
        )
    )
    fpr = pl.get("fpr")
    check = pl.get("check") or {}
    if check.get("message"):  # the one result the terminal, run.json and the dataset also print
        cls = "warn" if check.get("failed") else "ok"
        out.append(f'<p><span class="{cls}">{_e(str(check["message"]))}</span>.</p>')
    elif isinstance(fpr, float | int) and ref:
        verdict = (
            '<span class="ok">within the nominal level</span>'
            if fpr <= ref[0]
            else '<span class="warn">above the nominal level</span>'
        )
        out.append(
            f"<p>Achieved false-positive rate <b>{float(fpr):.3f}</b> on {pl['n']} placebo candidates vs nominal {ref[0]:g}: {verdict}.</p>"
        )
    elif isinstance(fpr, float | int):
        out.append(
            f"<p>Achieved false-positive rate <b>{float(fpr):.3f}</b> on {pl['n']} placebo candidates (nominal level not recorded).</p>"
        )
    null = pl.get("null") or {}
    if null.get("used") == "placebo" and all(
        isinstance(null.get(k), float | int) for k in ("center", "spread", "placebos")
    ):
        out.append(
            f"<p>Effects were tested against the <b>placebo null</b>: random text moves the outcome by "
            f"{float(null['center']):+.2f} ± {float(null['spread']):.2f} {_e(str(null.get('unit', '')))} (center ± spread, fitted "
            f"from {int(null['placebos'])} placebos"
            + (
                f"; {100 * float(null['tail_weight']):.0f}% of random texts move it more, with spread "
                f"{float(null.get('tail_spread', 0.0)):.2f}"
                if isinstance(null.get("tail_weight"), float | int) and float(null["tail_weight"]) > 0
                else ""
            )
            + "), so <i>relevant</i> means \u201cmoves it more than random text does\u201d. "
            "Each placebo was tested against the fit without it, which keeps the rate above an honest check.</p>"
        )
        from deltap.mining.empirical_null import describe_topic_null

        topic = describe_topic_null(null)
        if topic:
            out.append(f"<p>{_e(topic[0].upper() + topic[1:])}.</p>")
    elif null.get("reason"):
        out.append(f"<p>Effects were tested against zero: {_e(str(null['reason']))}.</p>")
    per_case = [
        (c.case_id, c.placebo_false_positive_rate) for c in data.cases if c.placebo_false_positive_rate is not None
    ]
    if per_case:
        worst = sorted(per_case, key=lambda t: -(t[1] or 0.0))[:5]
        if worst and (worst[0][1] or 0) > 0:
            out.append(
                "<p>Cases with the highest placebo false-positive rate: "
                + ", ".join(f"{_e(c)} ({v:.2f})" for c, v in worst if v)
                + ".</p>"
            )
    tilt = data.summary.get("tilt") or {}
    if tilt.get("message"):  # deltap.mining.tilt: do retrieved non-gold documents move the outcome more than placebos?
        out.append(
            f'<p><b>Tilt</b>: <span class="{"warn" if tilt.get("large") else "ok"}">{_e(str(tilt["message"]))}</span>.</p>'
        )
    unread = readability_line(data.summary.get("checker") or {})
    if unread:  # deltap.mining.readability: replies read from a declared answer, by the grammar, or not at all
        warn = "warn" if readability_warned(data.summary["checker"]) else "ok"
        out.append(f'<p><b>Checker</b>: <span class="{warn}">{_e(unread)}</span>.</p>')
    out.append("</section>")
    return "".join(out)


def _comparison_table(view: ComparisonView) -> str:
    out = ["<table><tr><th>retriever</th>"]
    out += [f"<th>{_e(m)}</th>" for m in view.metrics]
    out.append("</tr>")
    for system in view.systems:
        label = _e(system) + (" <i>(baseline)</i>" if system == view.baseline else "")
        out.append(f"<tr><td>{label}</td>")
        for metric in view.metrics:
            cell = view.cell(system, metric)
            if cell is None or cell.mean is None:
                out.append('<td class="na">–</td>')
                continue
            txt = f"{cell.mean:.3f}"
            if cell.ci_low is not None and cell.ci_high is not None:
                txt += f' <span class="na">[{cell.ci_low:.3f}, {cell.ci_high:.3f}]</span>'
            if cell.significant:
                txt += ' <b title="significantly different from the baseline">*</b>'
            if cell.wins is not None:
                txt += f'<br><span class="na">W/T/L {cell.wins}/{cell.ties}/{cell.losses}</span>'
            if cell.p_value is not None and system != view.baseline:
                txt += f'<br><span class="na">p={cell.p_value:.3g}</span>'
            out.append(f'<td class="num">{txt}</td>')
        out.append("</tr>")
    out.append("</table>")
    notes = []
    if view.baseline:
        notes.append(f"baseline: {_e(view.baseline)}")
    if view.test:
        notes.append(f"test: {_e(view.test)}")
    if view.correction:
        notes.append(f"correction: {_e(view.correction)}")
    if view.alpha is not None:
        notes.append(f"α = {view.alpha:g}")
    if view.n_queries is not None:
        notes.append(f"{view.n_queries} queries")
    notes.append("* = significant paired difference vs the baseline; W/T/L = queries won / tied / lost vs the baseline")
    out.append(f'<p class="na">{"; ".join(notes)}</p>')
    return "".join(out)


def _query_rule(data: RunData, n_queries: int | None) -> str:
    """Which questions the means are over, and the rule for those without a relevant document (stated once, in
    :data:`deltap.evaluation.ranking.EMPTY_QUERY_RULE`, and quoted here)."""
    from deltap.evaluation.ranking import EMPTY_QUERY_RULE

    empty = [q for q, docs in data.qrels.items() if not any(g > 0 for g in docs.values())]
    n = n_queries if n_queries is not None else len(data.qrels)
    text = f"Means over the {n} questions of the mined qrels (the figures <code>deltap evaluate</code> gives on them)"
    if empty:
        text += f"; {len(empty)} of them without a relevant document: {_e(EMPTY_QUERY_RULE)}"
    return f'<p class="na">{text}.</p>'


FAILURE_K = 5


def _failures(data: RunData, corpus: Any) -> str:
    """Why each retriever missed: :func:`deltap.evaluation.failures.analyze_failures` at K = 5 over the evaluation runs."""
    from deltap.evaluation.failures import BUCKETS, analyze_failures

    out = [
        f'<section id="failures"><h2>Failure analysis: questions whose relevant documents all missed the top {FAILURE_K}</h2>'
    ]
    if not data.runs:
        out.append(_na("Failure analysis", "no retriever runs in evaluation/runs/"))
        return "".join(out) + "</section>"
    qrels = {q: docs for q, docs in data.qrels.items() if any(g > 0 for g in docs.values())}
    if not qrels:
        out.append(_na("Failure analysis", "the verified dataset has no relevant documents yet"))
        return "".join(out) + "</section>"
    texts: dict[str, str] = {c.doc_id: c.text for case in data.cases for c in case.candidates if c.text}
    if corpus is not None:
        texts.update({d.doc_id: d.full_text for d in corpus})
    queries = {c.case_id: c.query for c in data.cases}
    harmful = {c.case_id: [x.doc_id for x in c.candidates if x.verdict == "harmful"] for c in data.cases}
    runs = {name: {q: run.get(q, {}) for q in qrels} for name, run in data.runs.items()}
    try:
        report = analyze_failures(qrels, runs, queries, texts, k=FAILURE_K, harmful=harmful)
    except Exception as exc:  # a report never crashes on one section
        out.append(_na("Failure analysis", f"{type(exc).__name__}: {exc}"))
        return "".join(out) + "</section>"
    out.append(
        "<p>Each miss gets one primary bucket: <b>vocabulary_mismatch</b> (the best relevant document shares few of "
        "the question's words), <b>distractor_overlap</b> (a document ranked above it shares as many words, or is "
        "labelled harmful), <b>specificity_gap</b> (a short or generic question: many documents tie near the top), "
        "<b>unexplained</b> (no lexical signal).</p>"
    )
    if corpus is None:
        out.append(
            '<p class="na">Document texts come from the candidates of the dataset; pass the corpus '
            "(<code>deltap report RUN_DIR --corpus C</code>) to also test distractors outside the pools.</p>"
        )
    counts = report.counts()
    out.append("<table><tr><th>bucket</th>" + "".join(f"<th>{_e(s)}</th>" for s in report.systems) + "</tr>")
    for bucket in BUCKETS:
        out.append(
            f"<tr><td>{_e(bucket)}</td>"
            + "".join(f'<td class="num">{counts[s][bucket]}</td>' for s in report.systems)
            + "</tr>"
        )
    totals = {s: sum(counts[s].values()) for s in report.systems}
    out.append(
        "<tr><th>missed / questions with a relevant document</th>"
        + "".join(f'<td class="num">{totals[s]} / {report.n_queries.get(s, 0)}</td>' for s in report.systems)
        + "</tr></table>"
    )
    if report.failures:
        out.append(
            '<table class="failures"><tr><th>retriever</th><th>question</th><th>bucket</th>'
            "<th>best relevant document (rank)</th><th>question words it lacks</th><th>evidence</th></tr>"
        )
        for f in report.failures:
            ev = f.evidence
            rank = ev.get("best_relevant_rank")
            evidence = []
            if ev.get("harmful_in_top_k"):
                evidence.append("harmful in top K: " + ", ".join(_e(d) for d in ev["harmful_in_top_k"]))
            if ev.get("distractor"):
                evidence.append(
                    f"distractor {_e(ev['distractor'])} at rank {ev.get('distractor_rank')} "
                    f"(covers {float(ev.get('distractor_coverage') or 0):.0%} of the words)"
                )
            evidence.append(f"best relevant covers {float(ev.get('best_relevant_coverage') or 0):.0%}")
            out.append(
                f"<tr><td>{_e(f.system)}</td><td><b>{_e(f.query_id)}</b><br>{_e(f.query)}</td><td>{_e(f.bucket)}</td>"
                f"<td><code>{_e(ev.get('best_relevant', ''))}</code> ({'not retrieved' if rank is None else rank})</td>"
                f"<td>{_e(', '.join(ev.get('missing_terms') or []))}</td><td>{'; '.join(evidence)}</td></tr>"
            )
        out.append("</table>")
    else:
        out.append(f"<p>Every retriever put a relevant document in the top {FAILURE_K} of every question.</p>")
    return "".join(out) + "</section>"


def _retrievers(data: RunData) -> str:
    out = ['<section id="retrievers"><h2>Retriever comparison</h2>']
    view = read_comparison(data.evaluation)
    if view is None:
        why = (
            "evaluation/compare.json not found"
            if data.evaluation is None
            else "evaluation/compare.json has no metric rows"
        )
        out.append(_na("The comparison table", why + " (run `deltap compare` or `deltap demo` to produce it)"))
    else:
        out.append(_comparison_table(view))
        out.append(_query_rule(data, view.n_queries))
        rows: list[tuple[str, float | None, float | None, float | None, str]] = []
        for metric in view.metrics:
            for i, system in enumerate(view.systems):
                cell = view.cell(system, metric)
                if cell is not None:
                    rows.append(
                        (f"{metric} · {system}", cell.mean, cell.ci_low, cell.ci_high, PALETTE[i % len(PALETTE)])
                    )
        if rows and all(r[1] is None or -1e-9 <= r[1] <= 1 + 1e-9 for r in rows):
            out.append(
                interval_rows(
                    rows,
                    x_label="metric value (95% CI)",
                    x_range=(0.0, 1.0),
                    title="retriever metrics",
                    label_width=170.0,
                    row_height=18.0,
                )
            )
    out.append("<h3>Recall curves: hit rate@K (a relevant document in the top K) and recall@K</h3>")
    if not data.runs:
        out.append(_na("Recall@K curves", "no retriever runs in evaluation/runs/"))
    elif not any(any(g > 0 for g in docs.values()) for docs in data.qrels.values()):
        out.append(_na("Recall@K curves", "the verified dataset has no relevant documents yet"))
    else:
        depth = max((len(r) for run in data.runs.values() for r in run.values()), default=10)
        ks = [k for k in CURVE_KS if k <= max(1, depth)]
        curves = {name: recall_curve(data.qrels, run, ks) for name, run in data.runs.items()}
        series = [Series(name, list(zip(ks, c["hit_rate"], strict=True))) for name, c in curves.items()]
        series_r = [Series(name, list(zip(ks, c["recall"], strict=True))) for name, c in curves.items()]
        out.append('<div class="pair"><div>')
        out.append(
            line_chart(series, x_label="K (top-K documents retrieved)", y_label="hit rate@K", title="hit rate at K")
        )
        out.append("</div><div>")
        out.append(line_chart(series_r, x_label="K", y_label="recall@K (share of relevant found)", title="recall at K"))
        out.append("</div></div>")
    out.append("</section>")
    return "".join(out)


def _convergence(data: RunData) -> str:
    out = [f'<section id="convergence"><h2>Convergence of the mean hit rate@{CONVERGENCE_K}</h2>']
    out.append(
        f"<p>Dataset-level mean hit rate@{CONVERGENCE_K} (the seed design's Recall@{CONVERGENCE_K}: share of cases "
        "with a relevant document in the top 5) as cases are added in dataset order, with a 95% Wilson band. "
        "When the line still moves by more than the band's width at the right end, the dataset is too small to rank "
        "retrievers by this metric.</p>"
    )
    order = [c.case_id for c in data.cases]
    series: list[Series] = []
    finals: list[str] = []
    runs = data.runs
    if not runs and data.pool_run:
        # No evaluation runs: use the mining retriever's ranking stored with the candidate pools (its top-k only).
        runs = {"mining retriever (pool top-k)": data.pool_run}
        out.append(
            "<p>No evaluation runs in this folder: the curve uses the ranking of the retriever that built the "
            "candidate pools, as stored in the trial log.</p>"
        )
    for name, run in runs.items():
        pts = convergence(hit_at_k(data.qrels, run, CONVERGENCE_K), order)
        if pts:
            series.append(Series(name, [(p.n_cases, p.mean) for p in pts], band=[(p.low, p.high) for p in pts]))
            last = pts[-1]
            finals.append(f"{_e(name)}: {last.mean:.3f} [{last.low:.3f}, {last.high:.3f}] over {last.n_cases} cases")
    if not series:
        why = (
            "no retriever runs in evaluation/runs/ or pools in trials.sqlite"
            if not runs
            else "no case has a relevant document"
        )
        out.append(_na("The convergence plot", why))
    else:
        out.append('<div class="pair"><div>')
        out.append(
            line_chart(series, x_label="cases added", y_label=f"mean hit rate@{CONVERGENCE_K}", title="convergence")
        )
        out.append(
            "</div><div><p>Final mean with its 95% interval:</p><ul>"
            + "".join(f"<li>{f}</li>" for f in finals)
            + "</ul></div></div>"
        )
    out.append("</section>")
    return "".join(out)


def _case(data: RunData, case: CaseRecord, margin: float | None, min_effect: float | None) -> str:
    counts = case.verdict_counts()
    n_rel = counts.get("relevant", 0)
    search = " ".join([case.case_id, case.query, *(c.doc_id for c in case.candidates)]).lower()
    head = (
        f'<summary><b>{_e(case.case_id)}</b><span class="badge status status-{_e(case.status)}">{_e(case.status)}</span> · '
        + " · ".join(
            [f"{len(case.candidates)} candidates"]
            + [
                f'<span style="color:{VERDICT_COLORS[v]}">{counts.get(v, 0)} {v}</span>'
                for v in VERDICTS
                if counts.get(v, 0)
            ]
            + [f"trials {_fmt(case.trials)}", f"{data.base_label} {_fmt(case.base_success_rate, 2)}"]
        )
        + "</summary>"
    )
    body = [f'<p class="q">{_e(case.query)}</p>']
    if case.reference_answer:
        body.append(f'<p class="ref">Reference answer: <code>{_e(case.reference_answer[:300])}</code></p>')
    facts = [
        f"status <b>{_e(case.status)}</b>",
        f"trials {_fmt(case.trials)}",
        f"solver calls {_fmt(case.calls)}",
        f"{data.base_label} {_fmt(case.base_success_rate)}",
        f"placebo false-positive rate {_fmt(case.placebo_false_positive_rate)}",
        f"wall time {_seconds(case.wall_seconds)}",
    ]
    body.append("<p>" + " · ".join(facts) + "</p>")
    body.append(_likely_not_proven(data, case))
    if case.coalition:
        body.append("<p>Winning coalition: " + ", ".join(f"<code>{_e(d)}</code>" for d in case.coalition) + "</p>")
    elif case.coalition is not None:
        body.append('<p class="na">No winning coalition recorded for this case.</p>')
    if case.candidates:
        body.append(
            forest_plot(
                case.candidates,
                effect_label=data.effect_label,
                margin=margin,
                min_effect=min_effect,
                coalition=case.coalition or (),
                title=f"ΔP per candidate, case {case.case_id}",
            )
        )
    else:
        body.append(_na("Candidates", f"case status is {case.status!r}; it was not mined"))
    body.append(_trials(data, case))
    return (
        f'<details class="case" open data-status="{_e(case.status)}" data-relevant="{n_rel}" data-search="{_e(search)}">'
        + head
        + '<div class="body">'
        + "".join(body)
        + "</div></details>"
    )


def _likely_not_proven(data: RunData, case: CaseRecord) -> str:
    """The case's graded labels beside the verdicts: the undecided candidates that likely help or hurt (issue 35)."""
    rows = [
        c for c in case.candidates if c.verdict == "undecided" and c.graded_call in ("likely helps", "likely hurts")
    ]
    if not rows:
        return ""
    rows.sort(key=lambda c: -abs(c.graded_utility or 0.0))
    unit = data.outcome_kind.unit
    items = "".join(
        f"<li><code>{_e(c.doc_id)}</code> ({_e(c.primary_source)}): <b>{_e(c.graded_text(unit))}</b>, not proven</li>"
        for c in rows
    )
    return f"<p>Graded labels of undecided candidates (shrunken utility, gold prior):</p><ul>{items}</ul>"


MAX_TRIAL_ROWS = 400


def _trials(data: RunData, case: CaseRecord) -> str:
    """The drill-down: every logged solver call of the case, with the candidates in its prompt and its outcome."""
    log = data.trial_log
    rows = log.trials.get(case.case_id, []) if log is not None else []
    if not rows:
        why = "trials.sqlite not found" if log is None else "no trial of this case is in the log"
        return f'<details class="trials"><summary>trials: none to show</summary>{_na("The trial log", why)}</details>'
    pool = log.pools.get(case.case_id, []) if log is not None else []
    by_doc = {c.doc_id: c for c in case.candidates}
    lat = [r.latency for r in rows if r.latency is not None]
    head = (
        f"<summary>every solver call of this case: {len(rows)} "
        f"({', '.join(f'{n} {k}' for k, n in _kind_counts(rows).items())})"
        + (f", {sum(lat):.1f} s of solver time" if lat else "")
        + "</summary>"
    )
    legend = [
        '<p>Columns 1…{m} are the candidates (● = in the prompt of that call):</p><ol class="cands">'.replace(
            "{m}", str(len(pool))
        )
    ]
    for doc_id in pool:
        cand = by_doc.get(doc_id)
        tag = f" — {_e(cand.primary_source)}, <i>{_e(cand.verdict)}</i>" if cand is not None else ""
        if cand is not None and cand.graded_call:
            tag += f" · graded: {_e(cand.graded_text(data.outcome_kind.unit))}"
        legend.append(f"<li><code>{_e(doc_id)}</code>{tag}</li>")
    legend.append("</ol>")
    table = ['<div class="trialwrap"><table class="trials"><tr><th>call</th><th>kind</th>']
    table += [f'<th title="{_e(d)}">{i}</th>' for i, d in enumerate(pool, start=1)]
    table.append("<th>outcome</th><th>value</th><th>s</th><th>answer / detail</th></tr>")
    for n, r in enumerate(rows[:MAX_TRIAL_ROWS], start=1):
        cells = "".join(f"<td>{'●' if on else ''}</td>" for on in r.included[: len(pool)])
        cells += "<td></td>" * max(0, len(pool) - len(r.included))
        value = _fmt(r.value, 3)
        note = r.answer or r.detail
        table.append(
            f'<tr class="o-{_e(r.outcome)}"><td class="num">{n}</td><td>{_e(r.kind)} #{r.index}</td>{cells}'
            f'<td>{_e(r.outcome)}</td><td class="num">{value}</td><td class="num">{_fmt(r.latency, 2)}</td>'
            f"<td>{_e(note[:120])}</td></tr>"
        )
    table.append("</table></div>")
    if len(rows) > MAX_TRIAL_ROWS:
        table.append(
            f'<p class="na">first {MAX_TRIAL_ROWS} of {len(rows)} calls shown; every call is in trials.sqlite.</p>'
        )
    return f'<details class="trials">{head}' + "".join(legend) + "".join(table) + "</details>"


def _kind_counts(rows: Sequence[Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[r.kind] = out.get(r.kind, 0) + 1
    return out


def _cases(data: RunData) -> str:
    margin = data.metadata.get("margin")
    min_effect = data.metadata.get("min_effect")
    m = float(margin) if isinstance(margin, int | float) and not isinstance(margin, bool) else None
    me = float(min_effect) if isinstance(min_effect, int | float) and not isinstance(min_effect, bool) else None
    statuses = sorted({c.status for c in data.cases})
    out = ['<section id="cases"><h2>Cases</h2>']
    out.append(_legend(not data.outcome_kind.binary))
    options = '<option value="">all cases</option><option value="has-relevant">with a relevant document</option>'
    options += "".join(f'<option value="{_e(s)}">status: {_e(s)}</option>' for s in statuses)
    out.append(
        '<div class="toolbar"><input id="case-filter" type="search" placeholder="filter by id, question or document">'
        f'<select id="case-status">{options}</select><button id="expand-all" type="button">expand all</button>'
        '<button id="collapse-all" type="button">collapse all</button><span id="case-count" class="na"></span></div>'
    )
    if not data.cases:
        out.append(_na("Cases", "the dataset has no pairs"))
    out += [_case(data, c, m, me) for c in data.cases]
    out.append("</section>")
    return "".join(out)


def _answer(data: RunData) -> str:
    """The answer first: which retriever is better, by how much, how sure, what would settle it
    (:func:`deltap.report.headline.run_headline`), then the facts it rests on."""
    from deltap.report.headline import run_headline

    lines, details = run_headline(data)
    return (
        '<section id="answer" class="answer"><h2>The answer</h2>'
        + "".join(f'<p class="headline">{_e(line)}</p>' for line in lines)
        + "".join(f'<p class="sub">{_e(line)}</p>' for line in details)
        + "</section>"
    )


def _design_words(data: RunData) -> str:
    """How the run put candidates into its trials, read from the dataset's recorded configuration."""
    config = data.metadata.get("config") if isinstance(data.metadata.get("config"), dict) else {}
    design = str((config or {}).get("design") or "bernoulli")  # logs written before the option existed: bernoulli
    pi = data.get("pi", 0.5)
    if design == "orthogonal":
        return (
            "in blocks of balanced, orthogonal inclusion patterns (this run's design: <i>orthogonal</i>, randomised "
            "Hadamard blocks): each trial's context is a uniformly random half of the candidates, every candidate is "
            "in exactly half of a block's trials, and no two candidates' in/out patterns are correlated, which makes "
            "the estimates tighter than independent coin flips would"
        )
    return (
        f"each candidate in or out independently with probability {_fmt(pi, 2)} "
        f"(this run's design: <i>{_e(design)}</i>, independent coin flips)"
    )


def _guide(data: RunData) -> str:
    """How to read this report: every term and badge it shows, with the design this run used."""
    return GUIDE.replace("{design}", _design_words(data))


GUIDE = """
<section id="guide" class="guide"><h2>How to read this report</h2><dl>
<dt>The answer (top of the page)</dt><dd>One to three sentences: which retriever ranks first on the first metric
against the mined labels and end to end, whether a paired test (Holm-corrected: several pairs are tested) shows it
better at α = 0.05, and about how many questions a paired test with 80% power would need to settle the difference
between the first two, from the spread of their per-question differences (n ≈ 7.85 · s.d.² / Δ²). "None is shown
better" is not "they are equal": it says these questions cannot tell them apart.</dd>
<dt>ΔP (the impact score)</dt><dd>How much putting one document in the model's context raises its chance of
solving the task: P(success with the document) − P(success without it), measured over random trials: {design}.
With the <i>logprob</i> outcome it is the change in the log-probability of the
reference answer, in nats (more sensitive than pass/fail for a small model).</dd>
<dt>Marker, whisker and grey cross</dt><dd>The marker is the document's effect adjusted for the other candidates
(a regression over all inclusion indicators at once, so a strong document in the same trials does not leak into
everyone's estimate); the whisker is its 95% confidence interval: the range of effects compatible with the trials.
A short whisker means many trials; a whisker crossing zero means the data cannot tell the sign yet. The grey cross
is the raw ΔP (mean with the document minus mean without it). Verdicts also correct for peeking at the data after
every batch and for testing many documents at once, so a whisker that just clears zero can still be
<i>undecided</i>: the thin dashed line under the whisker is the interval the verdict rests on (the dataset's
<code>verdict_interval</code>; hover a row for its level and test), and only when it clears zero is the document
labelled.</dd>
<dt>relevant</dt><dd>The whole interval is above zero and the effect passes the minimum size, after correcting for
testing many documents at once (false discovery rate q): the document measurably helps.</dd>
<dt>harmful</dt><dd>Significantly below zero: a distractor that makes the model worse.</dd>
<dt>irrelevant</dt><dd>The interval lies inside the shaded ±margin band: proven not to matter (an equivalence test),
which is stronger than "no effect found".</dd>
<dt>undecided</dt><dd>Not enough evidence either way within the trial budget. Not a negative label.</dd>
<dt>Placebo documents</dt><dd>Random documents added as a control group; the share of them labelled relevant or
harmful is the false-positive rate the run actually achieved.</dd>
<dt>Status of a case (the badge beside its id)</dt><dd><i>mined</i> (green): every candidate was decided before the
trial budget ran out; <i>budget_exhausted</i> (grey): the case used its whole trial budget with some candidates still
<i>undecided</i> — the usual ending of a small run, not an error: the decided labels stand, the undecided ones need
more trials (<code>--budget</code>) or a sharper outcome; <i>saturated</i> (amber): solved even with no documents;
<i>unsolvable</i> (amber): not solved even with every candidate — neither can show what helps, so they are reported
and not mined; <i>error</i> (red): too many solver or checker failures.</dd>
<dt>Marker shapes</dt><dd>◆ a gold document (the benchmark named it), ● a retrieved one (the retriever's top k),
■ a random placebo.</dd>
<dt>q-value</dt><dd>A candidate's p-value after the correction for testing every candidate of the dataset
(Benjamini–Hochberg at the run's FDR level q).</dd>
<dt>Tilt</dt><dd>How many times more the retrieved non-gold documents move the outcome than the random placebos
(the spread of their effects beyond sampling noise), with a bootstrap interval. Clearly above 1: on-topic text moves
this solver more than random text, and the placebo null may be too narrow for the retrieved candidates.</dd>
<dt>Placebo check</dt><dd>Whether the number of placebos labelled relevant or harmful is what the
Benjamini–Hochberg procedure allows (an exact binomial test): "passed", or "FAILED" — the labels of this run should
not be trusted.</dd>
<dt>Retriever tables</dt><dd>Each metric's mean over the questions with its 95% bootstrap interval; <code>*</code>
marks a significant paired difference from the baseline (Holm-corrected); W/T/L counts the questions the retriever
won, tied and lost against the baseline. The scoring rule for questions without judgements is stated under the
answer.</dd>
<dt>Calls vs plan</dt><dd>The solver calls, tokens and time spent, beside what the plan printed before the first call
said they would be at most (the ratio spent / planned). <i>Solver time</i> sums the calls' latencies over every session
of a resumed run; <i>wall time</i> is the last session's.</dd>
<dt>Convergence</dt><dd>The mean hit rate@5 recomputed as questions are added, with a 95% band: if it still moves at the
right end, there are too few questions to rank retrievers by it.</dd>
<dt>Failure buckets</dt><dd>Why a retriever missed every relevant document of a question in its top 5:
<i>vocabulary mismatch</i> (the best relevant document lacks most of the question's words), <i>distractor overlap</i>
(a non-relevant or harmful document that shares as many of its words ranked above it), <i>specificity gap</i> (a short
or generic question that many documents match).</dd>
<dt>End-to-end</dt><dd>Each system's top k put in the prompt and the model asked afresh: success (or the answer's
log-probability) per system with a 95% bootstrap interval, paired randomization tests (Holm over every pair), and
whether an IR metric on the gold or on the mined qrels predicts it: Kendall τ across systems, Pearson r across
questions, each with a bootstrap interval.</dd>
<dt>Qrels audit</dt><dd>The benchmark's gold documents split by the verdict mining reached, and the documents outside
the gold found relevant (+relevant: judgements the benchmark's qrels miss) or harmful (+harmful: distractors).</dd>
</dl></section>
"""


def _notes(data: RunData) -> str:
    if not data.notes:
        return ""
    items = "".join(f"<li>{_e(n)}</li>" for n in data.notes)
    return f'<section id="notes"><h2>Notes on the inputs</h2><ul>{items}</ul></section>'


def render_html(data: RunData, title: str | None = None, corpus: Any = None) -> str:
    """The whole report as one HTML string (self-contained: no external resource is referenced).

    Args:
        data: The run, from :func:`load_run_dir`.
        title: Page title (default: the run folder's name).
        corpus: The corpus the run mined (a :class:`~deltap.documents.Corpus`), for the failure analysis's
            distractor test on documents outside the candidate pools; optional.
    """
    from deltap._version import __version__

    title = title or f"deltap report — {data.path.name}"
    generated = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    nav = "".join(
        f'<a href="#{anchor}">{label}</a>'
        for anchor, label in (
            ("answer", "Answer"),
            ("summary", "Summary"),
            ("placebo", "Placebo calibration"),
            ("retrievers", "Retrievers"),
            *((("endtoend", "End-to-end"),) if RunDir(data.path).endtoend.results.is_file() else ()),
            ("convergence", "Convergence"),
            ("failures", "Failures"),
            ("audit", "Qrels audit"),
            ("cases", "Cases"),
            ("guide", "How to read"),
        )
    )
    parts: Sequence[str] = (
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>",
        f'<header><h1>{_e(title)}</h1><div class="sub">{_e(data.path)} · generated {generated} by deltap {__version__}</div></header>',
        f"<nav>{nav}</nav><main>",
        _answer(data),
        _summary(data),
        _placebo(data),
        _retrievers(data),
        endtoend_html(data.path),
        _convergence(data),
        _failures(data, corpus),
        audit_html(data),
        _cases(data),
        _notes(data),
        _guide(data),
        "</main>",
        f"<footer>deltap {__version__} · self-contained report: no network requests, plots are inline SVG.</footer>",
        f"<script>{JS}</script></body></html>",
    )
    return "\n".join(parts)


def write_html_report(run_dir: str | Path, out: str | Path | None = None, corpus: Any = None) -> Path:
    """Read ``run_dir`` and write its HTML report (default ``RUN_DIR/report.html``); returns the path written.

    ``corpus`` (optional) sharpens the failure analysis; see :func:`render_html`.
    """
    data = load_run_dir(run_dir)
    path = Path(out) if out is not None else RunDir(data.path).report_html
    from deltap._io import write_text_atomic

    return write_text_atomic(path, render_html(data, corpus=corpus))
