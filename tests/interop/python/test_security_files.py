"""Issue 14, leak 1: a table may reference only files inside its own location.

A principal with only CREATE_TABLE on its own namespace tries, with real
clients, to make its table reference another table's files and read them:
a PyIceberg fast_append of the other table's DataFile, a REST commit whose
manifest list (written with the caller's own vended credentials inside its
table's location) names the other table's manifests, and a management API
add-files of the other table's prefix. Floe refuses each with 400 naming
the file and the table location, commits nothing, and psycopg reading the
caller's table through the SQL endpoint never sees the other table's rows.
The legitimate paths still work: an append, a fast_append of a file inside
the table's location, and add-files of files uploaded under the location
with the vended credentials, all read back by PyIceberg and psycopg.
"""

from __future__ import annotations

import io
import time

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import WAREHOUSE, RestError, s3_client, table_path
from pyiceberg.exceptions import BadRequestError
from pyiceberg.manifest import write_manifest_list
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "email", StringType(), required=False),
)
ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("email", pa.string())])
SECRET = pa.Table.from_pylist([{"id": i, "email": f"secret-{i}@hr.example"} for i in range(1, 21)], schema=ARROW)
MINE = pa.Table.from_pylist([{"id": 100, "email": "me@sandbox.example"}], schema=ARROW)


def _admin(floe, method, path, body=None):
    return floe.request(method, "/api/v1" + path, body=body, token=floe.fetch_token())


@pytest.fixture
def setup(floe, unique):
    """hr_<u>.payroll with 20 secret rows (admin's), and a principal that may
    only create tables in sandbox_<u>, with its own table sandbox_<u>.mine."""
    admin = floe.catalog("admin")
    hr, sandbox = f"hr_{unique}", f"sandbox_{unique}"
    admin.create_namespace(hr)
    admin.create_namespace(sandbox)
    payroll = admin.create_table((hr, "payroll"), schema=SCHEMA)
    payroll.append(SECRET)
    name = f"mallory-{unique}"
    p = _admin(floe, "POST", "/principals", {"name": name})
    _admin(floe, "POST", "/grants", {"grantee": {"kind": "principal", "name": name}, "privilege": "CREATE_TABLE",
                                     "on": {"kind": "namespace", "warehouse": WAREHOUSE, "namespace": [sandbox]}})
    cred = f"{p['client_id']}:{p['client_secret']}"
    mallory = floe.catalog("mallory", credential=cred)
    mine = mallory.create_table((sandbox, "mine"), schema=SCHEMA)
    token = floe.fetch_token(p["client_id"], p["client_secret"])
    return {"admin": admin, "payroll": admin.load_table((hr, "payroll")), "mallory": mallory, "mine": mine,
            "sandbox": sandbox, "name": name, "token": token}


def sql_rows(floe, user: str, token: str, query: str) -> list[tuple]:
    with psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname="floe", user=user, password=token,
                         sslmode="disable", connect_timeout=10, autocommit=True) as conn:
        return conn.execute(query).fetchall()


def no_secrets(floe, s) -> None:
    """The caller's table has no snapshot of foreign files, and SQL shows none of hr's rows."""
    mine = s["mallory"].load_table((s["sandbox"], "mine"))
    for task in mine.scan().plan_files():
        assert task.file.file_path.startswith(mine.location() + "/"), task.file.file_path
    rows = sql_rows(floe, s["name"], s["token"], f"SELECT email FROM {s['sandbox']}.mine")
    assert not any("secret" in (r[0] or "") for r in rows), rows


def test_fast_append_of_a_foreign_data_file_is_refused(floe, setup):
    s = setup
    foreign = [t.file for t in s["payroll"].scan().plan_files()]
    mine = s["mine"]
    with pytest.raises(BadRequestError) as err:
        with mine.transaction() as tx:
            with tx.update_snapshot().fast_append() as fa:
                for df in foreign:
                    fa.append_data_file(df)
    msg = str(err.value)
    assert "outside the table location " + mine.location() in msg, msg
    assert any(df.file_path in msg for df in foreign), msg
    assert s["mallory"].load_table((s["sandbox"], "mine")).current_snapshot() is None
    no_secrets(floe, s)


