"""``deltap._io.yaml_loads``: libyaml's safe loader where PyYAML has it, one-line errors naming file and line."""

from __future__ import annotations

import pytest
import yaml

from deltap._io import yaml_loads
from deltap.errors import FormatError

TEXT = "pairs:\n- id: q1\n  yes_word: YES\n  score: 1.5e-3\n  when: 2024-01-02\n  tags: [a, 'b c']\n"


def test_reads_what_safe_load_reads() -> None:
    assert yaml_loads(TEXT, "x.yaml") == yaml.safe_load(TEXT)


def test_refuses_python_tags_as_safe_load_does() -> None:
    with pytest.raises(FormatError, match=r"^x\.yaml:1: invalid YAML: could not determine a constructor"):
        yaml_loads("!!python/object/apply:os.system ['true']\n", "x.yaml")


@pytest.mark.parametrize(
    ("first_line", "expected"),
    [(1, "x.yaml:3: invalid YAML: expected ',' or ']'"), (5, "x.yaml:7: invalid YAML: expected ',' or ']'")],
)
def test_a_syntax_error_names_the_line_in_the_pure_python_parsers_words(first_line: int, expected: str) -> None:
    with pytest.raises(FormatError) as info:
        yaml_loads("a: 1\nb: [1, 2\n", "x.yaml", first_line=first_line)
    assert str(info.value).startswith(expected)
    assert "\n" not in str(info.value)


def test_a_reader_error_keeps_its_first_line_and_the_callers_words() -> None:
    with pytest.raises(FormatError) as info:
        yaml_loads("a: \x07\n", "x.yaml", what="invalid YAML front matter")
    assert (
        str(info.value)
        == "x.yaml: invalid YAML front matter: unacceptable character #x0007: special characters are not allowed"
    )
