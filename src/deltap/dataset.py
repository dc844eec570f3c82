"""The verified dataset: ``retrieval_dataset.yaml`` (the seed schema plus provenance) and its qrels.

Layout::

    metadata:            # provenance: tool, created, solver, outcome, seed, q, budget, pi, min_effect, margin,
                         # grade_mapping, placebo calibration, ...
    pairs:
      - id: <case id>
        query: <question>
        reference_answer: <expected answer or null>
        candidates:
          - doc_id / fqn / text / source [gold|retrieved|placebo]
            empirical_relevance (YES | NO | HARMFUL | UNDECIDED), verdict, delta_p, ci_low, ci_high,
            p_in, p_out, n_in, n_out, p_value, q_value, grade, regression_effect {coef, se, ci_low, ci_high}
        coalition: [doc ids] or null          (the strongest verified minimal winning coalition)
        coalitions: [[doc ids], ...]          (every verified minimal winning coalition; any one covers the query)
        metadata: {trials, base_success_rate, status, placebo_false_positive_rate, seed, calls, wall_seconds, ...}

Qrels from a dataset: every candidate with an integer ``grade`` (1-3 relevant, 0 judged not relevant); undecided
candidates (``grade: null``) are unjudged. Pairs without any graded candidate are omitted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deltap.errors import FormatError
from deltap.qrels import Qrels, QrelsRecord, write_beir_qrels, write_qrels_jsonl, write_trec_qrels

__all__ = [
    "VERDICTS",
    "VerifiedDataset",
    "GRADED_LIKELY_LFSR",
    "candidate_graded",
    "graded_call",
    "candidate_verdict",
    "dataset_graded_gains",
    "dataset_graded_qrels",
    "dataset_signed_gains",
    "dataset_qrels",
    "dataset_qrels_records",
    "read_dataset",
    "read_dataset_qrels",
    "write_dataset",
    "write_dataset_qrels",
]

EMPIRICAL_VALUES = ("YES", "NO", "HARMFUL", "UNDECIDED")

#: The verdict words, in the order reports list them.
VERDICTS = ("relevant", "irrelevant", "harmful", "undecided")
_FROM_EMPIRICAL = {"YES": "relevant", "NO": "irrelevant", "HARMFUL": "harmful", "UNDECIDED": "undecided"}


@dataclass
class VerifiedDataset:
    """A verified dataset as plain data (``metadata`` and the list of ``pairs``)."""

    metadata: dict[str, Any] = field(default_factory=dict)
    pairs: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"metadata": self.metadata, "pairs": self.pairs}


def _plain(value: Any) -> Any:
    """Make numpy scalars and tuples YAML-safe."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def write_dataset(dataset: VerifiedDataset, path: str | Path) -> Path:
    """Write ``retrieval_dataset.yaml`` atomically (keys in schema order)."""
    import yaml

    from deltap._io import atomic_write

    path = Path(path)
    with atomic_write(path) as fh:
        yaml.safe_dump(_plain(dataset.to_dict()), fh, sort_keys=False, allow_unicode=True, width=120)
    return path


def read_dataset(path: str | Path) -> VerifiedDataset:
    """Read and validate a ``retrieval_dataset.yaml``.

    Raises:
        FormatError: not YAML, no ``pairs`` list, a pair without ``id`` or ``candidates``, a candidate without
            ``doc_id``/``fqn``, a bad ``empirical_relevance`` or ``grade``, a duplicate pair id.
    """
    import yaml

    from deltap._io import read_text

    path = Path(path)
    try:
        data = yaml.safe_load(read_text(path))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        # A parser error has a one-line ``problem``; a reader error (a control character) only its multi-line str,
        # whose first line says what is wrong (the rest names "<unicode string>", not the file).
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FormatError(path, f"invalid YAML: {problem}", mark.line + 1 if mark else None) from None
    if not isinstance(data, dict) or not isinstance(data.get("pairs"), list):
        raise FormatError(path, "expected a mapping with a 'pairs:' list (a deltap retrieval_dataset.yaml)")
    seen: set[str] = set()
    for n, pair in enumerate(data["pairs"], start=1):
        if not isinstance(pair, dict) or pair.get("id") is None:
            raise FormatError(path, f"pair #{n} needs an 'id'")
        pid = str(pair["id"])
        if pid in seen:
            raise FormatError(path, f"duplicate pair id {pid!r}")
        seen.add(pid)
        cands = pair.get("candidates")
        if not isinstance(cands, list):
            raise FormatError(path, f"pair {pid!r} needs a 'candidates' list")
        for c in cands:
            if not isinstance(c, dict) or not (c.get("doc_id") or c.get("fqn")):
                raise FormatError(path, f"a candidate of pair {pid!r} has neither 'doc_id' nor 'fqn'")
            er = c.get("empirical_relevance")
            if isinstance(er, bool):  # YAML 1.1 reads a bare YES/NO as a boolean
                er = c["empirical_relevance"] = "YES" if er else "NO"
            if er is not None and str(er).upper() not in EMPIRICAL_VALUES:
                raise FormatError(
                    path,
                    f"candidate {c.get('doc_id') or c.get('fqn')!r} of {pid!r}: empirical_relevance {er!r} is not one of {EMPIRICAL_VALUES}",
                )
            g = c.get("grade")
            if g is not None and (isinstance(g, bool) or not isinstance(g, int) or g < 0):
                raise FormatError(
                    path,
                    f"candidate {c.get('doc_id') or c.get('fqn')!r} of {pid!r}: grade must be an integer >= 0 or null, got {g!r}",
                )
    meta = data.get("metadata") or {}
    if not isinstance(meta, dict):
        raise FormatError(path, "'metadata' must be a mapping")
    return VerifiedDataset(meta, data["pairs"])


