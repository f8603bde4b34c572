"""Running ``mpiexec`` jobs from tests: a time limit that leaves no process behind.

``subprocess.run(timeout=...)`` kills only ``mpiexec`` itself; its proxies and
ranks run in sessions of their own (Hydra calls setsid), so a hung job can
outlive the test. ``run_job`` starts the launcher in a new session and, on
timeout, kills the launcher's process group and every descendant process
(found through /proc by parent id), then raises ``JobHung``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


class JobHung(AssertionError):
    """The job did not end within its time limit (it has been killed, with every process it started)."""


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Linux /proc; empty elsewhere)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc``'s process group and every process below it."""
    victims = _descendants(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def run_job(argv: list[str], timeout: float, env: dict[str, str] | None = None,
            cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """Run ``argv`` (e.g. ``["mpiexec", "-n", "4", python, script]``) and capture its output.

    Raises:
        JobHung: it ran past ``timeout`` seconds; the message holds its output so far.
    """
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc)
        out, err = proc.communicate()
        raise JobHung(f"{' '.join(argv)} did not end within {timeout} s; killed it and its processes.\n"
                      f"stdout: {out[-2000:]}\nstderr: {err[-2000:]}") from None
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


#: Open MPI refuses to start as root unless told twice (the GPU machines run every command as root)
AS_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"} if os.geteuid() == 0 else {}


def mpiexec(n: int, *args: str, timeout: float = 240, env: dict[str, str] | None = None,
            cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """``mpiexec -n n python args...`` with shardarray importable (see ``run_job``)."""
    full = {**os.environ, **AS_ROOT, "PYTHONPATH": str(ROOT), **(env or {})}
    return run_job(["mpiexec", "-n", str(n), sys.executable, *args], timeout, full, cwd)
