import functools
from dataclasses import replace
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.core.serialization import component_to_dict
from haystack.dataclasses import ChatMessage
from haystack.utils import deserialize_component_inplace
from tqdm import tqdm

from haystack_fin.components.document_embedder import FinDocumentEmbedder
from haystack_fin.core import schema
from haystack_fin.core.ingest.clustering import (
    DEFAULT_MAX_CLUSTER_SIZE,
    DEFAULT_REDUCER,
    DEFAULT_SOFT_THRESHOLD,
    Reducer,
    build_tree_topology,
    validate_tree_params,
)
from haystack_fin.core.ingest.node_texts import parse_node_reply
from haystack_fin.core.ingest.tree_nodes import LeafFacts, item_node_texts, leaf_tree_meta, tree_node_records
from haystack_fin.core.lexicon import Lexicon
from haystack_fin.core.schema import NodeType
from haystack_fin.core.validation import check_int

logger = logging.getLogger(__name__)

_PROMPT = """You index a section of an SEC filing: {heading}.
Read the passages and reply with one JSON object and nothing else:
{{"summary": "<at most {max_words} words: the main facts, figures and periods of the passages>",
"questions": ["<3 to {max_questions} questions that the passages answer, each naming the metric or topic>"]}}
Use only facts stated in the passages.

Passages:
{passages}"""

# Why reducer="pca" is the default. Measured on tests/fixtures/netflix-10k-2015.pdf (72 pages, 359 chunks in 21
# Items, chunks embedded with meta_fields_to_embed=["context"]), 2 CPU cores shared with other jobs (load 3.5-5.8),
# bundled MiniLM; TreeBuilder.run including the embedding of the question nodes, 3 runs per process:
#   chunk embedding alone (the plain-Haystack cost): 27-37 s = 375-521 ms/page (206 ms/page on an idle machine)
#   reducer="pca":  6.1-9.3 s = 85-129 ms/page, 226 tree nodes (topology 0.8-1.5 s, texts 0.3-0.4 s, the rest is
#                   embedding 113 question nodes), i.e. 0.16-0.25x the chunk embedding of the same session
#   reducer="umap": warm 6.8-7.8 s = 95-108 ms/page, 208 tree nodes (topology 1.2 s); the first run of a process
#                   17.1 s = 238 ms/page with numba's on-disk cache, 31.6 s = 439 ms/page without it (import + JIT)
# So trees add ~0.2x the chunk embedding (~35-50 ms/page at the idle machine's 206 ms/page), far inside the 3x budget
# of plain indexing; but `haystack-fin index` is one process per call, where UMAP's start-up alone costs 140-360
# ms/page on a 72-page filing, and umap-learn is an optional extra. UMAP stays available for long indexing runs.


