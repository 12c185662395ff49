"""Ctrl-C while a command runs is raised where Python can unwind it to the command: after an import that
was under way (a C extension's initialiser that meets KeyboardInterrupt aborts the process) and after a
finalizer (Python prints an exception raised in `__del__` and drops it).

Real processes, a real SIGINT, sent while the slow part runs: the program tells the test when it is inside.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

PROGRAM = """
import signal, sys, time
from recorder.interrupts import raise_at_safe_point
signal.signal(signal.SIGINT, raise_at_safe_point)
sys.path.insert(0, {folder!r})
try:
    {body}
    print("ran on", flush=True)
except KeyboardInterrupt:
    print("interrupted after the slow part", flush=True)
    sys.exit(130)
"""


def _interrupt_inside(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    program = PROGRAM.format(folder=str(tmp_path), body=body)
    p = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None
    assert p.stdout.readline().strip() == "inside", p.communicate()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    return subprocess.CompletedProcess(p.args, p.returncode, "inside\n" + out, err)


def test_ctrl_c_during_an_import_is_raised_when_the_import_has_finished(tmp_path: Path) -> None:
    (tmp_path / "slow_module.py").write_text(
        textwrap.dedent("""
        import time
        print("inside", flush=True)
        time.sleep(1.0)
        print("module finished", flush=True)
        """)
    )
    done = _interrupt_inside(tmp_path, "import slow_module; time.sleep(30)")  # the command goes on
    assert done.returncode == 130, (done.stdout, done.stderr)
    assert done.stdout.splitlines() == ["inside", "module finished", "interrupted after the slow part"], done
    assert "Traceback" not in done.stderr, done.stderr


def test_ctrl_c_during_a_finalizer_is_raised_after_it_not_dropped(tmp_path: Path) -> None:
    (tmp_path / "slow_finalizer.py").write_text(
        textwrap.dedent("""
        import time

        class Slow:
            def __del__(self):
                print("inside", flush=True)
                time.sleep(1.0)
                print("finalizer finished", flush=True)

        def drop():
            Slow()
            time.sleep(30)  # a command that goes on: it must be stopped, not run to its end
        """)
    )
    done = _interrupt_inside(tmp_path, "import slow_finalizer; slow_finalizer.drop()")
    assert done.returncode == 130, (done.stdout, done.stderr)
    assert done.stdout.splitlines() == ["inside", "finalizer finished", "interrupted after the slow part"], done
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr, done.stderr
