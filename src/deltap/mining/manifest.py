"""The manifest of a mined case: everything that determines its trials, recorded so a resume cannot mix inputs.

A trial's outcome is a function of the question, the reference answer, the checker (its spec and the content of
the files it names: ``checker_files``), the prompt (template and the case's options or source to fix), the candidate
documents' texts, how the pool was drawn (retriever, ``k``, placebo count, cap, seed) and the solver with its
options (its id, and the content of a local solver's weights: the run-wide ``solver_model`` key of the log's
configuration, see :func:`solver_model_digest`). Fields a log's deltap did not record yet are not compared. The trial log (:mod:`deltap.trials.log`) stores one manifest
per case beside its pool, written before the case's first trial. A resumed run recomputes the manifest of every
case it has seen and compares:

* nothing changed — the logged trials are reused;
* something changed — the resume is refused with one message listing, per field, the cases it changed in
  (:class:`ManifestChanged`), or, with ``remine_changed``, exactly those cases are re-mined from scratch (their
  pool is redrawn and their old trials move to the log's history table).

Values are short SHA-256 digests for texts (``question``, ``reference_answer``, ``prompt``, candidate texts) and
readable strings for settings (``retriever``, ``solver``...), so a message can say ``retriever: bm25(k1=1.2,b=0.75)
-> random(seed=0)``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deltap.checker_kinds import CHECKER_KINDS, checker_kind
from deltap.errors import DeltapError
from deltap.solvers.base import solver_id

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.documents import Corpus
    from deltap.mining.config import MiningConfig
    from deltap.retrieval.base import Retriever
    from deltap.solvers.base import Solver
    from deltap.trials.log import TrialLog

__all__ = [
    "ManifestChanged",
    "case_manifest",
    "check_writable_ids",
    "describe_changes",
    "manifest_diff",
    "prepare_resume",
]

#: the fields of a manifest, in the order a message lists them
FIELDS = (
    "question",
    "reference_answer",
    "checker",
    "checker_grammar",
    "checker_files",
    "benchmark_type",
    "prompt",
    "prompt_template",
    "gold",
    "retriever",
    "k",
    "n_placebo",
    "max_candidates",
    "seed",
    "solver",
    "candidates",
)


def _reads_grammar(kind: object) -> bool:
    """The checker kind reads replies by an answer grammar (``params["grammar"]``; its registry entry says so)."""
    info = CHECKER_KINDS.get(str(kind))
    return info is not None and info.grammar


_WHITESPACE = re.compile(r"\s")

#: what a pooled document is recorded as when the corpus no longer has it
MISSING = "missing from the corpus"


def _digest(text: str | None) -> str:
    return "none" if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _file_digest(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()[:16]
    except OSError as exc:
        return f"unreadable ({exc.strerror})"


def checker_files(case: Case) -> dict[str, str]:
    """Digests of the files behind a case's checker, by role: the pytest checker's ``test_file``, ``fixed_file``,
    ``unfixed_file`` and each support file; the python checker's module source (the params each kind declares in
    :mod:`deltap.checker_kinds`). The checker spec holds only their paths and names, and a file edited in place
    changes every outcome."""
    params = case.checker.params
    kind = checker_kind(case.checker.kind)
    out: dict[str, str] = {}
    for key in kind.file_params:
        if params.get(key):
            out[key] = _file_digest(str(params[key]))
    for key in kind.file_list_params:
        for i, extra in enumerate(params.get(key) or ()):
            out[f"{key}[{i}]"] = _file_digest(str(extra))
    for key in kind.module_params:
        if not isinstance(params.get(key), str):
            continue
        import importlib.util

        module = params[key].partition(":")[0]
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            spec = None
        origin = getattr(spec, "origin", None)
        name = "callable module" if key == "callable" else f"{key} module"  # the key older manifests hold
        out[name] = _file_digest(origin) if origin and os.path.isfile(origin) else "source not found"
    return out


def retriever_id(retriever: Retriever | None) -> str:
    """A retriever's identity: its ``name`` (``bm25(k1=1.2,b=0.75)``, ``dense(...)``), ``none`` without one."""
    if retriever is None:
        return "none"
    return str(getattr(retriever, "name", None) or type(retriever).__name__)


