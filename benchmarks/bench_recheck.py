"""Re-check the replies stored in real trial logs with this code's answer checkers (issue 24, item 3; issue 34, item 5).

For every run directory given (mined with ``--outcome pass``, so every trial keeps the model's reply):

1. **Verdicts.** Every stored reply of a ``string_match`` / ``multiple_choice`` case is checked again with this
   code's checkers — ``grammar=lenient`` (before issue 24), ``grammar=strict`` (issue 24's, the default the logs of
   2026-11-25/26 were judged by) and ``grammar=grader`` (the default since issue 34) — with the checker spec the run
   recorded in its manifest. No solver call. One table row per grammar: replies, how many verdicts equal the logged
   ones (``=log``: the grammar a log was judged by must give back all of them), pass->fail and fail->pass from the
   log, and (grader) ``unreadable`` replies (fails whose detail says the checker found no answer).
2. **Labels.** The run's ``trials.sqlite`` is copied to a scratch directory once as logged and once per grammar with
   every trial's outcome replaced by that grammar's re-check; the library's own mining (:func:`deltap.mine`:
   preflight, stopping rule, dataset-wide BH, verdicts, coalitions) resumes on each copy with a *replay solver* that
   answers each prompt with the reply the log holds for it (the run's local model is greedy: the same prompt gets the
   same reply; prompts are rendered without the answer protocol line, as the logs were). A prompt the log never saw
   (the procedure takes another path when outcomes change, or the run was stopped before it) cannot be replayed: it
   is an ``error`` trial, counted in the table (``unseen``) — or, with ``--model``, asked of the run's local model.
   The replay of the log as it is must give back the run's own labels (``replay=run``; ``n/a`` for a stopped run
   without a dataset); each grammar's labels and case statuses are compared with it and every change is printed.

Run (after mining, needs the cases and corpus the run was mined with)::

    python benchmarks/bench_recheck.py /tmp/demo-pass/run --demo /tmp/demo-pass/corpus.jsonl
    python benchmarks/bench_recheck.py RUN --cases api_understanding.yaml --corpus adk.jsonl

Prints one table row per run directory (and the changed replies with ``--show``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sqlite3
import sys
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from deltap.cases import Case, CheckerSpec  # noqa: E402
from deltap.checkers import make_checker  # noqa: E402
from deltap.solvers.base import Answer, SolverError  # noqa: E402

GRAMMAR_KINDS = ("string_match", "multiple_choice")


def _specs(db: sqlite3.Connection) -> dict[str, CheckerSpec]:
    """The checker spec of every case, from the manifests the run recorded."""
    out = {}
    for case_id, manifest in db.execute("SELECT case_id, manifest_json FROM manifests"):
        spec = json.loads(json.loads(manifest)["checker"])
        out[case_id] = CheckerSpec(spec["kind"], spec["params"])
    return out


def _with_grammar(spec: CheckerSpec, grammar: str) -> CheckerSpec:
    return CheckerSpec(spec.kind, {**dict(spec.params), "grammar": grammar}) if spec.kind in GRAMMAR_KINDS else spec


GRAMMARS = ("lenient", "strict", "grader")


def recheck_verdicts(run: Path, cases: dict[str, Case], show: bool = False) -> dict[str, Any]:
    """Re-check every stored reply with this code's lenient, strict and grader readings (no solver call); ``cases``
    give the questions and gold documents (the grader reads names a question mentions as restated and checks
    qualifiers against the gold documents). Per grammar: replies whose verdict equals the logged one, pass->fail and
    fail->pass from the log, and (grader) unreadable replies; ``examples`` lists each distinct changed reply."""
    from deltap.checkers import is_unreadable

    db = sqlite3.connect(f"file:{run / 'trials.sqlite'}?mode=ro", uri=True)
    specs = _specs(db)
    checkers = {
        cid: {g: make_checker(_with_grammar(s, g)) for g in GRAMMARS}
        for cid, s in specs.items()
        if s.kind in GRAMMAR_KINDS
    }
    counts: Counter[str] = Counter()
    details: dict[str, Counter[str]] = {g: Counter() for g in GRAMMARS}
    examples: list[tuple[str, str, str, str, str]] = []
    rows = db.execute(
        "SELECT case_id, answer, outcome FROM trials WHERE answer IS NOT NULL AND outcome IN ('pass', 'fail')"
    ).fetchall()
    seen: set[tuple[str, str, str]] = set()
    for case_id, answer, logged in rows:
        if case_id not in checkers:
            continue
        case = cases.get(case_id) or Case(case_id, "")
        counts["replies"] += 1
        counts[f"kind:{specs[case_id].kind}"] += 1
        counts["logged pass"] += int(logged == "pass")
        for g in GRAMMARS:
            res = checkers[case_id][g].check(case, answer)
            counts[f"{g} == log"] += int(logged == res.status)
            counts[f"{g} pass"] += int(res.passed)
            if g == "grader":
                counts["unreadable"] += int(is_unreadable(res.detail))
            if logged != res.status:
                counts[f"{g} {logged}->{res.status}"] += 1
                details[g][res.detail.split(":", 1)[0] if res.detail else "?"] += 1
                if (g, case_id, answer) not in seen:
                    seen.add((g, case_id, answer))
                    examples.append((g, case_id, logged, res.status, f"{answer[:160]!r} [{res.detail}]"))
    db.close()
    if show:
        for ex in examples:
            print("   ", *ex)
    return {"counts": counts, "rules": details, "examples": examples, "specs": specs}


class ReplaySolver:
    """Answers a prompt with the reply a trial log holds for it; an unseen prompt is a :class:`SolverError`."""

    deterministic = True

    def __init__(self, solver_id: str, replies: dict[str, str], fallback: Any = None) -> None:
        self.id = solver_id
        self.replies = replies
        self.fallback = fallback  # the run's model, asked only for prompts the log never saw (``--model``)
        self.unseen = 0

    def answer(self, request: Any) -> Answer:
        from deltap.solvers.prompts import PromptTemplate, prompt_hash, render_prompt

        h = prompt_hash(render_prompt(request, PromptTemplate(answer_protocol="off")))
        if h not in self.replies:
            self.unseen += 1
            if self.fallback is None:
                raise SolverError("prompt not in the trial log (cannot be replayed without the model)")
            self.replies[h] = self.fallback.answer(request).text
        return Answer(self.replies[h], solver_id=self.id)

    def score(self, request: Any, reference: str) -> Any:
        raise NotImplementedError("replay of pass-outcome logs only")


def _labels(result: Any) -> dict[tuple[str, str], tuple[str, Any]]:
    return {
        (p["id"], c["doc_id"]): (c["verdict"], c.get("grade")) for p in result.dataset.pairs for c in p["candidates"]
    }


def _status(result: Any) -> dict[str, str]:
    return {p["id"]: p["metadata"]["status"] for p in result.dataset.pairs}


def relabel(
    run: Path, cases: list[Case], corpus: Any, grammar: str | None, scratch: Path, fallback: Any = None
) -> tuple[Any, int]:
    """Mine again on a copy of ``run`` whose trial outcomes are re-checked with ``grammar`` (``None``: as logged),
    replaying the logged replies."""
    from deltap import mine
    from deltap.mining.config import MiningConfig

    out = scratch / (grammar or "logged")
    out.mkdir(parents=True)
    src = sqlite3.connect(f"file:{run / 'trials.sqlite'}?mode=ro", uri=True)
    dst = sqlite3.connect(out / "trials.sqlite")
    src.backup(dst)
    src.close()
    specs = _specs(dst)
    config = {k: json.loads(v) for k, v in dst.execute("SELECT key, value FROM meta")}
    replies = {
        h: a
        for h, a in dst.execute(
            "SELECT prompt_hash, answer FROM trials WHERE answer IS NOT NULL AND prompt_hash IS NOT NULL"
        )
    }
    checkers = {cid: make_checker(_with_grammar(s, grammar or "grader")) for cid, s in specs.items()}
    by_id = {c.case_id: c for c in cases}
    rows = dst.execute(
        "SELECT rowid, case_id, answer FROM trials WHERE answer IS NOT NULL AND outcome IN ('pass', 'fail')"
    ).fetchall()
    if grammar is None:
        rows = []  # the outcomes as logged
    with dst:
        for rowid, case_id, answer in rows:
            checker = checkers[case_id]
            res = checker.check(by_id.get(case_id) or Case(case_id, ""), answer)
            dst.execute(
                "UPDATE trials SET outcome = ?, value = ?, checker_id = ?, detail = ? WHERE rowid = ?",
                (res.outcome, 1.0 if res.passed else 0.0, checker.id, res.detail[:500], rowid),
            )
        dst.execute("DELETE FROM manifests")  # recomputed from these cases (their grammar is the replayed one)
        dst.execute("UPDATE meta SET value = 'null' WHERE key = 'solver_model'")  # the replay has no weights file
    dst.close()
    fields = {f.name for f in dataclasses.fields(MiningConfig)}
    skip = ("workers", "cases_in_flight", "pilot")  # a replay relabels: no pilot gate (its calls are logged anyway)
    cfg = MiningConfig(**{k: v for k, v in config.items() if k in fields and k not in skip})
    mined = [by_id[cid] for cid in specs if cid in by_id]
    if grammar is not None:
        mined = [replace(c, checker=_with_grammar(c.checker, grammar)) for c in mined]
    else:  # the grammar the run was judged by (its manifest)
        logged_grammar = {cid: json.loads(m).get("checker_grammar") for cid, m in _manifests(run).items()}
        mined = [
            replace(c, checker=_with_grammar(c.checker, logged_grammar[c.case_id]))
            if logged_grammar.get(c.case_id)
            else c
            for c in mined
        ]
    if fallback is not None and str(getattr(fallback, "id", "")) != str(config["solver"]):
        raise SystemExit(f"--model: the solver {fallback.id} is not the run's {config['solver']}")
    solver = ReplaySolver(str(config["solver"]), replies, fallback)
    result = mine(mined, corpus, solver, out=out, config=cfg, retriever=None)
    return result, solver.unseen


def _manifests(run: Path) -> dict[str, str]:
    db = sqlite3.connect(f"file:{run / 'trials.sqlite'}?mode=ro", uri=True)
    out = dict(db.execute("SELECT case_id, manifest_json FROM manifests").fetchall())
    db.close()
    return out


def _original(run: Path) -> dict[tuple[str, str], tuple[str, Any]]:
    """The run's own labels (its ``retrieval_dataset.yaml``), ``{}`` when it has none."""
    from deltap.dataset import read_dataset

    path = run / "retrieval_dataset.yaml"
    if not path.exists():
        return {}
    return {
        (p["id"], c["doc_id"]): (c["verdict"], c.get("grade"))
        for p in read_dataset(path).pairs
        for c in p["candidates"]
    }


