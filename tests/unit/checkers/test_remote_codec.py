"""The separate-process mode's codec and test-side proxy against a hostile candidate process (fast, no sandbox).

The test side decodes whatever the candidate's process sends; these tests play that process with real pipes and
check that only exact built-in values ever come back to a test, and that anything else is an exception.
"""

from __future__ import annotations

import importlib
import math
import os
import random
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from deltap.checkers import _plain as plain

# The proxy imports the codec by the name it has inside the sandbox.
sys.modules.setdefault("deltap_plain", plain)
remote = importlib.import_module("deltap.checkers._remote_module")

PLAIN_TYPES = {type(None), bool, int, float, complex, str, bytes, bytearray, list, tuple, dict, set, frozenset}


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    leaves: list[Callable[[], Any]] = [
        lambda: None,
        lambda: rng.random() < 0.5,
        lambda: rng.randint(-(10**30), 10**30),
        lambda: rng.choice([0.1, -0.0, math.inf, -math.inf, 1e-310, rng.random()]),
        lambda: complex(rng.random(), -1.5),
        lambda: "".join(chr(rng.randint(0, 0x10FFFF)) for _ in range(5)),
        lambda: bytes(rng.randrange(256) for _ in range(4)),
        lambda: bytearray(b"\x00\xff"),
    ]
    if depth > 3 or rng.random() < 0.4:
        return rng.choice(leaves)()
    kind = rng.choice(["list", "tuple", "dict", "set", "frozenset"])
    if kind in ("set", "frozenset"):
        items = {rng.randint(0, 99) for _ in range(3)} | {"k", (1, "t")}
        return set(items) if kind == "set" else frozenset(items)
    children = [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if kind == "dict":
        return {(i, str(i)): c for i, c in enumerate(children)}
    return children if kind == "list" else tuple(children)


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a.hex() == b.hex()
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def test_plain_values_round_trip_exactly() -> None:
    rng = random.Random(15)
    for _ in range(300):
        value = _random_value(rng)
        back = plain.decode(plain.loads(plain.dumps(plain.encode(value))))
        assert _same(value, back), (value, back)
    nan = plain.decode(plain.encode(math.nan))
    assert type(nan) is float and math.isnan(nan)


class _Liar:
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


class _Float(float):
    pass


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(_Liar(), id="object"),
        pytest.param(_Float(2.5), id="float-subclass"),
        pytest.param(True.__class__.__mro__, id="tuple-of-types"),
        pytest.param(iter([1]), id="iterator"),
        pytest.param([1, {"k": _Liar()}], id="nested-object"),
    ],
)
def test_only_exact_builtins_are_encoded(value: Any) -> None:
    with pytest.raises(plain.Unsupported):
        plain.encode(value)


def test_cycles_and_depth_are_unsupported() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(plain.Unsupported):
        plain.encode(cycle)


@pytest.mark.parametrize(
    "node",
    [
        pytest.param(5, id="bare-int"),
        pytest.param(["i", 5], id="int-not-a-string"),
        pytest.param(["i", "9" * 5000], id="int-too-long"),
        pytest.param(["x", "1"], id="unknown-tag"),
        pytest.param(["f", "not hex"], id="bad-float"),
        pytest.param(["S", [["l", []]]], id="unhashable-set-member"),
        pytest.param(["d", [[["l", []], ["n"]]]], id="unhashable-key"),
        pytest.param(["d", [["n"]]], id="not-a-pair"),
        pytest.param(["l"] + [["l", []]], id="two-payloads"),
        pytest.param(["n", 1], id="none-with-payload"),
    ],
)
def test_malformed_values_are_value_errors(node: Any) -> None:
    with pytest.raises(ValueError):
        plain.decode(node)


def test_deep_nesting_is_a_value_error() -> None:
    node: Any = ["n"]
    for _ in range(plain.MAX_DEPTH + 5):
        node = ["l", [node]]
    with pytest.raises(ValueError):
        plain.decode(node)
    with pytest.raises(ValueError):
        plain.loads(b"[" * 100_000)


def test_an_oversized_frame_is_refused_before_it_is_read() -> None:
    r, w = os.pipe()
    try:
        os.write(w, (plain.MAX_FRAME + 1).to_bytes(4, "big"))
        with pytest.raises(ValueError, match="frame of"):
            plain.recv(r)
        os.write(w, (10).to_bytes(4, "big") + b"[1")
        os.close(w)
        w = -1
        with pytest.raises(ValueError, match="truncated"):
            plain.recv(r)
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)


