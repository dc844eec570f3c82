"""The answer protocol line and the local model (issue 34, item 1): does asking for ``Answer: ...`` cost accuracy?

For every case of the bundled stdlib benchmark (``deltap/data/stdlib_benchmark.yaml``, 51 string-match and 5
multiple-choice questions), in two contexts — its gold documents in the prompt, and no document — the local model
(SmolLM2-135M, ``make_solver("local")``, greedy) is asked twice: with the answer instruction as it is
(``answer_protocol=off``) and with the protocol instruction (``answer_protocol=on``: the answer on a final line
``Answer: <identifier>`` / ``Answer: <letter>``). Each prompt gives

* the reply, judged by the case's checker (the checker of the code this script runs with), and
* the log-probability of the reference answer (the ``logprob`` outcome: what mining measures by default).

Two phases, so the model runs once and the replies can be judged again by a later checker:

    flock /tmp/deltap-heavy.lock python benchmarks/bench_protocol.py generate --out /tmp/protocol.jsonl
    python benchmarks/bench_protocol.py report /tmp/protocol.jsonl [--show]

``report`` prints, per benchmark type and protocol setting: pass rate with gold documents and without (and the
lift, gold minus none: the signal mining reads), the mean log-probability of the reference with and without
(and its lift), and how many replies declared an ``Answer:`` line.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

SETTINGS = ("off", "on")
CONTEXTS = ("gold", "none")
DECLARED = re.compile(r"(?im)^\W*answer\W*:")


def generate(out: Path, limit: int | None = None) -> None:
    """Ask the local model every (case, context, protocol setting) once and score the reference; one JSON line each."""
    from deltap.demo import build_demo_corpus, load_demo_cases
    from deltap.solvers import make_solver
    from deltap.solvers.prompts import PromptTemplate
    from deltap.trials.request import request_from_case

    corpus = build_demo_corpus()
    cases = load_demo_cases(corpus)[:limit]
    done: set[tuple[str, str, str]] = set()
    if out.exists():
        for line in out.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            done.add((r["case_id"], r["context"], r["protocol"]))
    started = time.perf_counter()
    with out.open("a", encoding="utf-8") as fh:
        for setting in SETTINGS:
            solver = make_solver("local", template=PromptTemplate(answer_protocol=setting))
            for n, case in enumerate(cases, start=1):
                for context in CONTEXTS:
                    if (case.case_id, context, setting) in done:
                        continue
                    docs = [corpus[d] for d in case.gold_doc_ids] if context == "gold" else []
                    request = request_from_case(case, docs)
                    answer = solver.answer(request)
                    score = solver.score(request, str(case.reference_answer))
                    record = {
                        "case_id": case.case_id,
                        "benchmark_type": case.benchmark_type,
                        "context": context,
                        "protocol": setting,
                        "reply": answer.text,
                        "logprob": score.logprob,
                        "n_documents": len(docs),
                    }
                    fh.write(json.dumps(record, ensure_ascii=False) + "\n")
                    fh.flush()
                print(
                    f"\rprotocol={setting} {n}/{len(cases)} cases ({time.perf_counter() - started:.0f} s)",
                    end="",
                    file=sys.stderr,
                )
            print(file=sys.stderr)


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def report(path: Path, show: bool = False) -> list[dict[str, Any]]:
    """Judge every stored reply with this code's checker; print (and return) one row per type and setting."""
    from deltap.checkers import make_checker
    from deltap.demo import build_demo_corpus, load_demo_cases

    cases = {c.case_id: c for c in load_demo_cases(build_demo_corpus())}
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    keys = {(r["case_id"], r["context"], r["protocol"]) for r in records}
    complete = {c for c, _, _ in keys if all((c, x, s) in keys for x in CONTEXTS for s in SETTINGS)}
    records = [r for r in records if r["case_id"] in complete]  # paired: cases asked in every context and setting
    checkers = {cid: make_checker(c.checker) for cid, c in cases.items()}
    for r in records:
        verdict = checkers[r["case_id"]].check(cases[r["case_id"]], r["reply"])
        r["verdict"] = verdict.status
        r["detail"] = verdict.detail
    rows = []
    header = (
        f"{'type':<18} {'protocol':<8} {'n':>4} {'pass gold':>9} {'pass none':>9} {'pass lift':>9} "
        f"{'logp gold':>9} {'logp none':>9} {'logp lift':>9} {'declared':>8}"
    )
    print(header)
    print("-" * len(header))
    for btype in ("api_understanding", "multiple_choice", "all"):
        for setting in SETTINGS:
            sel = [r for r in records if r["protocol"] == setting and (btype == "all" or r["benchmark_type"] == btype)]
            if not sel:
                continue
            by = {c: [r for r in sel if r["context"] == c] for c in CONTEXTS}
            rate = {c: _mean([float(r["verdict"] == "pass") for r in by[c]]) for c in CONTEXTS}
            logp = {c: _mean([r["logprob"] for r in by[c]]) for c in CONTEXTS}
            declared = sum(bool(DECLARED.search(r["reply"])) for r in sel)
            row = {
                "type": btype,
                "protocol": setting,
                "n": len(by["gold"]),
                "pass_gold": rate["gold"],
                "pass_none": rate["none"],
                "logp_gold": logp["gold"],
                "logp_none": logp["none"],
                "declared": declared,
                "replies": len(sel),
            }
            rows.append(row)
            print(
                f"{btype:<18} {setting:<8} {row['n']:>4} {rate['gold']:>9.3f} {rate['none']:>9.3f} "
                f"{rate['gold'] - rate['none']:>+9.3f} {logp['gold']:>9.2f} {logp['none']:>9.2f} "
                f"{logp['gold'] - logp['none']:>+9.2f} {declared:>4}/{len(sel):<3}"
            )
    if show:
        for r in records:
            print(f"{r['protocol']:<3} {r['context']:<4} {r['verdict']:<4} {r['case_id']:<44} {r['reply']!r}")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="phase", required=True)
    gen = sub.add_parser("generate", help="ask the local model (heavy: run under the shared lock; resumes)")
    gen.add_argument("--out", type=Path, required=True, help="JSON-lines file of replies and scores (appended)")
    gen.add_argument("--limit", type=int, default=None, help="only the first N cases")
    rep = sub.add_parser("report", help="judge the stored replies with this code's checkers and print the table")
    rep.add_argument("path", type=Path)
    rep.add_argument("--show", action="store_true", help="also print every reply with its verdict")
    args = parser.parse_args(argv)
    if args.phase == "generate":
        generate(args.out, args.limit)
    else:
        report(args.path, args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
