"""haystack-fin: structure-aware, domain-aware and explainable retrieval over SEC filings for Haystack."""

from pathlib import Path

__version__ = "0.1.0"


def pipelines_dir() -> Path:
    """The folder holding the shipped YAML: inside the wheel, or the repository's ``pipelines/``."""
    packaged = Path(__file__).parent / "pipelines"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "pipelines"
