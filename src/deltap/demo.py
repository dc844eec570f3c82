"""``deltap demo``: the whole pipeline, offline, on the embedded defaults, in a few minutes.

1. **Corpus** — one document per module, class, function and method of a few installed standard-library modules
   (:data:`STDLIB_MODULES`, built with :func:`deltap.corpora.python_package.build_python_corpus`; ~250 documents).
2. **Cases** — the bundled benchmark ``deltap/data/stdlib_benchmark.yaml`` (56 questions with checkable answers about
   those modules; gold ids checked against the corpus). ``cases`` of them are mined: the questions phrased as users
   ask them (no module or function name, so the retrievers differ) first, round-robin over the modules.
3. **Mining** — the local SmolLM2-135M solver (llama.cpp, in-process) with the ``logprob`` outcome, candidate pools
   from the dense retriever, placebo controls, ``calls`` solver calls in total, into ``OUT/run`` (set up by
   :func:`deltap.mining.setup.prepare_run`, as ``deltap mine`` is).
4. **Evaluation** — BM25, dense (all-MiniLM-L6-v2 in the embedded Qdrant store) and hybrid (RRF) retrieve for every
   mined case and are compared against the mined qrels: ``OUT/run/evaluation/compare.json`` and ``runs/*.trec``.
5. **End to end** — each retriever's top ``retrieved_k`` and no context at all go into the prompt of every mined
   question, the solver is asked with fresh seeds (:func:`deltap.endtoend.evaluate_end_to_end`): success (or mean
   log-probability) per retriever, and whether the gold or the mined qrels predict it: ``OUT/run/endtoend/``.
6. **Report** — ``OUT/run/report.html`` (self-contained) and ``OUT/run/report.md``.

Nothing is downloaded: the embedding model and the LLM come from pip packages.
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltap.cases import Case
from deltap.documents import Corpus
from deltap.errors import DeltapError
from deltap.mining.progress import MiningProgress, planned_calls
from deltap.outcomes import outcome_kind

if TYPE_CHECKING:
    from deltap.mining.setup import SolverSettings
    from deltap.retrieval.base import Retriever
    from deltap.run_layout import RunDir

__all__ = [
    "BENCHMARK_PATH",
    "DEMO_METRICS",
    "DEMO_RETRIEVERS",
    "STDLIB_MODULES",
    "DemoConfig",
    "DemoResult",
    "build_demo_corpus",
    "load_demo_cases",
    "run_demo",
    "select_cases",
]

#: Standard-library modules the demo corpus documents (pure-Python or stable C modules present on every CPython).
STDLIB_MODULES: tuple[str, ...] = (
    "json",
    "heapq",
    "bisect",
    "textwrap",
    "itertools",
    "functools",
    "string",
    "shlex",
    "fnmatch",
    "base64",
    "difflib",
    "math",
)
BENCHMARK_PATH = Path(__file__).resolve().parent / "data" / "stdlib_benchmark.yaml"
DEMO_RETRIEVERS: tuple[str, ...] = ("bm25", "dense", "hybrid")
DEMO_METRICS: tuple[str, ...] = ("hit_rate@5", "recall@10", "MRR@10", "ndcg@10")
#: the systems of the demo's end-to-end step: the retrievers and the no-context control
E2E_SYSTEMS: tuple[str, ...] = (*DEMO_RETRIEVERS, "none")
RUN_DEPTH = 20
MAX_DOC_CHARS = 1000
PREFLIGHT = 2
VERIFY_TRIALS = 4

Say = Callable[[str], None]
#: what ``--budget`` (``DemoConfig(budget=...)``) says, once, before it is read as ``--calls``
BUDGET_DEPRECATED = (
    "deltap demo --budget is deprecated: it is total solver calls, now --calls (deltap mine --budget is design trials "
    "per case)"
)


@dataclass(frozen=True)
class DemoConfig:
    """Knobs of the demo.

    Args:
        out: Output folder (created; an existing demo output there is resumed by the mining trial log).
        cases: How many benchmark questions to mine.
        calls: Solver calls in total, split evenly over the cases (each case keeps what its preflight and its
            coalition checks can cost, :func:`deltap.mining.procedure.call_ceiling`; the rest are design trials).
            140 keeps the default demo, end-to-end step included, under 5 minutes on 2 idle cores (measured:
            ~1.9 s per local call with 9 placebos per question; 150 took 305 s with the end-to-end step and labelled
            the same gold documents); 170 and 200 decide no more labels (README, "The demo").
        solver: Solver spec for :func:`deltap.solvers.make_solver` (``local`` = SmolLM2 in-process).
        outcome: ``logprob`` (default: informative even for a 135M model) or ``pass``.
        seed: Run seed (pool placebos, trial designs, bootstrap).
        embedder: Embedder spec of the dense retriever (``None`` = all-MiniLM-L6-v2; ``hash`` for quick tests).
        retrieved_k: Retrieved candidates per case. 3 (not 5): shorter prompts and more trials per candidate, so
            more labels are decided within the budget (measured with 3 placebos per question: 1.09 s per local call
            instead of 1.33 s, 26 % undecided instead of 38 %).
        n_placebo: Placebo candidates per case (9: 54 over the default 6 cases — the placebo null of the logprob
            outcome needs about 50 over the run, :data:`deltap.mining.empirical_null.RECOMMENDED_PLACEBOS`).
        progress: Show progress bars.
        endtoend: Run the end-to-end step (:data:`E2E_SYSTEMS` on the mined questions, ``retrieved_k`` documents
            each, fresh seeds; a deterministic local model answers identical prompts once: at most
            ``cases × len(E2E_SYSTEMS)`` calls).
        budget: Deprecated name of ``calls`` (``deltap mine``'s budget is design trials per case, this one was total
            calls); warns and sets ``calls``.
    """

    out: Path
    cases: int = 6
    calls: int = 140
    solver: str = "local"
    outcome: str = "logprob"
    seed: int = 0
    embedder: str | None = None
    retrieved_k: int = 3
    n_placebo: int = 9
    progress: bool = True
    endtoend: bool = True
    budget: int | None = None

    def __post_init__(self) -> None:
        if self.budget is not None:
            warnings.warn(BUDGET_DEPRECATED, DeprecationWarning, stacklevel=3)
            object.__setattr__(self, "calls", self.budget)
            object.__setattr__(self, "budget", None)
        outcome_kind(self.outcome, "--outcome")  # an unknown outcome is refused here, naming the known ones
        # --cases and --calls: run_demo's first step (check_ranges reads the benchmark; `deltap --help` builds the
        # default config and must not)


#: design trials a case needs at the least (fewer cannot decide a label)
MIN_DESIGN_TRIALS = 8


@functools.lru_cache(maxsize=1)
def benchmark_size(path: Path = BENCHMARK_PATH) -> int:
    """How many questions the demo's bundled benchmark holds (the most ``--cases`` can ask for)."""
    from deltap.cases import read_benchmark_yaml

    return len(read_benchmark_yaml(path))


