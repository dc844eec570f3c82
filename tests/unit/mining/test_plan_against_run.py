"""Issue 27, the plan against the run: ``mine()`` plans before its first call and shows it first, the progress
display counts against the plan, ``run.json`` and the reports hold plan vs spent, a resumed plan subtracts the
logged calls, and a hosted plan uses the solver's configured ``max_tokens`` — all with a simulated solver."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from deltap.documents import Corpus
from deltap.mining.config import MiningConfig
from deltap.mining.engine import mine
from tests.unit.mining.test_spend_plan_export import BASE, OUT, PER_DOC, TokenSolver, _case, _truths

CFG = MiningConfig(budget=32, n_placebo=4, price_in=2.0, price_out=10.0)


@pytest.fixture()
def corpus() -> Corpus:
    from deltap.documents import Document

    return Corpus([Document(f"d{i:02d}", f"text {i}") for i in range(40)])


class CountingSolver(TokenSolver):
    """:class:`TokenSolver` that counts its calls (to see what happened before the plan)."""

    def __init__(self, *ids: str) -> None:
        super().__init__(_truths(*ids))
        self.calls = 0

    def answer(self, request):  # type: ignore[no-untyped-def]
        self.calls += 1
        return super().answer(request)


def test_mine_shows_the_plan_before_its_first_call(tmp_path: Path, corpus: Corpus) -> None:
    from rich.console import Console

    from deltap.mining.procedure import call_ceiling
    from deltap.mining.progress import MiningProgress

    solver = CountingSolver("a", "b")
    seen: list[tuple[str, int]] = []
    buf = io.StringIO()
    bar = MiningProgress(2, console=Console(file=buf, width=80), config=CFG, prices=None)

    def progress(event: dict) -> None:
        seen.append((str(event.get("phase") or event.get("status")), solver.calls))
        bar(event)

    with bar:
        res = mine([_case("a"), _case("b")], corpus, solver, out=tmp_path, config=CFG, progress=progress)
    assert seen[0] == ("plan", 0)  # the plan comes first, before any solver call
    pre, design, coalition = call_ceiling(CFG)
    plan = bar.run_plan
    assert plan is not None and plan.ceiling() == 2 * (pre + design + coalition)
    text = buf.getvalue()
    head = f"plan   2 case(s): calls ≤{plan.ceiling()} (preflight {2 * pre}, trials ≤{2 * design}, coalition ≤{2 * coalition})"
    assert head in text and text.index(head) < text.index("progress ")  # printed before the progress lines
    assert all(len(line) <= 80 for line in plan.brief())
    # the display counted against the plan: calls within its ceiling, tokens and cost against its figures
    assert bar.ceiling() <= plan.ceiling() and bar.calls == res.run["calls"]
    spent = bar.spent_line() or ""
    expected_in = plan.tokens_in()[0]
    assert f"/~{expected_in / 1000:.1f}k in" in spent and f"/≤{plan.tokens_out() / 1000:.1f}k out" in spent
    assert "$" in spent and "/~$" in spent  # cost against the plan's, at the run's prices (from the plan)


def test_run_json_and_reports_hold_plan_vs_spent(tmp_path: Path, corpus: Corpus) -> None:
    from deltap.report import render_markdown
    from deltap.report.run_data import load_run_dir

    res = mine([_case("a"), _case("b")], corpus, TokenSolver(_truths("a", "b")), out=tmp_path, config=CFG)
    run = json.loads((tmp_path / "run.json").read_text())
    pvs, spend, plan = run["plan_vs_spent"], run["spend"], run["plan"]
    m = 2 + CFG.n_placebo
    assert plan["calls_ceiling"] == pvs["calls"]["plan_ceiling"] and "by_case" not in plan
    assert plan["tokens_in_expected"] == pvs["tokens_in"]["plan_expected"]
    assert pvs["calls"]["spent"] == spend["calls"] == res.run["calls"]
    assert (
        pvs["calls"]["ratio"] == pytest.approx(spend["calls"] / plan["calls_ceiling"], abs=1e-3)
        and pvs["calls"]["ratio"] <= 1
    )
    assert pvs["tokens_in"]["ratio"] == pytest.approx(spend["tokens_in"] / plan["tokens_in_expected"], abs=1e-3)
    assert (
        pvs["tokens_out"]["spent"] == OUT * spend["calls"]
        and pvs["tokens_out"]["plan_max"] == 16 * plan["calls_ceiling"]
    )
    assert pvs["cost_usd"]["spent"] == spend["cost_usd"]
    # tokens per call: the plan's expectation (T0 + π Σ t_i) is what the design trials averaged
    assert pvs["tokens_in_per_call"]["spent"] == pytest.approx(BASE + 0.5 * PER_DOC * m, rel=0.25)
    md = render_markdown(load_run_dir(tmp_path))
    assert f"| calls vs plan | {spend['calls']:,} of " in md and "| tokens in vs plan |" in md


def test_a_resumed_plan_subtracts_the_calls_already_logged(
    tmp_path: Path, corpus: Corpus, capsys: pytest.CaptureFixture[str]
) -> None:
    from deltap.mining.plan import plan_mine
    from deltap.mining.progress import MiningProgress

    first = mine([_case("a")], corpus, TokenSolver(_truths("a", "b")), out=tmp_path, config=CFG)
    done = first.run["calls"]
    by_kind = first.cases[0].info["calls_by_kind"]
    solver = TokenSolver(_truths("a", "b"))
    fresh = plan_mine([_case("a"), _case("b")], corpus, solver, CFG)
    plan = plan_mine([_case("a"), _case("b")], corpus, solver, CFG, out=tmp_path)
    assert plan.ceiling() == fresh.ceiling() and plan.logged() == done > 0
    assert plan.cases[0].logged == by_kind and plan.ceiling_left() == plan.ceiling() - done
    line = f"resuming: {done} of {plan.ceiling()} calls already logged; {plan.ceiling() - done} left at most"
    assert plan.resuming_line() == line and line in plan.lines() and line in plan.brief()[1]
    assert plan.tokens_in(left=True)[0] < plan.tokens_in()[0]
    d = plan.to_dict()
    assert d["resuming"]["calls_logged"] == done and d["resuming"]["calls_left"] == plan.ceiling() - done
    # the resumed run itself plans the same way and its display never counts beyond what is left
    bar = MiningProgress(2, enabled=False, config=CFG)
    with bar:
        res = mine(
            [_case("a"), _case("b")], corpus, TokenSolver(_truths("a", "b")), out=tmp_path, config=CFG, progress=bar
        )
    assert bar.run_plan.logged() == done and bar.calls == res.run["calls_this_process"] <= plan.ceiling_left()
    assert res.run["plan_vs_spent"]["calls"]["spent"] == res.run["calls"]  # every session against the whole plan


def test_cli_plan_on_a_run_directory_says_what_is_left(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deltap.cli.app import main
    from tests.helpers import mine_files as _files

    corpus, bench = _files(tmp_path)
    out = tmp_path / "run"
    common = ["mine", str(bench), "--corpus", str(corpus), "--retriever", "none", "--solver", "simulated",
              "--budget", "32", "--placebo", "3", "--out", str(out), "--pilot", "0"]  # fmt: skip
    main(common)
    err = capsys.readouterr().err
    assert "plan vs spent: calls " in err
    calls = json.loads((out / "run.json").read_text())["calls"]
    before = (out / "trials.sqlite").stat().st_mtime_ns
    main([*common, "--plan"])
    text = capsys.readouterr().out
    assert f"resuming: {calls} of " in text and "calls already logged" in text
    main([*common, "--plan", "--json"])
    plan = json.loads(capsys.readouterr().out)
    assert plan["resuming"]["calls_logged"] == calls
    assert (out / "trials.sqlite").stat().st_mtime_ns == before  # planning wrote nothing


def test_a_hosted_plan_uses_the_configured_max_tokens(
    tmp_path: Path, corpus: Corpus, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from deltap.cli.app import main
    from deltap.mining.plan import plan_calls
    from deltap.solvers.caching import CachedSolver
    from deltap.solvers.hosted import hosted_model
    from deltap.trials.tokens import answer_ceilings
    from tests.helpers import mine_files as _files

    model = hosted_model("openai", {"model": "gpt-4o-mini", "max_tokens": {"api_understanding": 512}})
    assert model.max_tokens["api_understanding"] == 512 and model.max_tokens["multiple_choice"] > 0
    plan = plan_calls([_case("a")], {"a": [corpus["d00"]]}, CFG, model)
    assert plan.cases[0].tokens_out == 512 and plan.tokens_out() == 512 * plan.ceiling()
    # a wrapper (the response cache) answers with its inner solver's ceilings
    cached = CachedSolver(TokenSolver(_truths("a")), tmp_path / "cache.sqlite")
    assert answer_ceilings(cached) == {"api_understanding": 16}
    assert plan_calls([_case("a")], {"a": []}, CFG, cached).cases[0].tokens_out == 16
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    corpus_path, bench = _files(tmp_path)
    main(["mine", str(bench), "--corpus", str(corpus_path), "--retriever", "none", "--solver", "openai", "--model",
          "gpt-4o-mini", "--solver-option", 'max_tokens={"api_understanding": 300}', "--out", str(tmp_path / "run"),
          "--plan", "--json"])  # fmt: skip
    d = json.loads(capsys.readouterr().out)
    assert d["by_case"][0]["tokens_out_max"] == 300 * d["by_case"][0]["calls_ceiling"]


def test_end_to_end_plan_counts_the_calls_the_run_makes(tmp_path: Path) -> None:
    from deltap.endtoend import EndToEndConfig, end_to_end
    from deltap.endtoend.plan import plan_end_to_end
    from deltap.solvers.simulated import SimulatedSolver
    from deltap.trials.prices import prices_for
    from deltap.trials.tokens import FALLBACK_MAX_TOKENS
    from tests.unit.endtoend.test_engine import _systems, _toy

    cases, corpus, truth = _toy(4)
    det = SimulatedSolver(truth, seed=1, deterministic=True)
    systems = _systems(cases, {"a": ["d0", "d1"], "same_as_a": ["d0", "d1"], "other": ["d1", "d0"]})
    cfg = EndToEndConfig(k=2, repeats=5)
    plan = plan_end_to_end(cases, corpus, det, systems, cfg, prices=prices_for(1.0, 4.0), latency=2.0)
    assert det.calls == 0  # planning asks nothing
    assert [(s.name, s.calls, s.cached) for s in plan.systems] == [("a", 4, 0), ("same_as_a", 0, 4), ("other", 4, 0)]
    res = end_to_end(cases, corpus, det, systems, config=cfg)
    assert plan.calls() == res.run["calls"] == det.calls and sum(s.cached for s in plan.systems) == res.run["cached"]
    d = plan.to_dict()
    assert d["tokens_out_max"] == FALLBACK_MAX_TOKENS * plan.calls() and d["tokens_in"] > 0
    assert d["cost_usd"] == pytest.approx((d["tokens_in"] * 1.0 + d["tokens_out_max"] * 4.0) / 1e6, abs=1e-6)
    assert d["seconds"] == {"min": 2.0 * plan.calls(), "max": 2.0 * plan.calls()}
    assert all(len(line) <= 80 for line in plan.lines()), plan.lines()
    # a stochastic solver: every repeat is a call; a resumed folder subtracts the trials its log holds
    sto = SimulatedSolver(truth, seed=1)
    two = _systems(cases, {"a": ["d0", "d1"], "b": ["d2"]})
    cfg3 = EndToEndConfig(k=2, repeats=3)
    assert plan_end_to_end(cases, corpus, sto, two, cfg3).calls() == 4 * 2 * 3
    end_to_end(cases[:2], corpus, sto, two, out=tmp_path, config=cfg3)
    resumed = plan_end_to_end(cases, corpus, sto, two, cfg3, out=tmp_path)
    assert resumed.logged() == 2 * 2 * 3 and resumed.calls() == 2 * 2 * 3
    assert any(line.startswith("resuming: 12 trial(s) already logged; 12 call(s) left") for line in resumed.lines())


def test_cli_endtoend_plan_makes_no_call(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deltap.cli.app import main
    from tests.helpers import mined_endtoend_args

    _, _, out, args = mined_endtoend_args(tmp_path, "--plan")
    capsys.readouterr()
    main([*args, "--json", "--price-in", "1", "--latency", "0.5"])
    d = json.loads(capsys.readouterr().out)
    assert [s["system"] for s in d["by_system"]] == ["none", "gold", "all"]
    assert d["calls"] == 1 * 3 * 2 and d["seconds"]["max"] == pytest.approx(0.5 * 6) and d["cost_usd"] > 0
    assert not (out / "endtoend").exists()  # no call made, nothing written
    main(args)
    text = capsys.readouterr().out
    assert text.startswith("plan: end to end, 1 case(s) × 3 system(s) × 2 repeat(s), no call made")
    assert all(len(line) <= 80 for line in text.splitlines())
    main([*args, "--single-doc", "--json"])  # eRAG's single-document trials: counted in the plan, not left out
    d = json.loads(capsys.readouterr().out)
    assert [s["system"] for s in d["by_system"]] == ["none", "gold", "all", "single docs (eRAG)"]
    assert d["by_system"][-1]["calls"] > 0 and d["calls"] == 6 + d["by_system"][-1]["calls"]
    assert not any("--single-doc adds" in n for n in d["notes"])
    with pytest.raises(SystemExit) as exc:
        main([*args[:-1], "--json"])
    assert exc.value.code == 2 and "--json prints the plan" in capsys.readouterr().err


def test_progress_says_when_the_solver_reports_no_tokens(corpus: Corpus) -> None:
    from deltap.mining.plan import plan_calls
    from deltap.mining.progress import MiningProgress
    from deltap.solvers.simulated import SimulatedSolver

    plan = plan_calls([_case("a")], {"a": [corpus["d00"]]}, CFG, SimulatedSolver(_truths("a"), seed=1))
    bar = MiningProgress(1, enabled=False, config=CFG)
    bar({"phase": "plan", "plan": plan, "calls": 0})
    assert bar.spent_line() is not None and "0/~" in (bar.spent_line() or "")  # before the first call: 0 of the plan
    bar({"case_id": "a", "case_index": 0, "cases": 1, "trials": 4, "budget": 32, "status": "running", "calls": 6,
         "tokens_in": 0, "tokens_out": 0})  # fmt: skip
    assert (bar.spent_line() or "").strip().startswith("tokens not reported by this solver · plan ~")
