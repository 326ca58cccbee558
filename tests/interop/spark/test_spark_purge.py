"""Purge of Spark-created tables frees every file (issue 16, part C).

Spark-created tables, at the location Floe assigns and at one the client
chose (`LOCATION`), with several snapshots, copy-on-write and
merge-on-read deletes (Spark's position delete files), are dropped with
purge; afterwards nothing is left under the table's location (waited for
with a bounded poll: large purges finish in the background), and a
neighbour table in the same parent directory keeps every file and reads as
before.

Spark 3.5 with Iceberg 1.10 purges on the client: `DROP TABLE ... PURGE`
deletes the files the metadata reaches itself and then sends a drop
*without* purgeRequested (Iceberg 1.11 adds the catalog property
`rest.catalog-purge` to send purgeRequested=true instead). So the server's
purge is exercised with the REST drop other engines send (Trino,
PyIceberg): it also deletes a file no metadata names, which no client-side
purge can know; Spark's own `DROP TABLE ... PURGE` is checked end to end.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import CATALOG, FloeServer

WAIT = 60.0  # seconds


def files_under(path: Path) -> list[Path]:
    out: list[Path] = []
    for root, _, names in os.walk(path):
        out += [Path(root) / n for n in names if (Path(root) / n).is_file()]
    return sorted(out)


def wait_empty(path: Path) -> None:
    deadline = time.monotonic() + WAIT
    while True:
        left = files_under(path)
        if not left:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"{len(left)} files left under {path} after DROP TABLE ... PURGE, e.g. {left[:3]}")
        time.sleep(0.2)


@pytest.mark.parametrize("chosen,how", [(True, "rest"), (False, "rest"), (True, "spark")],
                         ids=["location-clause-rest-purge", "floe-assigned-rest-purge", "location-clause-spark-drop-purge"])
def test_spark_table_purge_frees_every_file(spark: Any, floe: FloeServer, chosen: bool, how: str) -> None:
    ns = f"purge_{how}_{'chosen' if chosen else 'assigned'}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{ns}")
    t = f"{CATALOG}.{ns}.events"
    where = f"LOCATION 's3://floe/{ns}/custom/events'" if chosen else ""
    spark.sql(f"CREATE TABLE {t} (id INT, who STRING) USING iceberg PARTITIONED BY (who) {where} "
              "TBLPROPERTIES ('write.delete.mode'='merge-on-read', 'write.update.mode'='copy-on-write')")
    for i in range(3):
        spark.sql(f"INSERT INTO {t} VALUES ({i * 10}, 'a'), ({i * 10 + 1}, 'a'), ({i * 10 + 2}, 'b')")
    spark.sql(f"DELETE FROM {t} WHERE id = 1")  # merge-on-read: a position delete file
    spark.sql(f"UPDATE {t} SET who = 'd' WHERE id = 2")  # copy-on-write: rewritten data files
    loc = floe.load_table(ns, "events")["metadata"]["location"]
    if chosen:
        assert loc == f"s3://floe/{ns}/custom/events", loc
    parent = loc.rsplit("/", 1)[0]
    n = f"{CATALOG}.{ns}.neighbour"
    spark.sql(f"CREATE TABLE {n} (id INT) USING iceberg LOCATION '{parent}/neighbour'")
    spark.sql(f"INSERT INTO {n} VALUES (1), (2), (3)")
    neighbour_dir = floe.local_path(f"{parent}/neighbour")
    keep = files_under(neighbour_dir)
    table_dir = floe.local_path(loc)
    before = files_under(table_dir)
    assert any(p.suffix == ".parquet" for p in before) and any(p.name.startswith("snap-") for p in before), before
    deletes = floe.load_table(ns, "events")["metadata"]["snapshots"][-2]["summary"]
    assert int(deletes.get("added-position-delete-files", deletes.get("added-delete-files", "0"))) >= 1, deletes

    if how == "rest":
        # A file no metadata names (a failed commit's data file): Floe's
        # purge deletes everything under the location.
        orphan = table_dir / "data" / "who=a" / "orphan-of-a-failed-commit.parquet"
        orphan.write_bytes(b"orphan")
        floe.rest("DELETE", f"/v1/floe/namespaces/{ns}/tables/events", query={"purgeRequested": "true"})
    else:
        spark.sql(f"DROP TABLE {t} PURGE")

    wait_empty(table_dir)
    assert files_under(neighbour_dir) == keep
    assert sorted(r.id for r in spark.sql(f"SELECT id FROM {n}").collect()) == [1, 2, 3]
    spark.sql(f"DROP TABLE {n} PURGE")
    wait_empty(neighbour_dir)
    spark.sql(f"DROP NAMESPACE {CATALOG}.{ns}")
