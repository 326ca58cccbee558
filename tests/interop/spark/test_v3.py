"""Iceberg format version 3 between Spark and Floe, both ways.

1. Spark writes a v3 table with merge-on-read DELETE, UPDATE and MERGE, so
   its row-level deletes are deletion vectors (Puffin `deletion-vector-v1`
   blobs). Floe's SQL endpoint (psycopg) reads exactly Spark's rows (and
   PyIceberg's), and the row lineage columns `_row_id` and
   `_last_updated_sequence_number` as Spark reports them.
2. Floe writes a v3 table: `floe ingest` appends, then SQL INSERT, UPDATE,
   DELETE and MERGE through the SQL endpoint (these used to answer "missing
   first_row_id which is required for v3"), with a Spark deletion vector in
   between; the table is merge-on-read, so Floe's DML writes deletion
   vectors too. After each, Spark and PyIceberg read the rows of an independent
   Python model, and the table's row lineage holds:
   every live data file has a first_row_id below the table's next-row-id
   and no two files share a row id.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any, Optional

import psycopg
from conftest import CATALOG, WAREHOUSE, FloeServer, floe_binary
from pyiceberg.catalog.rest import RestCatalog

NS = "v3_ns"

Row = tuple[int, str, Optional[int], str]  # id, name, qty, region
Model = dict[int, Row]

MOR = ", ".join(f"'write.{op}.mode'='merge-on-read'" for op in ("delete", "update", "merge"))


def rows_spark(spark: Any, fq: str) -> list[Row]:
    return sorted((r.id, r.name, r.qty, r.region) for r in spark.sql(f"SELECT id, name, qty, region FROM {fq}").collect())


def rows_sql(conn: Any, table: str) -> list[Row]:
    return sorted(tuple(r) for r in conn.execute(f"SELECT id, name, qty, region FROM {table}").fetchall())


def rows_pyiceberg(floe: FloeServer, table: str) -> list[Row]:
    """The rows as PyIceberg reads them (it applies deletion vectors itself)."""
    cat = RestCatalog("floe", uri=floe.uri, warehouse=WAREHOUSE,
                      **{"oauth2-server-uri": floe.token_url, "credential": floe.credential})
    t = cat.load_table(f"{NS}.{table}").scan(selected_fields=("id", "name", "qty", "region")).to_arrow()
    return sorted(zip(t["id"].to_pylist(), t["name"].to_pylist(), t["qty"].to_pylist(), t["region"].to_pylist()))


def sql_conn(floe: FloeServer) -> Any:
    return psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname="floe", user="admin",
                           password=floe.fetch_token(), sslmode="disable", connect_timeout=10, autocommit=True)


def values(rows: list[Row]) -> str:
    def lit(v: Any) -> str:
        if v is None:
            return "NULL"
        if isinstance(v, str):
            return "'" + v + "'"
        return str(v)
    return ", ".join("(" + ", ".join(lit(v) for v in r) + ")" for r in rows)


def create_v3(spark: Any, fq: str) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NS}")
    spark.sql(f"CREATE TABLE {fq} (id BIGINT, name STRING, qty INT, region STRING) USING iceberg "
              f"PARTITIONED BY (region) TBLPROPERTIES ('format-version'='3', {MOR})")


def check_lineage(floe: FloeServer, spark: Any, fq: str, table: str) -> None:
    """Every live data file has a first_row_id; their ranges are disjoint and
    below the table's next-row-id (as Floe's metadata says)."""
    md = floe.load_table(NS, table)["metadata"]
    assert md["format-version"] == 3
    next_row_id = md["next-row-id"]
    files = spark.sql(f"SELECT file_path, record_count, first_row_id FROM {fq}.data_files").collect()
    assert files, "no data files"
    spans = sorted((f.first_row_id, f.first_row_id + f.record_count) for f in files if f.first_row_id is not None)
    assert len(spans) == len(files), f"data files without first_row_id: {files}"
    for (a, b), (c, _) in zip(spans, spans[1:]):
        assert b <= c, f"row id ranges overlap: [{a}, {b}) and [{c}, ...)"
    assert spans[-1][1] <= next_row_id, f"rows up to {spans[-1][1]} but next-row-id {next_row_id}"


def test_sql_endpoint_reads_spark_deletion_vectors(floe: FloeServer, spark: Any) -> None:
    fq = f"{CATALOG}.{NS}.spark_dv"
    create_v3(spark, fq)
    rows = [(i, f"item-{i}", i * 2 if i % 5 else None, ("eu", "us", "apac")[i % 3]) for i in range(1, 61)]
    spark.sql(f"INSERT INTO {fq} VALUES {values(rows[:30])}")
    spark.sql(f"INSERT INTO {fq} VALUES {values(rows[30:])}")
    spark.sql(f"DELETE FROM {fq} WHERE id % 7 = 0")
    spark.sql(f"UPDATE {fq} SET qty = -1, name = upper(name) WHERE id % 11 = 0")
    spark.sql(f"MERGE INTO {fq} t USING (SELECT id FROM {fq} WHERE id BETWEEN 20 AND 24 "
              f"UNION ALL SELECT 100 AS id) s ON t.id = s.id "
              f"WHEN MATCHED AND t.id = 22 THEN DELETE WHEN MATCHED THEN UPDATE SET t.qty = 999 "
              f"WHEN NOT MATCHED THEN INSERT (id, name, qty, region) VALUES (s.id, 'new', 1, 'eu')")
    # Spark wrote deletion vectors, not position delete files.
    deletes = spark.sql(f"SELECT file_format, content FROM {fq}.delete_files").collect()
    assert deletes, "Spark wrote no delete files; the test proves nothing"
    assert {d.file_format for d in deletes} == {"PUFFIN"}, deletes
    want = rows_spark(spark, fq)
    assert len(want) == 60 - 8 - 1 + 1  # 8 multiples of 7, id 22 merged away, id 100 merged in
    assert rows_pyiceberg(floe, "spark_dv") == want
    with sql_conn(floe) as conn:
        assert rows_sql(conn, f"{NS}.spark_dv") == want
        # Aggregates and filters see the same rows.
        n, s = conn.execute(f"SELECT count(*), sum(qty) FROM {NS}.spark_dv WHERE region = 'eu'").fetchone()
        eu = [r for r in want if r[3] == "eu"]
        assert n == len(eu) and s == sum(r[2] for r in eu if r[2] is not None)
        # Row lineage: the same _row_id and _last_updated_sequence_number.
        lin = "SELECT id, _row_id, _last_updated_sequence_number FROM "
        spark_lineage = sorted(tuple(r) for r in spark.sql(lin + fq).collect())
        assert len(spark_lineage) == len(want)
        assert sorted(tuple(r) for r in conn.execute(lin + f"{NS}.spark_dv").fetchall()) == spark_lineage


def floe_cli(floe: FloeServer, *args: str, stdin: bytes | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOE_")}
    env.update({"FLOE_URL": floe.uri, "FLOE_CREDENTIAL": floe.credential})
    p = subprocess.run([str(floe_binary()), *args], input=stdin, capture_output=True, env=env, timeout=300)
    assert p.returncode == 0, f"floe {' '.join(args)}: {p.stderr.decode()}"
    return p.stdout.decode()


def test_floe_writes_v3_spark_reads(floe: FloeServer, spark: Any) -> None:
    table = "floe_written"
    fq = f"{CATALOG}.{NS}.{table}"
    create_v3(spark, fq)
    model: Model = {}
    csv = "id,name,qty,region\n" + "".join(f"{i},item-{i},{i},{('eu', 'us')[i % 2]}\n" for i in range(1, 41))
    floe_cli(floe, "ingest", "--quiet", "--mode", "append", f"{NS}.{table}", "-", stdin=csv.encode())
    for i in range(1, 41):
        model[i] = (i, f"item-{i}", i, ("eu", "us")[i % 2])

    def check(what: str) -> None:
        spark.sql(f"REFRESH TABLE {fq}")
        assert rows_spark(spark, fq) == sorted(model.values()), f"Spark after {what}"
        assert rows_pyiceberg(floe, table) == sorted(model.values()), f"PyIceberg after {what}"
        check_lineage(floe, spark, fq, table)

    check("floe ingest")
    # Spark deletes with a deletion vector; Floe's DML must carry on from it.
    spark.sql(f"DELETE FROM {fq} WHERE id IN (3, 4)")
    del model[3], model[4]
    check("Spark's DV delete")
    with sql_conn(floe) as conn:
        t = f"{NS}.{table}"
        assert rows_sql(conn, t) == sorted(model.values())
        conn.execute(f"INSERT INTO {t} VALUES (100, 'inserted', 7, 'eu'), (101, NULL, NULL, 'us')")
        model[100] = (100, "inserted", 7, "eu")
        model[101] = (101, None, None, "us")
        check("INSERT")
        lineage = "SELECT id, _row_id, _last_updated_sequence_number FROM "
        before = {r[0]: (r[1], r[2]) for r in spark.sql(lineage + fq).collect()}
        conn.execute(f"UPDATE {t} SET qty = qty * 10 WHERE id <= 10")
        for i in list(model):
            if i <= 10:
                r = model[i]
                model[i] = (r[0], r[1], None if r[2] is None else r[2] * 10, r[3])
        check("UPDATE")
        # Row lineage as Spark reads it: every row keeps its _row_id; only
        # the updated rows get a new sequence number.
        after = {r[0]: (r[1], r[2]) for r in spark.sql(lineage + fq).collect()}
        assert after.keys() == before.keys()
        for i, (rid, seq) in after.items():
            assert rid == before[i][0], f"row {i}: _row_id {before[i][0]} became {rid}"
            assert (seq == before[i][1]) == (i > 10), f"row {i}: sequence number {before[i][1]} -> {seq}"
        conn.execute(f"DELETE FROM {t} WHERE region = 'us' AND id > 30")
        for i in [i for i, r in model.items() if r[3] == "us" and i > 30]:
            del model[i]
        check("DELETE")
        # The table is merge-on-read: Floe's DELETE wrote a deletion vector,
        # which Spark and PyIceberg just applied.
        summary = spark.sql(f"SELECT s.summary FROM {fq}.refs r JOIN {fq}.snapshots s "
                            "ON s.snapshot_id = r.snapshot_id WHERE r.name = 'main'").first()[0]
        assert int(summary.get("added-delete-files", "0")) >= 1, summary
        assert int(summary.get("added-data-files", "0")) == 0, summary
        conn.execute(f"MERGE INTO {t} AS x USING (SELECT * FROM (VALUES (1, 'm1'), (2, 'gone'), (200, 'new')) AS v(id, name)) AS s "
                     "ON x.id = s.id WHEN MATCHED AND s.name = 'gone' THEN DELETE WHEN MATCHED THEN UPDATE SET name = s.name "
                     "WHEN NOT MATCHED THEN INSERT (id, name, qty, region) VALUES (s.id, s.name, 0, 'eu')")
        del model[2]
        model[1] = (1, "m1", model[1][2], model[1][3])
        model[200] = (200, "new", 0, "eu")
        check("MERGE")
        assert rows_sql(conn, t) == sorted(model.values())
    # The next-row-id covers every row ever written.
    md = floe.load_table(NS, table)["metadata"]
    assert md["next-row-id"] >= 40 + 2
