"""``deltap corpus ...``: build a BEIR ``corpus.jsonl`` from API symbols, Python packages or Markdown folders."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from deltap.cli.help_format import HelpGroup

if TYPE_CHECKING:
    from deltap.documents import Corpus

corpus_app = typer.Typer(
    cls=HelpGroup,
    rich_markup_mode=None,
    help="Build a corpus (BEIR corpus.jsonl) from API symbols, installed Python modules or Markdown pages.",
    no_args_is_help=True,
)

_OUT = typer.Option(Path("corpus.jsonl"), "--out", "-o", help="Where to write the BEIR corpus.jsonl.")


def _summarise(corpus: Corpus, out: Path | None) -> None:
    from collections import Counter

    from rich.console import Console
    from rich.table import Table

    console = Console()
    kinds = Counter(str(d.metadata.get("type") or d.metadata.get("document_section") or "-") for d in corpus)
    lengths = sorted(len(d.text) for d in corpus)
    table = Table(title=f"{len(corpus):,} documents" + (f" -> {out}" if out else ""), show_header=True)
    table.add_column("type / section")
    table.add_column("documents", justify="right")
    for kind, n in kinds.most_common(12):
        table.add_row(kind, f"{n:,}")
    if len(kinds) > 12:
        table.add_row(f"... {len(kinds) - 12} more", f"{sum(n for _, n in kinds.most_common()[12:]):,}")
    console.print(table)
    if lengths:
        mid = lengths[len(lengths) // 2]
        console.print(f"text length (chars): min {lengths[0]:,}, median {mid:,}, max {lengths[-1]:,}")


@contextmanager
def _notes_printed_here() -> Iterator[None]:
    """The builders log their notes (for library users) and keep them in ``corpus.notes``; the CLI prints the
    notes itself, so the logged copy must not reach stderr through logging's last-resort handler as well."""
    import logging

    quiet = logging.NullHandler()
    logger = logging.getLogger("deltap.corpora")
    logger.addHandler(quiet)
    try:
        yield
    finally:
        logger.removeHandler(quiet)


def _write(corpus: Corpus, out: Path) -> None:
    from deltap.documents import write_corpus_jsonl

    for note in corpus.notes:
        typer.secho(f"note: {note}", fg="yellow", err=True)
    write_corpus_jsonl(corpus, out)
    _summarise(corpus, out)


@corpus_app.command("api")
def corpus_api(
    symbols: Path = typer.Argument(
        ..., help="API-symbol YAML (a list of symbols with id, type, docstring, signatures...)."
    ),
    out: Path = _OUT,
) -> None:
    """One document per API symbol of an API-symbol YAML (e.g. shared/data/adk/corpus_ranked_targets.yaml)."""
    from deltap.corpora.api_symbols import read_api_symbols

    if not symbols.is_file():
        raise FileNotFoundError(f"API-symbol YAML not found: {symbols}")
    with _notes_printed_here():
        corpus = read_api_symbols(symbols)
    _write(corpus, out)


@corpus_app.command("python")
def corpus_python(
    modules: list[str] = typer.Argument(..., help="Importable module names, e.g. json itertools collections."),
    out: Path = _OUT,
    include_private: bool = typer.Option(False, "--include-private", help="Also document _private names."),
) -> None:
    """One document per module, class, function and method of installed Python modules (built with inspect)."""
    from deltap.corpora.python_package import build_python_corpus

    with _notes_printed_here():
        corpus = build_python_corpus(modules, include_private=include_private)
    _write(corpus, out)


@corpus_app.command("markdown")
def corpus_markdown(
    folder: Path = typer.Argument(..., help="Folder of Markdown / MDX (Docusaurus) pages."),
    out: Path = _OUT,
    base_url: str = typer.Option("", "--base-url", help="Site URL the pages are served under (for source_url)."),
    chunk_size: int = typer.Option(800, "--chunk-size", min=1, help="Chunk size, in --unit."),
    chunk_overlap: int = typer.Option(
        100, "--chunk-overlap", min=0, help="Overlap between consecutive chunks, in --unit."
    ),
    unit: str = typer.Option("chars", "--unit", help="Unit of size and overlap: chars or tokens (whitespace tokens)."),
) -> None:
    """Chunk a Markdown/Docusaurus folder; each chunk keeps source_url, document_section, heading, chunk_id, preview."""
    from deltap.corpora.markdown import build_markdown_corpus
    from deltap.errors import DeltapError

    if unit not in ("chars", "tokens"):
        raise DeltapError(f"--unit must be 'chars' or 'tokens', got {unit!r}")
    if chunk_overlap >= chunk_size:
        raise DeltapError(f"--chunk-overlap ({chunk_overlap}) must be smaller than --chunk-size ({chunk_size})")
    if not folder.is_dir():
        raise FileNotFoundError(f"Markdown folder not found: {folder}")
    with _notes_printed_here():
        corpus = build_markdown_corpus(
            folder,
            base_url=base_url,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            unit=unit,  # type: ignore[arg-type]
        )
    _write(corpus, out)


@corpus_app.command("info")
def corpus_info(
    path: Path = typer.Argument(..., help="A BEIR folder, corpus.jsonl or API-symbol YAML."),
) -> None:
    """Load a corpus (and, for a BEIR folder, its queries and qrels) and print a summary."""
    from deltap.loaders import load_beir, load_corpus

    if path.is_dir() and (path / "queries.jsonl").is_file():
        data = load_beir(path)
        _summarise(data.corpus, None)
        typer.echo(
            f"queries: {len(data.queries):,}; judgements ({data.split}): {data.n_judgements:,} over {len(data.qrels):,} queries"
        )
        return
    _summarise(load_corpus(path), None)


def register(app: typer.Typer) -> None:
    """Add the ``corpus`` group to ``app``."""
    app.add_typer(corpus_app, name="corpus")
