"""The verified dataset: ``retrieval_dataset.yaml`` (the seed schema plus provenance), its one typed reader, and its
qrels.

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
            p_in, p_out, n_in, n_out, p_value, q_value, grade, regression_effect {coef, se, ci_low, ci_high},
            graded {<label set>: {utility, ci: [lo, hi], lfsr, grade}}   (optional)
        coalition: [doc ids] or null          (the strongest verified minimal winning coalition)
        coalitions: [[doc ids], ...]          (every verified minimal winning coalition; any one covers the query)
        metadata: {trials, base_success_rate, status, placebo_false_positive_rate, seed, calls, wall_seconds, ...}

**One reader.** :class:`VerifiedDataset` holds the file as written (``metadata`` and the plain ``pairs``, what the
miner writes); :attr:`VerifiedDataset.cases` reads them as typed records, :class:`CaseRecord` → :class:`CandidateRecord`
(frozen). Every consumer — the report, the audit, the qrels, the signed gains, end-to-end — reads through them, so one
place knows that a candidate's id is ``doc_id`` (the seed schema's ``fqn`` in older files) and one place turns the
YAML's ``verdict`` / ``empirical_relevance`` into a verdict word. A field of a record is declared once, with the
function that reads it from the YAML (:func:`_read`): a new per-candidate field is one line of :class:`CandidateRecord`.

Qrels from a dataset: every candidate with an integer ``grade`` (1-3 relevant, 0 judged not relevant); undecided
candidates (``grade: null``) are unjudged. Pairs without any graded candidate are omitted.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from deltap.errors import FormatError
from deltap.qrels import Qrels, QrelsRecord, write_beir_qrels, write_qrels_jsonl, write_trec_qrels

__all__ = [
    "SOURCES",
    "VERDICTS",
    "CandidateRecord",
    "CaseRecord",
    "GradedUtility",
    "VerifiedDataset",
    "GRADED_LIKELY_LFSR",
    "candidate_graded",
    "graded_call",
    "candidate_verdict",
    "dataset_graded_gains",
    "finite_number",
    "dataset_graded_qrels",
    "dataset_qrels",
    "dataset_qrels_records",
    "dataset_signed_gains",
    "read_dataset",
    "read_dataset_qrels",
    "write_dataset",
    "write_dataset_qrels",
]

EMPIRICAL_VALUES = ("YES", "NO", "HARMFUL", "UNDECIDED")

#: The verdict words, in the order reports list them.
VERDICTS = ("relevant", "irrelevant", "harmful", "undecided")
#: A candidate's provenance words, strongest first (a candidate both gold and retrieved is drawn as gold).
SOURCES = ("gold", "retrieved", "placebo")
_FROM_EMPIRICAL = {"YES": "relevant", "NO": "irrelevant", "HARMFUL": "harmful", "UNDECIDED": "undecided"}


# --- reading one value ------------------------------------------------------------------------------------------


def finite_number(value: Any) -> float | None:
    """A finite float, or ``None`` for anything absent or not a finite number (``nan`` is "no estimate")."""
    if value is None or isinstance(value, bool):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _int(value: Any) -> int | None:
    out = finite_number(value)
    return None if out is None else int(out)


def _str_list(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence):
        return tuple(str(v) for v in value)
    return ()


def _doc_id_of(raw: Mapping[str, Any]) -> str | None:
    """The candidate's document id: ``doc_id``, else the seed schema's ``fqn`` (the one place that knows both)."""
    value = raw.get("doc_id") or raw.get("fqn")
    return str(value) if value else None


def _relevance_word(value: Any) -> str | None:
    """``empirical_relevance`` as written (YAML 1.1 reads a bare YES / NO as a boolean: made the word again)."""
    if isinstance(value, bool):
        return "YES" if value else "NO"
    return None if value is None else str(value)


def candidate_verdict(candidate: Mapping[str, Any]) -> str:
    """A candidate's verdict word: its ``verdict`` field, else its seed-schema ``empirical_relevance`` (YES =
    relevant, NO = irrelevant, HARMFUL = harmful), else ``undecided``. The one place a verdict is read from the YAML.

    Raises:
        ValueError: an ``empirical_relevance`` that is not one of YES, NO, HARMFUL, UNDECIDED (any case).
    """
    written = candidate.get("empirical_relevance")
    er = _relevance_word(written)
    if er is not None and er.upper() not in EMPIRICAL_VALUES:
        raise ValueError(f"empirical_relevance {written!r} is not one of {EMPIRICAL_VALUES}")
    v = str(candidate.get("verdict") or "").lower()
    if v in VERDICTS:
        return v
    return _FROM_EMPIRICAL.get((er or "").upper(), "undecided")


def _grade_of(c: Mapping[str, Any]) -> int | None:
    """The qrels grade of a candidate: its ``grade`` (an integer >= 0; ``null`` = undecided, unjudged); seed-schema
    files without grades: YES = 1, NO / HARMFUL = 0.

    Raises:
        ValueError: a ``grade`` that is not an integer >= 0 or null.
    """
    g = c.get("grade")
    if g is not None and (isinstance(g, bool) or not isinstance(g, int) or g < 0):
        raise ValueError(f"grade must be an integer >= 0 or null, got {g!r}")
    if g is not None:
        return int(g)
    er = str(_relevance_word(c.get("empirical_relevance")) or "").upper()
    if "grade" not in c and er in ("YES", "NO", "HARMFUL"):
        return 1 if er == "YES" else 0
    return None


def _read(reader: Callable[[Mapping[str, Any]], Any], *, default: Any = ..., default_factory: Any = ...) -> Any:
    """A record field and the function that reads it from the YAML mapping (``default``: when built by hand)."""
    if default_factory is not ...:
        return field(default_factory=default_factory, metadata={"read": reader})
    if default is ...:
        return field(metadata={"read": reader})
    return field(default=default, metadata={"read": reader})


def _number(key: str) -> Callable[[Mapping[str, Any]], float | None]:
    return lambda raw: finite_number(raw.get(key))


def _count(key: str) -> Callable[[Mapping[str, Any]], int | None]:
    return lambda raw: _int(raw.get(key))


def _regression(key: str) -> Callable[[Mapping[str, Any]], float | None]:
    """A number of the candidate's ``regression_effect`` mapping (the joint regression's estimate)."""

    def read(raw: Mapping[str, Any]) -> float | None:
        reg = raw.get("regression_effect")
        return finite_number(reg.get(key)) if isinstance(reg, Mapping) else None

    return read


def _meta(key: str, conv: Callable[[Any], Any], default: Any = None) -> Callable[[Mapping[str, Any]], Any]:
    """A value of a pair's ``metadata`` mapping."""

    def read(raw: Mapping[str, Any]) -> Any:
        meta = raw.get("metadata")
        value = meta.get(key) if isinstance(meta, Mapping) else None
        return default if value is None else conv(value)

    return read


