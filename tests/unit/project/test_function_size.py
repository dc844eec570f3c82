"""No function of ``src/deltap`` has a body longer than :data:`MAX_BODY_LINES` lines (issue 25 item 5).

The body is counted from the first line after the ``def …:`` signature (the docstring included) to the function's
last line, so a long typer signature of CLI options does not count, and nested functions count inside their parent
too. A function that must stay long for a while goes into :data:`ALLOWED` with the reason; an entry whose function
has become short enough fails the test, so the list cannot go stale.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src"
PACKAGE = SRC / "deltap"

MAX_BODY_LINES = 120

#: ``module:qualified name`` -> why it may be longer for now
ALLOWED: dict[str, str] = {}  # empty since issue 25 item 1 brought mine_command down to 58 lines


def body_lengths(source: str, module: str) -> dict[str, int]:
    """``{"module:qualified.name": body lines}`` of every function and method in ``source``."""
    lengths: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                end = child.end_lineno or child.body[-1].lineno
                lengths[f"{module}:{name}"] = end - child.body[0].lineno + 1
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return lengths


def package_lengths() -> dict[str, int]:
    lengths: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        lengths.update(body_lengths(path.read_text(encoding="utf-8"), module))
    return lengths


def test_no_function_body_is_longer_than_the_limit() -> None:
    lengths = package_lengths()
    too_long = {name: n for name, n in lengths.items() if n > MAX_BODY_LINES and name not in ALLOWED}
    listing = "\n".join(f"  {name}: {n} lines" for name, n in sorted(too_long.items(), key=lambda kv: -kv[1]))
    assert not too_long, f"functions longer than {MAX_BODY_LINES} lines (split them):\n{listing}"


def test_every_allowed_function_still_exists_and_is_still_too_long() -> None:
    lengths = package_lengths()
    stale = [name for name in ALLOWED if lengths.get(name, 0) <= MAX_BODY_LINES]
    assert not stale, f"remove from ALLOWED (gone, or now within {MAX_BODY_LINES} lines): {stale}"


def test_the_count_starts_after_the_signature_and_includes_nested_and_methods() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_BODY_LINES + 1))
    source = textwrap.dedent(
        '''
        def short(
            a,
            b,
        ):
            """Doc."""
            return a
        '''
    )
    source += f"\nclass K:\n    def method(self):\n{textwrap.indent(body, '    ')}\n"
    source += f"\ndef outer():\n    def inner():\n{textwrap.indent(body, '    ')}\n    return inner\n"
    lengths = body_lengths(source, "m")
    assert lengths["m:short"] == 2  # the docstring and the return, not the four signature lines
    assert lengths["m:K.method"] == MAX_BODY_LINES + 1
    assert lengths["m:outer.inner"] == MAX_BODY_LINES + 1
    assert lengths["m:outer"] == MAX_BODY_LINES + 3  # the inner def line, its body, the return
