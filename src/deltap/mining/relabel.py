"""Relabel a mined run with no solver call: ``relabel(RUN_DIR, NEW_DIR, q=0.1, null="topic", ...)``.

A label is a function of the trial log and of the options that say how trials are labelled
(:attr:`MiningConfig.LABEL_KEYS`: the FDR level, the null, the gold weight and whether it is learned, the minimum
effect and the equivalence margin). Changing those needs no new trial, so :func:`relabel` re-derives the labels,
grades, qrels, the verified dataset and ``run.json`` of a finished — or stopped — run from a copy of its log:

1. **Copy.** The run's ``trials.sqlite`` is copied (SQLite's online backup: consistent even while the run is still
   being written) into a new run directory; the original is never written to.
2. **Replay.** Each case's per-case procedure (:func:`deltap.mining.procedure.run_case`: preflight, looks, stopping
   rule) runs again with the options the trials were *made* with (the log's own configuration), against a
   :class:`ReplaySource`: it answers each trial the procedure asks from the log, checks that the logged trial
   included exactly the documents the procedure asks for, and refuses any trial the log does not hold. There is no
   solver at all: a relabel cannot make a call. Each case therefore ends at the same look as it did when it was
   mined; a case of a stopped run ends ``incomplete`` at its last complete look (the looks' p-values are valid at
   any look, and an interruption does not depend on the outcomes).
3. **Labels.** The dataset-wide step of :func:`deltap.mine` (:func:`deltap.mining.labels.dataset_verdicts`: null,
   p-values over the looks, weighted Benjamini–Hochberg, verdicts, grades; the placebo check; the tilt) runs with the
   new labelling options; coalition checks are replayed from the log. A case whose new verdicts ask for coalition
   trials the log does not hold keeps no coalition and says so (``coalition_check``: ``unchecked``).
4. **Write.** ``retrieval_dataset.yaml``, the qrels and ``run.json`` (with a ``relabel`` section: where the labels
   came from, what changed, 0 calls) go to the new directory, beside the copied log.

Options that change which trials are made — the outcome, budget, seed, pool (``k``, placebos, cap), design, looks,
preflight, context order, the solver — are refused in one line: they need calls (resume the run with
``deltap mine``, then relabel).

Relabelling with the run's own options gives back its dataset: the same labels, statistics and qrels files, byte
for byte but for the dataset's ``created`` time (``tests/unit/mining/test_relabel.py``).
"""

from __future__ import annotations

import math
import shutil
import sqlite3
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from deltap.errors import DeltapError
from deltap.mining.config import MiningConfig
from deltap.mining.procedure import TrialsExhausted
from deltap.run_layout import RunDir

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.dataset import VerifiedDataset
    from deltap.documents import Corpus
    from deltap.mining.results import CaseResult, MiningResult
    from deltap.trials.log import TrialLog, TrialRecord

__all__ = ["RELABEL_STATUS", "ReplaySource", "TrialNotLogged", "collection_config", "relabel", "relabelled_from"]

#: the status of a case whose run stopped before its next look (it is labelled from its last complete look)
RELABEL_STATUS = "incomplete"

#: ``deltap mine`` flags of the options that change which trials are made (for the one-line refusal)
_FLAGS = {
    "outcome": "--outcome",
    "budget": "--budget",
    "seed": "--seed",
    "pi": "--pi",
    "k": "--top-k",
    "n_placebo": "--placebo",
    "placebo_kind": "--placebo-kind",
    "max_candidates": "--max-candidates",
    "design": "--design",
    "context_order": "--context-order",
    "coalitions": "--no-coalitions",
    "verify_trials": "--verify-trials",
    "force": "--force",
    "solver": "--solver",
}


class TrialNotLogged(TrialsExhausted):
    """The replay was asked a trial its log does not hold (it would need a solver call)."""

    def __init__(self, case_id: str, kind: str, index: int, inclusion: str) -> None:
        self.case_id, self.kind, self.index, self.inclusion = case_id, kind, index, inclusion
        super().__init__(f"case {case_id!r}: trial ({kind}, {index}) is not in the trial log")


