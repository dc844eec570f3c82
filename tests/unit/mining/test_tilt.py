"""The tilt (issue 28): do retrieved non-gold documents move the outcome more than random placebos?"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from deltap.mining.engine import mine
from deltap.mining.simulation import SCENARIOS, design_config, engine_inputs
from deltap.mining.tilt import WARN_TILT, TiltWarning, candidate_source, measure_tilt, run_tilt
from deltap.report.html import render_html
from deltap.report.markdown import render_markdown
from deltap.report.run_data import load_run_dir


def _mine_scenario(name: str, seed: int, out=None):  # type: ignore[no-untyped-def]
    sc = SCENARIOS[name]
    cases, corpus, solver, retriever = engine_inputs(sc, 40, seed)  # one 40-case dataset
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = mine(cases, corpus, solver, retriever=retriever, config=design_config(sc, "adaptive", seed), out=out)
    return res, [w for w in caught if issubclass(w.category, TiltWarning)]


def test_mine_measures_the_tilt_of_the_tilted_scenario_and_warns(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # logprob_tilted: the case's own candidates move the log-prob 1.75x more than random text (the placebos).
    # Measured through mine() on 40-case datasets, seeds 0-4: tilt 1.74-1.97, 90% bootstrap lower bound 1.33-1.61,
    # permutation p 0.0005-0.003, TiltWarning in all five.
    res, tilt_warnings = _mine_scenario("logprob_tilted", 0, out=tmp_path / "run")
    t = res.run["tilt"]
    assert t["spreads"]["retrieved"]["n"] == 40 * 13 and t["spreads"]["placebo"]["n"] == 40 * 5
    assert t["spreads"]["gold"]["n"] == 40 * 2
    assert 1.4 <= t["ratio"] <= 2.4
    assert t["low"] > 1.0 and t["level"] == 0.90  # the 90% bootstrap interval excludes 1
    assert t["p_value"] < 0.01  # and the permutation test rejects "no tilt"
    assert t["large"] and len(tilt_warnings) == 1 and "--placebo-kind similar" in str(tilt_warnings[0].message)
    # gold documents (+4/+3 nats planted) spread far more than either
    assert t["spreads"]["gold"]["spread"] > 2 * t["spreads"]["retrieved"]["spread"]
    # written to run.json and shown in both reports
    assert json.loads((tmp_path / "run" / "run.json").read_text())["tilt"]["ratio"] == pytest.approx(t["ratio"])
    data = load_run_dir(tmp_path / "run")
    assert "**Tilt (large):** tilt " in render_markdown(data)
    assert "<b>Tilt</b>" in render_html(data)


def test_mine_measures_no_tilt_on_the_sparse_scenario() -> None:
    # logprob_sparse: the same heavy-tailed text effects for every document. Seeds 0-4: tilt 0.69-1.05, p >= 0.40.
    res, tilt_warnings = _mine_scenario("logprob_sparse", 0)
    t = res.run["tilt"]
    assert 0.7 <= t["ratio"] <= 1.3
    assert t["low"] < 1.0 < t["high"]
    assert t["p_value"] > 0.2
    assert not t["large"] and not tilt_warnings


def test_measure_tilt_recovers_a_known_scale_net_of_sampling_noise() -> None:
    rng = np.random.default_rng(5)
    n_r, n_p = 400, 200
    se_r, se_p = np.full(n_r, 0.8), np.full(n_p, 0.3)  # the retrieved estimates are noisier: noise is not tilt
    true_r, true_p = 2.0 * rng.standard_normal(n_r), rng.standard_normal(n_p)
    t = measure_tilt(
        {
            "retrieved": (0.5 + true_r + se_r * rng.standard_normal(n_r), se_r),  # a common shift of every text
            "placebo": (0.5 + true_p + se_p * rng.standard_normal(n_p), se_p),
        }
    )
    assert t.ratio == pytest.approx(2.0, rel=0.15)
    assert t.low < t.ratio < t.high and t.low > 1.0
    assert t.centre == pytest.approx(0.5, abs=0.2)
    assert t.large and t.p_value < 0.01
    # estimates that are sampling noise alone have no excess spread (their raw spread would be 0.8)
    noise = measure_tilt({"retrieved": (se_r * rng.standard_normal(n_r), se_r), "placebo": (true_p, np.zeros(n_p))})
    assert noise.spreads["retrieved"].spread < 0.2
    assert noise.ratio < 0.3 and not noise.large


def test_measure_tilt_needs_both_groups_and_rejects_bad_input() -> None:
    t = measure_tilt({"retrieved": ([0.1, 0.5, -0.2], [0.1] * 3), "placebo": ([0.3], [0.1])})
    assert np.isnan(t.ratio) and not t.large and "not measured" in t.message
    assert t.to_dict()["ratio"] is None  # JSON-ready
    with pytest.raises(ValueError, match="unknown source"):
        measure_tilt({"random": ([1.0], [0.1])})
    with pytest.raises(ValueError, match="standard errors"):
        measure_tilt({"placebo": ([1.0, 2.0], [0.1])})


def test_a_small_tilt_is_not_large() -> None:
    rng = np.random.default_rng(1)
    # a clear but small tilt (1.15x, far below WARN_TILT) is measured but not warned about
    t = measure_tilt(
        {
            "retrieved": (1.15 * rng.standard_normal(4000), np.zeros(4000)),
            "placebo": (rng.standard_normal(4000), np.zeros(4000)),
        }
    )
    assert t.p_value < 0.05 and t.ratio < WARN_TILT and not t.large


def test_candidate_sources_and_rows() -> None:
    assert candidate_source(["gold", "retrieved"]) == "gold"
    assert candidate_source(["retrieved"]) == "retrieved"
    assert candidate_source(["placebo"]) == "placebo"
    assert candidate_source([]) is None
    rows = [
        (["retrieved"], {"regression_effect": {"coef": 1.0, "se": 0.1}}),
        (["placebo"], {"regression_effect": None}),
    ]
    t = run_tilt(rows, "nats")
    assert t.spreads["retrieved"].n == 1 and t.spreads["placebo"].n == 0  # undecided rows are left out


@pytest.mark.parametrize(
    ("name", "seed", "tilted"),
    [("logprob_tilted", 0, True), ("logprob_sparse", 0, False)],
)
def test_null_auto_lets_the_runs_own_tilt_decide_the_null(name: str, seed: int, tilted: bool) -> None:
    # --null auto (issue 35 item 6): the tilt of the run's estimates, measured before any label, picks the on-topic
    # null with the learned gold weight, or the placebo null. 20-case datasets, seeds 0/1: tilted 1.95/1.87 (p 0.016 /
    # 0.008) -> topic; sparse 1.30/1.08 (p 0.11 / 0.43) -> placebo.
    from deltap.mining.labels import choose_null
    from deltap.mining.outputs import summary_lines

    sc = SCENARIOS[name]
    cases, corpus, solver, retriever = engine_inputs(sc, 20, seed)
    cfg = design_config(sc, "adaptive/auto", seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = mine(cases, corpus, solver, retriever=retriever, config=cfg)
    null = res.dataset.metadata["placebo_calibration"]["null"]
    assert null["auto"]["tilted"] is tilted and null["used"] == "placebo"
    assert null["auto"]["null"] == ("topic" if tilted else "placebo") and null["requested"] == null["auto"]["null"]
    assert null["auto"]["gold_weight_learned"] is tilted and ("topic" in null) is tilted
    assert "chosen by --null auto" in res.dataset.metadata["null"]
    assert any(line.startswith("null: --null auto") for line, _ in summary_lines(res.run))
    # a pure function of the trial log and the configuration: the same decision again, and none without auto
    again, decision = choose_null(res.cases, cfg)
    assert decision == null["auto"] and again.null == decision["null"]
    assert choose_null(res.cases, design_config(sc, "adaptive/placebo", seed))[1] is None


def test_a_tilt_without_placebo_spread_is_written_so_a_reader_can_check_it() -> None:
    # issue 36: "tilt inf (90% interval 4.63-inf)". Placebos that move nothing beyond their own noise make the ratio
    # infinite; the message says why instead of printing inf.
    rng = np.random.default_rng(3)
    t = measure_tilt(
        {"retrieved": (rng.normal(0, 1.0, 30), np.full(30, 0.1)), "placebo": (np.zeros(20), np.full(20, 0.1))}
    )
    assert not np.isfinite(t.ratio)
    assert "inf" not in t.message.replace("infinite", "")
    assert t.message.startswith("tilt unbounded (the placebos show no spread beyond sampling noise)")
