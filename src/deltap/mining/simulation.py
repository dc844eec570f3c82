"""Simulation benchmark with known truth: how often each mining design labels the right documents.

A *scenario* plants the truth: ``m`` candidates, a base success rate, main effects on the success probability
(positive = relevant, negative = harmful distractor), pairwise interactions, and the outcome (``pass``: Bernoulli;
``logprob``: the same linear predictor plus Gaussian noise). Every replication is one case mined from scratch.
Everything is vectorised over replications with numpy (inclusion matrices ``(R, N, m)``), so a thousand
replications of a 20-candidate case take seconds.

Every replication is one case mined by **the engine's own per-case procedure**
(:func:`deltap.mining.procedure.run_case`: preflight, design trials look by look, the stopping rule), with the
planted truth answering through :class:`~deltap.solvers.simulated.SimulatedSolver`'s own draws; each dataset of
``dataset_size`` cases then goes through the engine's dataset-wide step (the null, repeated p-values,
Benjamini–Hochberg over every candidate of the dataset, verdicts) and the engine's coalition search. Calls are
counted as ``deltap mine`` counts them (preflight + design trials + coalition checks), and :func:`engine_inputs`
gives the cases, corpus, solver and retriever with which ``mine()`` reproduces a simulated replication exactly.

Designs compared:

* ``naive:N`` — the seed's design (kept vectorised here; it is not the product): fixed N trials with independent
  coin flips, relevant when the difference in means ΔP > 0.1.
* ``fixed:N`` — the engine with one look at N trials, no preflight and no coalition search.
* ``adaptive`` / ``adaptive:BUDGET`` — ``deltap mine``'s defaults (:class:`~deltap.mining.config.MiningConfig`).

Options after a ``/``: ``bernoulli``/``orthogonal`` (inclusion design), ``zero``/``placebo``/``topic``/``auto`` (the null), ``lw`` (the learned gold weight), ``gwW``
(prior weight ``W`` of gold candidates in the weighted BH step); ``@q`` sets the FDR level. Mixtures shuffle their
components' cases together (seeded) before cutting datasets; ``dataset_size=1`` gives per-case BH.

Metrics: label precision (true relevant labels / relevant labels, pooled), FDR (the mean over datasets of the
false-discovery proportion: what BH controls), recall (relevant documents labelled relevant), null false-positive
rate (null documents labelled relevant or harmful), harmful recall, calls per case (and by kind), and the share of
kept coalitions that contain a null document.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deltap.mining.config import DESIGNS, NULLS, MiningConfig
from deltap.mining.design import InclusionDesign
from deltap.mining.estimate import diff_in_means
from deltap.mining.results import CaseResult
from deltap.outcomes import Outcome, outcome_kind
from deltap.trials.seeds import trial_seed

__all__ = [
    "MIXTURES",
    "SCENARIOS",
    "GRADED_SCORES",
    "DesignResult",
    "GradedResult",
    "Mixture",
    "Scenario",
    "design_config",
    "engine_inputs",
    "run_design",
    "run_graded",
    "run_mixture",
    "run_scenario",
    "simulate",
]


@dataclass(frozen=True)
class Scenario:
    """Planted truth of a simulated case.

    Args:
        name: Short id.
        m: Number of candidates.
        effects: ``{candidate index: effect}`` on the success probability (or on the mean log-prob).
        interactions: ``{(i, j): effect}`` added when both ``i`` and ``j`` are in.
        base: Success probability with no document (or the mean log-prob for ``logprob``).
        outcome: ``pass`` or ``logprob``.
        noise: Gaussian noise SD of the ``logprob`` outcome.
        text_effect_sd: SD of every document's own effect, drawn per replication (a solver that reacts to any text:
            these effects are not relevance, and the truth of a null candidate stays "null").
        text_effect_share: Share of documents that have such an effect (the rest have none): below 1 the text
            effects are sparse and heavy-tailed, as measured on SmolLM2 (most placebos ~0, a few ±1-1.7 nats).
        placebos: The last ``placebos`` candidates are placebo documents (nulls whose source the engine knows).
        topic_scale: Text effects of the case's own candidates (gold and retrieved: documents on the case's topic)
            are this many times those of random corpus text. Above 1 the assumption of the placebo null — retrieved
            nulls behave like random placebos — is false; see ``similar_placebos``.
        similar_placebos: The placebos are drawn from the case's topic too (``--placebo-kind similar``: far down the
            retriever's ranking), so their text effects have ``topic_scale`` as well.
        gold: Candidates the case names as gold (prior information; ``None``: the planted relevant ones). The rest
            (but the placebos) are retrieved candidates.
        weak_gold: ``(mean, sd)`` of weak effects of the gold candidates, drawn per replication (issue 35: real
            utilities, most too small to be proven one by one; they count in :meth:`_Replications.true_effects`, not
            in :meth:`truth`).
        weak_retrieved: ``(share, sd)``: that share of the retrieved candidates gets a weak effect ``N(0, sd²)``,
            drawn per replication.
        description: One line for the table.
    """

    name: str
    m: int = 20
    effects: dict[int, float] = field(default_factory=dict)
    interactions: dict[tuple[int, int], float] = field(default_factory=dict)
    base: float = 0.1
    outcome: Outcome = "pass"
    noise: float = 1.0
    text_effect_sd: float = 0.0
    text_effect_share: float = 1.0
    placebos: int = 0
    topic_scale: float = 1.0
    similar_placebos: bool = False
    gold: tuple[int, ...] | None = None
    weak_gold: tuple[float, float] = (0.0, 0.0)
    weak_retrieved: tuple[float, float] = (0.0, 0.0)
    description: str = ""

    def __post_init__(self) -> None:
        planted = {*self.effects, *(i for pair in self.interactions for i in pair)}
        if any(i >= self.m - self.placebos for i in planted):
            raise ValueError(f"scenario {self.name}: placebos (the last {self.placebos} candidates) must be null")

    @property
    def gold_indices(self) -> tuple[int, ...]:
        """The gold candidates (default: the planted relevant ones)."""
        return tuple(self.gold) if self.gold is not None else tuple(int(i) for i in np.flatnonzero(self.truth() == 1))

    @property
    def placebo_mask(self) -> NDArray[np.bool_]:
        """Which candidates are placebos."""
        return np.arange(self.m) >= self.m - self.placebos

    def document_effects(self, R: int, rng: np.random.Generator) -> NDArray[np.float64] | None:
        """Per-replication effects of the documents' text, shape ``(R, m)`` (``None`` when the scenario has none)."""
        if self.text_effect_sd <= 0:
            return None
        effects = self.text_effect_sd * rng.standard_normal((R, self.m))
        if self.text_effect_share < 1.0:
            effects = np.where(rng.random((R, self.m)) < self.text_effect_share, effects, 0.0)
        if self.topic_scale != 1.0:
            on_topic = ~self.placebo_mask if not self.similar_placebos else np.ones(self.m, dtype=bool)
            effects = effects * np.where(on_topic, self.topic_scale, 1.0)
        return np.asarray(effects, dtype=float)

    def weak_effects(self, R: int, rng: np.random.Generator) -> NDArray[np.float64] | None:
        """Per-replication weak effects ``(R, m)`` of the gold and retrieved candidates (``None`` when there are none)."""
        (g_mean, g_sd), (r_share, r_sd) = self.weak_gold, self.weak_retrieved
        if not (g_mean or g_sd or (r_share and r_sd)):
            return None
        out = np.zeros((R, self.m))
        gold = np.isin(np.arange(self.m), self.gold_indices)
        retrieved = ~gold & ~self.placebo_mask
        out[:, gold] = g_mean + g_sd * rng.standard_normal((R, int(gold.sum())))
        draw = r_sd * rng.standard_normal((R, int(retrieved.sum())))
        out[:, retrieved] = np.where(rng.random(draw.shape) < r_share, draw, 0.0)
        return out

    def truth(self) -> NDArray[np.int8]:
        """+1 relevant, −1 harmful, 0 null, per candidate (interaction members count as relevant)."""
        t = np.zeros(self.m, dtype=np.int8)
        for i, e in self.effects.items():
            t[i] = 1 if e > 0 else -1 if e < 0 else 0
        for (i, j), e in self.interactions.items():
            if e > 0:
                t[i] = t[j] = 1
        return t

    def mean(self, X: NDArray[Any], doc_effects: NDArray[Any] | None = None) -> NDArray[np.float64]:
        """Success probability (pass) or mean outcome (logprob) for inclusion matrices ``(R, N, m)`` (or ``(..., m)``
        without ``doc_effects``, the per-replication text effects ``(R, m)``)."""
        X = np.asarray(X, dtype=float)
        eff = np.zeros(self.m)
        for i, e in self.effects.items():
            eff[i] = e
        mu = self.base + X @ eff
        if doc_effects is not None:
            mu = mu + np.einsum("rnm,rm->rn", X, doc_effects)
        for (i, j), e in self.interactions.items():
            mu = mu + e * X[..., i] * X[..., j]
        if outcome_kind(self.outcome).binary:
            mu = np.clip(mu, 0.0, 1.0)
        return np.asarray(mu, dtype=float)

    def draw(
        self, X: NDArray[Any], rng: np.random.Generator, doc_effects: NDArray[Any] | None = None
    ) -> NDArray[np.float64]:
        """Outcomes for inclusion matrices ``(..., m)`` (``(R, N, m)`` with ``doc_effects``)."""
        mu = self.mean(X, doc_effects)
        if outcome_kind(self.outcome).binary:
            return (rng.random(mu.shape) < mu).astype(float)
        return mu + self.noise * rng.standard_normal(mu.shape)


