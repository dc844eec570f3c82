"""Measures: a metric with its cutoff and parameters, as a hashable value object parsed from a string.

``parse_metric("ndcg@10")`` → ``Measure("ndcg", k=10)``. The grammar (no ``eval``, one regular expression)::

    name [ "(" key=value {"," key=value} ")" ] [ ("@" | "_" | ".") K ]

Names are case-insensitive and accept the usual spellings: ``ndcg@10``, ``nDCG@10``, ``ndcg_cut_10`` (trec_eval),
``P@10``, ``P_10``, ``precision@10``, ``recall@100``, ``hit_rate@5`` / ``success@5``, ``MRR``, ``MRR@10``,
``recip_rank``, ``MAP``, ``map@100`` / ``map_cut_100``, ``R-prec`` / ``Rprec``, ``set_recall@10``,
``signed_utility@10`` (gains from a deltap verified dataset), ``judged@10``; parameters: ``P(rel=2)@10``
(relevance level for binary metrics), ``ndcg(gain=exp)@10``, ``signed_utility(norm=ideal)@10``.

Note on names: the deltap design's "Recall@K" (1 if any relevant document is in the top K) is ``hit_rate@K``;
``recall@K`` here is the classical recall (fraction of the relevant documents found).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from deltap.errors import DeltapError
from deltap.evaluation.metrics import METRICS, Metric
from deltap.evaluation.ranking import Ranking
from deltap.evaluation.settings import DEFAULT_METRICS

__all__ = ["DEFAULT_METRICS", "Measure", "needs_of", "parse_metric", "parse_metrics", "with_judged"]

_PATTERN = re.compile(r"^\s*([A-Za-z][A-Za-z_\-]*?)\s*(?:\(([^)]*)\))?\s*(?:[@_.]\s*(\d+))?\s*$")

_ALIASES: dict[str, str] = {}
for _m in METRICS.values():
    _ALIASES[_m.name] = _m.name
    _ALIASES[_m.label.lower()] = _m.name
    for _a in _m.aliases:
        _ALIASES[_a] = _m.name

#: The metrics ``deltap evaluate`` reports when none are given.


@dataclass(frozen=True, order=True)
class Measure:
    """A metric, its cutoff and its parameters: hashable, comparable, printable, and round-trips through
    :func:`parse_metric`.

    Args:
        name: Canonical metric name (a key of :data:`deltap.evaluation.metrics.METRICS`).
        k: Cutoff (``None`` = the whole run).
        params: Sorted ``(key, value)`` pairs, e.g. ``(("rel", 2),)``; defaults (``rel=1``, ``gain=linear``) are
            dropped so equal measures compare equal.
    """

    name: str
    k: int | None = None
    params: tuple[tuple[str, int | str], ...] = field(default=())

    @property
    def metric(self) -> Metric:
        return METRICS[self.name]

    @property
    def rel(self) -> int:
        """Relevance level: grades >= rel count as relevant for binary metrics."""
        return int(dict(self.params).get("rel", 1))

    def compute(self, ranking: Ranking) -> np.ndarray:
        """Per-query values for every query of ``ranking``."""
        return self.metric.compute(ranking, self.k, dict(self.params))

    def trec_eval(self) -> tuple[str, str] | None:
        """pytrec_eval's ``(measure spec, output key)`` for this measure, if trec_eval computes it."""
        return self.metric.trec_eval(self.k, dict(self.params))

    def __str__(self) -> str:
        label = self.metric.label
        if self.params:
            label += "(" + ",".join(f"{key}={value}" for key, value in self.params) + ")"
        return label if self.k is None else f"{label}@{self.k}"


def _known() -> str:
    return ", ".join(
        f"{m.label}{'@K' if m.cutoff == 'required' else '[@K]' if m.cutoff == 'optional' else ''}"
        for m in METRICS.values()
    )


