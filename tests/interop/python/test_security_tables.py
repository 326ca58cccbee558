"""Dropped tables' locations, client-chosen locations and renames (issue 14, leaks 3 and 4).

alice owns hr.payroll; bob holds CREATE_TABLE on his own namespace sandbox
only. A drop without purge leaves the files: bob can neither register the
old metadata file nor create a table at, inside or above the dropped
location, and no credential vended to bob reads the files. The owner's own
register after its own drop works; an administrator may reuse any location.
A non-administrator may choose only an empty location. A rename into
another namespace needs SELECT and MANAGE_GRANTS on the table besides DROP.
The management API lists tombstones (admins all, others their own) and
releases one (owner or admin); a released location is reused by another
principal only once no object lies under it.
"""

from __future__ import annotations

import shutil

import pyarrow as pa
import pytest
from conftest import WAREHOUSE, RestError, s3_client
from pyiceberg.exceptions import ForbiddenError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "email", StringType(), required=False),
)
ROWS = pa.Table.from_pydict(
    {"id": [1, 2, 3], "email": ["a@x", "b@x", "c@x"]},
    schema=pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("email", pa.string())]),
)


def _admin(floe, method, path, body=None, query=None):
    return floe.request(method, "/api/v1" + path, query=query, body=body, token=floe.fetch_token())


def _principal(floe, name):
    out = _admin(floe, "POST", "/principals", {"name": name})
    cat = floe.catalog(name, credential=f"{out['client_id']}:{out['client_secret']}")
    cat.token_for = lambda: floe.fetch_token(out["client_id"], out["client_secret"])
    return cat


def _grant(floe, name, privilege, on):
    _admin(floe, "POST", "/grants", {"grantee": {"kind": "principal", "name": name}, "privilege": privilege, "on": on})


def _ns(name):
    return {"kind": "namespace", "warehouse": WAREHOUSE, "namespace": [name]}


@pytest.fixture
def world(floe, unique):
    admin = floe.catalog("admin")
    hr, sandbox = f"hr_{unique}", f"sandbox_{unique}"
    admin.create_namespace(hr)
    admin.create_namespace(sandbox)
    alice, bob = _principal(floe, f"alice-{unique}"), _principal(floe, f"bob-{unique}")
    _grant(floe, f"alice-{unique}", "CREATE_TABLE", _ns(hr))
    _grant(floe, f"bob-{unique}", "CREATE_TABLE", _ns(sandbox))
    tbl = alice.create_table((hr, "payroll"), schema=SCHEMA)
    tbl.append(ROWS)
    tbl = alice.load_table((hr, "payroll"))
    data = [t.file.file_path for t in tbl.scan().plan_files()]
    return dict(admin=admin, alice=alice, bob=bob, hr=hr, sandbox=sandbox, unique=unique,
                meta=tbl.metadata_location, loc=tbl.metadata.location, data=data)


def _bob_cannot_read(world):
    """bob's own table's vended credentials do not reach payroll's files."""
    bob = world["bob"]
    own = bob.create_table((world["sandbox"], f"own_{world['unique']}"), schema=SCHEMA)
    s3 = s3_client(own.io.properties)
    for path in world["data"]:
        bucket, key = path.removeprefix("s3://").split("/", 1)
        with pytest.raises(Exception, match="(?i)AccessDenied|Forbidden|403"):
            s3.get_object(Bucket=bucket, Key=key)


def test_register_after_drop_refused(world):
    admin, bob = world["admin"], world["bob"]
    admin.drop_table((world["hr"], "payroll"))  # no purge: the files stay
    sb = world["sandbox"]
    with pytest.raises(ForbiddenError, match="dropped table"):
        bob.register_table((sb, "mine"), world["meta"])
    loc = world["loc"]
    for where in (loc, loc + "/data", loc.rsplit("/", 1)[0]):
        with pytest.raises(ForbiddenError, match="dropped table"):
            bob.create_table((sb, "x"), schema=SCHEMA, location=where)
    _bob_cannot_read(world)
    # An administrator may take the location back.
    back = admin.register_table((world["hr"], "payroll"), world["meta"])
    assert back.scan().to_arrow().num_rows == 3


