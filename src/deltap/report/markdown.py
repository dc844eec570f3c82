"""A short Markdown summary of a mining run, for pull requests and terminals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deltap.mining.plan import plan_vs_spent_rows
from deltap.mining.readability import readability_line, readability_warned
from deltap.report.audit_section import audit_markdown
from deltap.report.comparison import read_comparison
from deltap.report.endtoend import endtoend_markdown
from deltap.report.figures import convergence, hit_at_k, wilson_interval
from deltap.report.run_data import VERDICTS, RunData, load_run_dir
from deltap.run_layout import RunDir

__all__ = ["render_markdown", "write_markdown_report"]


def _v(value: object, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _spend_rows(data: RunData) -> list[tuple[str, Any]]:
    """Tokens in/out (all sessions) and the cost, as the HTML report's spend cards."""
    raw = data.summary.get("spend")
    spend: dict[str, Any] = raw if isinstance(raw, dict) else {}
    log = data.trial_log
    tokens_in, tokens_out = spend.get("tokens_in"), spend.get("tokens_out")
    if tokens_in is None and log is not None and log.token_calls:
        tokens_in, tokens_out = log.tokens_in, log.tokens_out
    if tokens_in is None:
        return []
    rows: list[tuple[str, Any]] = [("tokens in / out, all sessions", f"{int(tokens_in):,} / {int(tokens_out or 0):,}")]
    prices = spend.get("prices") or {}
    if spend.get("cost_usd") is not None and (prices.get("usd_per_million_in") or prices.get("usd_per_million_out")):
        rows.append(
            (
                f"cost (USD; {(spend.get('prices') or {}).get('source', 'given prices')})",
                f"{float(spend['cost_usd']):.4f}",
            )
        )
    return rows


def render_markdown(data: RunData, top_docs: int = 3) -> str:
    """The run as Markdown: summary table, verdicts, placebo calibration, retrievers, one line per case."""
    from deltap.report.headline import run_headline

    answer, details = run_headline(data)
    lines = [f"# deltap report — {data.path.name}", "", "## The answer", ""]
    for sentence in answer:  # one paragraph each
        lines += [f"**{sentence}**", ""]
    lines += [*(f"- {d}" for d in details), ""]
    lines += _summary_lines(data)
    lines += _retriever_lines(data)
    lines += endtoend_markdown(data.path)
    lines += _case_lines(data, top_docs)
    lines += ["", *_graded_lines(data)]
    lines += audit_markdown(data)
    if data.notes:
        lines += ["", "## Notes", *(f"- {n}" for n in data.notes)]
    return "\n".join(lines) + "\n"


def _summary_lines(data: RunData) -> list[str]:
    """The summary table, then the status and verdict counts, the placebo calibration and the tilt."""
    lines: list[str] = []
    wall = data.get("wall_seconds")
    calls = data.total_calls()
    this = data.summary.get("calls_this_process")
    wall_label = "wall time (s)"
    if isinstance(this, int) and isinstance(calls, int) and this < calls:
        wall_label = f"wall time of the last session (s; {this} of {calls} calls)"
    log = data.trial_log
    rows = [
        ("cases", len(data.cases)),
        ("candidates judged", sum(len(c.candidates) for c in data.cases)),
        ("trials", data.total_trials()),
        ("solver calls", calls),
        (wall_label, None if wall is None else f"{float(wall):.1f}"),
        ("solver time, all sessions (s)", f"{log.solver_seconds:.1f}" if log is not None and log.calls else None),
        (
            "solver time per call (s)",
            f"{log.seconds_per_call:.2f}" if log is not None and log.seconds_per_call else None,
        ),
        *_spend_rows(data),
        *plan_vs_spent_rows(data.summary.get("plan_vs_spent")),
        ("solver", data.get("solver_id") or data.get("solver")),
        ("outcome", data.outcome),
        ("seed", data.get("seed")),
        ("trial budget per case", data.get("budget")),
        ("FDR level q", data.get("q")),
    ]
    lines += ["| | |", "|---|---|"] + [f"| {k} | {_cell(_v(v))} |" for k, v in rows] + [""]
    status = data.status_counts()
    lines.append("**Cases by status:** " + (", ".join(f"{k} {v}" for k, v in status.items()) or "none"))
    verdicts = data.verdict_counts()
    lines.append("**Verdicts:** " + ", ".join(f"{v} {verdicts.get(v, 0)}" for v in VERDICTS))
    gold = [c for case in data.cases for c in case.candidates if "gold" in c.sources]
    if gold:
        lines.append(
            f"**Gold documents confirmed relevant:** {sum(c.verdict == 'relevant' for c in gold)} of {len(gold)}"
        )
    pl = data.placebo()
    if pl.get("n"):
        flagged = int(pl.get("labelled_relevant") or 0) + int(pl.get("labelled_harmful") or 0)
        low, high = wilson_interval(min(flagged, int(pl["n"])), int(pl["n"]))
        nominal = pl.get("nominal")
        state = ""
        if isinstance(nominal, float | int) and isinstance(pl.get("fpr"), float | int):
            state = " — within nominal" if float(pl["fpr"]) <= float(nominal) else " — **above nominal**"
        check = pl.get("check") or {}
        if check.get("message"):  # the one result the terminal, run.json and the dataset also print
            state = ""
        lines.append(
            f"**Placebo false-positive rate:** {_v(pl.get('fpr'))} ({flagged}/{pl['n']}, 95% CI [{low:.3f}, {high:.3f}]) "
            f"vs nominal {nominal if nominal is None else format(float(nominal), 'g')}{state}"
        )
        if check.get("message"):
            lines.append(
                f"**{'Placebo check FAILED' if check.get('failed') else 'Placebo check'}:** {check['message']}"
            )
    else:
        lines.append("**Placebo calibration:** not available (no placebo candidates)")
    null = pl.get("null") or {}
    if null.get("used") == "placebo" and isinstance(null.get("center"), float | int):
        from deltap.mining.empirical_null import describe_null, describe_topic_null

        lines.append(f"**Null:** placebo effects, {describe_null(null)}")
        topic = describe_topic_null(null)
        if topic:
            lines.append(f"**Null:** {topic}")
    tilt = data.summary.get("tilt") or {}
    if tilt.get("message"):  # deltap.mining.tilt
        lines.append(f"**{'Tilt (large)' if tilt.get('large') else 'Tilt'}:** {tilt['message']}")
    unread = readability_line(data.summary.get("checker") or {})
    if unread:  # deltap.mining.readability: how the checker read the replies (declared, by the grammar, unreadable)
        lines.append(
            f"**{'Checker (warning)' if readability_warned(data.summary['checker']) else 'Checker'}:** {unread}"
        )
    lines.append("")

    return lines


