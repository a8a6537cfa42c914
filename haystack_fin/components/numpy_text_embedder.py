from pathlib import Path
from typing import Any

from haystack import component, default_from_dict, default_to_dict

from haystack_fin.core.bert_numpy import BertNumpyEncoder, l2_normalize
from haystack_fin.core.models import DEFAULT_EMBEDDER, resolve_model


@component
class NumpyTextEmbedder:
    """Embeds one question with a BERT-family sentence-transformers model run in numpy: no torch, no
    sentence-transformers import.

    The vectors are those of ``FinTextEmbedder`` / ``SentenceTransformersTextEmbedder`` for the same model (the
    model's own weights and tokenizer; cosine >= 0.9999999 on the 182 dev and analyst questions), so an index built
    with ``FinDocumentEmbedder`` is queried as before. What it saves is the cold start of a one-question process
    (``ask``): importing sentence-transformers and loading the model through it. Models: a local folder with
    ``config.json`` (``model_type: bert``), ``model.safetensors``, ``tokenizer.json`` and sentence-transformers'
    pooling config (mean or CLS, optional Normalize), e.g. the bundled all-MiniLM-L6-v2 or bge-base-en-v1.5; any
    other model needs ``FinTextEmbedder``.

    Usage example:
    ```python
    from haystack_fin.components.numpy_text_embedder import NumpyTextEmbedder

    embedder = NumpyTextEmbedder()  # the bundled all-MiniLM-L6-v2
    embedder.warm_up()
    vector = embedder.run("What was FY2018 capex?")["embedding"]  # 384 floats
    ```
    """

    def __init__(
        self, model: str = DEFAULT_EMBEDDER, prefix: str = "", suffix: str = "", normalize_embeddings: bool = False
    ) -> None:
        """
        :param model: the bundled-model alias or the path of a local model folder.
        :param prefix: text put before the question (instruction-tuned models, e.g. bge's query instruction).
        :param suffix: text put after the question.
        :param normalize_embeddings: L2-normalize the vector (models with a Normalize module are normalized anyway).
        """
        self.model = model
        self.prefix = prefix
        self.suffix = suffix
        self.normalize_embeddings = normalize_embeddings
        self._encoder: BertNumpyEncoder | None = None

    def warm_up(self) -> None:
        """Read the model folder (weights, tokenizer, pooling); raises OSError naming the model when it is not one."""
        if self._encoder is not None:
            return
        folder = resolve_model(self.model)
        if not Path(folder).is_dir():
            raise OSError(
                f"embedder model {self.model!r}: NumpyTextEmbedder reads a local model folder (the bundled alias "
                f"{DEFAULT_EMBEDDER!r} or a path), and {folder!r} is not one; FinTextEmbedder loads hub names"
            )
        self._encoder = BertNumpyEncoder.load(folder)

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, Any]:
        """Embed ``text``.

        :param text: the question.
        :returns: ``embedding``: the vector as a list of floats.
        """
        if not isinstance(text, str):
            raise TypeError("NumpyTextEmbedder expects a string; embed Documents with FinDocumentEmbedder")
        if self._encoder is None:
            self.warm_up()
        assert self._encoder is not None  # set by warm_up
        vector = self._encoder.encode([self.prefix + text + self.suffix])[0]
        return {"embedding": (l2_normalize(vector) if self.normalize_embeddings else vector).tolist()}

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            model=self.model,
            prefix=self.prefix,
            suffix=self.suffix,
            normalize_embeddings=self.normalize_embeddings,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "NumpyTextEmbedder":
        return default_from_dict(cls, data)
