from haystack_fin.core.windows import WindowPart, build_window, chunk_index, join_texts, neighbour_ids


def _part(i: int, item: str = "7", table: str | None = None, words: int = 50) -> WindowPart:
    return WindowPart(f"f#chunk-{i:05d}", " ".join([f"w{i}"] * words), item, table, [i])


def test_ids():
    assert chunk_index("ACME_2023_10K#chunk-00012") == 12
    assert chunk_index("ACME#filing") is None
    assert neighbour_ids("f#chunk-00001", 2) == ["f#chunk-00000", "f#chunk-00002", "f#chunk-00003"]


def test_window_grows_both_sides_within_budget_and_item():
    parts = {p.id: p for p in [_part(0, item="6"), _part(1), _part(2), _part(3), _part(4), _part(5)]}
    window = build_window(parts["f#chunk-00002"], parts, radius=3, max_words=200)
    assert [p.id for p in window] == ["f#chunk-00001", "f#chunk-00002", "f#chunk-00003", "f#chunk-00004"]
    # chunk 0 is another Item: never added even with a large budget
    window = build_window(parts["f#chunk-00002"], parts, radius=3, max_words=10_000)
    assert "f#chunk-00000" not in [p.id for p in window]


def test_table_grows_only_with_its_own_blocks():
    parts = {p.id: p for p in [_part(0), _part(1, table="t1"), _part(2, table="t1"), _part(3, table="t2")]}
    window = build_window(parts["f#chunk-00001"], parts, radius=3, max_words=10_000)
    assert [p.id for p in window] == ["f#chunk-00001", "f#chunk-00002"]


def test_join_drops_repeated_overlap():
    a = "Revenue rose 5%. Margins fell."
    b = "Margins fell. Cash grew."
    assert join_texts([a, b]) == "Revenue rose 5%. Margins fell.\nCash grew."
    assert join_texts(["One.", "Two."]) == "One.\nTwo."