def _parse(cls: type, raw: Mapping[str, Any], **given: Any) -> Any:
    """A record of ``cls`` from its YAML mapping: every field read by the function it declares (unless ``given``)."""
    return cls(**{f.name: given[f.name] if f.name in given else f.metadata["read"](raw) for f in fields(cls)})


# --- the records ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GradedUtility:
    """One graded label of a candidate: the effect shrunk toward its group, with its interval, its local false sign
    rate and the grade it maps to (``graded: {<label set>: {utility, ci: [lo, hi], lfsr, grade}}``)."""

    utility: float | None = _read(_number("utility"), default=None)
    ci_low: float | None = _read(lambda r: finite_number(_pair_of(r.get("ci"))[0]), default=None)
    ci_high: float | None = _read(lambda r: finite_number(_pair_of(r.get("ci"))[1]), default=None)
    lfsr: float | None = _read(_number("lfsr"), default=None)
    grade: int | None = _read(_count("grade"), default=None)


def _pair_of(value: Any) -> tuple[Any, Any]:
    if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2:
        return value[0], value[1]
    return None, None


def _graded(raw: Mapping[str, Any]) -> Mapping[str, GradedUtility] | None:
    """``graded`` as ``{label set: GradedUtility}`` (``None`` when the candidate has none)."""
    value = raw.get("graded")
    if not isinstance(value, Mapping):
        return None
    return {str(k): _parse(GradedUtility, v) for k, v in value.items() if isinstance(v, Mapping)}


