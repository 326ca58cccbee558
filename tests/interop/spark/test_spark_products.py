"""Data products as Spark sees them (issue 20): a product published over a
table Spark created puts its business context where Spark shows it.
`DESCRIBE TABLE EXTENDED` gives the product's description as the table's
Comment, its owner, domain and terms among the Table Properties, and the
product's column docs as the columns' comments; after the product is
dropped the properties are gone and the data is untouched."""

from __future__ import annotations

from typing import Any

from conftest import CATALOG, FloeServer

NS = "products"


def describe(spark: Any, table: str) -> tuple[dict[str, str], dict[str, str]]:
    """The columns' comments and the detailed information of DESCRIBE TABLE EXTENDED."""
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").collect()
    cols: dict[str, str] = {}
    info: dict[str, str] = {}
    detailed = False
    for r in rows:
        if r.col_name.startswith("# Detailed"):
            detailed = True
        elif not detailed and r.col_name and not r.col_name.startswith("#"):
            cols[r.col_name] = r.comment or ""
        elif detailed:
            info[r.col_name] = r.data_type
    return cols, info


def test_spark_describe_shows_the_product(spark: Any, floe: FloeServer) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NS}")
    t = f"{CATALOG}.{NS}.orders"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, amount DOUBLE, region STRING) USING iceberg")
    spark.sql(f"INSERT INTO {t} VALUES (1, 10.0, 'eu'), (2, 5.5, 'us')")
    product = {
        "name": "orders_product", "domain": "commerce", "owner": "commerce_team",
        "description": "Orders as booked, one row per order.", "terms": ["order", "booking"],
        "outputs": [{"namespace": [NS], "table": "orders",
                     "columns": {"amount": "Order value in EUR.", "region": "Sales region of the order."}}],
    }
    published = floe.rest("POST", "/api/v1/products", body=product)
    assert published["version"] == 1
    spark.sql(f"REFRESH TABLE {t}")

    cols, info = describe(spark, t)
    assert cols["amount"] == "Order value in EUR." and cols["region"] == "Sales region of the order.", cols
    assert info.get("Comment") == "Orders as booked, one row per order.", info
    props = info.get("Table Properties", "")
    for want in ("floe.product=orders_product", "floe.product.owner=commerce_team", "floe.product.domain=commerce",
                 "floe.product.terms=order, booking"):
        assert want in props, props
    assert sorted(spark.sql(f"SELECT id FROM {t}").collect()) == [(1,), (2,)]

    floe.rest("DELETE", "/api/v1/products/orders_product")
    spark.sql(f"REFRESH TABLE {t}")
    _, info = describe(spark, t)
    assert "floe.product" not in info.get("Table Properties", ""), info
    assert sorted(spark.sql(f"SELECT id FROM {t}").collect()) == [(1,), (2,)]
    spark.sql(f"DROP TABLE {t} PURGE")
    spark.sql(f"DROP NAMESPACE {CATALOG}.{NS}")