_MODEL_DIGESTS: dict[tuple[str, int, int], str] = {}


def solver_model_digest(solver: Solver) -> str | None:
    """SHA-256 (first 16 hex digits) of the weights file of a local solver (its ``model_path``), ``None`` for a
    solver without one. A local solver's id names the file (``llama_cpp:<stem>:...``), so other weights under the
    same name — a re-quantised or re-downloaded model — would otherwise resume an old run silently. Hashed once per
    (path, size, mtime) in a process: a few seconds for a multi-GB file, once per run."""
    path = getattr(solver, "model_path", None)
    if path is None or not os.path.isfile(str(path)):
        return None
    real = os.path.realpath(str(path))
    st = os.stat(real)
    key = (real, st.st_size, st.st_mtime_ns)
    if key not in _MODEL_DIGESTS:
        h = hashlib.sha256()
        with open(real, "rb") as fh:
            for chunk in iter(lambda: fh.read(8 * 1024**2), b""):
                h.update(chunk)
        _MODEL_DIGESTS[key] = h.hexdigest()[:16]
    return _MODEL_DIGESTS[key]


def case_manifest(
    case: Case,
    doc_ids: Sequence[str],
    corpus: Corpus,
    solver: Solver,
    retriever: Retriever | None,
    cfg: MiningConfig,
) -> dict[str, Any]:
    """The manifest of ``case`` mined over the pooled ``doc_ids``.

    Returns:
        ``{field: value}`` for every name in :data:`FIELDS`; ``candidates`` maps each pooled doc id to the digest of
        its text (or :data:`MISSING`).
    """
    from deltap.solvers.prompts import DEFAULT_TEMPLATE, prompt_hash, render_prompt, template_digest
    from deltap.trials.request import request_from_case

    template = getattr(solver, "template", None) or DEFAULT_TEMPLATE
    candidates: dict[str, str] = {}
    for d in doc_ids:
        doc = corpus.get(d)
        candidates[d] = MISSING if doc is None else _digest(doc.text)
    return {
        "question": _digest(case.query),
        "reference_answer": _digest(case.reference_answer),
        "checker": _canonical({"kind": case.checker.kind, "params": _spec_params(case)}),
        "checker_grammar": checker_grammar(case),
        "checker_files": checker_files(case),
        "benchmark_type": case.benchmark_type,
        "prompt": prompt_hash(render_prompt(request_from_case(case), template))[:16],
        "prompt_template": template_digest(template),
        "gold": ",".join(sorted(case.gold_doc_ids)),
        "retriever": retriever_id(retriever),
        "k": cfg.k,
        "n_placebo": cfg.n_placebo,
        "max_candidates": cfg.max_candidates,
        "seed": cfg.seed,
        "solver": solver_id(solver),
        "candidates": candidates,
    }


def _spec_params(case: Case) -> dict[str, Any]:
    """The checker's params without ``grammar`` (recorded on its own, ``checker_grammar``)."""
    params = dict(case.checker.params)
    if _reads_grammar(case.checker.kind):
        params.pop("grammar", None)
    return params


def checker_grammar(case: Case) -> str:
    """The answer grammar a case's checker reads replies by: ``grader`` (the default since issue 34), ``protocol``,
    ``strict`` (issue 24's) or ``lenient``; ``""`` for kinds without one. Logs written before the grammar existed were
    judged ``lenient`` (see :func:`manifest_diff`); logs of issue 24's deltap recorded ``strict``."""
    from deltap.checkers.grammar import DEFAULT_GRAMMAR

    if not _reads_grammar(case.checker.kind):
        return ""
    return str(case.checker.params.get("grammar", DEFAULT_GRAMMAR))


def _old_grammar(old: Mapping[str, Any]) -> str | None:
    """The grammar of a manifest recorded before ``checker_grammar`` existed: ``lenient`` for a string-match or
    multiple-choice checker (the only grammar then), ``""`` for other kinds, ``None`` when unknown."""
    try:
        kind = json.loads(str(old.get("checker"))).get("kind")
    except (ValueError, AttributeError):
        return None
    return "lenient" if _reads_grammar(kind) else ""