def _retriever_lines(data: RunData) -> list[str]:
    """The retriever comparison (``evaluation/compare.json``) and the hit rate@5 of every run."""
    lines: list[str] = []
    view = read_comparison(data.evaluation)
    lines.append("## Retrievers")
    if view is None:
        lines.append("Retriever comparison not available (no evaluation/compare.json).")
    else:
        lines.append("| retriever | " + " | ".join(view.metrics) + " |")
        lines.append("|---|" + "---|" * len(view.metrics))
        for system in view.systems:
            cells = []
            for metric in view.metrics:
                cell = view.cell(system, metric)
                if cell is None or cell.mean is None:
                    cells.append("–")
                    continue
                txt = f"{cell.mean:.3f}"
                if cell.ci_low is not None and cell.ci_high is not None:
                    txt += f" [{cell.ci_low:.3f}, {cell.ci_high:.3f}]"
                if cell.significant:
                    txt += " *"
                cells.append(txt)
            name = system + (" (baseline)" if system == view.baseline else "")
            lines.append(f"| {_cell(name)} | " + " | ".join(cells) + " |")
        lines.append("")
        lines.append("`*` significant paired difference vs the baseline.")
        from deltap.evaluation.ranking import EMPTY_QUERY_RULE

        empty = [q for q, d in data.qrels.items() if not any(g > 0 for g in d.values())]
        if empty:
            lines.append(
                f"{len(empty)} of the {len(data.qrels)} questions have no relevant document: {EMPTY_QUERY_RULE}."
            )
    if data.runs:
        order = [c.case_id for c in data.cases]
        finals = []
        for name, run in data.runs.items():
            pts = convergence(hit_at_k(data.qrels, run, 5), order)
            if pts:
                finals.append(
                    f"{name} {pts[-1].mean:.3f} [{pts[-1].low:.3f}, {pts[-1].high:.3f}] (n={pts[-1].n_cases})"
                )
        if finals:
            lines.append("")
            lines.append("**Mean hit rate@5 with 95% Wilson interval:** " + "; ".join(finals))
    lines.append("")

    return lines


def _case_lines(data: RunData, top_docs: int) -> list[str]:
    """One table row per case: status, trials, base rate, the top relevant documents, harmful and undecided."""
    lines: list[str] = []
    lines.append("## Cases")
    base = data.outcome_kind.short
    lines.append(f"| case | status | trials | {base} | relevant (top ΔP) | harmful | undecided |")
    lines.append("|---|---|---|---|---|---|---|")
    for case in data.cases:
        counts = case.verdict_counts()
        rel = sorted((c for c in case.candidates if c.verdict == "relevant"), key=lambda c: -(c.delta_p or 0.0))
        shown = ", ".join(f"`{c.doc_id}` ({_v(c.delta_p, 2)})" for c in rel[:top_docs])
        if len(rel) > top_docs:
            shown += f", +{len(rel) - top_docs} more"
        lines.append(
            f"| {_cell(case.case_id)} | {case.status} | {_v(case.trials)} | {_v(case.base_success_rate, 2)} | "
            f"{_cell(shown) or '–'} | {counts.get('harmful', 0)} | {counts.get('undecided', 0)} |"
        )
    return lines


def _graded_lines(data: RunData) -> list[str]:
    """The graded labels beside the verdicts (issue 35): undecided candidates whose shrunken utility likely helps."""
    rows = [
        (case.case_id, c)
        for case in data.cases
        for c in case.candidates
        if c.verdict == "undecided" and c.graded_call == "likely helps"
    ]
    graded = sum(1 for case in data.cases for c in case.candidates if c.graded_call is not None)
    if not graded:
        return []
    unit = data.outcome_kind.unit
    lines = [
        "## Likely helps, not proven",
        f"{len(rows)} undecided candidates of {graded} graded likely help by their graded label (shrunken utility > 0, "
        "local false sign rate <= 0.1, gold prior; docs/graded-labels.md).",
    ]
    if rows:
        rows.sort(key=lambda r: -(r[1].graded_utility or 0.0))
        lines += ["", "| case | document | source | graded label |", "|---|---|---|---|"]
        for case_id, c in rows[:20]:
            lines.append(f"| {_cell(case_id)} | `{c.doc_id}` | {c.primary_source} | {_cell(c.graded_text(unit))} |")
        if len(rows) > 20:
            lines.append(f"| … | {len(rows) - 20} more | | |")
    return [*lines, ""]


def write_markdown_report(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Read ``run_dir`` and write its Markdown summary (default ``RUN_DIR/report.md``)."""
    data = load_run_dir(run_dir)
    path = Path(out) if out is not None else RunDir(data.path).report_md
    from deltap._io import write_text_atomic

    return write_text_atomic(path, render_markdown(data))
