"""A hand-written run directory following the mining output contract, for report tests that must not mine.

``write_contract_run`` writes every file of the contract (retrieval_dataset.yaml, run.json, trials.sqlite, qrels in
three formats, evaluation/compare.json and TREC runs) with known values, so report tests can assert on them. The
tests here check that the reader recovers exactly those values.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import yaml

from deltap.qrels import write_beir_qrels, write_trec_qrels, write_trec_run
from deltap.report.run_data import load_run_dir

CASES: list[dict[str, Any]] = [
    {
        "id": "q_json_dumps",
        "query": "Which function serialises a Python object to a JSON string?",
        "reference_answer": "json.dumps",
        "status": "mined",
        "base": 0.2,
        "coalition": ["json.dumps"],
        "candidates": [
            # doc_id, sources, verdict, delta_p, ci_low, ci_high, grade
            ("json.dumps", ["gold", "retrieved"], "relevant", 0.45, 0.25, 0.62, 2),
            ("json.JSONEncoder", ["retrieved"], "relevant", 0.18, 0.05, 0.31, 1),
            ("json.loads", ["retrieved"], "irrelevant", 0.01, -0.04, 0.05, 0),
            ("pickle.dumps", ["retrieved"], "harmful", -0.22, -0.38, -0.08, 0),
            ("textwrap.dedent", ["placebo"], "irrelevant", -0.02, -0.06, 0.04, 0),
            ("heapq.heappush", ["placebo"], "undecided", 0.06, -0.09, 0.2, 0),
        ],
    },
    {
        "id": "q_heapq_smallest",
        "query": "Which heapq function returns the n smallest elements?",
        "reference_answer": "heapq.nsmallest",
        "status": "mined",
        "base": 0.1,
        "coalition": None,
        "candidates": [
            ("heapq.nsmallest", ["gold"], "relevant", 0.3, 0.12, 0.47, 2),
            ("heapq.nlargest", ["retrieved"], "undecided", 0.05, -0.1, 0.21, 0),
            ("json.dump", ["placebo"], "relevant", 0.15, 0.02, 0.29, 1),
            ("textwrap.fill", ["placebo"], "irrelevant", 0.0, -0.05, 0.05, 0),
        ],
    },
    {
        "id": "q_saturated",
        "query": "What does len return for an empty list?",
        "reference_answer": "0",
        "status": "saturated",
        "base": 1.0,
        "coalition": None,
        "candidates": [],
    },
]


def _pair(case: dict[str, Any]) -> dict[str, Any]:
    candidates = []
    for doc_id, sources, verdict, dp, lo, hi, grade in case["candidates"]:
        candidates.append(
            {
                "doc_id": doc_id,
                "fqn": doc_id,
                "text": f"function {doc_id}(...)\nDocstring of {doc_id}.",
                "source": sources,
                "empirical_relevance": {"relevant": "YES", "irrelevant": "NO", "harmful": "HARMFUL"}.get(
                    verdict, "UNDECIDED"
                ),
                "verdict": verdict,
                "delta_p": dp,
                "ci_low": lo,
                "ci_high": hi,
                "p_in": 0.3 + dp / 2,
                "p_out": 0.3 - dp / 2,
                "n_in": 30,
                "n_out": 34,
                "p_value": 0.001 if verdict in {"relevant", "harmful"} else 0.5,
                "q_value": 0.004 if verdict in {"relevant", "harmful"} else 0.7,
                "grade": grade,
            }
        )
    placebos = [c for c in candidates if "placebo" in c["source"]]
    fpr = sum(c["verdict"] in {"relevant", "harmful"} for c in placebos) / len(placebos) if placebos else None
    return {
        "id": case["id"],
        "query": case["query"],
        "reference_answer": case["reference_answer"],
        "candidates": candidates,
        "coalition": case["coalition"],
        "metadata": {
            "trials": 64 if candidates else 2,
            "base_success_rate": case["base"],
            "status": case["status"],
            "placebo_false_positive_rate": fpr,
            "seed": 7,
            "calls": 64 if candidates else 2,
            "wall_seconds": 12.5,
        },
    }


def write_contract_run(root: Path, *, with_evaluation: bool = True) -> Path:
    """Write a complete run directory to ``root`` and return it."""
    root.mkdir(parents=True, exist_ok=True)
    pairs = [_pair(c) for c in CASES]
    dataset = {
        "metadata": {
            "tool": "deltap 0.1.0",
            "created": "2026-11-22T02:00:00Z",
            "solver": "simulated(seed=7)",
            "outcome": "pass",
            "seed": 7,
            "q": 0.05,
            "budget": 64,
            "pi": 0.5,
            "min_effect": 0.1,
            "margin": 0.08,
            "grade_mapping": {"2": "delta_p >= 0.3", "1": "relevant"},
        },
        "pairs": pairs,
    }
    (root / "retrieval_dataset.yaml").write_text(yaml.safe_dump(dataset, sort_keys=False), encoding="utf-8")
    run = {
        "tool_version": "0.1.0",
        "solver_id": "simulated(seed=7)",
        "outcome": "pass",
        "seed": 7,
        "budget": 64,
        "q": 0.05,
        "pi": 0.5,
        "started": "2026-11-22T02:00:00Z",
        "ended": "2026-11-22T02:00:25Z",
        "wall_seconds": 25.0,
        "calls": 130,
        "cases_by_status": {"mined": 2, "saturated": 1},
        "verdicts": {"relevant": 4, "irrelevant": 3, "harmful": 1, "undecided": 2},
        "placebo": {"n": 4, "labelled_relevant": 1, "labelled_harmful": 0, "fpr": 0.25, "nominal": 0.05},
    }
    (root / "run.json").write_text(json.dumps(run, indent=2), encoding="utf-8")
    qrels = {p["id"]: {c["doc_id"]: c["grade"] for c in p["candidates"] if c["grade"] > 0} for p in pairs}
    qrels = {q: d for q, d in qrels.items() if d}
    write_beir_qrels(qrels, root / "qrels" / "test.tsv")
    write_trec_qrels(qrels, root / "qrels.trec")
    with (root / "qrels.jsonl").open("w", encoding="utf-8") as fh:
        for p in pairs:
            rel = qrels.get(p["id"], {})
            fh.write(json.dumps({"query_id": p["id"], "query": p["query"], "relevant_docs": rel}) + "\n")
    con = sqlite3.connect(root / "trials.sqlite")
    con.execute("CREATE TABLE trials (case_id TEXT, trial INTEGER, outcome TEXT)")
    con.executemany(
        "INSERT INTO trials VALUES (?, ?, ?)", [("q_json_dumps", i, "pass" if i % 3 else "fail") for i in range(30)]
    )
    con.execute("INSERT INTO trials VALUES ('q_json_dumps', 31, 'error')")
    # The candidate pools as the mining engine stores them (retrieved candidates carry their rank).
    con.execute("CREATE TABLE pools (case_id TEXT PRIMARY KEY, pool_json TEXT NOT NULL)")
    pools = {
        "q_json_dumps": [
            ("json.dumps", ["gold", "retrieved"], 1),
            ("json.JSONEncoder", ["retrieved"], 2),
            ("textwrap.dedent", ["placebo"], None),
        ],
        "q_heapq_smallest": [("heapq.nsmallest", ["gold"], None), ("heapq.nlargest", ["retrieved"], 1)],
    }
    for case_id, cands in pools.items():
        doc = {"case_id": case_id, "candidates": [{"doc_id": d, "sources": s, "rank": r} for d, s, r in cands]}
        con.execute("INSERT INTO pools VALUES (?, ?)", (case_id, json.dumps(doc)))
    con.commit()
    con.close()
    if with_evaluation:
        runs = {
            # bm25 finds json.dumps at rank 1 and heapq.nsmallest at rank 7.
            "bm25": {
                "q_json_dumps": {"json.dumps": 9.0, "json.loads": 8.0, "pickle.dumps": 7.0},
                "q_heapq_smallest": {f"x{i}": 10.0 - i for i in range(6)} | {"heapq.nsmallest": 3.0},
            },
            # dense finds both at rank 2.
            "dense": {
                "q_json_dumps": {"json.loads": 0.9, "json.dumps": 0.8},
                "q_heapq_smallest": {"heapq.nlargest": 0.7, "heapq.nsmallest": 0.6},
            },
        }
        for name, r in runs.items():
            write_trec_run(r, root / "evaluation" / "runs" / f"{name}.trec", tag=name)
        # The shape of deltap.evaluation's Comparison.to_dict().
        compare = {
            "baseline": "bm25",
            "n_queries": 2,
            "measures": ["hit_rate@1", "ndcg@10"],
            "test": "fisher",
            "alpha": 0.05,
            "correction": "holm",
            "systems": {
                "bm25": {
                    "means": {"hit_rate@1": 0.5, "ndcg@10": 0.66},
                    "ci": {"hit_rate@1": [0.0, 1.0], "ndcg@10": [0.4, 0.9]},
                },
                "dense": {
                    "means": {"hit_rate@1": 0.0, "ndcg@10": 0.63},
                    "ci": {"hit_rate@1": [0.0, 0.0], "ndcg@10": [0.6, 0.66]},
                    "tests": {
                        "hit_rate@1": {
                            "delta": -0.5,
                            "p_t_holm": 0.4,
                            "p_fisher_holm": 0.5,
                            "significant": False,
                            "wins": 0,
                            "ties": 1,
                            "losses": 1,
                        },
                        "ndcg@10": {
                            "delta": -0.03,
                            "p_t_holm": 0.8,
                            "p_fisher_holm": 0.9,
                            "significant": False,
                            "wins": 1,
                            "ties": 0,
                            "losses": 1,
                        },
                    },
                },
            },
            "notes": [],
        }
        (root / "evaluation" / "compare.json").write_text(json.dumps(compare), encoding="utf-8")
    return root


def test_reader_recovers_the_contract_values(tmp_path: Path) -> None:
    data = load_run_dir(write_contract_run(tmp_path / "run"))
    assert [c.case_id for c in data.cases] == ["q_json_dumps", "q_heapq_smallest", "q_saturated"]
    first = data.cases[0]
    assert first.coalition == ("json.dumps",)
    assert first.candidates[0].sources == ("gold", "retrieved")
    assert first.candidates[0].primary_source == "gold"
    assert first.candidates[3].verdict == "harmful" and first.candidates[3].delta_p == -0.22
    assert data.cases[1].coalition is None
    assert data.status_counts() == {"mined": 2, "saturated": 1}
    assert data.total_calls() == 130
    assert data.total_trials() == 64 + 64 + 2  # run.json has no "trials": summed from the pairs
    assert data.qrels == {
        "q_json_dumps": {"json.dumps": 2, "json.JSONEncoder": 1},
        "q_heapq_smallest": {"heapq.nsmallest": 2, "json.dump": 1},
    }
    assert set(data.runs) == {"bm25", "dense"}
    assert data.trial_outcomes == {"pass": 20, "fail": 10, "error": 1}
    assert data.placebo() == {"n": 4, "labelled_relevant": 1, "labelled_harmful": 0, "fpr": 0.25, "nominal": 0.05}
    assert data.notes == []
    assert data.pool_run == {
        "q_json_dumps": {"json.dumps": 1.0, "json.JSONEncoder": 0.5},
        "q_heapq_smallest": {"heapq.nlargest": 1.0},
    }