class ReplaySource:
    """A :class:`~deltap.mining.procedure.TrialSource` that answers from a trial log and never calls a solver.

    Each trial the procedure asks, ``(kind, index)`` with an inclusion vector, is looked up among the case's logged
    trials: its logged value is returned (``nan`` for an error or an overflow, as the run saw it) after checking that
    the logged trial included exactly those documents. A trial the log does not hold raises
    :class:`TrialNotLogged` before any trial of its batch is used.

    Args:
        case_id: The case.
        records: Its logged trials.
        deterministic: Whether the run's solver was deterministic (the procedure asks one preflight trial and one
            trial per coalition check then); see :func:`deterministic_log`.

    Raises:
        DeltapError: a logged trial included other documents than the procedure asks for (the log was not made by
            this procedure with these options).
    """

    def __init__(self, case_id: str, records: Sequence[TrialRecord], deterministic: bool) -> None:
        self.case_id = case_id
        self.by_key = {(r.kind, int(r.trial_index)): r for r in records}
        self.deterministic = deterministic
        self.calls = 0  # logged solver calls replayed (trials answered from a cached prompt are not calls)
        self.errors = 0
        self.overflows = 0
        self.used: set[tuple[str, int]] = set()

    def run(self, kind: str, indices: Sequence[int], X: NDArray[np.bool_]) -> NDArray[np.float64]:
        wanted = [
            (int(i), "".join("1" if b else "0" for b in np.asarray(X[a], dtype=bool))) for a, i in enumerate(indices)
        ]
        for i, incl in wanted:  # every trial of the batch first: a batch is used whole or not at all
            rec = self.by_key.get((kind, i))
            if rec is None:
                raise TrialNotLogged(self.case_id, kind, i, incl)
            if rec.inclusion != incl:
                raise DeltapError(
                    f"case {self.case_id!r}: the logged trial ({kind}, {i}) included other documents than the mining "
                    f"procedure asks for with the log's options ({rec.inclusion} vs {incl}): this trial log was not made "
                    "by this version of deltap's procedure, and cannot be relabelled"
                )
        out = np.full(len(wanted), math.nan)
        for a, (i, _) in enumerate(wanted):
            rec = self.by_key[(kind, i)]
            self.used.add((kind, i))
            if not rec.detail.startswith("cached:"):
                self.calls += 1
            if rec.outcome == "overflow":
                self.overflows += 1
            elif rec.value is None:
                self.errors += 1
            else:
                out[a] = float(rec.value)
        return out


def collection_config(meta: Mapping[str, Any]) -> MiningConfig:
    """The options a run's trials were made with, from its trial log's configuration (``meta``; options the log's
    deltap did not record yet take their implicit value, :attr:`MiningConfig.LEGACY`)."""
    names = {f.name for f in fields(MiningConfig)}
    values = {**MiningConfig.LEGACY, **{k: v for k, v in meta.items() if k in names}}
    values.pop("workers", None)
    values.pop("cases_in_flight", None)
    try:
        return MiningConfig(**values)
    except (TypeError, DeltapError) as exc:
        raise DeltapError(f"the trial log's configuration cannot be read as mining options: {exc}") from None


def relabelled_from(run_dir: str | Path) -> str | None:
    """The run directory a relabelled run directory was made from (``run.json``'s ``relabel.from``), else ``None``."""
    rel = RunDir(run_dir).summary().get("relabel")
    return str(rel.get("from")) if isinstance(rel, Mapping) and rel.get("from") else None


def _refuse_calls(key: str, old: Any, new: Any) -> DeltapError:
    flag = _FLAGS.get(key, f"--{key.replace('_', '-')}")
    what = "another solver" if key == "solver" else f"{flag} {new} (the run's: {old})"
    return DeltapError(
        f"relabel changes only how logged trials are labelled ({', '.join(MiningConfig.LABEL_KEYS)}); {what} changes "
        "which trials are made and needs solver calls: resume the run with deltap mine and these options, then relabel"
    )


