"""Runs the dbt project of tests/interop/dbt/crm against a Floe server.

Shared by the PyIceberg suite (test_dbt.py) and the Spark suite
(test_spark_dbt.py). dbt-postgres comes from its own virtualenv (.venv-dbt,
made by `make interop`/`make interop-spark` from tests/interop/dbt/
requirements.txt); $FLOE_DBT names its `dbt` executable. A missing dbt fails
the test (it is not skipped).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

PROJECT = Path(__file__).resolve().parent / "dbt" / "crm"
REPO = Path(__file__).resolve().parents[2]


def dbt_executable() -> Path:
    """The dbt executable: $FLOE_DBT, else .venv-dbt/bin/dbt in the repository."""
    exe = Path(os.environ.get("FLOE_DBT", "").strip() or REPO / ".venv-dbt" / "bin" / "dbt")
    if not exe.is_file():
        raise AssertionError(f"dbt not found at {exe}: run `make .venv-dbt/.requirements-installed` or set FLOE_DBT")
    return exe


def copy_project(dest: Path) -> Path:
    """A private copy of the project (dbt writes target/ and logs/ into it)."""
    out = dest / "crm"
    shutil.copytree(PROJECT, out)
    return out


def run(project: Path, sql_port: int, password: str, schema: str, *args: str,
        warehouse: str = "floe", user: str = "admin") -> dict:
    """Runs `dbt <args>` (default build) and returns target/run_results.json.

    It raises AssertionError with dbt's output when dbt fails."""
    env = dict(os.environ)
    env.update({"FLOE_SQL_HOST": "127.0.0.1", "FLOE_SQL_PORT": str(sql_port), "FLOE_SQL_USER": user,
                "FLOE_SQL_PASSWORD": password, "FLOE_WAREHOUSE": warehouse, "FLOE_DBT_SCHEMA": schema,
                "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DO_NOT_TRACK": "1"})
    cmd = [str(dbt_executable()), *(args or ("build",)), "--profiles-dir", str(project), "--project-dir", str(project)]
    p = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd[1:2])} failed ({p.returncode}):\n{p.stdout[-6000:]}\n{p.stderr[-2000:]}")
    return json.loads((project / "target" / "run_results.json").read_text())


def statuses(results: dict) -> dict[str, str]:
    """Node name -> status of a run_results.json."""
    return {r["unique_id"]: r["status"] for r in results["results"]}
