"""The qrels audit: counts on a hand-made dataset, the CSV/JSON export, ``deltap audit``, and the report sections."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from deltap.dataset import write_dataset
from deltap.errors import DeltapError, FormatError
from deltap.evaluation.audit import AUDIT_COLUMNS, audit_qrels
from deltap.report import load_run_dir, render_html, render_markdown
from tests.helpers import run_cli
from tests.unit.evaluation.test_signed_utility import hand_dataset
from tests.unit.report.test_contract_fixture import write_contract_run


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    ds = hand_dataset()
    ds.pairs[0]["metadata"]["missing_gold"] = ["gone.Symbol"]
    root = tmp_path / "run"
    root.mkdir()
    write_dataset(ds, root / "retrieval_dataset.yaml")
    return root


def test_counts_per_question_and_total(run_dir: Path) -> None:
    audit = audit_qrels(run_dir)
    q1, q2 = audit.questions
    # q1: gold a (relevant), h (harmful), n (irrelevant), u (undecided); gone.Symbol never tried; r (retrieved)
    # found relevant outside the gold; c1/c2 undecided and p1 irrelevant are not counted anywhere.
    assert q1.counts() == {
        "gold": 4, "gold_relevant": 1, "gold_irrelevant": 1, "gold_harmful": 1, "gold_undecided": 1,
        "gold_not_tried": 1, "found_relevant_outside_gold": 1, "found_harmful_outside_gold": 0,
        "gold_undecided_likely_helps": 0,
    }  # fmt: skip
    assert q1.found_relevant == {"r": "retrieved"} and q1.gold_not_tried == ("gone.Symbol",)
    assert q2.counts() == {
        "gold": 3, "gold_relevant": 1, "gold_irrelevant": 0, "gold_harmful": 1, "gold_undecided": 1,
        "gold_not_tried": 0, "found_relevant_outside_gold": 0, "found_harmful_outside_gold": 0,
        "gold_undecided_likely_helps": 0,
    }  # fmt: skip
    assert audit.totals == {
        "gold": 7, "gold_relevant": 2, "gold_irrelevant": 1, "gold_harmful": 2, "gold_undecided": 2,
        "gold_not_tried": 1, "found_relevant_outside_gold": 1, "found_harmful_outside_gold": 0,
        "gold_undecided_likely_helps": 0,
    }  # fmt: skip
    assert audit.questions_with_missing_judgements == 1
    assert audit.summary().startswith(
        "Of 7 gold documents tried over 2 questions, 2 were confirmed relevant (29%), 1 proven irrelevant, 2 found "
        "harmful and 2 left undecided. 1 gold documents could not be tried (not in the corpus). Outside the gold, 1 "
        "documents were found relevant in 1 questions"
    )


def test_undecided_gold_that_likely_helps_by_its_graded_label_is_counted() -> None:
    # issue 35 item 5: the gate left gold u undecided; its graded label (gold prior) says it likely helps. A graded
    # label with a high lfsr, or on a decided or non-gold document, is not counted.
    ds = hand_dataset()
    likely = {"gold": {"utility": 0.8, "ci": [0.1, 1.5], "lfsr": 0.02, "grade": 8}}
    unclear = {"gold": {"utility": 0.3, "ci": [-0.4, 1.0], "lfsr": 0.3, "grade": 0}}
    for c in ds.pairs[0]["candidates"]:
        if c["doc_id"] in ("u", "a", "c1"):
            c["graded"] = likely
    for c in ds.pairs[1]["candidates"]:
        if c.get("verdict") == "undecided" and "gold" in c.get("source", []):
            c["graded"] = unclear
    audit = audit_qrels(ds)
    assert audit.questions[0].gold_likely_helps == ("u",) and audit.questions[1].gold_likely_helps == ()
    assert audit.totals["gold_undecided_likely_helps"] == 1
    assert "Of the undecided ones, 1 likely help by their graded label" in audit.summary()
    assert "likely helps" in audit.to_table() and audit.to_dict()["questions"][0]["gold_undecided_likely_helps"] == [
        "u"
    ]


def test_outside_gold_harmful_is_counted(run_dir: Path) -> None:
    ds = hand_dataset()
    ds.pairs[1]["candidates"].append(
        {"doc_id": "dx", "source": ["placebo"], "verdict": "harmful", "delta_p": -0.2, "grade": 0}
    )
    audit = audit_qrels(ds)
    assert audit.questions[1].found_harmful == {"dx": "placebo"}
    assert audit.totals["found_harmful_outside_gold"] == 1


def test_export_csv_and_json(run_dir: Path) -> None:
    audit = audit_qrels(run_dir / "retrieval_dataset.yaml")
    paths = audit.write(run_dir / "audit")
    assert paths["csv"].read_text(encoding="utf-8").splitlines() == [
        ",".join(AUDIT_COLUMNS),
        "q1,4,1,1,1,1,1,1,0,0",
        "q2,3,1,0,1,1,0,0,0,0",
        "TOTAL,7,2,1,2,2,1,1,0,0",
    ]
    data = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert data["totals"]["gold_harmful"] == 2
    assert data["questions"][0]["gold"] == {"a": "relevant", "h": "harmful", "n": "irrelevant", "u": "undecided"}
    assert data["questions"][0]["found_relevant_outside_gold"] == {"r": "retrieved"}


def test_golden_against_the_report_reader(tmp_path: Path) -> None:
    """The report's own dataset reader (an independent parser) gives the same gold verdict counts."""
    root = write_contract_run(tmp_path / "contract")
    audit = audit_qrels(root)
    data = load_run_dir(root)
    gold = Counter(c.verdict for case in data.cases for c in case.candidates if "gold" in c.sources)
    outside = sum(
        1 for case in data.cases for c in case.candidates if "gold" not in c.sources and c.verdict == "relevant"
    )
    t = audit.totals
    assert t["gold"] == sum(gold.values()) > 0
    assert {v: t[f"gold_{v}"] for v in ("relevant", "irrelevant", "harmful", "undecided")} == {
        v: gold.get(v, 0) for v in ("relevant", "irrelevant", "harmful", "undecided")
    }
    assert t["found_relevant_outside_gold"] == outside


