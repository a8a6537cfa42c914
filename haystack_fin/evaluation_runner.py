"""`haystack-fin eval financebench`: index the filings a FinanceBench-format question file names, retrieve with
haystack-fin (and optionally plain Haystack in the same process), score with docs/evaluation.md's metrics.

Output JSON (a contract): {"overall": {...}, "by_question_type": {...}, "by_evidence_pages": {"1": {...}, "2+":
{...}}, "evidence_pages_counts": {"1": n, "2+": n}, "per_question": {id: {..., "top10": [[filing_id, [pages]], ...]}},
"timings": {"index_ms_per_page", "query_p50_ms", "query_p95_ms"}, "baseline": {same shape}, "config": {...}}; the
haystack-fin run also has "candidates": {"overall", "by_question_type", "per_question"} with candidate recall@N
(``core.evaluation.score_candidates``: a gold page among the first N documents the ranker was given).

Filings are found as DOC_NAME.pdf, DOC_NAME.html or DOC_NAME.htm in one or more folders (the first folder that has
one wins).
"""

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from haystack import Document, logging
from tqdm import tqdm

from haystack_fin.components.dual_tree_retriever import DualTreeRetriever
from haystack_fin.components.graph_expander import GraphExpander
from haystack_fin.core import schema
from haystack_fin.core.evaluation import (
    CANDIDATE_NS,
    DEFAULT_KS,
    Passage,
    Question,
    aggregate,
    load_questions,
    percentile,
    score_candidates,
    score_question,
)
from haystack_fin.pipeline_loader import component_as
from haystack_fin.query_runner import ABLATIONS

logger = logging.getLogger(__name__)

SETTINGS = ("single", "shared")
RETRIEVE_K = 10  # mrr and @10 need ten passages
FILING_SUFFIXES = (".pdf", ".html", ".htm")


def doc_passages(docs: list[Document]) -> list[Passage]:
    return [
        Passage(
            doc_name=str(d.meta.get(schema.FILING_ID) or d.meta.get("file") or ""),
            pages=[int(p) for p in d.meta.get(schema.PAGE_NUMBERS) or ([d.meta["page"]] if "page" in d.meta else [])],
            text=d.content or "",
            score=float(d.score or 0.0),
        )
        for d in docs
    ]


def _score(
    questions: list[Question],
    retrieve: Callable[[Question], list[Document]],
    ks: tuple[int, ...],
    quiet: bool,
    label: str,
    candidates: Callable[[], list[Document]] | None = None,
) -> dict[str, Any]:
    """Run and score every question; ``candidates`` (called after each ``retrieve``) returns what the ranker was
    given for it, scored apart from the ranking."""
    per_question: dict[str, dict[str, float]] = {}
    candidate_rows: dict[str, dict[str, float]] = {}
    ranked: dict[str, list[list[Any]]] = {}
    latencies: list[float] = []
    for q in tqdm(questions, desc=f"Querying ({label})", disable=quiet):
        t0 = time.perf_counter()
        docs = retrieve(q)
        latencies.append(1000 * (time.perf_counter() - t0))
        passages = doc_passages(docs)
        per_question[q.financebench_id] = score_question(q, passages, ks)
        # So a reader can audit any number: what was ranked, in order, as (filing_id, pages).
        ranked[q.financebench_id] = [[p.doc_name, list(p.pages)] for p in passages[:RETRIEVE_K]]
        if candidates is not None:
            candidate_rows[q.financebench_id] = score_candidates(q, doc_passages(candidates()), CANDIDATE_NS)
    result = aggregate(per_question, questions)
    result.pop("counts", None)
    result["per_question"] = {qid: {**scores, "top10": ranked[qid]} for qid, scores in per_question.items()}
    result["timings"] = {
        "query_p50_ms": round(percentile(latencies, 50), 1),
        "query_p95_ms": round(percentile(latencies, 95), 1),
    }
    if candidate_rows:
        by_id = {q.financebench_id: q for q in questions}
        summary = aggregate(candidate_rows, [by_id[qid] for qid in candidate_rows])
        result["candidates"] = {
            "overall": summary["overall"],
            "by_question_type": summary["by_question_type"],
            "by_evidence_pages": summary["by_evidence_pages"],
            "per_question": candidate_rows,
        }
    return result


