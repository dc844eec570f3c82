"""Hostile bytes on the result channel: ``RunRecords.parse`` classifies them as tampering and never raises.

Fast (no sandbox). The candidate can write anything to the pipe; what reaches the parser without deltap's nonce must
not even be parsed as JSON, and records with the nonce must have the plugin's exact field types.
"""

from __future__ import annotations

import json
import random

import pytest

from deltap.checkers.pytest_checker import RunRecords

NONCE = "0123456789abcdef0123456789abcdef"


def line(**record: object) -> bytes:
    return (json.dumps({"nonce": NONCE, **record}) + "\n").encode()


START = line(kind="start", pid=7)


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b"[" * 200_000 + b"\n", id="nesting-bomb-without-nonce"),
        pytest.param(
            b'{"nonce": "' + NONCE.encode() + b'", "x": ' + b"[" * 200_000 + b"\n", id="nesting-bomb-with-nonce"
        ),
        pytest.param(b'{"nonce": "' + NONCE.encode() + b'", "x": ' + b"9" * 10_000 + b"}\n", id="huge-integer"),
        pytest.param(b'{"nonce": "' + NONCE.encode() + b'", \xff\xfe}\n', id="invalid-utf8"),
        pytest.param(line(kind="collected", ids=5), id="ids-not-a-list"),
        pytest.param(line(kind="collected", ids=[1, 2]), id="ids-not-strings"),
        pytest.param(line(kind="report", id=["x"], when="call", outcome="passed", xfail=False), id="id-not-a-string"),
        pytest.param(line(kind="report", id="t::x", when="later", outcome="passed", xfail=False), id="unknown-phase"),
        pytest.param(line(kind="report", id="t::x", when="call", outcome="great", xfail=False), id="unknown-outcome"),
        pytest.param(line(kind="report", id="t::x", when="call", outcome="passed", xfail="no"), id="xfail-not-bool"),
        pytest.param(line(kind="finish", exitstatus=[0]), id="exitstatus-not-int"),
        pytest.param(line(kind="finish", exitstatus=True), id="exitstatus-bool"),
        pytest.param(line(kind="start", pid="1"), id="pid-not-int"),
        pytest.param(
            b'{"nonce":"' + NONCE.encode() + b'","kind":"finish","exitstatus":0}\n', id="not-the-plugins-spacing"
        ),
    ],
)
def test_hostile_line_is_tampering_not_an_exception(payload: bytes) -> None:
    records = RunRecords.parse(START + payload, NONCE)
    assert records.started and records.tampering, records


def test_random_bytes_never_raise() -> None:
    rng = random.Random(20240615)
    pieces = [b"[", b"{", b'"', b"\n", b"\\", b":", b",", b"\xff", b"0", START, b'{"nonce": "']
    for _ in range(300):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 400)))
        RunRecords.parse(data, NONCE)  # must return


def test_the_plugins_own_records_are_accepted() -> None:
    data = (
        START
        + line(kind="collected", ids=["t.py::a"])
        + b"".join(
            line(kind="report", id="t.py::a", when=w, outcome="passed", xfail=False)
            for w in ("setup", "call", "teardown")
        )
        + line(kind="finish", exitstatus=0)
    )
    records = RunRecords.parse(data, NONCE)
    assert (records.tampering, records.finished, records.exitstatus, records.outcome("t.py::a")) == (
        [],
        True,
        0,
        "passed",
    )