def _verdict_interval(value: Any) -> tuple[float | None, float | None, float | None, str] | None:
    if not isinstance(value, Mapping):
        return None
    return (
        finite_number(value.get("low")),
        finite_number(value.get("high")),
        finite_number(value.get("level")),
        str(value.get("rests_on") or ""),
    )


def _verdict(raw: Mapping[str, Any]) -> str:
    return candidate_verdict(raw)


@dataclass(frozen=True)
class CandidateRecord:
    """One (case, candidate document) line of the verified dataset, as read.

    Every field is declared with the function that reads it from the candidate's YAML mapping; a new field is one
    line here. ``doc_id`` is the legacy ``fqn`` in seed-schema files; ``verdict`` comes from ``verdict``, else the
    seed schema's ``empirical_relevance``; ``grade`` is the qrels grade (:func:`_grade_of`); numbers that are absent
    or not finite are ``None``, never a made-up 0.
    """

    doc_id: str = _read(lambda raw: _doc_id_of(raw) or "")
    sources: tuple[str, ...] = _read(lambda raw: _str_list(raw.get("source")))
    verdict: str = _read(_verdict)
    delta_p: float | None = _read(_number("delta_p"))
    ci_low: float | None = _read(_number("ci_low"))
    ci_high: float | None = _read(_number("ci_high"))
    p_in: float | None = _read(_number("p_in"), default=None)
    p_out: float | None = _read(_number("p_out"), default=None)
    n_in: int | None = _read(_count("n_in"), default=None)
    n_out: int | None = _read(_count("n_out"), default=None)
    p_value: float | None = _read(_number("p_value"), default=None)
    q_value: float | None = _read(_number("q_value"), default=None)
    grade: int | None = _read(_grade_of, default=None)
    empirical_relevance: str = _read(lambda raw: _relevance_word(raw.get("empirical_relevance")) or "", default="")
    text: str = _read(lambda raw: str(raw.get("text") or ""), default="")
    adjusted: float | None = _read(_regression("coef"), default=None)
    adjusted_low: float | None = _read(_regression("ci_low"), default=None)
    adjusted_high: float | None = _read(_regression("ci_high"), default=None)
    graded: Mapping[str, GradedUtility] | None = _read(_graded, default=None)
    #: the interval the verdict rests on (``verdict_interval``: corrected for the looks and for testing every
    #: candidate, so wider than the plain 95% whisker): ``(low, high, level, rests_on)``, when the dataset records one
    verdict_interval: tuple[float | None, float | None, float | None, str] | None = _read(
        lambda raw: _verdict_interval(raw.get("verdict_interval")), default=None
    )

    @property
    def graded_utility(self) -> float | None:
        """The shrunken utility of the graded label under the gold prior (``None``: not graded)."""
        g = candidate_graded(self, "gold")
        return None if g is None else g.utility

    @property
    def graded_call(self) -> str | None:
        """``likely helps`` / ``likely hurts`` / ``unclear`` from the graded label under the gold prior (``None``: not
        graded)."""
        return graded_call(candidate_graded(self, "gold"))

    def graded_text(self, unit: str = "") -> str:
        """The gold-prior graded label in words, e.g. ``likely helps: +1.20 nats [+0.31, +2.05], lfsr 0.012`` (``""``
        without)."""
        g = candidate_graded(self, "gold")
        if g is None or g.utility is None:
            return ""
        interval = f" [{g.ci_low:+.2f}, {g.ci_high:+.2f}]" if g.ci_low is not None and g.ci_high is not None else ""
        return f"{self.graded_call}: {g.utility:+.2f}{(' ' + unit) if unit else ''}{interval}, lfsr {g.lfsr or 0.0:.3f}"

    @classmethod
    def from_yaml(cls, raw: Mapping[str, Any]) -> CandidateRecord:
        """The record of one candidate mapping.

        Raises:
            ValueError: no ``doc_id`` / ``fqn``, a bad ``empirical_relevance`` or ``grade`` (the message says which).
        """
        if not _doc_id_of(raw):
            raise ValueError("has neither 'doc_id' nor 'fqn'")
        record: CandidateRecord = _parse(cls, raw)
        return record

    @property
    def effect(self) -> tuple[float | None, float | None, float | None]:
        """The estimate the verdict rests on, with its 95 % CI: the joint-regression (adjusted) effect when the
        dataset records one, else the difference in means ΔP."""
        if self.adjusted is not None:
            return self.adjusted, self.adjusted_low, self.adjusted_high
        return self.delta_p, self.ci_low, self.ci_high

    @property
    def primary_source(self) -> str:
        """The source that marks the candidate in plots: gold beats retrieved beats placebo."""
        for s in SOURCES:
            if s in self.sources:
                return s
        return self.sources[0] if self.sources else "unknown"

    @property
    def is_gold(self) -> bool:
        return "gold" in self.sources

    @property
    def signed_gain(self) -> float | None:
        """The measured effect with the verdict's sign: ``+|delta_p|`` when relevant, ``-|delta_p|`` when harmful,
        ``0`` otherwise; ``None`` for a relevant or harmful candidate without a ``delta_p``."""
        if self.verdict not in ("relevant", "harmful"):
            return 0.0
        if self.delta_p is None:
            return None
        return abs(self.delta_p) if self.verdict == "relevant" else -abs(self.delta_p)


