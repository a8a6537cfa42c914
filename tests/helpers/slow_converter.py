"""A test-only converter for tests/test_indexing_runner.py: FilingConverter, except that a source whose file name
starts with "hang" sleeps for an hour, one starting with "crash" kills its process and one starting with "hog"
allocates 6 GB, as a pathological filing would. Importable by the runner's spawned workers (they get the parent's
sys.path)."""

import os
import time
from pathlib import Path
from typing import Any

from haystack import Document, component

from haystack_fin.components.filing_converter import FilingConverter

CRASH_EXIT_CODE = 3
HOG_BYTES = 6 << 30


@component
class SlowConverter:
    def __init__(self, table_finder: str = "hybrid", extract_images: bool = True, ocr_figures: bool = True) -> None:
        self.table_finder = table_finder
        self.extract_images = extract_images
        self.ocr_figures = ocr_figures
        self._inner = FilingConverter(table_finder=table_finder, extract_images=extract_images, ocr_figures=ocr_figures)

    @component.output_types(documents=list[Document], failures=list[dict[str, str]])
    def run(self, sources: list[str], meta: dict[str, Any] | list[dict[str, Any]] | None = None) -> dict[str, Any]:
        for source in sources:
            name = Path(str(source)).name
            if name.startswith("hang"):
                time.sleep(3600)
            if name.startswith("crash"):
                os._exit(CRASH_EXIT_CODE)
            if name.startswith("hog"):
                hog = bytearray(HOG_BYTES)  # zero-filled: all of it is touched, as a decompression bomb would
                del hog
        return self._inner.run(sources=sources, meta=meta)
