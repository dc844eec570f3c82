"""Graded labels on finished real runs (issue 35 item 1): what the shrinkage makes of real effects, no solver call.

    python benchmarks/bench_graded_real.py RUN_DIR [RUN_DIR ...]

Reads each run's ``retrieval_dataset.yaml`` (the regression effect and standard error of every candidate; the residual
degrees of freedom from the case's trials and candidates), and, when the run has ``endtoend/results.json`` with
single-document values, the single-document lifts. Grades every candidate under both priors with
:func:`deltap.mining.shrinkage.graded_labels` — with and without the lifts — and prints per prior: each group's fit,
the verdicts against the graded calls, how many gold documents the gate left undecided that likely help (and how
many have a positive utility at all), and how far the placebos shrink. A run mined before graded labels existed is
graded here as ``deltap mine`` would have graded it: the classical standard error ``mine`` uses
(``regression_effect.se_classical``) is refitted from the design trials of its trial log (read-only), and retrieval ranks
come from the pool order (gold, then retrieved by rank, then placebos).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from deltap.dataset import candidate_verdict, read_dataset
from deltap.mining.labels import GRADE_STEPS
from deltap.mining.shrinkage import LFSR_LIKELY, PRIORS, CandidateEstimate, graded_labels, single_doc_lifts
from deltap.mining.verdicts import default_policy
from deltap.run_layout import RunDir


def _classical_se(path: Path) -> dict[str, np.ndarray]:
    """Per case, the classical OLS standard error of every candidate, refitted from the design trials of the trial
    log (columns in pool order), as ``mine`` computes it; ``{}`` without a readable log."""
    from deltap.mining.trials import TrialLogReader

    from deltap.mining.estimate import ols_hc

    rd = RunDir(path)
    if not rd.trials.is_file():
        return {}
    by_case: dict[str, tuple[list[list[bool]], list[float]]] = {}
    with TrialLogReader(rd.trials) as log:
        for t in log.trials():
            r = t.record
            if r.kind != "design" or r.is_error or r.value is None:
                continue
            X, y = by_case.setdefault(r.case_id, ([], []))
            X.append([ch == "1" for ch in r.inclusion])
            y.append(float(r.value))
    return {c: ols_hc(np.array(X), np.array(y), hc="classical").se for c, (X, y) in by_case.items() if len(y) > 2}


def _estimates(path: Path) -> tuple[list[CandidateEstimate], list[dict[str, Any]], Any]:
    ds = read_dataset(RunDir(path).dataset)
    classical = _classical_se(path)
    est, rows = [], []
    for pair in ds.pairs:
        cands = pair["candidates"]
        trials = int((pair.get("metadata") or {}).get("trials") or 0)
        df = float(trials - len(cands) - 1)
        rank = 0
        refit = classical.get(str(pair["id"]))
        for j, c in enumerate(cands):
            src = tuple(c.get("source") or ())
            r = None
            if "retrieved" in src:
                rank += 1
                r = rank
            eff = c.get("regression_effect") or {}
            se = eff.get("se_classical")
            if se is None and refit is not None and len(refit) == len(cands):
                se = float(refit[j])  # a run mined before graded labels: refitted from its trial log
            se = se if se is not None else eff.get("se")  # no log either: the robust HC2 one
            if eff.get("coef") is None or se is None:
                continue
            est.append(CandidateEstimate(str(pair["id"]), str(c["doc_id"]), src, r, float(eff["coef"]), float(se), df))
            rows.append(c)
    return est, rows, ds


def _report(path: Path) -> None:
    est, rows, ds = _estimates(path)
    outcome = str(ds.metadata.get("outcome") or "pass")
    policy = default_policy(outcome, min_effect=ds.metadata.get("min_effect"))
    results = RunDir(path).endtoend.read_results() or {}
    lifts = single_doc_lifts(results)
    print(
        f"## {path}: {len(ds.pairs)} cases, {len(est)} estimates, outcome {outcome}, {len(lifts)} single-document lifts"
    )
    variants = [("no covariate", None)] + ([("single-doc lifts", lifts)] if lifts else [])
    for name, cov in variants:
        t0 = time.perf_counter()
        g = graded_labels(est, step=policy.min_effect / GRADE_STEPS, unit=policy.unit, covariates=cov)
        seconds = time.perf_counter() - t0
        for prior in PRIORS:
            lab = g.labels[prior]
            fit = g.fits[prior].describe()
            print(f"\n### prior {prior}, {name} ({seconds:.1f} s for both priors)")
            print("| group | n | null share | slab mode | prior mean | prior SD |")
            print("|---|---:|---:|---:|---:|---:|")
            for grp, v in fit["groups"].items():
                n = sum(1 for x in lab if x is not None and x.group == grp)
                print(
                    f"| {grp} | {n} | {v['null_share']:.3f} | {v['slab_mode']:+.3f} | {v['prior_mean']:+.3f} | {v['prior_sd']:.3f} |"
                )
            print(f"case scales: {fit['case_scales']}")
            table: dict[tuple[str, str], int] = {}
            gold_open = gold_open_pos = gold_open_likely = 0
            plac_raw, plac_u = [], []
            for e, x, c in zip(est, lab, rows, strict=True):
                if x is None:
                    continue
                v = candidate_verdict(c)
                table[(v, x.call)] = table.get((v, x.call), 0) + 1
                if "gold" in e.sources and v == "undecided":
                    gold_open += 1
                    gold_open_pos += x.utility > 0
                    gold_open_likely += x.call == "likely helps"
                if e.sources == ("placebo",):
                    plac_raw.append(abs(e.coef))
                    plac_u.append(abs(x.utility))
            calls = ("likely helps", "unclear", "likely hurts")
            print("| verdict | " + " | ".join(calls) + " |")
            print("|---|" + "---:|" * len(calls))
            for v in ("relevant", "undecided", "irrelevant", "harmful"):
                print(f"| {v} | " + " | ".join(str(table.get((v, c), 0)) for c in calls) + " |")
            print(
                f"gold undecided: {gold_open}; positive utility {gold_open_pos}; likely helps (lfsr <= {LFSR_LIKELY:g}) "
                f"{gold_open_likely}"
            )
            if plac_raw:
                print(
                    f"placebos: mean |raw effect| {np.mean(plac_raw):.3f} -> mean |utility| {np.mean(plac_u):.3f} "
                    f"{policy.unit} (median {np.median(plac_raw):.3f} -> {np.median(plac_u):.3f}); "
                    f"{sum(1 for u in plac_u if u > 0.5 * policy.min_effect)} of {len(plac_u)} above half the minimum effect"
                )
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--json", type=Path, help="also write every candidate's labels here")
    args = ap.parse_args()
    for path in args.runs:
        _report(path)
    if args.json:
        out = {}
        for path in args.runs:
            est, _rows, ds = _estimates(path)
            policy = default_policy(str(ds.metadata.get("outcome") or "pass"), min_effect=ds.metadata.get("min_effect"))
            g = graded_labels(est, step=policy.min_effect / GRADE_STEPS, unit=policy.unit)
            out[str(path)] = [
                {
                    "case_id": e.case_id,
                    "doc_id": e.doc_id,
                    **{p: (g.labels[p][i].to_dict() if g.labels[p][i] else None) for p in PRIORS},
                }  # type: ignore[union-attr]
                for i, e in enumerate(est)
            ]
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
