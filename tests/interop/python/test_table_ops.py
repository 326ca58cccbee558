"""More of what PyIceberg users do with a table, each checked on what Floe stored.

Staged creates, property updates, deletes and overwrites, tags and branches,
upserts, register, purge and snapshot expiry.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.refs import SnapshotRefType

KV = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("v", pa.int64())])


def kv(*pairs: tuple[str, int]) -> pa.Table:
    return pa.Table.from_pylist([{"k": k, "v": v} for k, v in pairs], schema=KV)


def content(t) -> list[tuple[str, int]]:
    return sorted((r["k"], r["v"]) for r in t.to_pylist())


@pytest.fixture
def ns(catalog: RestCatalog, unique: str):
    ns = (f"ops_{unique}",)
    catalog.create_namespace(ns)
    yield ns
    for ident in catalog.list_tables(ns):
        catalog.drop_table(ident)
    catalog.drop_namespace(ns)


def test_staged_create_with_data(catalog: RestCatalog, ns) -> None:
    """create_table_transaction: the table appears only at commit, with its spec and first snapshot."""
    ident = ns + ("staged",)
    txn = catalog.create_table_transaction(ident, schema=KV, properties={"stage": "yes"})
    with txn.update_spec() as spec:
        spec.add_identity("k")
    txn.append(kv(("a", 1), ("b", 2), ("a", 3)))
    assert not catalog.table_exists(ident), "a staged table must not be visible before its commit"
    txn.commit_transaction()

    tbl = catalog.load_table(ident)
    assert [(f.name, str(f.transform)) for f in tbl.spec().fields] == [("k", "identity")]
    assert tbl.properties["stage"] == "yes"
    assert len(tbl.snapshots()) == 1
    assert content(tbl.scan().to_arrow()) == [("a", 1), ("a", 3), ("b", 2)]
    assert sorted(f.file.partition[0] for f in tbl.scan().plan_files()) == ["a", "b"]


def test_namespace_properties(catalog: RestCatalog, ns) -> None:
    catalog.update_namespace_properties(ns, updates={"a": "1", "b": "2"})
    summary = catalog.update_namespace_properties(ns, removals={"a", "nope"}, updates={"c": "3"})
    assert sorted(summary.removed) == ["a"]
    assert sorted(summary.updated) == ["c"]
    assert sorted(summary.missing) == ["nope"]
    props = catalog.load_namespace_properties(ns)
    assert props.get("b") == "2" and props.get("c") == "3" and "a" not in props


def test_table_properties(catalog: RestCatalog, ns) -> None:
    ident = ns + ("props",)
    tbl = catalog.create_table(ident, schema=KV)
    with tbl.transaction() as tx:
        tx.set_properties(owner="team-a", tier="gold")
    with catalog.load_table(ident).transaction() as tx:
        tx.remove_properties("tier")
        tx.set_properties(owner="team-b")
    props = catalog.load_table(ident).properties
    assert props.get("owner") == "team-b"
    assert "tier" not in props


def test_delete_and_overwrite(catalog: RestCatalog, ns) -> None:
    ident = ns + ("dml",)
    tbl = catalog.create_table(ident, schema=KV)
    tbl.append(kv(("x", 1), ("y", 2)))
    tbl.append(kv(("z", 3)))
    tbl.delete("k = 'x'")
    tbl = catalog.load_table(ident)
    assert content(tbl.scan().to_arrow()) == [("y", 2), ("z", 3)]

    tbl.overwrite(kv(("q", 9)))
    tbl = catalog.load_table(ident)
    assert content(tbl.scan().to_arrow()) == [("q", 9)]
    ops = [s.summary.operation for s in tbl.snapshots()]
    assert ops[:2] == [Operation.APPEND, Operation.APPEND]
    assert ops[-1] == Operation.APPEND and Operation.DELETE in ops[2:]
    # every earlier state is still readable
    assert content(tbl.scan(snapshot_id=tbl.snapshots()[1].snapshot_id).to_arrow()) == [("x", 1), ("y", 2), ("z", 3)]


def test_tags_and_branches(catalog: RestCatalog, ns) -> None:
    ident = ns + ("refs",)
    tbl = catalog.create_table(ident, schema=KV)
    tbl.append(kv(("a", 1)))
    first = catalog.load_table(ident).current_snapshot().snapshot_id
    tbl = catalog.load_table(ident)
    tbl.append(kv(("b", 2)))

    tbl = catalog.load_table(ident)
    tbl.manage_snapshots().create_tag(first, "v1").create_branch(first, "dev").commit()
    tbl = catalog.load_table(ident)
    refs = tbl.refs()
    assert refs["v1"].snapshot_id == first and refs["v1"].snapshot_ref_type == SnapshotRefType.TAG
    assert refs["dev"].snapshot_id == first and refs["dev"].snapshot_ref_type == SnapshotRefType.BRANCH
    assert content(tbl.scan(snapshot_id=tbl.snapshot_by_name("v1").snapshot_id).to_arrow()) == [("a", 1)]

    tbl.append(kv(("c", 3)), branch="dev")
    tbl = catalog.load_table(ident)
    assert content(tbl.scan(snapshot_id=tbl.snapshot_by_name("dev").snapshot_id).to_arrow()) == [("a", 1), ("c", 3)]
    assert content(tbl.scan().to_arrow()) == [("a", 1), ("b", 2)], "a branch commit must not move main"
    assert tbl.refs()["v1"].snapshot_id == first


def test_upsert(catalog: RestCatalog, ns) -> None:
    ident = ns + ("upsert",)
    tbl = catalog.create_table(ident, schema=KV)
    with tbl.update_schema() as upd:
        upd.set_identifier_fields("k")
    tbl = catalog.load_table(ident)
    assert tbl.schema().identifier_field_names() == {"k"}
    tbl.append(kv(("a", 1), ("b", 2)))
    res = tbl.upsert(kv(("b", 20), ("c", 3)))
    assert (res.rows_updated, res.rows_inserted) == (1, 1)
    assert content(catalog.load_table(ident).scan().to_arrow()) == [("a", 1), ("b", 20), ("c", 3)]


def test_register_and_purge(catalog: RestCatalog, ns) -> None:
    """Drop a table without purging, register its last metadata file again, then purge it."""
    src = catalog.create_table(ns + ("src",), schema=KV)
    src.append(kv(("a", 1), ("b", 2)))
    src = catalog.load_table(ns + ("src",))
    catalog.drop_table(ns + ("src",))
    assert not catalog.table_exists(ns + ("src",))

    reg = catalog.register_table(ns + ("again",), src.metadata_location)
    assert reg.metadata.table_uuid == src.metadata.table_uuid
    again = catalog.load_table(ns + ("again",))
    assert again.current_snapshot().snapshot_id == src.current_snapshot().snapshot_id
    assert content(again.scan().to_arrow()) == [("a", 1), ("b", 2)]

    catalog.purge_table(ns + ("again",))
    assert not catalog.table_exists(ns + ("again",))


def test_expire_snapshots(catalog: RestCatalog, ns) -> None:
    ident = ns + ("expire",)
    tbl = catalog.create_table(ident, schema=KV)
    for i in range(3):
        tbl.append(kv((f"r{i}", i)))
    tbl = catalog.load_table(ident)
    snaps = [s.snapshot_id for s in tbl.snapshots()]
    assert len(snaps) == 3
    tbl.maintenance.expire_snapshots().by_id(snaps[0]).commit()
    tbl = catalog.load_table(ident)
    assert [s.snapshot_id for s in tbl.snapshots()] == snaps[1:]
    assert content(tbl.scan().to_arrow()) == [("r0", 0), ("r1", 1), ("r2", 2)]


def test_views(catalog: RestCatalog, ns) -> None:
    from pyiceberg.exceptions import NoSuchViewError, ViewAlreadyExistsError
    from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

    ident = ns + ("v_big",)
    sql = "SELECT k, v FROM t WHERE v > 10"
    version = ViewVersion(
        schema_id=0,
        representations=[SQLViewRepresentation(type="sql", sql=sql, dialect="spark")],
        default_namespace=ns,
    )
    view = catalog.create_view(ident, schema=KV, view_version=version, properties={"comment": "big ones"})
    assert catalog.view_exists(ident)
    assert catalog.list_views(ns) == [ident]
    assert catalog.list_tables(ns) == [], "a view is not a table"
    with pytest.raises(ViewAlreadyExistsError):
        catalog.create_view(ident, schema=KV, view_version=version)

    loaded = catalog.load_view(ident)
    assert loaded.metadata.view_uuid == view.metadata.view_uuid
    cur = loaded.metadata.current_version_id
    [v] = [v for v in loaded.metadata.versions if v.version_id == cur]
    assert [r.root.sql for r in v.representations] == [sql]
    assert tuple(v.default_namespace) == ns
    assert [f.name for f in loaded.metadata.schemas[0].fields] == ["k", "v"]
    assert loaded.metadata.properties.get("comment") == "big ones"

    catalog.drop_view(ident)
    assert not catalog.view_exists(ident)
    with pytest.raises(NoSuchViewError):
        catalog.load_view(ident)
