import functools
import time
from typing import Any, Literal

from haystack import Document, component, default_from_dict, default_to_dict, logging

from haystack_fin.core import schema
from haystack_fin.core.graph.build import GRAPH_VERSION, chunk_graph_meta
from haystack_fin.core.ingest.chunking import check_chunking, chunk_paragraphs
from haystack_fin.core.ingest.filing_node import (
    build_filing_node,
    chunk_meta,
    drop_chunks,
    filing_node_text,
    filing_provenance,
    indexing_run_id,
    parsed_filing,
)
from haystack_fin.core.ingest.items import EXHIBIT_PREFIX
from haystack_fin.core.ingest.semantic import semantic_chunks
from haystack_fin.core.ingest.structure import TextChunker, structure_filing
from haystack_fin.core.lexicon import Lexicon
from haystack_fin.core.models import DEFAULT_EMBEDDER
from haystack_fin.core.retrieval.filing_profile import form_family
from haystack_fin.core.schema import Modality

logger = logging.getLogger(__name__)

# Chunk size for the bundled all-MiniLM-L6-v2, which reads at most 256 word pieces. benchmarks/bench_chunk_size.py
# (dense retrieval inside the question's filing, FinanceBench dev filings of <= 130 pages, 24 questions) gave
# page_hit@5 / evidence_recall_bigram@5: 128/16 tokens 0.50 / 0.31, 200/20 0.38 / 0.31, 256/24 0.46 / 0.31,
# 320/32 0.50 / 0.33 - differences within the noise of 24 questions. 200 estimated tokens (~165 real word pieces:
# the estimate runs high) keeps every chunk whole inside the embedder's window, which 320 does not; the reader gets
# more context from PassageWindow at query time, so chunks only need to be precise units for the embedder.
DEFAULT_CHUNK_TOKENS = 200
DEFAULT_OVERLAP_TOKENS = 20  # ~10%: one trailing sentence of context; more costs embedding time
DEFAULT_MAX_TABLE_ROWS = 15