def test_cli_audit_prints_and_exports(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "audit", str(run_dir))
    assert code == 0, err
    assert "TOTAL" in out and "Of 7 gold documents" in out
    assert (run_dir / "audit" / "audit.csv").is_file() and (run_dir / "audit" / "audit.json").is_file()
    code, out, _ = run_cli(capsys, "audit", str(run_dir), "-f", "json", "-o", "-")
    assert code == 0 and json.loads(out)["totals"]["gold"] == 7


@pytest.mark.parametrize(
    ("make", "message"),
    [
        pytest.param(lambda p: p / "nowhere", "not found", id="missing"),
        pytest.param(lambda p: p, "has no retrieval_dataset.yaml", id="folder-without-dataset"),
        pytest.param(
            lambda p: (p / "bad.yaml", (p / "bad.yaml").write_text("pairs: [\n", encoding="utf-8"))[0],
            "invalid YAML",
            id="bad-yaml",
        ),
    ],
)
def test_cli_audit_bad_input_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make, message: str
) -> None:  # type: ignore[no-untyped-def]
    code, _, err = run_cli(capsys, "audit", str(make(tmp_path)))
    assert code != 0 and message in err and "Traceback" not in err


def test_library_errors(tmp_path: Path) -> None:
    with pytest.raises(DeltapError, match="not found"):
        audit_qrels(tmp_path / "x.yaml")
    (tmp_path / "d.yaml").write_text("pairs:\n  - id: q1\n", encoding="utf-8")
    with pytest.raises(FormatError, match="candidates"):
        audit_qrels(tmp_path / "d.yaml")


def test_report_sections(run_dir: Path) -> None:
    data = load_run_dir(run_dir)
    html = render_html(data)
    assert '<section id="audit">' in html and 'href="#audit"' in html
    assert "Of 7 gold documents tried over 2 questions" in html
    assert "<td>TOTAL</td><td>7</td><td>2</td><td>1</td><td>2</td><td>2</td><td>1</td><td>1</td><td>0</td>" in html
    md = render_markdown(data)
    assert "## Qrels audit" in md
    assert "| **TOTAL** | **7** | **2** | **1** | **2** | **2** | **1** | **1** | **0** |" in md
