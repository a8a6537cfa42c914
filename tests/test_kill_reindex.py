"""A re-index killed with SIGKILL at 20 random moments of its write always leaves the filing complete, the old
version or the new one, and the next index's start-up removes what the killed write left
(benchmarks/kill_reindex.py does the killing; its committed result: benchmarks/results/kill-reindex-20.json)."""

import pytest
from helpers.benchmark_modules import load_benchmark


@pytest.mark.integration  # 21 child processes, ~2 minutes
def test_twenty_random_kills_leave_the_old_or_the_new_version_complete(tmp_path):
    kill_reindex = load_benchmark("kill_reindex")
    result = kill_reindex.run_trials(trials=20, seed=25, workdir=str(tmp_path))
    assert result["reference_after_uninterrupted_write"]["complete"]
    for row in result["rows"]:
        assert row["complete"], row  # a query reads exactly version 1 or exactly version 2
        assert row["recovery"]["runs_left"] == 1 and not row["recovery"]["marker_left"], row
        assert row["complete_after_recovery"], row
    assert result["complete"] == 20
    # The kills landed in the write, not only before or after it.
    assert result["by_phase"].get("writing the new run", 0) > 0