class HaystackFinRetrieval:
    """pipelines/query.yaml without generation, run through ``QueryRunner`` (the path ``ask`` and the API take),
    with ablations as edits of the pipeline dict."""

    def __init__(
        self,
        store_path: str | None,
        qdrant_url: str | None,
        ablate: set[str],
        top_k: int = RETRIEVE_K,
        fragments: list[str] | tuple[str, ...] = (),
    ):
        from haystack_fin.query_runner import QueryRunner

        self.runner = QueryRunner(store_path, qdrant_url, ablations=ablate, fragments=fragments)
        self.top_k = top_k
        self.last_candidates: list[Document] = []
        self.runner.pipe.warm_up()
        # What a server does at start-up: embedded Qdrant filters by scanning the collection in Python (~1.7 s
        # per filing on a 40k-node index), so the per-filing tree caches are filled once before timing queries.
        t0 = time.perf_counter()
        self.preloaded = component_as(self.runner.pipe, "retriever", DualTreeRetriever).preload()
        self.preload_s = time.perf_counter() - t0
        # The graph stage, when the pipeline has one, builds each filing's graph on first use: built here too, so
        # the timed queries compare like with like (graph_preload_s: what that costs for the store's filings).
        self.graph_preload_s: float | None = None
        if "graph" in self.runner.data["components"]:
            t0 = time.perf_counter()
            component_as(self.runner.pipe, "graph", GraphExpander).preload()
            self.graph_preload_s = time.perf_counter() - t0

    def close(self) -> None:
        self.runner.close()

    def retrieve(self, question: str, filing_ids: list[str] | None) -> list[Document]:
        result = self.runner.run(question, filing_ids, k=self.top_k)
        self.last_candidates = result.candidates
        return result.passages


class PlainHaystackBaseline:
    """What a Haystack user builds by default: PyMuPDF page text, 200-word chunks, the same embedder, in memory."""

    def __init__(self, model: str) -> None:
        from haystack.components.preprocessors import DocumentSplitter
        from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
        from haystack.document_stores.in_memory import InMemoryDocumentStore
        from haystack_integrations.components.embedders.sentence_transformers import (
            SentenceTransformersDocumentEmbedder,
            SentenceTransformersTextEmbedder,
        )

        from haystack_fin.core.models import resolve_model

        self.store = InMemoryDocumentStore()
        self.splitter = DocumentSplitter(split_by="word", split_length=200, split_overlap=20)
        path = resolve_model(model)
        self.doc_embedder = SentenceTransformersDocumentEmbedder(model=path, local_files_only=True, progress_bar=False)
        self.text_embedder = SentenceTransformersTextEmbedder(model=path, local_files_only=True, progress_bar=False)
        self.retriever = InMemoryEmbeddingRetriever(document_store=self.store, top_k=RETRIEVE_K)
        self.doc_embedder.warm_up()
        self.text_embedder.warm_up()

    def index(self, filing: Path, filing_id: str) -> int:
        pages = [
            Document(content=text, meta={"file": filing_id, "page": i + 1})
            for i, text in enumerate(filing_page_texts(filing))
        ]
        chunks = self.splitter.run(documents=pages)["documents"]
        embedded = self.doc_embedder.run(documents=chunks)["documents"]
        self.store.write_documents(embedded)
        return len(pages)

    def retrieve(self, question: str, filing_ids: list[str] | None) -> list[Document]:
        embedding = self.text_embedder.run(text=question)["embedding"]
        filters = {"field": "meta.file", "operator": "in", "value": filing_ids} if filing_ids else None
        return self.retriever.run(query_embedding=embedding, filters=filters)["documents"]


def filing_page_texts(path: Path) -> list[str]:
    """Each page's text: PyMuPDF's for a PDF; for EDGAR HTML, which has no pages a plain converter sees, the native
    parser's pages (the pages the labels and haystack-fin's chunks carry)."""
    if path.suffix.lower() == ".pdf":
        import pymupdf

        with pymupdf.open(path) as doc:
            return [page.get_text() for page in doc]
    from haystack_fin.core.ingest.html import parse_html_filing

    return parse_html_filing(path, extract_images=False).page_texts


def find_filings(names: Sequence[str], folders: Sequence[str | Path]) -> list[Path]:
    """``NAME.pdf``, ``NAME.html`` or ``NAME.htm`` for every name, from the first folder that has one.

    :raises FileNotFoundError: naming every filing found in none of the folders.
    """
    found: list[Path] = []
    missing: list[str] = []
    for name in names:
        tried = (Path(folder) / f"{name}{ext}" for folder in folders for ext in FILING_SUFFIXES)
        path = next((p for p in tried if p.is_file()), None)
        if path is None:
            missing.append(name)
        else:
            found.append(path)
    if missing:
        where = ", ".join(str(d) for d in folders) or "no folder given"
        raise FileNotFoundError(
            f"filings named by the questions are missing (looked for NAME.pdf/.html/.htm in {where}): "
            + ", ".join(missing)
        )
    return found


def _indexed_filings(store_path: str | None, qdrant_url: str | None) -> set[str]:
    from haystack_fin.pipeline_loader import indexing_store

    store = indexing_store(store_path, qdrant_url)
    try:
        nodes = store.filter_documents(schema.node_type_filter(schema.NodeType.FILING))
        return {schema.FilingNode.from_meta(n.meta).filing_id for n in nodes}
    finally:
        store.close()


