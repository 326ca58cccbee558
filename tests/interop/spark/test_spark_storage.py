"""Spark reaches table files only through what Floe vends, and they are encrypted on disk.

The Spark session is configured with the catalog URI, warehouse, token URL and
an OAuth2 client credential, nothing about storage. Floe answers every
loadTable with its embedded S3 endpoint and a short-lived credential scoped to
the table; Iceberg's S3FileIO (the AWS bundle) uses them. The files Floe keeps
for the bucket are AES-256-GCM ciphertext: no Parquet magic, no JSON, and no
trace of a value the test wrote, even with Parquet compression off.
"""

from __future__ import annotations

import uuid
from typing import Any

from conftest import CATALOG, FloeServer


def test_catalog_conf_has_no_storage_settings(spark: Any) -> None:
    conf = {k: v for k, v in spark.sparkContext.getConf().getAll() if k.startswith(f"spark.sql.catalog.{CATALOG}.")}
    assert conf, "the floe catalog is not configured"
    keys = {k.removeprefix(f"spark.sql.catalog.{CATALOG}.") for k in conf}
    assert keys <= {"type", "uri", "warehouse", "oauth2-server-uri", "credential", "cache-enabled"}, keys


def test_create_insert_delete_read_with_vended_credentials(spark: Any, floe: FloeServer) -> None:
    marker = f"floe-spark-plaintext-{uuid.uuid4().hex}"
    ns, name = "storage", "secrets"
    t = f"{CATALOG}.{ns}.{name}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{ns}")
    # Uncompressed Parquet: were the files stored in the clear, the marker
    # would be there byte for byte.
    spark.sql(f"""CREATE TABLE {t} (id INT, secret STRING) USING iceberg
                  TBLPROPERTIES ('format-version' = '2', 'write.parquet.compression-codec' = 'uncompressed',
                                 'write.delete.mode' = 'copy-on-write', 'marker' = '{marker}')""")
    rows = ", ".join(f"({i}, '{marker}-{i}')" for i in range(20))
    spark.sql(f"INSERT INTO {t} VALUES {rows}")
    spark.sql(f"DELETE FROM {t} WHERE id < 5")
    got = [(r.id, r.secret) for r in spark.sql(f"SELECT id, secret FROM {t} ORDER BY id").collect()]
    assert got == [(i, f"{marker}-{i}") for i in range(5, 20)]
    ops = [r.operation for r in spark.sql(f"SELECT operation FROM {t}.snapshots ORDER BY committed_at").collect()]
    assert ops[0] == "append" and ops[1] in ("overwrite", "delete") and len(ops) == 2, ops

    # What Floe handed out with the table: its own S3 endpoint and a credential.
    loaded = floe.load_table(ns, name)
    cfg = loaded["config"]
    assert cfg.get("s3.endpoint") == floe.s3_url, cfg.get("s3.endpoint")
    assert cfg.get("s3.path-style-access") == "true"
    assert cfg.get("s3.access-key-id", "").startswith("FLOE"), sorted(cfg)
    assert cfg.get("s3.secret-access-key") and cfg.get("s3.session-token")
    [sc] = loaded["storage-credentials"]
    assert sc["prefix"].rstrip("/") == loaded["metadata"]["location"], (sc["prefix"], loaded["metadata"]["location"])

    # On disk: every file of the table is ciphertext.
    table_dir = floe.local_path(loaded["metadata"]["location"])
    files = [p for p in table_dir.rglob("*") if p.is_file()]
    assert any(p.suffix == ".parquet" for p in files), files
    assert any(p.name.endswith(".metadata.json") for p in files), files
    assert floe.local_path(loaded["metadata-location"]) in files
    for p in files:
        data = p.read_bytes()
        assert len(data) > 0, p
        assert not data.startswith(b"PAR1") and not data.endswith(b"PAR1"), f"{p} is plaintext Parquet"
        assert not data.lstrip().startswith(b"{"), f"{p} is plaintext JSON"
        assert marker.encode() not in data, f"{p} holds a value written into the table in the clear"

    spark.sql(f"DROP TABLE {t} PURGE")
    spark.sql(f"DROP NAMESPACE {CATALOG}.{ns}")
    assert not any(p.exists() for p in files if p.suffix == ".parquet"), "DROP TABLE ... PURGE left data files"