def _grade_of(c: Mapping[str, Any]) -> int | None:
    g = c.get("grade")
    if g is not None:
        return int(g)
    # Seed-schema files without grades: YES = 1, NO/HARMFUL = 0.
    er = str(c.get("empirical_relevance") or "").upper()
    if "grade" not in c and er in ("YES", "NO", "HARMFUL"):
        return 1 if er == "YES" else 0
    return None


def dataset_qrels(dataset: VerifiedDataset) -> Qrels:
    """``{query_id: {doc_id: grade}}`` from a dataset (see the module docstring)."""
    qrels: Qrels = {}
    for pair in dataset.pairs:
        row = {str(c.get("doc_id") or c.get("fqn")): g for c in pair["candidates"] if (g := _grade_of(c)) is not None}
        if row:
            qrels[str(pair["id"])] = row
    return qrels


def dataset_qrels_records(dataset: VerifiedDataset) -> list[QrelsRecord]:
    """Qrels JSONL records with the query text, reference answer and the coalition."""
    out: list[QrelsRecord] = []
    qrels = dataset_qrels(dataset)
    for pair in dataset.pairs:
        pid = str(pair["id"])
        if pid not in qrels:
            continue
        extra: dict[str, object] = {}
        if pair.get("coalition"):
            extra["coalition"] = list(pair["coalition"])
        if pair.get("coalitions"):  # every verified minimal winning coalition (set recall: any one covers the query)
            extra["coalitions"] = [list(c) for c in pair["coalitions"]]
        out.append(QrelsRecord(pid, str(pair.get("query", "")), qrels[pid], pair.get("reference_answer"), extra))
    return out


def read_dataset_qrels(path: str | Path) -> Qrels:
    """Qrels of a ``retrieval_dataset.yaml`` (what :func:`deltap.judgements.load_qrels` calls for ``.yaml`` files)."""
    return dataset_qrels(read_dataset(path))


def write_dataset_qrels(
    dataset: VerifiedDataset, out_dir: str | Path, provenance: Mapping[str, Any] | None = None
) -> dict[str, Path]:
    """Write ``qrels/test.tsv`` (BEIR), ``qrels.trec`` and ``qrels.jsonl`` under ``out_dir``.

    The BEIR and TREC formats have no room for provenance, so it goes beside them in ``qrels/provenance.json``; the
    JSONL records carry it as a ``provenance`` field on every line.
    """
    import json

    from deltap._io import write_text_atomic
    from deltap.run_layout import RunDir

    out = RunDir(out_dir)
    qrels = dataset_qrels(dataset)
    records = dataset_qrels_records(dataset)
    if provenance:
        for r in records:  # YAML-safe like provenance.json: numpy scalars would make json.dumps fail
            r.extra["provenance"] = _plain(dict(provenance))
    paths = {
        "beir": write_beir_qrels(qrels, out.qrels_beir),
        "trec": write_trec_qrels(qrels, out.qrels_trec),
        "jsonl": write_qrels_jsonl(records, out.qrels_jsonl),
    }
    if provenance:
        prov = out.qrels_provenance
        write_text_atomic(prov, json.dumps(_plain(dict(provenance)), indent=2, sort_keys=True) + "\n")
        paths["provenance"] = prov
    return paths


