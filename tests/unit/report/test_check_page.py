"""``deltap check --html``: the page shows the gates, a latency histogram of every timed search and the calibration
plot of every query's top score against the threshold, self-contained."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from deltap.documents import Corpus
from deltap.report.check import calibration_plot, latency_histogram, render_check_html, write_check_html
from tests.unit.check.test_pipeline import SUITE, book_corpus, run  # noqa: F401  (fixture)


def test_histogram_counts_every_sample_and_marks_p50_p95_and_the_limit() -> None:
    samples = [1.0] * 5 + [2.0] * 3 + [9.0]
    svg = latency_histogram(samples, p50=1.0, p95=6.2, limit=8.0, bins=10)
    counts = [int(n) for n in re.findall(r"<title>(\d+) searches in", svg)]
    assert sum(counts) == len(samples) and sorted(counts) == [1, 3, 5]
    for label in ("p50 1.0", "p95 6.2", "limit 8.0"):
        assert label in svg


def test_calibration_plot_has_one_dot_per_query_and_the_threshold() -> None:
    svg = calibration_plot([0.7, 0.8, 0.9], [0.1, 0.2], 0.45)
    assert svg.count('class="dot"') == 5 and "in-scope (3)" in svg and "out-of-scope (2)" in svg
    assert "threshold 0.450" in svg
    xs = {label: float(x) for x, label in re.findall(r'cx="([\d.]+)"[^>]*><title>(\w[\w-]*): ', svg)}
    assert xs  # dots carry their score in a tooltip


def test_page_of_a_real_check(book_corpus: Corpus, tmp_path: Path) -> None:  # noqa: F811
    report = run(book_corpus)
    path = write_check_html(report, tmp_path / "check.html")
    html = path.read_text(encoding="utf-8")
    assert "PASS" in html and "every enabled gate passed" in html
    n = report.latency["end_to_end"]["n"]
    assert len(report.latency["end_to_end"]["samples_ms"]) == n
    bars = [int(k) for k in re.findall(r"<title>(\d+) searches in", html)]
    assert sum(bars) == 2 * n  # two histograms: embed+search and end to end, every timed search in each
    assert html.count('class="dot"') == len(SUITE["in_scope"]) + len(SUITE["out_of_scope"])
    assert "threshold 0.300" in html
    assert not re.search(r"""(src|href)=["']https?:""", html)  # nothing fetched


def test_page_of_a_failed_check_says_why(book_corpus: Corpus) -> None:  # noqa: F811
    suite = {**SUITE, "score_threshold": 0.01}  # every out-of-scope query scores above it
    html = render_check_html(run(book_corpus, suite, skip=["latency", "determinism"]))
    assert "FAIL" in html and "why it failed" in html and "top score" in html
    assert "Latency histogram not available" in html


def test_page_of_a_calibration_run(book_corpus: Corpus) -> None:  # noqa: F811
    suite = {k: v for k, v in SUITE.items() if k != "score_threshold"}
    report = run(book_corpus, suite, calibrate=True)
    html = render_check_html(report.to_dict())
    assert "CALIBRATION" in html and f"score_threshold: {report.calibration['threshold']:.4f}" in html
    assert html.count('class="dot"') == len(report.calibration["in_scores"]) + len(report.calibration["out_scores"])


def test_cli_writes_the_page(book_corpus: Corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    import deltap.check as pc
    from deltap.cli.app import main

    report = run(book_corpus)
    monkeypatch.setattr(pc, "check_pipeline", lambda *a, **k: report)
    suite = tmp_path / "suite.yaml"
    suite.write_text("in_scope: []\n", encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main(["check", str(suite), "--html", str(tmp_path / "out" / "check.html")])
    assert info.value.code == 0
    assert (tmp_path / "out" / "check.html").read_text(encoding="utf-8").count("<svg") >= 3


def test_the_page_is_well_formed_html(book_corpus: Corpus) -> None:  # noqa: F811
    from tests.unit.report.test_report import _parse

    for report in (
        run(book_corpus),
        run(book_corpus, {k: v for k, v in SUITE.items() if k != "score_threshold"}, calibrate=True),
    ):
        parsed = _parse(render_check_html(report))
        assert parsed.errors == [] and parsed.stack == []