def manifest_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, str]:
    """``{field: "old -> new"}`` for every field that differs (``candidates`` as a list of changed doc ids).

    A manifest without ``checker_grammar`` (a log mined before issue 24) is compared as ``lenient`` for the
    string-match and multiple-choice checkers, so resuming it with the strict default is refused (or re-mined)
    instead of mixing the two grammars' verdicts.
    """
    out: dict[str, str] = {}
    old = dict(old)
    if "checker_grammar" not in old and "checker" in old:
        legacy = _old_grammar(old)
        if legacy is not None:
            old["checker_grammar"] = legacy
    for f in FIELDS:
        if f not in old:
            continue  # a field this log's deltap did not record yet (checker_files): nothing to compare with
        a, b = old.get(f), new.get(f)
        if f == "checker_files":
            a, b = dict(a or {}), dict(b or {})
            changed = sorted(k for k in {*a, *b} if a.get(k) != b.get(k))
            if changed:
                out[f] = "content changed of " + ", ".join(changed)
            continue
        if f == "candidates":
            a, b = dict(a or {}), dict(b or {})
            changed = sorted(d for d in a if b.get(d) != a[d])
            if changed:
                shown = ", ".join(f"{d} ({MISSING})" if b.get(d) == MISSING else d for d in changed[:5])
                out[f] = f"text changed of {shown}" + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
            continue
        if a != b:
            long = isinstance(a, str) and len(a) > 60 or isinstance(b, str) and len(b) > 60
            out[f] = (
                "changed"
                if long or f in ("question", "reference_answer", "prompt", "prompt_template")
                else f"{a} -> {b}"
            )
    return out


def describe_changes(changes: Mapping[str, Mapping[str, str]], limit: int = 5) -> str:
    """One line: per changed field, what changed and in which cases (``changes``: ``{case_id: manifest_diff}``)."""
    by_field: dict[tuple[str, str], list[str]] = {}
    for case_id, diff in changes.items():
        for f, what in diff.items():
            key = (f, what if f != "candidates" else "text changed")
            by_field.setdefault(key, []).append(case_id if f != "candidates" else f"{case_id}: {what}")
    parts = []
    for f in FIELDS:
        for (g, what), cases in by_field.items():
            if g != f:
                continue
            shown = "; ".join(cases[:limit]) + (f"; ... ({len(cases)} cases in all)" if len(cases) > limit else "")
            parts.append(
                f"{f} {what} in {len(cases)} case(s) [{shown}]" if f != "candidates" else f"candidate {what} [{shown}]"
            )
    return "; ".join(parts)


class ManifestChanged(DeltapError):
    """A resumed run's inputs differ from the ones its logged trials were made from."""

    def __init__(self, path: str, changes: Mapping[str, Mapping[str, str]]) -> None:
        self.changes = {k: dict(v) for k, v in changes.items()}
        grammar = sorted({v["checker_grammar"].split(" -> ")[0] for v in changes.values() if "checker_grammar" in v})
        prompt = any("prompt" in v or "prompt_template" in v for v in changes.values())
        super().__init__(
            f"{path}: the inputs of {len(changes)} logged case(s) changed since their trials were run: "
            f"{describe_changes(changes)}. Resume with the same inputs"
            + (
                f" (a log judged by the {' / '.join(grammar)} answer grammar resumes with --answer-grammar {grammar[0]}, "
                f"or grammar: {grammar[0]} in the checker's params)"
                if grammar
                else ""
            )
            + (
                " (the solver's prompt differs from the logged one: a changed prompt template, or the answer protocol"
                " line — resume with the setting the run was started with, --solver-option answer_protocol=off or on)"
                if prompt
                else ""
            )
            + ", pass --remine-changed (remine_changed=True) to re-mine exactly these cases, or choose a new --out directory"
        )


def _pool_ids(pool: Mapping[str, Any]) -> list[str]:
    return [str(c["doc_id"]) for c in pool.get("candidates") or []]