def label_config(
    meta: Mapping[str, Any], dataset_config: Mapping[str, Any] | None, options: Mapping[str, Any]
) -> MiningConfig:
    """The options a relabel labels with: the log's, the run's current labelling options (its dataset's ``config``),
    then ``options`` (label keys only).

    Raises:
        DeltapError: an option that is not a mining option, or one that changes which trials are made (one line).
    """
    collection = collection_config(meta)
    names = {f.name for f in fields(MiningConfig)}
    labels = {k: dataset_config[k] for k in MiningConfig.LABEL_KEYS if dataset_config and k in dataset_config}
    for key, value in options.items():
        if key == "solver":
            if value is not None and str(value) != str(meta.get("solver")):
                raise _refuse_calls(key, meta.get("solver"), value)
            continue
        if key not in names:
            raise DeltapError(f"relabel has no option {key!r}; it changes {', '.join(MiningConfig.LABEL_KEYS)}")
        if key in MiningConfig.LABEL_KEYS:
            labels[key] = value
        elif key in MiningConfig.EXECUTION_KEYS:
            raise DeltapError(f"relabel makes no solver call: {key} does not apply")
        elif value != getattr(collection, key):
            raise _refuse_calls(key, getattr(collection, key), value)
    return replace(collection, **labels)


def deterministic_log(trials: Mapping[str, Sequence[TrialRecord]], cfg: MiningConfig) -> bool:
    """Whether the run's solver was deterministic, read off its log (the procedure asked one preflight trial per
    context, and checked each coalition with one trial): a trial answered from a cached prompt says so; more than one
    ``preflight_none`` trial says it was not; a case that got past a ``preflight`` > 1 with one says it was; coalition
    checks of one trial each with distinct contexts say it was."""
    recs = [r for rs in trials.values() for r in rs]
    if any(r.detail.startswith("cached:") for r in recs):
        return True
    pre = {c: [r for r in rs if r.kind == "preflight_none"] for c, rs in trials.items()}
    if any(len(p) > 1 for p in pre.values()):
        return False
    if cfg.preflight > 1 and any(len(pre[c]) == 1 and any(r.kind == "design" for r in rs) for c, rs in trials.items()):
        return True
    for rs in trials.values():
        co = sorted((r for r in rs if r.kind == "coalition"), key=lambda r: r.trial_index)
        if len(co) >= 2 and cfg.verify_trials > 1:
            return co[0].inclusion != co[1].inclusion
    return False


@dataclass
class _Inputs:
    """What the labels need besides the log: the cases in order, the documents' texts, and what the original dataset
    said of each case that the log cannot (a skipped case's reason, where a pytest candidate ran, its mining time)."""

    cases: list[Case]
    corpus: Corpus
    original: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)


def _inputs_from_dataset(dataset: VerifiedDataset, pooled: Sequence[str]) -> _Inputs:
    from deltap.cases import Case
    from deltap.documents import Corpus, Document

    cases: list[Case] = []
    docs: dict[str, Document] = {}
    original: dict[str, Mapping[str, Any]] = {}
    for pair in dataset.pairs:
        cid = str(pair["id"])
        meta = pair.get("metadata") or {}
        gold = [str(c["doc_id"]) for c in pair["candidates"] if "gold" in (c.get("source") or ())]
        cases.append(
            Case(cid, str(pair.get("query") or ""), tuple(gold), reference_answer=pair.get("reference_answer"),
                 metadata={"gold_missing": list(meta.get("missing_gold") or [])})
        )  # fmt: skip
        for c in pair["candidates"]:
            docs.setdefault(str(c["doc_id"]), Document(str(c["doc_id"]), str(c.get("text") or "")))
        original[cid] = pair
    in_dataset = {c.case_id for c in cases}
    return _Inputs(
        cases, Corpus(docs.values(), name="the run's dataset"), original, [c for c in pooled if c not in in_dataset]
    )