# The real SmolLM2 shape and its variants below (each says what it changes).
_LOGPROB_SPARSE = Scenario(
    "logprob_sparse",
    20,
    {0: 4.0, 1: 3.0},
    base=-6.0,
    outcome="logprob",
    noise=0.3,
    text_effect_sd=1.5,
    text_effect_share=0.2,
    placebos=5,
    description="the real SmolLM2 shape: a fifth of the documents move the log-prob (SD 1.5 nats), the rest do "
    "not; +4.0/+3.0 real effects, noise SD 0.3, 5 placebos",
)
_LOGPROB_TILTED = replace(
    _LOGPROB_SPARSE,
    name="logprob_tilted",
    topic_scale=1.75,
    description="logprob_sparse, but the case's own candidates (on its topic) move the log-prob 1.75× more than "
    "random text, and the 5 placebos are random text (--placebo-kind random)",
)

SCENARIOS: dict[str, Scenario] = {
    "S1": Scenario(
        "S1", 20, {0: 0.4, 1: 0.3}, base=0.1, description="20 candidates, +0.4/+0.3, base 0.1 (the issue's S1)"
    ),
    "harmful": Scenario(
        "harmful", 20, {0: 0.4, 1: 0.3, 2: -0.3}, base=0.4, description="S1 effects plus a −0.3 distractor, base 0.4"
    ),
    "interaction": Scenario(
        "interaction",
        20,
        {0: 0.3},
        {(1, 2): 0.5},
        base=0.1,
        description="+0.3 main effect, a pair that helps only together (+0.5)",
    ),
    "saturated": Scenario(
        "saturated", 20, {}, base=0.97, description="solved without help (p=0.97): preflight skips it"
    ),
    "logprob": Scenario(
        "logprob",
        20,
        {0: 2.0, 1: 1.0},
        base=-6.0,
        outcome="logprob",
        noise=1.5,
        description="logprob outcome, +2.0/+1.0 nats, Gaussian noise SD 1.5",
    ),
    "logprob_text": Scenario(
        "logprob_text",
        20,
        {0: 2.0, 1: 1.5},
        base=-6.0,
        outcome="logprob",
        noise=0.3,
        text_effect_sd=0.4,
        placebos=5,
        description="a near-deterministic solver that reacts to any text: every document moves the log-prob "
        "(SD 0.4 nats), +2.0/+1.5 real effects, noise SD 0.3, 5 placebos",
    ),
    "logprob_sparse": _LOGPROB_SPARSE,
    "logprob_tilted": _LOGPROB_TILTED,
    "logprob_tilted_similar": replace(
        _LOGPROB_TILTED,
        name="logprob_tilted_similar",
        similar_placebos=True,
        description="logprob_tilted with placebos drawn from the case's topic (--placebo-kind similar)",
    ),
    "logprob_missed": replace(
        _LOGPROB_SPARSE,
        name="logprob_missed",
        effects={**_LOGPROB_SPARSE.effects, 2: 3.0},
        gold=(0, 1),
        description="logprob_sparse plus a relevant document the gold misses (+3.0 nats, retrieved first): what a "
        "null or gold weight costs on missed positives",
    ),
    "logprob_tilted_missed": replace(
        _LOGPROB_TILTED,
        name="logprob_tilted_missed",
        effects={**_LOGPROB_TILTED.effects, 2: 3.0},
        gold=(0, 1),
        description="logprob_tilted plus a relevant document the gold misses (+3.0 nats, retrieved first)",
    ),
    "logprob_weak": Scenario(
        "logprob_weak",
        12,
        {},
        base=-6.0,
        outcome="logprob",
        noise=2.0,
        placebos=4,
        gold=(0, 1),
        weak_gold=(0.8, 0.4),
        weak_retrieved=(0.5, 0.5),
        description="many weak effects (issue 35): 2 gold documents of N(0.8, 0.4²) nats, half of 6 retrieved ones "
        "N(0, 0.5²), 4 null placebos; noise SD 2 (a regression SE of ~0.4 nats at 90 trials)",
    ),
    "m60": Scenario("m60", 60, {0: 0.4, 1: 0.3}, base=0.1, description="S1 with 60 candidates"),
    "null": Scenario("null", 20, {}, base=0.3, description="no relevant document (global null), base 0.3"),
}


