"""Data products (issue 20, standard S5) on the demo server, with real clients.

`floe serve --demo` publishes the `sales_pipeline` product over crm: the
views crm.pipeline and crm.pipeline_by_account and the table
crm.opportunities, two metrics and five expectations. Here:

* PyIceberg sees the product's business context on its outputs: the table's
  comment and floe.product.* properties and its columns' docs, the views'
  properties; `floe product list/show` find it.
* The metrics, asked by name at a grain and by dimensions through
  `floe product metrics`, equal what this test computes itself from the
  base tables read with PyIceberg (no SQL of Floe involved in the reference).
* The expectations pass (`floe product check` exits 0); after an ingest with
  a NULL amount they fail (exit 1, the failing expectation named), the
  failure is in the management API's check history and in the audit log
  (product.check, outcome failure).
* A principal with DESCRIBE on no output does not see the product; one with
  DESCRIBE on an output does.
* The SQL endpoint answers a metric by name (floe_metric, psycopg) with the
  same numbers as the PyIceberg reference, and refuses names the product
  does not define (42704, 22023) and readers without SELECT (42501).
* A product added to a share follows its versions: a recipient reads its
  outputs with PyIceberg through the share catalog.
* The demo's views run with the rights of crm_steward (definer rights): a
  principal granted SELECT on the product reads them, never crm.accounts.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import time
from collections import defaultdict
from datetime import date

import pytest
from conftest import WAREHOUSE, floe_binary

OPEN = lambda stage: stage not in ("Closed Won", "Closed Lost")  # noqa: E731


def cli(srv, *args: str, check: bool = True, credential: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOE_") and not k.startswith("AWS_")}
    env["FLOE_URL"] = srv.uri
    env["FLOE_CREDENTIAL"] = credential or srv.credential
    r = subprocess.run([str(floe_binary()), *args], env=env, capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        raise AssertionError(f"floe {' '.join(args)}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def audit(srv, *args: str) -> list[dict]:
    out = subprocess.run([str(floe_binary()), "audit", "query", "--data-dir", str(srv.data_dir), "--json",
                          "--limit", "100000", *args], capture_output=True, text=True, timeout=60, check=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def base(floe_demo):
    """The base tables, read with PyIceberg."""
    cat = floe_demo.catalog()
    accounts = {a["account_id"]: a for a in cat.load_table("crm.accounts").scan().to_arrow().to_pylist()}
    opps = cat.load_table("crm.opportunities").scan().to_arrow().to_pylist()
    return accounts, opps


def test_context_is_on_the_outputs(floe_demo) -> None:
    cat = floe_demo.catalog()
    t = cat.load_table("crm.opportunities")
    props = t.properties
    assert props["floe.product"] == "sales_pipeline"
    assert props["floe.product.owner"] == "admin" and props["floe.product.domain"] == "sales"
    assert props["comment"] == "Sales opportunities, one row each (source table of the product)."
    assert "open pipeline" in props["floe.product.terms"]
    docs = {f.name: f.doc for f in t.schema().fields}
    assert docs["amount"] == "Deal value in EUR."
    assert docs["stage"].startswith("Sales stage:")
    view = cat.load_view("crm.pipeline")
    assert view.metadata.properties["floe.product"] == "sales_pipeline"
    assert view.metadata.properties["comment"].startswith("One row per opportunity")

    listed = cli(floe_demo, "product", "list", "--json")
    names = [p["name"] for p in json.loads(listed.stdout)["products"]]
    assert names == ["sales_pipeline"]
    shown = json.loads(cli(floe_demo, "product", "show", "sales_pipeline", "--json").stdout)
    assert [o["name"] for o in shown["outputs"]] == ["pipeline", "pipeline_by_account", "opportunities"]
    assert {m["name"] for m in shown["metrics"]} == {"open_pipeline_value", "win_rate"}


def metric_rows(srv, metric: str, grain: str, *dims: str) -> list[dict]:
    args = ["product", "metrics", "sales_pipeline", metric, "--grain", grain]
    for d in dims:
        args += ["--by", d]
    return list(csv.DictReader(io.StringIO(cli(srv, *args).stdout)))


def truncate(d: date, grain: str) -> str:
    if grain == "month":
        return date(d.year, d.month, 1).isoformat()
    if grain == "quarter":
        return date(d.year, 3 * ((d.month - 1) // 3) + 1, 1).isoformat()
    return date(d.year, 1, 1).isoformat()


def test_metrics_equal_a_computation_over_the_base_tables(floe_demo, base) -> None:
    accounts, opps = base
    want: dict[tuple, float] = defaultdict(float)
    for o in opps:
        if o["amount"] is not None and o["stage"] is not None and OPEN(o["stage"]):
            want[(truncate(o["close_date"], "month"), accounts[o["account_id"]]["region"])] += o["amount"]
    rows = metric_rows(floe_demo, "open_pipeline_value", "month", "region")
    got = {(r["month"], r["region"]): float(r["open_pipeline_value"]) for r in rows}
    assert got.keys() == want.keys()
    for k, v in want.items():
        assert got[k] == pytest.approx(v), k
    assert [(r["month"], r["region"]) for r in rows] == sorted(got)  # ordered by the groups

    won: dict[tuple, int] = defaultdict(int)
    closed: dict[tuple, int] = defaultdict(int)
    for o in opps:
        if o["stage"] in ("Closed Won", "Closed Lost"):
            k = (truncate(o["close_date"], "quarter"), accounts[o["account_id"]]["industry"])
            closed[k] += 1
            won[k] += o["stage"] == "Closed Won"
    rows = metric_rows(floe_demo, "win_rate", "quarter", "industry")
    got = {(r["quarter"], r["industry"]): float(r["win_rate"]) for r in rows}
    assert got.keys() == closed.keys()
    for k in closed:
        assert got[k] == pytest.approx(won[k] / closed[k]), k

    refused = cli(floe_demo, "product", "metrics", "sales_pipeline", "win_rate", "--by", "stage", check=False)
    assert refused.returncode != 0 and 'cannot be grouped by "stage"' in refused.stderr


def sql(srv, query: str, user: str = "admin", token: str | None = None) -> tuple[list[str], list[tuple]]:
    """Runs query on the SQL endpoint with psycopg: the column names and rows."""
    import psycopg

    with psycopg.connect(host="127.0.0.1", port=srv.sql_port, dbname="floe", user=user, password=token or srv.fetch_token(),
                         sslmode="disable", connect_timeout=10, autocommit=True) as conn:
        cur = conn.execute(query)
        return [d.name for d in cur.description], cur.fetchall()


def open_pipeline_by_month_and_region(base) -> dict[tuple, float]:
    accounts, opps = base
    want: dict[tuple, float] = defaultdict(float)
    for o in opps:
        if o["amount"] is not None and o["stage"] is not None and OPEN(o["stage"]):
            want[(truncate(o["close_date"], "month"), accounts[o["account_id"]]["region"])] += o["amount"]
    return want


def test_sql_endpoint_answers_a_metric_by_name(floe_demo, base) -> None:
    """floe_metric(product, metric, grain => ..., dimensions => [...]) on the
    SQL endpoint: the same numbers as the reference computed from the base
    tables read with PyIceberg, no join written by the consumer; names the
    product does not define are refused with their SQLSTATE."""
    import psycopg

    want = open_pipeline_by_month_and_region(base)
    cols, rows = sql(floe_demo, "SELECT * FROM floe_metric('sales_pipeline', 'open_pipeline_value', "
                                "grain => 'month', dimensions => ['region'])")
    assert cols == ["month", "region", "open_pipeline_value"]
    got = {(m.isoformat(), r): float(v) for m, r, v in rows}
    assert got.keys() == want.keys()
    for k, v in want.items():
        assert got[k] == pytest.approx(v), k
    assert [(m.isoformat(), r) for m, r, _ in rows] == sorted(got)  # ordered by the groups

    # It composes like a table: filtered, joined with another metric.
    _, rows = sql(floe_demo, """SELECT p.region, sum(p.open_pipeline_value), max(w.win_rate)
        FROM floe_metric('sales_pipeline', 'open_pipeline_value', dimensions => ['region']) AS p
        JOIN floe_metric('sales_pipeline', 'win_rate', dimensions => 'region') AS w USING (region)
        WHERE p.open_pipeline_value > 0 GROUP BY 1 ORDER BY 1""")
    by_region: dict[str, float] = defaultdict(float)
    for (_, region), v in want.items():
        by_region[region] += v
    assert {r: float(v) for r, v, _ in rows} == pytest.approx({r: v for r, v in by_region.items() if v > 0})
    assert all(0 <= float(w) <= 1 for _, _, w in rows)

    for query, error, message in [
        ("SELECT * FROM floe_metric('no_such_product', 'win_rate')", psycopg.errors.UndefinedObject,
         'data product "no_such_product" does not exist'),
        ("SELECT * FROM floe_metric('sales_pipeline', 'no_such_metric')", psycopg.errors.UndefinedObject,
         'has no metric "no_such_metric" (metrics: open_pipeline_value, win_rate)'),
        ("SELECT * FROM floe_metric('sales_pipeline', 'win_rate', grain => 'day')", psycopg.errors.InvalidParameterValue,
         'allows the grains month, quarter, year, not "day"'),
        ("SELECT * FROM floe_metric('sales_pipeline', 'win_rate', dimensions => ['stage'])", psycopg.errors.InvalidParameterValue,
         'cannot be grouped by "stage"'),
        ("SELECT * FROM floe_metric('sales_pipeline', 'win_rate', dimensions => ['region; DROP TABLE crm.accounts'])",
         psycopg.errors.InvalidParameterValue, "cannot be grouped by"),
    ]:
        with pytest.raises(error, match=re.escape(message)):
            sql(floe_demo, query)

    # A principal who sees the product (DESCRIBE on an output) but may not
    # read what the metric reads is refused, the privilege named.
    admin = floe_demo.fetch_token()
    p = floe_demo.request("POST", "/api/v1/principals", body={"name": "metric_describer"}, token=admin)
    floe_demo.request("POST", "/api/v1/grants", token=admin, body={
        "grantee": {"kind": "principal", "name": "metric_describer"}, "privilege": "DESCRIBE",
        "on": {"kind": "table", "namespace": ["crm"], "name": "opportunities"}})
    tok = floe_demo.fetch_token(p["client_id"], p["client_secret"])
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="SELECT"):
        sql(floe_demo, "SELECT * FROM floe_metric('sales_pipeline', 'win_rate')", user="metric_describer", token=tok)
    # One who does not see it is told it does not exist.
    q = floe_demo.request("POST", "/api/v1/principals", body={"name": "metric_stranger"}, token=admin)
    tok = floe_demo.fetch_token(q["client_id"], q["client_secret"])
    with pytest.raises(psycopg.errors.UndefinedObject, match="does not exist"):
        sql(floe_demo, "SELECT * FROM floe_metric('sales_pipeline', 'win_rate')", user="metric_stranger", token=tok)


def test_expectations_pass_then_fail_after_a_bad_ingest(floe_demo) -> None:
    ok = cli(floe_demo, "product", "check", "sales_pipeline")
    assert "sales_pipeline: pass" in ok.stdout

    token = floe_demo.fetch_token()
    body = b"opportunity_id,account_id,stage,close_date,amount\n900001,1,Prospecting,2025-06-01,\n"
    import urllib.request
    req = urllib.request.Request(f"{floe_demo.uri}/api/v1/tables/{WAREHOUSE}/crm/opportunities/ingest?format=csv&mode=append",
                                 data=body, method="POST", headers={"Authorization": f"Bearer {token}", "Content-Type": "text/csv"})
    with urllib.request.urlopen(req, timeout=60) as r:
        assert r.status in (200, 201)

    bad = cli(floe_demo, "product", "check", "sales_pipeline", check=False)
    assert bad.returncode == 1, bad
    lines = {line.split()[0]: line for line in bad.stdout.splitlines() if line.strip()}
    assert " fail " in lines["amount_not_null"] and "1 rows have a NULL amount" in lines["amount_not_null"]
    assert " pass " in lines["known_stages"] and " pass " in lines["opportunity_ids_unique"]
    assert "amount_not_null fail" in bad.stderr

    runs = floe_demo.request("GET", "/api/v1/products/sales_pipeline/checks", token=token)["runs"]
    assert runs[0]["status"] == "fail" and runs[1]["status"] == "pass"
    failed = [r for r in runs[0]["results"] if r["status"] != "pass"]
    assert [r["expectation"] for r in failed] == ["amount_not_null"]

    recs = audit(floe_demo, "--action", "product.check")
    outcomes = [(r["outcome"], r["detail"].get("status")) for r in recs]
    assert ("success", "pass") in outcomes and ("failure", "fail") in outcomes
    fail_rec = next(r for r in recs if r["outcome"] == "failure")
    assert fail_rec["detail"]["not_passed"] == ["amount_not_null:fail"]
    assert fail_rec["resource"] == f"product:{WAREHOUSE}.sales_pipeline"


def test_discovery_needs_describe_on_an_output(floe_demo) -> None:
    admin = floe_demo.fetch_token()
    p = floe_demo.request("POST", "/api/v1/principals", body={"name": "product_reader"}, token=admin)
    cred = f"{p['client_id']}:{p['client_secret']}"
    listed = json.loads(cli(floe_demo, "product", "list", "--json", credential=cred).stdout)
    assert listed["products"] == []
    hidden = cli(floe_demo, "product", "show", "sales_pipeline", credential=cred, check=False)
    assert hidden.returncode != 0 and "lack DESCRIBE" in hidden.stderr
    floe_demo.request("POST", "/api/v1/grants", token=admin, body={
        "grantee": {"kind": "principal", "name": "product_reader"}, "privilege": "DESCRIBE",
        "on": {"kind": "view", "namespace": ["crm"], "name": "pipeline"}})
    listed = json.loads(cli(floe_demo, "product", "list", "--json", credential=cred).stdout)
    assert [x["name"] for x in listed["products"]] == ["sales_pipeline"]


def test_select_on_the_product_reads_its_outputs(floe_demo) -> None:
    """A grant on the product is a grant on its outputs (a tag grant on the
    tag the product keeps on them): PyIceberg reads the table output with
    vended credentials, a table outside the product stays closed, and the
    revoke closes the output again."""
    from pyiceberg.exceptions import ForbiddenError

    admin = floe_demo.fetch_token()
    p = floe_demo.request("POST", "/api/v1/principals", body={"name": "product_analyst"}, token=admin)
    cred = f"{p['client_id']}:{p['client_secret']}"
    analyst = floe_demo.catalog(credential=cred)
    with pytest.raises(ForbiddenError):
        analyst.load_table("crm.opportunities")

    out = cli(floe_demo, "product", "grant", "sales_pipeline", "SELECT", "TO", "principal", "product_analyst").stdout
    assert "granted SELECT on data product" in out
    grants = json.loads(cli(floe_demo, "product", "grants", "sales_pipeline", "--json").stdout)["grants"]
    assert [(g["privilege"], g["grantee"]["name"]) for g in grants] == [("SELECT", "product_analyst")]

    want = floe_demo.catalog().load_table("crm.opportunities").scan().to_arrow().num_rows
    assert analyst.load_table("crm.opportunities").scan().to_arrow().num_rows == want
    with pytest.raises(ForbiddenError):
        analyst.load_table("crm.accounts")  # not an output of the product

    cli(floe_demo, "product", "revoke", "sales_pipeline", "SELECT", "FROM", "principal", "product_analyst")
    with pytest.raises(ForbiddenError):
        analyst.load_table("crm.opportunities")


def test_a_shared_product_follows_its_versions(floe_demo, tmp_path) -> None:
    """A product added to a share (`floe share add SHARE product NAME`)
    shares its current outputs: a recipient reads the table output with
    PyIceberg through the share catalog, sees the product's context (table
    properties, the schema's floe.products.<name>), and a new version's
    output appears while the removed one disappears."""
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.exceptions import NoSuchTableError

    admin = floe_demo.fetch_token()
    product = {"name": "account_directory", "domain": "sales", "owner": "admin",
               "description": "Every customer account, with its region and industry.",
               "outputs": [{"namespace": ["crm"], "table": "accounts", "description": "One row per account."}]}
    floe_demo.request("POST", "/api/v1/products", body=product, token=admin)
    share = "account_directory_share"
    cli(floe_demo, "share", "create", share)
    added = cli(floe_demo, "share", "add", share, "product", "account_directory").stdout
    assert "added product account_directory" in added, added
    profile = tmp_path / "r.share"
    cli(floe_demo, "recipient", "create", "partner_co", "--profile-out", str(profile))
    cli(floe_demo, "share", "grant", share, "TO", "partner_co")
    token = json.loads(profile.read_text())["bearerToken"]
    rcat = RestCatalog("shared", uri=f"{floe_demo.uri}/shares/{share}/iceberg", warehouse=share, token=token)

    assert rcat.list_namespaces() == [("crm",)]
    assert rcat.list_tables("crm") == [("crm", "accounts")]
    t = rcat.load_table("crm.accounts")
    provider = floe_demo.catalog().load_table("crm.accounts").scan().to_arrow()
    got = t.scan().to_arrow()
    assert got.num_rows == provider.num_rows > 0
    assert sorted(got["account_id"].to_pylist()) == sorted(provider["account_id"].to_pylist())
    assert t.properties["floe.product"] == "account_directory" and t.properties["comment"] == "One row per account."
    ns_props = rcat.load_namespace_properties("crm")
    assert ns_props["floe.products.account_directory"] == \
        "Every customer account, with its region and industry. (version 1, owner admin, outputs crm.accounts)"
    with pytest.raises(NoSuchTableError):
        rcat.load_table("crm.opportunities")  # not an output of this product

    # Version 2 publishes crm.activities instead of crm.accounts.
    v2 = dict(product, version=1, outputs=[{"namespace": ["crm"], "table": "activities"}])
    assert floe_demo.request("PUT", "/api/v1/products/account_directory", body=v2, token=admin)["version"] == 2
    assert rcat.list_tables("crm") == [("crm", "activities")]
    assert rcat.load_table("crm.activities").scan().to_arrow().num_rows == \
        floe_demo.catalog().load_table("crm.activities").scan().to_arrow().num_rows
    # A removed output is gone within the share catalog's documented 500 ms
    # reuse of a resolved table (docs/sharing.md, "Revocation and caching").
    deadline = time.monotonic() + 3
    while True:
        try:
            rcat.load_table("crm.accounts")
        except NoSuchTableError:
            break
        assert time.monotonic() < deadline, "crm.accounts still loads through the share 3 s after version 2 removed it"
        time.sleep(0.1)
    assert "version 2" in rcat.load_namespace_properties("crm")["floe.products.account_directory"]

    shown = json.loads(cli(floe_demo, "share", "show", share, "--json").stdout)
    assert [(o["kind"], o["name"]) for o in shown["objects"]] == [("product", "account_directory")]
    cli(floe_demo, "share", "remove", share, "account_directory")
    assert rcat.list_namespaces() == []


def test_select_on_the_product_reads_its_definer_views_and_nothing_else(floe_demo, base) -> None:
    """The demo's views are owned by crm_steward (not an administrator) and
    run with its rights (SECURITY DEFINER): a principal granted SELECT on
    the product, and nothing else, reads crm.pipeline and
    crm.pipeline_by_account through the SQL endpoint (and the metrics over
    them) without any grant on the base tables, and still cannot read the
    base table crm.accounts by any path: the SQL endpoint, directly or in a
    join, nor loadTable."""
    import psycopg
    from pyiceberg.exceptions import ForbiddenError

    cat = floe_demo.catalog()
    for v in ("pipeline", "pipeline_by_account"):
        view = cat.load_view(f"crm.{v}")
        assert view.metadata.properties["floe.security"] == "definer", v
        assert view.metadata.versions[-1].summary["floe.definer"] == "crm_steward", v

    admin = floe_demo.fetch_token()
    p = floe_demo.request("POST", "/api/v1/principals", body={"name": "pipeline_reader"}, token=admin)
    cli(floe_demo, "product", "grant", "sales_pipeline", "SELECT", "TO", "principal", "pipeline_reader")
    tok = floe_demo.fetch_token(p["client_id"], p["client_secret"])
    grants = floe_demo.request("GET", "/api/v1/grants?grantee=pipeline_reader", token=admin)["grants"]
    assert [(g["privilege"], g.get("tag_expression")) for g in grants] == [("SELECT", "floe.product.sales_pipeline = output")]

    def as_reader(query: str):
        return sql(floe_demo, query, user="pipeline_reader", token=tok)

    # The views, as the administrator reads them.
    _, want = sql(floe_demo, "SELECT count(*), sum(amount) FROM crm.pipeline")
    _, got = as_reader("SELECT count(*), sum(amount) FROM crm.pipeline")
    assert got == want and got[0][0] > 0
    _, want = sql(floe_demo, "SELECT * FROM crm.pipeline_by_account ORDER BY account_id")
    _, got = as_reader("SELECT * FROM crm.pipeline_by_account ORDER BY account_id")
    assert got == want and len(got) == len(base[0])
    # A metric over a definer view needs nothing more either.
    _, got = as_reader("SELECT * FROM floe_metric('sales_pipeline', 'open_pipeline_value', grain => 'month', dimensions => ['region'])")
    _, want = sql(floe_demo, "SELECT * FROM floe_metric('sales_pipeline', 'open_pipeline_value', grain => 'month', dimensions => ['region'])")
    assert got == want and got

    # The base table that is no output stays closed, by every path.
    for query in ("SELECT * FROM crm.accounts",
                  "SELECT count(*) FROM floe.crm.accounts",
                  "SELECT p.* FROM crm.pipeline p JOIN crm.accounts a USING (account_id)",
                  "WITH a AS (SELECT * FROM crm.accounts) SELECT count(*) FROM a",
                  "SELECT * FROM crm.pipeline WHERE account_id IN (SELECT account_id FROM crm.accounts)"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="SELECT"):
            as_reader(query)
    reader = floe_demo.catalog(credential=f"{p['client_id']}:{p['client_secret']}")
    with pytest.raises(ForbiddenError):
        reader.load_table("crm.accounts")
    # Nor can the reader make a definer view of its own over it.
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        as_reader("CREATE VIEW crm.mine SECURITY DEFINER AS SELECT * FROM crm.accounts")
