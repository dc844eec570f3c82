"""What tokens cost: the prices of a run (:func:`prices_for`), per million tokens.

Prices are the user's (``--price-in`` / ``--price-out``), else the local model's (free: it costs time only), else the
dated list price a hosted provider's registration declares for the model (:class:`deltap.solvers.HostedProvider`
``prices``: the longest model-name prefix the solver id contains), else none (no cost is shown).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deltap.errors import DeltapError

__all__ = ["Prices", "prices_for"]


@dataclass(frozen=True)
class Prices:
    """USD per million tokens, and where the figures come from (``"--price-in/--price-out"``, a list price...)."""

    input: float
    output: float
    source: str = "given"

    def cost(self, tokens_in: float, tokens_out: float) -> float:
        """USD for ``tokens_in`` prompt and ``tokens_out`` completion tokens."""
        return (tokens_in * self.input + tokens_out * self.output) / 1e6

    def to_dict(self) -> dict[str, Any]:
        return {"usd_per_million_in": self.input, "usd_per_million_out": self.output, "source": self.source}


def prices_for(
    price_in: float | None, price_out: float | None, model: str | None = None, local: bool = False
) -> Prices | None:
    """The prices of a run: the ones given (a missing one is 0), else the local model's (free), else the registered
    list price whose model-name prefix ``model`` (a model name or a solver id) contains (the longest), else ``None``.

    Raises:
        DeltapError: a negative price.
    """
    from deltap.solvers import listed_prices

    for name, value in (("--price-in", price_in), ("--price-out", price_out)):
        if value is not None and value < 0:
            raise DeltapError(f"{name} must be a price in USD per million tokens (>= 0), got {value}")
    if price_in is not None or price_out is not None:
        return Prices(float(price_in or 0.0), float(price_out or 0.0), "--price-in/--price-out")
    if local:
        return Prices(0.0, 0.0, "local model (no per-token price)")
    name = (model or "").lower()
    listed = [p for p in listed_prices() if p[1] in name]
    if not listed:
        return None
    kind, prefix, (pin, pout), date = max(listed, key=lambda p: len(p[1]))
    return Prices(pin, pout, f"list price of {prefix} ({date}; the {kind} provider in deltap.solvers.SOLVERS)")