@dataclass
class DesignResult:
    """Operating characteristics of one design on one scenario."""

    scenario: str
    design: str
    replications: int
    precision: float
    fdr: float
    recall: float
    null_fpr: float
    harmful_recall: float
    calls_mean: float
    calls_max: int
    skipped: float
    seconds: float
    calls_by_kind: dict[str, float] = field(default_factory=dict)
    coalition_null_share: float = float("nan")
    #: recall on the relevant documents the gold misses (``nan`` when the scenario has none)
    recall_outside_gold: float = float("nan")
    counts: dict[str, float] = field(default_factory=dict, repr=False)
    cases: list[dict[str, Any]] | None = field(default=None, repr=False)

    def row(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("counts", "cases")}


def _doc_id(j: int) -> str:
    return f"d{j:03d}"


class _Replications:
    """The cases of one scenario as ``deltap mine`` sees them: ids, pools, planted truths and the simulated solver.

    Replication ``r`` is case ``"{scenario}-{r}"`` with candidates ``d000 … d{m-1}`` (pool order: gold, retrieved
    by rank, placebo), the scenario's effects plus, for text-effect scenarios, its own per-document effects.
    """

    def __init__(self, sc: Scenario, R: int, seed: int) -> None:
        import zlib

        from deltap.mining.pool import Candidate
        from deltap.solvers.simulated import SimulatedSolver

        self.sc, self.R, self.seed = sc, R, seed
        m = sc.m
        rng = np.random.default_rng([seed, zlib.crc32(sc.name.encode())])
        self.text = sc.document_effects(R, rng)
        self.weak = sc.weak_effects(R, rng)
        gold = list(sc.gold_indices)
        placebo = [int(j) for j in np.flatnonzero(sc.placebo_mask)]
        retrieved = [j for j in range(m) if j not in set(gold) | set(placebo)]
        self.order = [*gold, *retrieved, *placebo]  # pool position -> scenario index
        self.doc_ids = [_doc_id(j) for j in self.order]
        rank = {j: a + 1 for a, j in enumerate(retrieved)}
        self.candidates = (
            [Candidate(_doc_id(j), ("gold",)) for j in gold]
            + [Candidate(_doc_id(j), ("retrieved",), rank[j]) for j in retrieved]
            + [Candidate(_doc_id(j), ("placebo",)) for j in placebo]
        )
        self.retrieved = [_doc_id(j) for j in retrieved]
        self.gold = [_doc_id(j) for j in gold]
        self.solver = SimulatedSolver(
            {self.case_id(r): self.truth(r) for r in range(R)}, outcome=sc.outcome, noise=sc.noise, seed=seed
        )

    def case_id(self, r: int) -> str:
        return f"{self.sc.name}-{r}"

    def true_effects(self, r: int) -> NDArray[np.float64]:
        """Replication ``r``'s true main effect of every candidate ``(m,)`` in scenario order: planted, text and weak
        effects (interactions left out) — what a graded label estimates."""
        out = np.zeros(self.sc.m)
        for j, e in self.sc.effects.items():
            out[j] += e
        if self.text is not None:
            out += self.text[r]
        if self.weak is not None:
            out += self.weak[r]
        return out

    def truth(self, r: int) -> Any:
        from deltap.solvers.simulated import SimulatedTruth

        effects = {_doc_id(j): float(e) for j, e in self.sc.effects.items()}
        extra = (self.text[r] if self.text is not None else 0.0) + (self.weak[r] if self.weak is not None else 0.0)
        if self.text is not None or self.weak is not None:
            for j in range(self.sc.m):
                effects[_doc_id(j)] = effects.get(_doc_id(j), 0.0) + float(np.broadcast_to(extra, (self.sc.m,))[j])
        inter = {(_doc_id(i), _doc_id(j)): float(e) for (i, j), e in self.sc.interactions.items()}
        return SimulatedTruth(self.sc.base, effects, inter, answer=f"answer-{self.case_id(r)}")

    def case(self, r: int) -> Any:
        from deltap.cases import Case, CheckerSpec

        ref = f"answer-{self.case_id(r)}"
        return Case(
            self.case_id(r),
            f"question {self.case_id(r)}",
            tuple(self.gold),
            CheckerSpec("string_match", {"answers": [ref]}),
            ref,
        )


