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

__all__ = ["build_dataset", "placebo_warning", "run_summary", "summary_lines", "write_run_directory"]


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
) -> VerifiedDataset:
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
        ),
        "estimator": (
            "OLS on all inclusion indicators (linear probability model for pass); tests use the classical OLS SE with t tails,"
            " regression_effect reports the robust HC2 SE; delta_p/CI = difference in means (Newcombe hybrid score CI for"
            " pass, Welch for logprob)"
        ),
        "looks": look_schedule(cfg),
        "placebo_calibration": placebo,
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
    rd.write_json(rd.run_json, run, sort_keys=False)


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
    return entry
