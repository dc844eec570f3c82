"""Builders and runners shared by the test tiers: one copy of each instead of one per test file.

* :func:`run_cli` / :func:`cli_exit_code` drive the real CLI entry point (``deltap.cli.app.main``, what the
  ``deltap`` script calls) in-process and turn its ``SystemExit`` into an exit code.
* :func:`string_case`, :func:`numbered_corpus` and :func:`answering_solver` build the small planted world most
  mining tests use: documents ``d00``, ``d01``, …; cases answered ``ans-<case id>`` and checked by string match; a
  simulated solver that gives exactly those answers.
* :func:`mine_files` writes the tiny corpus and benchmark that ``deltap mine`` tests run on;
  :func:`mined_endtoend_args` mines them with the simulated solver and gives the ``deltap endtoend`` command line
  the end-to-end plan tests run on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from deltap.cases import Case, CheckerSpec
from deltap.documents import Corpus, Document
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth

#: The keys of run.json's ``plan`` that are timings (how long planning took, and the time range measured on the run's
#: first calls): the only plan keys two runs of the same command may differ in.
PLAN_TIMINGS = ("seconds_to_plan", "seconds_per_call", "latency_source", "latency_measured", "seconds")


def cli_exit_code(argv: list[str] | tuple[object, ...]) -> int:
    """Run ``deltap ARGV`` in-process and return its exit code (0 when the command returns normally).

    A ``SystemExit`` with a message instead of a number counts as 1, as the interpreter would exit.
    """
    from deltap.cli.app import main

    try:
        main([str(a) for a in argv])
    except SystemExit as exc:
        if exc.code is None:
            return 0
        return exc.code if isinstance(exc.code, int) else 1
    return 0


def run_cli(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    """Run ``deltap ARGV`` in-process: ``(exit code, stdout, stderr)`` of that one command."""
    code = cli_exit_code(argv)
    out, err = capsys.readouterr()
    return code, out, err


def answer(case_id: str) -> str:
    """The right answer of a :func:`string_case` (what :func:`answering_solver` says on success)."""
    return f"ans-{case_id}"


def string_case(case_id: str, gold: tuple[str, ...] = ("d00", "d01"), **changes: Any) -> Case:
    """A case asking ``question <case id>``, answered :func:`answer` and checked by string match.

    Args:
        case_id: The case id.
        gold: Its gold document ids.
        **changes: Any other :class:`~deltap.cases.Case` field to set (``query``, ``checker``, …).
    """
    case = Case(
        case_id,
        f"question {case_id}",
        gold_doc_ids=gold,
        checker=CheckerSpec("string_match", {"answers": [answer(case_id)]}),
        reference_answer=answer(case_id),
    )
    return replace(case, **changes) if changes else case


def numbered_corpus(n: int, text: Callable[[int], str] = lambda i: f"text {i}") -> Corpus:
    """Documents ``d00`` … ``d{n-1}``, the ``i``-th with text ``text(i)`` (``"text i"`` unless told)."""
    return Corpus([Document(f"d{i:02d}", text(i)) for i in range(n)])


def answering_solver(truths: Mapping[str, SimulatedTruth], *, seed: int = 5, **options: Any) -> SimulatedSolver:
    """A simulated solver planted with ``truths`` that answers each case's :func:`answer` on success.

    ``options`` go to :class:`~deltap.solvers.simulated.SimulatedSolver` (``outcome``, ``noise``, ``deterministic``,
    …).
    """
    return SimulatedSolver(truths, answers={c: answer(c) for c in truths}, seed=seed, **options)


def mine_files(tmp_path: Path) -> tuple[Path, Path]:
    """A 12-document BEIR corpus (``pkg.D0`` … ``pkg.D11``) and a one-case API benchmark whose gold is ``pkg.D0``
    (plus one id missing from the corpus): ``(corpus.jsonl, bench.yaml)`` in ``tmp_path``."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"_id": f"pkg.D{i}", "title": "", "text": f"doc {i}"}) + "\n" for i in range(12))
    )
    bench = tmp_path / "bench.yaml"
    bench.write_text(
        "benchmarks:\n"
        "  - id: q1\n    question: Which class runs agents?\n    benchmark_type: api_understanding\n"
        "    answers:\n      - answer: Runner\n        fully_qualified_class_name: [pkg.D0, pkg.Missing]\n"
    )
    return corpus, bench


def mined_endtoend_args(tmp_path: Path, *options: str) -> tuple[Path, Path, Path, list[str]]:
    """:func:`mine_files` mined by the simulated solver into ``tmp_path/run`` (``deltap mine``, budget 16, 3
    placebos, no pilot), and the ``deltap endtoend`` arguments on it (controls ``none,gold,all``, no retriever, the
    simulated solver, 2 repeats) followed by ``options``: ``(corpus, bench, run directory, argv)``."""
    from deltap.cli.app import main

    corpus, bench = mine_files(tmp_path)
    out = tmp_path / "run"
    main(["mine", str(bench), "--corpus", str(corpus), "--retriever", "none", "--solver", "simulated", "--budget", "16",
          "--placebo", "3", "--out", str(out), "--pilot", "0"])  # fmt: skip
    args = ["endtoend", str(out), str(bench), "--corpus", str(corpus), "--retriever", "", "--controls", "none,gold,all",
            "--solver", "simulated", "--repeats", "2", *options]  # fmt: skip
    return corpus, bench, out, args