class _SimulatedTrials:
    """The simulation's :class:`~deltap.mining.procedure.TrialSource`: the simulated solver's own draws for the
    engine's trial seeds, without prompts or a trial log; a deterministic solver's repeated contexts cost no call
    (as in the engine's runner)."""

    def __init__(self, reps: _Replications, case_id: str, cfg: MiningConfig) -> None:
        self.reps, self.case_id, self.cfg = reps, case_id, cfg
        self.deterministic = reps.solver.deterministic
        self.calls = 0
        self.errors = 0
        self.answered: dict[bytes, float] = {}

    def run(self, kind: str, indices: Sequence[int], X: NDArray[np.bool_]) -> NDArray[np.float64]:
        X = np.asarray(X, dtype=bool)
        out = np.full(len(X), np.nan)
        todo: list[int] = []
        for a, row in enumerate(X):
            key = row.tobytes()
            if self.deterministic and key in self.answered:
                out[a] = self.answered[key]
            elif self.deterministic and any(X[b].tobytes() == key for b in todo):
                continue
            else:
                todo.append(a)
        if todo:
            seeds = [trial_seed(self.cfg.seed, self.case_id, int(indices[a]), kind) for a in todo]
            vals = self.reps.solver.outcomes(self.case_id, self.reps.doc_ids, X[todo], seeds, self.cfg.outcome)
            self.calls += len(todo)
            self.errors += int(np.isnan(vals).sum())
            out[todo] = vals
            if self.deterministic:
                for a, v in zip(todo, vals, strict=True):
                    if np.isfinite(v):
                        self.answered[X[a].tobytes()] = float(v)
                for a, row in enumerate(X):
                    if np.isnan(out[a]) and row.tobytes() in self.answered:
                        out[a] = self.answered[row.tobytes()]
        return out


def _datasets(n_rows: int, dataset_size: int) -> list[NDArray[np.int64]]:
    """Row indices of each dataset: consecutive blocks of ``dataset_size`` rows (the last one may be smaller)."""
    size = max(1, int(dataset_size))
    return [np.arange(a, min(a + size, n_rows)) for a in range(0, n_rows, size)]


def design_config(sc: Scenario, design: str, seed: int = 0, config: MiningConfig | None = None) -> MiningConfig:
    """The :class:`MiningConfig` with which ``mine()`` runs ``design`` on the scenario's cases (run seed ``seed``)."""
    kind, cfg = _parse_design(design, config)
    if kind == "naive":
        raise ValueError(f"{design!r} is the seed's naive design, not a deltap configuration")
    return _scenario_config(sc, replace(cfg, seed=seed))


def _scenario_config(sc: Scenario, cfg: MiningConfig) -> MiningConfig:
    n_plac = int(sc.placebo_mask.sum())
    return replace(
        cfg,
        outcome=sc.outcome,
        k=sc.m - n_plac - len(sc.gold_indices),
        n_placebo=n_plac,
        max_candidates=max(cfg.max_candidates, sc.m),
    )


