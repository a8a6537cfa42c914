"""Indexing speed: haystack-fin vs plain Haystack, same process, same embedding model, same filings.

plain Haystack: PyMuPDF page text -> DocumentSplitter(word, 200, overlap 20) -> SentenceTransformersDocumentEmbedder
                -> InMemoryDocumentStore (what a Haystack user builds by default)
haystack-fin:   the shipped pipelines/indexing.yaml (FilingConverter -> FilingSplitter -> FinDocumentEmbedder ->
                FilingWriter into an embedded Qdrant folder), reported without and with its TreeBuilder step, and
                with the store's optimize() after the last filing (as `haystack-fin index` runs it after a batch)

haystack-fin's embedder runs as the YAML configures it: ``compute_dtype: auto`` is bfloat16 autocast on a CPU with
native bf16 (the summary's ``fin_embedder_dtype`` says which); ``--compute-dtype float32`` measures it at plain
Haystack's precision.

The two systems alternate filing by filing so that background load on a shared machine hits both alike; the
ratio is the number to read, absolute ms/page are noisy here.

    python benchmarks/bench_indexing.py --pdfs ../shared/data/financebench-dev/pdfs [--limit N] [--out R.json]
"""

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pymupdf
from haystack.document_stores.types import DuplicatePolicy

from haystack_fin.components.tree_builder import TreeBuilder
from haystack_fin.core.models import DEFAULT_EMBEDDER
from haystack_fin.evaluation_runner import PlainHaystackBaseline
from haystack_fin.pipeline_loader import drop_components, load_pipeline, pipeline_dict

logger = logging.getLogger("bench_indexing")


def without_trees(data: dict) -> dict:
    """The shipped indexing pipeline minus its TreeBuilder: embedder straight into the writer."""
    data = drop_components(data, ("tree_builder",))
    data["connections"].append({"sender": "embedder.documents", "receiver": "writer.documents"})
    return data


