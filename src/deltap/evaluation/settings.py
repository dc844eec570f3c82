"""How runs are scored, compared and built: the options shared by :func:`~deltap.evaluation.evaluate`,
:func:`~deltap.evaluation.compare`, ``deltap evaluate`` and ``deltap compare``, with their defaults stated once.

Plain data with no heavy import: the CLI reads its option defaults from here without loading numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal, TypeVar

from deltap.errors import DeltapError

__all__ = [
    "DEFAULT_METRICS",
    "ComparisonSettings",
    "EvaluationSettings",
    "MissingPolicy",
    "RetrievalSettings",
    "TestName",
    "merge_settings",
]

#: the measures reported when none are asked for
DEFAULT_METRICS: tuple[str, ...] = ("hit_rate@10", "recall@10", "P@10", "MRR@10", "ndcg@10", "MAP", "R-prec")
#: what to do with a qrels query absent from a run, or one without a relevant document
MissingPolicy = Literal["zero", "skip", "error"]
#: the paired test that marks significance
TestName = Literal["fisher", "t"]


@dataclass(frozen=True)
class EvaluationSettings:
    """Scoring options of one run or several.

    Args:
        metrics: Measure strings (``"ndcg@10"``, ``"P@5"``, ``"MRR"``...).
        on_missing: Qrels queries absent from a run: ``zero`` (warn), ``skip`` (warn) or ``error``.
        on_empty: Qrels queries without a relevant document: ``zero`` (trec_eval's rule), ``skip`` or ``error``.
        confidence: Coverage of the bootstrap confidence intervals.
        n_resamples: Bootstrap resamples (0 = no intervals).
        seed: Seed of the bootstrap and the randomization test.
    """

    metrics: tuple[str, ...] = DEFAULT_METRICS
    on_missing: MissingPolicy = "zero"
    on_empty: MissingPolicy = "zero"
    confidence: float = 0.95
    n_resamples: int = 1000
    seed: int = 0


@dataclass(frozen=True)
class ComparisonSettings:
    """The paired tests of a comparison.

    Args:
        baseline: Name of the baseline run (``None``: the first).
        test: Which test marks significance: ``fisher`` (randomization; Smucker et al. 2007) or ``t`` (paired t).
        alpha: Significance level of the Holm-adjusted p-values.
        n_permutations: Permutations of the randomization test.
    """

    baseline: str | None = None
    test: TestName = "fisher"
    alpha: float = 0.05
    n_permutations: int = 10_000


@dataclass(frozen=True)
class RetrievalSettings:
    """How runs are built from retrievers over the judged queries (``deltap evaluate --retriever``).

    Args:
        kinds: Retriever kinds (keys of :data:`deltap.retrieval.registry.RETRIEVERS`).
        depth: Documents retrieved per query.
        store: Vector store folder or Qdrant URL for ``dense`` / ``hybrid``.
        embedder: Embedder spec (``None``: the bundled all-MiniLM-L6-v2).
        seed: Seed of the ``random`` retriever.
    """

    kinds: tuple[str, ...] = ()
    depth: int = 100
    store: str | None = None
    embedder: str | None = None
    seed: int = 0


_S = TypeVar("_S", EvaluationSettings, ComparisonSettings, RetrievalSettings)


def merge_settings(given: _S | None, kind: type[_S], caller: str, **keywords: Any) -> _S:
    """The settings a function runs with: ``given``, or ``kind(**keywords)`` when no settings object is given.

    Functions such as :func:`~deltap.evaluation.compare` take either a settings object or the same options as keywords;
    this keeps the two forms from disagreeing silently.

    Raises:
        DeltapError: ``given`` together with a keyword set to something other than its default.
    """
    if given is None:
        return kind(**keywords)
    defaults = {f.name: f.default for f in fields(kind)}
    clash = [name for name, value in keywords.items() if value != defaults[name]]
    if clash:
        raise DeltapError(
            f"{caller}: {', '.join(clash)} given both as keyword and in {kind.__name__}; "
            f"set {'it' if len(clash) == 1 else 'them'} in the settings object"
        )
    return given