def _optional_str(key: str) -> Callable[[Mapping[str, Any]], str | None]:
    return lambda raw: None if raw.get(key) is None else str(raw[key])


def _coalition(raw: Mapping[str, Any]) -> tuple[str, ...] | None:
    return None if raw.get("coalition") is None else _str_list(raw["coalition"])


def _metadata(raw: Mapping[str, Any]) -> dict[str, Any]:
    meta = raw.get("metadata")
    return dict(meta) if isinstance(meta, Mapping) else {}


def _coalitions(raw: Mapping[str, Any]) -> tuple[tuple[str, ...], ...]:
    """``coalitions`` as written: every verified minimal winning coalition."""
    listed = raw.get("coalitions")
    if not isinstance(listed, Sequence) or isinstance(listed, str):
        return ()
    return tuple(_str_list(members) for members in listed)


@dataclass(frozen=True)
class CaseRecord:
    """One case (query) of the verified dataset with its candidates and mining metadata, as read (the report, the
    audit, the qrels and end-to-end read these; what ``mine()`` returns of a case is
    :class:`deltap.mining.results.CaseResult`)."""

    case_id: str = _read(lambda raw: str(raw.get("id")))
    query: str = _read(lambda raw: str(raw.get("query") or ""))
    reference_answer: str | None = _read(_optional_str("reference_answer"))
    candidates: tuple[CandidateRecord, ...] = _read(lambda raw: ())  # read by the case (it names the pair in errors)
    coalition: tuple[str, ...] | None = _read(_coalition)
    status: str = _read(lambda raw: str(_metadata(raw).get("status") or "mined"), default="mined")
    trials: int | None = _read(_meta("trials", _int), default=None)
    base_success_rate: float | None = _read(_meta("base_success_rate", finite_number), default=None)
    placebo_false_positive_rate: float | None = _read(_meta("placebo_false_positive_rate", finite_number), default=None)
    calls: int | None = _read(_meta("calls", _int), default=None)
    wall_seconds: float | None = _read(_meta("wall_seconds", finite_number), default=None)
    coalitions: tuple[tuple[str, ...], ...] = _read(_coalitions, default=())  # as written (``coalitions:``)
    metadata: Mapping[str, Any] = _read(_metadata, default_factory=dict)

    def verdict_counts(self) -> Counter[str]:
        return Counter(c.verdict for c in self.candidates)

    @property
    def winning_coalitions(self) -> tuple[tuple[str, ...], ...]:
        """Every verified minimal winning coalition (``coalitions``, else the one ``coalition``), non-empty ones."""
        listed = self.coalitions or ((self.coalition,) if self.coalition else ())
        return tuple(c for c in listed if c)


