"""Clean rooms (issue 22: aggregation, list and custom rules, differential
privacy) with a real PostgreSQL client (psycopg) and the `floe` CLI.

Two principals of different "organisations" each own a table in a
namespace of their own and have no grant on the other's:

* retailer: cr_retail.customers (customer_id, email, segment, ltv)
* advertiser: cr_ads.exposures (user_id, email, campaign, spend)

The retailer creates the collaboration `overlap` and adds the advertiser
(`floe cleanroom create/add-member`); each configures its own table
(`floe cleanroom configure-table`: e-mail as the join key, the segment and
the campaign as dimensions, thresholds of 5 customers and 3 users).

* The documented overlap analysis (customers by segment x campaign), run by
  either member in the collaboration (SET floe.collaboration), returns
  exactly what the administrator computes with plain SQL over the real
  tables, minus the groups below a threshold, which are suppressed.
* Every adversarial query is refused with SQLSTATE 42501 naming the rule;
  a query that fails while running does not quote the data.
* Outside the collaboration neither member can read the other's table.
* The collaboration's query log (`floe cleanroom log`) shows both members
  the queries, with the rows returned and the groups suppressed.
* Differential privacy and its budget (a second collaboration); a join
  that fans out (one customer matching several users) is refused under
  DP; SHOW floe.privacy_budget drops after a DP query.
* The list rule (`--analysis-rule list`): an overlap list equals the
  plain-SQL reference; identifiers and join keys are refused (42501).
* The custom rule: a parameterised template (`floe cleanroom template
  add/approve/list/remove`) run with EXECUTE TEMPLATE equals the plain-SQL
  reference; an unapproved template, a member it does not allow and raw
  SQL on a custom-rule table are refused (42501).
* A member from another organisation: recipient cr_agency (bearer token)
  runs the overlap over the SQL endpoint and HTTP with the principals'
  result, and reads nothing else (no raw SELECT, no catalog listing, no
  REST catalog or other management route, no PyIceberg loadTable).
* The HTTP query API (POST /api/v1/query with "collaboration", via
  requests) returns the SQL endpoint's overlap rows and refuses raw rows,
  joins on other columns and other tables with the SQL endpoint's messages.
"""

from __future__ import annotations

import json
import os
import subprocess

import psycopg
import pytest
import requests
from conftest import floe_binary
from pyiceberg.exceptions import ForbiddenError, UnauthorizedError

MIN_CUSTOMERS, MIN_USERS = 5, 3

# gold: customers 1-20, silver 21-50, bronze 51-60.
CUSTOMERS = [(i, f"u{i}@example.com", "gold" if i <= 20 else "silver" if i <= 50 else "bronze", float(i * 10))
             for i in range(1, 61)]
# spring reaches customers 1-30 and 51-53 (3 bronze: below 5, suppressed),
# summer 25-58, some people twice; 70-79 are not customers of the retailer.
EXPOSURES = []
for i in [*range(1, 31), *range(51, 54), *range(70, 75)]:
    EXPOSURES.append((1000 + len(EXPOSURES), f"u{i}@example.com", "spring", 1.5))
for i in [*range(25, 59), *range(25, 30), *range(75, 80)]:
    EXPOSURES.append((1000 + len(EXPOSURES), f"u{i}@example.com", "summer", 2.0))

OVERLAP = ("SELECT c.segment, e.campaign, count(DISTINCT c.customer_id) AS customers "
           "FROM customers c JOIN exposures e ON c.email = e.email "
           "GROUP BY c.segment, e.campaign ORDER BY c.segment, e.campaign")


