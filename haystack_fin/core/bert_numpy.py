"""A BERT sentence encoder in numpy: a sentence-transformers folder (BERT + pooling + normalize) without torch.

Why: a cold ``ask`` spent most of its time importing sentence-transformers and torch (18 s and 9.5 s under
load) to embed one short question. The forward pass of a 6-layer BERT over a dozen tokens is a few matrix products,
which numpy does in milliseconds; the weights are read from the folder's ``model.safetensors`` with safetensors'
numpy loader and the text is tokenized by the folder's own ``tokenizer.json`` (Hugging Face ``tokenizers``), so the
vectors are the model's, not an approximation. It covers what sentence-transformers' ``Transformer -> Pooling ->
[Normalize]`` does for BERT-family models (all-MiniLM-L6-v2, bge-base-en); other architectures get a clear error.
"""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float32]


class UnsupportedModelError(ValueError):
    """The folder is not a BERT-family sentence-transformers model this encoder can run."""


@dataclass(frozen=True)
class _Config:
    layers: int
    heads: int
    eps: float
    max_tokens: int
    pooling: str  # "mean" or "cls"
    normalize: bool


def _read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


def _read_config(folder: Path) -> _Config:
    config = _read_json(folder / "config.json")
    if config.get("model_type") != "bert" or config.get("hidden_act", "gelu") != "gelu":
        raise UnsupportedModelError(
            f"{folder}: model_type {config.get('model_type')!r} with {config.get('hidden_act')!r}; the numpy "
            "backend runs BERT models with GELU (all-MiniLM-L6-v2, bge-*); use FinTextEmbedder for this one"
        )
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise UnsupportedModelError(f"{folder}: position embeddings {config['position_embedding_type']!r}")
    modules = _read_json(folder / "modules.json") if (folder / "modules.json").is_file() else []
    kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
    if kinds and (kinds[0] != "Transformer" or any(k not in ("Pooling", "Normalize") for k in kinds[1:])):
        raise UnsupportedModelError(
            f"{folder}: modules {kinds}; the numpy backend runs Transformer, Pooling and Normalize"
        )
    pooling = "mean"
    for module in modules:
        if module["type"].endswith("Pooling"):
            pool = _read_json(folder / module["path"] / "config.json")
            modes = [k for k, v in pool.items() if k.startswith("pooling_mode_") and v]
            if modes == ["pooling_mode_cls_token"]:
                pooling = "cls"
            elif modes != ["pooling_mode_mean_tokens"]:
                raise UnsupportedModelError(f"{folder}: pooling {modes}; the numpy backend pools by mean or CLS")
    st_config = folder / "sentence_bert_config.json"
    max_tokens = int(_read_json(st_config).get("max_seq_length", 512)) if st_config.is_file() else 512
    return _Config(
        layers=int(config["num_hidden_layers"]),
        heads=int(config["num_attention_heads"]),
        eps=float(config.get("layer_norm_eps", 1e-12)),
        max_tokens=min(max_tokens, int(config.get("max_position_embeddings", 512))),
        pooling=pooling,
        normalize="Normalize" in kinds,
    )


def _layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return np.asarray((x - mean) / np.sqrt(var + eps) * weight + bias, dtype=np.float32)


def l2_normalize(vector: Array) -> Array:
    """``vector`` scaled to unit length (a zero vector stays zero), as sentence-transformers' Normalize does."""
    return np.asarray(vector / max(float(np.linalg.norm(vector)), 1e-12), dtype=np.float32)


def _gelu(x: Array) -> Array:
    from scipy.special import erf  # BERT's GELU is the exact (erf) one, not the tanh approximation

    return np.asarray(0.5 * x * (1.0 + erf(x / np.sqrt(2.0))), dtype=np.float32)


class BertNumpyEncoder:
    """Sentence embeddings of a BERT-family sentence-transformers folder, computed with numpy.

    Usage example:
    ```python
    from haystack_fin.core.bert_numpy import BertNumpyEncoder

    encoder = BertNumpyEncoder.load("/path/to/all-MiniLM-L6-v2")
    vectors = encoder.encode(["What was FY2018 capex?"])  # shape (1, 384), L2-normalized
    ```
    """

    def __init__(self, weights: dict[str, Array], tokenizer: Any, config: _Config) -> None:
        self._w = weights
        self._tokenizer = tokenizer
        self._config = config

    @classmethod
    def load(cls, folder: str | Path) -> "BertNumpyEncoder":
        """Read config, tokenizer and weights of ``folder``; raises UnsupportedModelError for other models."""
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        path = Path(folder)
        config = _read_config(path)
        if not (path / "model.safetensors").is_file() or not (path / "tokenizer.json").is_file():
            raise UnsupportedModelError(f"{path}: the numpy backend needs model.safetensors and tokenizer.json")
        raw = load_file(str(path / "model.safetensors"))
        # Checkpoints name the encoder "bert.embeddings..." or "embeddings..."; the pooler is not used.
        weights = {k.removeprefix("bert."): v.astype(np.float32) for k, v in raw.items()}
        if "embeddings.word_embeddings.weight" not in weights:
            raise UnsupportedModelError(f"{path}: model.safetensors holds no BERT embeddings")
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        tokenizer.enable_truncation(config.max_tokens)
        tokenizer.no_padding()
        return cls(weights, tokenizer, config)

    @property
    def dimension(self) -> int:
        return int(self._w["embeddings.word_embeddings.weight"].shape[1])

    def encode(self, texts: list[str]) -> Array:
        """One row per text; texts are encoded one at a time (no padding), which is how questions arrive."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self._encode_one(text)
        return out

    def _linear(self, x: Array, name: str) -> Array:
        return np.asarray(x @ self._w[f"{name}.weight"].T + self._w[f"{name}.bias"], dtype=np.float32)

    def _norm(self, x: Array, name: str) -> Array:
        return _layer_norm(x, self._w[f"{name}.weight"], self._w[f"{name}.bias"], self._config.eps)

    def _encode_one(self, text: str) -> Array:
        w, cfg = self._w, self._config
        ids = np.asarray(self._tokenizer.encode(text).ids, dtype=np.int64)
        n = len(ids)
        h = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        h = self._norm(h, "embeddings.LayerNorm")
        dim = h.shape[1]
        head = dim // cfg.heads
        for layer in range(cfg.layers):
            p = f"encoder.layer.{layer}"
            q, k, v = (
                self._linear(h, f"{p}.attention.self.{name}").reshape(n, cfg.heads, head).transpose(1, 0, 2)
                for name in ("query", "key", "value")
            )
            scores = q @ k.transpose(0, 2, 1) / np.float32(np.sqrt(head))
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            context = (scores / scores.sum(-1, keepdims=True)) @ v
            attended = self._linear(context.transpose(1, 0, 2).reshape(n, dim), f"{p}.attention.output.dense")
            h = self._norm(attended + h, f"{p}.attention.output.LayerNorm")
            inner = _gelu(self._linear(h, f"{p}.intermediate.dense"))
            h = self._norm(self._linear(inner, f"{p}.output.dense") + h, f"{p}.output.LayerNorm")
        vector = np.asarray(h[0] if cfg.pooling == "cls" else h.mean(0), dtype=np.float32)
        return l2_normalize(vector) if cfg.normalize else vector
