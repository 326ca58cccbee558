"""Doc tests: every shell, SQL and Python snippet of README.md and docs/*.md runs.

Fenced code blocks whose language is sh, bash, shell or console (shell), sql
or python are extracted and run, in document order, against a `floe serve
--demo` started for each document (the built binary, $FLOE_BIN): a document's
blocks share one server, so a later block sees what an earlier one made, and
shell variables a block sets are kept for the next shell block of the same
document, as in one terminal. Other languages (yaml, json, text, ...) are not
run.

A block that cannot run here is marked with an HTML comment just before its
fence (blank lines between are fine):

    <!-- doctest: skip (needs a real AWS account) -->
    <!-- doctest: expect-error -->      the block must fail

Skipped blocks are reported as skipped with their reason (`-rs` lists them).
A failure names the block as file:line (and, for shell, the line of the
command that failed) so that whoever changed the doc can find it.

What a block sees:
- shell: bash with `set -eo pipefail`, `floe` on PATH (also as bin/floe),
  the working directory holding the server's data directory as floe-data
  and the sample files of tests/doctest/files (orders.csv),
  and FLOE (the catalog URL), FLOE_URL, FLOE_CREDENTIAL, FLOE_DATA_DIR,
  CLIENT_ID/CLIENT_SECRET and ID/SECRET (the admin's credential), PASSWORD
  (a SQL password of 12 characters or more), TOKEN (an
  admin access token), H ("Authorization: Bearer $TOKEN"), J
  ("Content-Type: application/json") in its environment; curl fails on an
  HTTP error answer (--fail-with-body). For console blocks only the lines
  starting with "$ " are run.
- sql: psql -v ON_ERROR_STOP=1, as the admin (its token as the password).
- python: this Python (the test venv: PyIceberg, pyarrow, psycopg, boto3).
In every block the documented default addresses are replaced by the test
server's: 127.0.0.1:8181 (catalog), 127.0.0.1:9100 (S3), 127.0.0.1:5433 and
port=5433 (SQL), 127.0.0.1:9090 (admin listener: metrics), and the placeholder <client_id>:<client_secret> by the
admin's credential.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LANGS = {"sh": "shell", "bash": "shell", "shell": "shell", "console": "shell", "sql": "sql", "python": "python"}
BLOCK_TIMEOUT = 60  # seconds per block

_FENCE = re.compile(r"^(\s*)```([A-Za-z0-9_+-]*)\s*$")
_MARK = re.compile(r"^\s*<!--\s*doctest:\s*(.*?)\s*-->\s*$")
_DIRECTIVE = re.compile(r"^(skip|expect-error)(?:\s*\((.+)\))?$")


@dataclass
class Block:
    file: str  # relative to the repository
    line: int  # of the opening fence
    lang: str  # shell, sql or python
    fence: str  # the language as written
    code: str
    mode: str = "run"  # run, skip or expect-error
    reason: str = ""

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def extract(path: Path) -> list[Block]:
    """The runnable blocks of one Markdown file, with their markers."""
    rel = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)
    lines = path.read_text().split("\n")
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = m.group(1), m.group(2)
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        if fence in LANGS:
            body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip() for ln in lines[i + 1:j]]
            if fence == "console":
                body = [ln[2:] for ln in body if ln.startswith("$ ")]
            b = Block(rel, i + 1, LANGS[fence], fence, "\n".join(body) + "\n")
            k = i - 1
            while k >= 0 and lines[k].strip() == "":
                k -= 1
            mark = _MARK.match(lines[k]) if k >= 0 else None
            if mark:
                d = _DIRECTIVE.match(mark.group(1))
                if not d:
                    raise ValueError(f"{rel}:{k + 1}: unknown doctest marker {mark.group(1)!r} "
                                     "(want 'skip (reason)' or 'expect-error')")
                b.mode, b.reason = d.group(1), d.group(2) or ""
                if b.mode == "skip" and not b.reason:
                    raise ValueError(f"{rel}:{k + 1}: a doctest skip needs a reason: <!-- doctest: skip (why) -->")
            out.append(b)
        i = j + 1
    return out


def all_blocks() -> list[Block]:
    return [b for p in documents() for b in extract(p)]


BLOCKS = all_blocks()


def substitute(code: str, env: dict[str, str]) -> str:
    """The block with the documented defaults replaced by the test server's."""
    host = env["FLOE"].split("://", 1)[1]
    s3 = env["DOCTEST_S3_URL"].split("://", 1)[1]
    sql_port = env["DOCTEST_SQL_PORT"]
    code = code.replace("127.0.0.1:8181", host).replace("localhost:8181", host)
    code = code.replace("127.0.0.1:9100", s3)
    code = code.replace("127.0.0.1:5433", f"127.0.0.1:{sql_port}")
    code = code.replace("127.0.0.1:9090", f"127.0.0.1:{env['DOCTEST_ADMIN_PORT']}")
    code = re.sub(r"\bport=5433\b", f"port={sql_port}", code)
    code = re.sub(r"\bport=5433,", f"port={sql_port},", code)
    code = code.replace("<client_id>:<client_secret>", env["FLOE_CREDENTIAL"])
    return code


