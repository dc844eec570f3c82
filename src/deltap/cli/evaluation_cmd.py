"""``deltap evaluate`` and ``deltap compare``: score retriever runs against qrels.

Heavy modules (numpy, scipy, retrievers) are imported inside the command bodies so ``deltap --help`` stays fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

_FORMATS = ("table", "wide", "markdown", "json", "latex")
FORMAT_HELP = "table (fits the terminal, 80 columns when piped), wide (with intervals and every p-value), markdown, json or latex."

QRELS_HELP = "Qrels: BEIR folder or TSV, TREC qrels, qrels JSONL, or a deltap verified dataset YAML."
RUN_HELP = "A run (TREC run file or JSON {query_id: {doc_id: score}}), optionally NAME=PATH. Repeatable."
METRICS_HELP = (
    "Comma-separated measures, e.g. 'ndcg@10,recall@100,P@10,MRR,MAP'. hit_rate@K is the design's 'Recall@K' "
    "(any relevant doc in the top K); recall@K is classical recall. Default: hit_rate@10,recall@10,P@10,MRR@10,"
    "ndcg@10,MAP,R-prec."
)


def _named_runs(items: list[str]) -> dict[str, Path]:
    from deltap.errors import DeltapError

    out: dict[str, Path] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        path = Path(raw if sep else item)
        label = name if sep else path.stem
        if not path.exists():
            raise DeltapError(f"--run {item!r}: file not found: {path}")
        if label in out:
            raise DeltapError(f"two runs are named {label!r}; name them with --run NAME=PATH")
        out[label] = path
    return out


def _build_runs(
    kinds: str,
    corpus_path: Path | None,
    qrels_path: Path,
    queries_path: Path | None,
    judged_queries: dict[str, str],
    query_ids: list[str],
    depth: int,
    store: str | None,
    embedder: str | None,
    seed: int,
    save_runs: Path | None,
    judged_docs: set[str] | None = None,
) -> dict[str, dict[str, dict[str, float]]]:
    """Build one run per retriever kind over the judged queries (the one-shot mode)."""
    from deltap.errors import DeltapError
    from deltap.loaders import load_corpus

    if corpus_path is None:
        if qrels_path.is_dir():
            corpus_path = qrels_path
        else:
            raise DeltapError("--retriever needs --corpus (a BEIR folder, corpus.jsonl or API-symbol YAML)")
    queries = dict(judged_queries)
    if queries_path is not None:
        from deltap.cases import read_queries_jsonl

        queries.update(read_queries_jsonl(queries_path))
    missing = [q for q in query_ids if q not in queries]
    if missing:
        shown = ", ".join(missing[:10])
        raise DeltapError(
            f"{len(missing)} judged queries have no text ({shown}); pass --queries queries.jsonl "
            "(or use a BEIR folder / qrels JSONL / dataset YAML that carries the query text)"
        )
    corpus = load_corpus(corpus_path)
    _require_judged(corpus, judged_docs or set(), qrels_path)
    from deltap.retrieval import build_retriever

    runs: dict[str, dict[str, dict[str, float]]] = {}
    texts = [queries[q] for q in query_ids]
    for kind in [k.strip() for k in kinds.split(",") if k.strip()]:
        typer.secho(f"building {kind} run: {len(texts)} queries over {len(corpus)} documents, top {depth}", err=True, fg="cyan")
        options: dict[str, Any] = {}
        retriever = build_retriever(kind, corpus, store=store, embedder=embedder, seed=seed, **options)
        hits = retriever.search_batch(texts, k=depth)
        runs[kind] = {q: {h.doc_id: float(h.score) for h in hs} for q, hs in zip(query_ids, hits, strict=True)}
        if save_runs is not None:
            from deltap.qrels import write_trec_run

            path = write_trec_run(runs[kind], save_runs / f"{kind}.trec", tag=kind)
            typer.secho(f"wrote {path}", err=True)
    return runs


def _require_judged(corpus: Any, judged_docs: set[str], qrels_path: Path) -> None:
    """Judged documents the corpus lacks can never be retrieved: refuse instead of silently capping recall."""
    corpus.require(judged_docs, f"document ids judged in {qrels_path}", hint="evaluate against the corpus the qrels were made for")


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        typer.echo(text)
    else:
        from deltap._io import write_text_atomic

        write_text_atomic(output, text + "\n")
        typer.secho(f"wrote {output}", err=True)


def _width() -> int:
    import shutil

    return max(60, shutil.get_terminal_size((80, 24)).columns)


def _render(obj: Any, fmt: str) -> str:
    if fmt == "table" and hasattr(obj, "to_compact"):
        return str(obj.to_compact(width=_width()))
    if fmt in ("table", "wide"):
        return str(obj.to_table())
    if fmt == "markdown":
        return str(obj.to_markdown())
    if fmt == "json":
        return str(obj.to_json())
    return str(obj.to_latex())


def _run_command(
    *,
    qrels: Path,
    run: list[str],
    corpus: Path | None,
    retriever: str | None,
    queries: Path | None,
    depth: int,
    store: str | None,
    embedder: str | None,
    save_runs: Path | None,
    metrics: str | None,
    fmt: str,
    output: Path | None,
    per_query: Path | None,
    on_missing: str,
    on_empty: str,
    bootstrap: int,
    confidence: float,
    seed: int,
    failures: int,
    split: str,
    compare_mode: bool,
    baseline: str | None = None,
    test: str = "fisher",
    alpha: float = 0.05,
    permutations: int = 10_000,
) -> None:
    import warnings

    from deltap.errors import DeltapError
    from deltap.evaluation.measures import DEFAULT_METRICS, parse_metrics
    from deltap.evaluation.ranking import EvaluationWarning
    from deltap.evaluation.sources import load_judgements

    if fmt not in _FORMATS:
        raise DeltapError(f"--format must be one of {', '.join(_FORMATS)}, got {fmt!r}")
    measures = parse_metrics(metrics or list(DEFAULT_METRICS))
    judgements = load_judgements(qrels, split=split)
    runs: dict[str, Any] = dict(_named_runs(run))
    if retriever:
        built = _build_runs(
            retriever, corpus, qrels, queries, judgements.queries, list(judgements.qrels), depth, store, embedder, seed, save_runs,
            judged_docs={d for docs in judgements.qrels.values() for d in docs},
        )
        clash = set(built) & set(runs)
        if clash:
            raise DeltapError(f"run names clash with retriever names: {', '.join(sorted(clash))}; rename with --run NAME=PATH")
        runs.update(built)
    if not runs:
        raise DeltapError("nothing to evaluate: give --run FILE (repeatable) or --retriever bm25,dense,hybrid with --corpus")
    if compare_mode and len(runs) < 2:
        raise DeltapError("compare needs at least two runs (--run A --run B, or --retriever bm25,dense)")
    coalitions = judgements.coalitions or None

    with warnings.catch_warnings():
        # the notes are part of every rendered output; do not print them twice
        warnings.simplefilter("ignore", EvaluationWarning)
        if len(runs) == 1 and not compare_mode:
            from deltap.evaluation.evaluate import evaluate

            name, the_run = next(iter(runs.items()))
            result: Any = evaluate(
                judgements.qrels,
                the_run,
                measures,
                coalitions=coalitions,
                on_missing=on_missing,  # type: ignore[arg-type]
                on_empty=on_empty,  # type: ignore[arg-type]
                confidence=confidence,
                n_resamples=bootstrap,
                seed=seed,
                run_name=name,
            )
            if per_query is not None:
                from deltap._io import write_text_atomic

                write_text_atomic(per_query, result.per_query_tsv())
                typer.secho(f"wrote per-query values to {per_query}", err=True)
        else:
            from deltap.evaluation.compare import compare

            result = compare(
                judgements.qrels,
                runs,
                measures,
                baseline=baseline,
                test=test,  # type: ignore[arg-type]
                alpha=alpha,
                coalitions=coalitions,
                on_missing=on_missing,  # type: ignore[arg-type]
                on_empty=on_empty,  # type: ignore[arg-type]
                confidence=confidence,
                n_resamples=bootstrap,
                n_permutations=permutations,
                seed=seed,
            )
            if per_query is not None:
                from deltap._io import write_text_atomic

                for sysname, res in result.results.items():
                    target = per_query.with_name(f"{per_query.stem}.{sysname}{per_query.suffix or '.tsv'}")
                    write_text_atomic(target, res.per_query_tsv())
                    typer.secho(f"wrote per-query values of {sysname} to {target}", err=True)
    text = _render(result, fmt)
    if fmt == "latex" and result.notes:
        for note in result.notes:
            typer.secho(f"note: {note}", err=True, fg="yellow")
    if failures > 0:
        from deltap.evaluation.failures import analyze_failures
        from deltap.loaders import load_corpus

        corpus_path = corpus if corpus is not None else (qrels if qrels.is_dir() else None)
        if corpus_path is None or not judgements.queries:
            raise DeltapError("--failures needs the corpus (--corpus) and query texts (a BEIR folder, qrels JSONL or dataset)")
        failure_corpus = load_corpus(corpus_path)
        _require_judged(failure_corpus, {d for docs in judgements.qrels.values() for d in docs}, qrels)
        report = analyze_failures(
            judgements.qrels,
            runs,
            judgements.queries,
            failure_corpus,
            k=failures,
            harmful=judgements.harmful or None,
        )
        if fmt == "json":
            import json

            text = json.dumps({"evaluation": result.to_dict(), "failures": report.to_dict()}, indent=2, ensure_ascii=False)
        elif fmt == "markdown":
            text += "\n\n" + report.to_markdown()
        elif fmt == "table":
            import textwrap

            width = _width()
            text += "\n\n" + "\n".join(
                textwrap.fill(line, width, subsequent_indent="    ") if len(line) > width else line
                for line in report.to_table().splitlines()
            )
        else:
            text += "\n\n" + report.to_table()
    _emit(text, output)
    sys.stdout.flush()


def register(app: typer.Typer) -> None:
    """Add ``evaluate`` and ``compare`` to ``app``."""

    @app.command("evaluate")
    def evaluate_cmd(
        qrels: Path = typer.Option(..., "--qrels", help=QRELS_HELP),
        run: list[str] = typer.Option([], "--run", help=RUN_HELP),
        corpus: Path = typer.Option(None, "--corpus", help="Corpus for --retriever/--failures (BEIR folder, corpus.jsonl, API YAML)."),
        retriever: str = typer.Option(None, "--retriever", help="Build runs with these retrievers: bm25,dense,hybrid,random."),
        queries: Path = typer.Option(None, "--queries", help="queries.jsonl when the qrels carry no query text."),
        depth: int = typer.Option(100, "--depth", min=1, help="Documents retrieved per query by --retriever."),
        store: str = typer.Option(None, "--store", help="Vector store folder or Qdrant URL for dense/hybrid."),
        embedder: str = typer.Option(None, "--embedder", help="Embedder for dense/hybrid (default: bundled MiniLM)."),
        save_runs: Path = typer.Option(None, "--save-runs", help="Folder to write the built runs to (TREC format)."),
        metrics: str = typer.Option(None, "--metrics", "-m", help=METRICS_HELP),
        fmt: str = typer.Option("table", "--format", "-f", help=FORMAT_HELP),
        output: Path = typer.Option(None, "--output", "-o", help="Write the report here instead of stdout."),
        per_query: Path = typer.Option(None, "--per-query", help="Write per-query values as TSV."),
        on_missing: str = typer.Option("zero", "--on-missing", help="Qrels queries absent from a run: zero, skip, error."),
        on_empty: str = typer.Option("zero", "--on-empty", help="Qrels queries without relevant docs: zero, skip, error."),
        bootstrap: int = typer.Option(1000, "--bootstrap", min=0, help="Bootstrap resamples for the CIs (0 = none)."),
        confidence: float = typer.Option(0.95, "--confidence", help="CI coverage."),
        seed: int = typer.Option(0, "--seed", help="Seed for bootstrap, tests and random retrievers."),
        failures: int = typer.Option(0, "--failures", min=0, help="Also bucket failures at this K (0 = off)."),
        split: str = typer.Option("test", "--split", help="BEIR qrels split."),
    ) -> None:
        """Score one run (per-query values, means, bootstrap CIs); with several runs, a comparison report."""
        _run_command(
            qrels=qrels, run=run, corpus=corpus, retriever=retriever, queries=queries, depth=depth, store=store,
            embedder=embedder, save_runs=save_runs, metrics=metrics, fmt=fmt, output=output, per_query=per_query,
            on_missing=on_missing, on_empty=on_empty, bootstrap=bootstrap, confidence=confidence, seed=seed,
            failures=failures, split=split, compare_mode=False,
        )

    @app.command("compare")
    def compare_cmd(
        qrels: Path = typer.Option(..., "--qrels", help=QRELS_HELP),
        run: list[str] = typer.Option([], "--run", help=RUN_HELP),
        corpus: Path = typer.Option(None, "--corpus", help="Corpus for --retriever/--failures."),
        retriever: str = typer.Option(None, "--retriever", help="Build runs with these retrievers: bm25,dense,hybrid,random."),
        queries: Path = typer.Option(None, "--queries", help="queries.jsonl when the qrels carry no query text."),
        depth: int = typer.Option(100, "--depth", min=1, help="Documents retrieved per query by --retriever."),
        store: str = typer.Option(None, "--store", help="Vector store folder or Qdrant URL for dense/hybrid."),
        embedder: str = typer.Option(None, "--embedder", help="Embedder for dense/hybrid."),
        save_runs: Path = typer.Option(None, "--save-runs", help="Folder to write the built runs to (TREC format)."),
        metrics: str = typer.Option(None, "--metrics", "-m", help=METRICS_HELP),
        baseline: str = typer.Option(None, "--baseline", help="Baseline run name (default: the first)."),
        test: str = typer.Option("fisher", "--test", help="Test for the significance marks: fisher (randomization) or t."),
        alpha: float = typer.Option(0.05, "--alpha", help="Significance level (Holm-adjusted p-values)."),
        permutations: int = typer.Option(10_000, "--permutations", min=100, help="Randomization test permutations."),
        fmt: str = typer.Option("table", "--format", "-f", help=FORMAT_HELP),
        output: Path = typer.Option(None, "--output", "-o", help="Write the report here instead of stdout."),
        per_query: Path = typer.Option(None, "--per-query", help="Write per-query values (one TSV per run)."),
        on_missing: str = typer.Option("zero", "--on-missing", help="Qrels queries absent from a run: zero, skip, error."),
        on_empty: str = typer.Option("zero", "--on-empty", help="Qrels queries without relevant docs: zero, skip, error."),
        bootstrap: int = typer.Option(1000, "--bootstrap", min=0, help="Bootstrap resamples for the CIs (0 = none)."),
        confidence: float = typer.Option(0.95, "--confidence", help="CI coverage."),
        seed: int = typer.Option(0, "--seed", help="Seed for bootstrap, tests and random retrievers."),
        failures: int = typer.Option(0, "--failures", min=0, help="Also bucket failures at this K (0 = off)."),
        split: str = typer.Option("test", "--split", help="BEIR qrels split."),
    ) -> None:
        """Compare runs against a baseline: means, CIs, paired t and randomization tests (Holm), win/tie/loss."""
        _run_command(
            qrels=qrels, run=run, corpus=corpus, retriever=retriever, queries=queries, depth=depth, store=store,
            embedder=embedder, save_runs=save_runs, metrics=metrics, fmt=fmt, output=output, per_query=per_query,
            on_missing=on_missing, on_empty=on_empty, bootstrap=bootstrap, confidence=confidence, seed=seed,
            failures=failures, split=split, compare_mode=True, baseline=baseline, test=test, alpha=alpha,
            permutations=permutations,
        )
