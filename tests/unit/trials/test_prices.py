"""The prices of a run: given, free for the local model, else the dated list price a hosted provider's registration
declares (the listed-model assertions moved here from
tests/unit/mining/test_spend_plan_export.py::test_hosted_solvers_get_an_estimate_labelled_as_such)."""

from __future__ import annotations

import pytest

from deltap.errors import DeltapError
from deltap.trials.prices import Prices, prices_for


def test_a_listed_model_gets_its_dated_list_price() -> None:
    listed = prices_for(None, None, "openai:gpt-4o-mini:temperature=0")
    assert listed is not None and (listed.input, listed.output) == (0.15, 0.60) and "2025-01" in listed.source
    assert "openai provider in deltap.solvers.SOLVERS" in listed.source
    wider = prices_for(None, None, "openai:gpt-4o:temperature=0")  # gpt-4o-mini is not a prefix of gpt-4o
    assert wider is not None and (wider.input, wider.output) == (2.50, 10.00)
    assert prices_for(None, None, "some-unlisted-model") is None


def test_given_and_local_prices() -> None:
    assert prices_for(1.0, None, "openai:gpt-4o-mini") == Prices(1.0, 0.0, "--price-in/--price-out")
    assert prices_for(None, None, "llama_cpp:x", local=True) == Prices(0.0, 0.0, "local model (no per-token price)")
    with pytest.raises(DeltapError, match=r"--price-out must be a price in USD per million tokens \(>= 0\), got -1"):
        prices_for(None, -1.0)
    assert Prices(2.0, 10.0).cost(1_000_000, 100_000) == pytest.approx(3.0)
