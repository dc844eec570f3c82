"""A hosted provider is its module plus one registration: the facts a plan and a bill need (default model, answer-token
ceilings, token encoding, dated list prices) are declared in the registration, and nothing else names a provider.

This file plays the provider's module (``Acme``, an API no deltap file knows); the fixture is its one registration.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deltap.errors import DeltapError
from deltap.solvers import (
    SOLVERS,
    HostedProvider,
    SolverCapabilities,
    SolverKindInfo,
    register_solver_kind,
    solver_provider,
)
from deltap.solvers.hosted import HostedChatSolver, HostedModel, hosted_model

ACME_CEILINGS = {"api_understanding": 40, "multiple_choice": 4, "fix_error": 900, "beir": 77}


class Acme(HostedChatSolver):
    """The provider's module: its API calls only (a key is needed to build it, as for a real provider)."""

    provider = "acme"

    def __init__(self, model: str = "acme-1", api_key: str | None = None) -> None:
        if not api_key:
            raise DeltapError("no API key for acme (ACME_API_KEY)")
        super().__init__(model, client=None, limiter_key=f"acme:{model}")
        self.id = f"acme:{model}"

    def _chat(self, messages: list[dict[str, str]], max_tokens: int) -> Any:
        return {"text": "Runner", "max_tokens": max_tokens}

    def _reply(self, resp: Any) -> tuple[str, dict[str, int], Any]:
        return resp["text"], {}, resp

    def _retryable(self, exc: BaseException) -> bool:
        return False

    def _total_tokens(self, resp: Any) -> int:
        return 0


@pytest.fixture
def acme() -> Iterator[SolverKindInfo]:
    """The provider's one registration."""
    info = register_solver_kind(
        SolverKindInfo(
            "acme",
            f"{__name__}:Acme",
            "Acme's hosted models",
            SolverCapabilities(hosted=True),
            provider=HostedProvider(
                default_model="acme-1",
                max_tokens=ACME_CEILINGS,
                prices={"acme-1": (1.5, 6.0), "acme-1-mini": (0.5, 2.0)},
                prices_date="2026-11",
                token_encoding="",
            ),
        )
    )
    yield info
    del SOLVERS["acme"]


def test_a_registered_provider_is_planned_and_priced_from_its_registration(
    acme: SolverKindInfo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from deltap.cli.app import main
    from tests.helpers import mine_files

    corpus, bench = mine_files(tmp_path)
    main(["mine", str(bench), "--corpus", str(corpus), "--retriever", "none", "--solver", "acme", "--rpm", "30",
          "--out", str(tmp_path / "run"), "--plan", "--json"])  # fmt: skip
    plan = json.loads(capsys.readouterr().out)
    assert plan["solver"] == "acme:acme-1"  # its default model, not another provider's
    assert plan["tokens_counted"] == "estimate (4 chars/token)"  # its declared token encoding (none)
    assert plan["prices"]["usd_per_million_in"] == 1.5 and "2026-11" in plan["prices"]["source"]
    assert "acme" in plan["prices"]["source"]
    assert plan["by_case"][0]["tokens_out_max"] == 40 * plan["by_case"][0]["calls_ceiling"]  # its answer ceiling


def test_the_longest_listed_prefix_prices_a_model(acme: SolverKindInfo) -> None:
    from deltap.trials.prices import prices_for

    mini = prices_for(None, None, "acme:acme-1-mini")
    assert mini is not None and (mini.input, mini.output) == (0.5, 2.0)
    assert hosted_model("acme", {"model": "acme-1-mini"}).id == "acme:acme-1-mini"


def test_a_built_provider_solver_takes_its_ceilings_from_the_registration(acme: SolverKindInfo) -> None:
    solver = Acme(api_key="k")
    assert solver.max_tokens == ACME_CEILINGS
    assert solver.answer_tokens("no_such_type") == 77  # the beir row of its own ceilings


def test_a_hosted_kind_without_provider_facts_is_refused_not_planned_as_another() -> None:
    register_solver_kind(SolverKindInfo("bare", f"{__name__}:Acme", "no facts", SolverCapabilities(hosted=True)))
    try:
        with pytest.raises(DeltapError, match="the 'bare' solver kind declares no hosted-provider facts"):
            HostedModel.of("bare")
    finally:
        del SOLVERS["bare"]


def test_the_built_in_providers_declare_their_facts() -> None:
    from deltap.solvers.answer_tokens import default_max_tokens
    from deltap.solvers.gemini import GeminiSolver
    from deltap.solvers.openai_compat import OpenAISolver

    for kind, cls in (("openai", OpenAISolver), ("gemini", GeminiSolver)):
        facts = solver_provider(kind)
        assert dict(facts.max_tokens) == default_max_tokens(kind) and facts.prices and facts.prices_date
        assert cls.provider == kind
    # the plan assumes the model the solver would run (they drifted apart once: gemini-2.0 planned, 2.5 run)
    assert solver_provider("gemini").default_model == inspect.signature(GeminiSolver).parameters["model"].default
    with pytest.raises(DeltapError, match="declares no hosted-provider facts"):
        solver_provider("local")
