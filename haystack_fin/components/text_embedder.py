from typing import Any

from haystack import component
from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersTextEmbedder

from haystack_fin.core.models import DEFAULT_EMBEDDER, model_unavailable_error, resolve_model


@component
class FinTextEmbedder(SentenceTransformersTextEmbedder):
    """SentenceTransformersTextEmbedder that also understands the bundled-model alias (see FinDocumentEmbedder).

    Usage example:
    ```python
    from haystack_fin.components.text_embedder import FinTextEmbedder

    embedder = FinTextEmbedder()
    embedder.warm_up()
    vector = embedder.run("What was FY2018 capex?")["embedding"]
    ```
    """

    def __init__(self, model: str = DEFAULT_EMBEDDER, **kwargs: Any) -> None:
        kwargs.setdefault("local_files_only", True)
        kwargs.setdefault("progress_bar", False)
        SentenceTransformersTextEmbedder.__init__(
            self, model=model, **kwargs
        )  # @component rebuilds the class: no bare super()

    def warm_up(self) -> None:
        """Load the model; the alias is resolved here so that ``to_dict`` keeps the portable name."""
        if self.embedding_backend is not None:
            return
        configured = self.model
        self.model = resolve_model(configured)
        try:
            SentenceTransformersTextEmbedder.warm_up(self)
        except OSError as exc:
            raise model_unavailable_error(configured, exc, bool(self.local_files_only)) from exc
        finally:
            self.model = configured