def _inputs_given(cases: Sequence[Case], corpus: Corpus, log: TrialLog, original: Mapping[str, Any]) -> _Inputs:
    """The given benchmark and corpus, checked against what each logged case was made from (its manifest)."""
    import hashlib

    def digest(text: str | None) -> str:
        return "none" if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    manifests = log.manifests()
    pooled = set(log.pooled_cases())
    kept = [c for c in cases if c.case_id in pooled]
    if not kept:
        raise DeltapError(f"{log.path}: none of the cases given was mined in this run; give the benchmark it mined")
    for case in kept:
        man = manifests.get(case.case_id)
        if man is None:
            continue
        bad = [
            what
            for what, now in (("question", digest(case.query)), ("reference answer", digest(case.reference_answer)))
            if man.get(what.replace(" ", "_")) not in (None, now)
        ]
        for doc_id, h in (man.get("candidates") or {}).items():
            doc = corpus.get(doc_id)
            if doc is None or digest(doc.text) != h:
                bad.append(f"the text of {doc_id}")
                break
        if bad:
            raise DeltapError(
                f"case {case.case_id!r}: {', '.join(bad)} differ from what its trials were made with; relabel with the "
                "benchmark and corpus the run mined"
            )
    never = [c.case_id for c in cases if c.case_id not in pooled]  # never started: mining them needs calls
    return _Inputs(kept, corpus, dict(original), never + sorted(pooled - {c.case_id for c in kept}))


def _copy_log(src: Path, dst: Path) -> None:
    """A consistent copy of the trial log at ``src`` (SQLite's online backup through a read-only connection: never
    writes to ``src``, safe while another process writes to it)."""
    try:
        source = sqlite3.connect(f"{src.resolve().as_uri()}?mode=ro", uri=True)  # percent-encoded: any path
        target = sqlite3.connect(str(dst))
        try:
            source.backup(target)
        finally:
            target.close()
            source.close()
    except sqlite3.Error as exc:
        raise DeltapError(f"{src}: cannot copy the trial log: {exc}") from None


def _prepare_out(src: RunDir, out: Path) -> bool:
    """Check the two directories; returns whether ``out`` was created here (and may be removed on a refusal)."""
    if not src.trials.is_file():
        raise DeltapError(f"{src.root}: no trial log ({src.trials.name}) here: not a deltap mine run directory")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise DeltapError(f"{out} exists and is not empty: relabel writes a new run directory (choose another --out)")
    if out.resolve() == src.root.resolve():
        raise DeltapError("relabel writes a new run directory: --out must differ from the run it relabels")
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DeltapError(f"{out}: cannot create the run directory: {exc.strerror}") from None
    return created


def relabel(
    run_dir: str | Path,
    out: str | Path,
    *,
    cases: Sequence[Case] | None = None,
    corpus: Corpus | None = None,
    single_doc_prior: bool = False,
    **options: Any,
) -> MiningResult:
    """Re-derive a run's labels, qrels, dataset and ``run.json`` with other labelling options, without a solver call.

    Args:
        run_dir: A ``deltap mine`` run directory (finished, or stopped: its trial log is what counts). Never written.
        out: The new run directory (created; it must not exist or be empty).
        cases: The benchmark the run mined, with ``corpus``: needed when the run has no ``retrieval_dataset.yaml`` (it
            stopped before its end); otherwise the questions and document texts come from its dataset. Checked against
            what each case's trials were made from.
        corpus: The corpus the run mined (with ``cases``).
        single_doc_prior: Give the graded labels' prior the run's single-document lifts (``RUN_DIR/endtoend/`` of
            ``deltap endtoend --single-doc``) as a covariate (:func:`deltap.mining.shrinkage.single_doc_lifts`):
            each source group is split by the sign of a document's lift alone. ``mine()`` cannot (the end-to-end
            run comes after it); a relabel can.
        **options: Labelling options (:attr:`MiningConfig.LABEL_KEYS`: ``q``, ``null``, ``gold_weight``,
            ``gold_weight_learned``, ``min_effect``, ``margin``); any other mining option, or ``solver``, is accepted
            only when it equals the run's.

    Returns:
        A :class:`~deltap.mining.results.MiningResult` for ``out``; its ``run["relabel"]`` says where the labels came
        from, what changed, and that no call was made.

    Raises:
        DeltapError: no trial log, ``out`` not new, an option that needs solver calls (one line), a run without a
            dataset and no ``cases``/``corpus``, inputs that differ from the ones the trials were made with,
            ``single_doc_prior`` on a run without single-document lifts.
    """
    from deltap.trials.log import TrialLog

    src = RunDir(run_dir)
    dst = RunDir(out)
    created = _prepare_out(src, dst.root)
    log: TrialLog | None = None
    try:
        _copy_log(src.trials, dst.trials)
        log = TrialLog(dst.trials)  # locks the new directory
        lifts = _single_doc_lifts(src) if single_doc_prior else None
        return _relabel(src, dst, log, cases, corpus, options, lifts)
    except BaseException:
        if log is not None:
            log.close()
            log = None
        if created:
            shutil.rmtree(dst.root, ignore_errors=True)
        else:
            for leftover in dst.root.iterdir():
                if leftover.is_file():
                    leftover.unlink()
        raise
    finally:
        if log is not None:
            log.close()