def _relabel_all(run: Path, cases: list[Case], corpus: Any, model: bool) -> dict[str, str]:
    """Labels of the log as logged and re-checked with each grammar: per grammar the table's label columns (labels,
    whether the as-logged replay gives back the run's own labels, labels and case statuses that differ from the
    as-logged replay, prompts the log never saw); every changed label and status is printed."""
    fallback = None
    if model:
        from deltap.solvers import make_solver

        fallback = make_solver("local")
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="recheck-") as tmp:
        logged, unseen_l = relabel(run, cases, corpus, None, Path(tmp), fallback)
        ll, orig, st_l = _labels(logged), _original(run), _status(logged)
        same_as_run = (
            "n/a" if not orig else ("yes" if ll == orig else f"no ({sum(orig.get(k) != x for k, x in ll.items())})")
        )
        for g in GRAMMARS:
            result, unseen = relabel(run, cases, corpus, g, Path(tmp), fallback)
            lg, st_g = _labels(result), _status(result)
            keys = sorted(ll.keys() | lg.keys())
            changed = [k for k in keys if ll.get(k, ("absent",))[0] != lg.get(k, ("absent",))[0]]
            status_changed = [k for k in st_l if st_l[k] != st_g.get(k)]
            for k in changed:
                print(f"    {g}: label {k[0]} / {k[1]}: {ll.get(k, ('absent',))[0]} -> {lg.get(k, ('absent',))[0]}")
            for k in status_changed:
                print(f"    {g}: case {k}: {st_l[k]} -> {st_g.get(k)}")
            out[g] = (
                f" {len(lg):>6} {same_as_run:>10} {len(changed):>14} {len(status_changed):>14} {unseen_l + unseen:>6}"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="run directories (each with trials.sqlite)")
    ap.add_argument("--demo", type=Path, help="the demo's corpus.jsonl: cases are the bundled stdlib benchmark")
    ap.add_argument("--cases", type=Path, help="the cases file the runs were mined with")
    ap.add_argument("--corpus", type=Path, help="the corpus the runs were mined with")
    ap.add_argument("--show", action="store_true", help="print every reply whose verdict changed")
    ap.add_argument("--verdicts-only", action="store_true", help="skip the relabelling (no mining replay)")
    ap.add_argument(
        "--model",
        action="store_true",
        help="load the run's local model and ask it the prompts the log never saw (heavy: run under the shared lock)",
    )
    args = ap.parse_args(argv)
    import warnings

    warnings.simplefilter("ignore")
    from deltap import load_corpus

    if args.demo:
        from deltap.demo import load_demo_cases

        corpus = load_corpus(args.demo)
        cases = load_demo_cases(corpus)
    elif args.cases and args.corpus:
        from deltap import load_cases

        corpus = load_corpus(args.corpus)
        cases = load_cases(args.cases, corpus, on_missing="skip")
    else:
        corpus, cases = None, []
        args.verdicts_only = True
    header = (
        f"{'run':<24} {'grammar':<8} {'replies':>7} {'=log':>5} {'pass->fail':>10} {'fail->pass':>10} "
        f"{'unreadable':>10} {'labels':>6} {'replay=run':>10} {'labels changed':>14} {'status changed':>14} "
        f"{'unseen':>6}"
    )
    lines = [header, "-" * len(header)]
    for run in args.runs:
        v = recheck_verdicts(run, {c.case_id: c for c in cases}, args.show)
        c = v["counts"]
        name = run.parent.name + "/" + run.name
        relabelled: dict[str, str] = {}
        if not args.verdicts_only:
            relabelled = _relabel_all(run, cases, corpus, args.model)
        for g in GRAMMARS:
            row = (
                f"{name:<24} {g:<8} {c['replies']:>7} {c[f'{g} == log']:>5} {c[f'{g} pass->fail']:>10} "
                f"{c[f'{g} fail->pass']:>10} {c['unreadable'] if g == 'grader' else '':>10}"
            )
            lines.append(row + relabelled.get(g, ""))
            if v["rules"][g]:
                lines.append(f"{'':<24} {g}: why the changed verdicts changed (detail): {dict(v['rules'][g])}")
        lines.append(
            f"{'':<24} passes: logged {c['logged pass']}, lenient {c['lenient pass']}, strict {c['strict pass']}, "
            f"grader {c['grader pass']}"
        )
        kinds = {k.split(":", 1)[1]: n for k, n in c.items() if k.startswith("kind:")}
        lines.append(f"{'':<24} replies by checker: {kinds}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
