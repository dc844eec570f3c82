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
        lambda: None, lambda: rng.random() < 0.5, lambda: rng.randint(-(10**30), 10**30),
        lambda: rng.choice([0.1, -0.0, math.inf, -math.inf, 1e-310, rng.random()]),
        lambda: complex(rng.random(), -1.5), lambda: "".join(chr(rng.randint(0, 0x10FFFF)) for _ in range(5)),
        lambda: bytes(rng.randrange(256) for _ in range(4)), lambda: bytearray(b"\x00\xff"),
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
    fds: list[int] = []

    def start(script: list[Any], module: Any = None) -> dict[str, Any]:
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        fds.extend([req_r, req_w, resp_r, resp_w])
        description = module or {"functions": [["f", "doc"]], "exceptions": [], "values": [], "opaque": []}

        def serve() -> None:
            answers = [["module", description], *script]
            for answer in answers:
                if plain.recv(req_r) is None:
                    return
                if isinstance(answer, bytes):
                    os.write(resp_w, answer)
                else:
                    plain.send(resp_w, answer)
            os.close(resp_w)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        threads.append(thread)
        remote._state.clear()
        remote._state["fds"] = (req_w, resp_r)
        namespace: dict[str, Any] = {}
        remote.install("stats", namespace)
        return namespace

    yield start
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
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
        "exceptions": [["EmptyError", [["stats", "EmptyError"], ["builtins", "ValueError"], ["builtins", "Exception"]]]],
        "values": [["LIMIT", plain.encode(3)]],
        "opaque": ["Median"],
    }
    raised = [
        ["raise", {"mro": [["stats", "EmptyError"]], "args": [plain.encode("empty")], "text": "empty"}, [], "", ""],
        ["raise", {"mro": [["json.decoder", "JSONDecodeError"], ["builtins", "ValueError"]], "args": [], "text": "x"}, [], "", ""],
        ["raise", {"mro": [["builtins", "SystemExit"]], "args": [plain.encode(0)], "text": "0"}, [], "", ""],
    ]
    ns = candidate(raised, module)
    assert issubclass(ns["EmptyError"], ValueError) and ns["LIMIT"] == 3
    with pytest.raises(ns["EmptyError"], match="empty"):
        ns["f"]([])
    with pytest.raises(ValueError):
        ns["f"]("{")
    with pytest.raises(remote.CandidateProcessError, match="SystemExit"):
        ns["f"]()
    with pytest.raises(TypeError, match="not a function or plain data"):
        ns["Median"]()


def test_mutations_are_copied_into_the_callers_objects(candidate: Callable[..., dict[str, Any]]) -> None:
    ns = candidate([["return", ["n"], [[0, plain.encode([1, 2, 3])], [1, plain.encode("not a list")]], "", ""]])
    xs, ys = [3, 1, 2], [9]
    ns["f"](xs, ys)
    assert (xs, ys) == ([1, 2, 3], [9])  # a mutation of the wrong type is ignored


def test_unsendable_arguments_are_a_type_error(candidate: Callable[..., dict[str, Any]]) -> None:
    ns = candidate([])
    with pytest.raises(TypeError, match="cannot send"):
        ns["f"](lambda x: x)


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


def test_the_candidate_side_sends_honest_equivalents_of_a_few_common_types() -> None:
    """A right answer that returns a Counter, an IntEnum member or (with numpy) a numpy scalar where the reference
    returns plain values must still compare equal on the test side; a plain Enum member (unequal to its value) and
    an OrderedDict (order-sensitive) are not converted."""
    import collections
    import enum

    class Level(enum.IntEnum):
        LOW = 1

    class Colour(enum.Enum):
        RED = 1

    def sent(value: Any) -> Any:
        return plain.decode(plain.loads(plain.dumps(plain.encode(value, lenient=True))))

    assert sent(collections.Counter("aab")) == {"a": 2, "b": 1}
    assert sent([Level.LOW]) == [1] and type(sent(Level.LOW)) is int
    for value in (Colour.RED, collections.OrderedDict(a=1)):
        with pytest.raises(plain.Unsupported):
            plain.encode(value, lenient=True)
    with pytest.raises(plain.Unsupported):
        plain.encode(collections.Counter("a"))  # the test side sends only exact built-ins
    numpy = pytest.importorskip("numpy")
    assert type(sent(numpy.float64(2.5))) is float and sent(numpy.int64(3)) == 3
    with pytest.raises(plain.Unsupported):
        plain.encode(numpy.array([1, 2]), lenient=True)


def test_reserved_module_names_and_unknown_modes_are_refused(tmp_path: Any) -> None:
    from deltap.checkers.pytest_checker import PytestChecker
    from deltap.errors import DeltapError

    test_file = tmp_path / "test_x.py"
    test_file.write_text("def test_x():\n    pass\n")
    with pytest.raises(DeltapError, match="reserved"):
        PytestChecker(test_file, "deltap_plain")
    with pytest.raises(DeltapError, match="candidate_process must be one of auto, separate, shared"):
        PytestChecker(test_file, "x", candidate_process="remote")
