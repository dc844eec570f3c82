"""Reports of a mining run: one self-contained HTML file (inline SVG plots) and a Markdown summary.

Entry points: :func:`load_run_dir` reads a run directory, :func:`write_html_report` / :func:`write_markdown_report`
write the reports, :func:`render_html` / :func:`render_markdown` return them as strings.
"""

from __future__ import annotations

from deltap.report.html import render_html, write_html_report
from deltap.report.markdown import render_markdown, write_markdown_report
from deltap.report.run_data import CandidateRecord, CaseRecord, RunData, load_run_dir

__all__ = [
    "CandidateRecord",
    "CaseRecord",
    "RunData",
    "load_run_dir",
    "render_html",
    "render_markdown",
    "write_html_report",
    "write_markdown_report",
]