@component
class FilingSplitter:
    """Splits a filing into Item-, page- and table-aware chunks, plus one ``filing`` node describing it.

    Expects Documents from ``FilingConverter`` (meta ``filing_elements`` holds the layout), or any Document whose
    content is page text separated by form feeds. Steps: running headers/footers and page numbers removed,
    paragraphs and tables broken by a page joined, SEC Part/Item sections found (10-K, 10-Q, 8-K; headings for
    earnings releases and other documents; table-of-contents lines rejected), heading paths tracked, then:
    - text chunks of at most ``chunk_tokens`` (estimated word pieces) on paragraph/sentence boundaries inside an
      Item, with ``overlap_tokens`` of trailing sentences repeated;
    - table chunks: at most ``max_table_rows`` data rows per block, header rows repeated in every block, blocks
      ending after total rows, cell values parsed with sign and units into ``meta["table"]``;
    - image chunks (``modality="image"``) for charts and images: caption, chart labels, alt and OCR text as
      content, ``meta["bbox"]`` and ``meta["image"]`` (kind, caption, introducing paragraph, labels).

    Every chunk carries the provenance contract: ``filing_id, company, form, period, item, item_title,
    section_path, page_numbers, modality, table_id, source_path`` (plus ``node_type="chunk"``, ``part``,
    ``fiscal_year``, ``context``). Ids are deterministic and carry the indexing run (``<filing_id>#<run>/chunk-00012``,
    the run a hash of the content and the parameters): re-indexing the same filing rewrites the same nodes, a changed
    one is written as a new run next to the old (``FilingWriter`` switches to it and deletes the old). The filing
    node also records the source file's ``source_sha256`` and the ``skipped_pages`` the converter reports.
    With ``graph_meta`` (default) every chunk also carries its filing-graph entities and outgoing edges
    (``graph_entities``, ``graph_edges``, ``graph_version``, ``graph_lexicon``; ``core/graph/build.py``), so that
    ``GraphExpander`` rebuilds a filing's graph without re-reading its text (a store written without them, or by
    another graph version or lexicon, is extracted from the text on the filing's first query); the graph meta is
    neither embedded nor searched, and its cost is in docs/benchmarks.md.

    The exhibits filed with a 10-K or 10-Q after its signatures (sections "EX-10.2", "EX-21", ...: contracts, plans,
    indentures, consents, certifications) are left out unless ``include_filed_exhibits``: they are not the report,
    and they were 23% of the dev slice's embedded tokens while no evidence page of the 38 dev and 144 analyst
    questions lies in them. The filing node still lists them as sections without chunks (pages and title), so
    ``inspect`` shows what was left out. An 8-K's exhibits (the earnings release in EX-99.1) are always chunked.

    ``chunking="semantic"`` cuts where consecutive sentences' embeddings drift apart beyond their
    ``semantic_percentile``, then merges adjacent segments at least ``semantic_merge_threshold`` similar up to
    ``chunk_tokens``, inside Item boundaries (``core/ingest/semantic.py``); it embeds every sentence at indexing with
    ``semantic_model`` (loaded by ``warm_up``), measured against the default in docs/design.md. The per-section term
    counts (``section_term_stats``) are off by default: routing to sections did not help on the dev slice or the
    analyst set (docs/design.md), and the counting costs indexing time.

    Usage example:
    ```python
    from haystack_fin.components.filing_converter import FilingConverter
    from haystack_fin.components.filing_splitter import FilingSplitter

    filing = FilingConverter().run(sources=["tests/fixtures/bestbuy-10q-2023-07-29.pdf"])["documents"]
    result = FilingSplitter(chunk_tokens=200).run(documents=filing)
    chunk = result["documents"][0]
    print(chunk.meta["item"], chunk.meta["page_numbers"], chunk.meta["section_path"])
    print(result["filing_nodes"][0].meta["items"])
    ```
    """

    def __init__(
        self,
        chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
        overlap_tokens: int = DEFAULT_OVERLAP_TOKENS,
        max_table_rows: int = DEFAULT_MAX_TABLE_ROWS,
        include_images: bool = True,
        include_filed_exhibits: bool = False,
        term_stats: bool = True,
        tag_statements: bool = True,
        lexicon_path: str | None = None,
        chunking: Literal["sentence", "semantic"] = "sentence",
        semantic_model: str = DEFAULT_EMBEDDER,
        semantic_percentile: float = 0.95,
        semantic_merge_threshold: float = 0.75,
        graph_meta: bool = True,
        section_term_stats: bool = False,
    ):
        """
        :param chunk_tokens: token budget of a text chunk (estimated word pieces of a BERT-family tokenizer).
        :param overlap_tokens: tokens of trailing sentences repeated at the start of the next text chunk.
        :param max_table_rows: at most this many data rows per table block.
        :param include_images: emit image chunks (charts and images with caption, labels or OCR text).
        :param include_filed_exhibits: also chunk the exhibits filed with a 10-K or 10-Q (class docstring).
        :param term_stats: count the lexicon's terms per Item into the filing node (``item_term_counts``,
            ``item_term_totals``), which FlamRouter reads at query time.
        :param tag_statements: mark the blocks of primary financial statements (found by their titles) with
            ``meta["statement"]``, for questions about a statement or its line items.
        :param lexicon_path: lexicon JSON (the built-in ``haystack_fin/data/lexicon.json``'s format; default: that one)
            for the term counts, statement tags and graph entities; query with the same (QueryAnalyzer's).
        :param chunking: "sentence" (paragraphs packed on sentence boundaries up to ``chunk_tokens``) or "semantic".
        :param semantic_model: sentence-transformers model for semantic chunking (bundled alias, name or path).
        :param semantic_percentile: breakpoint percentile (0-1) of consecutive cosine distances.
        :param semantic_merge_threshold: cosine similarity at or above which adjacent segments merge.
        :param graph_meta: store each chunk's filing-graph entities (with this splitter's lexicon) and outgoing
            chunk-to-chunk edges in its meta (``core.graph.build.chunk_graph_meta``), for GraphExpander.
        :param section_term_stats: with ``term_stats``, also count per section below each Item (notes, MD&A
            subsections: ``section_term_counts``, ``section_term_totals``) for ``FlamRouter(route_sections=True)``.
        """
        check_chunking(chunk_tokens, overlap_tokens, max_table_rows, chunking, semantic_percentile)
        if lexicon_path is not None and not isinstance(lexicon_path, str):
            raise ValueError(f"lexicon_path must be a path string or None, got {type(lexicon_path).__name__}")
        self.chunk_tokens = chunk_tokens
        self.overlap_tokens = overlap_tokens
        self.max_table_rows = max_table_rows
        self.include_images = include_images
        self.include_filed_exhibits = include_filed_exhibits
        self.term_stats = term_stats
        self.tag_statements = tag_statements
        self.lexicon_path = lexicon_path
        self.chunking = chunking
        self.semantic_model = semantic_model
        self.semantic_percentile = semantic_percentile
        self.semantic_merge_threshold = semantic_merge_threshold
        self.graph_meta = graph_meta
        self.section_term_stats = section_term_stats
        self._lexicon: Lexicon | None = None
        self._embedder: Any = None

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            chunk_tokens=self.chunk_tokens,
            overlap_tokens=self.overlap_tokens,
            max_table_rows=self.max_table_rows,
            include_images=self.include_images,
            include_filed_exhibits=self.include_filed_exhibits,
            term_stats=self.term_stats,
            tag_statements=self.tag_statements,
            lexicon_path=self.lexicon_path,
            chunking=self.chunking,
            semantic_model=self.semantic_model,
            semantic_percentile=self.semantic_percentile,
            semantic_merge_threshold=self.semantic_merge_threshold,
            graph_meta=self.graph_meta,
            section_term_stats=self.section_term_stats,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FilingSplitter":
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Load the financial lexicon once, if term statistics, statement tags or graph meta are on, and the
        embedder of semantic chunking."""
        if (self.term_stats or self.tag_statements or self.graph_meta) and self._lexicon is None:
            self._lexicon = Lexicon.load(self.lexicon_path)
        if self.chunking == "semantic" and self._embedder is None:
            from haystack_fin.components.document_embedder import FinDocumentEmbedder

            embedder = FinDocumentEmbedder(model=self.semantic_model, progress_bar=False)
            embedder.warm_up()
            self._embedder = embedder

    def _text_chunker(self) -> TextChunker:
        if self.chunking != "semantic":
            return chunk_paragraphs
        if self._embedder is None:
            self.warm_up()
        embedder = self._embedder

        def embed(texts: list[str]) -> list[list[float]]:
            docs = embedder.run(documents=[Document(content=t) for t in texts])["documents"]
            return [d.embedding for d in docs]

        return functools.partial(
            semantic_chunks,
            embed=embed,
            percentile=self.semantic_percentile,
            merge_threshold=self.semantic_merge_threshold,
        )

    def split_filing(self, doc: Document) -> tuple[list[Document], Document]:
        """Split one filing Document into chunk Documents and its filing node."""
        parsed = parsed_filing(doc.content, doc.meta, doc.id)
        meta, identity = filing_provenance(doc.meta, doc.id, parsed)
        n_pages = parsed.n_pages
        structure = structure_filing(
            parsed,
            str(meta[schema.FORM]),
            str(meta[schema.FILING_ID]),
            self.chunk_tokens,
            self.overlap_tokens,
            self.max_table_rows,
            self._text_chunker(),
            section_texts=self.term_stats and self.section_term_stats,
        )
        if not self.include_images:
            drop_chunks(structure, lambda c: c.modality == Modality.IMAGE.value)
        if not self.include_filed_exhibits and form_family(str(meta[schema.FORM])) in ("10-K", "10-Q"):
            drop_chunks(structure, lambda c: c.item.startswith(EXHIBIT_PREFIX))
        if self.graph_meta and self._lexicon is None:
            self._lexicon = Lexicon.load(self.lexicon_path)
        run_id = indexing_run_id(meta, structure, self._run_parameters())
        fid = str(meta[schema.FILING_ID])
        statements = self._lexicon if self.tag_statements else None
        chunks = [
            Document(
                id=schema.chunk_id(fid, i, run_id),
                content=rec.content,
                meta=chunk_meta(meta, rec, i, run_id, statements),
            )
            for i, rec in enumerate(structure.chunks)
        ]
        if self.graph_meta:
            self._add_graph_meta(chunks, fid, n_pages)
        term_lexicon = self._lexicon if self.term_stats else None
        node = build_filing_node(
            meta, structure, n_pages, run_id, doc.meta, identity, term_lexicon, self.section_term_stats
        )
        return chunks, Document(id=node.id, content=filing_node_text(node), meta=node.to_meta())

    def _add_graph_meta(self, chunks: list[Document], filing_id: str, n_pages: int) -> None:
        assert self._lexicon is not None
        start, cpu = time.perf_counter(), time.process_time()
        stored = chunk_graph_meta(({"id": d.id, "content": d.content, "meta": d.meta} for d in chunks), self._lexicon)
        for doc in chunks:
            doc.meta.update(stored[doc.id])
        # CPU time too: on a shared machine the wall time of a niced worker says more about the load than the step.
        logger.info(
            "graph meta: filing {filing_id}, {n} chunks, {pages} pages, {ms:.1f} ms ({cpu_ms:.1f} ms CPU)",
            filing_id=filing_id, n=len(chunks), pages=n_pages, ms=1000 * (time.perf_counter() - start),
            cpu_ms=1000 * (time.process_time() - cpu),
        )  # fmt: skip

    def _run_parameters(self) -> list[str]:
        """Every setting that changes the stored nodes (``indexing_run_id``): the run id changes with them."""
        params = [
            f"{self.chunk_tokens}/{self.overlap_tokens}/{self.max_table_rows}/{self.include_images}/{self.tag_statements}"
        ]
        if self.include_filed_exhibits:
            params.append("filed-exhibits")
        if self.tag_statements:  # a statement's blocks carry its title as their section (statement_section_path)
            params.append("statement-sections")
        if self.graph_meta and self._lexicon is not None:  # the stored entities and edges are part of the nodes
            params.append(f"graph-meta/{GRAPH_VERSION}/{self._lexicon.fingerprint}")
        if self.chunking == "semantic":  # default-mode run ids stay what they were
            params.append(f"semantic/{self.semantic_model}/{self.semantic_percentile}/{self.semantic_merge_threshold}")
        return params

    @staticmethod
    def profile_node(filing_node: Document) -> Document:
        """The filing's profile node (``schema.FilingNode.profile_meta``): the few fields the filing scope reads at
        start, so that starting does not read every filing node's Items and statistics."""
        node = schema.FilingNode.from_meta(filing_node.meta)
        return Document(id=schema.profile_node_id(node.filing_id), content="", meta=node.profile_meta())

    @component.output_types(documents=list[Document], filing_nodes=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        Split filings.

        :param documents: one Document per filing (FilingConverter output, or page text with form feeds).
        :returns: ``documents``: the chunks of all filings in order; ``filing_nodes``: per filing its filing node
            and its profile node (``node_type`` "profile", ``profile_node``).
        """
        self.warm_up()
        chunks: list[Document] = []
        nodes: list[Document] = []
        for doc in documents:
            doc_chunks, node = self.split_filing(doc)
            chunks.extend(doc_chunks)
            nodes.extend((node, self.profile_node(node)))
        return {"documents": chunks, "filing_nodes": nodes}
