"""Same outputs from two source trees: a refactor's proof that behaviour did not change (issue 33 item 5).

Runs three simulated scenarios with each tree's sources first on ``PYTHONPATH`` (the same venv, the same inputs):

* ``demo``   — ``deltap demo --solver simulated --embedder hash --cases 6 --calls 600`` (mining, evaluation, end to
  end, report; 600 calls so that every case gets a relevant document and the qrels are not empty);
* ``mine``   — ``deltap mine`` on the ADK benchmark (``/work/shared/data/adk``) with ``--solver simulated
  --retriever bm25``;
* ``e2e``    — ``deltap endtoend`` on that run directory (``--solver simulated --retriever bm25 --single-doc``).

and compares, file by file, the SHA-256 of what they wrote: the qrels (``qrels/test.tsv``, ``qrels.trec``,
``qrels.jsonl``) byte for byte, ``retrieval_dataset.yaml`` and ``endtoend/results.json`` with their wall-clock fields
masked (``created``, ``started``, ``ended``, ``wall_seconds``: nothing else), and the trial logs' rows and pools
(every column but ``latency`` and ``created``; ``trials.sqlite`` and ``endtoend/trials.sqlite``). Both trees run in
the same folder (``OUT/work``, then moved to ``OUT/base`` / ``OUT/head``), so paths written into the files agree.
Prints one row per file and exits 1 when any differs.

    python benchmarks/bench_identical.py --base /work/scratch/trial/base/src --head src --out /work/scratch/trial/ident
    python benchmarks/bench_identical.py ... --reuse-base     # the base's outputs of an earlier run are kept
    python benchmarks/bench_identical.py ... --local          # 2 ADK cases mined and run end to end with SmolLM2

Run it under the shared lock (a few minutes of CPU: the demo's corpus, two mining runs per tree).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ADK = Path("/work/shared/data/adk")
MASKED = {"created", "started", "ended", "wall_seconds"}  # wall-clock fields, and only those


def scenarios(out: Path, local: bool = False) -> dict[str, list[str]]:
    """``name -> deltap argv`` (run in this order: ``e2e`` reads ``mine``'s run directory). ``local``: the same ADK
    mining and end-to-end run, smaller, with the real local model (its tokenizer counts, its window is fitted)."""
    adk_cases, adk_corpus = str(ADK / "api_understanding.yaml"), str(ADK / "corpus_ranked_targets.yaml")
    if local:
        return {
            "mine": ["mine", adk_cases, "--corpus", adk_corpus, "--out", str(out / "adk"), "--solver", "local",
                     "--retriever", "bm25", "--pilot", "0", "--limit", "2", "--budget", "8", "--outcome", "logprob"],
            "e2e": ["endtoend", str(out / "adk"), adk_cases, "--corpus", adk_corpus, "--solver", "local",
                    "--retriever", "bm25", "--controls", "none,gold,all"],
        }  # fmt: skip
    return {
        "demo": ["demo", "--solver", "simulated", "--embedder", "hash", "--cases", "6", "--calls", "600", "--no-progress",
                 "--out", str(out / "demo")],
        "mine": ["mine", adk_cases, "--corpus", adk_corpus, "--out", str(out / "adk"), "--solver", "simulated",
                 "--retriever", "bm25", "--pilot", "0"],
        "e2e": ["endtoend", str(out / "adk"), adk_cases, "--corpus", adk_corpus, "--solver", "simulated",
                "--retriever", "bm25", "--single-doc"],
    }  # fmt: skip


def outputs(out: Path, local: bool = False) -> dict[str, Path]:
    """``label -> file`` compared between the trees."""
    files: dict[str, Path] = {}
    runs = [("mine", out / "adk")] if local else [("demo", out / "demo" / "run"), ("mine", out / "adk")]
    for run, root in runs:
        for name in ("retrieval_dataset.yaml", "qrels/test.tsv", "qrels.trec", "qrels.jsonl", "trials.sqlite"):
            files[f"{run}: {name}"] = root / name
    if not local:
        files["demo: endtoend/results.json"] = out / "demo" / "run" / "endtoend" / "results.json"
        files["demo: endtoend/trials.sqlite"] = out / "demo" / "run" / "endtoend" / "trials.sqlite"
    files["e2e: endtoend/results.json"] = out / "adk" / "endtoend" / "results.json"
    files["e2e: endtoend/trials.sqlite"] = out / "adk" / "endtoend" / "trials.sqlite"
    return files


def _mask(obj: object) -> object:
    if isinstance(obj, dict):
        return {k: ("<masked>" if k in MASKED else _mask(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_mask(v) for v in obj]
    return obj


def digest(path: Path) -> str:
    """SHA-256 (16 hex) of what the file says: a JSON or YAML file with its wall-clock fields masked, a trial log's
    rows and pools without latency and time, any other file's bytes; ``missing`` when absent."""
    if not path.is_file():
        return "missing"
    if path.suffix == ".json":
        data = json.dumps(_mask(json.loads(path.read_text(encoding="utf-8"))), sort_keys=True).encode()
    elif path.suffix == ".yaml":
        import yaml

        data = json.dumps(_mask(yaml.safe_load(path.read_text(encoding="utf-8"))), sort_keys=True).encode()
    elif path.suffix == ".sqlite":
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        cols = [r[1] for r in con.execute("PRAGMA table_info(trials)") if r[1] not in ("latency", "created")]
        rows = con.execute(f"SELECT {', '.join(cols)} FROM trials ORDER BY case_id, kind, trial_index").fetchall()
        pools = con.execute("SELECT case_id, pool_json FROM pools ORDER BY case_id").fetchall()
        con.close()
        data = json.dumps([cols, rows, pools]).encode()
    else:
        data = path.read_bytes()
    return hashlib.sha256(data).hexdigest()[:16]


def run_tree(src: Path, out: Path, local: bool = False) -> dict[str, float]:
    """Run every scenario with ``src`` first on the path, in ``OUT/work`` (the same folder for both trees), then move
    it to ``out``; returns seconds per scenario."""
    work = out.parent / "work"
    for folder in (work, out):
        if folder.exists():
            shutil.rmtree(folder)
    work.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(src.resolve()), "NO_COLOR": "1"}
    took: dict[str, float] = {}
    for name, argv in scenarios(work, local).items():
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "deltap", *argv], env=env, capture_output=True, text=True)
        took[name] = time.perf_counter() - t
        (work / f"{name}.log").write_text(proc.stdout + proc.stderr, encoding="utf-8")
        if proc.returncode != 0:
            sys.exit(f"{src}: deltap {name} failed ({proc.returncode}); see {work / f'{name}.log'}")
    work.rename(out)
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True, help="the base tree's src/ (e.g. a worktree of main)")
    ap.add_argument("--head", type=Path, required=True, help="the changed tree's src/")
    ap.add_argument("--out", type=Path, required=True, help="scratch folder (base/ and head/ are written there)")
    ap.add_argument("--reuse-base", action="store_true", help="keep OUT/base from an earlier run of the same base")
    ap.add_argument("--local", action="store_true", help="the small ADK run with the real local model instead")
    args = ap.parse_args()
    took: dict[str, dict[str, float]] = {}
    for tree, src in (("base", args.base), ("head", args.head)):
        done = args.out / tree / "done.json"
        if tree == "base" and args.reuse_base and done.is_file():
            took[tree] = {"reused": 0.0}
            continue
        took[tree] = run_tree(src, args.out / tree, args.local)
        done.write_text(json.dumps({"src": str(src.resolve()), "seconds": took[tree]}), encoding="utf-8")
    base, head = outputs(args.out / "base", args.local), outputs(args.out / "head", args.local)
    print(f"{'output':<34} {'base':>16} {'head':>16}  same")
    differ = 0
    for label in base:
        a, b = digest(base[label]), digest(head[label])
        same = a == b and a != "missing"
        differ += not same
        print(f"{label:<34} {a:>16} {b:>16}  {'yes' if same else 'NO'}")
    times = " · ".join(f"{t} " + ", ".join(f"{n} {s:.0f} s" for n, s in took[t].items()) for t in took)
    print(f"{len(base) - differ} of {len(base)} identical ({times})")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
