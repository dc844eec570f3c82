"""What a mining run writes: the verified dataset (``retrieval_dataset.yaml``), its qrels, and the run summary
(``run.json``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from deltap.mining.config import MiningConfig
from deltap.mining.results import CaseResult
from deltap.mining.verdicts import EMPIRICAL, VerdictPolicy

if TYPE_CHECKING:
    from deltap.dataset import VerifiedDataset
    from deltap.documents import Corpus
    from deltap.run_layout import RunDir

__all__ = [
    "build_dataset",
    "graded_line",
    "graded_summary",
    "placebo_warning",
    "run_summary",
    "summary_lines",
    "write_graded_qrels",
    "write_run_directory",
]


def _base_rate(r: CaseResult) -> float | None:
    v = r.preflight.get("preflight_none")
    return float(np.mean(v)) if v else None


def build_dataset(
    results: list[CaseResult],
    corpus: Corpus,
    cfg: MiningConfig,
    policy: VerdictPolicy,
    solver_id: str,
    placebo: dict[str, Any],
    version: str,
    started: float,
    graded: dict[str, Any] | None = None,
) -> VerifiedDataset:
    """The verified dataset of a run; ``graded`` is ``metadata.graded`` (:func:`deltap.mining.labels.graded_step`)."""
    import datetime as dt

    from deltap.dataset import VerifiedDataset

    pairs = [_pair(r, corpus, cfg) for r in results]
    metadata = {
        "tool": "deltap",
        "tool_version": version,
        "created": dt.datetime.fromtimestamp(started, dt.timezone.utc).isoformat(timespec="seconds"),
        "solver": solver_id,
        "outcome": cfg.outcome,
        "seed": cfg.seed,
        "q": cfg.q,
        "budget": cfg.budget,
        "pi": cfg.pi,
        "min_effect": policy.min_effect,
        "margin": policy.margin,
        "grade_mapping": policy.grade_mapping(),
        "multiple_testing": (
            "Benjamini-Hochberg over every (case, candidate) of the dataset, one family per direction (relevant: effect > 0,"
            " harmful: effect < 0), on one-sided p-values over the planned looks: group-sequential repeated p-values"
            " (O'Brien-Fleming shape) against the zero null, Simes over the looks against a fitted (placebo/on-topic) null"
        ),
        "null": (
            "placebo: each effect tested against the distribution of the placebo documents' effects (center, spread and"
            " any heavy tail in placebo_calibration.null; each placebo against the fit without it)"
            + (
                "; and every gold or retrieved candidate also against the run's retrieved non-gold documents' effects"
                " (--null topic: placebo_calibration.null.topic), the larger p-value counting"
                if placebo.get("null", {}).get("requested") == "topic"
                else ""
            )
            if placebo.get("null", {}).get("used") == "placebo"
            else "zero: each effect tested against no effect"
            + (f" ({placebo['null']['reason']})" if placebo.get("null", {}).get("reason") else "")
        )
        + (
            f"; chosen by --null auto before any label: {placebo['null']['auto']['reason']}"
            if placebo.get("null", {}).get("auto")
            else ""
        ),
        "estimator": (
            "OLS on all inclusion indicators (linear probability model for pass); tests use the classical OLS SE with t tails,"
            " regression_effect reports the robust HC2 SE; delta_p/CI = difference in means (Newcombe hybrid score CI for"
            " pass, Welch for logprob)"
        ),
        "looks": look_schedule(cfg),
        "placebo_calibration": placebo,
        **({"graded": graded} if graded else {}),
        # how the run was executed (workers, cases in flight) is not what the dataset is: it goes to run.json only
        "config": {k: v for k, v in cfg.to_dict().items() if k not in MiningConfig.EXECUTION_KEYS},
    }
    return VerifiedDataset(metadata, pairs)


def look_schedule(cfg: MiningConfig) -> str:
    """The looks in words, never past the budget: ``every 8 trials from 16 to the budget 90, ...``, or one look at the
    budget when the first interim look would come after it."""
    tail = "; each case's own looks are in its metadata"
    if cfg.first_look >= cfg.budget:
        return (
            f"one look, at the budget of {cfg.budget} trials (the first interim look, at {cfg.first_look} trials, is past "
            f"it)" + tail
        )
    return (
        f"every {cfg.batch} trials from {cfg.first_look} to the budget {cfg.budget}, interim looks only from 2m + 1"
        " trials (m = the case's candidates)" + tail
    )


def run_summary(
    results: list[CaseResult],
    cfg: MiningConfig,
    policy: VerdictPolicy,
    solver_id: str,
    placebo: dict[str, Any],
    version: str,
    started: float,
    ended: float,
) -> dict[str, Any]:
    import datetime as dt

    by_status: dict[str, int] = {}
    verdicts: dict[str, int] = {"relevant": 0, "harmful": 0, "irrelevant": 0, "undecided": 0}
    # pytest checks by where the candidate ran: "shared" ones carry the residual risk of the test process
    processes = {"separate": {"cases": 0, "checks": 0}, "shared": {"cases": 0, "checks": 0}}
    for r in results:
        by_status[r.status] = by_status.get(r.status, 0) + 1
        where = str(r.info.get("candidate_process", "")).split(" ", 1)[0]
        if where in processes:
            processes[where]["cases"] += 1
            processes[where]["checks"] += int(r.calls)  # every solver call of a pass-outcome case is one check
        if r.X is not None:
            for row in r.candidates:
                verdicts[row["verdict"]] += 1
    iso = lambda t: dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat(timespec="seconds")  # noqa: E731
    graded = graded_summary(results)
    return {
        "tool": "deltap",
        "tool_version": version,
        "solver": solver_id,
        "outcome": cfg.outcome,
        "seed": cfg.seed,
        "budget": cfg.budget,
        "q": cfg.q,
        "pi": cfg.pi,
        "min_effect": policy.min_effect,
        "started": iso(started),
        "ended": iso(ended),
        "wall_seconds": round(ended - started, 3),
        "calls": int(sum(r.calls for r in results)),
        "cases": len(results),
        "cases_by_status": by_status,
        "verdicts": verdicts,
        **({"graded": graded} if graded else {}),
        **({"pytest_checks": processes} if any(p["cases"] for p in processes.values()) else {}),
        "placebo": {
            k: placebo[k]
            for k in (
                "n",
                "labelled_relevant",
                "labelled_harmful",
                "fpr",
                "nominal",
                "effect_abs",
                "null",
                "check",
                "warning",
                "labelled",
            )
            if k in placebo
        },
    }


#: "likely helps, not proven" candidates listed by name in run.json (the rest are counted)
LISTED_LIKELY = 5


def graded_summary(results: list[CaseResult]) -> dict[str, Any]:
    """What the graded labels add to the verdicts, per prior (``run.json`` → ``graded``): candidates that likely help
    or hurt (lfsr ≤ :data:`~deltap.mining.shrinkage.LFSR_LIKELY`), how many of those the gate left undecided, and the
    strongest "likely helps, not proven" ones by name. Empty when no candidate is graded."""
    from deltap.mining.shrinkage import LFSR_LIKELY

    out: dict[str, Any] = {}
    for prior in ("gold", "no_gold"):
        helps = hurts = helps_open = gold_open = graded = 0
        listed: list[dict[str, Any]] = []
        for r in results:
            for row in r.candidates:
                label = (row.get("graded") or {}).get(prior)
                if not label or label.get("utility") is None:
                    continue
                graded += 1
                likely = float(label["lfsr"]) <= LFSR_LIKELY
                helps += likely and label["utility"] > 0
                hurts += likely and label["utility"] < 0
                if likely and label["utility"] > 0 and row["verdict"] == "undecided":
                    helps_open += 1
                    gold_open += "gold" in row["sources"]
                    listed.append(
                        {"case_id": r.case.case_id, "doc_id": row["doc_id"], "sources": list(row["sources"]), **label}
                    )
        if graded:
            listed.sort(key=lambda d: -float(d["utility"]))
            out[prior] = {
                "graded": graded,
                "likely_helps": helps,
                "likely_hurts": hurts,
                "likely_helps_undecided": helps_open,
                "gold_likely_helps_undecided": gold_open,
                "examples": listed[:LISTED_LIKELY],
            }
    return out


def graded_line(run: dict[str, Any], unit: str = "") -> str | None:
    """One line on the graded labels of a run (from ``run.json``'s ``graded``), or ``None`` without them."""
    g = (run.get("graded") or {}).get("gold")
    if not g:
        return None
    line = (
        f"graded labels (gold prior): {g['likely_helps']} of {g['graded']} candidates likely help and "
        f"{g['likely_hurts']} likely hurt (lfsr <= 0.1); {g['likely_helps_undecided']} likely help but are not proven "
        f"(undecided; {g['gold_likely_helps_undecided']} of them gold)"
    )
    ex = g.get("examples") or []
    if ex:
        e = ex[0]
        lo, hi = e["ci"]
        line += (
            f", e.g. {e['doc_id']} for {e['case_id']}: {float(e['utility']):+.2f}{(' ' + unit) if unit else ''} "
            f"[{float(lo):+.2f}, {float(hi):+.2f}], lfsr {float(e['lfsr']):.3f}"
        )
    return line


def write_run_directory(out: Path, dataset: VerifiedDataset, run: dict[str, Any]) -> None:
    """Write the run directory's outputs, each atomically: ``retrieval_dataset.yaml``, the qrels (``qrels/test.tsv``
    with ``qrels/provenance.json``, ``qrels.trec``, ``qrels.jsonl``) and ``run.json``."""
    from deltap.dataset import write_dataset, write_dataset_qrels
    from deltap.run_layout import RunDir

    rd = RunDir(out)
    rd.root.mkdir(parents=True, exist_ok=True)
    write_dataset(dataset, rd.dataset)
    prov = {
        k: dataset.metadata[k]
        for k in (
            "tool",
            "tool_version",
            "solver",
            "outcome",
            "seed",
            "q",
            "budget",
            "pi",
            "min_effect",
            "grade_mapping",
        )
    }
    write_dataset_qrels(dataset, rd.root, prov)
    write_graded_qrels(dataset, rd)
    rd.write_json(rd.run_json, run, sort_keys=False)


def write_graded_qrels(dataset: VerifiedDataset, rd: RunDir) -> dict[str, Path]:
    """The graded qrels of both priors (``qrels/graded_<prior>.tsv|.trec|.jsonl``, :meth:`RunDir.graded_qrels`),
    each grade from the shrunken utility (``metadata.graded.grade_mapping``); the JSONL records carry the mapping as
    their ``provenance``. Nothing is written for a dataset without graded labels. Returns the paths written."""
    from deltap.dataset import dataset_graded_qrels, dataset_qrels_records
    from deltap.qrels import QrelsRecord, write_beir_qrels, write_qrels_jsonl, write_trec_qrels
    from deltap.run_layout import GRADED_PRIORS

    meta = dataset.metadata.get("graded") or {}
    out: dict[str, Path] = {}
    queries = {r.query_id: r for r in dataset_qrels_records(dataset)}
    by_id = {str(p["id"]): p for p in dataset.pairs}
    for prior in GRADED_PRIORS:
        qrels = dataset_graded_qrels(dataset, prior)
        if not qrels:
            continue
        prov = {"tool": "deltap", "labels": f"graded ({prior} prior)", "grade_mapping": meta.get("grade_mapping")}
        records = []
        for qid, docs in qrels.items():
            pair = by_id[qid]
            known = queries.get(qid)
            extra = dict(known.extra) if known is not None else {}
            extra["provenance"] = prov
            records.append(QrelsRecord(qid, str(pair.get("query", "")), docs, pair.get("reference_answer"), extra))
        out[f"{prior}/beir"] = write_beir_qrels(qrels, rd.graded_qrels(prior, "beir"))
        out[f"{prior}/trec"] = write_trec_qrels(qrels, rd.graded_qrels(prior, "trec"))
        out[f"{prior}/jsonl"] = write_qrels_jsonl(records, rd.graded_qrels(prior, "jsonl"))
    return out


def placebo_warning(placebo: dict[str, Any], null_info: dict[str, Any]) -> str:
    """The :class:`~deltap.mining.results.PlaceboCalibrationWarning` of a run whose placebo check failed: the check's
    message, how far random text moved the outcome, and what the placebo null could not absorb."""
    from deltap.mining.empirical_null import describe_null

    return (
        placebo["check"]["message"]
        + "; the solver may react to any extra text, or the candidate generation is unsound"
        + (
            f"; placebo effects reach {placebo['effect_abs']['max']:.2f} {placebo['effect_abs']['unit']} "
            f"(90th percentile {placebo['effect_abs']['p90']:.2f}): a --min-effect above that would label only "
            "documents that move the outcome more than random text does"
            if "effect_abs" in placebo
            else ""
        )
        + (
            f"; the placebo null ({describe_null(null_info)}) did not absorb them: most placebos barely move "
            "the outcome and a few move it a lot (heavy-tailed text effects; with few placebos the fit cannot "
            "tell such a tail from outliers) — more placebos (--placebo) sharpen both the null and this check"
            if null_info.get("used") == "placebo"
            else ""
        )
    )


def summary_lines(run: dict[str, Any]) -> list[tuple[str, str]]:
    """What ``deltap mine`` prints when it is done, read from ``run.json`` (:func:`run_summary`): ``(line, style)``
    pairs, ``style`` a Rich style (``""``: plain). The placebo check's own lines
    (:func:`deltap.mining.placebo_check.summary_lines`) come last and are not included."""
    from deltap.mining.empirical_null import describe_null, describe_topic_null
    from deltap.mining.readability import readability_line, readability_warned
    from deltap.mining.spend import spend_line

    new_calls = run.get("calls_this_process", run["calls"])
    resumed = (  # say what each count is: the log's calls for these cases, split by the session that made them
        f" in the trial log ({new_calls} made by this session, {run['calls'] - new_calls} by earlier sessions)"
        if new_calls < run["calls"]
        else ""
    )
    out = [(f"mined {run['cases']} case(s) in {run['wall_seconds']:.1f}s, {run['calls']} calls{resumed}: "
            f"{run['cases_by_status']}", "bold")]  # fmt: skip
    ex = run.get("execution") or {}
    if ex.get("executor") == "ray" or int(ex.get("cases_in_flight") or 1) > 1:
        out.append(
            (
                f"executed: {ex.get('executor')}, {ex.get('workers')} worker(s), {ex.get('cases_in_flight')} case(s) in flight",
                "",
            )
        )
    out.append((f"verdicts: {run['verdicts']}", ""))
    unread = readability_line(run.get("checker") or {})
    if unread:
        out.append((unread, "yellow" if readability_warned(run["checker"]) else ""))
    from deltap.outcomes import outcome_kind

    graded = graded_line(run, outcome_kind(str(run.get("outcome") or "pass")).unit)
    if graded:
        out.append((graded, ""))
    if run.get("spend"):
        out.append((spend_line(run["spend"]), ""))
    if run.get("plan_vs_spent"):
        from deltap.mining.plan import plan_vs_spent_lines

        out.extend((line, "") for line in plan_vs_spent_lines(run["plan_vs_spent"]))
    shared = (run.get("pytest_checks") or {}).get("shared") or {}
    if shared.get("cases"):
        out.append(
            (
                f"pytest checks in the test process (shared mode, see --require-separate): {shared['cases']} case(s), {shared['checks']} check(s)",
                "",
            )
        )
    pl = run["placebo"]
    out.append(
        (
            f"placebo false-positive rate: {pl['fpr']:.3f} ({pl['labelled_relevant']} relevant + {pl['labelled_harmful']} harmful of {pl['n']}; BH reference q·R/M {pl['nominal']:.4f})",
            "",
        )
    )
    if "effect_abs" in pl:
        ea = pl["effect_abs"]
        out.append(
            (
                f"placebo |estimated effect| (random text, estimation noise included): median {ea['median']:.2f}, 90th percentile {ea['p90']:.2f}, max {ea['max']:.2f} {ea['unit']}",
                "",
            )
        )
    nl = pl.get("null") or {}
    if nl.get("auto"):
        out.append((f"null: --null auto — {nl['auto']['reason']}", ""))
    if nl.get("used") == "placebo":
        out.append((f"null: placebo effects, {describe_null(nl)}", ""))
        topic = describe_topic_null(nl)
        if topic:
            out.append((f"null: {topic}", ""))
    elif nl.get("reason") and not nl.get("too_few"):  # too few placebos: said once, last, by the placebo check's lines
        out.append((f"null: zero ({nl['reason']})", ""))
    tilt = run.get("tilt") or {}
    if tilt.get("message") and not tilt.get("large"):  # a large tilt is a warning
        out.append((str(tilt["message"]), ""))
    return out  # fmt: skip


def _pair(r: CaseResult, corpus: Corpus, cfg: MiningConfig) -> dict[str, Any]:
    """One case of the dataset: its candidates with their statistics, and its metadata."""
    cands = [_candidate(row, corpus) for row in r.candidates]
    n_plac = sum(1 for c in r.pool.candidates if c.is_placebo)
    plac_fp = sum(
        1
        for c, row in zip(r.pool.candidates, r.candidates, strict=True)
        if c.is_placebo and row["verdict"] in ("relevant", "harmful")
    )
    meta = {
        "trials": int(len(r.y)) if r.y is not None else 0,
        "base_success_rate": _base_rate(r),
        "mean_outcome": float(np.mean(r.y)) if r.y is not None and len(r.y) else None,
        "status": r.status,
        "placebo_false_positive_rate": (plac_fp / n_plac) if n_plac and r.X is not None else None,
        "seed": cfg.seed,
        "calls": r.calls,
        "errors": r.errors,
        "wall_seconds": round(r.wall_seconds, 3),
        "missing_gold": list(dict.fromkeys([*(r.case.metadata.get("gold_missing") or []), *r.pool.missing_gold])),
        "dropped_candidates": r.pool.dropped,
        "preflight": r.preflight,
        **{
            k: v
            for k, v in r.info.items()
            if k
            in (
                "reason",
                "looks",
                "interaction_pairs",
                "coalition_check",
                "intercept",
                "context",
                "calls_by_kind",
                "spend",
                "candidate_process",
            )
        },
    }
    return {
        "id": r.case.case_id,
        "query": r.case.query,
        "reference_answer": r.case.reference_answer,
        "candidates": cands,
        "coalition": r.coalition,
        "coalitions": r.coalitions,
        "metadata": meta,
    }


def _candidate(row: dict[str, Any], corpus: Corpus) -> dict[str, Any]:
    """One candidate of a case in the dataset: the document, its verdict and its statistics."""
    doc = corpus.get(row["doc_id"])
    entry = {
        "doc_id": row["doc_id"],
        "fqn": row["doc_id"],
        "text": doc.text if doc is not None else "",
        "source": row["sources"],
        "empirical_relevance": EMPIRICAL[row["verdict"]],
        "verdict": row["verdict"],
    }
    entry.update(
        {
            k: row.get(k)
            for k in (
                "delta_p",
                "ci_low",
                "ci_high",
                "p_in",
                "p_out",
                "n_in",
                "n_out",
                "p_value",
                "q_value",
                "grade",
            )
        }
    )
    if "regression_effect" in row:
        entry["regression_effect"] = row["regression_effect"]
    if "verdict_interval" in row:
        entry["verdict_interval"] = row["verdict_interval"]
    if row.get("graded"):
        entry["graded"] = row["graded"]
    return entry
