"""The BLAS pool rule of shardarray/threads.py: overrides, affinity, load, MPI local ranks (no timing)."""

from __future__ import annotations

import os

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import shardarray as sa
from shardarray import threads


def choose(env=None, cores=4, ranks=1, load=0.0):
    return threads.blas_threads(env={} if env is None else env, cores=cores, ranks=ranks, load=load)


def test_quiet_machine_uses_every_core_of_one_process():
    assert choose(cores=4).threads == 4
    assert choose(cores=1).threads == 1


def test_busy_machine_never_spins():
    # one other CPU-bound process on 2 cores: 1 thread; a fully loaded machine: 1 thread, never 0
    assert choose(cores=2, load=1.0).threads == 1
    assert choose(cores=2, load=7.0).threads == 1
    assert choose(cores=8, load=2.2).threads == 6


def test_mpi_local_ranks_divide_the_cores():
    assert choose(cores=8, ranks=4).threads == 2
    assert choose(cores=2, ranks=4).threads == 1  # oversubscribed
    assert "oversubscribed" in choose(cores=2, ranks=4).reason


def test_override_wins_and_keep_leaves_the_pool():
    assert choose({"SHARDARRAY_BLAS_THREADS": "3"}, cores=2, load=5.0).threads == 3
    assert choose({"SHARDARRAY_BLAS_THREADS": "keep"}).threads is None
    assert choose({"SHARDARRAY_BLAS_THREADS": "0"}).threads is None


@pytest.mark.parametrize("var", threads.USER_VARIABLES)
def test_users_own_variable_is_respected(var):
    s = choose({var: "2"}, cores=8)
    assert s.threads is None and var in s.reason


def test_affinity_is_the_core_count():
    assert threads.available_cores() == len(os.sched_getaffinity(0))
    assert choose(env={}, cores=None, load=0.0).cores == len(os.sched_getaffinity(0))


def test_local_ranks_from_launcher_env_and_split_type():
    assert threads.local_ranks(env={}) == 1
    assert threads.local_ranks(env={"MPI_LOCALNRANKS": "3", "PMI_SIZE": "6"}) == 3
    assert threads.local_ranks(env={"OMPI_COMM_WORLD_LOCAL_SIZE": "2", "OMPI_COMM_WORLD_SIZE": "8"}) == 2
    assert threads.local_ranks(env={"PMI_SIZE": "4"}) == 4  # no node-local count: all on this node

    class Node:
        freed = False

        def Get_size(self):
            return 2

        def Free(self):
            Node.freed = True

    class World:
        kinds = []

        def Split_type(self, kind):
            World.kinds.append(kind)
            return Node()

    assert threads.local_ranks(env={"PMI_SIZE": "4"}, world=World()) == 2
    assert World.kinds and Node.freed


def _pool():
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


def test_configure_applies_and_only_lowers(monkeypatch):
    if not _pool():
        pytest.skip("no BLAS library loaded")
    for var in threads.USER_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SHARDARRAY_BLAS_THREADS", "1")
    with threadpool_limits(limits=None):  # restores the pool afterwards
        s = threads.configure_blas()
        assert s.threads == 1 and _pool() == [1] * len(_pool())
        assert threads.last_setting() == s
        monkeypatch.delenv("SHARDARRAY_BLAS_THREADS")
        monkeypatch.setattr(threads, "machine_load", lambda: 0.0)
        monkeypatch.setattr(threads, "available_cores", lambda: 64)
        s = threads.configure_blas()  # a user's smaller pool (here 1) is never raised
        assert s.threads == 1 and _pool() == [1] * len(_pool())


def test_bad_override_is_a_typed_error_at_mesh_creation(monkeypatch):
    monkeypatch.setenv("SHARDARRAY_BLAS_THREADS", "lots")
    monkeypatch.setitem(threads._STATE, "applied", False)
    with pytest.raises(sa.ArgumentError, match="SHARDARRAY_BLAS_THREADS"):
        sa.Mesh({"row": 2, "col": 2})


def test_machine_load_counts_what_is_runnable_now_not_the_lagging_average(monkeypatch):
    """The fewest runnable tasks over the samples, less this process; a high 1-minute average alone is no load."""
    import io

    def fake_proc(lines):
        it = iter(lines)
        monkeypatch.setattr(threads, "open", lambda *a, **k: io.StringIO(next(it)), raising=False)

    fake_proc(["3.90 2.00 1.00 1/120 999"] * 5)  # a job just ended: the average still says ~4, nothing runs
    assert threads.machine_load(interval_s=0) == 0.0
    fake_proc(["1.20 1.00 1.00 2/120 999", "1.20 1.00 1.00 4/120 999", "1.20 1.00 1.00 2/120 999",
               "1.20 1.00 1.00 3/120 999", "1.20 1.00 1.00 2/120 999"])  # one hog, kernel threads waking now and then
    assert threads.machine_load(interval_s=0) == 1.0
    assert threads.blas_threads(env={}, cores=2, ranks=1, load=1.0).threads == 1
