"""The plan table's case column never cuts an id mid-word (issue 36: "stdlib:p_f…ools_remember_results")."""

import re

from deltap.mining.plan import case_id_column

IDS = [
    "stdlib:p_functools_remember_results",
    "stdlib:p_json_dict_to_text",
    "stdlib:p_textwrap_source_indent_code_block_helper",
]


def _words(text: str) -> set[str]:
    return {w for w in re.split(r"[_.:/\-#…]", text) if w}


def test_long_ids_lose_their_shared_prefix_to_the_header_and_are_cut_between_words_only() -> None:
    shown, head = case_id_column(IDS, 30)
    assert head == "case (stdlib:p_…)"
    assert shown[:2] == ["functools_remember_results", "json_dict_to_text"]
    for full, cell in zip(IDS, shown, strict=True):
        assert len(cell) <= 30
        assert _words(cell) <= _words(full)  # every word shown is a whole word of the id


def test_ids_that_fit_are_left_alone() -> None:
    assert case_id_column(["q1", "q2"], 30) == (["q1", "q2"], "case")
