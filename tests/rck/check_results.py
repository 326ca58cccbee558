"""Compare an RCK run's JUnit XML reports with its known-differences file.

Usage: check_results.py KNOWN_DIFFERENCES_FILE REPORTS_DIR

The known-differences file lists one test per line as
    <TestClass>#<test name> | <reason>
(blank lines and lines starting with '#' are ignored). The check fails when a
test failed that the file does not list, when a listed test passed (take it
out: the file only shrinks), when a listed entry names no test that ran, or
when no test ran at all. Standard library only.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def test_id(case: ET.Element) -> str:
    cls = case.get("classname", "").rsplit(".", 1)[-1]
    return f"{cls}#{case.get('name', '')}"


def load_known(path: Path) -> dict[str, str]:
    known: dict[str, str] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, reason = line.partition("|")
        if not sep or not reason.strip():
            raise SystemExit(f"{path}:{n}: want '<TestClass>#<test> | <reason>', got {line!r}")
        known[name.strip()] = reason.strip()
    return known


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    known = load_known(Path(argv[1]))
    reports = sorted(Path(argv[2]).glob("TEST-*.xml"))
    if not reports:
        print(f"check_results: no JUnit reports in {argv[2]}", file=sys.stderr)
        return 1
    passed: set[str] = set()
    failed: dict[str, str] = {}
    skipped: set[str] = set()
    for report in reports:
        for case in ET.parse(report).getroot().iter("testcase"):
            tid = test_id(case)
            bad = case.find("failure")
            if bad is None:
                bad = case.find("error")
            if bad is not None:
                msg = (bad.get("message") or bad.get("type") or "").strip().splitlines()
                failed[tid] = msg[0][:300] if msg else ""
            elif case.find("skipped") is not None:
                skipped.add(tid)
            else:
                passed.add(tid)
    ok = True
    total = len(passed) + len(failed) + len(skipped)
    print(f"check_results: {total} tests: {len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped; "
          f"{len(known)} known differences", file=sys.stderr)
    if total == 0:
        print("check_results: no test ran", file=sys.stderr)
        return 1
    for tid in sorted(failed):
        if tid not in known:
            ok = False
            print(f"check_results: FAILED (not a known difference): {tid}: {failed[tid]}", file=sys.stderr)
    for tid in sorted(known):
        if tid in passed:
            ok = False
            print(f"check_results: PASSES now, remove it from {argv[1]}: {tid}", file=sys.stderr)
        elif tid not in failed and tid not in skipped:
            ok = False
            print(f"check_results: listed but did not run: {tid}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