# -- the proxy against a scripted candidate process ------------------------------------------------------------------


@pytest.fixture()
def candidate() -> Iterator[Callable[[list[Any]], dict[str, Any]]]:
    """Install the proxy against a fake candidate process that answers the import with ``module`` and then each
    request with the next scripted answer (raw frames). Yields a function taking the script, returning the module."""
    threads: list[threading.Thread] = []
    ends: list[tuple[int, int, int, int]] = []

    def start(script: list[Any], module: Any = None) -> dict[str, Any]:
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        ends.append((req_r, req_w, resp_r, resp_w))
        description = module or {"functions": [["f", "doc"]], "exceptions": [], "values": [], "opaque": []}

        def serve() -> None:  # owns req_r and resp_w: closes them itself, so no descriptor is closed twice
            answers = [["module", description], *script]
            try:
                for answer in answers:
                    if plain.recv(req_r) is None:
                        return
                    if isinstance(answer, bytes):
                        os.write(resp_w, answer)
                    else:
                        plain.send(resp_w, answer)
            except (OSError, ValueError):
                return
            finally:
                os.close(resp_w)  # end of the script: the "process" ends
                os.close(req_r)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        threads.append(thread)
        remote._state.clear()
        remote._state["fds"] = (req_w, resp_r)
        namespace: dict[str, Any] = {}
        remote.install("stats", namespace)
        return namespace

    yield start
    for _req_r, req_w, resp_r, _resp_w in ends:
        os.close(req_w)  # the serving thread sees end of file and closes its ends
        os.close(resp_r)
    for thread in threads:
        thread.join(timeout=10)
    remote._state.clear()


def test_a_plain_answer_comes_back_as_exact_builtins(candidate: Callable[..., dict[str, Any]]) -> None:
    ns = candidate([["return", plain.encode([2.5, {"a": (1,)}]), [], "printed\n", ""]])
    value = ns["f"]([4, 1, 3, 2])
    assert value == [2.5, {"a": (1,)}] and type(value[0]) is float


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(["return", ["object", "Liar"], [], "", ""], id="unknown-tag"),
        pytest.param(["return", plain.encode(1)], id="short-return"),
        pytest.param(["verdict", "pass"], id="unknown-kind"),
        pytest.param({"return": 1}, id="not-a-list"),
        pytest.param(b"\x00\x00\x00\x05[[[[[", id="bad-json"),
        pytest.param(b"\xff\xff\xff\xff", id="huge-frame"),
    ],
)
def test_a_hostile_answer_is_an_exception_never_a_value(candidate: Callable[..., dict[str, Any]], answer: Any) -> None:
    ns = candidate([answer])
    with pytest.raises((remote.CandidateProcessError, TypeError)):
        ns["f"](1)


def test_the_process_ending_fails_every_later_call(candidate: Callable[..., dict[str, Any]]) -> None:
    ns = candidate([])
    for _ in range(2):
        with pytest.raises(remote.CandidateProcessError, match="ended"):
            ns["f"](1)


def test_exceptions_map_to_builtins_and_mirrors(candidate: Callable[..., dict[str, Any]]) -> None:
    module = {
        "functions": [["f", None]],
        "exceptions": [
            ["EmptyError", [["stats", "EmptyError"], ["builtins", "ValueError"], ["builtins", "Exception"]]]
        ],
        "values": [["LIMIT", plain.encode(3)]],
        "opaque": ["Median"],
    }
    raised = [
        ["raise", {"mro": [["stats", "EmptyError"]], "args": [plain.encode("empty")], "text": "empty"}, [], "", ""],
        [
            "raise",
            {"mro": [["json.decoder", "JSONDecodeError"], ["builtins", "ValueError"]], "args": [], "text": "x"},
            [],
            "",
            "",
        ],
        ["raise", {"mro": [["builtins", "SystemExit"]], "args": [plain.encode(0)], "text": "0"}, [], "", ""],
    ]
    ns = candidate(raised, module)
    assert issubclass(ns["EmptyError"], ValueError) and ns["LIMIT"] == 3
    with pytest.raises(ns["EmptyError"], match="empty"):
        ns["f"]([])
    with pytest.raises(ValueError):
        ns["f"]("{")
    with pytest.raises(SystemExit) as exit_info:  # a SystemExit stays one: pytest.raises(Exception) cannot take it
        ns["f"]()
    assert exit_info.value.code == 0
    with pytest.raises(remote.CandidateFailure, match="cannot be used from the separate process"):
        ns["Median"]()


