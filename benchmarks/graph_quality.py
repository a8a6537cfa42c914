"""Graph quality: build the filing graph (haystack_fin.core.graph) of every indexed 10-K, count entities and edges
by type, time the build, and sample edges for a hand check against the PDFs.

    python benchmarks/graph_quality.py --store /tmp/my-idx [--store-backend edge|local] [--forms 10-K]
        [--per-type 30] [--seed 11] [--sample-out /tmp/graph_edges_sample.jsonl] [--json /tmp/graph_counts.json]
    python benchmarks/graph_quality.py --precision benchmarks/data/graph_edges_sample.jsonl

The first form prints one line per filing (pages, chunks, facts, entity mentions by kind, edges by type, ms/page)
and writes ``--per-type`` randomly chosen edges of each type (seeded) with the source and target text snippets and
pages, each with ``"verdict": null``: a reader checks each against the PDF and sets ``verdict`` to "correct" or
"incorrect" with a one-line ``reason``. The second form reads such a checked file and prints precision per type.
Open a copy of an index, never a folder another process is using (an embedded store admits one process).

``benchmarks/data/graph_edges_sample.jsonl`` holds the checked samples of the dev 10-Ks (16 filings): round 1 (seed
11, the first extractor), round 4 (seed 14, after the fixes rounds 1-3 called for, with extra strata for table
captions, table references and Item references) and round 5 (seed 15, explicit edges after the note-heading fixes
round 4 called for). Each row's ``reason`` says what was checked on the page.
"""

import argparse
import json
import random
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from haystack_fin.core import schema
from haystack_fin.core.graph.build import FilingGraph, build_filing_graph
from haystack_fin.core.lexicon import Lexicon

EDGE_TYPES = ("explicit", "table", "inferred", "mention")
_SNIPPET = 240


def _open_store(path: str, backend: str) -> Any:
    from haystack_fin.pipeline_loader import indexing_store
    from haystack_fin.store_check import StoreError, connect_store

    if not Path(path).is_dir():
        sys.exit(f"error: {path}: no such store")
    store = indexing_store(store_path=path, backend=backend)
    try:
        connect_store(store, path)
    except StoreError as err:
        sys.exit(f"error: {err}")
    return store


def _describe(fg: FilingGraph, node: str) -> dict[str, Any]:
    """A node as a reader checks it: its text snippet and pages."""
    data = fg.graph.nodes[node]
    kind = data.get("node_type")
    if kind == "chunk":
        info = fg.chunks[node]
        return {
            "node": node,
            "node_type": "chunk",
            "item": info.item,
            "pages": list(info.pages),
            "section": " > ".join(info.section_path[1:])[:120],
            "text": info.content[:_SNIPPET],
        }
    if kind == "fact":
        fact = fg.fact(node)
        return {
            "node": node,
            "node_type": "fact",
            "item": fact.item,
            "pages": list(fact.pages),
            "text": f"{fact.label} | {fact.column} = {fact.raw} (value {fact.value:g}, {fact.unit})",
            "metric": fact.metric,
            "period": fact.period,
        }
    return {
        "node": node,
        "node_type": "entity",
        "item": data.get("item"),
        "text": f"{data.get('kind')}:{data.get('key')}",
    }


def build_all(store: Any, forms: set[str], lexicon: Lexicon) -> list[tuple[schema.FilingNode, FilingGraph]]:
    nodes = store.filter_documents(filters={"field": "meta.node_type", "operator": "==", "value": "filing"})
    filings = sorted((schema.FilingNode.from_meta(n.meta) for n in nodes), key=lambda f: f.filing_id)
    out = []
    for filing in filings:
        if forms and filing.form not in forms:
            continue
        docs = store.filter_documents(filters=schema.filing_filter(filing.filing_id))
        chunks = [
            {"id": d.id, "content": d.content, "meta": d.meta}
            for d in docs
            if d.meta.get(schema.NODE_TYPE) == schema.NodeType.CHUNK
        ]
        out.append((filing, build_filing_graph(chunks, lexicon, filing.filing_id, filing.index_run)))
    return out