# The shell prologue: keep the variables and functions of earlier blocks of
# the same document, save this block's at exit, and name the failing line.
_PROLOGUE = """set -eo pipefail
if [[ -f "$DOCTEST_STATE" ]]; then source "$DOCTEST_STATE"; fi
__doctest_save() {
  local rc=$?
  { declare -p $(compgen -v | grep -vxF -f "$DOCTEST_BASELINE" | grep -v '^__doctest') 2>/dev/null | grep -v '^declare -[A-Za-z]*r' || true
    local f; for f in $(compgen -A function); do [[ $f == __doctest* ]] || declare -f "$f"; done
  } > "$DOCTEST_STATE.new" 2>/dev/null && mv "$DOCTEST_STATE.new" "$DOCTEST_STATE"
  return $rc
}
trap __doctest_save EXIT
# An HTTP error answer fails the block, as a reader would notice it.
curl() {
  local a
  for a in "$@"; do
    if [[ $a == --fail || $a == --fail-with-body || ($a == -[!-]* && $a == *f*) ]]; then command curl "$@"; return; fi
  done
  command curl --fail-with-body "$@"
}
trap 'echo "doctest: command failed at {file}:$((LINENO - {offset}))" >&2; trap - ERR' ERR
"""


def run_block(b: Block, srv) -> subprocess.CompletedProcess:
    env = srv.snippet_env()
    code = substitute(b.code, env)
    if b.lang == "shell":
        prologue = _PROLOGUE.replace("{file}", b.file).replace("{offset}", str(_PROLOGUE.count("\n") - b.line))
        script = srv.dir / f"block-{b.line}.sh"
        script.write_text(prologue + code)
        cmd = ["bash", str(script)]
    elif b.lang == "sql":
        script = srv.dir / f"block-{b.line}.sql"
        script.write_text(code)
        cmd = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(script),
               f"host=127.0.0.1 port={env['DOCTEST_SQL_PORT']} user=admin dbname=floe sslmode=disable"]
        env["PGPASSWORD"] = env["TOKEN"]
    else:
        script = srv.dir / f"block-{b.line}.py"
        script.write_text(code)
        cmd = [sys.executable, str(script)]
    return subprocess.run(cmd, cwd=srv.dir, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT)


@pytest.mark.parametrize("block", BLOCKS, ids=[f"{b.where}[{b.fence}]" for b in BLOCKS])
def test_doc_block(block: Block, doc_server):
    if block.mode == "skip":
        pytest.skip(f"{block.where}: {block.reason}")
    srv = doc_server(block.file)
    res = run_block(block, srv)
    failed = res.returncode != 0
    if failed == (block.mode == "expect-error"):
        return
    what = "succeeded, but it is marked expect-error" if not failed else f"failed (exit {res.returncode})"
    pytest.fail(f"{block.where}: the {block.fence} block {what}\n"
                f"--- block ({block.where}) ---\n{block.code}"
                f"--- stdout ---\n{res.stdout[-4000:]}\n--- stderr ---\n{res.stderr[-4000:]}", pytrace=False)


def test_markers_parse():
    """Every doctest marker is well-formed and sits right before a runnable block."""
    for p in documents():
        lines = p.read_text().split("\n")
        marked = {b.line for b in extract(p) if b.mode != "run"}
        for n, ln in enumerate(lines, 1):
            if _MARK.match(ln):
                k = n  # the fence follows, after blank lines
                while k < len(lines) and lines[k].strip() == "":
                    k += 1
                assert k + 1 in marked, f"{p.relative_to(REPO)}:{n}: doctest marker not followed by a sh/sql/python block"


def test_extract(tmp_path):
    """The extractor: languages, indented blocks, console prompts, markers."""
    doc = REPO / "tests" / "doctest" / "testdata" / "sample.md"
    got = [(b.line, b.lang, b.mode, b.reason, b.code) for b in extract(doc)]
    assert got == [
        (3, "shell", "run", "", "echo one\n"),
        (8, "shell", "skip", "needs a real AWS account", "aws s3 ls\n"),
        (13, "sql", "expect-error", "", "SELECT nope;\n"),
        (19, "shell", "run", "", "echo two\necho three\n"),
        (27, "python", "run", "", "print(1)\n"),
    ], got
    bad = tmp_path / "bad.md"
    bad.write_text("<!-- doctest: maybe -->\n```sh\ntrue\n```\n")
    with pytest.raises(ValueError, match="unknown doctest marker"):
        extract(bad)
    bad.write_text("<!-- doctest: skip -->\n```sh\ntrue\n```\n")
    with pytest.raises(ValueError, match="needs a reason"):
        extract(bad)


if __name__ == "__main__":  # list the blocks: python tests/doctest/test_docs.py
    for b in BLOCKS:
        print(b.where, b.fence, b.mode, b.reason, shlex.quote(b.code.split("\n", 1)[0]))
