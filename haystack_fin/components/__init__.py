"""Haystack components of haystack-fin, importable from here (``from haystack_fin.components import FilingScope``).

Imports are lazy, as in Haystack's own component packages: importing one component does not import the others (the
embedders import torch; a query-only process should not). YAML names the defining module, e.g.
``haystack_fin.components.filing_splitter.FilingSplitter``.
"""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "answer_checker": ["AnswerChecker"],
    "chunk_summarizer": ["ChunkSummarizer"],
    "dense_filing_scope": ["DenseFilingScope"],
    "document_embedder": ["FinDocumentEmbedder"],
    "dual_tree_retriever": ["DualTreeRetriever"],
    "filing_converter": ["FilingConverter"],
    "filing_scope": ["FilingScope"],
    "filing_splitter": ["FilingSplitter"],
    "filing_writer": ["FilingWriter"],
    "flam_router": ["FlamRouter"],
    "graph_expander": ["GraphExpander"],
    "modality_fallback": ["ModalityThresholdFallback"],
    "numpy_text_embedder": ["NumpyTextEmbedder"],
    "passage_window": ["PassageWindow"],
    "qdrant_edge_retriever": ["QdrantEdgeEmbeddingRetriever"],
    "query_analyzer": ["QueryAnalyzer"],
    "query_pipeline": ["FinQueryPipeline"],
    "text_embedder": ["FinTextEmbedder"],
    "tree_builder": ["TreeBuilder"],
    "two_stage_ranker": ["TwoStageRanker"],
}

if TYPE_CHECKING:
    from .answer_checker import AnswerChecker as AnswerChecker
    from .chunk_summarizer import ChunkSummarizer as ChunkSummarizer
    from .dense_filing_scope import DenseFilingScope as DenseFilingScope
    from .document_embedder import FinDocumentEmbedder as FinDocumentEmbedder
    from .dual_tree_retriever import DualTreeRetriever as DualTreeRetriever
    from .filing_converter import FilingConverter as FilingConverter
    from .filing_scope import FilingScope as FilingScope
    from .filing_splitter import FilingSplitter as FilingSplitter
    from .filing_writer import FilingWriter as FilingWriter
    from .flam_router import FlamRouter as FlamRouter
    from .graph_expander import GraphExpander as GraphExpander
    from .modality_fallback import ModalityThresholdFallback as ModalityThresholdFallback
    from .numpy_text_embedder import NumpyTextEmbedder as NumpyTextEmbedder
    from .passage_window import PassageWindow as PassageWindow
    from .qdrant_edge_retriever import QdrantEdgeEmbeddingRetriever as QdrantEdgeEmbeddingRetriever
    from .query_analyzer import QueryAnalyzer as QueryAnalyzer
    from .query_pipeline import FinQueryPipeline as FinQueryPipeline
    from .text_embedder import FinTextEmbedder as FinTextEmbedder
    from .tree_builder import TreeBuilder as TreeBuilder
    from .two_stage_ranker import TwoStageRanker as TwoStageRanker
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