def _relabel(
    src: RunDir,
    dst: RunDir,
    log: TrialLog,
    cases: Sequence[Case] | None,
    corpus: Corpus | None,
    options: Mapping[str, Any],
    lifts: Mapping[tuple[str, str], float] | None = None,
) -> MiningResult:
    from deltap.dataset import read_dataset
    from deltap.mining.results import MiningResult

    started = time.time()
    meta = log.config()
    if not meta:
        raise DeltapError(f"{src.trials}: the trial log holds no run configuration (no trial was ever made)")
    original = read_dataset(src.dataset) if src.dataset.is_file() else None
    cfg = label_config(meta, (original.metadata.get("config") if original else None), options)
    collection = collection_config(meta)
    pairs = {str(p["id"]): p for p in original.pairs} if original else {}
    if cases is not None or corpus is not None:
        if cases is None or corpus is None:
            raise DeltapError("relabel: give both the benchmark (cases) and the corpus the run mined, or neither")
        inputs = _inputs_given(cases, corpus, log, pairs)
    elif original is not None:
        inputs = _inputs_from_dataset(original, log.pooled_cases())
    else:
        raise DeltapError(
            f"{src.root} has no {src.dataset.name} (the run stopped before its end): give the benchmark and the corpus it "
            "mined (--cases PATH --corpus PATH; in Python cases=, corpus=) for the questions and document texts"
        )
    trials = {c.case_id: log.trials(c.case_id) for c in inputs.cases}
    det = deterministic_log(trials, collection)
    results = [
        _replay_case(case, log, trials[case.case_id], collection, det, inputs.original.get(case.case_id))
        for case in inputs.cases
    ]
    run = _label_and_write(src, dst, log, results, trials, inputs, cfg, collection, det, meta, original, started, lifts)
    return MiningResult(run[0], results, run[1], dst.root)


def _single_doc_lifts(src: RunDir) -> dict[tuple[str, str], float]:
    """The single-document lifts of the run's end-to-end evaluation, for the graded labels' prior.

    Raises:
        DeltapError: the run has no end-to-end results with single-document values (one line, with the command).
    """
    from deltap.mining.shrinkage import single_doc_lifts

    lifts = single_doc_lifts(src.endtoend.read_results() or {})
    if not lifts:
        raise DeltapError(
            f"--single-doc-prior needs the single-document lifts of the run's end-to-end evaluation "
            f"({src.endtoend.results}); there are none: run deltap endtoend {src.root} ... --single-doc first"
        )
    return lifts