def check_ranges(cases: int, calls: int, solver: str) -> None:
    """Refuse ``--cases`` and ``--calls`` out of range in one line, before any work (no corpus, no index, no call).

    ``--cases`` runs from 1 to the benchmark's size; the calls must give every case its preflight, its coalition
    checks and at least :data:`MIN_DESIGN_TRIALS` design trials (what a deterministic solver, such as the local
    model, asks once is asked twice by a stochastic one).

    Raises:
        DeltapError: the first range that does not hold, saying what to give instead.
    """
    from deltap.mining.config import MiningConfig
    from deltap.mining.procedure import call_ceiling
    from deltap.solvers import solver_kind

    size = benchmark_size()
    if not 1 <= cases <= size:
        raise DeltapError(f"--cases {cases} is out of range: the demo's benchmark has {size} questions; give 1-{size}")
    deterministic = solver_kind(solver).capabilities.deterministic is True
    pre, _, coalition = call_ceiling(MiningConfig(preflight=PREFLIGHT, verify_trials=VERIFY_TRIALS), deterministic)
    if calls // cases - pre - coalition < MIN_DESIGN_TRIALS:
        raise DeltapError(_calls_range_error(calls, cases, pre, coalition))


def _calls_range_error(calls: int, cases: int, pre: int, coalition: int) -> str:
    need = MIN_DESIGN_TRIALS + pre + coalition
    most = calls // need
    fewer = "" if most < 1 else f", or --cases {most}" if most == 1 else f", or --cases {most} or fewer"
    return (
        f"--calls {calls} is too few for {cases} cases: each case needs at least {need} calls ({pre} preflight, "
        f"{MIN_DESIGN_TRIALS} design trials, {coalition} coalition checks); give --calls {need * cases} or more{fewer}"
    )


