"""The reports show how the checker read the run's replies (run.json's ``checker`` block, issue 34): declared
``Answer:`` line, answer grammar, unreadable — one line, marked as a warning when the block warns; an old block (no
declared count) keeps its older line."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from deltap.report import load_run_dir, render_html, render_markdown
from tests.unit.report.test_contract_fixture import write_contract_run

_NEW = {"replies": 430, "unreadable": 3, "share": 0.007, "warning": False, "by_case": {"q": 3}, "declared": 412,
        "declared_share": 0.9581, "protocol_asked": True, "protocol_replies": 430, "protocol_declared": 412,
        "protocol_warning": False}  # fmt: skip
_LINE = (
    "answers read from the declared 'Answer:' line: 412 of 430 (95.8%); by the answer grammar: 15; unreadable: 3 (0.7%)"
)
_IGNORED = {**_NEW, "declared": 40, "declared_share": 0.093, "protocol_declared": 40, "protocol_warning": True}
_OLD = {"replies": 91, "unreadable": 12, "share": 0.1319, "warning": False, "by_case": {"q": 12}}


def _with_checker(tmp_path: Path, block: dict[str, Any] | None) -> Path:
    run = write_contract_run(tmp_path / "run")
    summary = json.loads((run / "run.json").read_text(encoding="utf-8"))
    summary.pop("checker", None)
    if block is not None:
        summary["checker"] = block
    (run / "run.json").write_text(json.dumps(summary), encoding="utf-8")
    return run


@pytest.mark.parametrize(
    ("block", "label", "line"),
    [
        (_NEW, "**Checker:**", _LINE),
        (_IGNORED, "**Checker (warning):**", "answers read from the declared 'Answer:' line: 40 of 430 (9.3%)"),
        (_OLD, "**Checker:**", "replies the checker could not read: 12 of 91 (13.2%)"),
    ],
)
def test_the_markdown_report_has_the_line(tmp_path: Path, block: dict[str, Any], label: str, line: str) -> None:
    md = render_markdown(load_run_dir(_with_checker(tmp_path, block)))
    [row] = [r for r in md.splitlines() if r.startswith("**Checker")]
    assert row.startswith(f"{label} {line}")
    assert ("answer_protocol=off" in row) is bool(block.get("protocol_warning"))


@pytest.mark.parametrize(
    ("block", "css", "line"),
    [
        (_NEW, "ok", _LINE),
        (_IGNORED, "warn", "answers read from the declared 'Answer:' line: 40 of 430 (9.3%)"),
        (_OLD, "ok", "replies the checker could not read: 12 of 91 (13.2%)"),
    ],
)
def test_the_html_report_has_the_line(tmp_path: Path, block: dict[str, Any], css: str, line: str) -> None:
    page = render_html(load_run_dir(_with_checker(tmp_path, block)))
    found = re.search(r'<p><b>Checker</b>: <span class="(\w+)">([^<]*)</span>', page)
    assert found is not None and found.group(1) == css
    text = html.unescape(found.group(2))
    assert text.startswith(line)
    assert ("not following the line" in text) is bool(block.get("protocol_warning"))


def test_no_checker_block_no_line(tmp_path: Path) -> None:
    run = _with_checker(tmp_path, None)
    assert "**Checker" not in render_markdown(load_run_dir(run))
    assert "<b>Checker</b>" not in render_html(load_run_dir(run))
