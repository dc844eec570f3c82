#!/usr/bin/env bash
# Mutation testing of the label-critical modules with mutmut 3 (configuration: [tool.mutmut] in pyproject.toml;
# how to read the results and the survivors judged equivalent: docs/mutation.md). CPU-heavy; never run in CI.
#
# Usage: scripts/mutation.sh [MODULE ...]        e.g. scripts/mutation.sh deltap.mining.verdicts deltap.qrels
#   With no MODULE, every module of the list below, one after the other. Results accumulate in mutants/ (git-ignored);
#   `rm -rf mutants` starts afresh (needed after changing tests: mutmut re-runs only mutants of changed functions).
# Environment:
#   PYTHON  the interpreter with deltap's dev dependencies and mutmut (default: python)
#   JOBS    parallel mutants (default: 2)
#   LOCK    a file to hold with flock(1) while each module runs (a shared machine's "one heavy job at a time")
#   SUMMARY_ONLY=1  print the table from the results already in mutants/ without running anything
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python}"
DEFAULT_MODULES=(
  deltap.mining.verdicts deltap.mining.estimate deltap.checkers.string_match deltap.checkers.extract
  deltap.evaluation.ranking deltap.checkers.choice deltap.checkers.regex deltap.checkers deltap.checkers.base
  deltap.checkers.python_callable deltap.mining.empirical_null deltap.mining.adaptive deltap.mining.design
  deltap.mining.pool deltap.qrels deltap.judgements deltap.dataset
)
modules=("$@")
[ ${#modules[@]} -eq 0 ] && modules=("${DEFAULT_MODULES[@]}")

if [ -z "${SUMMARY_ONLY:-}" ]; then
  "$PY" -c "import mutmut" 2>/dev/null || { echo "mutmut is not installed for $PY: pip install 'mutmut>=3.8'" >&2; exit 2; }
  mkdir -p mutants
  for mod in "${modules[@]}"; do
    lock=()
    [ -n "${LOCK:-}" ] && lock=(flock "$LOCK")
    echo "== $mod" >&2
    # "x*": the mangled names of the module's own functions and methods (deltap.checkers.x* is the package's
    # __init__, not its submodules).
    if ! "${lock[@]}" "$PY" -m mutmut run --max-children "${JOBS:-2}" "$mod.x*" > "mutants/run-$mod.log" 2>&1; then
      # A module whose only functions are decorated (mutmut 3 leaves those alone: checkers.base's property) or that
      # has none has no mutant to run: say so and go on with the next module.
      if grep -q "Filtered for specific mutants, but nothing matches" "mutants/run-$mod.log"; then
        echo "$mod: no mutants (mutmut mutates no function of it)" >&2
        continue
      fi
      echo "mutmut failed for $mod (see mutants/run-$mod.log)" >&2; tail -5 "mutants/run-$mod.log" >&2; exit 1
    fi
  done
fi

# Score per module. Survivors listed in docs/mutation.md as equivalent (`deltap...__mutmut_N`) are not counted.
SUMMARY_PY=$(cat <<'PYEOF'
import re
import sys
from collections import Counter
from pathlib import Path

modules = sys.argv[1:]
doc = Path("docs/mutation.md")
text = doc.read_text(encoding="utf-8") if doc.exists() else ""
names = r"`(deltap\.[^`]*__mutmut_\d+)`"
equivalent = set(re.findall(names, text))
# The section "## Numerically equivalent" lists mutants that change results only below the algorithm's own
# resolution: counted as equivalent in "score", as survivors in "strict".
section = re.search(r"^## Numerically equivalent.*?(?=^## |\Z)", text, re.S | re.M)
numerical = set(re.findall(names, section.group(0))) if section else set()
rows: dict[str, Counter[str]] = {m: Counter() for m in modules}
survivors: list[str] = []
for line in sys.stdin:
    if ":" not in line:
        continue
    name, status = (s.strip() for s in line.rsplit(":", 1))
    module = name.split(".x", 1)[0] if ".x" in name else name
    if module not in rows:
        continue
    if status == "survived" and name in equivalent:
        status = "equivalent"
        if name in numerical:
            rows[module]["numerical"] += 1
    rows[module][status] += 1
    if status in ("survived", "no tests", "suspicious", "timeout"):
        survivors.append(f"{status:>10}  {name}")
print(f"{'module':34} {'mutants':>7} {'killed':>6} {'equiv':>5} {'(num)':>5} {'surv':>4} {'other':>5} {'score':>7} {'strict':>7}")
tot: Counter[str] = Counter()


def row(label: str, c: Counter[str]) -> None:
    n = sum(v for k, v in c.items() if k != "numerical")  # "numerical" is a subset of "equivalent"
    other = n - c["killed"] - c["equivalent"] - c["survived"]
    denom, strict = n - c["equivalent"], n - c["equivalent"] + c["numerical"]
    score = f"{100 * c['killed'] / denom:.1f}%" if denom else "-"
    score_strict = f"{100 * c['killed'] / strict:.1f}%" if strict else "-"
    print(f"{label:34} {n:7d} {c['killed']:6d} {c['equivalent']:5d} {c['numerical']:5d} {c['survived']:4d} {other:5d} "
          f"{score:>7} {score_strict:>7}")


for m, c in rows.items():
    row(m, c)
    tot.update(c)
row("total", tot)
print("score = killed / (mutants - equivalent); strict: the numerically equivalent counted as survivors; "
      "'other' = no tests, timeout, suspicious, skipped, not checked")
if survivors:
    print("\nnot killed (and not listed as equivalent in docs/mutation.md):")
    print("\n".join(sorted(survivors)))
PYEOF
)
"$PY" -m mutmut results --all true | "$PY" -c "$SUMMARY_PY" "${modules[@]}"
