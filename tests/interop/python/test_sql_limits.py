"""psycopg against the SQL endpoint's limits (issue 14, items 7 and 8).

Three attacks, each refused with the server's default settings: 300 clients
that send a StartupMessage and never answer the password request do not
keep an admin out; password guessing is throttled per user and client
address (SQLSTATE 08004) without locking out other users at that address;
a runaway recursive CTE is cancelled by statement_timeout (57014).
"""

from __future__ import annotations

import socket
import struct
import time
import uuid

import psycopg
import pytest

RUNAWAY = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r) SELECT count(*) FROM r"


def connect(floe, user: str = "admin", password: str | None = None) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=floe.sql_port, dbname="floe", user=user,
                           password=password if password is not None else floe.fetch_token(),
                           sslmode="disable", connect_timeout=10)


def startup_message(user: str) -> bytes:
    body = struct.pack("!i", 3 << 16) + b"user\0" + user.encode() + b"\0database\0floe\0\0"
    return struct.pack("!i", len(body) + 4) + body


def test_stalled_logins_do_not_lock_out(floe) -> None:
    token = floe.fetch_token()
    stalled = []
    try:
        for _ in range(300):
            s = socket.create_connection(("127.0.0.1", floe.sql_port), timeout=10)
            s.sendall(startup_message("admin"))  # then never answer the password request
            stalled.append(s)
        start = time.monotonic()
        with connect(floe, password=token) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        assert time.monotonic() - start < 3, "the admin waited for the stalled logins"
    finally:
        for s in stalled:
            s.close()


def test_password_guessing_throttled(floe) -> None:
    victim = f"victim_{uuid.uuid4().hex[:8]}"
    for i in range(10):  # sql_login_failures_per_minute: 10
        with pytest.raises(psycopg.OperationalError) as e:
            connect(floe, user=victim, password=f"guess-{i}")
        assert "password authentication failed" in str(e.value), e.value  # 28P01
    with pytest.raises(psycopg.OperationalError) as e:
        connect(floe, user=victim, password="guess-again")
    assert "too many failed login attempts" in str(e.value), e.value  # 08004
    # Another user at the same address is not locked out.
    with connect(floe) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_statement_timeout(floe) -> None:
    with connect(floe) as conn:
        conn.autocommit = True
        conn.execute("SET statement_timeout = '200ms'")
        assert conn.execute("SHOW statement_timeout").fetchone() == ("200ms",)
        start = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled) as e:
            conn.execute(RUNAWAY)
        assert "statement timeout" in str(e.value)
        assert time.monotonic() - start < 5
        assert conn.execute("SELECT 1").fetchone() == (1,)
