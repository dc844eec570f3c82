"""The best any null can do on the tilted world: weighted BH with the *true* null of on-topic documents.

No fitting and no engine: logprob_tilted's planted truth drawn directly (10-case datasets of 20 candidates; +4/+3
nats on the two gold documents; 20% of documents move the log-prob by N(0, 1.5²) nats, on-topic ones — gold and
retrieved — by ``scale`` times that; estimates with sampling SE 0.07 nats, about 90 trials at noise 0.3), one-sided
p-values against the exact null of each candidate's source, and the dataset-wide weighted BH step of ``deltap mine``
(gold weight rescaled so the weights average 1). What it shows: in the tilted world, recall comes from the prior
on gold documents, not from the null (benchmarks/README.md, "A null that carries the tilt").

    python benchmarks/bench_oracle_null.py --datasets 2000
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats


def oracle(scale: float, gold_weight: float, datasets: int, seed: int = 0, q: float = 0.05) -> tuple[float, float]:
    """``(FDR, recall)`` of weighted BH with the true null, over ``datasets`` datasets of 10 cases."""
    rng = np.random.default_rng(seed)
    n, m, sd, share, se = 10, 20, 1.5, 0.2, 0.07
    on = np.arange(m) < 15  # 2 gold + 13 retrieved on the topic, 5 random placebos
    eff = np.zeros(m)
    eff[0], eff[1] = 4.0, 3.0
    w = np.ones(m)
    w[:2] = gold_weight
    w = w * m / w.sum()
    fdp, rec = [], []
    for _ in range(datasets):
        text = sd * rng.standard_normal((n, m)) * (rng.random((n, m)) < share)
        text[:, on] *= scale
        b = eff + text + se * rng.standard_normal((n, m))
        spread = np.where(on, sd * scale, sd)
        p = (1 - share) * stats.norm.sf(b / se) + share * stats.norm.sf(b / np.hypot(spread, se))
        pw = (p / w).ravel()
        order = np.sort(pw)
        ok = np.nonzero(order <= q * np.arange(1, pw.size + 1) / pw.size)[0]
        rej = (pw <= (order[ok.max()] if ok.size else -1.0)).reshape(n, m)
        tp, fp = int(rej[:, :2].sum()), int(rej[:, 2:].sum())
        rec.append(tp / (2 * n))
        fdp.append(fp / max(tp + fp, 1))
    return float(np.mean(fdp)), float(np.mean(rec))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    print("| topic scale | gold weight | FDR | recall |")
    print("|---:|---:|---:|---:|")
    for scale in (1.0, 1.75):
        for gw in (8.0, 30.0, 100.0):
            fdr, rec = oracle(scale, gw, a.datasets, a.seed)
            print(f"| {scale:g} | {gw:g} | {fdr:.3f} | {rec:.3f} |", flush=True)


if __name__ == "__main__":
    main()