def index_filings(
    filings: list[Path],
    store_path: str | None,
    qdrant_url: str | None,
    quiet: bool,
    timeout_s: float | None = 600,
    workers: int = 1,
) -> tuple[float | None, list[str]]:
    """Index the filings (PDF or HTML) not yet in the store (filing id = file stem) through the indexing runner
    (parse stage in workers with ``timeout_s`` per filing). Returns (ms per page of the filings written, or None;
    failures)."""
    from haystack_fin import indexing_runner
    from haystack_fin.pipeline_loader import pipeline_dict

    present = _indexed_filings(store_path, qdrant_url)
    todo = [p for p in filings if p.stem not in present]
    if not todo:
        return None, []
    report = indexing_runner.index_filings(
        [str(p) for p in todo],
        pipeline_dict("indexing", store_path, qdrant_url),
        [{schema.FILING_ID: p.stem} for p in todo],
        timeout_s=timeout_s,
        workers=workers,
        quiet=quiet,
    )
    return (1000 * report.seconds / report.pages if report.pages else None), report.failures


def index_question_filings(
    questions: list[Question],
    filing_dirs: str | Sequence[str],
    store_path: str | None,
    qdrant_url: str | None,
    quiet: bool,
    timeout_s: float | None,
    workers: int = 1,
) -> tuple[list[Path], float | None]:
    """Index every filing the questions name (``find_filings`` in ``filing_dirs``, one folder or several); returns
    the filings and ``index_filings``' ms per page. Indexing failures are logged; a missing filing raises
    ``FileNotFoundError``."""
    folders = [filing_dirs] if isinstance(filing_dirs, str) else list(filing_dirs)
    filings = find_filings(sorted({q.doc_name for q in questions}), folders)
    index_ms, failures = index_filings(filings, store_path, qdrant_url, quiet, timeout_s=timeout_s, workers=workers)
    if failures:
        logger.error("Indexing failures: {failures}", failures=failures)
    return filings, index_ms


def run_financebench(
    questions_path: str,
    filing_dirs: str | Sequence[str],
    setting: str,
    store_path: str | None,
    qdrant_url: str | None = None,
    ks: tuple[int, ...] = DEFAULT_KS,
    ablate: list[str] | None = None,
    baseline: bool = False,
    model: str = "all-MiniLM-L6-v2",
    quiet: bool = False,
    timeout_s: float | None = 600,
    workers: int = 1,
    fragments: list[str] | tuple[str, ...] = (),
) -> dict[str, Any]:
    """Run the benchmark and return the contract JSON as a dict (``filing_dirs``: the folder or folders holding
    DOC_NAME.pdf/.html; ``timeout_s``/``workers``: see ``indexing_runner.index_filings``; ``fragments``: YAML
    fragments applied to the query pipeline, e.g. calibrated thresholds)."""
    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {SETTINGS}, got {setting!r}")
    ablated = set(ablate or [])
    unknown = ablated - set(ABLATIONS)
    if unknown:
        raise ValueError(f"unknown ablation(s) {sorted(unknown)}; choose from {ABLATIONS}")
    questions = load_questions(questions_path)
    filings, index_ms = index_question_filings(
        questions, filing_dirs, store_path, qdrant_url, quiet, timeout_s, workers
    )

    fin = HaystackFinRetrieval(store_path, qdrant_url, ablated, fragments=fragments)
    try:
        result = _score(
            questions,
            lambda q: fin.retrieve(q.question, [q.doc_name] if setting == "single" else None),
            ks,
            quiet,
            "haystack-fin",
            candidates=lambda: fin.last_candidates,
        )
    finally:
        fin.close()
    result["timings"]["index_ms_per_page"] = round(index_ms, 1) if index_ms is not None else None
    result["timings"]["preload_s"] = round(fin.preload_s, 1)
    if fin.graph_preload_s is not None:
        result["timings"]["graph_preload_s"] = round(fin.graph_preload_s, 1)
    result["config"] = {"setting": setting, "ablate": sorted(ablated), "ks": list(ks), "n_questions": len(questions)}
    if fragments:
        result["config"]["fragments"] = [str(f) for f in fragments]
    if baseline:
        plain = PlainHaystackBaseline(model)
        t0 = time.perf_counter()
        n_pages = sum(plain.index(f, f.stem) for f in tqdm(filings, desc="Indexing (plain)", disable=quiet))
        plain_ms = 1000 * (time.perf_counter() - t0) / n_pages
        base = _score(
            questions,
            lambda q: plain.retrieve(q.question, [q.doc_name] if setting == "single" else None),
            ks,
            quiet,
            "plain Haystack",
        )
        base["timings"]["index_ms_per_page"] = round(plain_ms, 1)
        result["baseline"] = base
    return result