def test_mutations_are_copied_into_the_callers_objects(candidate: Callable[..., dict[str, Any]]) -> None:
    ns = candidate([["return", ["n"], [[0, plain.encode([1, 2, 3])], [1, plain.encode("not a list")]], "", ""]])
    xs, ys = [3, 1, 2], [9]
    ns["f"](xs, ys)
    assert (xs, ys) == ([1, 2, 3], [9])  # a mutation of the wrong type is ignored


def test_unsendable_arguments_fail_the_test_uncatchably(candidate: Callable[..., dict[str, Any]]) -> None:
    """An object of the test's own (non-callable) class cannot cross: the test fails with a ``CandidateFailure``,
    which ``pytest.raises(TypeError)`` (what a test may expect of a bad argument) does not take."""
    ns = candidate([])
    with pytest.raises(remote.CandidateFailure, match="cannot send"):
        ns["f"](object())
    assert not issubclass(remote.CandidateFailure, Exception)


def test_the_codec_builds_nothing_but_plain_types() -> None:
    rng = random.Random(7)
    pieces: list[Any] = [["n"], ["b", True], ["i", "1"], ["s", "x"], ["l", []], ["d", []], ["t", []], 1, "s", None]

    def random_node(depth: int) -> Any:
        if depth > 4 or rng.random() < 0.3:
            return rng.choice(pieces)
        tag = rng.choice(["l", "t", "S", "F", "d", "x"])
        if tag == "d":
            return ["d", [[random_node(depth + 1), random_node(depth + 1)] for _ in range(rng.randint(0, 3))]]
        return [tag, [random_node(depth + 1) for _ in range(rng.randint(0, 3))]]

    def types_in(value: Any) -> set[type]:
        found = {type(value)}
        if isinstance(value, list | tuple | set | frozenset):
            for v in value:
                found |= types_in(v)
        if isinstance(value, dict):
            for k, v in value.items():
                found |= types_in(k) | types_in(v)
        return found

    decoded = 0
    for _ in range(2000):
        try:
            value = plain.decode(random_node(0))
        except ValueError:
            continue
        decoded += 1
        assert types_in(value) <= PLAIN_TYPES
    assert decoded > 100


def test_values_keep_their_type_across_the_pipe() -> None:
    """Counters, ordered and default dicts and numpy values arrive as themselves (so ``is True``, ``isinstance(x,
    int)`` and dtype checks behave as on the candidate's side); an enum member or another object is not plain data
    (it crosses only as a proxy, through the hook)."""
    import collections
    import enum

    class Colour(enum.IntEnum):
        RED = 1

    def sent(value: Any) -> Any:
        return plain.decode(plain.loads(plain.dumps(plain.encode(value))))

    for value in (collections.Counter("aab"), collections.OrderedDict(b=1, a=2), collections.defaultdict(list, a=[1])):
        back = sent(value)
        assert type(back) is type(value) and back == value and list(back) == list(value)
    assert sent(collections.defaultdict(list)).default_factory is list
    with pytest.raises(plain.Unsupported):
        plain.encode(collections.defaultdict(lambda: 0))
    with pytest.raises(plain.Unsupported):
        plain.encode(Colour.RED)
    numpy = pytest.importorskip("numpy")
    flag = sent(numpy.int64(4) % 2 == 0)
    assert type(flag) is numpy.bool_ and flag is not True and bool(flag) is True
    count = sent(numpy.int64(3))
    assert type(count) is numpy.int64 and not isinstance(count, int) and count == 3
    grid = sent(numpy.arange(6, dtype=numpy.float32).reshape(2, 3))
    assert grid.dtype == numpy.float32 and grid.shape == (2, 3) and grid.tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(plain.Unsupported):
        plain.encode(numpy.array([object()]))


@pytest.mark.parametrize(
    "node",
    [
        pytest.param(["N", "|O", None, "00" * 8], id="object-dtype"),
        pytest.param(["N", "<i8", [2], "00" * 8], id="wrong-size"),
        pytest.param(["N", "<i8", [-1], ""], id="negative-shape"),
        pytest.param(["N", "V8", None, "00" * 8], id="void-dtype"),
        pytest.param(["D", "eval", []], id="defaultdict-factory-by-name"),
        pytest.param(["P", 1, "object"], id="reference-without-hook"),
    ],
)
def test_malformed_typed_values_are_value_errors(node: Any) -> None:
    pytest.importorskip("numpy")
    with pytest.raises(ValueError):
        plain.decode(node)