def test_owner_registers_after_its_own_drop(world):
    alice, bob = world["alice"], world["bob"]
    alice.drop_table((world["hr"], "payroll"))
    with pytest.raises(ForbiddenError, match="dropped table"):
        bob.register_table((world["sandbox"], "mine"), world["meta"])
    back = alice.register_table((world["hr"], "payroll"), world["meta"])
    assert back.scan().to_arrow().num_rows == 3


def test_create_over_existing_files_refused(floe, world):
    landing = f"s3://{WAREHOUSE}/landing_{world['unique']}"
    p = floe.local_path(landing + "/salaries.csv")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("alice,100000\n")
    with pytest.raises(ForbiddenError, match="not empty"):
        world["bob"].create_table((world["sandbox"], "x"), schema=SCHEMA, location=landing)
    # An empty location of bob's choice is fine; the administrator may lay a table over files.
    world["bob"].create_table((world["sandbox"], "y"), schema=SCHEMA, location=landing + "_empty")
    world["admin"].create_table((world["sandbox"], "x"), schema=SCHEMA, location=landing)


def test_rename_into_own_namespace_refused(floe, world):
    bob, u = world["bob"], world["unique"]
    _grant(floe, f"bob-{u}", "DROP", {"kind": "table", "warehouse": WAREHOUSE, "namespace": [world["hr"]], "name": "payroll"})
    with pytest.raises(ForbiddenError):
        bob.rename_table((world["hr"], "payroll"), (world["sandbox"], "p"))
    # PyIceberg drops the message of a refused rename; the body names the missing privilege.
    with pytest.raises(RestError) as e:
        floe.request("POST", f"/v1/{WAREHOUSE}/tables/rename", token=bob.token_for(),
                     body={"source": {"namespace": [world["hr"]], "name": "payroll"},
                           "destination": {"namespace": [world["sandbox"]], "name": "p"}})
    assert e.value.status == 403 and f'lacks SELECT on table \\"{world["hr"]}.payroll\\"' in e.value.body, e.value.body
    # Still where it was, with its rows, for its owner.
    assert world["alice"].load_table((world["hr"], "payroll")).scan().to_arrow().num_rows == 3


def _tombstones(floe, token):
    return floe.request("GET", f"/api/v1/warehouses/{WAREHOUSE}/tombstones", token=token)["tombstones"]


def test_admin_lists_and_releases_tombstone(floe, world):
    alice, bob, u = world["alice"], world["bob"], world["unique"]
    loc, hr, sb = world["loc"].rstrip("/"), world["hr"], world["sandbox"]
    alice.drop_table((hr, "payroll"))  # alice could read it: she owns the tombstone
    admin_tok = floe.fetch_token()
    mine = [t for t in _tombstones(floe, admin_tok) if t["location"] == loc]
    assert len(mine) == 1, _tombstones(floe, admin_tok)
    assert mine[0]["table"] == f"{hr}.payroll" and mine[0]["owner"] == f"alice-{u}", mine
    assert [t["table"] for t in _tombstones(floe, alice.token_for())] == [f"{hr}.payroll"]
    assert _tombstones(floe, bob.token_for()) == []
    path, q = f"/api/v1/warehouses/{WAREHOUSE}/tombstones", {"location": loc}
    with pytest.raises(RestError) as e:
        floe.request("DELETE", path, query=q, token=bob.token_for())
    assert e.value.status == 403 and f"only the previous owner of dropped table {hr}.payroll" in e.value.body, e.value.body

    released = floe.request("DELETE", path, query=q, token=admin_tok)
    assert released["location"] == loc and released["table"] == f"{hr}.payroll", released
    assert all(t["location"] != loc for t in _tombstones(floe, admin_tok))
    with pytest.raises(RestError) as e:
        floe.request("DELETE", path, query=q, token=admin_tok)
    assert e.value.status == 404, e.value.body

    # Released, but alice's files are still there: bob may not lay a table over them.
    with pytest.raises(ForbiddenError, match="not empty"):
        bob.create_table((sb, "reuse"), schema=SCHEMA, location=loc)
    _bob_cannot_read(world)
    # Once the files are gone the location is free for anyone.
    shutil.rmtree(floe.local_path(loc))
    reused = bob.create_table((sb, "reuse"), schema=SCHEMA, location=loc)
    assert reused.metadata.location.rstrip("/") == loc
    assert reused.scan().to_arrow().num_rows == 0
