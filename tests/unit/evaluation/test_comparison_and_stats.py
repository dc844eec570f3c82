"""Statistics (Holm, paired t, randomization test, calibration under the null) and compare()'s Comparison."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from scipy import stats as sps

from deltap.errors import DeltapError
from deltap.evaluation import Comparison, compare
from deltap.evaluation.stats import holm, paired_t_test, randomization_test


def test_holm_known_values() -> None:
    got = holm([0.01, 0.04, 0.03, 0.005])
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 -> running max 0.02, 0.03, 0.06, 0.06
    assert got == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert len(holm([])) == 0


def test_paired_t_matches_scipy_and_defines_degenerate_cases() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.random(40), rng.random(40)
    assert paired_t_test(a, b) == pytest.approx(sps.ttest_rel(a, b).pvalue, rel=1e-12)
    assert paired_t_test(a, a) == 1.0
    assert paired_t_test(a + 0.1, a) == 0.0


def test_randomization_test_matches_exact_enumeration() -> None:
    d = np.array([0.3, -0.1, 0.25, 0.4, -0.05, 0.2, 0.15, 0.1])
    observed = abs(d.mean())
    flips = np.array(list(itertools.product([-1, 1], repeat=len(d))))
    exact = np.mean(np.abs(flips @ d) / len(d) >= observed - 1e-12)
    p = randomization_test(d, np.zeros_like(d), n_resamples=20_000, seed=1)
    assert p == pytest.approx(exact, abs=4 * np.sqrt(exact * (1 - exact) / 20_000) + 1e-4)
    assert p == randomization_test(d, np.zeros_like(d), n_resamples=20_000, seed=1)  # seeded


def test_tests_are_calibrated_under_the_null_and_powerful_under_an_effect() -> None:
    rng = np.random.default_rng(42)
    reps, n = 200, 30
    null_t = null_f = power_f = 0
    for r in range(reps):
        base = rng.random(n)
        a = np.clip(base + rng.normal(0, 0.2, n), 0, 1)
        b = np.clip(base + rng.normal(0, 0.2, n), 0, 1)
        null_t += paired_t_test(a, b) <= 0.05
        null_f += randomization_test(a, b, n_resamples=1000, seed=r) <= 0.05
        power_f += randomization_test(np.clip(a + 0.15, 0, 1), b, n_resamples=1000, seed=r) <= 0.05
    # nominal 5%: 200 replications give a binomial sd of 1.5 points
    assert 0.01 <= null_t / reps <= 0.10
    assert 0.01 <= null_f / reps <= 0.10
    assert power_f / reps >= 0.8


def _planted(n: int = 60, seed: int = 0) -> tuple[dict, dict, dict, dict]:
    rng = np.random.default_rng(seed)
    qrels = {f"q{i}": {f"d{j}": int(rng.integers(0, 3)) for j in range(8)} for i in range(n)}
    for docs in qrels.values():
        docs["d0"] = 2  # every query has a relevant document
    base = {q: {f"d{j}": float(rng.random()) for j in range(15)} for q in qrels}
    better = {q: {d: s + (0.5 if qrels[q].get(d, 0) > 0 else 0.0) for d, s in r.items()} for q, r in base.items()}
    same = {q: {d: s + 1e-3 * float(rng.random()) for d, s in r.items()} for q, r in base.items()}
    return qrels, base, better, same


def test_compare_finds_the_planted_improvement_only() -> None:
    qrels, base, better, same = _planted()
    report = compare(qrels, {"base": base, "better": better, "noise": same}, ["ndcg@10", "MRR"], n_permutations=2000)
    assert isinstance(report, Comparison)
    assert report.significant("better", "ndcg@10") and report.significant("better", "MRR")
    assert not report.significant("noise", "ndcg@10")
    assert report.p_value("better", "ndcg@10") >= report.p_value("better", "ndcg@10", adjusted=False)
    # Holm family = 2 systems x 2 metrics: the smallest raw p-value is multiplied by 4 (or capped at 1)
    raw = np.concatenate([report.p_fisher["better"], report.p_fisher["noise"]])
    adj = np.concatenate([report.p_fisher_holm["better"], report.p_fisher_holm["noise"]])
    assert adj[np.argmin(raw)] == pytest.approx(min(1.0, 4 * raw.min()))
    # win/tie/loss are per-query counts
    b = report.results["base"]["ndcg@10"]
    v = report.results["better"]["ndcg@10"]
    j = report.measures.index(report.measures[0])
    assert report.wins["better"][j] == int((v - b > 1e-12).sum())
    assert report.wins["better"][j] + report.ties["better"][j] + report.losses["better"][j] == len(qrels)


def test_compare_is_reproducible_and_renders() -> None:
    qrels, base, better, _ = _planted(n=30, seed=1)
    r1 = compare(qrels, {"base": base, "better": better}, "ndcg@5,P@5", n_permutations=500, seed=3)
    r2 = compare(qrels, {"base": base, "better": better}, "ndcg@5,P@5", n_permutations=500, seed=3)
    assert r1.to_dict() == r2.to_dict()
    d = json.loads(r1.to_json())
    assert d["systems"]["better"]["tests"]["ndcg@5"]["significant"] is True
    assert d["baseline"] == "base" and d["correction"] == "holm"
    table = r1.to_table()
    assert "▲" in table and "win/tie/loss" in table and "Holm" in table
    assert "| better | ndcg@5 | +" in r1.to_markdown()
    latex = r1.to_latex()
    assert r"\toprule" in latex and r"$^{\dagger}$" in latex and r"\textbf{" in latex


def test_compare_errors() -> None:
    qrels, base, better, _ = _planted(n=5)
    with pytest.raises(DeltapError, match="baseline 'x' is not one of the runs"):
        compare(qrels, {"a": base, "b": better}, "P@5", baseline="x")
    with pytest.raises(DeltapError, match="test must be"):
        compare(qrels, {"a": base, "b": better}, "P@5", test="wilcoxon")  # type: ignore[arg-type]


def test_compare_and_evaluate_take_settings_objects_as_well_as_keywords() -> None:
    from deltap.evaluation import ComparisonSettings, EvaluationSettings, evaluate

    qrels, base, better, same = _planted(n=30, seed=2)
    runs = {"same": same, "base": base, "better": better}
    keywords = compare(qrels, runs, ["ndcg@5", "P@3"], baseline="base", test="t", alpha=0.1, on_missing="skip",
                       confidence=0.9, n_resamples=50, n_permutations=200, seed=7)  # fmt: skip
    settings = EvaluationSettings(("ndcg@5", "P@3"), on_missing="skip", confidence=0.9, n_resamples=50, seed=7)
    objects = compare(qrels, runs, settings=settings, comparison=ComparisonSettings("base", "t", 0.1, 200))
    assert objects.to_dict() == keywords.to_dict()
    assert (objects.baseline, objects.test, objects.alpha, objects.n_permutations) == ("base", "t", 0.1, 200)
    one = evaluate(qrels, better, ["ndcg@5", "P@3"], on_missing="skip", confidence=0.9, n_resamples=50, seed=7)
    assert evaluate(qrels, better, settings=settings).to_dict() == one.to_dict()
    # a keyword that the settings object also holds is refused rather than silently ignored
    with pytest.raises(DeltapError, match=r"compare: n_resamples, seed given both .* EvaluationSettings; set them"):
        compare(qrels, runs, settings=settings, seed=3, n_resamples=10)
    with pytest.raises(DeltapError, match=r"compare: alpha given both .* ComparisonSettings"):
        compare(qrels, runs, comparison=ComparisonSettings("base"), alpha=0.2)
    with pytest.raises(DeltapError, match=r"evaluate: metrics given both"):
        evaluate(qrels, better, "MRR", settings=settings)