def _replay_case(
    case: Case,
    log: TrialLog,
    records: Sequence[TrialRecord],
    cfg: MiningConfig,
    deterministic: bool,
    original: Mapping[str, Any] | None,
) -> CaseResult:
    """One case's per-case procedure again, from its logged trials, with the options they were made with."""
    from deltap.mining.design import InclusionDesign
    from deltap.mining.pool import Pool
    from deltap.mining.procedure import case_weights, run_case
    from deltap.mining.results import CaseResult
    from deltap.outcomes import outcome_kind

    stored = log.get_pool(case.case_id)
    old_meta = (original or {}).get("metadata") or {}
    if stored is None:
        res = CaseResult(case, Pool(case.case_id, []), "skipped")
        res.info["reason"] = "never started: no pool in the trial log (mining it needs calls)"
        return res
    pool = Pool.from_dict(stored)
    res = CaseResult(case, pool, "skipped")
    if stored.get("context"):
        res.info["context"] = stored["context"]
    if old_meta.get("candidate_process"):
        res.info["candidate_process"] = old_meta["candidate_process"]
    res.wall_seconds = float(old_meta.get("wall_seconds") or 0.0)  # how long the case took to mine (not to relabel)
    if not pool.candidates:
        res.info["reason"] = "no candidates (no gold, retrieved or placebo document)"
        return res
    if not records and old_meta.get("status") == "skipped" and old_meta.get("reason"):
        res.info["reason"] = old_meta["reason"]  # skipped before any trial (no usable checker): as the run said
        return res
    if not outcome_kind(cfg.outcome).answered and not case.reference_answer:
        res.info["reason"] = "the logprob outcome needs a reference answer"
        return res
    source = ReplaySource(case.case_id, records, deterministic)
    design = InclusionDesign(cfg.seed, case.case_id, len(pool.candidates), cfg.pi, cfg.design)
    weights = case_weights(pool.candidates, cfg.stopping_gold_weight())
    res.absorb(run_case(source, design, cfg, cfg.rule(), None, weights))
    res.calls, res.errors = source.calls, source.errors
    res.info["_replayed"] = len(source.used)
    return res


def _coalitions(results: Sequence[CaseResult], trials: Mapping[str, Sequence[TrialRecord]], cfg: MiningConfig,
                deterministic: bool) -> list[str]:  # fmt: skip
    """The coalition checks of every mined case, replayed from the log; returns the cases whose checks would need
    trials the log does not hold (they keep no coalition, and their ``coalition_check`` says why)."""
    from deltap.mining.labels import record_coalitions

    policy = cfg.policy()
    unchecked = []
    for res in results:
        if res.X is None:
            continue
        source = ReplaySource(res.case.case_id, trials[res.case.case_id], deterministic)
        try:
            record_coalitions(res, source, cfg, policy)
            res.info["_replayed"] = int(res.info.get("_replayed", 0)) + len(source.used)
        except TrialNotLogged as exc:
            ids = res.pool.doc_ids
            members = [ids[j] for j, b in enumerate(exc.inclusion) if b == "1"]
            res.coalitions, res.coalition = [], None
            res.info["coalition_check"] = [
                {"docs": members, "verified": None, "minimal": None,
                 "unchecked": "the relabelled verdicts ask for coalition trials the trial log does not hold (relabel "
                              "makes no call; deltap mine with these options would make them)"}
            ]  # fmt: skip
            unchecked.append(res.case.case_id)
    return unchecked


