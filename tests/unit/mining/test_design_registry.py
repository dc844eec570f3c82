"""An inclusion design is one entry of ``deltap.mining.config.DESIGNS`` plus its rows: ``MiningConfig``,
``InclusionDesign``, ``mine()`` and ``--help`` see it, and the π check is written (and worded) once."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from deltap.errors import DeltapError
from deltap.mining.config import DESIGNS, DesignError, DesignKind, MiningConfig, describe_designs, register_design
from deltap.mining.design import InclusionDesign
from deltap.trials.seeds import trial_seed


class CyclicHalves:
    """A toy design: trial ``i`` includes the candidates ``j`` with ``(i + j)`` even (two rows per block)."""

    @staticmethod
    def block_size(m: int) -> int:
        return 2

    @staticmethod
    def block(run_seed: int, case_id: str, m: int, pi: float, block: int) -> np.ndarray:
        shift = trial_seed(run_seed, case_id, block, "cyclic") % 2
        return np.array([[(r + j + shift) % 2 == 0 for j in range(m)] for r in range(2)])


@pytest.fixture
def cyclic() -> Iterator[DesignKind]:
    info = register_design(
        DesignKind("cyclic", f"{__name__}:CyclicHalves", "alternate halves", 0.5, "includes every other candidate")
    )
    yield info
    del DESIGNS["cyclic"]


def test_a_registered_design_draws_the_trials(cyclic: DesignKind) -> None:
    d = InclusionDesign(1, "c", 5, kind="cyclic")
    assert d.block_size == 2
    rows = np.array([d.vector(i) for i in range(4)])
    assert (rows[0] ^ rows[1]).all() and (rows[2] ^ rows[3]).all()  # each block: two complementary halves
    assert MiningConfig(design="cyclic").design == "cyclic"
    assert "cyclic (alternate halves)" in describe_designs()


def test_the_pi_check_is_one_check_with_one_message(cyclic: DesignKind) -> None:
    expected = (
        "the cyclic design includes every other candidate (pi 0.5), got pi 0.3; "
        "use design='bernoulli' (--design bernoulli) for another inclusion probability"
    )
    for build in (lambda: MiningConfig(design="cyclic", pi=0.3), lambda: InclusionDesign(1, "c", 5, 0.3, "cyclic")):
        with pytest.raises(DesignError) as info:
            build()
        assert str(info.value) == expected
        assert isinstance(info.value, DeltapError) and isinstance(info.value, ValueError)
    for build in (lambda: MiningConfig(design="latin"), lambda: InclusionDesign(1, "c", 5, kind="latin")):
        with pytest.raises(DesignError) as info:
            build()
        assert str(info.value) == "design must be one of orthogonal, bernoulli, cyclic, got 'latin'"


@pytest.mark.filterwarnings("ignore::deltap.mining.results.PlaceboCalibrationWarning")  # a toy design: aliased columns
def test_mine_runs_a_registered_design(cyclic: DesignKind) -> None:
    from deltap.mining.engine import mine
    from deltap.solvers.simulated import SimulatedTruth
    from tests.helpers import answering_solver, numbered_corpus, string_case

    corpus = numbered_corpus(20)
    res = mine([string_case("s", ("d00",))], corpus, answering_solver({"s": SimulatedTruth(0.2, {"d00": 0.6})}),
               budget=16, n_placebo=2, coalitions=False, design="cyclic")  # fmt: skip
    X = res.cases[0].X
    assert X is not None and len(X) >= 2
    assert all((X[i] ^ X[i + 1]).all() for i in range(0, len(X) - 1, 2))
    assert res.dataset.metadata["config"]["design"] == "cyclic"
