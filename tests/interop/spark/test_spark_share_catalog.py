"""Spark reads a share through its Iceberg REST catalog with only the recipient's credential (issue 18).

The provider (Spark on the main catalog) makes a partitioned table; the
built binary's CLI shares it under an alias, creates a recipient (its token
in a Delta Sharing profile file) and grants the share. A second Spark
catalog points at `<floe>/shares/<share>/iceberg` with the recipient's name
and token as its client credential and nothing else: Spark lists the alias,
reads every row with the read-only credential the share catalog vends, and
every write through it is refused (data writes by the S3 endpoint, the
credential being read-only; catalog changes by the share catalog). A table
outside the share is invisible.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import CATALOG, FloeServer, floe_binary
from floe_server import SCRUBBED_ENV


def cli(floe: FloeServer, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV and k not in ("FLOE_TOKEN", "FLOE_CREDENTIAL")}
    env.update({"FLOE_URL": floe.uri, "FLOE_CREDENTIAL": floe.credential})
    r = subprocess.run([str(floe_binary()), *args], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"floe {' '.join(args)}: {r.stdout}\n{r.stderr}"
    return r.stdout


def share_catalog(spark: Any, floe: FloeServer, name: str, share: str, rcpt: str, token: str) -> None:
    """Configure Spark catalog name as the share's Iceberg REST catalog, with
    only the recipient's name and token as its client credential."""
    p = f"spark.sql.catalog.{name}"
    for k, v in {p: "org.apache.iceberg.spark.SparkCatalog", f"{p}.type": "rest",
                 f"{p}.uri": f"{floe.uri}/shares/{share}/iceberg", f"{p}.warehouse": share,
                 f"{p}.credential": f"{rcpt}:{token}",
                 f"{p}.oauth2-server-uri": f"{floe.uri}/shares/{share}/iceberg/v1/oauth/tokens",
                 f"{p}.cache-enabled": "false"}.items():
        spark.conf.set(k, v)


def test_spark_reads_a_share_through_its_catalog(spark: Any, floe: FloeServer, tmp_path: Path) -> None:
    u = uuid.uuid4().hex[:8]
    ns, share, rcpt, shared = f"prov_{u}", f"s_{u}", f"r_{u}", f"shared_{u}"
    spark.sql(f"CREATE NAMESPACE {CATALOG}.{ns}")
    spark.sql(f"CREATE TABLE {CATALOG}.{ns}.orders (id BIGINT, region STRING, amount DOUBLE) USING iceberg PARTITIONED BY (region)")
    spark.sql(f"INSERT INTO {CATALOG}.{ns}.orders VALUES (1, 'eu', 1.5), (2, 'us', 2.5), (3, 'eu', 3.5)")
    spark.sql(f"INSERT INTO {CATALOG}.{ns}.orders VALUES (4, 'apac', 4.5)")
    spark.sql(f"CREATE TABLE {CATALOG}.{ns}.secret (id BIGINT) USING iceberg")

    cli(floe, "share", "create", share)
    cli(floe, "share", "add", share, "table", f"{ns}.orders", "--as", "sales.orders", "--history")
    profile = tmp_path / "r.share"
    cli(floe, "recipient", "create", rcpt, "--profile-out", str(profile))
    cli(floe, "share", "grant", share, "TO", rcpt)
    token = json.loads(profile.read_text())["bearerToken"]

    share_catalog(spark, floe, shared, share, rcpt, token)

    assert [r.namespace for r in spark.sql(f"SHOW NAMESPACES IN {shared}").collect()] == ["sales"]
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {shared}.sales").collect()] == ["orders"]
    got = sorted(tuple(r) for r in spark.sql(f"SELECT id, region, amount FROM {shared}.sales.orders").collect())
    want = sorted(tuple(r) for r in spark.sql(f"SELECT id, region, amount FROM {CATALOG}.{ns}.orders").collect())
    assert got == want and len(got) == 4
    # History is shared: Spark time-travels to the first snapshot.
    first = spark.sql(f"SELECT snapshot_id FROM {shared}.sales.orders.snapshots ORDER BY committed_at").collect()[0][0]
    assert spark.sql(f"SELECT count(*) FROM {shared}.sales.orders VERSION AS OF {first}").collect()[0][0] == 3

    for stmt in (f"INSERT INTO {shared}.sales.orders VALUES (9, 'eu', 9.0)",
                 f"DELETE FROM {shared}.sales.orders WHERE id = 1",
                 f"CREATE TABLE {shared}.sales.mine (id BIGINT) USING iceberg",
                 f"DROP TABLE {shared}.sales.orders",
                 f"CREATE NAMESPACE {shared}.other"):
        with pytest.raises(Exception) as e:
            spark.sql(stmt).collect()
        # A write of data is refused by the S3 endpoint (the vended
        # credential is read-only) before any commit; catalog changes by
        # Spark itself, as the share catalog's config lists only read
        # endpoints (and by the share catalog: 403 "share catalogs are
        # read-only", tested in sharing/sharecat).
        assert re.search(r"(?i)read-only|forbidden|access ?denied|status code: 403|does not support endpoint",
                         str(e.value)), (stmt, str(e.value)[:800])
    # The unshared table and the real names are not there.
    for name in (f"{shared}.{ns}.secret", f"{shared}.{ns}.orders", f"{shared}.sales.secret"):
        with pytest.raises(Exception, match="(?i)not found|cannot be found|no such"):
            spark.sql(f"SELECT * FROM {name}").collect()
    assert spark.sql(f"SELECT count(*) FROM {CATALOG}.{ns}.orders").collect()[0][0] == 4  # nothing was written