def time_components(pipe: Any, into: dict[str, float]) -> None:
    """Wrap every component's ``run`` to add its seconds to ``into[name]`` (per stage cost; what the pipeline spends
    between components is the rest)."""
    for name, instance in pipe.walk():
        into.setdefault(name, 0.0)

        def timed(*args: Any, __run: Any = instance.run, __name: str = name, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return __run(*args, **kwargs)
            finally:
                into[__name] += time.perf_counter() - t

        instance.run = timed


def embedded_tokens(embedder: Any, documents: list[Any], key: Any) -> dict[str, list[int]]:
    """[texts, tokens] the embedder saw per group (``key(doc)``), tokens as the model truncates them; documents
    without an embedding are skipped (not embedded)."""
    out: dict[str, list[int]] = {}
    docs = [d for d in documents if d.embedding is not None]
    texts = [embedder._text_to_embed(d) for d in docs]
    for doc, n in zip(docs, embedder._token_lengths(texts) if texts else [], strict=True):
        row = out.setdefault(str(key(doc)), [0, 0])
        row[0] += 1
        row[1] += n
    return out


def node_kind(doc: Any) -> str:
    """chunk modality (text / table / image) for chunks, else the node type (summary / question / filing)."""
    node_type = doc.meta.get("node_type")
    return f"chunk:{doc.meta.get('modality')}" if node_type == "chunk" else str(node_type)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pdfs", default="../shared/data/financebench-dev/pdfs", help="folder of filing PDFs")
    parser.add_argument("--limit", type=int, default=0, help="only the first N PDFs (sorted by name)")
    parser.add_argument("--model", default=DEFAULT_EMBEDDER)
    parser.add_argument(
        "--compute-dtype",
        choices=("auto", "float32", "bfloat16"),
        default=None,
        help="override haystack-fin's embedder precision (default: the shipped YAML's); plain Haystack stays float32",
    )

    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch threads for both systems (default: torch's own); 1 measures a one-core machine, which is also "
        "how to measure while another job holds the other cores",
    )
    parser.add_argument("--out", default=None, help="write the result JSON here")
    args = parser.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    pdfs = sorted(Path(args.pdfs).glob("*.pdf"))[: args.limit or None]
    if not pdfs:
        print(f"no PDFs in {args.pdfs}", file=sys.stderr)
        return 2
    plain = PlainHaystackBaseline(args.model)
    with tempfile.TemporaryDirectory() as tmp:
        # The shipped pipeline minus its TreeBuilder; the TreeBuilder (and the write of its nodes) is timed on the
        # same embedded chunks right after, so one run gives chunks-only and with-trees costs.
        def transform(data: dict) -> dict:
            data = without_trees(data)
            if args.compute_dtype:
                data["components"]["embedder"]["init_parameters"]["compute_dtype"] = args.compute_dtype
            return data

        fin = load_pipeline("indexing", store_path=str(Path(tmp) / "idx"), transform=transform)
        fin.warm_up()
        trees = TreeBuilder(
            **{
                k: v
                for k, v in pipeline_dict("indexing")["components"]["tree_builder"]["init_parameters"].items()
                if k != "embedder"
            }
        )
        trees.warm_up()
        stage_s: dict[str, float] = {}
        time_components(fin, stage_s)
        plain_stage_s = {"convert": 0.0, "split": 0.0, "embed": 0.0, "write": 0.0}
        time_plain(plain, plain_stage_s)
        tokens: dict[str, list[int]] = {}
        fin_embedder = fin.get_component("embedder")
        rows = []
        totals = {
            "pages": 0,
            "plain_s": 0.0,
            "fin_s": 0.0,
            "trees_s": 0.0,
            "optimize_s": 0.0,
            "plain_chunks": 0,
            "fin_nodes": 0,
            "plain_cpu_s": 0.0,
            "fin_cpu_s": 0.0,
            "trees_cpu_s": 0.0,
        }
        for pdf in pdfs:
            with pymupdf.open(pdf) as doc:
                n_pages = doc.page_count
            t0, c0 = time.perf_counter(), time.process_time()
            before = plain.store.count_documents()
            plain.index(pdf, pdf.stem)
            n_plain = plain.store.count_documents() - before
            t1, c1 = time.perf_counter(), time.process_time()
            result = fin.run({"converter": {"sources": [str(pdf)]}}, include_outputs_from={"embedder"})
            n_fin = result["writer"]["documents_written"]
            t2, c2 = time.perf_counter(), time.process_time()
            tree_nodes = trees.run(documents=result["embedder"]["documents"])["documents"]
            tree_nodes = [d for d in tree_nodes if d.meta.get("node_type") in ("summary", "question")]
            fin.get_component("writer").document_store.write_documents(tree_nodes, policy=DuplicatePolicy.OVERWRITE)
            t3, c3 = time.perf_counter(), time.process_time()
            for group in (result["embedder"]["documents"], tree_nodes):
                for kind, (n_texts, n_tokens) in embedded_tokens(fin_embedder, group, node_kind).items():
                    row = tokens.setdefault(kind, [0, 0])
                    row[0] += n_texts
                    row[1] += n_tokens
            plain_chunks = plain.store.filter_documents({"field": "meta.file", "operator": "==", "value": pdf.stem})
            for kind, (n_texts, n_tokens) in embedded_tokens(fin_embedder, plain_chunks, lambda d: "plain").items():
                row = tokens.setdefault(kind, [0, 0])
                row[0] += n_texts
                row[1] += n_tokens
            rows.append(
                {
                    "filing": pdf.stem,
                    "pages": n_pages,
                    "plain_ms_per_page": 1000 * (t1 - t0) / n_pages,
                    "fin_ms_per_page": 1000 * (t2 - t1) / n_pages,
                    "trees_ms_per_page": 1000 * (t3 - t2) / n_pages,
                    "plain_chunks": n_plain,
                    "fin_nodes": n_fin,
                }
            )
            totals["pages"] += n_pages
            totals["plain_s"] += t1 - t0
            totals["fin_s"] += t2 - t1
            totals["trees_s"] += t3 - t2
            totals["plain_cpu_s"] += c1 - c0
            totals["fin_cpu_s"] += c2 - c1
            totals["trees_cpu_s"] += c3 - c2
            totals["plain_chunks"] += n_plain
            totals["fin_nodes"] += n_fin
            logger.info(
                "%-40s %4d pages  plain %6.1f ms/page  haystack-fin %6.1f ms/page  + trees %6.1f ms/page",
                pdf.stem,
                n_pages,
                rows[-1]["plain_ms_per_page"],
                rows[-1]["fin_ms_per_page"],
                rows[-1]["trees_ms_per_page"],
            )
        # `haystack-fin index` optimizes the Edge store once after a batch (HNSW, merged segments): part of its cost.
        t_opt = time.perf_counter()
        fin.get_component("writer").document_store.optimize()
        totals["optimize_s"] = time.perf_counter() - t_opt
        fin.close()
    plain_stage_s["convert"] = totals["plain_s"] - sum(v for k, v in plain_stage_s.items() if k != "convert")
    plain_ms = 1000 * totals["plain_s"] / totals["pages"]
    fin_ms = 1000 * totals["fin_s"] / totals["pages"]
    trees_ms = 1000 * totals["trees_s"] / totals["pages"]
    summary = {
        "torch_threads": args.threads or "default",
        # What the haystack-fin embedder computed in (its compute_dtype resolved on this CPU); plain is float32.
        "fin_embedder_dtype": "bfloat16" if getattr(fin_embedder, "_autocast_device", None) else "float32",
        "pages": totals["pages"],
        "filings": len(pdfs),
        "plain_ms_per_page": round(plain_ms, 1),
        "fin_ms_per_page": round(fin_ms, 1),
        "ratio": round(fin_ms / plain_ms, 3),
        "fin_with_trees_ms_per_page": round(fin_ms + trees_ms, 1),
        "ratio_with_trees": round((fin_ms + trees_ms) / plain_ms, 3),
        "optimize_s": round(totals["optimize_s"], 1),
        "ratio_with_trees_and_optimize": round(
            (totals["fin_s"] + totals["trees_s"] + totals["optimize_s"]) / totals["plain_s"], 3
        ),
        "plain_chunks": totals["plain_chunks"],
        "fin_nodes": totals["fin_nodes"],
        # CPU seconds of this process (all threads), which other jobs on the machine disturb far less than wall
        # time. Not the target: embedding runs on every core and parsing on one, so it weighs parsing less.
        "cpu_s": {k: round(totals[f"{k}_cpu_s"], 1) for k in ("plain", "fin", "trees")},
        "cpu_ratio_with_trees": round((totals["fin_cpu_s"] + totals["trees_cpu_s"]) / totals["plain_cpu_s"], 3),
        # Where the time goes: seconds per pipeline component (haystack-fin, without trees) and per plain step.
        "fin_stage_s": {k: round(v, 1) for k, v in stage_s.items()},
        "plain_stage_s": {k: round(v, 1) for k, v in plain_stage_s.items()},
        # [texts, tokens] embedded per node kind (model-truncated tokens; "plain" is plain Haystack's chunks).
        "embedded": tokens,
    }
    print(json.dumps(summary, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps({"summary": summary, "filings": rows}, indent=2))
    return 0


def time_plain(plain: PlainHaystackBaseline, into: dict[str, float]) -> None:
    """Time the baseline's steps: PyMuPDF page text is the rest of ``index`` after split, embed and write."""
    for step, obj in (("split", plain.splitter), ("embed", plain.doc_embedder), ("write", plain.store)):
        method = "write_documents" if step == "write" else "run"
        original = getattr(obj, method)

        def timed(*args: Any, __run: Any = original, __step: str = step, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return __run(*args, **kwargs)
            finally:
                into[__step] += time.perf_counter() - t

        setattr(obj, method, timed)


if __name__ == "__main__":
    sys.exit(main())
