from typing import Any

from haystack import component
from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersTextEmbedder

from haystack_fin.core.models import DEFAULT_EMBEDDER, resolved_model
from haystack_fin.core.validation import check_int


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

    def __init__(self, model: str = DEFAULT_EMBEDDER, torch_threads: int | None = 1, **kwargs: Any) -> None:
        """
        :param model: a sentence-transformers model name or path, or the bundled-model alias.
        :param torch_threads: torch intra-op threads while one question is embedded (None: torch's setting). One
            short text gains nothing from a second thread, and on a busy CPU the threads wait on each other: with
            the machine's 2 cores under a load of ~16, one question took 2,384 ms p50 with 2 threads and 326 ms
            with 1. The process's setting is restored after each call.
        :param kwargs: ``SentenceTransformersTextEmbedder``'s other parameters.
        """
        check_int("torch_threads", torch_threads, optional=True)
        kwargs.setdefault("local_files_only", True)
        kwargs.setdefault("progress_bar", False)
        SentenceTransformersTextEmbedder.__init__(
            self, model=model, **kwargs
        )  # @component rebuilds the class: no bare super()
        self.torch_threads = torch_threads

    def to_dict(self) -> dict[str, Any]:
        data = SentenceTransformersTextEmbedder.to_dict(self)
        data["init_parameters"]["torch_threads"] = self.torch_threads
        return data

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, Any]:
        """Embed ``text`` (see ``SentenceTransformersTextEmbedder.run``) with ``torch_threads`` threads."""
        if self.torch_threads is None:
            return SentenceTransformersTextEmbedder.run(self, text)
        import torch

        previous = torch.get_num_threads()
        if previous == self.torch_threads:
            return SentenceTransformersTextEmbedder.run(self, text)
        torch.set_num_threads(self.torch_threads)  # process-wide: restored below
        try:
            return SentenceTransformersTextEmbedder.run(self, text)
        finally:
            torch.set_num_threads(previous)

    def warm_up(self) -> None:
        """Load the model; the alias is resolved here so that ``to_dict`` keeps the portable name."""
        if self.embedding_backend is not None:
            return
        with resolved_model(self):
            SentenceTransformersTextEmbedder.warm_up(self)
