"""The issue's end-to-end scenario, driven by PyIceberg against a real Floe.

Namespaces (one nested), a partitioned table created from an Arrow schema,
two appends, schema evolution, time travel, rename, drop.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
from pyiceberg.transforms import BucketTransform, DayTransform
from pyiceberg.types import LongType, StringType, TimestamptzType

from conftest import WAREHOUSE

ARROW_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("category", pa.string()),
        pa.field("amount", pa.float64()),
    ]
)

T0 = datetime(2025, 3, 1, 8, 30, tzinfo=timezone.utc)


def batch(ids: range, schema: pa.Schema = ARROW_SCHEMA, **extra: list) -> pa.Table:
    cols = {
        "id": list(ids),
        "ts": [T0 + timedelta(hours=7 * i) for i in ids],  # spans several days
        "category": [["red", "green", "blue"][i % 3] for i in ids],
        "amount": [i * 1.25 for i in ids],
    }
    cols.update(extra)
    return pa.Table.from_pydict(cols, schema=schema)


def sorted_rows(t: pa.Table) -> list[dict]:
    return t.sort_by("id").to_pylist()


def test_issue_scenario(floe, catalog: RestCatalog) -> None:
    parent = ("interop",)
    nested = ("interop", "nested")
    other = ("interop", "other")

    # --- namespaces ------------------------------------------------------
    catalog.create_namespace(parent, {"owner": "interop-suite"})
    catalog.create_namespace(nested)
    catalog.create_namespace(other)
    assert parent in catalog.list_namespaces()
    assert all(len(ns) == 1 for ns in catalog.list_namespaces()), "top-level listing must not show children"
    assert sorted(catalog.list_namespaces(parent)) == [nested, other]
    assert catalog.list_namespaces(nested) == []
    assert catalog.load_namespace_properties(parent)["owner"] == "interop-suite"
    assert catalog.namespace_exists(nested)

    # --- create a partitioned table from an Arrow schema -----------------
    ident = nested + ("events",)
    tbl = catalog.create_table(ident, schema=ARROW_SCHEMA, properties={"purpose": "interop"})
    with tbl.update_spec() as spec:
        spec.add_field("ts", DayTransform(), "ts_day")
        spec.add_field("id", BucketTransform(4), "id_bucket")
    tbl = catalog.load_table(ident)
    assert [f.name for f in tbl.schema().fields] == ["id", "ts", "category", "amount"]
    assert tbl.schema().find_field("id").required
    assert [(f.name, str(f.transform)) for f in tbl.spec().fields] == [("ts_day", "day"), ("id_bucket", "bucket[4]")]
    assert tbl.properties.get("purpose") == "interop"
    assert tbl.current_snapshot() is None
    assert tbl.scan().to_arrow().num_rows == 0
    assert tbl.location().startswith(f"s3://{WAREHOUSE}/"), tbl.location()  # Floe's embedded S3 bucket
    assert catalog.list_tables(nested) == [ident]
    assert catalog.list_tables(parent) == []

    # --- first append ------------------------------------------------------
    first = batch(range(0, 10))
    tbl.append(first)
    snap1 = tbl.current_snapshot()
    assert snap1 is not None
    reloaded = catalog.load_table(ident)  # what the server stored, not the client's cache
    assert reloaded.current_snapshot().snapshot_id == snap1.snapshot_id
    got = reloaded.scan().to_arrow()
    assert got.num_rows == 10
    assert sorted_rows(got) == sorted_rows(first)

    # data files are partitioned as the spec says, and live in the warehouse
    bucket = BucketTransform(4).transform(LongType())
    day = DayTransform().transform(TimestamptzType())
    files = list(reloaded.scan().plan_files())
    assert files
    got_parts = {(f.file.partition[0], f.file.partition[1]) for f in files}
    want_parts = {
        (day(int(ts.timestamp() * 1_000_000)), bucket(i)) for i, ts in zip(first["id"].to_pylist(), first["ts"].to_pylist())
    }
    assert got_parts == want_parts
    for f in files:
        assert f.file.file_path.startswith(tbl.location() + "/data/"), f.file.file_path
        assert floe.local_path(f.file.file_path).is_file()  # in Floe's warehouse directory

    # --- second append -----------------------------------------------------
    second = batch(range(10, 25))
    reloaded.append(second)
    tbl = catalog.load_table(ident)
    snap2 = tbl.current_snapshot()
    assert snap2.snapshot_id != snap1.snapshot_id
    assert snap2.parent_snapshot_id == snap1.snapshot_id
    got = tbl.scan().to_arrow()
    assert got.num_rows == 25
    assert sorted_rows(got) == sorted_rows(pa.concat_tables([first, second]))
    assert [s.snapshot_id for s in tbl.snapshots()] == [snap1.snapshot_id, snap2.snapshot_id]
    assert [h.snapshot_id for h in tbl.history()] == [snap1.snapshot_id, snap2.snapshot_id]
    assert tbl.scan(row_filter="id >= 20").to_arrow().num_rows == 5

    # --- schema evolution ------------------------------------------------
    with tbl.update_schema() as upd:
        upd.add_column("note", StringType(), doc="added by the interop suite")
    tbl = catalog.load_table(ident)
    assert [f.name for f in tbl.schema().fields] == ["id", "ts", "category", "amount", "note"]
    assert tbl.schema().schema_id != snap1.schema_id
    evolved_schema = ARROW_SCHEMA.append(pa.field("note", pa.string()))
    third = batch(range(25, 30), schema=evolved_schema, note=[f"note-{i}" for i in range(25, 30)])
    tbl.append(third)

    tbl = catalog.load_table(ident)
    snap3 = tbl.current_snapshot()
    assert snap3.parent_snapshot_id == snap2.snapshot_id
    got = tbl.scan().to_arrow()
    assert got.num_rows == 30
    assert got.schema.names == ["id", "ts", "category", "amount", "note"]
    by_id = {r["id"]: r for r in got.to_pylist()}
    assert all(by_id[i]["note"] is None for i in range(0, 25))
    assert [by_id[i]["note"] for i in range(25, 30)] == [f"note-{i}" for i in range(25, 30)]
    assert sorted_rows(got.select(ARROW_SCHEMA.names)) == sorted_rows(
        pa.concat_tables([first, second, third.select(ARROW_SCHEMA.names)])
    )
    only_notes = tbl.scan(row_filter="note IS NOT NULL", selected_fields=("id", "note")).to_arrow()
    assert sorted(only_notes["id"].to_pylist()) == list(range(25, 30))

    # --- time travel -----------------------------------------------------
    old = tbl.scan(snapshot_id=snap1.snapshot_id).to_arrow()
    assert old.num_rows == 10
    assert old.schema.names == ARROW_SCHEMA.names  # the first snapshot's schema
    assert sorted_rows(old) == sorted_rows(first)
    mid = tbl.scan(snapshot_id=snap2.snapshot_id).to_arrow()
    assert mid.num_rows == 25
    assert set(pc.unique(mid["id"]).to_pylist()) == set(range(25))

    # --- rename (across namespaces) --------------------------------------
    new_ident = other + ("events_renamed",)
    renamed = catalog.rename_table(ident, new_ident)
    assert not catalog.table_exists(ident)
    with pytest.raises(NoSuchTableError):
        catalog.load_table(ident)
    assert catalog.list_tables(nested) == []
    assert catalog.list_tables(other) == [new_ident]
    renamed = catalog.load_table(new_ident)
    assert renamed.current_snapshot().snapshot_id == snap3.snapshot_id
    assert [s.snapshot_id for s in renamed.snapshots()] == [snap1.snapshot_id, snap2.snapshot_id, snap3.snapshot_id]
    assert sorted_rows(renamed.scan().to_arrow()) == sorted_rows(got)
    # the renamed table is still writable
    renamed.append(batch(range(30, 32), schema=evolved_schema, note=["x", "y"]))
    assert catalog.load_table(new_ident).scan().to_arrow().num_rows == 32

    # --- drop ------------------------------------------------------------
    catalog.drop_table(new_ident)
    assert not catalog.table_exists(new_ident)
    with pytest.raises(NoSuchTableError):
        catalog.load_table(new_ident)
    assert catalog.list_tables(other) == []

    # --- drop namespaces -------------------------------------------------
    catalog.drop_namespace(nested)
    catalog.drop_namespace(other)
    assert catalog.list_namespaces(parent) == []
    catalog.drop_namespace(parent)
    assert parent not in catalog.list_namespaces()
    assert not catalog.namespace_exists(parent)
    with pytest.raises(NoSuchNamespaceError):
        catalog.load_namespace_properties(nested)


def test_paged_listing(catalog: RestCatalog, floe, unique: str) -> None:
    """PyIceberg follows next-page-token through small pages."""
    ns = (f"paged_{unique}",)
    catalog.create_namespace(ns)
    names = [f"t{i:02d}" for i in range(7)]
    for n in names:
        catalog.create_table(ns + (n,), schema=pa.schema([pa.field("x", pa.int32())]))
        catalog.create_namespace(ns + (f"child_{n}",))
    small = floe.catalog(**{"rest-page-size": "3"})
    assert sorted(small.list_tables(ns)) == [ns + (n,) for n in names]
    assert sorted(small.list_namespaces(ns)) == [ns + (f"child_{n}",) for n in names]
    for n in names:
        catalog.drop_table(ns + (n,))
        catalog.drop_namespace(ns + (f"child_{n}",))
    catalog.drop_namespace(ns)
