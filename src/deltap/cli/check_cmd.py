"""``deltap check`` (gate a retrieval pipeline) and ``deltap init-check`` (write a starter suite)."""

from __future__ import annotations

from pathlib import Path

import typer

_GATES = "relevance, out_of_scope, metadata, latency, determinism"


def check(
    suite: Path = typer.Argument(..., help="The suite file (YAML or JSON): in-scope / out-of-scope queries, gates."),
    store: str = typer.Option(None, "--store", help="Index folder or Qdrant URL (default: the suite's index.store)."),
    collection: str = typer.Option(
        None, "--collection", help="Collection name (default: the suite's, or the store's only one)."
    ),
    corpus: Path = typer.Option(None, "--corpus", help="The ingested corpus.jsonl, to compare hit metadata with."),
    top_k: int = typer.Option(None, "--top-k", min=1, help="Expected items must be in the top K (suite default 5)."),
    threshold: float = typer.Option(None, "--threshold", help="Out-of-scope score threshold (overrides the suite)."),
    pass_rate: float = typer.Option(
        None, "--pass-rate", help="Share of in-scope queries that must pass (default 0.8)."
    ),
    repeats: int = typer.Option(None, "--repeats", min=1, help="Timed passes over the queries (default 5)."),
    warmup: int = typer.Option(None, "--warmup", min=0, help="Untimed warm-up passes (default 1)."),
    skip: list[str] = typer.Option([], "--skip", help=f"Disable a gate (repeatable): {_GATES}."),
    calibrate: bool = typer.Option(
        False, "--calibrate", help="Propose a score threshold from in- vs out-of-scope score distributions; no gating."
    ),
    json_out: Path = typer.Option(None, "--json", help="Write the full JSON report here."),
    html_out: Path = typer.Option(
        None,
        "--html",
        help="Write a self-contained HTML page here: gates, latency histogram, calibration plot, queries.",
    ),
) -> None:
    """Check a retrieval pipeline: relevance, out-of-scope, metadata, latency, determinism. Exit 0 only if all pass."""
    from deltap.check import GATES, check_pipeline
    from deltap.errors import DeltapError

    bad = [g for g in skip if g not in GATES]
    if bad:
        raise DeltapError(f"--skip {bad[0]!r}: unknown gate; gates are {_GATES}")

    def progress(msg: str) -> None:
        typer.secho(f"  {msg}", err=True, dim=True)

    report = check_pipeline(
        suite,
        store=store,
        collection=collection,
        corpus=corpus,
        top_k=top_k,
        score_threshold=threshold,
        pass_rate=pass_rate,
        repeats=repeats,
        warmup=warmup,
        skip=skip,
        calibrate=calibrate,
        progress=progress,
    )
    for line in report.summary().splitlines():
        color = "green" if line.lstrip().startswith("PASS") else "red" if line.lstrip().startswith("FAIL") else None
        if line.startswith("result:"):
            color = "green" if report.passed else "red"
        typer.secho(line, fg=color)
    details = report.failures()
    if details:
        typer.echo(details)
    if json_out is not None:
        report.write_json(json_out)
        typer.echo(f"JSON report: {json_out}")
    if html_out is not None:
        from deltap.report.check import write_check_html

        write_check_html(report, html_out)
        typer.echo(f"HTML page: {html_out}")
    if calibrate and report.calibration is not None:
        typer.echo(f"set `score_threshold: {report.calibration['threshold']:.4f}` in {suite} (or pass --threshold)")
    # SystemExit, not typer.Exit: in non-standalone mode click returns typer.Exit's code instead of exiting, and
    # deltap.cli.app.main() would drop it; the gate verdict must reach the shell.
    raise SystemExit(report.exit_code)


def init_check(
    corpus: Path = typer.Argument(..., help="The corpus the index was built from (corpus.jsonl, BEIR folder...)."),
    out: Path = typer.Option(Path("check.yaml"), "--out", "-o", help="Where to write the starter suite."),
    per_section: int = typer.Option(2, "--per-section", min=1, help="In-scope queries per document_section."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Write a starter check suite from a corpus (sections and sample queries) for you to edit."""
    from deltap.check.suite import starter_suite_yaml
    from deltap.errors import DeltapError
    from deltap.loaders import load_corpus

    if out.exists() and not force:
        raise DeltapError(f"{out} exists; pass --force to overwrite it")
    docs = load_corpus(corpus)
    try:
        rel = str(corpus.resolve().relative_to(out.resolve().parent))
    except ValueError:
        rel = str(corpus.resolve())
    text = starter_suite_yaml(docs, per_section=per_section, corpus_path=rel)
    from deltap._io import write_text_atomic

    write_text_atomic(out, text)
    n_in = text.count("\n  - id: ")
    typer.echo(f"wrote {out}: {n_in} in-scope and 3 out-of-scope queries from {len(docs):,} documents")
    typer.echo(f"next: edit it, then `deltap check {out} --store INDEX --calibrate` to choose score_threshold")


def register(app: typer.Typer) -> None:
    """Add ``check`` and ``init-check`` to ``app``."""
    app.command("check")(check)
    app.command("init-check")(init_check)