def candidate_verdict(candidate: Mapping[str, Any]) -> str:
    """A candidate's verdict word: its ``verdict`` field, else its seed-schema ``empirical_relevance`` (YES =
    relevant, NO = irrelevant, HARMFUL = harmful), else ``undecided``."""
    v = str(candidate.get("verdict") or "").lower()
    if v in VERDICTS:
        return v
    return _FROM_EMPIRICAL.get(str(candidate.get("empirical_relevance") or "").upper(), "undecided")


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def dataset_signed_gains(
    dataset: VerifiedDataset,
) -> tuple[dict[str, dict[str, float]], dict[str, list[tuple[frozenset[str], float]]], list[tuple[str, str]]]:
    """Signed gains of a dataset's documents and the value of each verified coalition.

    The gain of a candidate is its measured effect with the verdict's sign: ``+|delta_p|`` when ``relevant``,
    ``-|delta_p|`` when ``harmful``; ``irrelevant`` and ``undecided`` candidates (and documents the dataset never
    tried) have no gain and are left out. The verdict fixes the sign (it rests on the dataset's tests, which can use
    a different estimator than the difference in means ``delta_p``); ``delta_p`` gives the size.

    A coalition's value is the lift the coalition trials measured, ``coalition_mean - none_mean`` (exactly the
    coalition in context vs no document, from ``metadata.coalition_check``), when recorded and positive; otherwise
    the sum of its members' positive ``delta_p`` (members may be undecided one by one: their joint effect is what
    the coalition verified). Units follow the dataset's outcome: probability of success (``pass``) or nats
    (``logprob``).

    Returns:
        ``(gains, coalitions, unknown)``: ``{query_id: {doc_id: gain}}`` (non-zero gains only),
        ``{query_id: [(members, value), ...]}``, and the ``(query_id, doc_id)`` of relevant or harmful candidates
        without a numeric ``delta_p`` (their gain is unknown; they count 0 and callers report them).
    """
    gains: dict[str, dict[str, float]] = {}
    coalitions: dict[str, list[tuple[frozenset[str], float]]] = {}
    unknown: list[tuple[str, str]] = []
    for pair in dataset.pairs:
        pid = str(pair["id"])
        row: dict[str, float] = {}
        raw: dict[str, float] = {}
        for c in pair["candidates"]:
            did = str(c.get("doc_id") or c.get("fqn"))
            dp = _finite(c.get("delta_p"))
            if dp is not None:
                raw[did] = dp
            verdict = candidate_verdict(c)
            if verdict in ("relevant", "harmful"):
                if dp is None:
                    unknown.append((pid, did))
                elif dp != 0:
                    row[did] = abs(dp) if verdict == "relevant" else -abs(dp)
        if row:
            gains[pid] = row
        measured: dict[frozenset[str], float] = {}
        for check in (pair.get("metadata") or {}).get("coalition_check") or []:
            if isinstance(check, Mapping) and check.get("verified") and check.get("docs"):
                cm, nm = _finite(check.get("coalition_mean")), _finite(check.get("none_mean"))
                if cm is not None and nm is not None and cm > nm:
                    measured[frozenset(str(d) for d in check["docs"])] = cm - nm
        members_list = pair.get("coalitions") or ([pair["coalition"]] if pair.get("coalition") else [])
        out: list[tuple[frozenset[str], float]] = []
        for members in members_list:
            key = frozenset(str(d) for d in members)
            if key:
                out.append((key, measured.get(key, sum(max(raw.get(d, 0.0), 0.0) for d in key))))
        if out:
            coalitions[pid] = out
    return gains, coalitions, unknown


#: a graded label "likely helps" (or hurts) when its local false sign rate is at most this (issue 35)
GRADED_LIKELY_LFSR = 0.1


def graded_call(label: Mapping[str, Any] | None) -> str | None:
    """A graded label in words: ``likely helps`` / ``likely hurts`` (lfsr ≤ :data:`GRADED_LIKELY_LFSR`, by the
    utility's sign) or ``unclear``; ``None`` without a label."""
    if not label:
        return None
    u, lfsr = _finite(label.get("utility")), _finite(label.get("lfsr"))
    if u is None or lfsr is None or lfsr > GRADED_LIKELY_LFSR or u == 0:
        return "unclear"
    return "likely helps" if u > 0 else "likely hurts"


def candidate_graded(candidate: Mapping[str, Any], prior: str = "gold") -> dict[str, Any] | None:
    """A candidate's graded label under ``prior`` (``gold`` or ``no_gold``): ``{utility, ci, lfsr, grade}`` from its
    optional ``graded`` field (issue 35; :mod:`deltap.mining.shrinkage`), or ``None`` when it has none."""
    graded = candidate.get("graded")
    if not isinstance(graded, Mapping):
        return None
    label = graded.get(prior)
    if not isinstance(label, Mapping) or _finite(label.get("utility")) is None:
        return None
    return dict(label)


def dataset_graded_qrels(dataset: VerifiedDataset, prior: str = "gold") -> Qrels:
    """``{query_id: {doc_id: grade}}`` of the graded labels (every candidate with a graded label is judged: its
    ``grade``, 0 when it does not likely help); candidates without one are unjudged, pairs without any are left out."""
    qrels: Qrels = {}
    for pair in dataset.pairs:
        row: dict[str, int] = {}
        for c in pair["candidates"]:
            label = candidate_graded(c, prior)
            if label is not None:
                g = label.get("grade")
                row[str(c.get("doc_id") or c.get("fqn"))] = int(g) if isinstance(g, int) and g > 0 else 0
        if row:
            qrels[str(pair["id"])] = row
    return qrels


def dataset_graded_gains(dataset: VerifiedDataset, prior: str = "gold") -> dict[str, dict[str, float]]:
    """The signed gains of the graded labels: every graded candidate's shrunken utility (negative for a document that
    likely hurts), non-zero ones only — what ``signed_utility@K`` sums with ``--labels graded``."""
    gains: dict[str, dict[str, float]] = {}
    for pair in dataset.pairs:
        row: dict[str, float] = {}
        for c in pair["candidates"]:
            label = candidate_graded(c, prior)
            u = _finite(label.get("utility")) if label is not None else None
            if u:
                row[str(c.get("doc_id") or c.get("fqn"))] = u
        if row:
            gains[str(pair["id"])] = row
    return gains
