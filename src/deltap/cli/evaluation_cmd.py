"""``deltap evaluate`` and ``deltap compare``: score retriever runs against qrels.

The commands only parse and print: judgements and runs are read by :mod:`deltap.evaluation.sources`, scored by
:func:`deltap.evaluation.comparison.score_runs`, and every default comes from :mod:`deltap.evaluation.settings`. The
options both verbs share are declared once, below. Heavy modules (numpy, scipy, retrievers) are imported inside the
command bodies so ``deltap --help`` stays fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from deltap.evaluation.settings import ComparisonSettings, EvaluationSettings, RetrievalSettings
from deltap.retrieval.registry import retriever_kinds

_FORMATS = ("table", "wide", "markdown", "json", "latex")
FORMAT_HELP = "table (fits the terminal, 80 columns when piped), wide (with intervals and every p-value), markdown, json or latex."

QRELS_HELP = (
    "Qrels: BEIR folder or TSV, TREC qrels, qrels JSONL, or a deltap verified dataset YAML (RUN_DIR/retrieval_dataset.yaml: "
    "the only one signed_utility@K can read)."
)
RUN_HELP = "A run (TREC run file or JSON {query_id: {doc_id: score}}), optionally NAME=PATH. Repeatable."
METRICS_HELP = (
    "Comma-separated measures, e.g. 'ndcg@10,recall@100,P@10,MRR,MAP'. hit_rate@K is the design's 'Recall@K' "
    "(any relevant doc in the top K); recall@K is classical recall; signed_utility@K sums the mined ΔP of the top K "
    "(harmful documents negative; judged@K printed beside it; norm=ideal to normalise). Default: "
    + ",".join(EvaluationSettings.metrics)
    + "."
)

# Options shared by `evaluate` and `compare` (declared once; defaults come from the settings objects).
Qrels = Annotated[Path, typer.Option("--qrels", help=QRELS_HELP)]
Runs = Annotated[list[str], typer.Option("--run", help=RUN_HELP)]
CorpusOpt = Annotated[
    Path | None,
    typer.Option("--corpus", help="Corpus for --retriever/--failures (BEIR folder, corpus.jsonl, API YAML)."),
]
RetrieverOpt = Annotated[
    str | None,
    typer.Option("--retriever", help=f"Build runs with these retrievers (comma-separated): {retriever_kinds(',')}."),
]
QueriesOpt = Annotated[Path | None, typer.Option("--queries", help="queries.jsonl when the qrels carry no query text.")]
Depth = Annotated[int, typer.Option("--top-k", "--depth", min=1, help="Documents retrieved per query by --retriever.")]
Store = Annotated[str | None, typer.Option("--store", help="Vector store folder or Qdrant URL for dense/hybrid.")]
EmbedderOpt = Annotated[
    str | None, typer.Option("--embedder", help="Embedder for dense/hybrid (default: bundled MiniLM).")
]
SaveRuns = Annotated[Path | None, typer.Option("--save-runs", help="Folder to write the built runs to (TREC format).")]
Metrics = Annotated[str | None, typer.Option("--metrics", "-m", help=METRICS_HELP)]
Format = Annotated[str, typer.Option("--format", "-f", help=FORMAT_HELP)]
Output = Annotated[Path | None, typer.Option("--output", "-o", help="Write the report here instead of stdout.")]
OnMissing = Annotated[str, typer.Option("--on-missing", help="Qrels queries absent from a run: zero, skip, error.")]
OnEmpty = Annotated[str, typer.Option("--on-empty", help="Qrels queries without relevant docs: zero, skip, error.")]
Bootstrap = Annotated[int, typer.Option("--bootstrap", min=0, help="Bootstrap resamples for the CIs (0 = none).")]
Confidence = Annotated[float, typer.Option("--confidence", help="CI coverage.")]
Seed = Annotated[int, typer.Option("--seed", help="Seed for bootstrap, tests and random retrievers.")]
Failures = Annotated[int, typer.Option("--failures", min=0, help="Also bucket failures at this K (0 = off).")]
Split = Annotated[str, typer.Option("--split", help="BEIR qrels split.")]
Labels = Annotated[
    str,
    typer.Option(
        "--labels",
        help="With a deltap run directory or verified dataset as --qrels: verdict (proven effects only, the default), "
        "graded (every candidate's shrunken utility: grades for the qrels, signed utilities for signed_utility@K) or "
        "graded_no_gold (the same under the prior without the gold flag). docs/graded-labels.md.",
    ),
]
Into = Annotated[
    Path | None,
    typer.Option(
        "--into",
        help="A mined run directory to save the result in (RUN_DIR/evaluation/compare.json and the runs as "
        "evaluation/runs/*.trec): deltap report RUN_DIR shows it.",
    ),
]

_EVAL = EvaluationSettings()
_CMP = ComparisonSettings()
_RET = RetrievalSettings()


def _named_runs(items: list[str]) -> dict[str, Path]:
    """``--run NAME=PATH`` / ``--run PATH`` (named by the file's stem), each file checked to exist."""
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


def _corpus_path(corpus: Path | None, qrels: Path, what: str) -> Path:
    """``--corpus``, or the qrels' own BEIR folder."""
    from deltap.errors import DeltapError

    if corpus is not None:
        return corpus
    if qrels.is_dir():
        return qrels
    raise DeltapError(f"{what} needs --corpus (a BEIR folder, corpus.jsonl or API-symbol YAML)")


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


def _gather_runs(
    qrels: Path,
    run: list[str],
    corpus: Path | None,
    queries: Path | None,
    retrieval: RetrievalSettings,
    save_runs: Path | None,
    judgements: Any,
) -> dict[str, Any]:
    """The runs of ``--run`` files and those built by ``--retriever`` (saved as TREC files with ``--save-runs``)."""
    from deltap.errors import DeltapError

    runs: dict[str, Any] = dict(_named_runs(run))
    if retrieval.kinds:
        from deltap.evaluation.sources import retrieve_runs
        from deltap.loaders import load_corpus

        extra = None
        if queries is not None:
            from deltap.cases import read_queries_jsonl

            extra = read_queries_jsonl(queries)
        built = retrieve_runs(
            judgements, load_corpus(_corpus_path(corpus, qrels, "--retriever")), retrieval, extra,
            progress=lambda line: typer.secho(line, err=True, fg="cyan"),
        )  # fmt: skip
        if save_runs is not None:
            from deltap.qrels import write_trec_run

            for kind, built_run in built.items():
                typer.secho(f"wrote {write_trec_run(built_run, save_runs / f'{kind}.trec', tag=kind)}", err=True)
        clash = set(built) & set(runs)
        if clash:
            raise DeltapError(
                f"run names clash with retriever names: {', '.join(sorted(clash))}; rename with --run NAME=PATH"
            )
        runs.update(built)
    return runs


def _write_per_query(result: Any, per_query: Path) -> None:
    from deltap._io import write_text_atomic

    if hasattr(result, "results"):  # a comparison: one TSV per run
        for sysname, res in result.results.items():
            target = per_query.with_name(f"{per_query.stem}.{sysname}{per_query.suffix or '.tsv'}")
            write_text_atomic(target, res.per_query_tsv())
            typer.secho(f"wrote per-query values of {sysname} to {target}", err=True)
    else:
        write_text_atomic(per_query, result.per_query_tsv())
        typer.secho(f"wrote per-query values to {per_query}", err=True)


def _with_failures(
    text: str, result: Any, fmt: str, k: int, qrels: Path, corpus: Path | None, judgements: Any, runs: dict[str, Any]
) -> str:
    """``text`` followed by the failure analysis at ``k`` in the same format (JSON: one object with both)."""
    from deltap.errors import DeltapError
    from deltap.evaluation.failures import analyze_failures
    from deltap.evaluation.sources import require_judged
    from deltap.loaders import load_corpus

    if not judgements.queries:
        raise DeltapError(
            "--failures needs the corpus (--corpus) and query texts (a BEIR folder, qrels JSONL or dataset)"
        )
    failure_corpus = load_corpus(_corpus_path(corpus, qrels, "--failures"))
    require_judged(failure_corpus, judgements)
    analysis = analyze_failures(
        judgements.qrels, runs, judgements.queries, failure_corpus, k=k, harmful=judgements.harmful or None
    )
    if fmt == "json":
        import json

        return json.dumps(
            {"evaluation": result.to_dict(), "failures": analysis.to_dict()}, indent=2, ensure_ascii=False
        )
    if fmt == "markdown":
        return text + "\n\n" + analysis.to_markdown()
    if fmt == "table":
        import textwrap

        width = _width()
        lines = analysis.to_table().splitlines()
        return (
            text
            + "\n\n"
            + "\n".join(textwrap.fill(ln, width, subsequent_indent="    ") if len(ln) > width else ln for ln in lines)
        )
    return text + "\n\n" + analysis.to_table()


def _run_command(
    qrels: Path, run: list[str], corpus: Path | None, queries: Path | None, retrieval: RetrievalSettings,
    save_runs: Path | None, settings: EvaluationSettings, comparison: ComparisonSettings | None, fmt: str,
    output: Path | None, per_query: Path | None, failures: int, split: str, into: Path | None = None,
    labels: str = "verdict",
) -> None:  # fmt: skip
    from deltap.errors import DeltapError
    from deltap.evaluation.comparison import score_runs
    from deltap.judgements import load_judgements

    if fmt not in _FORMATS:
        raise DeltapError(f"--format must be one of {', '.join(_FORMATS)}, got {fmt!r}")
    if into is not None:
        from deltap.run_layout import RunDir

        RunDir(into).require_mined()  # before any scoring
    judgements = load_judgements(qrels, split=split, labels=labels)
    runs = _gather_runs(qrels, run, corpus, queries, retrieval, save_runs, judgements)
    result = score_runs(judgements, runs, settings, comparison)
    if per_query is not None:
        _write_per_query(result, per_query)
    text = _render(result, fmt)
    if fmt == "latex" and result.notes:
        for note in result.notes:
            typer.secho(f"note: {note}", err=True, fg="yellow")
    if failures > 0:
        text = _with_failures(text, result, fmt, failures, qrels, corpus, judgements, runs)
    _emit(text, output)
    sys.stdout.flush()
    if into is not None:
        _save_into(result, runs, into)


def _save_into(result: Any, runs: dict[str, Any], into: Path) -> None:
    """``--into RUN_DIR``: the result and its runs where ``deltap report`` reads them."""
    from deltap.qrels import load_run

    loaded = {name: load_run(r) if isinstance(r, str | Path) else r for name, r in runs.items()}
    if hasattr(result, "results"):  # a comparison
        path = result.write_into(into, loaded)
    else:
        path = result.write_into(into, loaded[result.run_name] if result.run_name in loaded else None)
    typer.secho(f"wrote {path} (deltap report {into} shows it)", err=True)


def _settings(
    metrics: str | None, on_missing: str, on_empty: str, bootstrap: int, confidence: float, seed: int
) -> EvaluationSettings:
    chosen = tuple(m.strip() for m in metrics.split(",") if m.strip()) if metrics else _EVAL.metrics
    return EvaluationSettings(chosen, on_missing, on_empty, confidence, bootstrap, seed)  # type: ignore[arg-type]


def _retrieval(
    retriever: str | None, depth: int, store: str | None, embedder: str | None, seed: int
) -> RetrievalSettings:
    kinds = tuple(k.strip() for k in (retriever or "").split(",") if k.strip())
    return RetrievalSettings(kinds, depth, store, embedder, seed)


def register(app: typer.Typer) -> None:
    """Add ``evaluate`` and ``compare`` to ``app``."""

    @app.command("evaluate")
    def evaluate_cmd(
        qrels: Qrels,
        run: Runs = [],  # noqa: B006 - typer reads the default, never mutates it
        corpus: CorpusOpt = None,
        retriever: RetrieverOpt = None,
        queries: QueriesOpt = None,
        depth: Depth = _RET.depth,
        store: Store = _RET.store,
        embedder: EmbedderOpt = _RET.embedder,
        save_runs: SaveRuns = None,
        metrics: Metrics = None,
        fmt: Format = "table",
        output: Output = None,
        per_query: Annotated[Path | None, typer.Option("--per-query", help="Write per-query values as TSV.")] = None,
        on_missing: OnMissing = _EVAL.on_missing,
        on_empty: OnEmpty = _EVAL.on_empty,
        bootstrap: Bootstrap = _EVAL.n_resamples,
        confidence: Confidence = _EVAL.confidence,
        seed: Seed = _EVAL.seed,
        failures: Failures = 0,
        split: Split = "test",
        into: Into = None,
        labels: Labels = "verdict",
    ) -> None:
        """Score one run (per-query values, means, bootstrap CIs); with several runs, a comparison report."""
        _run_command(
            qrels, run, corpus, queries, _retrieval(retriever, depth, store, embedder, seed), save_runs,
            _settings(metrics, on_missing, on_empty, bootstrap, confidence, seed), None, fmt, output, per_query,
            failures, split, into, labels,
        )  # fmt: skip

    @app.command("compare")
    def compare_cmd(
        qrels: Qrels,
        run: Runs = [],  # noqa: B006 - typer reads the default, never mutates it
        corpus: CorpusOpt = None,
        retriever: RetrieverOpt = None,
        queries: QueriesOpt = None,
        depth: Depth = _RET.depth,
        store: Store = _RET.store,
        embedder: EmbedderOpt = _RET.embedder,
        save_runs: SaveRuns = None,
        metrics: Metrics = None,
        baseline: Annotated[
            str | None, typer.Option("--baseline", help="Baseline run name (default: the first).")
        ] = _CMP.baseline,
        test: Annotated[
            str, typer.Option("--test", help="Test for the significance marks: fisher (randomization) or t.")
        ] = _CMP.test,
        alpha: Annotated[
            float, typer.Option("--alpha", help="Significance level (Holm-adjusted p-values).")
        ] = _CMP.alpha,
        permutations: Annotated[
            int, typer.Option("--permutations", min=100, help="Randomization test permutations.")
        ] = _CMP.n_permutations,
        fmt: Format = "table",
        output: Output = None,
        per_query: Annotated[
            Path | None, typer.Option("--per-query", help="Write per-query values (one TSV per run).")
        ] = None,
        on_missing: OnMissing = _EVAL.on_missing,
        on_empty: OnEmpty = _EVAL.on_empty,
        bootstrap: Bootstrap = _EVAL.n_resamples,
        confidence: Confidence = _EVAL.confidence,
        seed: Seed = _EVAL.seed,
        failures: Failures = 0,
        split: Split = "test",
        into: Into = None,
        labels: Labels = "verdict",
    ) -> None:
        """Compare runs against a baseline: means, CIs, paired t and randomization tests (Holm), win/tie/loss."""
        _run_command(
            qrels, run, corpus, queries, _retrieval(retriever, depth, store, embedder, seed), save_runs,
            _settings(metrics, on_missing, on_empty, bootstrap, confidence, seed),
            ComparisonSettings(baseline, test, alpha, permutations),  # type: ignore[arg-type]
            fmt, output, per_query, failures, split, into, labels,
        )  # fmt: skip