def parse_metric(text: str | Measure) -> Measure:
    """Parse a measure string such as ``"ndcg@10"``, ``"P(rel=2)@5"`` or ``"MRR"`` (see the module docstring).

    Raises:
        DeltapError: unknown name (with the closest known names), a missing or forbidden cutoff, a bad parameter.
    """
    if isinstance(text, Measure):
        return text
    if not isinstance(text, str):
        raise DeltapError(f"a metric must be a string such as 'ndcg@10', got {type(text).__name__} {text!r}")
    match = _PATTERN.match(text)
    if not match:
        raise DeltapError(f"cannot parse metric {text!r}; expected name[(key=value)][@K], e.g. 'ndcg@10', 'P(rel=2)@5'")
    raw_name, raw_params, raw_k = match.groups()
    name = _ALIASES.get(raw_name.lower())
    if name is None:
        close = difflib.get_close_matches(raw_name.lower(), list(_ALIASES), n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise DeltapError(f"unknown metric {raw_name!r} in {text!r}.{hint} Known metrics: {_known()}")
    metric = METRICS[name]
    k = int(raw_k) if raw_k is not None else None
    if k is not None and k < 1:
        raise DeltapError(f"metric {text!r}: the cutoff K must be >= 1")
    if metric.cutoff == "required" and k is None:
        raise DeltapError(f"metric {text!r} needs a cutoff, e.g. '{metric.label}@10'")
    if metric.cutoff == "none" and k is not None:
        raise DeltapError(f"metric {text!r} takes no cutoff; write '{metric.label}'")
    params: dict[str, int | str] = {}
    if raw_params is not None and raw_params.strip():
        for item in raw_params.split(","):
            key, sep, value = (s.strip() for s in item.partition("="))
            key = key.lower()
            if not sep or key not in metric.params:
                allowed = ", ".join(f"{p}=..." for p in metric.params) or "none"
                raise DeltapError(f"metric {text!r}: unknown parameter {item.strip()!r} (allowed: {allowed})")
            choices = metric.params[key]
            if choices is None:
                if not value.isdigit() or int(value) < 1:
                    raise DeltapError(f"metric {text!r}: {key} must be an integer >= 1, got {value!r}")
                params[key] = int(value)
            else:
                if value.lower() not in choices:
                    raise DeltapError(f"metric {text!r}: {key} must be one of {', '.join(choices)}, got {value!r}")
                params[key] = value.lower()
    defaults = {"rel": 1, "gain": "linear", "norm": "none"}
    cleaned = tuple(sorted((key, v) for key, v in params.items() if defaults.get(key) != v))
    return Measure(name=name, k=k, params=cleaned)


def parse_metrics(texts: str | Measure | Iterable[str | Measure]) -> list[Measure]:
    """Parse one measure, a comma-separated string (``"ndcg@10,MRR"``) or a list; duplicates are removed, order kept.

    Parentheses may contain commas (``"P(rel=2)@5,MAP"`` is two measures).
    """
    if isinstance(texts, Measure):
        items: list[str | Measure] = [texts]
    elif isinstance(texts, str):
        items = [s for s in re.split(r",(?![^(]*\))", texts) if s.strip()]
    else:
        items = list(texts)
    if not items:
        raise DeltapError("no metric given; e.g. 'ndcg@10,recall@100,MRR'")
    out: list[Measure] = []
    for item in items:
        measure = parse_metric(item)
        if measure not in out:
            out.append(measure)
    return out


def needs_of(measures: Iterable[Measure]) -> frozenset[str]:
    """What the measures need the ranking to carry beyond relevant ranks (``"gains"``, ``"judged"``)."""
    out: frozenset[str] = frozenset()
    for m in measures:
        out |= m.metric.needs
    return out


def with_judged(measures: Iterable[Measure]) -> list[Measure]:
    """The measures with ``judged@K`` right after each ``signed_utility@K`` (unless already asked for): a signed
    utility counts unjudged documents as 0, so how much of the top K is judged must be read beside it."""
    given = list(measures)
    out: list[Measure] = []
    for m in given:
        if m not in out:
            out.append(m)
        if m.name == "signed_utility":
            judged = Measure("judged", k=m.k)
            if judged not in out and judged not in given:
                out.append(judged)
    return out