def test_commit_of_a_foreign_manifest_is_refused(floe, setup):
    s = setup
    payroll, mine = s["payroll"], s["mine"]
    manifests = payroll.current_snapshot().manifests(payroll.io)
    # The manifest list is written where the caller may write: its own
    # table's location, with the credentials vended to it.
    list_path = f"{mine.location()}/metadata/snap-6666-evil.avro"
    with write_manifest_list(format_version=2, output_file=mine.io.new_output(list_path), snapshot_id=6666,
                             parent_snapshot_id=None, sequence_number=1, avro_compression="deflate") as w:
        w.add_manifests(manifests)
    body = {"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None}],
            "updates": [{"action": "add-snapshot", "snapshot": {"snapshot-id": 6666, "sequence-number": 1,
                                                                "timestamp-ms": int(time.time() * 1000),
                                                                "manifest-list": list_path,
                                                                "summary": {"operation": "append"}, "schema-id": 0}},
                        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 6666}]}
    with pytest.raises(RestError) as err:
        floe.request("POST", table_path((s["sandbox"],), "mine"), body=body, token=s["token"])
    assert err.value.status == 400, err.value
    assert manifests[0].manifest_path in str(err.value), err.value
    assert "outside the table location " + mine.location() in str(err.value), err.value
    assert s["mallory"].load_table((s["sandbox"], "mine")).current_snapshot() is None
    no_secrets(floe, s)


def test_add_files_of_a_foreign_prefix_is_refused(floe, setup):
    s = setup
    mine = s["mine"]
    hr_prefix = f"s3://{WAREHOUSE}/{s['payroll'].location().split('/', 3)[3].split('/')[0]}/"
    for path in (hr_prefix, s["payroll"].location() + "/", f"s3://{WAREHOUSE}/"):
        with pytest.raises(RestError) as err:
            floe.request("POST", f"/api/v1/tables/{WAREHOUSE}/{s['sandbox']}/mine/add-files",
                         body={"paths": [path]}, token=s["token"])
        assert err.value.status == 400, err.value
        assert path in str(err.value), err.value
    assert "outside the table location " + mine.location() in str(
        pytest.raises(RestError, floe.request, "POST", f"/api/v1/tables/{WAREHOUSE}/{s['sandbox']}/mine/add-files",
                      body={"paths": [hr_prefix]}, token=s["token"]).value)
    assert s["mallory"].load_table((s["sandbox"], "mine")).current_snapshot() is None
    no_secrets(floe, s)


def test_files_inside_the_location_still_work(floe, setup):
    s = setup
    mine = s["mine"]
    mine.append(MINE)
    # fast_append of a file the caller wrote inside its own location.
    own = pa.Table.from_pylist([{"id": 101, "email": "fast@sandbox.example"}], schema=ARROW)
    mine = s["mallory"].load_table((s["sandbox"], "mine"))
    from pyiceberg.io.pyarrow import _dataframe_to_data_files
    with mine.transaction() as tx:
        files = list(_dataframe_to_data_files(table_metadata=tx.table_metadata, df=own, io=mine.io))
        with tx.update_snapshot().fast_append() as fa:
            for df in files:
                assert df.file_path.startswith(mine.location() + "/")
                fa.append_data_file(df)
    # add-files of Parquet uploaded under the location with the vended credentials.
    mine = s["mallory"].load_table((s["sandbox"], "mine"))
    buf = io.BytesIO()
    # With Iceberg field ids: the SQL endpoint reads a table whose files mix
    # files with and without ids by id (a file without them reads as NULLs).
    with_ids = pa.schema([f.with_metadata({b"PARQUET:field_id": str(i + 1).encode()}) for i, f in enumerate(ARROW)])
    pq.write_table(pa.Table.from_pylist([{"id": 102, "email": "added@sandbox.example"}], schema=with_ids), buf)
    bucket, key = mine.location().removeprefix("s3://").split("/", 1)
    s3_client(mine.io.properties).put_object(Bucket=bucket, Key=key + "/landing/x.parquet", Body=buf.getvalue())
    out = floe.request("POST", f"/api/v1/tables/{WAREHOUSE}/{s['sandbox']}/mine/add-files",
                       body={"paths": [mine.location() + "/landing/"]}, token=s["token"])
    assert out["files"] == 1 and out["rows"] == 1, out

    got = s["mallory"].load_table((s["sandbox"], "mine")).scan().to_arrow().sort_by("id")
    assert got.column("id").to_pylist() == [100, 101, 102]
    rows = sql_rows(floe, s["name"], s["token"], f"SELECT id, email FROM {s['sandbox']}.mine ORDER BY id")
    assert rows == [(100, "me@sandbox.example"), (101, "fast@sandbox.example"), (102, "added@sandbox.example")]
