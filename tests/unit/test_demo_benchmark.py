"""The bundled demo benchmark: every gold id exists in the built stdlib corpus and states the answer."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from deltap.cases import read_benchmark_yaml
from deltap.demo import BENCHMARK_PATH, STDLIB_MODULES, DemoConfig, build_demo_corpus, load_demo_cases, select_cases
from deltap.documents import Corpus


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return build_demo_corpus()


def test_corpus_is_small_enough_to_embed_quickly(corpus: Corpus) -> None:
    # Dense embedding runs ~25 documents/s on the 2-core CI machine: keep the demo corpus to a few hundred.
    assert 150 <= len(corpus) <= 400
    modules = Counter(d.doc_id.split(".")[0] for d in corpus)
    assert set(modules) == set(STDLIB_MODULES)


def test_benchmark_size_and_types() -> None:
    cases = read_benchmark_yaml(BENCHMARK_PATH)
    kinds = Counter(c.benchmark_type for c in cases)
    assert len(cases) >= 30
    assert kinds["api_understanding"] >= 30 and kinds["multiple_choice"] >= 3
    assert all(c.gold_doc_ids for c in cases), "every question names its gold documents"
    assert all(c.reference_answer for c in cases)


def test_every_gold_id_resolves_in_the_built_corpus(corpus: Corpus) -> None:
    raw = read_benchmark_yaml(BENCHMARK_PATH)
    missing = {c.case_id: corpus.missing(c.gold_doc_ids) for c in raw if corpus.missing(c.gold_doc_ids)}
    assert missing == {}
    resolved = load_demo_cases(corpus)  # raises MissingIdsError on any unknown id
    assert [c.gold_doc_ids for c in resolved] == [c.gold_doc_ids for c in raw]  # ids are exact, no alias needed


def test_every_answer_is_stated_by_its_gold_document(corpus: Corpus) -> None:
    # The documents must make the question answerable: otherwise no document can raise P(success).
    unstated = []
    for case in read_benchmark_yaml(BENCHMARK_PATH):
        gold_text = " ".join(corpus[d].text for d in case.gold_doc_ids).lower()
        if case.benchmark_type == "api_understanding":
            if not any(a.lower() in gold_text for a in case.checker.params["answers"]):
                unstated.append(case.case_id)
        else:
            correct = case.checker.params["options"][case.checker.params["correct"]].lower()
            # An identifier option must be named by the gold document; a sentence option must share its key words.
            words = (
                [correct] if correct.isidentifier() else [w for w in correct.replace(",", " ").split() if len(w) > 4]
            )
            if not words or not all(w in gold_text for w in words):
                unstated.append(case.case_id)
    assert unstated == []


def test_questions_do_not_give_the_answer_away() -> None:
    leaks = []
    for case in read_benchmark_yaml(BENCHMARK_PATH):
        if case.benchmark_type != "api_understanding":
            continue
        answer = case.reference_answer or ""
        # An identifier answer must not appear as a word of the question (parameter defaults are numbers: fine).
        if answer.isidentifier() and answer.lower() in case.query.lower().replace(".", " ").replace("(", " ").split():
            leaks.append(case.case_id)
    assert leaks == []


def test_select_cases_spreads_over_modules(corpus: Corpus) -> None:
    cases = load_demo_cases(corpus)
    picked = select_cases(cases, 8)
    assert len(picked) == 8
    assert len({c.metadata["category"] for c in picked}) == 8  # eight different modules
    assert picked == select_cases(cases, 8)  # deterministic
    everything = select_cases(cases, 1000)
    assert sorted(c.case_id for c in everything) == sorted(c.case_id for c in cases)  # each case exactly once
    assert everything[:8] == picked


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"cases": 0}, "--cases 0 is out of range: .* give 1-56", id="no-cases"),
        pytest.param({"cases": 99}, "--cases 99 is out of range: the demo's benchmark has 56 questions", id="too-many"),
        pytest.param({"cases": 10, "calls": 5}, "--calls 5 is too few for 10 cases", id="tiny-budget"),
        # issue 36: 200 calls for 99 cases used to cap at 56 cases, index, then fail with "-9 design trials per case"
        pytest.param(
            {"cases": 20, "calls": 200},
            r"each case needs at least 14 calls \(2 preflight, 8 design trials, 4 coalition checks\); "
            r"give --calls 280 or more, or --cases 14 or fewer",
            id="calls-per-case",
        ),
        pytest.param({"cases": 10, "calls": 150, "solver": "simulated"}, "at least 20 calls", id="stochastic-solver"),
        pytest.param({"outcome": "accuracy"}, "pass or logprob", id="bad-outcome"),
    ],
)
def test_demo_config_rejects_bad_knobs(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    from deltap.demo import run_demo
    from deltap.errors import DeltapError

    with pytest.raises(DeltapError, match=message):
        run_demo(DemoConfig(out=tmp_path / "demo", **kwargs), say=lambda _: None)
    assert not (tmp_path / "demo").exists()  # refused before any work: nothing written, nothing indexed


def test_long_texts_are_cut_visibly(corpus: Corpus) -> None:
    from deltap.demo import MAX_DOC_CHARS

    cut = [d for d in corpus if "truncated_from" in d.metadata]
    assert cut, "the stdlib has docstrings longer than the cap (difflib.SequenceMatcher)"
    for doc in cut:
        assert doc.text.endswith("\n[…]") and len(doc.text) <= MAX_DOC_CHARS + 4
        assert doc.metadata["truncated_from"] > MAX_DOC_CHARS
    assert all(len(d.text) <= MAX_DOC_CHARS for d in corpus if "truncated_from" not in d.metadata)
    whole = build_demo_corpus(max_chars=None)
    assert whole.ids == corpus.ids
    assert len(whole["difflib.SequenceMatcher"].text) == corpus["difflib.SequenceMatcher"].metadata["truncated_from"]


def test_demo_cli_defaults_are_the_library_defaults(tmp_path: Path) -> None:
    """`deltap demo` declares no default of its own: each option's default is DemoConfig's (one source)."""
    from typer.main import get_command

    from deltap.cli.app import app

    demo = get_command(app).commands["demo"]  # type: ignore[attr-defined]
    defaults = {p.name: p.default for p in demo.params}
    config = DemoConfig(out=tmp_path)
    for name in ("cases", "calls", "solver", "outcome", "seed", "embedder", "progress"):
        assert defaults[name] == getattr(config, name), name
    assert str(defaults["out"]) == "deltap-demo"