@dataclass
class DemoResult:
    """Where everything went, and how long each step took (seconds)."""

    out: Path
    corpus_path: Path
    run_dir: Path
    report_html: Path
    report_md: Path
    n_documents: int
    case_ids: list[str]
    timings: dict[str, float] = field(default_factory=dict)
    comparison: dict[str, Any] = field(default_factory=dict)
    placebo: dict[str, Any] = field(default_factory=dict)  # run.json's placebo summary (its check is printed last)
    endtoend: dict[str, Any] = field(default_factory=dict)  # RUN_DIR/endtoend/results.json (empty: step skipped)
    headline: list[str] = field(default_factory=list)  # what mining found, then the report's answer (report.headline)


def build_demo_corpus(modules: Sequence[str] = STDLIB_MODULES, max_chars: int | None = MAX_DOC_CHARS) -> Corpus:
    """The demo corpus: the installed standard-library ``modules``, one document per symbol.

    Args:
        modules: Module names to document.
        max_chars: Texts longer than this are cut at the last line break before it and end with ``[…]``; the
            original length is kept in ``metadata["truncated_from"]``. Prompt tokens are the whole cost of a local
            solver call, and a few long class docstrings (``difflib.SequenceMatcher``: 3,456 characters) would
            otherwise dominate every prompt they appear in. ``None`` keeps every text whole.
    """
    from deltap.corpora.python_package import build_python_corpus
    from deltap.documents import Document

    built = build_python_corpus(list(modules))
    docs = []
    for doc in built:
        if max_chars is not None and len(doc.text) > max_chars:
            cut = doc.text.rfind("\n", 0, max_chars)
            text = doc.text[: cut if cut > max_chars // 2 else max_chars].rstrip() + "\n[…]"
            doc = Document(doc.doc_id, text, doc.title, {**doc.metadata, "truncated_from": len(doc.text)})
        docs.append(doc)
    return Corpus(docs, name="stdlib:" + ",".join(modules))


def load_demo_cases(corpus: Corpus, path: Path = BENCHMARK_PATH) -> list[Case]:
    """The bundled benchmark with gold ids resolved against ``corpus`` (an unknown id is an error, not a skip)."""
    from deltap.cases import read_benchmark_yaml, resolve_gold

    cases, _ = resolve_gold(read_benchmark_yaml(path), corpus, on_missing="error")
    return cases


def select_cases(cases: Sequence[Case], n: int) -> list[Case]:
    """``n`` cases: the questions phrased as users ask them (``template: paraphrase``, no module or function name)
    first, then the others; each group taken round-robin over its ``category`` (file order within a category), so
    the demo covers a spread of modules with questions on which lexical and dense retrieval differ."""
    paraphrased = [c for c in cases if c.metadata.get("template") == "paraphrase"]
    others = [c for c in cases if c.metadata.get("template") != "paraphrase"]
    return (_round_robin(paraphrased) + _round_robin(others))[: max(0, n)]


def _round_robin(cases: Sequence[Case]) -> list[Case]:
    groups: dict[str, list[Case]] = {}
    for case in cases:
        groups.setdefault(str(case.metadata.get("category", "")), []).append(case)
    picked: list[Case] = []
    depth = 0
    while len(picked) < len(cases):
        for members in groups.values():
            if depth < len(members):
                picked.append(members[depth])
        depth += 1
    return picked


def _stage(say: Say, timings: dict[str, float], name: str, started: float, message: str) -> None:
    timings[name] = time.perf_counter() - started
    say(f"  {message} ({timings[name]:.1f} s)")


def _retrieve(retriever: Any, cases: Sequence[Case], depth: int) -> dict[str, dict[str, float]]:
    hits = retriever.search_batch([c.query for c in cases], k=depth)
    return {c.case_id: {h.doc_id: float(h.score) for h in row} for c, row in zip(cases, hits, strict=True)}


def run_demo(config: DemoConfig, say: Say = print) -> DemoResult:
    """Run the demo end to end (see the module docstring) and return where everything is."""
    from deltap.documents import write_corpus_jsonl
    from deltap.report import write_html_report, write_markdown_report
    from deltap.retrieval import build_retriever
    from deltap.retrieval.hybrid import HybridRetriever
    from deltap.run_layout import RunDir

    check_ranges(config.cases, config.calls, config.solver)  # before any work: nothing written, nothing indexed
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    rd = RunDir(out / "run")
    run_dir = rd.root
    timings: dict[str, float] = {}
    t_all = time.perf_counter()

    say(f"[1/6] corpus: documenting {len(STDLIB_MODULES)} standard-library modules")
    t0 = time.perf_counter()
    corpus = build_demo_corpus()
    corpus_path = write_corpus_jsonl(corpus, out / "corpus.jsonl")
    cut = sum(1 for d in corpus if "truncated_from" in d.metadata)
    _stage(
        say,
        timings,
        "corpus",
        t0,
        f"{len(corpus)} documents ({cut} long texts cut to {MAX_DOC_CHARS} characters) -> {corpus_path}",
    )

    say("[2/6] retrievers: BM25, dense (embedded Qdrant), hybrid (RRF)")
    t0 = time.perf_counter()
    all_cases = load_demo_cases(corpus)
    cases = select_cases(all_cases, config.cases)
    bm25 = build_retriever("bm25", corpus)
    dense = _build_dense(corpus, out, config)
    hybrid = HybridRetriever(corpus, [bm25, dense])
    retrievers = {"bm25": bm25, "dense": dense, "hybrid": hybrid}
    _stage(
        say,
        timings,
        "index",
        t0,
        f"indexed {len(corpus)} documents; {len(cases)} of {len(all_cases)} benchmark cases selected",
    )

    # Solver calls per case = preflight + design trials + coalition checks; the procedure's own ceiling
    # (call_ceiling) says what the preflight and the coalition checks can cost with this solver.
    from deltap.mining.config import MiningConfig
    from deltap.mining.procedure import call_ceiling
    from deltap.mining.setup import build_solver
    from deltap.solvers.base import is_deterministic

    settings = _solver_settings(config, cases)
    solver = build_solver(settings, cases=cases, outcome=config.outcome, seed=config.seed)[0]
    settings = replace(settings, solver=solver)  # built once: the run set-up reuses it
    det = is_deterministic(solver)
    pre, _, coalition = call_ceiling(MiningConfig(preflight=PREFLIGHT, verify_trials=VERIFY_TRIALS), det)
    per_case = config.calls // len(cases) - pre - coalition
    if per_case < MIN_DESIGN_TRIALS:  # DemoConfig checked the ranges first; a plug-in solver may differ in kind
        raise DeltapError(_calls_range_error(config.calls, len(cases), pre, coalition))
    mining = _mining_config(config, per_case)
    plan = planned_calls(mining, deterministic=det)
    # the calls by phase, tokens, cost and time follow in the plan mine() shows before its first call
    say(
        f"[3/6] mining: {len(cases)} cases, --calls {config.calls} (≤{plan.per_case} calls per case); "
        f"solver={config.solver}, outcome={config.outcome}"
    )
    t0 = time.perf_counter()
    _mine(config, corpus, cases, settings, dense, rd, mining, say)
    _stage(say, timings, "mining", t0, f"verified dataset -> {rd.dataset}")
    from deltap.mining.outputs import graded_line
    from deltap.mining.plan import plan_time_line

    timed = plan_time_line(rd.summary().get("plan_vs_spent"))  # the time the plan printed against the time spent
    if timed:
        say(f"  {timed}")

    graded = graded_line(rd.summary(), outcome_kind(config.outcome).unit)  # "likely helps, not proven"
    if graded:
        say(f"  {graded}")

    comparison = _evaluate(config, cases, retrievers, rd, say, timings)

    say(f"[5/6] end to end: {', '.join(E2E_SYSTEMS)}: each one's top {config.retrieved_k} in the prompt, fresh seeds")
    t0 = time.perf_counter()
    endtoend = _end_to_end(config, corpus, cases, solver, retrievers, run_dir, say) if config.endtoend else {}
    _stage(
        say,
        timings,
        "endtoend",
        t0,
        _endtoend_line(endtoend, rd.endtoend.root) if endtoend else "skipped (--no-endtoend)",
    )

    say("[6/6] report")
    t0 = time.perf_counter()
    html = write_html_report(run_dir, corpus=corpus)
    md = write_markdown_report(run_dir)
    _stage(say, timings, "report", t0, f"{html}")
    from deltap.report.headline import answer_lines

    headline = answer_lines(run_dir)
    timings["total"] = time.perf_counter() - t_all
    return DemoResult(
        out=out,
        corpus_path=corpus_path,
        run_dir=run_dir,
        report_html=html,
        report_md=md,
        n_documents=len(corpus),
        case_ids=[c.case_id for c in cases],
        timings=timings,
        comparison=comparison,
        placebo=dict(rd.summary().get("placebo") or {}),
        endtoend=endtoend,
        headline=headline,
    )


def _evaluate(
    config: DemoConfig,
    cases: Sequence[Case],
    retrievers: Mapping[str, Retriever],
    rd: RunDir,
    say: Say,
    timings: dict[str, float],
) -> dict[str, Any]:
    """Stage 4: the retrievers compared on the mined qrels, written into the run directory (``{}`` when no mined
    case has a relevant document)."""
    from deltap.qrels import read_beir_qrels

    say(f"[4/6] evaluation: {', '.join(DEMO_RETRIEVERS)} against the mined qrels")
    t0 = time.perf_counter()
    qrels = read_beir_qrels(rd.qrels_beir) if rd.qrels_beir.is_file() else {}
    # The questions of the qrels, under the evaluation engine's rule for those without a relevant document (one
    # rule: `deltap evaluate` on the same qrels gives the same means over the same questions).
    judged = [c for c in cases if c.case_id in qrels]
    empty = [c for c in judged if not any(g > 0 for g in qrels[c.case_id].values())]
    comparison: dict[str, Any] = {}
    if len(empty) < len(judged):
        runs = {name: _retrieve(r, judged, RUN_DEPTH) for name, r in retrievers.items()}
        comparison = _compare({c.case_id: qrels[c.case_id] for c in judged}, runs, config.seed)
        rd.write_comparison(comparison, runs)
        for line in _score_lines(comparison):
            say(line)
        say(
            f"  scored as deltap evaluate scores them: a question without a relevant document, 0 (here {len(empty)}); "
            f"one without any judgement, left out (here {len(cases) - len(judged)})"
        )
        _stage(say, timings, "evaluation", t0, f"{len(judged)} questions -> {rd.evaluation}")
    else:
        _stage(say, timings, "evaluation", t0, "skipped: no mined case has a relevant document (raise --calls)")
    return comparison


def _solver_settings(config: DemoConfig, cases: Sequence[Case]) -> SolverSettings:
    """The solver: ``simulated`` plants known effects on the gold documents (a fast rehearsal of the pipeline, used by
    the tests); anything else is built by its kind (``local`` = SmolLM2 in-process)."""
    from deltap.mining.setup import SolverSettings

    if config.solver != "simulated":
        return SolverSettings(config.solver)
    from deltap.solvers.simulated import SimulatedTruth

    logprob = not outcome_kind(config.outcome).binary
    truth = {
        c.case_id: SimulatedTruth(
            base=-4.0 if logprob else 0.1,
            effects={d: (2.5 if logprob else 0.5) for d in c.gold_doc_ids},
            answer=c.reference_answer,
        )
        for c in cases
    }
    options = {"truth": truth, "outcome": outcome_kind(config.outcome).name, "noise": 0.5, "seed": config.seed}
    return SolverSettings("simulated", options=options)


def _build_dense(corpus: Corpus, out: Path, config: DemoConfig) -> Any:
    """The dense retriever over ``OUT/index`` (embedded Qdrant Edge store), with a progress bar while embedding.

    Embeddings are cached in ``OUT/embedding-cache`` by content hash, so a rerun embeds nothing.
    """
    from deltap._ticker import CountProgress
    from deltap.retrieval.cache import EmbeddingCache
    from deltap.retrieval.dense import DenseRetriever, index_corpus
    from deltap.retrieval.embedders import load_embedder
    from deltap.retrieval.factory import DEFAULT_COLLECTION, open_store

    model = load_embedder(config.embedder)
    store = open_store(out / "index", DEFAULT_COLLECTION, create=True)
    with (
        CountProgress("embedding", "documents", enabled=config.progress, transient=False) as bar,
        EmbeddingCache(out / "embedding-cache") as cache,
    ):
        index_corpus(corpus, store, model, cache=cache, progress=bar)
    return DenseRetriever(store, model)


def _mining_config(config: DemoConfig, per_case: int) -> Any:
    """The engine's :class:`~deltap.mining.config.MiningConfig` for ``per_case`` design trials per case."""
    from deltap.mining.config import MiningConfig

    first_look = max(4, min(16, per_case // 2))
    return MiningConfig(
        outcome="logprob" if not outcome_kind(config.outcome).binary else "pass",
        budget=per_case,
        seed=config.seed,
        k=config.retrieved_k,
        n_placebo=config.n_placebo,
        first_look=first_look,
        batch=max(4, min(8, per_case - first_look)) if per_case > first_look else 4,
        preflight=PREFLIGHT,
        verify_trials=VERIFY_TRIALS,
    )


def _mine(
    config: DemoConfig,
    corpus: Corpus,
    cases: Sequence[Case],
    solver: SolverSettings,
    retriever: Any,
    run_dir: RunDir,
    mining: Any,
    say: Say,
) -> None:
    """Mine ``cases`` into ``run_dir``, set up by :func:`deltap.mining.setup.prepare_run` as ``deltap mine`` is
    (resumes an existing trial log)."""
    from deltap.mining.readability import AnswerLineIgnoredWarning, UnreadableRepliesWarning
    from deltap.mining.results import PlaceboCalibrationWarning
    from deltap.mining.setup import CaseSelection, RetrieverSettings, prepare_run
    from deltap.mining.tilt import TiltWarning
    from deltap.solvers.base import is_deterministic

    run = prepare_run(
        CaseSelection(cases, corpus), solver, retriever=RetrieverSettings(retriever=retriever), config=mining,
        out=run_dir.root,
    )  # fmt: skip
    det = is_deterministic(run.solver)
    with (
        warnings.catch_warnings(record=True) as caught,
        MiningProgress(len(cases), config.progress, config=run.config, deterministic=det) as bar,
    ):
        shown = (PlaceboCalibrationWarning, TiltWarning, UnreadableRepliesWarning, AnswerLineIgnoredWarning)
        for category in shown:
            warnings.simplefilter("always", category)

        def progress(event: dict[str, Any]) -> None:
            if event.get("phase") == "plan" and not config.progress:  # the display shows it; without one, say it
                for line in event["plan"].brief():
                    say(line)
            if event.get("phase") == "pace" and not config.progress:  # the time again, from the first calls
                for line in event["plan"].pace_lines():
                    say(line)
            bar(event)

        run.mine(progress=progress)
    for w in caught:  # shown after the progress bars, as one readable line each
        if issubclass(w.category, shown):
            say(f"  warning: {w.message}")
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _score_lines(comparison: Mapping[str, Any]) -> list[str]:
    """The evaluation step's scores: one line per retriever, the mean of every metric with a mark where the paired
    test against the baseline (Holm) is significant."""
    measures = [str(m) for m in comparison.get("measures", [])]
    systems = comparison.get("systems") or {}
    width = max((len(s) for s in systems), default=0)
    out = [f"  {'':<{width}}  " + "  ".join(f"{m:>10}" for m in measures)]
    for name, entry in systems.items():
        cells = []
        for m in measures:
            mean = (entry.get("means") or {}).get(m)
            test = (entry.get("tests") or {}).get(m) or {}
            mark = "*" if test.get("significant") else " "
            cells.append(f"{mean:>9.3f}{mark}" if isinstance(mean, int | float) else f"{'—':>10}")
        base = " (baseline)" if name == comparison.get("baseline") else ""
        out.append(f"  {name:<{width}}  " + "  ".join(cells) + base)
    out.append("  * = significantly different from the baseline (paired randomization test, Holm)")
    return out


def _compare(
    qrels: dict[str, dict[str, int]], runs: dict[str, dict[str, dict[str, float]]], seed: int
) -> dict[str, Any]:
    """The evaluation engine's comparison of ``runs`` (baseline bm25) as a JSON-ready dict."""
    from deltap.evaluation import compare
    from deltap.evaluation.ranking import EvaluationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvaluationWarning)  # the demo states the rule in its own line
        report = compare(qrels, runs, list(DEMO_METRICS), baseline="bm25", seed=seed)
    return dict(report.to_dict())


def _end_to_end(
    config: DemoConfig, corpus: Corpus, cases: Sequence[Case], solver: Any, retrievers: dict[str, Any], run_dir: Path,
    say: Say = print,
) -> dict[str, Any]:  # fmt: skip
    """The end-to-end step: :data:`E2E_SYSTEMS` on the mined ``cases`` into ``run_dir/endtoend`` (resumable), with
    the plan ``deltap endtoend`` prints first (:func:`deltap.endtoend.plan.run_plan`: timed by the run's own first
    calls) and its time spent against it at the end."""
    from deltap.endtoend import EndToEndConfig, evaluate_end_to_end
    from deltap.endtoend.systems import System, control_systems

    k = config.retrieved_k
    systems = [System(n, "retriever", {q: list(run) for q, run in _retrieve(retrievers[n], cases, k).items()}, source=f"retriever {n}")
               for n in DEMO_RETRIEVERS]  # fmt: skip
    systems += control_systems(["none"], cases, None)
    cfg = EndToEndConfig(k=k, repeats=1, outcome=config.outcome, seed=config.seed, n_resamples=500, n_permutations=2000)
    from deltap.endtoend.engine import call_ceiling
    from deltap.endtoend.plan import run_plan
    from deltap.endtoend.progress import EndToEndProgress
    from deltap.run_layout import RunDir
    from deltap.solvers.base import is_deterministic

    ceiling = call_ceiling(len(cases), len(systems), cfg.repeats, is_deterministic(solver))
    planned = run_plan(solver, cases, corpus, systems, cfg, RunDir(run_dir).endtoend.root)
    for line in planned.brief():  # what deltap endtoend prints first (80 columns)
        say(line)
    from deltap.mining.readability import AnswerLineIgnoredWarning, UnreadableRepliesWarning

    started = time.monotonic()
    shown = (UnreadableRepliesWarning, AnswerLineIgnoredWarning)  # how the checker read the replies: said as mining's
    with (
        warnings.catch_warnings(record=True) as caught,
        EndToEndProgress(len(cases), ceiling, enabled=config.progress) as progress,
    ):
        for category in shown:
            warnings.simplefilter("always", category)
        result = evaluate_end_to_end(
            run_dir, cases, corpus, solver, config=cfg, systems=systems, metrics=[f"ndcg@{k}", f"hit_rate@{k}"],
            progress=progress, timed_before=planned.timed[:2],
        )  # fmt: skip
    say(f"  {planned.spent_line(time.monotonic() - started, int(result.run['calls_this_process']) - planned.timed[0])}")
    for w in caught:
        if issubclass(w.category, shown):
            say(f"  warning: {w.message}")
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return result.to_dict()


def _endtoend_line(data: dict[str, Any], where: Path) -> str:
    summary = data.get("summary") or {}
    unit = "success" if outcome_kind(str(data.get("outcome") or "pass")).binary else "mean log-p"
    best = ", ".join(
        f"{s} {v['mean']:.2f}"
        for s, v in sorted(summary.items(), key=lambda kv: -(kv[1]["mean"] or -1e9))
        if v.get("mean") is not None
    )
    run = data.get("run") or {}
    return f"{unit}: {best}; {run.get('calls', 0)} calls ({run.get('cached', 0)} identical prompts answered once) -> {where}"