def _parse_design(design: str, config: MiningConfig | None) -> tuple[str, MiningConfig]:
    """``(kind, config)``: kind ``naive`` (with ``budget`` = N) or ``engine``."""
    cfg = config or MiningConfig()
    if "@" in design:  # "fixed:128@0.03": another FDR level
        design, q_text = design.split("@", 1)
        cfg = replace(cfg, q=float(q_text))
    design, *options = design.split("/")  # "fixed:128/bernoulli", "adaptive/placebo", "adaptive/gw4"
    for opt in options:
        if opt in DESIGNS:
            cfg = replace(cfg, design=opt)
        elif opt in NULLS:
            cfg = replace(cfg, null=opt)
        elif opt == "lw":
            cfg = replace(cfg, gold_weight_learned=True)
        elif opt.startswith("gw"):
            cfg = replace(cfg, gold_weight=float(opt[2:]))
        else:
            raise ValueError(
                f"unknown design option {opt!r}; expected an inclusion design ({', '.join(DESIGNS)}), a null "
                f"({', '.join(NULLS)}) or gwW (gold weight W)"
            )
    try:
        if design.startswith("naive:"):
            return "naive", replace(cfg, budget=int(design.split(":", 1)[1]))
        if design.startswith("fixed:"):
            n = int(design.split(":", 1)[1])
            return "engine", replace(cfg, budget=n, first_look=n, preflight=0, coalitions=False)
        if design.startswith("adaptive:"):  # "adaptive:192": another per-case budget
            return "engine", replace(cfg, budget=int(design.split(":", 1)[1]))
        if design == "adaptive":
            return "engine", cfg
    except ValueError:
        pass
    raise ValueError(
        f"unknown design {design!r}; expected naive:N, fixed:N, adaptive or adaptive:BUDGET, optionally followed by "
        f"{' or '.join('/' + d for d in DESIGNS)} (the inclusion design), /zero, /placebo, /topic or /auto (the null), "
        "/lw (learned gold weight), /gwW (gold weight) and @q (the FDR level)"
    )


def engine_inputs(sc: Scenario, replications: int, seed: int) -> tuple[list[Any], Any, Any, Any]:
    """``(cases, corpus, solver, retriever)`` with which ``mine(cases, corpus, solver, retriever=retriever,
    config=design_config(sc, design))`` mines exactly the simulation's replications of ``sc`` (seed ``seed``)."""
    from types import SimpleNamespace

    from deltap.documents import Corpus, Document

    reps = _Replications(sc, replications, seed)
    corpus = Corpus([Document(_doc_id(j), f"simulated document {_doc_id(j)}") for j in range(sc.m)])
    ranked = [SimpleNamespace(doc_id=d, score=float(-a)) for a, d in enumerate(reps.retrieved)]

    class Retriever:
        def search(self, query: str, k: int = 10) -> list[Any]:
            return ranked[:k]

    return [reps.case(r) for r in range(replications)], corpus, reps.solver, Retriever()


def _mine_replications(
    parts: Sequence[tuple[_Replications, MiningConfig]], dataset_size: int, seed: int, graded: bool = False
) -> tuple[list[tuple[_Replications, int, CaseResult]], list[NDArray[np.int64]]]:
    """Mine every replication with the engine's per-case procedure, then run the engine's dataset step (null, BH,
    verdicts; with ``graded`` also the graded labels, :func:`deltap.mining.labels.label_dataset`) and coalition
    search on each dataset. Returns the results and the datasets (as result indices)."""
    from deltap.mining.labels import dataset_verdicts, label_dataset, record_coalitions
    from deltap.mining.pool import Pool
    from deltap.mining.procedure import case_weights, run_case

    results: list[tuple[_Replications, int, CaseResult]] = []
    sources: list[_SimulatedTrials] = []
    rules = {id(cfg): cfg.rule() for _, cfg in parts}
    for reps, cfg in parts:
        for r in range(reps.R):
            cid = reps.case_id(r)
            src = _SimulatedTrials(reps, cid, cfg)
            design = InclusionDesign(cfg.seed, cid, reps.sc.m, cfg.pi, cfg.design)
            run = run_case(
                src, design, cfg, rules[id(cfg)], None, case_weights(reps.candidates, cfg.stopping_gold_weight())
            )
            res = CaseResult(reps.case(r), Pool(cid, reps.candidates), "skipped")
            res.absorb(run)
            res.calls, res.errors = src.calls, src.errors
            results.append((reps, r, res))
            sources.append(src)
    order = np.arange(len(results))
    if len(parts) > 1:  # a mixture: its components' cases shuffled together before the datasets are cut
        order = np.random.default_rng([seed, 7]).permutation(len(results))
    blocks = [order[b] for b in _datasets(len(results), dataset_size)]
    cfg0 = parts[0][1]
    policy = cfg0.policy()
    for block in blocks:
        members = [results[j][2] for j in block]
        if graded:
            label_dataset(members, cfg0, policy)
        else:
            dataset_verdicts(members, cfg0, policy)
        if cfg0.coalitions:
            for j in block:
                res = results[j][2]
                if res.X is not None:
                    record_coalitions(res, sources[j], cfg0, policy)
    return results, blocks


def _labels_of(reps: _Replications, res: CaseResult) -> NDArray[np.int8]:
    lab = np.zeros(reps.sc.m, dtype=np.int8)
    for row in res.candidates:
        j = int(row["doc_id"][1:])
        lab[j] = 1 if row["verdict"] == "relevant" else -1 if row["verdict"] == "harmful" else 0
    return lab


