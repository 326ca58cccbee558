"""floe ingest, add-files and Delta registration, read back by PyIceberg.

Data is generated with pyarrow, loaded with the `floe` CLI through the
server (CSV, NDJSON, Parquet, Arrow IPC; partitioned; overwrite), and read
through Floe's REST catalog and embedded S3 by PyIceberg: the rows must be
the same (compared by a hash of the sorted rows). A Delta Lake table
written by the `deltalake` package (delta-rs, no Spark) is copied into the
warehouse storage with table-scoped vended credentials, registered with
`floe table register-delta`, and read by PyIceberg identically.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest
from conftest import WAREHOUSE, FloeServer, floe_binary, s3_client

N = 20_000


def source(n: int = N, offset: int = 0) -> pa.Table:
    """n rows of ids, amounts, names, regions and UTC timestamps 7 minutes apart (97 days)."""
    start = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)
    ids = list(range(offset, offset + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "amount": pa.array([i * 0.25 for i in ids], pa.float64()),
        "name": pa.array([None if i % 97 == 0 else f"name-{i}" for i in ids], pa.string()),
        "region": pa.array([["eu", "us", "apac"][i % 3] for i in ids], pa.string()),
        "ts": pa.array([start + dt.timedelta(minutes=7 * i) for i in ids], pa.timestamp("us", tz="UTC")),
    })


def content_hash(t: pa.Table, columns: list[str]) -> str:
    """SHA-256 of the rows of columns, sorted by id (timestamps as UTC microseconds)."""
    t = t.select(columns).sort_by("id")
    h = hashlib.sha256()
    for row in t.to_pylist():
        vals = []
        for c in columns:
            v = row[c]
            if isinstance(v, dt.datetime):
                v = int(v.timestamp() * 1_000_000)
            vals.append(repr(v))
        h.update(("|".join(vals) + "\n").encode())
    return h.hexdigest()


def floe_cli(floe: FloeServer, *args: str, stdin: bytes | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOE_")}
    env.update({"FLOE_URL": floe.uri, "FLOE_CREDENTIAL": floe.credential})
    p = subprocess.run([str(floe_binary()), *args], input=stdin, capture_output=True, env=env, timeout=300)
    assert p.returncode == 0, f"floe {' '.join(args)}: {p.stderr.decode()}"
    return p.stdout.decode()


@pytest.fixture
def ns(catalog, unique: str) -> str:
    name = f"ingest_{unique}"
    catalog.create_namespace(name)
    return name


@pytest.mark.parametrize("fmt", ["csv", "ndjson", "parquet", "arrow", "arrows"])
def test_ingest_formats_read_by_pyiceberg(floe: FloeServer, catalog, ns: str, tmp_path: Path, fmt: str) -> None:
    src = source()
    path = tmp_path / f"data.{fmt if fmt != 'arrows' else 'arrows'}"
    if fmt == "csv":
        pacsv.write_csv(src, path)
    elif fmt == "ndjson":
        import json
        with open(path, "w") as f:
            for row in src.to_pylist():
                row["ts"] = row["ts"].isoformat().replace("+00:00", "Z")
                f.write(json.dumps(row) + "\n")
    elif fmt == "parquet":
        pq.write_table(src, path)
    elif fmt == "arrow":
        feather.write_feather(src, path, compression="uncompressed")
    else:
        with pa.ipc.new_stream(path, src.schema) as w:
            w.write_table(src)
    out = floe_cli(floe, "ingest", "--quiet", f"{ns}.t_{fmt}", str(path))
    assert out.startswith(f"create {ns}.t_{fmt}: {N} rows"), out
    tbl = catalog.load_table(f"{ns}.t_{fmt}")
    got = tbl.scan().to_arrow()
    assert got.num_rows == N
    cols = ["id", "amount", "name", "region", "ts"]
    assert content_hash(got, cols) == content_hash(src, cols)
    assert str(tbl.schema().find_field("ts").field_type) == "timestamptz"


def test_partitioned_append_and_overwrite(floe: FloeServer, catalog, ns: str, tmp_path: Path) -> None:
    first, second = source(), source(5000, offset=N)
    pq.write_table(first, tmp_path / "a.parquet")
    pq.write_table(second, tmp_path / "b.parquet")
    name = f"{ns}.events"
    floe_cli(floe, "ingest", "--quiet", "--partition", "day(ts), bucket(8, id)", "--target-file-size", "1MiB", name, str(tmp_path / "a.parquet"))
    out = floe_cli(floe, "ingest", "--quiet", "--mode", "append", name, str(tmp_path / "b.parquet"))
    assert out.startswith(f"append {name}: 5000 rows"), out
    tbl = catalog.load_table(name)
    spec = [(f.name, str(f.transform)) for f in tbl.spec().fields]
    assert spec == [("ts_day", "day"), ("id_bucket_8", "bucket[8]")]
    cols = ["id", "amount", "name", "region", "ts"]
    assert content_hash(tbl.scan().to_arrow(), cols) == content_hash(pa.concat_tables([first, second]), cols)
    # Partition pruning works for PyIceberg on Floe-written files.
    one_day = tbl.scan(row_filter="ts >= '2026-03-02T00:00:00+00:00' and ts < '2026-03-03T00:00:00+00:00'").to_arrow()
    assert 0 < one_day.num_rows < N
    # Overwrite: one snapshot replaces everything.
    before = len(tbl.snapshots())
    floe_cli(floe, "ingest", "--quiet", "--mode", "overwrite", name, "-", stdin=b"id,amount,region\n1,2.5,eu\n")
    tbl = catalog.load_table(name)
    assert len(tbl.snapshots()) == before + 1
    assert tbl.scan().to_arrow().select(["id", "amount", "region"]).to_pylist() == [{"id": 1, "amount": 2.5, "region": "eu"}]


def test_stream_endpoint_wait(floe: FloeServer, catalog, ns: str) -> None:
    name = f"{ns}.clicks"
    floe_cli(floe, "ingest", "--quiet", "--schema", "id long not null, page string", name, "-", stdin=b"id,page\n0,/\n")
    tok = floe.fetch_token()
    import urllib.request
    body = b"".join(f'{{"id":{i},"page":"/p{i}"}}\n'.encode() for i in range(1, 101))
    req = urllib.request.Request(f"{floe.uri}/api/v1/tables/{WAREHOUSE}/{ns}/clicks/stream?wait=true", data=body, method="POST",
                                 headers={"Authorization": f"Bearer {tok}", "Content-Type": "application/x-ndjson"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 200
    assert catalog.load_table(name).scan().to_arrow().num_rows == 101


def test_delta_table_registered_and_read_by_pyiceberg(floe: FloeServer, catalog, ns: str, unique: str, tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")  # pinned in requirements.txt: always installed by .ci/run
    local = tmp_path / "delta"
    import pyarrow.compute as pc
    # Partitioned by region: its values live in the file paths, not in the files.
    deltalake.write_deltalake(str(local), source(3000), partition_by=["region"])
    deltalake.write_deltalake(str(local), source(2000, offset=3000), partition_by=["region"], mode="append")
    # A full overwrite: the log removes every earlier file and adds new ones.
    # (DeltaTable.delete would too, but its rewritten files declare string_view
    # columns in their Arrow schema, which PyIceberg cannot merge with string.)
    kept = deltalake.DeltaTable(str(local)).to_pyarrow_table().filter(pc.field("id") >= 100)
    deltalake.write_deltalake(str(local), kept.select(["id", "amount", "name", "region", "ts"]), partition_by=["region"], mode="overwrite")
    deltalake.write_deltalake(str(local), source(500, offset=5000), partition_by=["region"], mode="append")
    dtab = deltalake.DeltaTable(str(local))
    expected = dtab.to_pyarrow_table()
    assert expected.num_rows == 5400 and dtab.version() == 3
    # Copy the files into the warehouse with credentials vended for a scratch table, then drop it (its files stay).
    catalog.create_table(f"{ns}.scratch", schema=pa.schema([("x", pa.int64())]))
    raw = floe.load_table_raw((ns,), "scratch")
    prefix = raw["metadata"]["location"][len(f"s3://{WAREHOUSE}/"):] + "/delta"
    s3 = s3_client(raw["config"])
    for f in local.rglob("*"):
        if f.is_file():
            s3.upload_file(str(f), WAREHOUSE, f"{prefix}/{f.relative_to(local).as_posix()}")
    catalog.drop_table(f"{ns}.scratch")
    out = floe_cli(floe, "table", "register-delta", f"{ns}.from_delta", f"s3://{WAREHOUSE}/{prefix}")
    assert "5400 rows" in out, out
    tbl = catalog.load_table(f"{ns}.from_delta")
    assert [f.name for f in tbl.spec().fields] == ["region"]
    got = tbl.scan().to_arrow()
    cols = ["id", "amount", "name", "region", "ts"]
    assert content_hash(got, cols) == content_hash(expected, cols)
    # The partition column is filled from partition values: filtering on it prunes files.
    eu = tbl.scan(row_filter="region == 'eu'").to_arrow()
    assert eu.num_rows == sum(1 for r in expected.column("region").to_pylist() if r == "eu")
