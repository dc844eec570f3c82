"""Plain renderers for result tables: aligned text, GitHub Markdown, LaTeX (booktabs). No dependencies."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["latex_escape", "to_latex", "to_markdown", "to_text"]


def to_text(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool] | None = None) -> str:
    """An aligned plain-text table (first column left-aligned, the others right-aligned by default)."""
    cols = len(header)
    right = list(right) if right is not None else [False] + [True] * (cols - 1)
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(cols)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            str(c).rjust(w) if r else str(c).ljust(w) for c, w, r in zip(cells, widths, right, strict=True)
        ).rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


def to_markdown(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool] | None = None) -> str:
    """A GitHub-flavoured Markdown table."""
    cols = len(header)
    right = list(right) if right is not None else [False] + [True] * (cols - 1)

    def esc(cell: str) -> str:
        return str(cell).replace("|", "\\|")

    out = [
        "| " + " | ".join(esc(h) for h in header) + " |",
        "|" + "|".join("---:" if r else ":---" for r in right) + "|",
    ]
    out += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    """Escape LaTeX special characters."""
    return "".join(_LATEX.get(ch, ch) for ch in str(text))


def to_latex(header: Sequence[str], rows: Sequence[Sequence[str]], caption: str = "", label: str = "") -> str:
    """A booktabs ``table``; cells are emitted verbatim (escape them with :func:`latex_escape` first)."""
    cols = len(header)
    out = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{l" + "r" * (cols - 1) + "}", r"\toprule"]
    out.append(" & ".join(header) + r" \\")
    out.append(r"\midrule")
    out += [" & ".join(row) + r" \\" for row in rows]
    out += [r"\bottomrule", r"\end{tabular}"]
    if caption:
        out.append(r"\caption{" + caption + "}")
    if label:
        out.append(r"\label{" + label + "}")
    out.append(r"\end{table}")
    return "\n".join(out)
