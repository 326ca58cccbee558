"""Optimistic concurrency as a real client sees it.

Two PyIceberg handles load the same table and both append. Floe must refuse
the second commit (its base is stale) or, if PyIceberg refreshes and retries
by itself, accept it on the new base. Either way no append may be lost or
duplicated: the rows are exactly those of the successful appends, with one
snapshot per successful append, each the child of the one before.
"""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest
from pyiceberg.exceptions import CommitFailedException

from conftest import FloeServer

SCHEMA = pa.schema([pa.field("writer", pa.string(), nullable=False), pa.field("n", pa.int64(), nullable=False)])


def rows(writer: str, count: int) -> pa.Table:
    return pa.Table.from_pydict({"writer": [writer] * count, "n": list(range(count))}, schema=SCHEMA)


def check_history(floe: FloeServer, ident: tuple[str, ...], appended: list[pa.Table]) -> None:
    tbl = floe.catalog().load_table(ident)  # a third, fresh client
    got = tbl.scan().to_arrow()
    want = pa.concat_tables(appended) if appended else SCHEMA.empty_table()
    assert got.num_rows == sum(t.num_rows for t in appended)
    assert sorted(got.to_pylist(), key=lambda r: (r["writer"], r["n"])) == sorted(
        want.to_pylist(), key=lambda r: (r["writer"], r["n"])
    )
    snaps = tbl.snapshots()
    assert len(snaps) == len(appended), [s.summary for s in snaps]
    assert [e.snapshot_id for e in tbl.history()] == [s.snapshot_id for s in snaps]
    parent = None
    for s in snaps:
        assert s.parent_snapshot_id == parent
        parent = s.snapshot_id
    assert tbl.current_snapshot().snapshot_id == parent
    # each snapshot adds exactly one writer's rows
    assert [int(s.summary["added-records"]) for s in snaps] == [t.num_rows for t in appended]


@pytest.mark.parametrize("retry", [True, False], ids=["client-retries", "no-client-retry"])
@pytest.mark.parametrize("seeded", [False, True], ids=["empty-table", "table-with-snapshot"])
def test_two_handles_append(floe: FloeServer, unique: str, seeded: bool, retry: bool, caplog) -> None:
    setup = floe.catalog()
    ns = (f"occ_{unique}",)
    setup.create_namespace(ns)
    ident = ns + ("t",)
    # PyIceberg retries a refused commit on a refreshed base unless told not to
    props = {} if retry else {"commit.retry.num-retries": "0"}
    setup.create_table(ident, schema=SCHEMA, properties=props)
    appended: list[pa.Table] = []
    if seeded:
        seed = rows("seed", 3)
        setup.load_table(ident).append(seed)
        appended.append(seed)

    a = floe.catalog("a").load_table(ident)
    b = floe.catalog("b").load_table(ident)
    first, second = rows("a", 5), rows("b", 7)

    a.append(first)
    appended.append(first)
    caplog.clear()
    try:
        b.append(second)
    except CommitFailedException:
        pass  # refused: b's base snapshot is no longer current
    else:
        appended.append(second)  # PyIceberg refreshed and retried on top of a's snapshot
        # it succeeded only after Floe had refused the stale first attempt
        assert "Commit failed due to a concurrent update" in caplog.text
    if not retry:
        assert appended[-1] is first, "a commit on a stale base was accepted"
    check_history(floe, ident, appended)

    # after a refresh the loser's append goes through on top of the winner's
    b.refresh()
    again = rows("b-retry", 2)
    b.append(again)
    appended.append(again)
    check_history(floe, ident, appended)


def test_racing_appends(floe: FloeServer, unique: str) -> None:
    """Several clients append at the same moment; every commit is all or nothing."""
    setup = floe.catalog()
    ns = (f"race_{unique}",)
    setup.create_namespace(ns)
    ident = ns + ("t",)
    setup.create_table(ident, schema=SCHEMA)

    writers = 4
    handles = [floe.catalog(f"w{i}").load_table(ident) for i in range(writers)]
    data = [rows(f"w{i}", 10 + i) for i in range(writers)]
    outcome: list[str | None] = [None] * writers
    start = threading.Barrier(writers)

    def run(i: int) -> None:
        start.wait(timeout=30)
        try:
            handles[i].append(data[i])
            outcome[i] = "ok"
        except CommitFailedException:
            outcome[i] = "conflict"
        except Exception as e:  # anything else is a failure of the test
            outcome[i] = f"error: {e!r}"

    threads = [threading.Thread(target=run, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert all(o in ("ok", "conflict") for o in outcome), outcome
    assert outcome.count("ok") >= 1, outcome

    # rows and snapshots of the winners only; order follows the snapshot chain
    tbl = floe.catalog().load_table(ident)
    order = []
    for s in tbl.snapshots():
        w = tbl.scan(snapshot_id=s.snapshot_id).to_arrow()
        new = sorted(set(w["writer"].to_pylist()) - set(order))
        assert len(new) == 1, (order, new)
        order.extend(new)
    winners = [f"w{i}" for i in range(writers) if outcome[i] == "ok"]
    assert sorted(order) == winners
    check_history(floe, ident, [data[int(w[1:])] for w in order])
