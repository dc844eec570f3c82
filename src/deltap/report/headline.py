"""The answer first: the one to three sentences at the top of both reports and at the end of ``deltap endtoend`` and
``deltap demo`` — which retriever is better, by how much, how sure, and what would settle it.

Built with :func:`deltap.evaluation.headline.headline` (the rule for "shown better" and for "questions that would
settle it" is stated there) from the files a run directory holds: ``evaluation/compare.json`` (retrievers scored
against the mined labels) and ``endtoend/results.json`` (each retriever's top k in the prompt). Nothing here computes
a new statistic: every number is one the report's tables show, or the per-question spread they are computed from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltap.evaluation.headline import Contrast, headline

if TYPE_CHECKING:
    from deltap.report.run_data import RunData

__all__ = ["answer_lines", "comparison_headline", "endtoend_headline", "run_headline"]


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and math.isfinite(v) else None


def comparison_headline(ev: Mapping[str, Any], measure: str | None = None) -> list[str]:
    """The retrievers on the mined labels, from a saved comparison (``compare.json``): 1-2 sentences (``[]`` when
    the file has no means to compare)."""
    systems = ev.get("systems")
    measures = ev.get("measures") or []
    if not isinstance(systems, Mapping) or not systems or not measures:
        return []
    stored = ev.get("headline")  # Comparison.headline(), written with the per-question values the file lacks
    if measure is None and isinstance(stored, list) and stored and all(isinstance(x, str) for x in stored):
        lines = [x for x in stored if not x.startswith("Scoring rule")]  # the report states the rule once, below
        return [lines[0].replace(" over ", " against the mined labels over ", 1), *lines[1:]] if lines else []

    def means_of(m: str) -> dict[str, float | None]:
        return {str(s): _num((e.get("means") or {}).get(m)) for s, e in systems.items() if isinstance(e, Mapping)}

    def differ(m: str) -> bool:
        vals = [v for v in means_of(m).values() if v is not None]
        return len(vals) > 1 and max(vals) - min(vals) > 1e-12

    # the first metric that tells the systems apart (all tie: the first), as Comparison.headline chooses
    metric = measure or next((str(m) for m in measures if differ(str(m))), str(measures[0]))
    means = means_of(metric)
    baseline = str(ev.get("baseline") or "")
    key = "p_fisher_holm" if ev.get("test", "fisher") == "fisher" else "p_t_holm"
    contrasts = []
    for s, e in systems.items():
        test = ((e.get("tests") or {}) if isinstance(e, Mapping) else {}).get(metric)
        if isinstance(test, Mapping) and _num(test.get("delta")) is not None:
            contrasts.append(
                Contrast(str(s), baseline, float(test["delta"]), _num(test.get(key)), _num(test.get("sd_delta")))
            )
    n = int(ev.get("n_queries") or 0)
    name = "Fisher randomization test" if ev.get("test", "fisher") == "fisher" else "paired t-test"
    alpha = _num(ev.get("alpha")) or 0.05
    return headline(
        f"{metric} (mined labels)", n, means, contrasts, alpha=alpha, test=f"{name} against {baseline}, Holm",
        short=metric,
    )  # fmt: skip


def _sd(values: Sequence[float]) -> float | None:
    if len(values) < 2:
        return None
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def endtoend_headline(data: Mapping[str, Any]) -> list[str]:
    """The end-to-end answer, from ``results.json`` (or :meth:`EndToEndResult.to_dict`): which retriever or run
    makes the model succeed most, shown or not by the paired randomization tests (Holm over every pair), and how
    many questions would settle it. The controls (no context, gold, ...) are left out of "which is better" and the
    no-context one is quoted beside it."""
    summary = data.get("summary") or {}
    kinds = {s.get("name"): s.get("kind") for s in data.get("systems", []) if isinstance(s, Mapping)}
    compared = [s for s in summary if kinds.get(s) != "control"] or list(summary)
    if len(compared) == 1 and "none" in summary:  # one retriever: the question is whether it beats no context
        compared.append("none")
    if not compared:
        return []
    means = {s: _num((summary.get(s) or {}).get("mean")) for s in compared}
    per_case = [row for row in (data.get("per_case") or {}).values() if isinstance(row, Mapping)]
    contrasts = []
    for p in data.get("pairs", []):
        a, b = p.get("a"), p.get("b")
        if a in means and b in means and _num(p.get("diff")) is not None:
            diffs = [
                float(r[a]) - float(r[b]) for r in per_case if _num(r.get(a)) is not None and _num(r.get(b)) is not None
            ]
            contrasts.append(Contrast(a, b, float(p["diff"]), _num(p.get("p_holm")), _sd(diffs)))
    logprob = data.get("outcome") == "logprob"
    what = "log-probability of the answer" if logprob else "success rate"
    lines = headline(
        f"end-to-end {what} (top {data.get('k')} in the prompt)", int(data.get("complete_cases") or 0), means,
        contrasts, unit=" nats" if logprob else "", fmt=".2f", test="randomization test, Holm over every pair",
        short=f"end-to-end {what}",
    )  # fmt: skip
    none = _num((summary.get("none") or {}).get("mean"))
    if none is not None and lines and "none" not in compared:
        lines[0] = lines[0].rstrip(".") + f"; no context at all: {none:.2f}."
    return lines


def _mining_line(data: RunData) -> str:
    """What mining found, in one sentence: gold confirmed, candidates decided, and the placebo check."""
    cands = [c for case in data.cases for c in case.candidates]
    gold = [c for c in cands if "gold" in c.sources]
    decided = sum(c.verdict in ("relevant", "harmful", "irrelevant") for c in cands)
    relevant = sum(c.verdict == "relevant" for c in cands)
    parts = [
        f"Mined {len(data.cases)} questions: {relevant} relevant documents, {decided} of {len(cands)} candidates decided"
    ]
    if gold:
        parts.append(f"{sum(c.verdict == 'relevant' for c in gold)} of {len(gold)} gold documents confirmed relevant")
    check = (data.placebo() or {}).get("check")
    if isinstance(check, Mapping) and isinstance(check.get("failed"), bool) and check.get("placebos"):
        parts.append("placebo check FAILED: do not trust the labels" if check["failed"] else "placebo check passed")
    return "; ".join(parts) + "."


def run_headline(data: RunData) -> tuple[list[str], list[str]]:
    """``(headline, details)``: at most three sentences answering which retriever is better — on the mined labels
    (``evaluation/compare.json``), end to end (``endtoend/results.json``), and the number of questions that would
    settle the first difference left open — then the lines a reader checks them against (what mining found, the
    scoring rule)."""
    from deltap.evaluation.ranking import EMPTY_QUERY_RULE
    from deltap.report.endtoend import read_endtoend

    comp = comparison_headline(data.evaluation) if isinstance(data.evaluation, Mapping) else []
    e2e_data = read_endtoend(data.path)
    e2e = endtoend_headline(e2e_data) if e2e_data else []
    sentences = [s for s in (comp[:1] + e2e[:1]) if s]
    settle = [s for s in (comp[1:2] + e2e[1:2]) if s.startswith("About ")]
    out = sentences + settle[: max(0, 3 - len(sentences))]
    details = [_mining_line(data)]
    if comp:
        details.append(f"Scoring rule: {EMPTY_QUERY_RULE}.")
    if not out:
        out = [
            f"No retriever comparison in this run yet: deltap compare --qrels {data.path / 'qrels.jsonl'} --retriever "
            f"bm25,dense --corpus CORPUS --into {data.path} scores retrievers against these labels; deltap endtoend "
            "asks the model with each one's top k."
        ]
    return out, details


def answer_lines(run_dir: str | Path) -> list[str]:
    """The lines ``deltap mine`` and ``deltap demo`` end with (before the placebo check): what mining found, then the
    answer (:func:`run_headline`) read back from the run directory the command wrote."""
    from deltap.report.run_data import load_run_dir

    lines, details = run_headline(load_run_dir(run_dir))
    return [details[0], *lines]
