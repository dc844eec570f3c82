"""The ``deltap check --html`` page and the mining report's new parts in a real browser: headless Chromium loads them
with no console errors and draws every plot (skipped with the reason when Chromium is absent, unless
``DELTAP_REQUIRE_BROWSER=1``, like tests/integration/report/test_browser.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from deltap.documents import Corpus
from deltap.report.check import write_check_html
from tests.integration.report.test_browser import console_messages, run_chromium, screenshot
from tests.unit.check.test_pipeline import SUITE, book_corpus, run  # noqa: F401  (fixture)

pytestmark = pytest.mark.integration


def test_check_page_loads_without_console_errors_and_draws_plots(book_corpus: Corpus, tmp_path: Path) -> None:  # noqa: F811
    page = write_check_html(run(book_corpus), tmp_path / "check.html")
    proc = run_chromium(page.as_uri(), "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert console_messages(proc.stderr) == []
    dom = proc.stdout
    plots = re.findall(r'<svg[^>]*class="plot ([a-z]+)"', dom)
    assert plots.count("latency") == 2 and plots.count("calibration") == 1
    assert len(re.findall(r'class="dot"', dom)) == len(SUITE["in_scope"]) + len(SUITE["out_of_scope"])


def test_check_page_screenshot_is_not_blank(book_corpus: Corpus, tmp_path: Path) -> None:  # noqa: F811
    page = write_check_html(run(book_corpus), tmp_path / "check.html")
    png = screenshot(page, tmp_path / "check.png", height=1400)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image

    with Image.open(png) as img:
        colours = img.convert("RGB").resize((64, 70)).getcolors(maxcolors=64 * 70)
    assert colours is not None and len(colours) > 30
