"""The run directory: the one owner of every path inside ``deltap mine --out`` and of how files there are written.

Every module that reads or writes a run directory asks :class:`RunDir` where a file is, instead of spelling
``"run.json"`` or ``"trials.sqlite"`` itself::

    RUN_DIR/retrieval_dataset.yaml          the verified dataset (mining)
    RUN_DIR/run.json                        the run summary (mining)
    RUN_DIR/trials.sqlite                   the trial log (mining; read-only reader: deltap.trials.log)
    RUN_DIR/qrels/test.tsv                  BEIR qrels, qrels/provenance.json beside them
    RUN_DIR/qrels.trec, qrels.jsonl         TREC qrels, qrels JSON Lines
    RUN_DIR/qrels/graded_<prior>.tsv|.trec|.jsonl
                                            graded qrels from the shrunken utility (prior ``gold`` or ``no_gold``)
    RUN_DIR/evaluation/compare.json         a retriever comparison (``deltap evaluate --into``, the demo)
    RUN_DIR/evaluation/runs/<name>.trec     the compared runs
    RUN_DIR/endtoend/                       the end-to-end evaluation (its own trials.sqlite, results.json...)
    RUN_DIR/audit/audit.csv, audit.json     the qrels audit (``deltap audit``)
    RUN_DIR/trials.csv, trials.parquet      every trial exported (``deltap export``)
    RUN_DIR/report.html, report.md          the reports

Writes are atomic (:func:`deltap._io.write_text_atomic`): a reader never sees half a file. The module imports only
the file formats below it, so every engine, the reports and the CLI can use it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deltap._io import write_text_atomic
from deltap.errors import DeltapError, json_error_detail

__all__ = ["GRADED_FORMATS", "GRADED_PRIORS", "TRIAL_LOG", "AuditDir", "EndToEndDir", "RunDir"]

#: the trial log's file name, in a run directory and in its ``endtoend/`` folder
TRIAL_LOG = "trials.sqlite"
#: the priors of the graded labels (:mod:`deltap.mining.shrinkage`), each with its own graded qrels
GRADED_PRIORS = ("gold", "no_gold")
#: the graded qrels' formats and their file suffixes (BEIR TSV with a header, TREC, qrels JSON Lines)
GRADED_FORMATS = {"beir": ".tsv", "trec": ".trec", "jsonl": ".jsonl"}


def _write_json(path: Path, data: Any, **dumps: Any) -> Path:
    return write_text_atomic(path, json.dumps(data, **({"indent": 2} | dumps)) + "\n")


def _read_json_object(path: Path, what: str) -> tuple[dict[str, Any] | None, str]:
    """``(object, "")`` from a JSON file, or ``(None, note)`` saying why not (absent: ``(None, "")``)."""
    if not path.is_file():
        return None, ""
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        return None, f"{what} is not valid JSON ({json_error_detail(exc)}, line {exc.lineno})"
    except UnicodeDecodeError:
        return None, f"{what} is not valid UTF-8"
    if not isinstance(loaded, dict):
        return None, f"{what} is not a JSON object"
    return loaded, ""


@dataclass(frozen=True)
class EndToEndDir:
    """``RUN_DIR/endtoend/`` (or any folder :func:`deltap.endtoend.end_to_end` writes): its own trial log and
    results."""

    root: Path

    @property
    def trials(self) -> Path:
        return self.root / TRIAL_LOG

    @property
    def results(self) -> Path:
        return self.root / "results.json"

    @property
    def per_case_csv(self) -> Path:
        return self.root / "per_case.csv"

    @property
    def per_case_json(self) -> Path:
        return self.root / "per_case.json"

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.json"

    def write_text(self, path: Path, text: str) -> Path:
        """Write ``text`` to one of this folder's files atomically."""
        return write_text_atomic(path, text)

    def read_results(self) -> dict[str, Any] | None:
        """``results.json``, or ``None`` when it is absent or not a JSON object."""
        return _read_json_object(self.results, "endtoend/results.json")[0]


@dataclass(frozen=True)
class AuditDir:
    """``RUN_DIR/audit/`` (or any folder ``deltap audit --out`` names): the qrels audit as CSV and JSON."""

    root: Path

    @property
    def csv(self) -> Path:
        return self.root / "audit.csv"

    @property
    def json(self) -> Path:
        return self.root / "audit.json"


