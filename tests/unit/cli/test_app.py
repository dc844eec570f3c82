"""The CLI shell: help lists the verbs, `python -m deltap` works, corpus commands write real files, errors exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "deltap", *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_help_lists_verbs() -> None:
    out = _run("--help")
    assert out.returncode == 0, out.stderr
    assert "corpus" in out.stdout
    assert "deltap" in _run("--version").stdout


def test_help_does_not_import_heavy_modules() -> None:
    code = "import sys; sys.argv=['deltap','--help']\nfrom deltap.cli import app\nprint([m for m in ('torch','numpy','scipy','llama_cpp','qdrant_client','sentence_transformers','bm25s','yaml') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_corpus_python_writes_beir_jsonl(tmp_path: Path) -> None:
    out = _run("corpus", "python", "json", "-o", str(tmp_path / "c.jsonl"))
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    ids = [r["_id"] for r in records]
    assert "json.dumps" in ids and all(set(r) >= {"_id", "title", "text"} for r in records)


def test_corpus_api_on_adk(tmp_path: Path, adk_dir: Path) -> None:
    out = _run("corpus", "api", str(adk_dir / "corpus_ranked_targets.yaml"), "-o", str(tmp_path / "adk.jsonl"))
    assert out.returncode == 0, out.stderr
    assert "1,927 documents" in out.stdout
    assert "1 duplicate symbol id" in out.stderr  # shown as a note, never dropped silently
    assert len((tmp_path / "adk.jsonl").read_text().splitlines()) == 1927


def test_corpus_info_on_cranfield(cranfield_dir: Path) -> None:
    out = _run("corpus", "info", str(cranfield_dir))
    assert out.returncode == 0, out.stderr
    assert "1,400 documents" in out.stdout and "queries: 225; judgements (test): 1,612" in out.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(("corpus", "python", "no_such_module_xyz"), "cannot import module", id="bad-module"),
        pytest.param(("corpus", "api", "/nonexistent.yaml"), "not found", id="missing-file"),
        pytest.param(("corpus", "info", "/nonexistent"), "corpus not found", id="missing-corpus"),
    ],
)
def test_user_errors_exit_2_with_one_line(args: tuple[str, ...], message: str) -> None:
    out = _run(*args)
    assert out.returncode == 2
    assert message in out.stderr and "Traceback" not in out.stderr