def print_counts(built: list[tuple[schema.FilingNode, FilingGraph]]) -> dict[str, Any]:
    kinds = ("metric", "period", "amount", "percent", "per_share", "reference", "company", "segment", "geography")
    print(
        f"{'filing':<28} {'pages':>5} {'chunks':>6} {'facts':>6} "
        + " ".join(f"{k[:6]:>6}" for k in kinds)
        + " | "
        + " ".join(f"{t[:8]:>8}" for t in EDGE_TYPES)
        + f" {'ms/page':>8}"
    )
    totals: Counter[str] = Counter()
    pages_total = 0
    seconds_total = 0.0
    report = []
    for filing, fg in built:
        counts = fg.counts()
        pages = filing.n_pages or max((p for c in fg.chunks.values() for p in c.pages), default=1)
        ms_page = 1000 * fg.seconds / max(pages, 1)
        pages_total += pages
        seconds_total += fg.seconds
        ents = counts["entities"]
        edges = counts["edges"]
        totals.update({f"entity/{k}": v for k, v in ents.items()})
        totals.update({f"edge/{k}": v for k, v in counts["edge_kinds"].items()})
        totals["facts"] += counts["facts"]
        print(
            f"{filing.filing_id[:28]:<28} {pages:>5} {len(fg.chunks):>6} {counts['facts']:>6} "
            + " ".join(f"{ents.get(k, 0):>6}" for k in kinds)
            + " | "
            + " ".join(f"{edges.get(t, 0):>8}" for t in EDGE_TYPES)
            + f" {ms_page:>8.1f}"
        )
        report.append({"filing_id": filing.filing_id, "pages": pages, "chunks": len(fg.chunks), **counts,
                       "ms_per_page": round(ms_page, 2)})  # fmt: skip
    ms = 1000 * seconds_total / max(pages_total, 1)
    print(f"{len(built)} filings, {pages_total} pages: graph build {ms:.1f} ms/page ({seconds_total:.1f} s)")
    print("edge kinds:", json.dumps({k[5:]: v for k, v in sorted(totals.items()) if k.startswith("edge/")}))
    return {"filings": report, "ms_per_page": round(ms, 2), "pages": pages_total, "totals": dict(totals)}


def sample_edges(
    built: list[tuple[schema.FilingNode, FilingGraph]],
    per_type: int,
    seed: int,
    extra_kinds: tuple[str, ...] = (),
    round_label: str = "1",
) -> list[dict[str, Any]]:
    """``per_type`` random edges of each type, then of each extra "type/kind" stratum (rare kinds, such as table
    captions, that a per-type sample of thousands of cell edges would miss)."""
    pools: dict[str, list[tuple[schema.FilingNode, FilingGraph, Any]]] = defaultdict(list)
    for filing, fg in built:
        for _, _, data in fg.graph.edges(data=True):
            edge = data["edge"]
            pools[edge.type].append((filing, fg, edge))
            pools[f"{edge.type}/{edge.kind}"].append((filing, fg, edge))
    rng = random.Random(seed)
    rows = []
    for stratum in (*EDGE_TYPES, *extra_kinds):
        pool = pools.get(stratum, [])
        for filing, fg, edge in rng.sample(pool, min(per_type, len(pool))):
            rows.append(
                {
                    "round": round_label,
                    "stratum": stratum,
                    "type": edge.type,
                    "kind": edge.kind,
                    "confidence": edge.confidence,
                    "filing_id": filing.filing_id,
                    "pdf": Path(filing.source_path).name,
                    "evidence": dict(edge.evidence),
                    "source": _describe(fg, edge.source),
                    "target": _describe(fg, edge.target),
                    "verdict": None,
                    "reason": "",
                }
            )
    return rows


def precision(path: Path) -> None:
    """Precision per round and stratum (edge type, or type/kind for the extra strata) of a checked sample."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    by: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for row in rows:
        by[(str(row.get("round", "1")), str(row.get("stratum") or row["type"]))][str(row.get("verdict"))] += 1
    for (round_label, stratum), counts in sorted(by.items()):
        judged = counts["correct"] + counts["incorrect"]
        share = counts["correct"] / judged if judged else float("nan")
        unchecked = f"  ({counts['None']} unchecked)" if counts.get("None") else ""
        print(
            f"round {round_label} {stratum:<16} {counts['correct']:>3}/{judged:<3} correct, "
            f"precision {share:.3f}{unchecked}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", help="index folder (a copy: an embedded store admits one process)")
    parser.add_argument("--store-backend", default="edge", choices=["edge", "local"])
    parser.add_argument("--forms", default="10-K", help="comma-separated forms to build (empty: all)")
    parser.add_argument("--per-type", type=int, default=30)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--sample-out", type=Path)
    parser.add_argument("--extra-kinds", default="", help="comma-separated type/kind strata also sampled")
    parser.add_argument("--round", default="1", help="label of this sampling round (after extractor fixes)")
    parser.add_argument("--json", type=Path, help="write the counts as JSON here")
    parser.add_argument("--precision", type=Path, help="print precision per type of a checked sample file")
    args = parser.parse_args()
    if args.precision:
        precision(args.precision)
        return
    if not args.store:
        parser.error("--store is required (or --precision FILE)")
    store = _open_store(args.store, args.store_backend)
    lexicon = Lexicon.load_default()
    start = time.perf_counter()
    built = build_all(store, {f for f in args.forms.split(",") if f}, lexicon)
    print(f"loaded and built {len(built)} filings in {time.perf_counter() - start:.1f} s")
    report = print_counts(built)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    if args.sample_out:
        extra = tuple(k for k in args.extra_kinds.split(",") if k)
        rows = sample_edges(built, args.per_type, args.seed, extra, args.round)
        args.sample_out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        print(f"wrote {len(rows)} sampled edges to {args.sample_out}")


if __name__ == "__main__":
    main()