def _parse_cases(pairs: Any, where: str) -> tuple[CaseRecord, ...]:
    """The typed records of a dataset's ``pairs`` (the one reader).

    Raises:
        FormatError: a pair without ``id``, a duplicate id, a pair without a ``candidates`` list, a candidate without
            ``doc_id``/``fqn``, a bad ``empirical_relevance`` or ``grade``.
    """
    seen: set[str] = set()
    out: list[CaseRecord] = []
    for n, pair in enumerate(pairs, start=1):
        if not isinstance(pair, Mapping) or pair.get("id") is None:
            raise FormatError(where, f"pair #{n} needs an 'id'")
        pid = str(pair["id"])
        if pid in seen:
            raise FormatError(where, f"duplicate pair id {pid!r}")
        seen.add(pid)
        cands = pair.get("candidates")
        if not isinstance(cands, list | tuple):
            raise FormatError(where, f"pair {pid!r} needs a 'candidates' list")
        records: list[CandidateRecord] = []
        for c in cands:
            if not isinstance(c, Mapping) or not _doc_id_of(c):
                raise FormatError(where, f"a candidate of pair {pid!r} has neither 'doc_id' nor 'fqn'")
            try:
                records.append(CandidateRecord.from_yaml(c))
            except ValueError as exc:
                raise FormatError(where, f"candidate {_doc_id_of(c)!r} of {pid!r}: {exc}") from None
        out.append(_parse(CaseRecord, pair, candidates=tuple(records)))
    return tuple(out)


@dataclass
class VerifiedDataset:
    """A verified dataset: ``metadata`` and the list of ``pairs`` as written (plain data, what the miner builds and
    :func:`write_dataset` writes); :attr:`cases` reads them as typed records.

    Args:
        metadata: The run's provenance (``metadata:``).
        pairs: One mapping per case, in the YAML's shape.
        path: Where it was read from (names the file in errors; empty when built in memory).
    """

    metadata: dict[str, Any] = field(default_factory=dict)
    pairs: list[dict[str, Any]] = field(default_factory=list)
    path: str = field(default="", compare=False, repr=False)

    @property
    def cases(self) -> tuple[CaseRecord, ...]:
        """The cases as typed records, in file order (read from :attr:`pairs` on each access: keep the result).

        Raises:
            FormatError: a pair or candidate the reader refuses (see :func:`read_dataset`).
        """
        return _parse_cases(self.pairs, self.path or "the verified dataset")

    @property
    def outcome(self) -> str:
        """The run's outcome (``pass`` when the metadata names none)."""
        return str(self.metadata.get("outcome", "pass"))

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
    """Read and validate a ``retrieval_dataset.yaml`` (every case and candidate goes through the typed reader once).

    Raises:
        FormatError: not YAML, no ``pairs`` list, a pair without ``id`` or ``candidates``, a candidate without
            ``doc_id``/``fqn``, a bad ``empirical_relevance`` or ``grade``, a duplicate pair id.
    """
    from deltap._io import read_text, yaml_loads

    path = Path(path)
    data = yaml_loads(read_text(path), path)
    if not isinstance(data, dict) or not isinstance(data.get("pairs"), list):
        raise FormatError(path, "expected a mapping with a 'pairs:' list (a deltap retrieval_dataset.yaml)")
    _parse_cases(data["pairs"], str(path))
    for pair in data["pairs"]:  # the file as plain data, with YAML 1.1's boolean YES / NO made words again
        for c in pair["candidates"]:
            if isinstance(c.get("empirical_relevance"), bool):
                c["empirical_relevance"] = _relevance_word(c["empirical_relevance"])
    meta = data.get("metadata") or {}
    if not isinstance(meta, dict):
        raise FormatError(path, "'metadata' must be a mapping")
    return VerifiedDataset(meta, data["pairs"], str(path))


def dataset_qrels(dataset: VerifiedDataset) -> Qrels:
    """``{query_id: {doc_id: grade}}`` from a dataset (see the module docstring)."""
    qrels: Qrels = {}
    for case in dataset.cases:
        row = {c.doc_id: c.grade for c in case.candidates if c.grade is not None}
        if row:
            qrels[case.case_id] = row
    return qrels


def dataset_qrels_records(dataset: VerifiedDataset) -> list[QrelsRecord]:
    """Qrels JSONL records with the query text, reference answer and the coalition."""
    out: list[QrelsRecord] = []
    qrels = dataset_qrels(dataset)
    for case in dataset.cases:
        if case.case_id not in qrels:
            continue
        extra: dict[str, object] = {}
        if case.coalition:
            extra["coalition"] = list(case.coalition)
        if case.coalitions:  # every verified minimal winning coalition (set recall: any one covers the query)
            extra["coalitions"] = [list(c) for c in case.coalitions]
        out.append(QrelsRecord(case.case_id, case.query, qrels[case.case_id], case.reference_answer, extra))
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


