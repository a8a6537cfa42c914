"""Text chunk size for the bundled 256-word-piece embedder: quality against embedding cost.

For each (chunk_tokens, overlap_tokens) setting, the filings named by the questions are split with FilingSplitter,
embedded with the bundled MiniLM and searched by plain dense retrieval inside each question's filing (no trees,
no routing, no reranking, no windows: only the chunking differs). Reports page_hit@5, evidence_recall_bigram@5,
context_words@5 (docs/evaluation.md) and embedding seconds per page.

    python benchmarks/bench_chunk_size.py --questions Q.jsonl --pdfs DIR [--sizes 128/16,200/20,256/24] [--max-pages N]
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

import numpy as np

from haystack_fin.components.document_embedder import FinDocumentEmbedder
from haystack_fin.components.filing_converter import FilingConverter
from haystack_fin.components.filing_splitter import FilingSplitter
from haystack_fin.components.text_embedder import FinTextEmbedder
from haystack_fin.core import schema
from haystack_fin.core.evaluation import Passage, aggregate, load_questions, score_question


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", required=True)
    parser.add_argument("--pdfs", required=True)
    parser.add_argument("--sizes", default="128/16,200/20,256/24", help="chunk_tokens/overlap_tokens list")
    parser.add_argument("--max-pages", type=int, default=0, help="skip filings longer than this (0 = none)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)

    questions = load_questions(args.questions)
    converter = FilingConverter()
    filings = {}
    for name in sorted({q.doc_name for q in questions}):
        doc = converter.run(sources=[Path(args.pdfs) / f"{name}.pdf"], meta={schema.FILING_ID: name})["documents"][0]
        if not args.max_pages or doc.meta[schema.N_PAGES] <= args.max_pages:
            filings[name] = doc
    questions = [q for q in questions if q.doc_name in filings]
    n_pages = sum(d.meta[schema.N_PAGES] for d in filings.values())
    embedder, text_embedder = FinDocumentEmbedder(batch_size=32), FinTextEmbedder()
    embedder.warm_up()
    text_embedder.warm_up()
    query_vectors = {q.financebench_id: np.array(text_embedder.run(q.question)["embedding"]) for q in questions}

    results = {}
    for setting in args.sizes.split(","):
        size, overlap = (int(x) for x in setting.split("/"))
        splitter = FilingSplitter(chunk_tokens=size, overlap_tokens=overlap, term_stats=False)
        by_filing = {}
        t0 = time.perf_counter()
        for name, doc in filings.items():
            chunks = embedder.run(splitter.run(documents=[doc])["documents"])["documents"]
            by_filing[name] = (chunks, np.array([c.embedding for c in chunks]))
        seconds = time.perf_counter() - t0
        per_question = {}
        for q in questions:
            chunks, matrix = by_filing[q.doc_name]
            top = np.argsort(-(matrix @ query_vectors[q.financebench_id]))[:10]
            passages = [
                Passage(q.doc_name, list(chunks[i].meta[schema.PAGE_NUMBERS]), chunks[i].content or "") for i in top
            ]
            per_question[q.financebench_id] = score_question(q, passages, (5, 10))
        overall = aggregate(per_question, questions)["overall"]
        results[setting] = {
            "page_hit@5": round(overall["page_hit@5"], 3),
            "evidence_recall_bigram@5": round(overall["evidence_recall_bigram@5"], 3),
            "context_words@5": round(overall["context_words@5"]),
            "mrr": round(overall["mrr"], 3),
            "chunks": sum(len(c) for c, _ in by_filing.values()),
            "split_embed_ms_per_page": round(1000 * seconds / n_pages, 1),
        }
        print(setting, json.dumps(results[setting]), flush=True)
    summary = {"filings": len(filings), "pages": n_pages, "questions": len(questions), "results": results}
    print(json.dumps(summary, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