@component
class TreeBuilder:
    """Builds FinGEAR's dual trees per SEC Item: a summary tree and a question tree sharing one topology.

    Expects chunk Documents with embeddings, as ``FilingSplitter`` followed by a document embedder produces them
    (meta ``filing_id``, ``item``, ``section_path``, ``page_numbers``, ``index_run``; ``table`` JSON for table
    chunks), from one or several filings. For each (filing, Item) it clusters the chunk embeddings bottom-up into a
    tree (``haystack_fin.core.ingest.clustering.build_tree_topology``; up to ``max_cluster_size`` children per node, a
    leaf may sit under two bottom nodes) and makes, for every internal node:

    - a ``summary`` node: an extractive summary of the chunks below (central sentences, salient lexicon terms, table
      row labels), not embedded by default (the summary tree is searched with BM25);
    - its ``question`` twin: questions the subtree answers, embedded with ``embedder``; built by default only when a
      ``chat_generator`` writes the questions (``question_tree``).

    With a ``chat_generator`` (e.g. ``OllamaChatGenerator``) the summary and questions of each node come from the
    LLM instead (bottom-up: upper nodes summarise their children's summaries); a failed call or an unusable reply
    falls back to the extractive text for that node only.

    Node ids are deterministic: ``<filing_id>#<run>/tree-<item>-s<level>-<j>`` and ``...-q<level>-<j>`` (``<run>``:
    the chunks' indexing run); the root is level 0. Tree meta follows Haystack's HierarchicalDocumentSplitter
    (``__level``, ``__parent_id``, ``__children_ids``, ``__block_size``), so ``AutoMergingRetriever`` can merge
    chunks into summary nodes. The chunks are returned too, as copies with ``__parent_id`` (their main bottom-level
    summary node), ``tree_parent_ids`` (all of them), ``__level`` and ``__block_size``. Documents that are not
    chunks pass through unchanged.

    Without a ``chat_generator`` the question tree is not built by default (``question_tree``): template questions
    were measured to add no retrieval quality on unseen filings and on the analyst set (docs/design.md) while their
    embedding is most of the trees' indexing cost, so the default index has the summary tree only, which
    DualTreeRetriever then walks alone.

    Usage example:
    ```python
    from haystack import Pipeline
    from haystack_fin.components.document_embedder import FinDocumentEmbedder
    from haystack_fin.components.filing_converter import FilingConverter
    from haystack_fin.components.filing_splitter import FilingSplitter
    from haystack_fin.components.tree_builder import TreeBuilder

    pipe = Pipeline()
    pipe.add_component("converter", FilingConverter())
    pipe.add_component("splitter", FilingSplitter())
    pipe.add_component("embedder", FinDocumentEmbedder(meta_fields_to_embed=["context"]))
    pipe.add_component("trees", TreeBuilder())
    pipe.connect("converter.documents", "splitter.documents")
    pipe.connect("splitter.documents", "embedder.documents")
    pipe.connect("embedder.documents", "trees.documents")
    result = pipe.run({"converter": {"sources": ["tests/fixtures/netflix-10k-2015.pdf"]}})
    print(result["trees"]["n_tree_nodes"])
    ```
    """

    def __init__(
        self,
        embedder: Any = None,
        chat_generator: Any = None,
        max_cluster_size: int = DEFAULT_MAX_CLUSTER_SIZE,
        reducer: Reducer = DEFAULT_REDUCER,
        soft_threshold: float = DEFAULT_SOFT_THRESHOLD,
        embed_summaries: bool = False,
        max_summary_words: int = 120,
        max_questions: int = 5,
        max_prompt_chars: int = 6000,
        lexicon_path: str | None = None,
        random_state: int = 0,
        progress_bar: bool = False,
        question_tree: bool | None = None,
    ) -> None:
        """
        :param embedder: any Haystack document embedder (``run(documents=...)`` returning ``documents``) for the
            question nodes; use the chunk embedder's model, since queries are matched against both. Default:
            ``FinDocumentEmbedder()``, the bundled MiniLM. Tree nodes carry a ``context`` meta line like chunks do
            ("company form period | Item label"), for an embedder configured with ``meta_fields_to_embed``.
        :param chat_generator: optional Haystack chat generator writing summaries and questions; None (default)
            builds them without a model, deterministically.
        :param max_cluster_size: most children per tree node (and the root's fan-out); at least 2.
        :param reducer: dimension reduction before clustering: "pca" (default, fast), "umap" (RAPTOR's choice;
            needs umap-learn and costs ~36 s of import and JIT once per process), or "none".
        :param soft_threshold: membership probability from which a chunk also joins a second bottom node.
        :param embed_summaries: also embed summary nodes (they are searched with BM25 otherwise).
        :param max_summary_words: word budget of a summary.
        :param max_questions: most questions per question node.
        :param max_prompt_chars: most characters of passages sent to the chat generator per node.
        :param lexicon_path: a lexicon JSON file for the salient terms; None uses the built-in lexicon.
        :param random_state: seed of the clustering.
        :param progress_bar: show a progress bar over (filing, Item) groups.
        :param question_tree: build the question tree (question nodes, embedded). None (default): only with a
            ``chat_generator``, i.e. with LLM-written questions (class docstring); True: also with template questions;
            False: never.
        """
        validate_tree_params(reducer, max_cluster_size, soft_threshold)
        check_int("max_summary_words", max_summary_words, 10)
        check_int("max_questions", max_questions)
        check_int("max_prompt_chars", max_prompt_chars, 200)
        if embedder is None:  # constructing it loads nothing: the model is loaded in warm_up
            embedder = FinDocumentEmbedder(progress_bar=False)
        self.embedder = embedder
        self.chat_generator = chat_generator
        self.max_cluster_size = max_cluster_size
        self.reducer = reducer
        self.soft_threshold = soft_threshold
        self.embed_summaries = embed_summaries
        self.max_summary_words = max_summary_words
        self.max_questions = max_questions
        self.max_prompt_chars = max_prompt_chars
        self.lexicon_path = lexicon_path
        self.random_state = random_state
        self.progress_bar = progress_bar
        self.question_tree = question_tree
        self._lexicon: Lexicon | None = None
        self._warm = False

    @property
    def builds_question_tree(self) -> bool:
        """Whether question nodes are made (see ``question_tree``)."""
        return self.chat_generator is not None if self.question_tree is None else bool(self.question_tree)

    def warm_up(self) -> None:
        """Load the lexicon and warm up the embedder and chat generator (Pipeline does not warm nested components)."""
        if self._warm:
            return
        self._lexicon = Lexicon.load(self.lexicon_path)
        # The embedder is only needed for question nodes (and summaries when embedded): no model load otherwise.
        needs_embedder = self.builds_question_tree or self.embed_summaries
        for nested in (self.embedder if needs_embedder else None, self.chat_generator):
            if nested is not None and hasattr(nested, "warm_up"):
                nested.warm_up()
        self._warm = True

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            embedder=component_to_dict(self.embedder, "embedder"),
            chat_generator=component_to_dict(self.chat_generator, "chat_generator") if self.chat_generator else None,
            max_cluster_size=self.max_cluster_size,
            reducer=self.reducer,
            soft_threshold=self.soft_threshold,
            embed_summaries=self.embed_summaries,
            max_summary_words=self.max_summary_words,
            max_questions=self.max_questions,
            max_prompt_chars=self.max_prompt_chars,
            lexicon_path=self.lexicon_path,
            random_state=self.random_state,
            progress_bar=self.progress_bar,
            question_tree=self.question_tree,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TreeBuilder":
        params = data.get("init_parameters", {})
        for key in ("embedder", "chat_generator"):
            if params.get(key) is not None:
                deserialize_component_inplace(params, key=key)
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], n_tree_nodes=int)
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """
        Build the summary and question trees of every (filing, Item) in ``documents``.

        :param documents: chunks with embeddings (other node types pass through).
        :returns: ``documents``: the input Documents (chunks as copies with tree parents) followed by the tree
            nodes, ready for ``FilingWriter``; ``n_tree_nodes``: how many summary and question nodes were made.
        :raises ValueError: when a chunk has no embedding (put a document embedder before the tree builder).
        """
        self.warm_up()
        groups: dict[tuple[str, str], list[int]] = {}
        for position, doc in enumerate(documents):
            if (doc.meta.get(schema.NODE_TYPE) or NodeType.CHUNK.value) != NodeType.CHUNK.value:
                continue
            filing_id = doc.meta.get(schema.FILING_ID)
            if not filing_id:
                logger.warning("Chunk {doc_id} has no {field}: it gets no tree", doc_id=doc.id, field=schema.FILING_ID)
                continue
            if doc.embedding is None or len(doc.embedding) == 0:
                raise ValueError(
                    f"Chunk {doc.id} has no embedding: TreeBuilder clusters chunk embeddings, so it must follow a "
                    "document embedder in the pipeline."
                )
            groups.setdefault((str(filing_id), str(doc.meta.get(schema.ITEM) or "none")), []).append(position)

        output = list(documents)
        tree_nodes: list[Document] = []
        for (filing_id, item), positions in tqdm(
            groups.items(), desc="Building trees", unit="item", disable=not self.progress_bar
        ):
            chunks = [documents[p] for p in positions]
            nodes, updated_chunks = self._build_item(filing_id, item, chunks)
            tree_nodes.extend(nodes)
            for position, chunk in zip(positions, updated_chunks, strict=True):
                output[position] = chunk

        tree_nodes = self._embed(tree_nodes)
        logger.info(
            "Built {n_trees} trees with {n_nodes} summary and question nodes",
            n_trees=len(groups),
            n_nodes=len(tree_nodes),
        )
        return {"documents": output + tree_nodes, "n_tree_nodes": len(tree_nodes)}

    # ---------------------------------------------------------------------------------------------- one Item

    def _build_item(self, filing_id: str, item: str, chunks: list[Document]) -> tuple[list[Document], list[Document]]:
        embeddings = np.asarray([chunk.embedding for chunk in chunks], dtype=float)
        topology = build_tree_topology(
            embeddings,
            max_cluster_size=self.max_cluster_size,
            reducer=self.reducer,
            soft_threshold=self.soft_threshold,
            random_state=self.random_state,
        )
        contents = [chunk.content or "" for chunk in chunks]
        leaves = LeafFacts(contents, [chunk.meta for chunk in chunks], self._lexicon)
        rewrite = None
        if self.chat_generator is not None:
            rewrite = functools.partial(self._llm_texts, chunks[0])
        texts = item_node_texts(
            topology,
            leaves,
            contents,
            embeddings,
            str(chunks[0].meta.get(schema.PERIOD) or ""),
            self.max_summary_words,
            self.max_questions,
            self.builds_question_tree,
            self._lexicon,
            rewrite,
        )
        ids = [chunk.id for chunk in chunks]
        records = tree_node_records(
            filing_id, item, topology, ids, chunks[0].meta, leaves, texts, self.builds_question_tree
        )
        run = str(chunks[0].meta.get(schema.INDEX_RUN) or "")  # tree nodes belong to their chunks' run
        updated = [
            replace(chunk, meta={**chunk.meta, **tree_meta})
            for chunk, tree_meta in zip(chunks, leaf_tree_meta(filing_id, item, topology, leaves, run), strict=True)
        ]
        return [Document(id=i, content=c, meta=m) for i, c, m in records], updated

    def _llm_texts(
        self, first_chunk: Document, passages: list[str], summary: str, questions: list[str]
    ) -> tuple[str, list[str], tuple[str, str]]:
        """Ask the chat generator; keep the extractive summary or template questions for whatever it gets wrong."""
        meta = first_chunk.meta
        section = meta.get(schema.SECTION_PATH) or [meta.get(schema.ITEM_TITLE) or meta.get(schema.ITEM)]
        heading = " ".join(str(meta.get(k) or "") for k in (schema.COMPANY, schema.FORM, schema.PERIOD)).strip()
        heading = f"{heading}, {section[0]}" if heading else str(section[0])
        budget = self.max_prompt_chars // max(1, len(passages))
        numbered = "\n\n".join(f"[{i}] {text[:budget]}" for i, text in enumerate(passages, start=1))
        prompt = _PROMPT.format(
            heading=heading, max_words=self.max_summary_words, max_questions=self.max_questions, passages=numbered
        )
        try:
            replies = self.chat_generator.run(messages=[ChatMessage.from_user(prompt)])["replies"]
            reply = replies[0].text if replies else None
        except Exception as error:  # any generator failure degrades this node only
            logger.warning(
                "Chat generator failed on a tree node of {heading} ({error}); using extractive text",
                heading=heading,
                error=error,
            )
            return summary, questions, ("extractive", "template")
        llm_summary, llm_questions = parse_node_reply(reply or "", self.max_summary_words, self.max_questions)
        if llm_summary is None or llm_questions is None:
            logger.warning(
                "Unusable chat reply for a tree node of {heading} ({problem}); using extractive text for it",
                heading=heading,
                problem="no summary" if llm_summary is None else "no questions",
            )
        return (
            llm_summary or summary,
            llm_questions or questions,
            ("extractive" if llm_summary is None else "llm", "template" if llm_questions is None else "llm"),
        )

    def _embed(self, nodes: list[Document]) -> list[Document]:
        wanted = {NodeType.QUESTION.value} | ({NodeType.SUMMARY.value} if self.embed_summaries else set())
        to_embed = [node for node in nodes if node.meta[schema.NODE_TYPE] in wanted]
        if not to_embed:
            return nodes
        embedded = {doc.id: doc for doc in self.embedder.run(documents=to_embed)["documents"]}
        return [replace(node, embedding=embedded[node.id].embedding) if node.id in embedded else node for node in nodes]
