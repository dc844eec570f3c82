"""The "End-to-end" section of a run's report: success per system with intervals beside the IR metrics, how the
checker read the replies (one line, the ``checker`` block of a ``pass`` run), the metric validity table and its
sentence — read from ``RUN_DIR/endtoend/results.json`` (``deltap endtoend``)."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from deltap.mining.readability import readability_line, readability_warned
from deltap.run_layout import RunDir

__all__ = ["VALIDITY_RULE", "endtoend_html", "endtoend_markdown", "read_endtoend"]


def _rule() -> str:
    from deltap.evaluation.ranking import EMPTY_QUERY_RULE

    return (
        f"Scoring rule (as deltap evaluate): {EMPTY_QUERY_RULE}; the validity table uses the questions every qrels "
        "judges, success per system every question."
    )


#: how the validity table scores questions without judgements, stated under it in every output
VALIDITY_RULE = _rule()


def read_endtoend(run_dir: str | Path) -> dict[str, Any] | None:
    """``RUN_DIR/endtoend/results.json``, or ``None`` when absent or unreadable."""
    try:
        data = RunDir(run_dir).endtoend.read_results()
    except OSError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("summary"), dict) else None


def _f(v: Any, digits: int = 3, sign: bool = False) -> str:
    if not isinstance(v, int | float):
        return "—"
    return f"{v:+.{digits}f}" if sign else f"{v:.{digits}f}"


def _ci(ci: Any, digits: int = 3, sign: bool = False) -> str:
    if not isinstance(ci, list) or len(ci) != 2 or any(not isinstance(x, int | float) for x in ci):
        return ""
    return f" [{_f(ci[0], digits, sign)}, {_f(ci[1], digits, sign)}]"


def _systems(data: dict[str, Any]) -> list[str]:
    summary = data["summary"]
    return sorted(
        summary, key=lambda s: -(summary[s].get("mean") if isinstance(summary[s].get("mean"), int | float) else -1e300)
    )


def _metric_columns(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        r
        for r in (data.get("validity") or {}).get("rows", [])
        if r.get("qrels") in ("gold", "deltap", "deltap (signed)")
    ]


def _rows(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The success table: system, kind, success [CI], then each metric's mean per qrels."""
    cols = _metric_columns(data)
    kinds = {s.get("name"): s.get("kind", "") for s in data.get("systems", []) if isinstance(s, dict)}
    pct = int(round(100 * float(data.get("confidence", 0.95))))
    head = [
        "system",
        "kind",
        f"{data.get('unit', 'success')} [{pct}% CI]",
        *(f"{c['metric']} ({c['qrels']})" for c in cols),
    ]
    body = []
    for s in _systems(data):
        row = data["summary"][s]
        body.append(
            [
                s,
                str(kinds.get(s, "")),
                _f(row.get("mean")) + _ci(row.get("ci")),
                *(_f((c.get("means") or {}).get(s)) for c in cols),
            ]
        )
    return head, body


