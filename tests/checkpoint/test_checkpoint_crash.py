"""Crash safety: SIGKILL a process at random moments of its saves, then load (issue 16, item 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_sigkill_during_saves_leaves_the_old_or_the_new_checkpoint_complete(tmp_path):
    job = subprocess.run([sys.executable, str(ROOT / "tests" / "support" / "checkpoint_jobs" / "kill_saves.py"), str(tmp_path),
                          "20", "1"], capture_output=True, text=True, timeout=120, check=False,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert job.returncode == 0, job.stderr[-3000:]
    out = json.loads(job.stdout.strip().splitlines()[-1])
    assert len(out["rounds"]) == 20
    for i, (fixed, run, _) in enumerate(out["rounds"]):
        # every load saw one complete checkpoint: the initial one or one the killed saver committed
        assert fixed == 0 or fixed // 100_000 == i + 1 or fixed // 100_000 <= i
        assert run == 0 or run // 100_000 <= i + 1
    assert any(r[2] for r in out["rounds"]), "no kill hit a save in progress; the test exercised nothing"
    assert out["leftovers"] == [] and out["final"] == [1, 1]