def test_nested_in_place_changes_reach_the_objects_the_test_holds(candidate: Callable[..., dict[str, Any]]) -> None:
    after = plain.encode([[1, 0], [2, 0], [3]])
    ns = candidate([["return", ["n"], [[0, after], ["d", plain.encode({"a": [1, 1], "b": {"c": [5]}})]], "", ""]])
    row, inner, deep = [1], [1], [4]
    grid, d = [row, [2]], {"a": inner, "b": {"c": deep}}
    ns["f"](grid, d=d)
    assert grid == [[1, 0], [2, 0], [3]] and row == [1, 0] and grid[0] is row
    assert d == {"a": [1, 1], "b": {"c": [5]}} and inner == [1, 1] and deep == [5]


def test_a_returned_exception_is_a_value_not_a_raise(candidate: Callable[..., dict[str, Any]]) -> None:
    exc = [
        "X",
        {"mro": [["builtins", "ValueError"], ["builtins", "Exception"]], "args": [plain.encode("bad")], "text": "bad"},
    ]
    ns = candidate([["return", exc, [], "", ""]])
    value = ns["f"]("x")
    assert type(value) is ValueError and value.args == ("bad",)


@pytest.mark.parametrize(
    ("answer", "what"),
    [
        pytest.param(["unsupported", "return value (a generator)", "", ""], "cannot cross", id="cannot-cross"),
        pytest.param(
            ["raise", {"mro": [["builtins", "KeyboardInterrupt"]], "args": [], "text": ""}, [], "", ""],
            "KeyboardInterrupt",
            id="keyboard-interrupt",
        ),
        pytest.param(["return", ["N", "<i8", [3], "00"], [], "", ""], "cannot rebuild", id="bad-value"),
    ],
)
def test_accidents_are_base_exceptions_reported_to_the_plugin(
    candidate: Callable[..., dict[str, Any]], answer: Any, what: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys
    import types

    reported: list[str] = []
    plugin = types.SimpleNamespace(candidate_failure=reported.append)
    monkeypatch.setitem(sys.modules, "deltap_verdict", plugin)
    ns = candidate([answer])
    with pytest.raises(remote.CandidateFailure, match=what):
        try:
            ns["f"](1)
        except Exception:  # noqa: BLE001 - what a test's own ``except Exception`` would do
            pytest.fail("an accident of the candidate was caught as an Exception")
    assert len(reported) == 1 and what in reported[0]


def test_a_callback_runs_in_the_test_process(candidate: Callable[..., dict[str, Any]]) -> None:
    """The candidate gets a reference; its calls come back here (the scripted process calls callback 1 with 20,
    then returns what it got back, ``["R", 1]`` as the callable itself)."""
    calls: list[int] = []

    def double(x: int) -> int:
        calls.append(x)
        return 2 * x

    ns = candidate([["callback", 1, plain.encode([20]), plain.encode({})], ["return", ["R", 1], [], "", ""]])
    got = ns["f"](double)
    assert calls == [20] and got is double


def test_reserved_module_names_and_unknown_modes_are_refused(tmp_path: Any) -> None:
    from deltap.checkers.pytest_checker import PytestChecker
    from deltap.errors import DeltapError

    test_file = tmp_path / "test_x.py"
    test_file.write_text("def test_x():\n    pass\n")
    with pytest.raises(DeltapError, match="reserved"):
        PytestChecker(test_file, "deltap_plain")
    with pytest.raises(DeltapError, match="candidate_process must be one of auto, separate, shared"):
        PytestChecker(test_file, "x", candidate_process="remote")


def test_a_star_import_never_brings_in_builtins_or_pytest_names(candidate: Callable[..., dict[str, Any]]) -> None:
    """``from module import *`` in a test file: stand-ins named like a builtin (``abs``, ``sorted``) or like
    pytest's reserved names (``pytest_plugins``, ``pytest_*`` hooks, ``test*`` functions) must not land in the test
    module, where they would replace the builtin or be read by pytest."""
    module = {
        "functions": [
            ["f", None],
            ["abs", None],
            ["sorted", None],
            ["pytest_collection_modifyitems", None],
            ["test_always", None],
        ],
        "exceptions": [],
        "values": [["pytest_plugins", plain.encode(["pytester"])], ["LIMIT", plain.encode(3)]],
        "opaque": [],
    }
    ns = candidate([], module)
    star = ns.get("__all__", [n for n in ns if not n.startswith("_")])
    assert sorted(star) == ["LIMIT", "f"]
    assert callable(ns["abs"])  # still there for ``module.abs``
