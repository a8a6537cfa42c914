"""Every component that holds a shared document store releases it on close(), so Pipeline.close() frees an
embedded Qdrant folder."""

import uuid

import pytest
from haystack import Pipeline

from haystack_fin.components.dense_filing_scope import DenseFilingScope
from haystack_fin.components.dual_tree_retriever import DualTreeRetriever
from haystack_fin.components.filing_scope import FilingScope
from haystack_fin.components.flam_router import FlamRouter
from haystack_fin.components.passage_window import PassageWindow
from haystack_fin.store_registry import shared_store


class ClosingStore:
    """A store-like object with a configuration of its own and a close() that counts its calls."""

    def __init__(self) -> None:
        self.name = uuid.uuid4().hex  # the registry is process-wide
        self.closed = 0

    def to_dict(self) -> dict:
        return {"type": "tests.ClosingStore", "init_parameters": {"name": self.name}}

    def filter_documents(self, filters=None) -> list:
        return []

    def close(self) -> None:
        self.closed += 1


@pytest.mark.parametrize("cls", [FilingScope, DenseFilingScope, FlamRouter, DualTreeRetriever, PassageWindow])
def test_pipeline_close_releases_the_shared_store(cls):
    store = ClosingStore()
    pipe = Pipeline()
    pipe.add_component("c", cls(document_store=store))
    pipe.get_component("c").warm_up()
    pipe.close()
    assert store.closed == 1
    other = ClosingStore()
    other.name = store.name
    assert shared_store(other) is other  # the configuration was released: a new instance is registered
    pipe.close()  # a second close does nothing
    assert store.closed == 1