def test_spark_reads_a_partition_filtered_share(spark: Any, floe: FloeServer, tmp_path: Path) -> None:
    """A table shared with a partition filter (and without history) is served
    through the share catalog as a derived snapshot of the allowed
    partitions: Spark with only the recipient's credential reads exactly
    their rows, and, after the provider deletes a row there (copy-on-write:
    the partition's file is replaced), the current rows and no deleted one."""
    u = uuid.uuid4().hex[:8]
    ns, share, rcpt, shared = f"provf_{u}", f"sf_{u}", f"rf_{u}", f"sharedf_{u}"
    spark.sql(f"CREATE NAMESPACE {CATALOG}.{ns}")
    spark.sql(f"CREATE TABLE {CATALOG}.{ns}.orders (id BIGINT, region STRING) USING iceberg PARTITIONED BY (region)")
    spark.sql(f"INSERT INTO {CATALOG}.{ns}.orders VALUES (1, 'eu'), (2, 'us'), (3, 'eu')")
    spark.sql(f"INSERT INTO {CATALOG}.{ns}.orders VALUES (4, 'apac'), (5, 'eu')")

    cli(floe, "share", "create", share)
    cli(floe, "share", "add", share, "table", f"{ns}.orders", "--as", "eu.orders", "--partition-filter", "region = 'eu'")
    profile = tmp_path / "rf.share"
    cli(floe, "recipient", "create", rcpt, "--profile-out", str(profile))
    cli(floe, "share", "grant", share, "TO", rcpt)
    token = json.loads(profile.read_text())["bearerToken"]
    share_catalog(spark, floe, shared, share, rcpt, token)

    def rows(name: str, where: str = "") -> list[tuple[int, str]]:
        return sorted(tuple(r) for r in spark.sql(f"SELECT id, region FROM {name} {where}").collect())

    assert rows(f"{shared}.eu.orders") == [(1, "eu"), (3, "eu"), (5, "eu")]
    assert rows(f"{shared}.eu.orders") == rows(f"{CATALOG}.{ns}.orders", "WHERE region = 'eu'")
    spark.sql(f"DELETE FROM {CATALOG}.{ns}.orders WHERE id = 1")
    assert rows(f"{shared}.eu.orders") == [(3, "eu"), (5, "eu")]
    assert spark.sql(f"SELECT count(*) FROM {shared}.eu.orders.snapshots").collect()[0][0] == 1


def test_spark_reads_a_shared_view(spark: Any, floe: FloeServer, tmp_path: Path) -> None:
    """A view the provider made with Spark, shared with the tables it reads,
    is expanded by the recipient's Spark in the share catalog: its SQL is
    served with the tables' aliases, so it reads them through the share
    (with their own filters). A view reading a table outside the share is
    refused."""
    u = uuid.uuid4().hex[:8]
    ns, share, rcpt, shared = f"provv_{u}", f"sv_{u}", f"rv_{u}", f"sharedv_{u}"
    spark.sql(f"CREATE NAMESPACE {CATALOG}.{ns}")
    spark.sql(f"CREATE TABLE {CATALOG}.{ns}.orders (id BIGINT, region STRING, amount DOUBLE) USING iceberg PARTITIONED BY (region)")
    spark.sql(f"INSERT INTO {CATALOG}.{ns}.orders VALUES (1, 'eu', 10.0), (2, 'us', 20.0), (3, 'eu', 30.0), (4, 'apac', 5.0)")
    spark.sql(f"CREATE TABLE {CATALOG}.{ns}.secret (id BIGINT) USING iceberg")
    spark.sql(f"CREATE VIEW {CATALOG}.{ns}.totals AS SELECT region, sum(amount) AS total FROM {CATALOG}.{ns}.orders GROUP BY region")
    spark.sql(f"CREATE VIEW {CATALOG}.{ns}.leak AS SELECT id FROM {CATALOG}.{ns}.secret")

    cli(floe, "share", "create", share)
    cli(floe, "share", "add", share, "table", f"{ns}.orders", "--as", "sales.orders", "--history")
    cli(floe, "share", "add", share, "view", f"{ns}.totals", "--as", "sales.totals")
    cli(floe, "share", "add", share, "view", f"{ns}.leak", "--as", "sales.leak")
    profile = tmp_path / "rv.share"
    cli(floe, "recipient", "create", rcpt, "--profile-out", str(profile))
    cli(floe, "share", "grant", share, "TO", rcpt)
    token = json.loads(profile.read_text())["bearerToken"]
    share_catalog(spark, floe, shared, share, rcpt, token)

    assert sorted(r.viewName for r in spark.sql(f"SHOW VIEWS IN {shared}.sales").collect()) == ["leak", "totals"]
    got = sorted(tuple(r) for r in spark.sql(f"SELECT region, total FROM {shared}.sales.totals").collect())
    assert got == [("apac", 5.0), ("eu", 40.0), ("us", 20.0)]
    with pytest.raises(Exception, match="(?i)forbidden|not in this share|403"):
        spark.sql(f"SELECT * FROM {shared}.sales.leak").collect()