def dataset_signed_gains(
    dataset: VerifiedDataset,
) -> tuple[dict[str, dict[str, float]], dict[str, list[tuple[frozenset[str], float]]], list[tuple[str, str]]]:
    """Signed gains of a dataset's documents and the value of each verified coalition.

    The gain of a candidate is its measured effect with the verdict's sign (:attr:`CandidateRecord.signed_gain`):
    ``+|delta_p|`` when ``relevant``, ``-|delta_p|`` when ``harmful``; ``irrelevant`` and ``undecided`` candidates (and
    documents the dataset never tried) have no gain and are left out. The verdict fixes the sign (it rests on the
    dataset's tests, which can use a different estimator than the difference in means ``delta_p``); ``delta_p`` gives
    the size.

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
    for case in dataset.cases:
        pid = case.case_id
        row: dict[str, float] = {}
        raw = {c.doc_id: c.delta_p for c in case.candidates if c.delta_p is not None}
        for c in case.candidates:
            gain = c.signed_gain
            if gain is None:
                unknown.append((pid, c.doc_id))
            elif gain != 0:
                row[c.doc_id] = gain
        if row:
            gains[pid] = row
        measured: dict[frozenset[str], float] = {}
        for check in case.metadata.get("coalition_check") or []:
            if isinstance(check, Mapping) and check.get("verified") and check.get("docs"):
                cm, nm = finite_number(check.get("coalition_mean")), finite_number(check.get("none_mean"))
                if cm is not None and nm is not None and cm > nm:
                    measured[frozenset(str(d) for d in check["docs"])] = cm - nm
        out: list[tuple[frozenset[str], float]] = []
        for members in case.winning_coalitions:
            key = frozenset(members)
            out.append((key, measured.get(key, sum(max(raw.get(d, 0.0), 0.0) for d in key))))
        if out:
            coalitions[pid] = out
    return gains, coalitions, unknown


#: a graded label "likely helps" (or hurts) when its local false sign rate is at most this (issue 35)
GRADED_LIKELY_LFSR = 0.1


def graded_call(label: GradedUtility | None) -> str | None:
    """A graded label in words: ``likely helps`` / ``likely hurts`` (lfsr ≤ :data:`GRADED_LIKELY_LFSR`, by the
    utility's sign) or ``unclear``; ``None`` without a label."""
    if label is None or label.utility is None:
        return None
    u, lfsr = label.utility, label.lfsr
    if lfsr is None or lfsr > GRADED_LIKELY_LFSR or u == 0:
        return "unclear"
    return "likely helps" if u > 0 else "likely hurts"


def candidate_graded(candidate: CandidateRecord, prior: str = "gold") -> GradedUtility | None:
    """A candidate's graded label under ``prior`` (``gold`` or ``no_gold``; issue 35, :mod:`deltap.mining.shrinkage`),
    or ``None`` when it has none (or its utility is not a finite number)."""
    label = (candidate.graded or {}).get(prior)
    return label if label is not None and label.utility is not None else None


def dataset_graded_qrels(dataset: VerifiedDataset, prior: str = "gold") -> Qrels:
    """``{query_id: {doc_id: grade}}`` of the graded labels (every candidate with a graded label is judged: its
    ``grade``, 0 when it does not likely help); candidates without one are unjudged, pairs without any are left out."""
    qrels: Qrels = {}
    for case in dataset.cases:
        row: dict[str, int] = {}
        for c in case.candidates:
            label = candidate_graded(c, prior)
            if label is not None:
                row[c.doc_id] = label.grade if label.grade is not None and label.grade > 0 else 0
        if row:
            qrels[case.case_id] = row
    return qrels


def dataset_graded_gains(dataset: VerifiedDataset, prior: str = "gold") -> dict[str, dict[str, float]]:
    """The signed gains of the graded labels: every graded candidate's shrunken utility (negative for a document that
    likely hurts), non-zero ones only — what ``signed_utility@K`` sums with ``--labels graded``."""
    gains: dict[str, dict[str, float]] = {}
    for case in dataset.cases:
        row = {
            c.doc_id: label.utility
            for c in case.candidates
            if (label := candidate_graded(c, prior)) is not None and label.utility
        }
        if row:
            gains[case.case_id] = row
    return gains