def cli(srv, credential: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOE_") and not k.startswith("AWS_")}
    env["FLOE_URL"] = srv.uri
    env["FLOE_CREDENTIAL"] = credential
    r = subprocess.run([str(floe_binary()), *args], env=env, capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        raise AssertionError(f"floe {' '.join(args)}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def connect(srv, user: str, token: str) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=srv.sql_port, dbname="floe", user=user, password=token,
                           sslmode="disable", connect_timeout=10, autocommit=True)


class Party:
    def __init__(self, srv, name: str) -> None:
        admin = srv.fetch_token()
        out = srv.request("POST", "/api/v1/principals", body={"name": name}, token=admin)
        self.name = name
        self.credential = f"{out['client_id']}:{out['client_secret']}"
        self.token = srv.fetch_token(out["client_id"], out["client_secret"])


@pytest.fixture(scope="module")
def room(floe):
    admin = floe.fetch_token()
    with connect(floe, "admin", admin) as conn:
        conn.execute("CREATE SCHEMA cr_retail")
        conn.execute("CREATE SCHEMA cr_ads")
        conn.execute("CREATE TABLE cr_retail.customers (customer_id BIGINT, email VARCHAR, segment VARCHAR, ltv DOUBLE)")
        conn.execute("CREATE TABLE cr_ads.exposures (user_id BIGINT, email VARCHAR, campaign VARCHAR, spend DOUBLE)")
        conn.execute("INSERT INTO cr_retail.customers VALUES " + ", ".join(f"({i}, '{e}', '{s}', {v})" for i, e, s, v in CUSTOMERS))
        conn.execute("INSERT INTO cr_ads.exposures VALUES " + ", ".join(f"({i}, '{e}', '{c}', {v})" for i, e, c, v in EXPOSURES))
    retailer, advertiser = Party(floe, "cr_retailer"), Party(floe, "cr_advertiser")
    for who, ns, table in [(retailer, "cr_retail", "customers"), (advertiser, "cr_ads", "exposures")]:
        floe.request("POST", "/api/v1/grants", token=admin, body={
            "grantee": {"kind": "principal", "name": who.name}, "privilege": "SELECT",
            "on": {"kind": "table", "namespace": [ns], "name": table}})

    cli(floe, retailer.credential, "cleanroom", "create", "overlap", "--description", "customers seen in campaigns")
    cli(floe, retailer.credential, "cleanroom", "add-member", "overlap", advertiser.name)
    # The advertiser cannot bring the retailer's table: it may not read it.
    r = cli(floe, advertiser.credential, "cleanroom", "configure-table", "overlap", "theirs", "cr_retail.customers",
            "--identifier", "customer_id", "--join-key", "email", "--min-identifiers", "2", check=False)
    assert r.returncode != 0 and "may not read table" in r.stderr, r
    cli(floe, retailer.credential, "cleanroom", "configure-table", "overlap", "customers", "cr_retail.customers",
        "--identifier", "customer_id", "--join-key", "email", "--dimension", "segment", "--column", "ltv",
        "--min-identifiers", str(MIN_CUSTOMERS))
    cli(floe, advertiser.credential, "cleanroom", "configure-table", "overlap", "exposures", "cr_ads.exposures",
        "--identifier", "user_id", "--join-key", "email", "--dimension", "campaign", "--column", "spend",
        "--min-identifiers", str(MIN_USERS))
    return retailer, advertiser


def in_room(floe, party: Party, sql: str):
    with connect(floe, party.name, party.token) as conn:
        conn.execute("SET floe.collaboration = 'overlap'")
        cur = conn.execute(sql)
        return cur.fetchall(), [d.name for d in cur.description]


def test_show_and_list(floe, room) -> None:
    retailer, advertiser = room
    shown = json.loads(cli(floe, advertiser.credential, "cleanroom", "show", "overlap", "--json").stdout)
    assert [m["principal"] for m in shown["members"]] == [retailer.name, advertiser.name]
    assert [(t["name"], t["owner"], t["rule"]["min_identifiers"]) for t in shown["tables"]] == [
        ("customers", retailer.name, MIN_CUSTOMERS), ("exposures", advertiser.name, MIN_USERS)]
    listed = cli(floe, retailer.credential, "cleanroom", "list").stdout
    assert "overlap" in listed and "customers seen in campaigns" in listed


def test_overlap_equals_the_plain_sql_reference_minus_suppressed_groups(floe, room) -> None:
    retailer, advertiser = room
    admin = floe.fetch_token()
    with connect(floe, "admin", admin) as conn:
        ref = conn.execute(
            "SELECT c.segment, e.campaign, count(DISTINCT c.customer_id), count(DISTINCT e.user_id) "
            "FROM cr_retail.customers c JOIN cr_ads.exposures e ON c.email = e.email "
            "GROUP BY c.segment, e.campaign ORDER BY 1, 2").fetchall()
    kept = [(s, c, n) for s, c, n, users in ref if n >= MIN_CUSTOMERS and users >= MIN_USERS]
    suppressed = [(s, c) for s, c, n, users in ref if not (n >= MIN_CUSTOMERS and users >= MIN_USERS)]
    assert suppressed == [("bronze", "spring")]  # the data is made so: 3 bronze customers saw spring
    assert len(kept) == 4

    for party in (advertiser, retailer):
        rows, cols = in_room(floe, party, OVERLAP)
        assert cols == ["segment", "campaign", "customers"]  # no threshold column
        assert [tuple(r) for r in rows] == kept

    # Sums and averages of the configured columns, with a dimension filter.
    rows, _ = in_room(floe, advertiser, "SELECT e.campaign, round(avg(c.ltv), 2), sum(e.spend) FROM customers c "
                                        "JOIN exposures e ON c.email = e.email WHERE c.segment = 'gold' GROUP BY e.campaign ORDER BY 1")
    gold = {i for i, _, s, _ in CUSTOMERS if s == "gold"}
    spring = [(i, e) for i, e, c, _ in EXPOSURES if c == "spring"]
    joined = [(cid, ltv) for cid, em, s, ltv in CUSTOMERS if cid in gold for _, e2 in spring if e2 == em]
    assert rows == [("spring", round(sum(v for _, v in joined) / len(joined), 2), 1.5 * len(joined))]


ADVERSARIAL = [
    ("SELECT * FROM customers", "aggregate outputs"),
    ("SELECT customer_id FROM customers", "aggregate outputs"),
    ("SELECT email, count(*) FROM customers GROUP BY email", "group by dimensions"),
    ("SELECT count(*) FROM customers c JOIN exposures e ON c.segment = e.campaign", "joins on allowed join keys"),
    ("SELECT count(*) FROM customers c LEFT JOIN exposures e ON c.email = e.email", "joins on allowed join keys"),
    ("SELECT count(*) FROM (SELECT * FROM customers) s", "aggregation queries only"),
    ("SELECT count(*) FROM customers WHERE segment IN (SELECT campaign FROM exposures)", "aggregation queries only"),
    ("WITH x AS (SELECT * FROM customers) SELECT count(*) FROM x", "aggregation queries only"),
    ("SELECT segment, count(*), row_number() OVER () FROM customers GROUP BY segment", "aggregation queries only"),
    ("SELECT count(*) FROM customers UNION SELECT count(*) FROM exposures", "aggregation queries only"),
    ("SELECT segment, count(*) FROM customers GROUP BY segment ORDER BY customer_id LIMIT 1", "aggregate outputs"),
    ("SELECT segment, count(*) FROM customers GROUP BY segment ORDER BY 2 LIMIT 1", "ordering"),
    ("SELECT count(*) FROM customers AT (VERSION => 1)", "configured tables only"),
    ("SELECT count(*) FROM cr_retail.customers", "configured tables only"),
    ("SELECT count(*) FROM orders", "configured tables only"),
    ("SELECT count(*) FROM read_parquet('/etc/passwd')", "configured tables only"),
    ("SELECT max(customer_id) FROM customers", "function allowlist"),
    ("SELECT sum(CASE WHEN customer_id = 7 THEN ltv END) FROM customers", "function allowlist"),
    ("SELECT count(*) FROM customers WHERE email = 'u7@example.com'", "filter dimensions with literals"),
    ("SELECT count(*) FROM customers WHERE CAST(segment AS INTEGER) = 1", "filter dimensions with literals"),
    ("DELETE FROM customers", "aggregation queries only"),
    ("DROP TABLE customers", "aggregation queries only"),
]


@pytest.mark.parametrize("sql,rule", ADVERSARIAL, ids=[a[0][:60] for a in ADVERSARIAL])
def test_adversarial_queries_are_refused(floe, room, sql, rule) -> None:
    _, advertiser = room
    with pytest.raises(psycopg.errors.InsufficientPrivilege) as e:
        in_room(floe, advertiser, sql)
    msg = str(e.value)
    assert f"clean room rule ({rule})" in msg, msg
    assert "u7@example.com" not in msg and "@example.com" not in msg


def test_errors_while_running_quote_no_data(floe, room) -> None:
    """A comparison that fails while reading (a segment is no number) is
    withheld: DuckDB's message would quote the segment values."""
    _, advertiser = room
    with pytest.raises(psycopg.Error) as e:
        in_room(floe, advertiser, "SELECT count(*) FROM customers WHERE segment = 5")
    msg = str(e.value)
    assert "details withheld" in msg, msg
    for seg in ("gold", "silver", "bronze"):
        assert seg not in msg


def test_outside_the_collaboration_neither_reads_the_other(floe, room) -> None:
    retailer, advertiser = room
    for party, other in ((advertiser, "cr_retail.customers"), (retailer, "cr_ads.exposures")):
        with connect(floe, party.name, party.token) as conn:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(f"SELECT count(*) FROM {other}")
            # Leaving the collaboration (RESET) takes its rights away too.
            conn.execute("SET floe.collaboration = 'overlap'")
            conn.execute("RESET floe.collaboration")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(f"SELECT count(*) FROM {other}")
    # A principal who is not a member cannot enter it.
    outsider = Party(floe, "cr_outsider")
    with connect(floe, outsider.name, outsider.token) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as e:
            conn.execute("SET floe.collaboration = 'overlap'")
        assert "not a member" in str(e.value)
    r = cli(floe, outsider.credential, "cleanroom", "log", "overlap", check=False)
    assert r.returncode != 0 and "not a member" in r.stderr


def test_query_log_is_visible_to_both_members(floe, room) -> None:
    retailer, advertiser = room
    rows, _ = in_room(floe, advertiser, OVERLAP)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        in_room(floe, advertiser, "SELECT customer_id FROM customers")
    for party in (retailer, advertiser):
        log = json.loads(cli(floe, party.credential, "cleanroom", "log", "overlap", "--json", "--limit", "1000").stdout)["queries"]
        mine = [q for q in log if q["member"] == advertiser.name]
        ok = next(q for q in mine if q["sql"] == OVERLAP and q["outcome"] == "success")
        assert ok["rows"] == len(rows) and ok["suppressed"] == 1
        denied = next(q for q in mine if q["sql"] == "SELECT customer_id FROM customers")
        assert denied["outcome"] == "denied" and denied["error"].startswith("42501 clean room rule")
        assert any(q["member"] == retailer.name for q in log)  # the retailer's own queries too
    text = cli(floe, retailer.credential, "cleanroom", "log", "overlap").stdout
    assert "SUPPRESSED" in text and advertiser.name in text


DP_QUERY = ("SELECT e.campaign, count(*) AS n, sum(e.spend) AS s "
            "FROM exposures e GROUP BY e.campaign ORDER BY e.campaign")
# The overlap join fans out under DP: an e-mail of the exposures belongs to
# several users (1000 + row), so a customer would count once per user.
DP_FANOUT = ("SELECT e.campaign, count(*) AS n, sum(e.spend) AS s "
             "FROM customers c JOIN exposures e ON c.email = e.email GROUP BY e.campaign ORDER BY e.campaign")


def test_differential_privacy_and_budget(floe, room) -> None:
    """A second collaboration over the same tables with differential
    privacy (Laplace, epsilon 2 per query, budget 5 a day). The overlap
    join is refused under DP (an e-mail of the exposures belongs to several
    users: a customer would count once per user, past its bound) without a
    charge. The query over the exposures has 3 noisy values per row (the
    identifier count, COUNT, SUM), so each gets epsilon 2/3: COUNT's noise
    is Laplace(b = 1.5), SUM's (spend clamped to [0, 2], one row per
    identifier) Laplace(b = 3). The tolerance is 10 b (P(|noise| > 10 b) =
    e^-10 per value): 15 for counts, 30 for sums. Two queries charge 2
    each; the third would overspend (1 left) and is refused with 42501;
    `floe cleanroom budget` shows the remainder."""
    retailer, advertiser = room
    admin = floe.fetch_token()
    with connect(floe, "admin", admin) as conn:
        exact = {r[0]: (r[1], r[2]) for r in conn.execute(
            "SELECT e.campaign, count(*), sum(e.spend) FROM cr_ads.exposures e GROUP BY e.campaign").fetchall()}
    cli(floe, retailer.credential, "cleanroom", "create", "dp_overlap")
    cli(floe, retailer.credential, "cleanroom", "add-member", "dp_overlap", advertiser.name)
    cli(floe, retailer.credential, "cleanroom", "configure-table", "dp_overlap", "customers", "cr_retail.customers",
        "--identifier", "customer_id", "--join-key", "email", "--dimension", "segment", "--min-identifiers", str(MIN_CUSTOMERS),
        "--max-contributions", "1")
    cli(floe, advertiser.credential, "cleanroom", "configure-table", "dp_overlap", "exposures", "cr_ads.exposures",
        "--identifier", "user_id", "--join-key", "email", "--dimension", "campaign", "--column", "spend",
        "--min-identifiers", str(MIN_USERS), "--max-contributions", "1", "--range", "spend=0:2")
    cli(floe, retailer.credential, "cleanroom", "privacy", "dp_overlap", "--mechanism", "laplace", "--epsilon", "2")
    with connect(floe, advertiser.name, advertiser.token) as conn:
        conn.execute("SET floe.collaboration = 'dp_overlap'")
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as e:
            conn.execute(DP_QUERY)
        assert "no privacy budget" in str(e.value)
    cli(floe, retailer.credential, "cleanroom", "budget", "dp_overlap", "--set", "5", "--period", "24h")

    def remaining() -> float:
        return json.loads(cli(floe, advertiser.credential, "cleanroom", "budget", "dp_overlap", "--json").stdout)["remaining"]

    assert remaining() == 5
    with connect(floe, advertiser.name, advertiser.token) as conn:
        conn.execute("SET floe.collaboration = 'dp_overlap'")
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as e:
            conn.execute(DP_FANOUT)
        assert "join key email of configured table exposures is shared by several identifiers" in str(e.value), str(e.value)
        assert remaining() == 5
        for i in range(2):
            rows = conn.execute(DP_QUERY).fetchall()
            assert [r[0] for r in rows] == sorted(exact), rows
            for campaign, n, s in rows:
                n0, s0 = exact[campaign]
                assert abs(n - n0) <= 15 and abs(s - s0) <= 30, (campaign, n, s, n0, s0)
                assert s != s0  # noisy: exactly equal has probability 0
            assert remaining() == 5 - 2 * (i + 1)
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as e:
            conn.execute(DP_QUERY)
        assert "privacy budget" in str(e.value) and "1 of 5 remains" in str(e.value), str(e.value)
    assert remaining() == 1
    text = cli(floe, retailer.credential, "cleanroom", "budget", "dp_overlap").stdout
    assert "epsilon 1 remaining of 5 per 24h0m0s" in text, text
    log = json.loads(cli(floe, retailer.credential, "cleanroom", "log", "dp_overlap", "--json").stdout)["queries"]
    assert log[0]["outcome"] == "denied" and log[0]["budget_remaining"] == 1
    assert [q["epsilon"] for q in log if q["outcome"] == "success"] == [2, 2]


def new_room(floe, retailer: Party, advertiser: Party, name: str, rule: str, customers: list[str], exposures: list[str]) -> None:
    """A collaboration over the same two tables, each configured by its
    owner under rule with the given extra flags."""
    cli(floe, retailer.credential, "cleanroom", "create", name)
    cli(floe, retailer.credential, "cleanroom", "add-member", name, advertiser.name)
    cli(floe, retailer.credential, "cleanroom", "configure-table", name, "customers", "cr_retail.customers",
        "--analysis-rule", rule, "--join-key", "email", *customers)
    cli(floe, advertiser.credential, "cleanroom", "configure-table", name, "exposures", "cr_ads.exposures",
        "--analysis-rule", rule, "--join-key", "email", *exposures)


def run_in(floe, party: Party, room_name: str, sql: str):
    with connect(floe, party.name, party.token) as conn:
        conn.execute(f"SET floe.collaboration = '{room_name}'")
        return conn.execute(sql).fetchall()


LIST_QUERY = ("SELECT DISTINCT c.segment FROM customers c JOIN exposures e ON c.email = e.email "
              "WHERE e.campaign = 'spring' ORDER BY c.segment")


def test_list_rule_overlap_equals_the_plain_sql_reference(floe, room) -> None:
    """The list rule: the advertiser lists the retailer's segments of the
    customers its spring campaign reached; the result is the plain-SQL
    reference (no threshold: the 3 bronze customers are listed too), and
    selecting an identifier or a join key is refused with 42501."""
    retailer, advertiser = room
    new_room(floe, retailer, advertiser, "cr_lists", "list", ["--column", "segment", "--identifier", "customer_id"],
             ["--column", "campaign", "--identifier", "user_id"])
    with connect(floe, "admin", floe.fetch_token()) as conn:
        ref = conn.execute("SELECT DISTINCT c.segment FROM cr_retail.customers c JOIN cr_ads.exposures e ON c.email = e.email "
                           "WHERE e.campaign = 'spring' ORDER BY c.segment").fetchall()
    assert ref == [("bronze",), ("gold",), ("silver",)]
    assert run_in(floe, advertiser, "cr_lists", LIST_QUERY) == ref
    for sql in ("SELECT c.customer_id FROM customers c JOIN exposures e ON c.email = e.email",
                "SELECT e.email FROM customers c JOIN exposures e ON c.email = e.email",
                "SELECT segment FROM customers",
                "SELECT count(*) FROM customers c JOIN exposures e ON c.email = e.email"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as e:
            run_in(floe, advertiser, "cr_lists", sql)
        assert "clean room rule" in str(e.value) and "@example.com" not in str(e.value)


TEMPLATE_SQL = ("SELECT e.campaign, count(DISTINCT c.customer_id) AS customers FROM customers c "
                "JOIN exposures e ON c.email = e.email WHERE c.segment = $segment GROUP BY e.campaign ORDER BY e.campaign")


def test_custom_rule_templates(floe, room) -> None:
    """The custom rule: the retailer adds a parameterised template for the
    advertiser (`floe cleanroom template add`); it runs once the advertiser
    approved it, and its result for segment 'silver' equals the plain-SQL
    reference. A template the retailer did not approve, a member the
    template does not allow, and raw SQL on a custom-rule table are
    refused with 42501."""
    retailer, advertiser = room
    new_room(floe, retailer, advertiser, "cr_custom", "custom", ["--column", "segment", "--identifier", "customer_id"],
             ["--column", "campaign", "--identifier", "user_id"])
    cli(floe, retailer.credential, "cleanroom", "template", "add", "cr_custom", "reach_by_segment", "--allow", advertiser.name,
        "--param", "segment:varchar", "--sql", TEMPLATE_SQL)
    run = "EXECUTE TEMPLATE reach_by_segment (segment => 'silver')"
    with pytest.raises(psycopg.errors.InsufficientPrivilege) as e:
        run_in(floe, advertiser, "cr_custom", run)
    assert "not approved by" in str(e.value)
    cli(floe, advertiser.credential, "cleanroom", "template", "approve", "cr_custom", "reach_by_segment")
    listed = json.loads(cli(floe, retailer.credential, "cleanroom", "template", "list", "cr_custom", "--json").stdout)["templates"]
    assert [(t["name"], [a["member"] for a in t["approvals"]]) for t in listed] == [("reach_by_segment", [retailer.name, advertiser.name])]

    with connect(floe, "admin", floe.fetch_token()) as conn:
        ref = conn.execute("SELECT e.campaign, count(DISTINCT c.customer_id) FROM cr_retail.customers c JOIN cr_ads.exposures e "
                           "ON c.email = e.email WHERE c.segment = 'silver' GROUP BY e.campaign ORDER BY e.campaign").fetchall()
    assert len(ref) == 2
    assert run_in(floe, advertiser, "cr_custom", run) == ref
    # A value that looks like SQL is one string literal: nothing matches.
    assert run_in(floe, advertiser, "cr_custom", "EXECUTE TEMPLATE reach_by_segment (segment => 'silver'' OR ''1''=''1')") == []

    # The advertiser's own template, not approved by the retailer.
    cli(floe, advertiser.credential, "cleanroom", "template", "add", "cr_custom", "all_segments", "--allow", advertiser.name,
        "--sql", "SELECT c.segment, c.customer_id FROM customers c JOIN exposures e ON c.email = e.email")
    refusals = [(advertiser, "EXECUTE TEMPLATE all_segments", "not approved by"),
                (retailer, run, "may not run it"),
                (advertiser, "SELECT c.segment FROM customers c JOIN exposures e ON c.email = e.email", "approved templates"),
                (advertiser, "SELECT count(*) FROM customers", "approved templates")]
    for party, sql, why in refusals:
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as e:
            run_in(floe, party, "cr_custom", sql)
        assert why in str(e.value), str(e.value)
    cli(floe, advertiser.credential, "cleanroom", "template", "remove", "cr_custom", "all_segments")
    r = cli(floe, advertiser.credential, "cleanroom", "template", "remove", "cr_custom", "reach_by_segment", check=False)
    assert r.returncode != 0 and "may not remove" in r.stderr


def test_show_privacy_budget_drops_after_a_dp_query(floe, room) -> None:
    """SHOW floe.privacy_budget in a collaboration with differential
    privacy shows the remaining epsilon and when it refreshes; a DP query
    charges it; outside a collaboration SHOW is an error."""
    retailer, advertiser = room
    cli(floe, retailer.credential, "cleanroom", "create", "cr_show")
    cli(floe, retailer.credential, "cleanroom", "add-member", "cr_show", advertiser.name)
    cli(floe, retailer.credential, "cleanroom", "configure-table", "cr_show", "customers", "cr_retail.customers",
        "--identifier", "customer_id", "--join-key", "email", "--dimension", "segment", "--min-identifiers", str(MIN_CUSTOMERS))
    cli(floe, advertiser.credential, "cleanroom", "configure-table", "cr_show", "exposures", "cr_ads.exposures",
        "--identifier", "user_id", "--join-key", "email", "--dimension", "campaign", "--min-identifiers", str(MIN_USERS))
    cli(floe, retailer.credential, "cleanroom", "privacy", "cr_show", "--mechanism", "laplace", "--epsilon", "0.5")
    cli(floe, retailer.credential, "cleanroom", "budget", "cr_show", "--set", "3", "--period", "24h")
    with connect(floe, advertiser.name, advertiser.token) as conn:
        with pytest.raises(psycopg.errors.UndefinedObject):
            conn.execute("SHOW floe.privacy_budget")
        conn.execute("SET floe.collaboration = 'cr_show'")

        def show() -> dict:
            cur = conn.execute("SHOW floe.privacy_budget")
            return dict(zip([d.name for d in cur.description], cur.fetchone()))

        before = show()
        assert before["mechanism"] == "laplace" and before["epsilon_per_query"] == 0.5
        assert before["remaining_epsilon"] == 3 and before["budget_epsilon"] == 3 and before["period"] == "24h0m0s"
        assert (before["refresh"] - before["period_start"]).total_seconds() == 24 * 3600
        conn.execute("SELECT e.campaign, count(*) FROM exposures e GROUP BY e.campaign").fetchall()
        after = show()
        assert after["remaining_epsilon"] == 2.5 and after["spent_epsilon"] == 0.5


def http_query(floe, party: Party, sql: str, collaboration: str | None = "overlap") -> requests.Response:
    body = {"sql": sql}
    if collaboration is not None:
        body["collaboration"] = collaboration
    return requests.post(f"{floe.uri}/api/v1/query", json=body, timeout=60,
                         headers={"Authorization": f"Bearer {party.token}", "Accept": "application/x-ndjson"})


def test_http_query_api_runs_the_overlap_in_the_collaboration(floe, room) -> None:
    """POST /api/v1/query with "collaboration" returns what the SQL endpoint
    returns (the threshold applied), and the query log records it."""
    retailer, advertiser = room
    wire, cols = in_room(floe, advertiser, OVERLAP)
    r = http_query(floe, advertiser, OVERLAP)
    assert r.status_code == 200, r.text
    rows = [json.loads(line) for line in r.text.splitlines() if line]
    assert [tuple(row[c] for c in cols) for row in rows] == [tuple(w) for w in wire]
    assert ("bronze", "spring") not in [(row["segment"], row["campaign"]) for row in rows]
    # Without the collaboration the configured names are not tables.
    r = http_query(floe, advertiser, OVERLAP, collaboration=None)
    assert r.status_code == 404 and "42P01" in r.text, r.text
    log = json.loads(cli(floe, retailer.credential, "cleanroom", "log", "overlap", "--json").stdout)
    assert any(q["sql"] == OVERLAP and q["member"] == advertiser.name and q["outcome"] == "success" for q in log["queries"]), log


HTTP_ADVERSARIAL = [a for a in ADVERSARIAL if a[1] in ("aggregate outputs", "joins on allowed join keys", "configured tables only")]


@pytest.mark.parametrize("sql,rule", HTTP_ADVERSARIAL, ids=[a[0][:60] for a in HTTP_ADVERSARIAL])
def test_http_query_api_refuses_as_the_sql_endpoint_does(floe, room, sql, rule) -> None:
    """Raw rows, joins on columns that are not join keys, other tables: the
    HTTP query API refuses each with the SQL endpoint's own message."""
    _, advertiser = room
    with pytest.raises(psycopg.errors.InsufficientPrivilege) as e:
        in_room(floe, advertiser, sql)
    r = http_query(floe, advertiser, sql)
    assert r.status_code == 403, r.text
    err = r.json()["error"]
    assert err["type"] == "ForbiddenException"
    assert err["message"] == f"{e.value.diag.message_primary} (SQLSTATE 42501)", (err, str(e.value))
    assert f"clean room rule ({rule})" in err["message"]


def test_http_query_api_outsider_cannot_enter(floe, room) -> None:
    outsider = Party(floe, "cr_http_outsider")
    r = http_query(floe, outsider, "SELECT count(*) FROM customers")
    assert r.status_code == 403 and "42501" in r.text, r.text


@pytest.fixture(scope="module")
def agency(floe, room):
    """Recipient "cr_agency" of another organisation, made by the retailer
    (granted CREATE_SHARE) and added by it to the collaboration: its bearer
    token."""
    retailer, _ = room
    admin = floe.fetch_token()
    floe.request("POST", "/api/v1/grants", token=admin, body={
        "grantee": {"kind": "principal", "name": retailer.name}, "privilege": "CREATE_SHARE", "on": {"kind": "warehouse"}})
    cred = floe.request("POST", "/api/v1/recipients", token=retailer.token,
                        body={"name": "cr_agency", "properties": {"org": "Agency Inc"}})
    cli(floe, retailer.credential, "cleanroom", "add-member", "overlap", "recipient:cr_agency")
    return cred["profile"]["bearerToken"]


def test_recipient_member_runs_the_overlap(floe, room, agency) -> None:
    """A member from another organisation (a recipient, its bearer token as
    the SQL password of user recipient:<name>, and as the HTTP bearer)
    runs the overlap analysis: the result equals the plain-SQL reference
    minus the suppressed group, as the principals' own."""
    _, advertiser = room
    wire, _ = in_room(floe, advertiser, OVERLAP)
    with psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname="floe", user="recipient:cr_agency", password=agency,
                         sslmode="disable", connect_timeout=10, autocommit=True) as conn:
        conn.execute("SET floe.collaboration = 'overlap'")
        assert conn.execute(OVERLAP).fetchall() == wire
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as e:
            conn.execute("SELECT email FROM customers")
        assert "clean room rule (aggregate outputs)" in str(e.value)
    r = requests.post(f"{floe.uri}/api/v1/query", json={"sql": OVERLAP, "collaboration": "overlap"}, timeout=60,
                      headers={"Authorization": f"Bearer {agency}"})
    assert r.status_code == 200, r.text
    assert [tuple(json.loads(line).values()) for line in r.text.splitlines() if line] == [tuple(w) for w in wire]


@pytest.mark.parametrize("sql", [
    "SELECT * FROM cr_retail.customers",
    "SELECT count(*) FROM cr_ads.exposures",
    "SELECT table_schema, table_name FROM information_schema.tables",
    "SELECT * FROM pg_catalog.pg_tables",
])
def test_recipient_member_reads_nothing_else(floe, room, agency, sql) -> None:
    """Outside the collaboration the recipient's session runs nothing: no
    raw SELECT of either table, no catalog listing (42501), over the SQL
    endpoint and over HTTP."""
    with psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname="floe", user="recipient:cr_agency", password=agency,
                         sslmode="disable", connect_timeout=10, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as e:
            conn.execute(sql)
        assert "may only query in a clean-room collaboration" in str(e.value)
    r = requests.post(f"{floe.uri}/api/v1/query", json={"sql": sql}, timeout=60, headers={"Authorization": f"Bearer {agency}"})
    assert r.status_code == 403 and "may only query in a clean-room collaboration" in r.text, r.text


def test_recipient_member_token_opens_no_catalog(floe, room, agency) -> None:
    """The REST catalog (listing, loadTable) and the management API's other
    routes refuse the recipient's token; PyIceberg cannot load a table with it."""
    for path in ["/v1/floe/namespaces", "/v1/floe/namespaces/cr_retail/tables/customers"]:
        r = requests.get(f"{floe.uri}{path}", timeout=30, headers={"Authorization": f"Bearer {agency}"})
        assert r.status_code in (401, 403), (path, r.status_code, r.text)
    r = requests.get(f"{floe.uri}/api/v1/grants", timeout=30, headers={"Authorization": f"Bearer {agency}"})
    assert r.status_code == 401 and "recipient token opens only" in r.text, r.text
    with pytest.raises((ForbiddenError, UnauthorizedError)):
        floe.catalog(token=agency).load_table(("cr_retail", "customers"))
    # It sees its collaboration and the query log, as any member.
    r = requests.get(f"{floe.uri}/api/v1/cleanrooms/overlap/queries", timeout=30, headers={"Authorization": f"Bearer {agency}"})
    assert r.status_code == 200 and any(q["member"] == "recipient:cr_agency" for q in r.json()["queries"]), r.text
