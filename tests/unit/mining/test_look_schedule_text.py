"""The dataset's look schedule in words never names looks past the budget (issue 36: "looks every 16 trials from 32
to the budget 12")."""

from deltap.mining.config import MiningConfig
from deltap.mining.outputs import look_schedule


def test_a_budget_below_the_first_look_is_one_look_at_the_budget() -> None:
    text = look_schedule(MiningConfig(budget=12, first_look=32, batch=16))
    assert text.startswith("one look, at the budget of 12 trials (the first interim look, at 32 trials, is past it)")
    assert "every 16" not in text


def test_the_usual_schedule_is_unchanged() -> None:
    text = look_schedule(MiningConfig(budget=90, first_look=16, batch=8))
    assert text.startswith("every 8 trials from 16 to the budget 90, interim looks only from 2m + 1 trials")
