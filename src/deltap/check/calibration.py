"""Latency percentiles and the out-of-scope threshold proposal of ``deltap check``.

Percentiles are linear interpolation between order statistics (Hyndman & Fan 1996, definition 7, the numpy default);
with ``n`` samples p99 is close to the maximum unless ``n`` is in the hundreds.

Threshold calibration: with ``s_in`` the top-1 scores of the in-scope queries and ``s_out`` those of the
out-of-scope queries, a threshold ``t`` keeps an in-scope query when ``s_in >= t`` and rejects an out-of-scope one
when ``s_out < t``. The proposal maximises Youden's J = TPR + TNR − 1 (Youden 1950, "Index for rating diagnostic
tests") over the midpoints between consecutive observed scores; among equally good thresholds it takes the middle
of the widest gap, so when the two distributions separate it is the midpoint between max(s_out) and min(s_in).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from deltap.errors import DeltapError

__all__ = ["format_calibration", "latency_stats", "percentile", "propose_threshold"]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) by linear interpolation (Hyndman & Fan 1996, definition 7).

    ``h = (n − 1)·q/100``; result ``x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋])`` over the sorted values.
    """
    if not values:
        raise ValueError("percentile of an empty sequence")
    xs = sorted(values)
    h = (len(xs) - 1) * q / 100.0
    lo = math.floor(h)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (h - lo) * (xs[hi] - xs[lo])


def latency_stats(seconds: Sequence[float]) -> dict[str, Any] | None:
    """p50 / p95 / p99 / max of timings given in seconds, in milliseconds, with every sample (``None`` if empty)."""
    if not seconds:
        return None
    ms = [s * 1000.0 for s in seconds]
    return {
        "n": len(ms),
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
        "p99_ms": percentile(ms, 99),
        "max_ms": max(ms),
        "samples_ms": [round(x, 4) for x in ms],  # every timed search, for the HTML page's histogram
    }


def propose_threshold(in_scores: Sequence[float], out_scores: Sequence[float]) -> dict[str, Any]:
    """Propose an out-of-scope score threshold from top-1 scores (see the module docstring for the rule).

    Returns:
        ``threshold``, ``youden_j``, ``in_kept`` (in-scope queries with top score >= threshold), ``out_rejected``,
        ``separable`` and ``margin`` (distance from the threshold to the nearest observed score).

    Raises:
        DeltapError: either list is empty.
    """
    if not in_scores or not out_scores:
        raise DeltapError(
            "calibration needs both in-scope and out-of-scope queries that returned hits "
            f"(got {len(in_scores)} in-scope and {len(out_scores)} out-of-scope top scores)"
        )
    values = sorted(set(in_scores) | set(out_scores))
    candidates = [(a + b) / 2 for a, b in pairwise(values)]
    candidates = [values[0] - 0.05, *candidates, values[-1] + 0.05]

    def score(t: float) -> tuple[float, float, int, int]:
        kept = sum(s >= t for s in in_scores)
        rejected = sum(s < t for s in out_scores)
        j = kept / len(in_scores) + rejected / len(out_scores) - 1.0
        margin = min(abs(v - t) for v in values)
        return j, margin, kept, rejected

    best = max(candidates, key=lambda t: score(t)[:2])
    j, margin, kept, rejected = score(best)
    return {
        "threshold": round(best, 6),
        "youden_j": j,
        "in_kept": kept,
        "in_total": len(in_scores),
        "out_rejected": rejected,
        "out_total": len(out_scores),
        "separable": max(out_scores) < min(in_scores),
        "margin": margin,
        "in_scores": sorted(in_scores),
        "out_scores": sorted(out_scores),
    }


def _histogram(in_scores: Sequence[float], out_scores: Sequence[float], bins: int = 10) -> list[str]:
    lo = min([*in_scores, *out_scores])
    hi = max([*in_scores, *out_scores])
    width = (hi - lo) / bins if hi > lo else 1.0
    counts_in = [0] * bins
    counts_out = [0] * bins
    for scores, counts in ((in_scores, counts_in), (out_scores, counts_out)):
        for s in scores:
            counts[min(int((s - lo) / width), bins - 1)] += 1
    lines = ["  score bin          in-scope                 out-of-scope"]
    for b in range(bins):
        a = lo + b * width
        lines.append(f"  [{a:6.3f},{a + width:6.3f})  {'#' * counts_in[b]:<24} {'o' * counts_out[b]}")
    return lines


def format_calibration(cal: Mapping[str, Any]) -> str:
    """The calibration as text: both distributions (summary + histogram) and the proposed threshold."""

    def describe(name: str, xs: Sequence[float]) -> str:
        return (
            f"  {name:<13} n={len(xs):<3} min={min(xs):.3f} median={percentile(xs, 50):.3f} max={max(xs):.3f}  "
            + " ".join(f"{x:.3f}" for x in xs[:30])
            + (" ..." if len(xs) > 30 else "")
        )

    lines = ["calibration (top-1 score per query):"]
    lines.append(describe("in-scope", cal["in_scores"]))
    lines.append(describe("out-of-scope", cal["out_scores"]))
    lines += _histogram(cal["in_scores"], cal["out_scores"])
    sep = "the distributions separate" if cal["separable"] else "the distributions OVERLAP"
    lines.append(
        f"  proposed score_threshold: {cal['threshold']:.4f} ({sep}; keeps {cal['in_kept']}/{cal['in_total']} "
        f"in-scope, rejects {cal['out_rejected']}/{cal['out_total']} out-of-scope; Youden J={cal['youden_j']:.2f}, "
        f"margin {cal['margin']:.3f})"
    )
    return "\n".join(lines)
