"""The HTML report in a real browser: headless Chromium loads it with no console errors and draws the plots.

Needs Debian's ``chromium`` (``apt-get install -y chromium``); skipped with the reason when it is absent, unless
``DELTAP_REQUIRE_BROWSER=1`` (set it in CI) makes that a failure.

Also usable as a script to refresh the screenshot in the docs::

    python -m tests.integration.report.test_browser RUN_DIR docs/report-screenshot.png
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from deltap.report import write_html_report
from tests.unit.report.test_contract_fixture import write_contract_run

pytestmark = pytest.mark.integration

CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# Flags: no sandbox (containers run as root), no GPU, and nothing that phones home.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--mute-audio",
)
CONSOLE_LINE = re.compile(r":CONSOLE[:(]")


def find_chromium() -> str | None:
    for name in CHROMIUM_CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    fallback = Path("/usr/bin/chromium")  # an executable file only: a path hidden behind /dev/null is no browser
    return str(fallback) if fallback.is_file() and os.access(fallback, os.X_OK) else None


def run_chromium(url: str, *extra: str, timeout: float = 90.0) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium on ``url`` with a throw-away profile; console messages go to stderr."""
    exe = find_chromium()
    if exe is None:
        reason = "chromium not installed (apt-get install -y chromium)"
        if os.environ.get("DELTAP_REQUIRE_BROWSER") == "1":  # CI sets this: a missing browser is a failure there
            pytest.fail(reason + "; DELTAP_REQUIRE_BROWSER=1 requires it")
        pytest.skip(reason)
    with tempfile.TemporaryDirectory(prefix="deltap-chromium-") as profile:
        return subprocess.run(
            [exe, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *extra, url],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def console_messages(stderr: str) -> list[str]:
    """The page's console output (errors, warnings, logs, uncaught exceptions) from Chromium's stderr log."""
    return [line for line in stderr.splitlines() if CONSOLE_LINE.search(line)]


def screenshot(html: Path, png: Path, width: int = 1280, height: int = 2200) -> Path:
    png.parent.mkdir(parents=True, exist_ok=True)
    proc = run_chromium(html.resolve().as_uri(), f"--window-size={width},{height}", f"--screenshot={png.resolve()}")
    if not png.is_file():
        raise RuntimeError(f"chromium wrote no screenshot (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return png


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = write_contract_run(tmp_path_factory.mktemp("browser") / "run")
    return write_html_report(run_dir)


def test_console_detection_works() -> None:
    # Guard against a test that cannot fail: a page with a JS error must be caught by the same machinery.
    with tempfile.TemporaryDirectory() as tmp:
        bad = Path(tmp) / "bad.html"
        bad.write_text("<!DOCTYPE html><html><body><script>console.error('x'); missingFn();</script></body></html>")
        proc = run_chromium(bad.as_uri(), "--dump-dom")
    messages = console_messages(proc.stderr)
    assert any("Uncaught ReferenceError" in m for m in messages), proc.stderr[-2000:]


def test_report_loads_without_console_errors_and_draws_plots(report: Path) -> None:
    proc = run_chromium(report.as_uri(), "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert console_messages(proc.stderr) == []
    dom = proc.stdout
    # The DOM after scripts ran: the case filter script filled in its counter.
    assert "3 of 3 cases shown" in dom
    plots = re.findall(r'<svg[^>]*class="plot ([a-z]+)"', dom)
    assert plots.count("forest") == 2
    assert plots.count("lines") == 3
    assert "stacked" in plots and plots.count("intervals") == 2
    assert len(re.findall(r'class="forest-row"', dom)) == 10  # one row per candidate


def test_screenshot_is_rendered(report: Path, tmp_path: Path) -> None:
    png = screenshot(report, tmp_path / "report.png", height=1600)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow comes with sentence-transformers in the dev env
        assert len(data) > 20_000
        return
    with Image.open(png) as img:
        assert img.size == (1280, 1600)
        colours = img.convert("RGB").resize((64, 80)).getcolors(maxcolors=64 * 80)
    # A blank or failed page has a handful of colours; the report has text, bars and coloured markers.
    assert colours is not None and len(colours) > 50


def main(argv: list[str]) -> int:
    """``python -m tests.integration.report.test_browser RUN_DIR OUT.png``: report + screenshot of a run dir."""
    if len(argv) != 2:
        print(__doc__)
        return 2
    html = write_html_report(Path(argv[0]))
    png = screenshot(html, Path(argv[1]))
    print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
