"""Where a case becomes a solver request: the question, its options, the code to fix, and the documents shown."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltap.errors import DeltapError

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.documents import Document
    from deltap.solvers.base import SolveRequest

__all__ = ["request_from_case"]


def request_from_case(case: Case, documents: Sequence[Document] = ()) -> SolveRequest:
    """The :class:`~deltap.solvers.base.SolveRequest` for a case and a context subset.

    Fills ``options`` for multiple choice and, for ``fix_error`` cases, ``extra["unfixed_code"]`` from the checker's
    ``unfixed_file`` (read here, once per call: callers running many trials should build one request and
    ``dataclasses.replace`` its ``documents``).

    Raises:
        DeltapError: the ``unfixed_file`` of a ``fix_error`` case cannot be read.
    """
    from deltap.solvers.base import SolveRequest

    options = case.metadata.get("options") or case.checker.params.get("options")
    extra: dict[str, Any] = {}
    if case.benchmark_type == "fix_error":
        path = case.checker.params.get("unfixed_file")
        if path:
            try:
                extra["unfixed_code"] = Path(path).read_text(encoding="utf-8")
            except OSError as exc:
                raise DeltapError(f"case {case.case_id!r}: cannot read unfixed_file {path}: {exc.strerror}") from None
    return SolveRequest(
        case_id=case.case_id,
        question=case.query,
        documents=tuple(documents),
        benchmark_type=case.benchmark_type,
        options=dict(options) if options else None,
        extra=extra,
    )
