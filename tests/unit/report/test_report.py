"""Reports: the run-directory reader, the figure numbers, the SVG plots, the HTML and Markdown outputs, the CLI."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from deltap.report import load_run_dir, render_html, render_markdown, write_html_report
from deltap.report.comparison import read_comparison
from deltap.report.figures import convergence, hit_at_k, ranked_ids, recall_curve, wilson_interval
from deltap.report.plots import forest_plot, nice_ticks
from deltap.report.run_data import CandidateRecord
from tests.unit.report.test_contract_fixture import write_contract_run


class _Collector(HTMLParser):
    """Collects tags, attributes and visible text, and checks that elements are balanced."""

    VOID = {"meta", "br", "input", "link", "img", "hr"}
    SVG_VOID = {"line", "circle", "rect", "polygon", "polyline", "path"}

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}> with open {self.stack[-3:]}")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(html: str) -> _Collector:
    parser = _Collector()
    parser.feed(html)
    parser.close()
    return parser


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    return write_contract_run(tmp_path / "run")


# --- numbers --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "n", "expected"),
    [
        pytest.param(0, 10, (0.0, 0.27753), id="zero-successes"),
        pytest.param(5, 10, (0.23659, 0.76341), id="half"),
        pytest.param(10, 10, (0.72247, 1.0), id="all-successes"),
        pytest.param(1, 4, (0.04559, 0.69936), id="small-n"),
    ],
)
def test_wilson_interval_matches_published_values(k: int, n: int, expected: tuple[float, float]) -> None:
    # Reference values: statsmodels proportion_confint(method="wilson") / Brown, Cai & DasGupta (2001).
    low, high = wilson_interval(k, n)
    assert low == pytest.approx(expected[0], abs=1e-5)
    assert high == pytest.approx(expected[1], abs=1e-5)


def test_wilson_interval_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError, match="within"):
        wilson_interval(5, 3)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_ranking_breaks_ties_like_trec_eval() -> None:
    # trec_eval sorts by score descending, then by document id descending.
    assert ranked_ids({"a": 1.0, "c": 1.0, "b": 2.0}) == ["b", "c", "a"]


def test_hit_rate_and_recall_curve_values() -> None:
    qrels = {"q1": {"d1": 1, "d2": 2}, "q2": {"d9": 1}, "q3": {"d5": 0}}
    run = {"q1": {"d1": 0.1, "x": 0.9, "d2": 0.5}, "q2": {"y": 1.0}}
    # q3 has no relevant doc: it scores 0, as in `deltap evaluate` (EMPTY_QUERY_RULE), so the means agree
    assert hit_at_k(qrels, run, 1) == {"q1": 0, "q2": 0, "q3": 0}
    assert hit_at_k(qrels, run, 2) == {"q1": 1, "q2": 0, "q3": 0}
    curve = recall_curve(qrels, run, [1, 2, 3])
    assert curve["hit_rate"] == pytest.approx([0.0, 1 / 3, 1 / 3])
    assert curve["recall"] == pytest.approx([0.0, 0.25 / 1.5, 0.5 / 1.5])
    assert recall_curve({"q": {"d": 0}}, run, [1]) == {"hit_rate": [], "recall": []}


def test_convergence_is_the_running_mean_in_dataset_order() -> None:
    pts = convergence({"a": 1, "b": 0, "c": 1, "d": 1}, order=["d", "b", "zzz", "a", "c"])
    assert [p.n_cases for p in pts] == [1, 2, 3, 4]
    assert [p.mean for p in pts] == [1.0, 0.5, 2 / 3, 0.75]
    assert all(p.low <= p.mean <= p.high for p in pts)
    assert (pts[-1].low, pts[-1].high) == pytest.approx(wilson_interval(3, 4))


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [
        pytest.param(0.0, 1.0, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0], id="unit"),
        pytest.param(-0.3, 0.5, [-0.2, 0.0, 0.2, 0.4], id="signed"),
        pytest.param(1, 20, [5.0, 10.0, 15.0, 20.0], id="integers"),
    ],
)
def test_nice_ticks(lo: float, hi: float, expected: list[float]) -> None:
    assert nice_ticks(lo, hi) == pytest.approx(expected)


# --- reading -------------------------------------------------------------------------------------------------


def test_missing_run_dir_and_dataset_are_clear_errors(tmp_path: Path) -> None:
    from deltap.errors import DeltapError

    with pytest.raises(DeltapError, match="run directory not found"):
        load_run_dir(tmp_path / "nope")
    with pytest.raises(DeltapError, match="no retrieval_dataset.yaml"):
        load_run_dir(tmp_path)


def test_malformed_dataset_names_the_file(tmp_path: Path) -> None:
    from deltap.errors import FormatError

    (tmp_path / "retrieval_dataset.yaml").write_text("pairs: [\n", encoding="utf-8")
    with pytest.raises(FormatError, match="retrieval_dataset.yaml"):
        load_run_dir(tmp_path)


def test_optional_parts_missing_are_notes_not_crashes(run_dir: Path) -> None:
    for rel in ("run.json", "trials.sqlite", "qrels", "evaluation"):
        target = run_dir / rel
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    data = load_run_dir(run_dir)
    assert any("run.json not found" in n for n in data.notes)
    assert any("trials.sqlite not found" in n for n in data.notes)
    assert any("qrels/test.tsv not found" in n for n in data.notes)
    # Without run.json the figures are recomputed from the candidates.
    assert data.status_counts() == {"mined": 2, "saturated": 1}
    assert data.verdict_counts() == {"relevant": 4, "harmful": 1, "irrelevant": 3, "undecided": 2}
    assert data.placebo() == {"n": 4, "labelled_relevant": 1, "labelled_harmful": 0, "fpr": 0.25, "nominal": 0.05}
    assert data.total_calls() == 130
    # qrels fall back to the grades in the dataset.
    assert data.qrels["q_json_dumps"] == {"json.dumps": 2, "json.JSONEncoder": 1}
    html = render_html(data)
    assert "The comparison table not available: evaluation/compare.json not found" in html
    assert "Recall@K curves not available: no retriever runs" in html
    assert "The convergence plot not available" in html
    assert "run.json not found" in html  # notes are shown, not swallowed


def test_convergence_falls_back_to_the_pool_ranking(run_dir: Path) -> None:
    shutil.rmtree(run_dir / "evaluation")
    html = render_html(load_run_dir(run_dir))
    # json.dumps is the pool retriever's rank 1 (hit); heapq.nsmallest was never retrieved (miss): mean 0.5.
    assert "mining retriever (pool top-k): 0.500 [0.095, 0.905] over 2 cases" in html
    assert "The convergence plot not available" not in html


def test_broken_optional_files_become_notes(run_dir: Path) -> None:
    (run_dir / "run.json").write_text("{not json", encoding="utf-8")
    (run_dir / "evaluation" / "compare.json").write_text("[1, 2]", encoding="utf-8")
    data = load_run_dir(run_dir)
    assert any("run.json is not valid JSON" in n for n in data.notes)
    assert any("compare.json is not a JSON object" in n for n in data.notes)
    assert data.evaluation is None


def test_candidate_without_verdict_falls_back_to_empirical_relevance(tmp_path: Path) -> None:
    (tmp_path / "retrieval_dataset.yaml").write_text(
        "metadata: {outcome: logprob}\npairs:\n- id: c1\n  query: q\n  candidates:\n"
        "  - {fqn: a.b, empirical_relevance: YES, delta_p: 2.5, source: gold}\n"
        "  - {doc_id: a.c, empirical_relevance: HARMFUL, delta_p: nan, source: [placebo]}\n",
        encoding="utf-8",
    )
    data = load_run_dir(tmp_path)
    a, b = data.cases[0].candidates
    assert (a.doc_id, a.verdict, a.delta_p, a.sources) == ("a.b", "relevant", 2.5, ("gold",))
    assert (b.verdict, b.delta_p) == ("harmful", None)  # NaN is "no estimate", never a number
    assert data.effect_label.startswith("Δ log p")


# --- comparison --------------------------------------------------------------------------------------------


def test_read_comparison_shapes() -> None:
    nested = read_comparison(
        {"baseline": "a", "systems": {"a": {"ndcg@10": {"mean": 0.5, "ci": [0.4, 0.6]}}, "b": {"ndcg@10": 0.7}}}
    )
    assert nested is not None and nested.systems == ["a", "b"] and nested.baseline == "a"
    cell = nested.cell("a", "ndcg@10")
    assert cell is not None and (cell.mean, cell.ci_low, cell.ci_high) == (0.5, 0.4, 0.6)
    listed = read_comparison(
        {
            "results": [{"system": "x", "metric": "mrr", "mean": 0.3, "ci_low": 0.1, "ci_high": 0.5}],
            "comparisons": [
                {"system": "x", "metric": "mrr", "p_value": 0.01, "significant": True, "win_tie_loss": [3, 1, 0]}
            ],
        }
    )
    assert listed is not None
    row = listed.cell("x", "mrr")
    assert row is not None and (row.p_value, row.significant, row.wins, row.ties, row.losses) == (0.01, True, 3, 1, 0)
    assert read_comparison({"unrelated": 1}) is None
    assert read_comparison(None) is None


# --- plots --------------------------------------------------------------------------------------------------


def _cand(
    doc_id: str, verdict: str, dp: float | None, lo: float | None, hi: float | None, source: str
) -> CandidateRecord:
    return CandidateRecord(doc_id=doc_id, sources=(source,), verdict=verdict, delta_p=dp, ci_low=lo, ci_high=hi)


def test_forest_plot_rows_sorted_coloured_and_shaped() -> None:
    svg = forest_plot(
        [
            _cand("low", "harmful", -0.2, -0.3, -0.1, "placebo"),
            _cand("high", "relevant", 0.4, 0.2, 0.6, "gold"),
            _cand("none", "undecided", None, None, None, "retrieved"),
        ],
        effect_label="ΔP",
        margin=0.05,
        min_effect=0.1,
        coalition=["high"],
    )
    p = _parse(svg)
    assert p.errors == [] and p.stack == []
    rows = [a for t, a in p.tags if t == "g" and "forest-row" in (a.get("class") or "")]
    assert [(r["data-verdict"], r["data-source"]) for r in rows] == [
        ("relevant", "gold"),
        ("harmful", "placebo"),
        ("undecided", "retrieved"),
    ]
    assert "high ★" in "".join(p.text)
    assert "no estimate" in "".join(p.text)
    # relevant row: a green whisker and a diamond (polygon) marker; harmful: red whisker, square (rect) marker.
    assert 'stroke="#1a9850" stroke-width="2.2"' in svg and 'stroke="#d73027" stroke-width="2.2"' in svg
    assert re.search(r'<polygon points="[^"]+" fill="#1a9850"', svg)
    assert re.search(r'<rect x="[^"]+" y="[^"]+" width="9.9" height="9.9" fill="#d73027"', svg)


def test_forest_plot_uses_the_adjusted_effect_when_recorded() -> None:
    # Raw ΔP says +0.5 (confounded), the regression says 0: the marker sits at the adjusted effect, the cross at ΔP.
    cand = CandidateRecord(
        doc_id="p",
        sources=("placebo",),
        verdict="irrelevant",
        delta_p=0.5,
        ci_low=0.3,
        ci_high=0.7,
        adjusted=0.0,
        adjusted_low=-0.05,
        adjusted_high=0.05,
    )
    assert cand.effect == (0.0, -0.05, 0.05)
    svg = forest_plot([cand], effect_label="ΔP")
    zero = float(re.search(r'<line x1="([\d.]+)" y1="[\d.]+" x2="\1" y2="[\d.]+" stroke="#333"/>', svg).group(1))  # type: ignore[union-attr]
    square = re.search(r'<rect x="([\d.]+)" y="[\d.]+" width="9.9"', svg)
    assert square is not None and float(square.group(1)) + 4.95 == pytest.approx(zero, abs=0.2)
    cross = re.search(r'<path class="raw" d="M([\d.]+),', svg)
    assert cross is not None and float(cross.group(1)) + 3.5 > zero + 100  # the raw ΔP is far right of zero
    assert "adjusted effect (joint regression) 0.000 [-0.050, 0.050]" in svg


def test_forest_plot_positions_follow_the_effects() -> None:
    svg = forest_plot(
        [_cand("a", "relevant", 0.5, 0.4, 0.6, "gold"), _cand("b", "harmful", -0.5, -0.6, -0.4, "gold")],
        effect_label="ΔP",
    )
    xs = [float(x) for x in re.findall(r'<polygon points="([\d.]+),', svg)]
    # Diamonds are drawn from their top vertex (cx, cy - d): the first row (ΔP = +0.5) is right of the second.
    assert len(xs) == 2 and xs[0] > xs[1]


# --- whole reports ------------------------------------------------------------------------------------------


def test_placebo_null_is_explained_in_the_report(run_dir: Path) -> None:
    summary = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    summary["placebo"]["null"] = {
        "requested": "placebo",
        "used": "placebo",
        "center": 0.12,
        "spread": 0.41,
        "placebos": 20,
        "unit": "nats",
    }
    (run_dir / "run.json").write_text(json.dumps(summary), encoding="utf-8")
    data = load_run_dir(run_dir)
    assert data.placebo()["null"]["spread"] == 0.41
    text = " ".join(_parse(render_html(data)).text)
    assert "placebo null" in text and "+0.12 ± 0.41 nats" in text and "from 20 placebos" in text
    assert "random texts move it more" not in text
    summary["placebo"]["null"].update(tail_weight=0.28, tail_spread=0.96)  # the heavy tail of the real ADK run
    (run_dir / "run.json").write_text(json.dumps(summary), encoding="utf-8")
    text = " ".join(_parse(render_html(load_run_dir(run_dir))).text)
    assert "from 20 placebos; 28% of random texts move it more, with spread 0.96" in text


def test_html_report_is_self_contained_and_complete(run_dir: Path) -> None:
    path = write_html_report(run_dir)
    assert path == run_dir / "report.html"
    html = path.read_text(encoding="utf-8")
    p = _parse(html)
    assert p.errors == [], p.errors[:5]
    # Self-contained: no external resource of any kind.
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert "@import" not in html and "url(" not in html
    ids = {a.get("id") for _, a in p.tags}
    assert {"summary", "placebo", "retrievers", "convergence", "cases", "guide"} <= ids
    svgs = [a for t, a in p.tags if t == "svg" and "plot" in (a.get("class") or "")]
    classes = [a["class"] for a in svgs]
    assert classes.count("plot forest") == 2  # one per mined case; the saturated case has none
    assert classes.count("plot lines") == 3  # hit-rate curve, recall curve, convergence
    assert "plot stacked" in classes and classes.count("plot intervals") == 2  # placebo + metrics
    text = " ".join(p.text)
    assert "above the nominal level" in text  # 1/4 placebos flagged vs nominal 0.05
    assert "2 of 2" in text  # gold confirmed relevant
    assert "simulated(seed=7)" in text and "130" in text
    assert "W/T/L 0/1/1" in text and "p=0.5" in text  # dense vs bm25 on hit_rate@1: Fisher test, Holm-corrected
    # Convergence of hit@5: bm25 finds json.dumps (rank 1) but heapq.nsmallest only at rank 7; dense finds both.
    assert "bm25: 0.500" in text and "dense: 1.000" in text
    details = [a for t, a in p.tags if t == "details" and a.get("class") == "case"]
    assert [d["data-status"] for d in details] == ["mined", "mined", "saturated"]


def test_html_escapes_untrusted_text(run_dir: Path) -> None:
    import yaml

    ds = yaml.safe_load((run_dir / "retrieval_dataset.yaml").read_text(encoding="utf-8"))
    ds["pairs"][0]["query"] = "<script>alert(1)</script>"
    ds["pairs"][0]["candidates"][0]["doc_id"] = 'x"><img src=y>'
    (run_dir / "retrieval_dataset.yaml").write_text(yaml.safe_dump(ds), encoding="utf-8")
    html = render_html(load_run_dir(run_dir))
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img src=y>" not in html
    assert _parse(html).errors == []


def test_markdown_summary(run_dir: Path) -> None:
    md = render_markdown(load_run_dir(run_dir))
    assert "| solver calls | 130 |" in md
    assert "**Verdicts:** relevant 4, harmful 1, irrelevant 3, undecided 2" in md
    assert "0.250 (1/4, 95% CI [0.046, 0.699]) vs nominal 0.05 — **above nominal**" in md
    assert "| bm25 (baseline) | 0.500 [0.000, 1.000] | 0.660 [0.400, 0.900] |" in md
    assert "| q_json_dumps | mined | 64 | 0.20 | `json.dumps` (0.45), `json.JSONEncoder` (0.18) | 1 | 1 |" in md
    assert "bm25 0.500 [0.095, 0.905] (n=2)" in md


def test_cli_report_html_and_markdown(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deltap.cli import main

    main(["report", str(run_dir), "--out", str(run_dir / "r.html")])
    assert (run_dir / "r.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    main(["report", str(run_dir), "--format", "md", "--out", "-"])
    assert "# deltap report — run" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["report", str(run_dir / "missing")])
    assert exc.value.code == 2
    assert "run directory not found" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["report", str(run_dir), "--format", "pdf"])
    assert exc.value.code == 2


def test_report_of_a_run_with_no_placebos_and_logprob(tmp_path: Path) -> None:
    (tmp_path / "retrieval_dataset.yaml").write_text(
        json.dumps(
            {
                "metadata": {"outcome": "logprob"},
                "pairs": [
                    {
                        "id": "c",
                        "query": "q",
                        "candidates": [
                            {
                                "doc_id": "d",
                                "source": ["gold"],
                                "verdict": "relevant",
                                "delta_p": 3.0,
                                "ci_low": 1.0,
                                "ci_high": 5.0,
                            }
                        ],
                    }
                ],
            }
        ),
        encoding="utf-8",
    )
    html = render_html(load_run_dir(tmp_path))
    assert "Placebo calibration not available: this run has no placebo candidates" in html
    assert "Δ log p(reference) [nats]" in html


def test_the_report_answers_first_and_explains_every_badge(run_dir: Path) -> None:
    # issue 36: a headline before the details; "How to read" explains every status badge and describes the design
    # the run used, read from its recorded configuration (not "a coin flip" for the orthogonal default)
    from deltap.report import write_markdown_report
    from deltap.report.headline import run_headline
    from deltap.report.run_data import load_run_dir

    html = write_html_report(run_dir).read_text(encoding="utf-8")
    p = _parse(html)
    ids = [a.get("id") for t, a in p.tags if t == "section"]
    assert ids[0] == "answer" and ids.index("answer") < ids.index("summary")
    lines, details = run_headline(load_run_dir(run_dir))
    assert 1 <= len(lines) <= 3 and all(line in " ".join(p.text) for line in lines)
    assert "dense" in lines[0] and "questions" in lines[0]
    guide = html[html.index('id="guide"') :]
    for status in ("mined", "budget_exhausted", "saturated", "unsolvable", "error"):
        assert f"<i>{status}</i>" in guide
    data = load_run_dir(run_dir)
    design = str((data.metadata.get("config") or {}).get("design") or "bernoulli")
    assert f"this run's design: <i>{design}</i>" in guide
    md = write_markdown_report(run_dir).read_text(encoding="utf-8")
    assert md.splitlines()[2] == "## The answer" and f"**{lines[0]}**" in md
