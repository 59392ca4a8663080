"""Run every benchmark in turn: ``make bench`` (or ``.venv/bin/python benchmarks/run_all.py``).

Pass ``--quick`` for smoke runs. Figures and their reading are in ``benchmarks/README.md``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = [
    "bench_core.py",
    "bench_executor.py",
    "bench_fs.py",
    "bench_mcp.py",
    "bench_serve.py",
    "bench_catalog.py",
    "bench_scaling.py",
    "bench_scaling_shell_http.py",
    "bench_shell.py",
    "bench_compose.py",
]


def main() -> int:
    quick = "--quick" in sys.argv[1:]
    failed = 0
    for script in SCRIPTS:
        print(f"\n=== {script} ===", flush=True)
        args = [sys.executable, str(HERE / script)]
        if script == "bench_mcp.py":
            args.append("200" if quick else "1000")
        elif quick:
            args.append("--quick")
        failed += subprocess.run(args, check=False).returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
