"""Retrieval benchmark: quality on Cranfield, latency on Cranfield and ADK, vector-store throughput, embedding
throughput, peak memory of indexing ADK.

    python benchmarks/bench_retrieval.py [--data ../shared/data] [--out benchmarks/out] [--cold]

* Quality: nDCG@10 and Recall@100 (pytrec_eval) of BM25, dense (all-MiniLM-L6-v2 in Qdrant Edge) and hybrid (RRF,
  k=60) on Cranfield, plus rank_bm25 (Okapi) with the same tokenization as the reference for BM25.
* Latency: one query at a time, k=10, after a warm-up pass; p50/p95 in ms. Dense includes query embedding.
* Store: Qdrant Edge vs qdrant-client local mode on 20,000 × 384 random unit vectors, exact top-10 (checked against
  numpy brute force), sequential single queries.
* Embedding: documents/s of the embedder on 128 uncached Cranfield documents (batch 32).
* Memory: peak RSS of a `deltap index` subprocess over the ADK corpus (cold = empty embedding cache with --cold;
  otherwise the cache in --out is used and the figure says "warm").

Document embeddings are cached in ``--out/cache`` (gitignored), so only the first run embeds the corpora (~1 min
each on 2 cores). Results: a Markdown table on stdout and ``--out/bench_retrieval.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1e3, q))


def latency(retriever: Any, queries: list[str], k: int = 10) -> dict[str, float]:
    for q in queries[: min(10, len(queries))]:
        retriever.search(q, k)  # warm-up
    times, cpu, embed, search = [], [], [], []
    for q in queries:
        c = time.process_time()
        t = time.perf_counter()
        retriever.search(q, k)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        if hasattr(retriever, "last_embed_seconds"):
            embed.append(retriever.last_embed_seconds)
            search.append(retriever.last_search_seconds)
    out = {"p50_ms": pct(times, 50), "p95_ms": pct(times, 95), "n": len(times)}
    # CPU seconds of this process per query: what contention from other processes cannot inflate (with torch on
    # one thread it approximates the wall time on an idle machine)
    out |= {"cpu_p50_ms": pct(cpu, 50), "cpu_p95_ms": pct(cpu, 95)}
    if embed:
        out |= {"embed_p50_ms": pct(embed, 50), "search_p50_ms": pct(search, 50), "search_p95_ms": pct(search, 95)}
    return out


def evaluate(qrels: dict, run: dict) -> dict[str, float]:
    import pytrec_eval

    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"})
    per = ev.evaluate(run)
    return {
        "ndcg@10": float(np.mean([v["ndcg_cut_10"] for v in per.values()])),
        "recall@100": float(np.mean([v["recall_100"] for v in per.values()])),
        "queries": len(per),
    }


def bench_quality_and_latency(data: Path, out: Path, results: dict) -> None:
    from rank_bm25 import BM25Okapi

    from deltap.loaders import load_beir, load_cases, load_corpus
    from deltap.retrieval import build_retriever
    from deltap.retrieval.bm25 import tokenize
    from deltap.retrieval.hybrid import HybridRetriever

    cache = out / "cache"
    cran = load_beir(data / "cranfield")
    queries = {q: t for q, t in cran.queries.items() if q in cran.qrels}
    qids, qtexts = list(queries), list(queries.values())
    print(f"cranfield: {len(cran.corpus)} docs, {len(queries)} judged queries", file=sys.stderr)

    t = time.perf_counter()
    bm25 = build_retriever("bm25", cran.corpus)
    bm25_build = time.perf_counter() - t
    t = time.perf_counter()
    dense = build_retriever("dense", cran.corpus, store=out / "index-cranfield", cache_dir=cache)
    dense_build = time.perf_counter() - t
    hybrid = HybridRetriever(cran.corpus, [bm25, dense], rrf_k=60, depth=100)
    print(f"  built bm25 in {bm25_build:.2f}s, dense in {dense_build:.1f}s", file=sys.stderr)

    quality: dict[str, Any] = {}
    for name, r in (("bm25", bm25), ("dense", dense), ("hybrid", hybrid)):
        hits = r.search_batch(qtexts, k=100)
        quality[name] = evaluate(
            cran.qrels, {q: {h.doc_id: h.score for h in hs} for q, hs in zip(qids, hits, strict=True)}
        )
    okapi = BM25Okapi([tokenize(d.full_text) for d in cran.corpus])
    ids = cran.corpus.ids
    ref_run = {}
    for q, text in queries.items():
        s = okapi.get_scores(tokenize(text))
        top = sorted(range(len(ids)), key=lambda i: (-s[i], i))[:100]
        ref_run[q] = {ids[i]: float(s[i]) for i in top}
    quality["rank_bm25 (reference)"] = evaluate(cran.qrels, ref_run)
    results["quality_cranfield"] = quality

    lat: dict[str, Any] = {"cranfield": {}, "adk": {}}
    for name, r in (
        ("bm25", bm25),
        ("dense", dense),
        ("hybrid", hybrid),
        ("random", build_retriever("random", cran.corpus)),
    ):
        lat["cranfield"][name] = latency(r, qtexts)

    adk_corpus = load_corpus(data / "adk" / "corpus_ranked_targets.yaml")
    cases = load_cases(data / "adk" / "api_understanding.yaml", corpus=adk_corpus, on_missing="skip")
    adk_queries = [c.query for c in cases]
    adk_bm25 = build_retriever("bm25", adk_corpus)
    adk_dense = build_retriever("dense", adk_corpus, store=out / "index-adk", cache_dir=cache)
    adk_hybrid = HybridRetriever(adk_corpus, [adk_bm25, adk_dense])
    for name, r in (
        ("bm25", adk_bm25),
        ("dense", adk_dense),
        ("hybrid", adk_hybrid),
        ("random", build_retriever("random", adk_corpus)),
    ):
        lat["adk"][name] = latency(r, adk_queries)
    results["latency"] = lat
    results["adk"] = {"documents": len(adk_corpus), "queries": len(adk_queries)}

    # embedding throughput on uncached text (not through the cache)
    emb = dense.embedder
    sample = [d.full_text for d in list(cran.corpus)[:128]]
    t = time.perf_counter()
    emb.embed_documents(sample)
    results["embedding"] = {
        "model": emb.name,
        "docs": len(sample),
        "docs_per_s": len(sample) / (time.perf_counter() - t),
    }
    q = qtexts[:50]
    t = time.perf_counter()
    for text in q:
        emb.embed_queries([text])
    results["embedding"]["query_ms"] = (time.perf_counter() - t) / len(q) * 1e3
    for r in (dense, adk_dense):
        r.close()


def bench_stores(results: dict, n: int = 20_000, dim: int = 384, n_queries: int = 200) -> None:
    from deltap.retrieval.stores import EdgeStore, IndexInfo, QdrantClientStore

    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, dim)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    qs = rng.standard_normal((n_queries, dim)).astype(np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    truth = np.argsort(-(qs @ x.T), axis=1, kind="stable")[:, :10]
    ids = [f"v{i}" for i in range(n)]
    payloads = [{"doc_id": ids[i], "_deltap": {"position": i}} for i in range(n)]
    out: dict[str, Any] = {"vectors": n, "dimension": dim}
    with tempfile.TemporaryDirectory() as tmp:
        stores = {
            "qdrant-edge": EdgeStore(Path(tmp) / "edge", "c"),
            "qdrant-client local": QdrantClientStore("c", path=Path(tmp) / "local"),
        }
        for name, store in stores.items():
            store.create(IndexInfo(embedder="random", dimension=dim, collection="c"))
            t = time.perf_counter()
            for s in range(0, n, 1000):
                store.upsert(ids[s : s + 1000], x[s : s + 1000], payloads[s : s + 1000])
            ingest = time.perf_counter() - t
            m = n_queries if name == "qdrant-edge" else 50  # local mode is slow; 50 queries are plenty
            for v in qs[:5]:
                store.query(v[None, :], 10, None)
            t = time.perf_counter()
            exact = 0
            for i in range(m):
                got = [int(h.doc_id[1:]) for h in store.query(qs[i : i + 1], 10, None)[0]]
                exact += got == truth[i].tolist()
            per_q = (time.perf_counter() - t) / m
            out[name] = {"ingest_s": ingest, "query_ms": per_q * 1e3, "qps": 1 / per_q, "exact_top10": f"{exact}/{m}"}
            store.close()
    out["speedup"] = out["qdrant-client local"]["query_ms"] / out["qdrant-edge"]["query_ms"]
    results["stores"] = out


def bench_memory(data: Path, out: Path, cold: bool, results: dict) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="deltap-bench-"))
    cache = tmp / "cache" if cold else out / "cache"
    cmd = [
        sys.executable,
        "-m",
        "deltap",
        "index",
        str(data / "adk" / "corpus_ranked_targets.yaml"),
        "--store",
        str(tmp / "store"),
        "--cache-dir",
        str(cache),
    ]
    t = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    shutil.rmtree(tmp, ignore_errors=True)
    if done.returncode != 0:
        raise SystemExit(f"deltap index failed: {done.stderr}")
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # Linux: KiB
    results["memory"] = {
        "peak_rss_mib": peak_kib / 1024,
        "seconds": seconds,
        "cache": "cold" if cold else "warm",
        "summary": done.stdout.strip(),
    }


def table(results: dict) -> str:
    lines = []
    q = results["quality_cranfield"]
    lines += [
        "**Quality on Cranfield** (pytrec_eval, 225 judged queries)",
        "",
        "| retriever | nDCG@10 | Recall@100 |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {v['ndcg@10']:.4f} | {v['recall@100']:.4f} |" for name, v in q.items()]
    diff = q["bm25"]["ndcg@10"] - q["rank_bm25 (reference)"]["ndcg@10"]
    lines += ["", f"BM25 (bm25s) − rank_bm25 nDCG@10 = {diff:+.4f} (goal: |Δ| ≤ 0.01)", ""]
    lines += [
        "**Query latency** (k=10, one query at a time, ms; wall clock, and CPU time of this process per query)",
        "",
        "| corpus | retriever | p50 | p95 | CPU p50 | CPU p95 | embed p50 | search p50 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for corpus, per in results["latency"].items():
        for name, v in per.items():
            e = f"{v['embed_p50_ms']:.2f}" if "embed_p50_ms" in v else ""
            s = f"{v['search_p50_ms']:.2f}" if "search_p50_ms" in v else ""
            lines.append(
                f"| {corpus} | {name} | {v['p50_ms']:.2f} | {v['p95_ms']:.2f} | {v.get('cpu_p50_ms', float('nan')):.2f} "
                f"| {v.get('cpu_p95_ms', float('nan')):.2f} | {e} | {s} |"
            )
    st = results["stores"]
    lines += [
        "",
        f"**Vector store**, {st['vectors']:,} × {st['dimension']} random unit vectors, exact top-10",
        "",
        "| store | ingest s | ms/query | queries/s | exact top-10 |",
        "|---|---|---|---|---|",
    ]
    for name in ("qdrant-edge", "qdrant-client local"):
        v = st[name]
        lines.append(f"| {name} | {v['ingest_s']:.2f} | {v['query_ms']:.2f} | {v['qps']:.0f} | {v['exact_top10']} |")
    lines += ["", f"Edge / local-mode search speed-up: **{st['speedup']:.1f}×** (goal ≥ 3×)", ""]
    e = results["embedding"]
    lines.append(
        f"**Embedding** ({e['model']}): {e['docs_per_s']:.1f} documents/s (Cranfield, batch 32); query {e['query_ms']:.1f} ms"
    )
    m = results["memory"]
    lines.append(
        f"Machine: {results['machine']}; torch threads: {results.get('torch_threads', 'default')}; "
        f"1-min load average at the end: {results['load_average_after'][0]:.1f}"
    )
    lines.append(
        f"**Peak RSS of `deltap index` on ADK** ({results['adk']['documents']} docs): {m['peak_rss_mib']:.0f} MiB, "
        f"{m['seconds']:.1f} s wall (`{m['summary'].split(': ', 1)[-1]}`)"
    )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument("--cold", action="store_true", help="measure ADK indexing memory with an empty embedding cache")
    ap.add_argument(
        "--parts",
        default="memory,quality,stores",
        help="comma-separated subset to (re)run: memory, quality (includes latency and embedding speed), stores; "
        "the other parts are kept from the previous --out/bench_retrieval.json",
    )
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0 = torch's default)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    previous = args.out / "bench_retrieval.json"
    results: dict[str, Any] = json.loads(previous.read_text()) if previous.is_file() else {}
    results |= {
        "machine": f"{platform.machine()}, {__import__('os').cpu_count()} CPUs, Python {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
    }
    if not parts:  # --parts "" : reprint the table of the last run
        print(table(results))
        return
    if "memory" in parts:
        bench_memory(args.data, args.out, args.cold, results)  # first: a fresh child process, before this one grows
    if "quality" in parts:
        bench_quality_and_latency(args.data, args.out, results)
    if "stores" in parts:
        bench_stores(results)
    results["load_average_after"] = __import__("os").getloadavg()
    results["torch_threads"] = args.threads or "default"
    (args.out / "bench_retrieval.json").write_text(json.dumps(results, indent=2))
    print(table(results))


if __name__ == "__main__":
    main()
