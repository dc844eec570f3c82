"""The placebo check: are placebo documents labelled more often than the multiple-testing procedure allows?

Placebo documents are random texts: known nulls. Under Benjamini–Hochberg (BH) at level ``q`` over ``M`` tests with
``R`` rejections, a null hypothesis is rejected when its p-value is at most the step-up threshold ``q·R/M``; a null
p-value is (at most) uniform, so a null document's chance to be labelled is about ``q·R/M`` — **not** ``q``
(Benjamini & Hochberg 1995; the FDR bound ``E[V/R] ≤ q·M0/M`` is the same statement summed over the nulls). With
few discoveries ``q·R/M`` is far below ``q``, and comparing the placebo rate with ``q`` lets a null that is several
times too narrow pass unnoticed (issue 14: with 20 placebos a true rate of 15% was flagged only ~35% of the time).

The check is an exact one-sided binomial test of the placebo rejections ``X`` among ``n`` placebos against that
reference: ``p = P(Binomial(n, min(1, q·R/M)) ≥ X)``, failing at ``p < alpha`` (default 0.05). Each direction is its
own BH family (relevant: effect > 0, harmful: effect < 0), so ``R`` counts the rejections of both families and
``M`` the candidates (each tested once per direction): the reference is ``q·(R₊ + R₋)/M``. ``R`` is the observed
number, which includes any rejected placebos — a conservative (lenient) reference when placebos are rejected.

:func:`placebo_check` is the one place this is computed; the terminal (``deltap mine``, ``deltap demo``),
``run.json``, ``retrieval_dataset.yaml`` and the report all print its :attr:`PlaceboCheck.message`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["ALPHA", "PlaceboCheck", "check_from_dict", "placebo_check", "summary_lines"]

#: level of the binomial test of the placebo rejections
ALPHA = 0.05


@dataclass(frozen=True)
class PlaceboCheck:
    """Outcome of the placebo check (see the module docstring); ``to_dict`` is what every output stores."""

    placebos: int
    rejected: int
    labelled: int
    rejections: int
    tests: int
    q: float
    expected_rate: float
    p_value: float
    alpha: float
    failed: bool
    message: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def placebo_check(
    placebos: int,
    rejected: int,
    rejections: int,
    tests: int,
    q: float,
    labelled: int | None = None,
    alpha: float = ALPHA,
) -> PlaceboCheck:
    """Exact binomial test of ``rejected`` of ``placebos`` placebo documents against the BH reference ``q·R/M``.

    Args:
        placebos: Placebo candidates with an estimate (``n``).
        rejected: Placebos whose BH q-value is at most ``q`` in their direction (``X``).
        rejections: Rejections of the run in both directions (``R``).
        tests: Candidates with an estimate, each tested once per direction (``M``).
        q: The BH level.
        labelled: Placebos labelled relevant or harmful (reported; defaults to ``rejected``).
        alpha: Level of the check.

    Returns:
        The :class:`PlaceboCheck`; ``failed`` when ``P(Binomial(n, q·R/M) ≥ X) < alpha``.
    """
    from scipy import stats

    if placebos < 0 or rejected < 0 or rejected > placebos or tests < 0 or rejections < 0:
        raise ValueError(
            f"placebo check: bad counts (placebos {placebos}, rejected {rejected}, R {rejections}, M {tests})"
        )
    labelled = rejected if labelled is None else labelled
    rate = min(1.0, q * rejections / tests) if tests else 0.0
    if placebos == 0:
        return PlaceboCheck(
            0,
            0,
            0,
            rejections,
            tests,
            q,
            rate,
            1.0,
            alpha,
            False,
            "placebo check: no placebo documents in this run (nothing to check)",
        )
    if rejected == 0:
        p = 1.0
    elif rate <= 0.0:
        p = 0.0
    else:
        p = float(stats.binom.sf(rejected - 1, placebos, rate))
    failed = p < alpha
    head = "placebo check FAILED" if failed else "placebo check passed"
    body = (
        f"{rejected}/{placebos} placebos rejected ({labelled} labelled relevant/harmful); BH at q = {q:g} with "
        f"{rejections} rejections of {tests} tests labels a null about q·R/M = {rate:.4f} of the time "
        f"(expected {placebos * rate:.2f}); binomial p = {p:.3g}"
    )
    tail = (
        " — the null is too narrow for this solver: labels may be false; add placebos (--placebo), use placebos "
        "that look like the candidates (--placebo-kind similar) or a larger --min-effect"
        if failed
        else ""
    )
    return PlaceboCheck(
        placebos, rejected, labelled, rejections, tests, q, rate, p, alpha, failed, f"{head}: {body}{tail}"
    )


def summary_lines(placebo: Mapping[str, Any]) -> list[tuple[str, bool]]:
    """What the end of ``deltap mine`` / ``deltap demo`` prints about the placebos, from ``run.json``'s ``placebo``:
    ``(line, is_problem)`` pairs — the check's message, and the null's "too few placebos" reason when there is one."""
    out: list[tuple[str, bool]] = []
    null = placebo.get("null") or {}
    if null.get("too_few") and null.get("reason"):
        out.append((f"placebo null: {null['reason']}", True))
    check = placebo.get("check") or {}
    if check.get("message"):
        out.append((str(check["message"]), bool(check.get("failed"))))
    return out


def check_from_dict(info: Mapping[str, Any]) -> PlaceboCheck | None:
    """The check back from a run's stored dict (``None`` when the run predates it)."""
    fields = PlaceboCheck.__dataclass_fields__
    if not all(k in info for k in fields):
        return None
    return PlaceboCheck(**{k: info[k] for k in fields})