def prepare_resume(
    log: TrialLog,
    cases: Sequence[Case],
    corpus: Corpus,
    solver: Solver,
    retriever: Retriever | None,
    cfg: MiningConfig,
    remine_changed: bool = False,
) -> dict[str, Any]:
    """Check a run directory against this run's inputs before any trial, and hook manifests to new pools.

    1. Every case of ``cases`` with a logged manifest is compared with its manifest now; a change raises
       :class:`ManifestChanged` (every changed case in one message, the log untouched) or, with
       ``remine_changed``, the case is forgotten (trials to history; pool, manifest and status dropped) and mined
       again from a new pool.
    2. A case with a logged pool but no manifest (a log of an older deltap) gets this run's manifest; a pooled
       document missing from the corpus is still an error then.
    3. ``error`` trials are retired to the history table, so their keys are asked again.
    4. ``log.manifest_for`` is set, so every pool stored from now on is stored with its manifest.

    Returns:
        ``{"retired_errors": n, "remined": [case ids], "unverified": [case ids]}``.
    """
    _refuse_relabelled(log)
    by_id = {c.case_id: c for c in cases}
    stored = log.manifests()
    changes: dict[str, dict[str, str]] = {}
    unverified: dict[str, dict[str, Any]] = {}
    for case_id in log.pooled_cases():
        case = by_id.get(case_id)
        if case is None:
            continue  # logged but not part of this run (--limit, --cases): left as it is
        pool = log.get_pool(case_id) or {}
        now = case_manifest(case, _pool_ids(pool), corpus, solver, retriever, cfg)
        if case_id not in stored:
            missing = [d for d, h in now["candidates"].items() if h == MISSING]
            if missing and not remine_changed:
                raise DeltapError(
                    f"{log.path}: case {case_id!r} was pooled with document(s) the corpus no longer has: "
                    f"{', '.join(missing[:10])}; mine with the corpus it was started with, pass --remine-changed, "
                    "or choose a new --out directory"
                )
            if missing:
                changes[case_id] = {
                    "candidates": f"text changed of {', '.join(f'{d} ({MISSING})' for d in missing[:5])}"
                }
                continue
            unverified[case_id] = now
            continue
        diff = manifest_diff(stored[case_id], now)
        if diff:
            changes[case_id] = diff
    if changes and not remine_changed:
        raise ManifestChanged(str(log.path), changes)  # before anything in the log is touched
    for case_id, now in unverified.items():
        log.put_manifest(case_id, now)
    retired = log.retire_errors()
    for case_id, diff in changes.items():
        log.forget_case(case_id, "inputs changed: " + ", ".join(diff))

    def manifest_for(case_id: str, pool: dict[str, Any]) -> dict[str, Any]:
        return case_manifest(by_id[case_id], _pool_ids(pool), corpus, solver, retriever, cfg)

    log.manifest_for = manifest_for
    return {"retired_errors": retired, "remined": sorted(changes), "unverified": sorted(unverified)}


def _refuse_relabelled(log: TrialLog) -> None:
    """A relabelled run directory (``deltap relabel``) holds a copy of another run's log: its trials are collected
    in the run it was relabelled from, so mining there is refused (resume that run, then relabel it again)."""
    if str(log.path) == ":memory:":
        return
    from deltap.mining.relabel import relabelled_from

    origin = relabelled_from(log.path.parent)
    if origin is not None:
        raise DeltapError(
            f"{log.path.parent} was relabelled from {origin} (deltap relabel): its trials belong to that run; resume "
            f"mining there (deltap mine --out {origin}) and relabel it again, or choose a new --out directory"
        )


def check_writable_ids(cases: Sequence[Case], corpus: Corpus) -> None:
    """Refuse, before any trial, case and document ids that the run's ``qrels.trec`` could not hold.

    TREC qrels are whitespace separated: an id with a space would be written as extra columns that every reader
    (deltap's included) rejects, after the whole run was paid for.

    Raises:
        DeltapError: naming the ids.
    """

    def bad(ids: Sequence[str]) -> list[str]:
        return [i for i in ids if not i or _WHITESPACE.search(i)]

    for what, ids, where in (
        ("case id", bad([c.case_id for c in cases]), "the cases"),
        ("document id", bad(corpus.ids), corpus.name),
    ):
        if ids:
            shown = ", ".join(repr(i) for i in ids[:5]) + (f" ... ({len(ids)} in all)" if len(ids) > 5 else "")
            raise DeltapError(
                f"{len(ids)} {what}(s) in {where} are empty or contain whitespace, which qrels.trec cannot hold: {shown}; "
                "rename them"
            )