def _summarise(
    name: str,
    design: str,
    results: Sequence[tuple[_Replications, int, CaseResult]],
    blocks: Sequence[NDArray[np.int64]],
    seconds: float,
    keep_cases: bool,
) -> DesignResult:
    nan = float("nan")
    tp = labels = relevant = null_labels = nulls = harm_tp = harmful = 0
    out_tp = out_relevant = 0
    calls, skipped = [], []
    by_kind: dict[str, float] = {"preflight": 0.0, "design": 0.0, "coalition": 0.0}
    coal_total = coal_null = 0
    false_rows = np.zeros(len(results))
    label_rows = np.zeros(len(results))
    cases = []
    for a, (reps, _r, res) in enumerate(results):
        truth = reps.sc.truth()
        lab = _labels_of(reps, res)
        rel = lab == 1
        tp += int((rel & (truth == 1)).sum())
        labels += int(rel.sum())
        relevant += int((truth == 1).sum())
        outside = (truth == 1) & ~np.isin(np.arange(reps.sc.m), reps.sc.gold_indices)
        out_tp += int((rel & outside).sum())
        out_relevant += int(outside.sum())
        null_labels += int(((lab != 0) & (truth == 0)).sum())
        nulls += int((truth == 0).sum())
        harm_tp += int(((lab == -1) & (truth == -1)).sum())
        harmful += int((truth == -1).sum())
        false_rows[a] = (rel & (truth != 1)).sum()
        label_rows[a] = rel.sum()
        calls.append(res.calls)
        skipped.append(res.status in ("saturated", "unsolvable"))
        kinds = res.info.get("calls_by_kind", {})
        for k in by_kind:
            by_kind[k] += float(kinds.get(k, 0))
        for c in res.coalitions:
            coal_total += 1
            coal_null += any(truth[int(d[1:])] == 0 for d in c)
        if keep_cases:
            cases.append(
                {
                    "case_id": res.case.case_id,
                    "status": res.status,
                    "calls": res.calls,
                    "trials": int(len(res.y)) if res.y is not None else 0,
                    "verdicts": {row["doc_id"]: row["verdict"] for row in res.candidates},
                    "coalitions": res.coalitions,
                    "preflight_calls": int(kinds.get("preflight", 0)),
                    "design_calls": int(kinds.get("design", 0)),
                    "coalition_calls": int(kinds.get("coalition", 0)),
                }
            )
    R = len(results)
    fdps = [false_rows[b].sum() / max(label_rows[b].sum(), 1) for b in blocks]
    return DesignResult(
        scenario=name,
        design=design,
        replications=R,
        precision=tp / labels if labels else nan,
        fdr=float(np.mean(fdps)) if fdps else nan,
        recall=tp / relevant if relevant else nan,
        null_fpr=null_labels / nulls if nulls else nan,
        harmful_recall=harm_tp / harmful if harmful else nan,
        calls_mean=float(np.mean(calls)) if R else nan,
        calls_max=int(max(calls)) if R else 0,
        skipped=float(np.mean(skipped)) if R else nan,
        seconds=seconds,
        calls_by_kind={k: v / max(R, 1) for k, v in by_kind.items()},
        coalition_null_share=coal_null / coal_total if coal_total else nan,
        recall_outside_gold=out_tp / out_relevant if out_relevant else nan,
        cases=cases if keep_cases else None,
    )


def _naive(sc: Scenario, N: int, replications: int, seed: int) -> tuple[NDArray[np.int8], NDArray[Any]]:
    """The seed's design: ``N`` coin-flip trials, "relevant" when ΔP > 0.1 (0.5 nats) — labels ``(R, m)``."""
    import zlib

    rng = np.random.default_rng([seed, zlib.crc32(sc.name.encode()), N])
    R = replications
    doc_effects = sc.document_effects(R, rng)
    X = rng.random((R, N, sc.m)) < 0.5
    y = sc.draw(X, rng, doc_effects)
    kind = outcome_kind(sc.outcome)
    dm = diff_in_means(X, y, binary=kind.binary)
    thr = kind.default_min_effect  # the seed's naive threshold: 0.1 (pass), 0.5 nats (logprob)
    return np.where(dm.delta > thr, 1, 0).astype(np.int8), np.full(R, N)


def _naive_result(
    name: str,
    design: str,
    parts: Sequence[tuple[Scenario, NDArray[np.int8], NDArray[Any]]],
    dataset_size: int,
    seconds: float,
    seed: int,
) -> DesignResult:
    nan = float("nan")
    tp = labels = relevant = null_labels = nulls = 0
    f_rows, l_rows, calls = [], [], []
    for sc, lab, c in parts:
        truth = sc.truth()
        rel = lab == 1
        tp += int((rel & (truth == 1)).sum())
        labels += int(rel.sum())
        relevant += int((truth == 1).sum()) * len(lab)
        null_labels += int(((lab != 0) & (truth == 0)).sum())
        nulls += int((truth == 0).sum()) * len(lab)
        f_rows.append((rel & (truth != 1)).sum(1))
        l_rows.append(rel.sum(1))
        calls.append(c)
    f, n, cl = np.concatenate(f_rows), np.concatenate(l_rows), np.concatenate(calls)
    if len(parts) > 1:
        order = np.random.default_rng([seed, 7]).permutation(len(f))
        f, n = f[order], n[order]
    fdps = [f[b].sum() / max(n[b].sum(), 1) for b in _datasets(len(f), dataset_size)]
    return DesignResult(
        name,
        design,
        len(f),
        tp / labels if labels else nan,
        float(np.mean(fdps)),
        tp / relevant if relevant else nan,
        null_labels / nulls if nulls else nan,
        nan,
        float(cl.mean()),
        int(cl.max()),
        0.0,
        seconds,
    )