def _label_and_write(
    src: RunDir,
    dst: RunDir,
    log: TrialLog,
    results: list[CaseResult],
    trials: Mapping[str, Sequence[TrialRecord]],
    inputs: _Inputs,
    cfg: MiningConfig,
    collection: MiningConfig,
    deterministic: bool,
    meta: Mapping[str, Any],
    original: VerifiedDataset | None,
    started: float,
    lifts: Mapping[tuple[str, str], float] | None = None,
) -> tuple[VerifiedDataset, dict[str, Any]]:
    """The dataset-wide step of :func:`deltap.mine` with the labelling options ``cfg``, then the files; returns the
    dataset and ``run.json``."""
    from deltap._version import __version__ as version
    from deltap.mining.labels import label_dataset, placebo_calibration
    from deltap.mining.outputs import build_dataset, placebo_warning, run_summary, write_run_directory
    from deltap.mining.results import PlaceboCalibrationWarning
    from deltap.mining.runner import logged_calls
    from deltap.mining.spend import log_spend
    from deltap.mining.tilt import TiltWarning, run_tilt
    from deltap.outcomes import outcome_kind
    from deltap.trials.prices import prices_for

    policy = cfg.policy()
    solver_name = str(meta.get("solver") or "unknown")
    labelled = label_dataset(results, cfg, policy, covariates=lifts)
    null_info = labelled["null"]
    unchecked = _coalitions(results, trials, cfg, deterministic) if cfg.coalitions else []
    prices = prices_for(cfg.price_in, cfg.price_out, solver_name, local=solver_name.startswith("llama_cpp:"))
    spend = log_spend(log, [r.case.case_id for r in results], prices)
    replayed = 0
    for res in results:
        res.info["calls_by_kind"] = logged_calls(log, res.case.case_id)
        res.calls = sum(res.info["calls_by_kind"].values())
        res.info["spend"] = {k: v for k, v in spend["by_case"][res.case.case_id].items() if k != "solver_seconds"}
        replayed += int(res.info.pop("_replayed", 0))
    placebo = {**placebo_calibration(results, cfg, inputs.corpus), "null": null_info}
    rows = (
        (c.sources, row)
        for r in results
        if r.X is not None
        for c, row in zip(r.pool.candidates, r.candidates, strict=True)
    )
    tilt = run_tilt(rows, unit=outcome_kind(cfg.outcome).unit, seed=cfg.seed)
    ended = time.time()
    dataset = build_dataset(
        results, inputs.corpus, cfg, policy, solver_name, placebo, version, started, labelled["graded"]
    )
    dataset.metadata["spend"] = {k: v for k, v in spend.items() if k not in ("by_case", "solver_seconds")}
    run = run_summary(results, cfg, policy, solver_name, placebo, version, started, ended)
    old_run = src.summary()
    run.update(
        {"calls_this_process": 0, "spend": spend, "spend_this_process": {"calls": 0, "tokens_in": 0, "tokens_out": 0}}
    )
    # how the trials were made and how their replies were read (a relabel replays the log's verdicts): the run's own
    for key in ("plan", "plan_vs_spent", "resume", "pilot", "execution", "checker"):
        if key in old_run:
            run[key] = old_run[key]
    run["tilt"] = tilt.to_dict()
    run["relabel"] = _relabel_record(
        src, results, cfg, collection, original, unchecked, inputs, replayed, sum(len(t) for t in trials.values())
    )
    run["relabel"]["single_doc_prior"] = len(lifts) if lifts else 0  # documents whose lift alone shaped the prior
    write_run_directory(dst.root, dataset, run)
    if placebo["warning"]:
        warnings.warn(placebo_warning(placebo, null_info), PlaceboCalibrationWarning, stacklevel=3)
    if tilt.large:
        warnings.warn(tilt.message, TiltWarning, stacklevel=3)
    return dataset, run


def _relabel_record(
    src: RunDir,
    results: Sequence[CaseResult],
    cfg: MiningConfig,
    collection: MiningConfig,
    original: VerifiedDataset | None,
    unchecked: Sequence[str],
    inputs: _Inputs,
    replayed: int,
    logged: int,
) -> dict[str, Any]:
    """``run.json``'s ``relabel`` section: where the labels came from, what changed, and what the replay used."""
    before = dict((original.metadata.get("config") or {}) if original else {})
    changed = {
        k: [before.get(k, getattr(collection, k)), getattr(cfg, k)]
        for k in MiningConfig.LABEL_KEYS
        if before.get(k, getattr(collection, k)) != getattr(cfg, k)
    }
    old = {
        (str(p["id"]), str(c["doc_id"])): str(c.get("verdict"))
        for p in (original.pairs if original else [])
        for c in p["candidates"]
    }
    moves: dict[str, int] = {}
    for r in results:
        for row in r.candidates:
            was = old.get((r.case.case_id, str(row["doc_id"])))
            if was is not None and was != row["verdict"]:
                key = f"{was} -> {row['verdict']}"
                moves[key] = moves.get(key, 0) + 1
    return {
        "from": str(src.root.resolve()),
        "calls": 0,
        "changed": changed,
        "label_options": {k: getattr(cfg, k) for k in MiningConfig.LABEL_KEYS},
        "null": cfg.resolved_null(),
        "collection": "the trials and each case's looks are the run's: its per-case procedure was replayed from the "
        "trial log with the options the trials were made with",
        "verdicts_changed": moves,
        "trials_replayed": replayed,
        "trials_logged": logged,
        "coalitions_unchecked": list(unchecked),
        "incomplete": [r.case.case_id for r in results if r.status == RELABEL_STATUS],
        "cases_left_out": list(inputs.left_out),
    }
