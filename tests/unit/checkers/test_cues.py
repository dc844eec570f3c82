"""The cue helpers (issue 34, session 13): one shape for a cue before a name, one for a cue after it."""

from __future__ import annotations

from deltap.checkers.cues import NEG_BEFORE, REJECT_AFTER, after, before, cue


def test_a_cue_before_a_name_takes_up_to_n_words_and_the_decorations() -> None:
    neg = cue(before(r"\bnot\b", words=2))
    assert neg.search("It is not `")
    assert neg.search("It is not the right `")
    assert not neg.search("It is not the right one for `")  # three words: too far from the name
    assert neg.search("not: **`")  # anything but a word, by default
    marks_only = cue(before(r"\bsuch\s+as", end=r"\s*[`*]*"))
    assert marks_only.search("a wrapper such as `") and not marks_only.search("such as, `")


def test_a_cue_after_a_name_starts_after_its_closing_marks() -> None:
    reject = cue(after(r"\s+won't\s+help\b"))
    assert reject.search("` won't help here") and reject.search("**` won't help")
    assert not reject.search("` surely won't help")
    aside = cue(after(r"\s+won't\s+help\b", aside=True))
    assert aside.search("` (in heapq) won't help") and not reject.search("` (in heapq) won't help")


def test_the_shared_cues_read_as_before() -> None:
    assert NEG_BEFORE.search("Don't use the `") and NEG_BEFORE.search("there's no `")
    assert not NEG_BEFORE.search("Use the `")
    assert REJECT_AFTER.match("` is deprecated; use") and REJECT_AFTER.match("` (old) won't help")
    assert not REJECT_AFTER.match("` is the one")