def run_design(
    sc: Scenario,
    design: str,
    replications: int,
    seed: int,
    config: MiningConfig | None = None,
    dataset_size: int = 40,
    keep_cases: bool = False,
) -> DesignResult:
    """Simulate one design on a scenario.

    Designs: ``naive:N``, ``fixed:N``, ``adaptive`` (the default config) or ``adaptive:BUDGET``, each optionally with
    ``/`` options and ``@q`` (see the module docstring). BH runs over datasets of ``dataset_size`` replications.
    ``config`` overrides the :class:`MiningConfig` defaults; ``seed`` is the run seed and seeds the planted truth;
    ``keep_cases`` keeps every case's verdicts, calls and coalitions in :attr:`DesignResult.cases`.
    """
    t0 = time.perf_counter()
    kind, cfg = _parse_design(design, config)
    if kind == "naive":
        lab, calls = _naive(sc, cfg.budget, replications, seed)
        return _naive_result(sc.name, design, [(sc, lab, calls)], dataset_size, time.perf_counter() - t0, seed)
    cfg = _scenario_config(sc, replace(cfg, seed=seed))
    results, blocks = _mine_replications([(_Replications(sc, replications, seed), cfg)], dataset_size, seed)
    return _summarise(sc.name, design, results, blocks, time.perf_counter() - t0, keep_cases)


#: the scores :func:`run_graded` compares with the true effects, in table order
GRADED_SCORES = ("graded (gold prior)", "graded (no-gold prior)", "verdict", "regression effect", "ΔP")


@dataclass
class GradedResult:
    """How well each score of a candidate orders its true effect (issue 35 item 1), on one scenario and design.

    Attributes:
        tau: Per score (:data:`GRADED_SCORES`), the mean over cases of the within-case Kendall τ-b between the score
            and the true effects (a score constant on a case whose true effects are not counts τ = 0: it orders
            nothing).
        pairs: Per score, the mean over cases of the share of candidate pairs whose true effects differ that the score
            orders the same way (a tie in the score counts ½; Harrell's concordance). Unlike τ-b it does not reward
            a score for tying what the truth ties (the planted exact nulls), which a binary label does by
            construction.
        spearman: Per score, Spearman's ρ over every mined candidate of every case (pooled).
        coverage: Per prior, the share of candidates whose credible interval holds the true effect.
        coverage_by_group: Per prior and group, the same.
        placebo_abs: Mean |score| of the placebos: the raw regression effect and each prior's utility.
        placebo_true_abs: Mean |true effect| of the placebos.
    """

    scenario: str
    design: str
    replications: int
    tau: dict[str, float]
    pairs: dict[str, float]
    spearman: dict[str, float]
    coverage: dict[str, float]
    coverage_by_group: dict[str, dict[str, float]]
    placebo_abs: dict[str, float]
    placebo_true_abs: float
    level: float
    seconds: float


def _concordance(score: NDArray[np.float64], truth: NDArray[np.float64]) -> float:
    """Share of the pairs with different truths that ``score`` orders as the truth does (score ties count ½)."""
    ds = np.sign(score[:, None] - score[None, :])
    dt = np.sign(truth[:, None] - truth[None, :])
    upper = np.triu(dt != 0, 1)
    n = int(upper.sum())
    if n == 0:
        return float("nan")
    agree = np.where(ds == 0, 0.5, (ds == dt).astype(float))
    return float(agree[upper].sum() / n)