@dataclass(frozen=True)
class RunDir:
    """A run directory (``deltap mine --out``): where each of its files is, and atomic writes into it.

    Args:
        root: The directory (it need not exist yet).
    """

    root: Path

    def __init__(self, root: str | Path) -> None:
        object.__setattr__(self, "root", Path(root))

    # -- mining --------------------------------------------------------------------------------------------------
    @property
    def dataset(self) -> Path:
        """The verified dataset, ``retrieval_dataset.yaml``."""
        return self.root / "retrieval_dataset.yaml"

    @property
    def run_json(self) -> Path:
        """The run summary, ``run.json``."""
        return self.root / "run.json"

    @property
    def trials(self) -> Path:
        """The trial log, ``trials.sqlite``."""
        return self.root / TRIAL_LOG

    @property
    def qrels_dir(self) -> Path:
        return self.root / "qrels"

    @property
    def qrels_beir(self) -> Path:
        """BEIR qrels, ``qrels/test.tsv``."""
        return self.qrels_dir / "test.tsv"

    @property
    def qrels_provenance(self) -> Path:
        return self.qrels_dir / "provenance.json"

    @property
    def qrels_trec(self) -> Path:
        return self.root / "qrels.trec"

    @property
    def qrels_jsonl(self) -> Path:
        return self.root / "qrels.jsonl"

    def graded_qrels(self, prior: str, fmt: str = "beir") -> Path:
        """The graded qrels of ``prior`` (:data:`GRADED_PRIORS`) in ``fmt`` (:data:`GRADED_FORMATS`):
        ``qrels/graded_<prior>.tsv`` / ``.trec`` / ``.jsonl``. The BEIR file is a split of the run directory read as
        a BEIR folder (``--qrels RUN_DIR --split graded_gold``).

        Raises:
            ValueError: an unknown prior or format.
        """
        if prior not in GRADED_PRIORS:
            raise ValueError(f"unknown graded prior {prior!r}; expected one of {', '.join(GRADED_PRIORS)}")
        if fmt not in GRADED_FORMATS:
            raise ValueError(f"unknown graded qrels format {fmt!r}; expected one of {', '.join(GRADED_FORMATS)}")
        return self.qrels_dir / f"graded_{prior}{GRADED_FORMATS[fmt]}"

    # -- evaluation, end to end, audit, exports, reports ---------------------------------------------------------
    @property
    def evaluation(self) -> Path:
        return self.root / "evaluation"

    @property
    def comparison(self) -> Path:
        """A retriever comparison, ``evaluation/compare.json`` (``Comparison.to_dict()``)."""
        return self.evaluation / "compare.json"

    @property
    def runs_dir(self) -> Path:
        """The compared retrievers' runs, ``evaluation/runs/<name>.trec``."""
        return self.evaluation / "runs"

    def run_file(self, name: str) -> Path:
        """The TREC run of system ``name`` under ``evaluation/runs/``."""
        return self.runs_dir / f"{name}.trec"

    @property
    def endtoend(self) -> EndToEndDir:
        """The end-to-end evaluation's folder, ``endtoend/``."""
        return EndToEndDir(self.root / "endtoend")

    @property
    def audit(self) -> AuditDir:
        """The qrels audit's folder, ``audit/`` (``audit.csv``, ``audit.json``)."""
        return AuditDir(self.root / "audit")

    def export(self, fmt: str) -> Path:
        """Every trial exported as ``fmt`` (``csv`` or ``parquet``): ``trials.<fmt>``."""
        return self.root / f"trials.{fmt}"

    @property
    def report_html(self) -> Path:
        return self.root / "report.html"

    @property
    def report_md(self) -> Path:
        return self.root / "report.md"

    def layout(self) -> dict[str, Path]:
        """What a mining run writes here, by role (the plan of the directory a run set-up shows)."""
        return {
            "dataset": self.dataset,
            "trial log": self.trials,
            "qrels (BEIR)": self.qrels_beir,
            "qrels (TREC)": self.qrels_trec,
            "qrels (JSONL)": self.qrels_jsonl,
            "graded qrels": self.graded_qrels("gold"),
            "run summary": self.run_json,
        }

    # -- reading and writing -------------------------------------------------------------------------------------
    def is_mined(self) -> bool:
        """Whether a mining run finished writing its verified dataset here."""
        return self.dataset.is_file()

    def require_mined(self) -> RunDir:
        """This run directory, after checking that ``deltap mine`` wrote its dataset.

        Raises:
            DeltapError: no ``retrieval_dataset.yaml`` here.
        """
        if not self.is_mined():
            raise DeltapError(
                f"{self.root} is not a deltap mine run directory (no {self.dataset.name}); run deltap mine first"
            )
        return self

    def write_text(self, path: Path, text: str) -> Path:
        """Write ``text`` (UTF-8) to ``path`` (one of this directory's files) atomically."""
        return write_text_atomic(path, text)

    def write_json(self, path: Path, data: Any, **dumps: Any) -> Path:
        """Write ``data`` as indented JSON to ``path`` atomically (``dumps``: extra :func:`json.dumps` arguments)."""
        return _write_json(path, data, **dumps)

    def read_summary(self) -> tuple[dict[str, Any] | None, str]:
        """``run.json`` as ``(object, "")``, or ``(None, note)`` when it is malformed (``(None, "")``: absent)."""
        return _read_json_object(self.run_json, "run.json")

    def summary(self) -> dict[str, Any]:
        """``run.json`` (``{}`` when absent or unreadable)."""
        return self.read_summary()[0] or {}

    def write_comparison(
        self, comparison: Mapping[str, Any], runs: Mapping[str, Mapping[str, Mapping[str, float]]] | None = None
    ) -> Path:
        """Write a retriever comparison (``Comparison.to_dict()``) to ``evaluation/compare.json`` and each of
        ``runs`` to ``evaluation/runs/<name>.trec``, atomically; the report shows them. Returns ``compare.json``."""
        from deltap.qrels import write_trec_run

        for name, run in (runs or {}).items():
            write_trec_run({q: dict(d) for q, d in run.items()}, self.run_file(name), tag=name)
        return _write_json(self.comparison, dict(comparison), sort_keys=False)

    def read_comparison(self) -> tuple[dict[str, Any] | None, str]:
        """``evaluation/compare.json`` as ``(object, "")``, or ``(None, note)`` (``(None, "")``: absent)."""
        return _read_json_object(self.comparison, "evaluation/compare.json")
