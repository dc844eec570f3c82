"""One outcome vocabulary: an OutcomeKind per outcome carries the defaults every module used to spell out by testing
the bare string; the checker's result is a Verdict (CheckResult kept as its alias); the retrieval cutoff is --top-k
(the old flags still parse, hidden)."""

from __future__ import annotations

from typing import Any

import pytest

from deltap.checkers import CheckResult, Outcome, Status, Verdict
from deltap.errors import DeltapError
from deltap.mining.config import MiningConfig, default_null
from deltap.mining.verdicts import default_policy
from deltap.outcomes import LOGPROB, OUTCOMES, PASS, outcome_kind


def test_the_vocabulary() -> None:
    assert list(OUTCOMES) == ["pass", "logprob"]
    assert (PASS.unit, PASS.binary, PASS.default_min_effect, PASS.default_null, PASS.answered) == (
        "probability",
        True,
        0.1,
        "zero",
        True,
    )
    assert (LOGPROB.unit, LOGPROB.binary, LOGPROB.default_min_effect, LOGPROB.default_null, LOGPROB.answered) == (
        "nats",
        False,
        0.5,
        "auto",
        False,
    )
    assert outcome_kind("logprob") is LOGPROB and outcome_kind(PASS) is PASS and str(LOGPROB) == "logprob"
    assert (PASS.suffix, LOGPROB.suffix) == ("", " nats")
    with pytest.raises(DeltapError, match="--outcome must be pass or logprob, got 'success'"):
        outcome_kind("success", "--outcome")


@pytest.mark.parametrize(
    ("outcome", "min_effect", "margin", "expected"),
    [
        # the values default_policy hard-coded per outcome before the vocabulary
        pytest.param("pass", None, None, (0.1, 0.2, (0.1, 0.2, 0.4), "probability"), id="pass"),
        pytest.param("pass", 0.3, None, (0.3, 0.6, (0.3, 0.3, 0.4), "probability"), id="pass-min-effect"),
        pytest.param("logprob", None, None, (0.5, 0.5, (0.5, 1.5, 3.0), "nats"), id="logprob"),
        pytest.param("logprob", 2.0, 0.7, (2.0, 0.7, (2.0, 2.0, 3.0), "nats"), id="logprob-set"),
    ],
)
def test_default_policy_follows_the_outcome_kind(
    outcome: str, min_effect: float | None, margin: float | None, expected: tuple[object, ...]
) -> None:
    pol = default_policy(outcome, 0.05, min_effect, margin)
    assert (pol.min_effect, pol.margin, pol.grade_bounds, pol.unit) == expected


def test_config_defaults_come_from_the_outcome_kind() -> None:
    assert default_null("logprob", 3) == "auto" and default_null("logprob", 0) == "zero"
    assert default_null("pass", 3) == "zero"
    assert MiningConfig(outcome="logprob").rule().prior_scale == 1.5
    assert MiningConfig(outcome="pass").rule().prior_scale == 0.3
    with pytest.raises(DeltapError, match="outcome must be pass or logprob, got 'score'"):
        MiningConfig(outcome="score")  # type: ignore[arg-type]


def test_a_verdict_is_the_checkers_result_and_gives_the_pass_outcome_its_value() -> None:
    assert CheckResult is Verdict and Outcome is Status
    v = Verdict("fail", "X", "wrong")
    assert (v.status, v.outcome, v.passed, v.value) == ("fail", "fail", False, 0.0)
    assert Verdict("pass").value == 1.0 and Verdict("error").value is None


@pytest.mark.parametrize(
    ("outcome", "effect", "base"),
    [
        pytest.param("pass", "ΔP = P(success | in) − P(success | out)", "base success rate", id="pass"),
        pytest.param("logprob", "Δ log p(reference) [nats]", "base log p (no documents)", id="logprob"),
        pytest.param("weird", "ΔP = P(success | in) − P(success | out)", "base success rate", id="unknown-is-pass"),
    ],
)
def test_the_report_reads_its_labels_from_the_outcome_kind(outcome: str, effect: str, base: str) -> None:
    from pathlib import Path

    import deltap.report.run_data as run_data
    from deltap.dataset import CaseRecord
    from deltap.report.run_data import RunData

    # one name per type: the report reads the dataset's records, and only mining has a CaseResult
    assert run_data.CaseRecord is CaseRecord and not hasattr(run_data, "CaseResult")
    data = RunData(Path("."), {}, {"outcome": outcome}, [], {})
    assert (data.effect_label, data.base_label) == (effect, base)


@pytest.mark.parametrize(
    ("command", "flag", "alias"),
    [
        pytest.param("mine", "--top-k", "--k", id="mine"),
        pytest.param("endtoend", "--top-k", "--k", id="endtoend"),
        pytest.param("evaluate", "--top-k", "--depth", id="evaluate"),
    ],
)
def test_the_retrieval_cutoff_is_top_k_and_the_old_flag_is_a_hidden_alias(
    command: str, flag: str, alias: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import typer.main

    from deltap.cli.app import app, main

    try:
        main([command, "--help"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    shown = capsys.readouterr().out
    assert flag in shown and f"{alias} " not in shown and f"{alias}," not in shown
    group: Any = typer.main.get_command(app)  # typer's own (vendored) click group
    cmd = group.get_command(group.context_class(group), command)
    assert cmd is not None
    param = next(p for p in cmd.params if flag in p.opts)
    assert alias in param.opts  # the old flag still parses into the same parameter
