"""Read a mining run directory into plain, typed records for the reports.

The layout is the mining engine's output contract (its paths are :class:`deltap.run_layout.RunDir`'s; the trial log is
read through :class:`deltap.trials.log.TrialLogReader`, never with SQL here)::

    RUN_DIR/retrieval_dataset.yaml      the verified dataset (required)
    RUN_DIR/run.json                    run summary: solver, outcome, calls, wall time, placebo calibration
    RUN_DIR/trials.sqlite               the trial log
    RUN_DIR/qrels/test.tsv              BEIR qrels (also qrels.trec, qrels.jsonl)
    RUN_DIR/evaluation/compare.json     ``Comparison.to_dict()`` of a retriever comparison (optional)
    RUN_DIR/evaluation/runs/<name>.trec one TREC run per retriever (optional)

The dataset is read by the one typed reader, :func:`deltap.dataset.read_dataset` (its cases are
:class:`deltap.dataset.CaseRecord`, their candidates :class:`deltap.dataset.CandidateRecord`).
Everything except ``retrieval_dataset.yaml`` is optional. A missing or malformed optional part never crashes the
report: it is recorded in :attr:`RunData.notes` and the section that needed it says "not available". Numbers that
are absent or not numeric are ``None``, never a made-up 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deltap.dataset import CandidateRecord, CaseRecord
from deltap.dataset import finite_number as _num
from deltap.errors import DeltapError
from deltap.outcomes import OUTCOMES, PASS, OutcomeKind
from deltap.run_layout import RunDir

__all__ = [
    "VERDICTS",
    "CandidateRecord",
    "CaseRecord",
    "RunData",
    "TrialLogSummary",
    "TrialRow",
    "load_run_dir",
    "read_trial_log",
]

#: the verdict words in the order the report lists them
VERDICTS = ("relevant", "harmful", "irrelevant", "undecided")


def _int(value: Any) -> int | None:
    out = _num(value)
    return None if out is None else int(out)


@dataclass(frozen=True)
class TrialRow:
    """One logged solver call of a case, for the report's drill-down.

    Attributes:
        kind: ``preflight_none``, ``preflight_all``, ``design`` or ``coalition``.
        index: The trial's index within its kind.
        included: Which pool candidates were in the prompt (pool order; see :attr:`TrialLogSummary.pools`).
        outcome: ``pass`` / ``fail`` / ``score`` / ``error``.
        value: 1/0 for pass/fail, the log-probability for ``score``, ``None`` for errors.
        latency: Seconds the solver took.
        answer: The solver's raw answer (``pass`` outcome), cut to 300 characters.
        detail: The checker's or the solver's note.
    """

    kind: str
    index: int
    included: tuple[bool, ...]
    outcome: str
    value: float | None
    latency: float | None
    answer: str = ""
    detail: str = ""


@dataclass
class TrialLogSummary:
    """What the trial log says about the whole run, over every session that wrote to it.

    Attributes:
        calls: Logged solver calls (the same figure as ``run.json``'s ``calls``).
        solver_seconds: Sum of the solver latencies of every logged call: the time the solver worked, which a
            rerun that resumes a complete log does not reset.
        tokens_in, tokens_out: Prompt and completion tokens of the logged calls that recorded them (``token_calls``
            of them; trials answered from a deterministic solver's earlier answer and logs written before tokens were
            recorded add nothing).
        first, last: Unix times of the first and the last logged call.
        pools: ``{case_id: [doc_id, ...]}`` in pool order (the order of :attr:`TrialRow.included`).
        trials: ``{case_id: [TrialRow, ...]}`` in logging order.
    """

    calls: int = 0
    solver_seconds: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    token_calls: int = 0
    first: float | None = None
    last: float | None = None
    pools: dict[str, list[str]] = field(default_factory=dict)
    trials: dict[str, list[TrialRow]] = field(default_factory=dict)

    @property
    def seconds_per_call(self) -> float | None:
        """Mean solver seconds per logged call (the one "s per call" figure the report and the README quote)."""
        return self.solver_seconds / self.calls if self.calls else None


@dataclass
class RunData:
    """Everything a report shows, read from one run directory.

    Attributes:
        path: The run directory.
        metadata: ``metadata:`` of ``retrieval_dataset.yaml``.
        summary: ``run.json`` (empty when absent).
        cases: The cases in dataset order.
        qrels: ``{query_id: {doc_id: grade}}`` from ``qrels/test.tsv`` (or derived from the dataset's grades).
        evaluation: ``evaluation/compare.json`` (``None`` when absent).
        runs: ``{retriever name: run}`` from ``evaluation/runs/*.trec``.
        trial_outcomes: outcome -> count from ``trials.sqlite`` when its schema is recognised.
        pool_run: The mining retriever's ranking as a run (score = 1/rank), from the candidate pools stored in
            ``trials.sqlite``: the retrieved candidates with their ranks. Lets the convergence plot work for any
            mining run, with or without an ``evaluation/`` folder.
        notes: Human-readable notes on what was missing or could not be read.
        trial_log: Calls, solver time and every trial per case from ``trials.sqlite`` (``None`` without it).
    """

    path: Path
    metadata: dict[str, Any]
    summary: dict[str, Any]
    cases: list[CaseRecord]
    qrels: dict[str, dict[str, int]]
    evaluation: dict[str, Any] | None = None
    runs: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    trial_outcomes: dict[str, int] = field(default_factory=dict)
    pool_run: dict[str, dict[str, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    trial_log: TrialLogSummary | None = None

    # --- derived figures -------------------------------------------------------------------------------------
    def get(self, key: str, default: Any = None) -> Any:
        """A run-level field: ``run.json`` first, then the dataset's ``metadata``."""
        for source in (self.summary, self.metadata):
            if source.get(key) is not None:
                return source[key]
        return default

    @property
    def outcome(self) -> str:
        return str(self.get("outcome", "pass"))

    @property
    def outcome_kind(self) -> OutcomeKind:
        """The run's :class:`~deltap.outcomes.OutcomeKind` (``pass`` for a ``run.json`` naming none it knows)."""
        return OUTCOMES.get(self.outcome, PASS)

    @property
    def effect_label(self) -> str:
        """Axis label for ΔP: a difference of success rates, or of log-probabilities for the logprob outcome."""
        return self.outcome_kind.effect_label

    @property
    def base_label(self) -> str:
        """What a case's ``base_success_rate`` is: a success rate, or a mean log-probability for ``logprob``."""
        return self.outcome_kind.base_label

    def verdict_counts(self) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for case in self.cases:
            counts.update(case.verdict_counts())
        reported = self.summary.get("verdict_counts", self.summary.get("verdicts"))
        if isinstance(reported, Mapping) and reported:
            return {str(k): int(v) for k, v in reported.items() if _int(v) is not None}
        return {v: counts.get(v, 0) for v in VERDICTS} | {k: n for k, n in counts.items() if k not in VERDICTS}

    def status_counts(self) -> dict[str, int]:
        reported = self.summary.get("cases_by_status") or self.summary.get("cases")
        if isinstance(reported, Mapping) and reported:
            return {str(k): int(v) for k, v in reported.items() if _int(v) is not None}
        return dict(Counter(c.status for c in self.cases))

    def total_trials(self) -> int | None:
        reported = _int(self.summary.get("trials"))
        if reported is not None:
            return reported
        known = [c.trials for c in self.cases if c.trials is not None]
        return sum(known) if known else None

    def total_calls(self) -> int | None:
        reported = _int(self.summary.get("calls"))
        if reported is not None:
            return reported
        known = [c.calls for c in self.cases if c.calls is not None]
        return sum(known) if known else None

    def placebo(self) -> dict[str, Any]:
        """Placebo calibration: ``n``, ``labelled_relevant``, ``labelled_harmful``, ``fpr``, ``nominal`` (and ``null``,
        the fitted placebo null, when the run recorded one).

        Taken from ``run.json`` (or the dataset metadata) when recorded there; otherwise counted from the candidates
        whose sources include ``placebo`` (``nominal`` then stays ``None``).
        """
        recorded = self.summary.get("placebo")
        if not isinstance(recorded, Mapping):
            recorded = self.metadata.get("placebo") or self.metadata.get("placebo_calibration")
        placebos = [c for case in self.cases for c in case.candidates if "placebo" in c.sources]
        counted = {
            "n": len(placebos),
            "labelled_relevant": sum(c.verdict == "relevant" for c in placebos),
            "labelled_harmful": sum(c.verdict == "harmful" for c in placebos),
        }
        out: dict[str, Any] = dict(counted)
        out["fpr"] = (
            (counted["labelled_relevant"] + counted["labelled_harmful"]) / counted["n"] if counted["n"] else None
        )
        out["nominal"] = None
        if isinstance(recorded, Mapping):
            for key in ("n", "labelled_relevant", "labelled_harmful"):
                if _int(recorded.get(key)) is not None:
                    out[key] = _int(recorded.get(key))
            for key in ("fpr", "nominal"):
                if _num(recorded.get(key)) is not None:
                    out[key] = _num(recorded.get(key))
            if isinstance(recorded.get("null"), Mapping):  # which null the effects were tested against
                out["null"] = dict(recorded["null"])
            if isinstance(recorded.get("check"), Mapping):  # the placebo check (deltap.mining.placebo_check)
                out["check"] = dict(recorded["check"])
        if out["nominal"] is None:
            out["nominal"] = _num(self.metadata.get("q"))
        return out


# --- reading ----------------------------------------------------------------------------------------------------


def _reader(path: Path, notes: list[str], what: str) -> Any:
    """The trial log's read-only reader, or ``None`` with a note saying ``what`` is not available."""
    from deltap.trials.log import TrialLogReader

    try:
        return TrialLogReader(path)
    except DeltapError as exc:
        notes.append(f"{exc}; {what} not available")
        return None


def _trial_outcomes(path: Path, notes: list[str]) -> dict[str, int]:
    """Count trial outcomes in the trial log, read-only."""
    reader = _reader(path, notes, "trial outcome counts")
    if reader is None:
        return {}
    with reader:
        try:
            return reader.outcome_counts()
        except DeltapError as exc:
            notes.append(f"{exc}; trial outcome counts not available")
            return {}


def _pool_run(path: Path, notes: list[str]) -> dict[str, dict[str, float]]:
    """``{case_id: {doc_id: 1/rank}}`` of the retrieved candidates in the pools of the trial log."""
    from deltap.trials.log import TrialLogReader

    run: dict[str, dict[str, float]] = {}
    try:
        with TrialLogReader(path) as reader:
            for case_id, pool in reader.pools():
                if not isinstance(pool, Mapping):
                    notes.append(
                        f"trials.sqlite: the pool of case {case_id!r} is not valid JSON; left out of the pool ranking"
                    )
                    continue
                ranked = {
                    str(c["doc_id"]): 1.0 / float(c["rank"])
                    for c in pool.get("candidates", [])
                    if isinstance(c, Mapping) and "retrieved" in (c.get("sources") or ()) and _num(c.get("rank"))
                }
                if ranked:
                    run[case_id] = ranked
    except DeltapError as exc:
        notes.append(f"{exc}; the pool ranking is not available")
    return run


def read_trial_log(path: str | Path, notes: list[str] | None = None) -> TrialLogSummary | None:
    """Every logged trial (for the drill-down) and the run-wide call and time figures, read-only through
    :class:`deltap.trials.log.TrialLogReader` (``None`` when ``path`` is not the mining engine's trial log;
    problems are appended to ``notes``)."""
    from deltap.trials.log import TrialLogReader

    notes = notes if notes is not None else []
    out = TrialLogSummary()
    try:
        reader = TrialLogReader(path)
    except DeltapError:
        return None
    with reader:
        if not reader.complete:
            return None  # not the mining engine's trial log: no per-trial detail to show
        try:
            for case_id, pool in reader.pools():
                try:
                    out.pools[case_id] = [str(c["doc_id"]) for c in pool.get("candidates", [])]
                except (TypeError, KeyError, AttributeError):
                    continue
            rows = reader.trials()
        except DeltapError as exc:
            notes.append(f"{exc}; the trial drill-down is not available")
            return None
    for row in rows:
        rec = row.record
        lat = _num(rec.latency)
        out.calls += 1
        out.solver_seconds += lat or 0.0
        if rec.prompt_tokens is not None and not str(rec.detail or "").startswith("cached:"):
            out.token_calls += 1
            out.tokens_in += int(rec.prompt_tokens)
            out.tokens_out += int(rec.completion_tokens or 0)
        t = _num(row.created)
        if t is not None:
            out.first = t if out.first is None else min(out.first, t)
            out.last = t if out.last is None else max(out.last, t)
        out.trials.setdefault(str(rec.case_id), []).append(
            TrialRow(
                kind=str(rec.kind),
                index=int(rec.trial_index),
                included=tuple(ch == "1" for ch in str(rec.inclusion or "")),
                outcome=str(rec.outcome),
                value=_num(rec.value),
                latency=lat,
                answer=str(rec.answer or "")[:300],
                detail=str(rec.detail or "")[:300],
            )
        )
    return out


def load_run_dir(path: str | Path) -> RunData:
    """Read a run directory for reporting.

    Args:
        path: The directory ``deltap mine --out`` wrote.

    Raises:
        DeltapError: the directory or its ``retrieval_dataset.yaml`` does not exist.
        FormatError: ``retrieval_dataset.yaml`` is not a verified dataset.
    """
    from deltap.dataset import read_dataset
    from deltap.qrels import read_beir_qrels, read_trec_run

    rd = RunDir(path)
    root = rd.root
    if not root.is_dir():
        raise DeltapError(f"run directory not found: {root}; pass the folder `deltap mine --out` wrote")
    if not rd.dataset.is_file():
        raise DeltapError(f"{root} has no {rd.dataset.name}; is it the output folder of `deltap mine`?")
    dataset = read_dataset(rd.dataset)
    metadata, cases = dict(dataset.metadata), list(dataset.cases)
    notes: list[str] = []

    loaded, why = rd.read_summary()
    summary: dict[str, Any] = loaded or {}
    if why:
        notes.append(f"{why}; run summary taken from the dataset only")
    elif loaded is None:
        notes.append("run.json not found; run summary taken from the dataset only")

    qrels: dict[str, dict[str, int]] = {}
    if rd.qrels_beir.is_file():
        try:
            qrels = read_beir_qrels(rd.qrels_beir)
        except DeltapError as exc:
            notes.append(f"qrels/test.tsv could not be read: {exc}")
    if not qrels:
        for case in cases:
            graded = {c.doc_id: c.grade for c in case.candidates if c.grade}
            if graded:
                qrels[case.case_id] = {d: int(g) for d, g in graded.items() if g is not None}
        if not rd.qrels_beir.is_file():
            notes.append("qrels/test.tsv not found; relevance grades taken from the dataset's candidates")

    evaluation, why = rd.read_comparison()
    if why:
        notes.append(f"{why}; retriever comparison not available")

    runs: dict[str, dict[str, dict[str, float]]] = {}
    if rd.runs_dir.is_dir():
        for run_path in sorted(rd.runs_dir.glob("*.trec")):
            try:
                runs[run_path.stem] = read_trec_run(run_path)
            except DeltapError as exc:
                notes.append(f"evaluation/runs/{run_path.name} could not be read: {exc}")

    trial_outcomes: dict[str, int] = {}
    pool_run: dict[str, dict[str, float]] = {}
    trial_log: TrialLogSummary | None = None
    if rd.trials.is_file():
        trial_outcomes = _trial_outcomes(rd.trials, notes)
        pool_run = _pool_run(rd.trials, notes)
        trial_log = read_trial_log(rd.trials, notes)
    else:
        notes.append("trials.sqlite not found; trial outcome counts not available")

    return RunData(
        path=root,
        metadata=metadata,
        summary=summary,
        cases=cases,
        qrels=qrels,
        evaluation=evaluation,
        runs=runs,
        trial_outcomes=trial_outcomes,
        pool_run=pool_run,
        notes=notes,
        trial_log=trial_log,
    )
