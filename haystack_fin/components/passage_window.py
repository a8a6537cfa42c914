from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.document_stores.types import DocumentStore

from haystack_fin.core import schema
from haystack_fin.core.retrieval.windows import WindowPart, build_window, chunk_index, join_window, neighbour_ids
from haystack_fin.core.validation import check_int
from haystack_fin.store_registry import FilingEntry, SharedStoreClient

logger = logging.getLogger(__name__)

_BY_ID = "by_id"  # a shared filing entry's nodes by id


def _docs_by_id(entry: FilingEntry) -> dict[str, Document]:
    return {d.id: d for d in entry.docs}


def _part(doc: Document) -> WindowPart:
    return WindowPart(
        doc.id,
        doc.content or "",
        str(doc.meta.get(schema.ITEM) or ""),
        doc.meta.get(schema.TABLE_ID) or None,
        list(doc.meta.get(schema.PAGE_NUMBERS) or []),
    )


@component
class PassageWindow(SharedStoreClient):
    """Grows each ranked chunk into a passage of its neighbouring chunks (small-to-big retrieval).

    Expects chunks from ``FilingSplitter`` (deterministic ids ``<filing_id>#chunk-00012``), ranked best first, e.g.
    from ``TwoStageRanker``. For each, the ``radius`` chunks before and after are fetched by id (from the filing
    cache a retriever on the same store shares, ``store_registry.FilingCache``, else a direct lookup, no scan) and
    added in reading order while they belong to the same Item (a table block grows only with blocks of
    the same table; the table's title and header then appear once) and the passage stays within ``max_words``. A
    chunk already inside a better-ranked passage is skipped, so passages never repeat text. The passage keeps the
    hit's id, score and meta; ``content`` becomes the window, ``page_numbers`` the union of its pages, and
    ``meta["window"]`` lists the chunk ids it holds.

    Usage example:
    ```python
    from haystack_fin.components.passage_window import PassageWindow

    window = PassageWindow(document_store=store, max_words=400, top_k=5)
    passages = window.run(documents=ranked_chunks)["documents"]
    ```
    """

    def __init__(
        self,
        document_store: DocumentStore,
        radius: int = 5,
        max_words: int = 550,
        top_k: int | None = None,
        distinct_pages: bool = False,
    ):
        """
        :param document_store: the index holding the chunks.
        :param radius: at most this many chunks on each side are considered.
        :param max_words: word budget of one passage (the hit alone may exceed it).
        :param top_k: passages to return (None = as many as there are distinct hits).
        :param distinct_pages: a passage whose pages are all on pages of better passages waits until no other
            passage adds a page (two chunks of one page otherwise take two of the k places with one page).
        """
        check_int("radius", radius, 0)
        check_int("max_words", max_words)
        check_int("top_k", top_k, optional=True)
        self.document_store = document_store
        self.radius = radius
        self.max_words = max_words
        self.top_k = top_k
        self.distinct_pages = distinct_pages
        self._store: Any = None

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            document_store=self.document_store,
            radius=self.radius,
            max_words=self.max_words,
            top_k=self.top_k,
            distinct_pages=self.distinct_pages,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "PassageWindow":
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        self._attach_store()
        self._attach_filings(1)  # only read: the filings a retriever on the same store has cached

    def _fetch(self, ids: list[str]) -> dict[str, Document]:
        if not ids:
            return {}
        # A filing the shared cache holds is there whole (the retriever just loaded or checked it): its neighbours
        # are looked up in memory, and an id it lacks (past the filing's last chunk) does not exist.
        found: dict[str, Document] = {}
        rest: list[str] = []
        entries: dict[str, Any] = {}
        for node_id in ids:
            fid = schema.filing_id_of(node_id)
            if fid not in entries:
                entries[fid] = self._filings.cached(fid) if self._filings is not None else None
            entry = entries[fid]
            if entry is None:
                rest.append(node_id)
                continue
            doc = entry.view(_BY_ID, _docs_by_id).get(node_id)
            if doc is not None:
                found[node_id] = doc
        if not rest:
            return found
        if hasattr(self._store, "get_documents_by_id"):
            docs = self._store.get_documents_by_id(rest)
        else:
            docs = self._store.filter_documents({"field": "id", "operator": "in", "value": rest})
        return {**found, **{d.id: d for d in docs}}

    def _parts(self, documents: list[Document]) -> dict[str, WindowPart]:
        """The hits and their neighbours (of the hits' indexing run) as window parts, by chunk id."""
        wanted = [nid for d in documents if chunk_index(d.id) is not None for nid in neighbour_ids(d.id, self.radius)]
        known = {d.id: d for d in documents}
        fetched = self._fetch([i for i in dict.fromkeys(wanted) if i not in known])
        # Neighbours of the hits' indexing run only: while a filing is re-indexed, an id can already hold the new
        # run's chunk (FilingWriter writes the filing node last, so the hits still come from the old run).
        runs = {d.meta.get(schema.FILING_ID): d.meta.get(schema.INDEX_RUN) for d in documents}
        fetched = {
            i: d
            for i, d in fetched.items()
            if runs.get(d.meta.get(schema.FILING_ID)) in (None, d.meta.get(schema.INDEX_RUN))
            or d.meta.get(schema.INDEX_RUN) is None
        }
        return {i: _part(d) for i, d in {**fetched, **known}.items()}

    def windows(self, documents: list[Document]) -> list[list[tuple[str, list[int]]]]:
        """Each document's own window, as ``run`` would build it with nothing shown before: (chunk id, pages) in
        reading order. ``train-ranker`` records these to replay the windows of any ranking."""
        self.warm_up()
        parts = self._parts(documents)
        return [
            [(p.id, list(p.pages)) for p in build_window(_part(d), parts, self.radius, self.max_words)]
            for d in documents
        ]

    def chunk_words(self, documents: list[Document]) -> dict[str, int]:
        """The words of every chunk a window of ``documents`` can hold, by chunk id (``train-ranker`` records them
        to replay context words; their sum over a window counts the overlap between consecutive chunks and a table's
        repeated title and header, which the passage holds once: a little more than the passage's words)."""
        self.warm_up()
        return {i: len(p.text.split()) for i, p in self._parts(documents).items()}

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document], top_k: int | None = None) -> dict[str, list[Document]]:
        """
        Expand ranked chunks into passages.

        :param documents: ranked chunks, best first.
        :param top_k: passages to return; None = the init value.
        :returns: ``documents``: the passages, in the input order.
        """
        self.warm_up()
        k = self.top_k if top_k is None else top_k
        parts = self._parts(documents)
        covered: set[str] = set()
        shown: set[tuple[Any, int]] = set()
        out: list[Document] = []
        waiting: list[Document] = []
        for doc in documents:
            if doc.id in covered:
                continue
            window = [p for p in build_window(_part(doc), parts, self.radius, self.max_words) if p.id not in covered]
            covered.update(p.id for p in window)
            pages = sorted({pg for p in window for pg in p.pages})
            meta = {**doc.meta, schema.PAGE_NUMBERS: pages, schema.WINDOW: [p.id for p in window]}
            meta[schema.CHUNK_TEXT] = doc.content
            passage = replace(doc, content=join_window(window), meta=meta)
            page_keys = {(doc.meta.get(schema.FILING_ID), pg) for pg in pages}
            if self.distinct_pages and page_keys and page_keys <= shown:
                waiting.append(passage)
                continue
            shown |= page_keys
            out.append(passage)
            if k is not None and len(out) >= k:
                break
        out += waiting  # only when fewer than k passages added a page
        return {"documents": out[:k] if k is not None else out}