def _validity(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    head = ["metric", "qrels", "Kendall τ across systems [95% CI]", "r across questions [95% CI]"]
    rows = (data.get("validity") or {}).get("rows", [])
    return head, [
        [
            r["metric"],
            r["qrels"],
            _f(r.get("tau"), 2, True) + _ci(r.get("tau_ci"), 2, True),
            _f(r.get("r"), 2, True) + _ci(r.get("r_ci"), 2, True),
        ]
        for r in rows
    ]


def _single_doc_note(data: dict[str, Any]) -> str:
    """One sentence on the eRAG single-document trials (``""`` when the run did not ask documents alone)."""
    single = data.get("single_doc")
    if not isinstance(single, dict):
        return ""
    return (
        f"eRAG single-document utility: {single.get('documents', '?')} documents asked alone "
        f"(label: {single.get('label', '?')}); the erag_* rows are IR metrics over each system's top "
        f"{data.get('k')} with those labels. A label alone cannot see a document's effect in company."
    )


def _checker(data: dict[str, Any]) -> tuple[str, bool] | None:
    """How the checker read the run's replies (:func:`deltap.mining.readability.readability_line`) and whether that
    warns; ``None`` without the block (a ``logprob`` run, or a results.json written before it)."""
    block = data.get("checker")
    line = readability_line(block) if isinstance(block, dict) else None
    return None if line is None else (line, readability_warned(block or {}))


def _summary_lines(v: dict[str, Any]) -> list[str]:
    """The validity sentence as short lines (:func:`deltap.evaluation.headline.clause_lines`; the words are
    :func:`deltap.endtoend.validity.summary_sentence`'s), Markdown: the lead in bold, one bullet per clause."""
    from deltap.evaluation.headline import clause_lines

    lines = clause_lines(str(v.get("summary", "")), width=10_000)
    if len(lines) > 1 and not lines[0].startswith("- "):
        return [f"**{lines[0]}**", "", *lines[1:]]
    return [f"**{line}**" for line in lines]


def _summary_html(v: dict[str, Any]) -> str:
    from deltap.evaluation.headline import clause_lines

    lines = clause_lines(str(v.get("summary", "")), width=10_000)
    lead = [x for x in lines if not x.startswith("- ")]
    items = [x[2:] for x in lines if x.startswith("- ")]
    out = "".join(f"<p><strong>{escape(x)}</strong></p>" for x in lead)
    if items:
        out += "<ul>" + "".join(f"<li>{escape(x)}</li>" for x in items) + "</ul>"
    return out


def endtoend_html(run_dir: str | Path) -> str:
    """The section (``""`` when the run has no end-to-end results)."""
    data = read_endtoend(run_dir)
    if data is None:
        return ""

    def table(head: list[str], body: list[list[str]]) -> str:
        th = "".join(f"<th>{escape(h)}</th>" for h in head)
        trs = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in body)
        return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"

    run = data.get("run") or {}
    v = data.get("validity") or {}
    sig = [p for p in data.get("pairs", []) if isinstance(p.get("p_holm"), int | float) and p["p_holm"] <= 0.05]
    out = ['<section id="endtoend"><h2>End-to-end: which system makes the model succeed</h2>',
           f"<p>Each system's top {escape(str(data.get('k')))} in the prompt, the solver asked with fresh seeds, the case's own "
           f"checker ({escape(str(data.get('outcome')))}); {data.get('complete_cases')} of {data.get('cases')} cases with a value for every "
           f"system; {escape(str(run.get('calls', '?')))} solver calls, {escape(str(run.get('cached', 0)))} answered from an identical prompt.</p>",
           table(*_rows(data)),
           f"<p>Paired randomization tests, Holm-corrected over {len(data.get('pairs', []))} pairs: {len(sig)} significant at 0.05"
           + ("".join(f"; {escape(p['a'])} − {escape(p['b'])} = {_f(p.get('diff'), 3, True)}" for p in sig[:6])) + ".</p>"]  # fmt: skip
    checker = _checker(data)
    if checker is not None:  # the same line as the mining section's, over the end-to-end trials
        out.append(
            f'<p><b>Checker</b>: <span class="{"warn" if checker[1] else "ok"}">{escape(checker[0])}</span>.</p>'
        )
    if v.get("rows"):
        out += ["<h3>Which qrels predict success on this data</h3>", table(*_validity(data)), _summary_html(v)]
        out += [f"<p class='note'>{escape(n)}</p>" for n in [*dict.fromkeys(v.get("notes", [])), VALIDITY_RULE]]
        if _single_doc_note(data):
            out.append(f"<p class='note'>{escape(_single_doc_note(data))}</p>")
    out.append("</section>")
    return "".join(out)


def endtoend_markdown(run_dir: str | Path) -> list[str]:
    """The section as Markdown lines (``[]`` when the run has no end-to-end results)."""
    data = read_endtoend(run_dir)
    if data is None:
        return []

    def table(head: list[str], body: list[list[str]]) -> list[str]:
        return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *("| " + " | ".join(r) + " |" for r in body)]

    lines = ["## End-to-end", "", *table(*_rows(data)), ""]
    checker = _checker(data)
    if checker is not None:
        lines += [f"**{'Checker (warning)' if checker[1] else 'Checker'}:** {checker[0]}", ""]
    v = data.get("validity") or {}
    if v.get("rows"):
        lines += [
            "### Which qrels predict success",
            "",
            *table(*_validity(data)),
            "",
            *_summary_lines(v),
            "",
            *(f"- {n}" for n in [*dict.fromkeys(v.get("notes", [])), VALIDITY_RULE]),
            "",
        ]
        if _single_doc_note(data):
            lines += [_single_doc_note(data), ""]
    return lines