def run_graded(
    sc: Scenario,
    design: str,
    replications: int,
    seed: int,
    config: MiningConfig | None = None,
    dataset_size: int = 40,
) -> GradedResult:
    """Mine ``sc`` with ``design`` through the engine's own procedure and labelling step (graded labels included) and
    measure how well the graded labels, the verdicts, the raw regression effect and the raw ΔP order the true effects
    of each replication (:meth:`_Replications.true_effects`), the graded intervals' coverage, and how far placebos
    shrink."""
    from scipy import stats

    from deltap.mining.shrinkage import LEVEL

    t0 = time.perf_counter()
    kind, cfg = _parse_design(design, config)
    if kind == "naive":
        raise ValueError("run_graded needs an engine design (fixed:N, adaptive...), not the naive one")
    cfg = _scenario_config(sc, replace(cfg, seed=seed))
    reps = _Replications(sc, replications, seed)
    results, _blocks = _mine_replications([(reps, cfg)], dataset_size, seed, graded=True)
    taus: dict[str, list[float]] = {k: [] for k in GRADED_SCORES}
    conc: dict[str, list[float]] = {k: [] for k in GRADED_SCORES}
    pooled: dict[str, list[float]] = {k: [] for k in GRADED_SCORES}
    truth_all: list[float] = []
    hits: dict[str, list[tuple[str, bool]]] = {"gold": [], "no_gold": []}
    plac: dict[str, list[float]] = {"regression effect": [], "gold": [], "no_gold": []}
    plac_true: list[float] = []
    for _reps, r, res in results:
        rows = [row for row in res.candidates if row.get("graded")]
        if len(rows) < 2:
            continue
        true = reps.true_effects(r)
        t = np.array([true[int(row["doc_id"][1:])] for row in rows])
        scores = {
            "graded (gold prior)": [row["graded"]["gold"]["utility"] for row in rows],
            "graded (no-gold prior)": [row["graded"]["no_gold"]["utility"] for row in rows],
            "verdict": [{"relevant": 1.0, "harmful": -1.0}.get(row["verdict"], 0.0) for row in rows],
            "regression effect": [row["regression_effect"]["coef"] for row in rows],
            "ΔP": [row["delta_p"] for row in rows],
        }
        for name, v in scores.items():
            x = np.asarray(v, dtype=float)
            if np.ptp(t) == 0:
                continue
            taus[name].append(0.0 if np.ptp(x) == 0 else float(stats.kendalltau(x, t).statistic))
            conc[name].append(_concordance(x, t))
            pooled[name].extend(x.tolist())
        truth_all.extend(t.tolist())
        for row, tj in zip(rows, t, strict=True):
            placebo = row["sources"] == ["placebo"]
            for prior in ("gold", "no_gold"):
                lo, hi = row["graded"][prior]["ci"]
                group = "placebo" if placebo else "gold" if "gold" in row["sources"] else "retrieved"
                hits[prior].append((group, bool(lo - 1e-9 <= tj <= hi + 1e-9)))
            if placebo:
                plac["regression effect"].append(abs(row["regression_effect"]["coef"]))
                plac["gold"].append(abs(row["graded"]["gold"]["utility"]))
                plac["no_gold"].append(abs(row["graded"]["no_gold"]["utility"]))
                plac_true.append(abs(float(tj)))
    nan = float("nan")
    return GradedResult(
        sc.name,
        design,
        replications,
        {k: float(np.mean(v)) if v else nan for k, v in taus.items()},
        {k: float(np.mean(v)) if v else nan for k, v in conc.items()},
        {
            k: float(stats.spearmanr(v, truth_all).statistic) if len(v) == len(truth_all) and v else nan
            for k, v in pooled.items()
        },
        {p: float(np.mean([h for _, h in v])) if v else nan for p, v in hits.items()},
        {
            p: {g: float(np.mean([h for gg, h in v if gg == g])) for g in sorted({gg for gg, _ in v})}
            for p, v in hits.items()
        },
        {k: float(np.mean(v)) if v else nan for k, v in plac.items()},
        float(np.mean(plac_true)) if plac_true else nan,
        LEVEL,
        time.perf_counter() - t0,
    )


@dataclass(frozen=True)
class Mixture:
    """A dataset whose cases differ: each replication is a case drawn from ``components`` with the given weights."""

    name: str
    components: tuple[tuple[float, Scenario], ...]
    description: str = ""


MIXTURES: dict[str, Mixture] = {
    "mixed": Mixture(
        "mixed",
        (
            (0.4, SCENARIOS["S1"]),
            (0.3, Scenario("easy", 20, {0: 0.6}, base=0.2)),
            (0.15, Scenario("saturated", 20, {}, base=0.97)),
            (0.15, Scenario("unsolvable", 20, {}, base=0.0)),
        ),
        "a realistic mix: 40% S1, 30% one +0.6 document (base 0.2), 15% saturated, 15% unsolvable",
    ),
}


def run_mixture(
    mix: Mixture, design: str, replications: int, seed: int, config: MiningConfig | None = None, dataset_size: int = 40
) -> DesignResult:
    """Run a design on every component (replications split by weight); BH runs over datasets that mix the components."""
    t0 = time.perf_counter()
    kind, cfg = _parse_design(design, config)
    sizes = [(sc, max(1, round(w * replications))) for w, sc in mix.components]
    if kind == "naive":
        parts = [(sc, *_naive(sc, cfg.budget, n, seed)) for sc, n in sizes]
        return _naive_result(mix.name, design, parts, dataset_size, time.perf_counter() - t0, seed)
    base = replace(cfg, seed=seed)
    runs = [(_Replications(sc, n, seed), _scenario_config(sc, base)) for sc, n in sizes]
    results, blocks = _mine_replications(runs, dataset_size, seed)
    return _summarise(mix.name, design, results, blocks, time.perf_counter() - t0, False)


def run_scenario(
    sc: Scenario,
    designs: Sequence[str],
    replications: int,
    seed: int,
    config: MiningConfig | None = None,
    dataset_size: int = 40,
) -> list[DesignResult]:
    """Every design on one scenario."""
    return [run_design(sc, d, replications, seed, config, dataset_size) for d in designs]


DEFAULT_DESIGNS = ("naive:10", "naive:128", "fixed:96", "fixed:128", "fixed:160", "adaptive", "adaptive:160")


def simulate(
    scenarios: Sequence[str] = (*SCENARIOS, "mixed"),
    designs: Sequence[str] = DEFAULT_DESIGNS,
    replications: int = 1000,
    seed: int = 0,
    config: MiningConfig | None = None,
    dataset_size: int = 40,
) -> list[DesignResult]:
    """Run the simulation benchmark; returns one :class:`DesignResult` per (scenario, design).

    ``dataset_size``: cases per simulated dataset, the family of the dataset-wide BH step (1 = per case).
    """
    unknown = [s for s in scenarios if s not in SCENARIOS and s not in MIXTURES]
    if unknown:
        from deltap.errors import DeltapError

        raise DeltapError(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join([*SCENARIOS, *MIXTURES])}")
    out: list[DesignResult] = []
    for name in scenarios:
        if name in MIXTURES:
            out += [run_mixture(MIXTURES[name], d, replications, seed, config, dataset_size) for d in designs]
        else:
            out += run_scenario(SCENARIOS[name], designs, replications, seed, config, dataset_size)
    return out
