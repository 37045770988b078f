"""Untrusted programs: bounded in time and kept output, and nothing they start survives them."""
import contextlib
import sys
import threading
import time
import unittest

from lab.core import judging, process


class RunTest(unittest.TestCase):
    def test_a_flood_is_capped_but_counted(self):
        r = process.run([sys.executable, "-c", "import sys; sys.stdout.write('x' * 3_000_000)"], timeout=30, keep_bytes=1000)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout.total, 3_000_000)
        self.assertTrue(r.stdout.truncated)
        self.assertLess(len(r.stdout.text()), 1200)

    def test_a_hang_is_stopped_with_its_children(self):
        code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
        start = time.monotonic()
        r = process.run([sys.executable, "-c", code], timeout=1, keep_bytes=1000)
        self.assertTrue(r.timed_out)
        self.assertLess(time.monotonic() - start, 10)

    def test_a_judge_does_not_wait_for_builds_it_will_not_use(self):
        # A later configuration's build, started ahead in another thread (judging._Prebuilds), is
        # not waited for once the judge is done (a compile error, a hang) or interrupted (Ctrl-C
        # reaches the main thread alone); another thread's programs are left alone.
        for interrupted in (False, True):
            started, prebuilds = threading.Event(), judging._Prebuilds(None, None, [])
            def slow_build():
                started.set()
                process.run([sys.executable, "-c", "import time; time.sleep(60)"], timeout=90, keep_bytes=1000)
            elsewhere = threading.Thread(target=process.run, args=([sys.executable, "-c", "import time; time.sleep(3)"],),
                                         kwargs=dict(timeout=30, keep_bytes=1000))
            begin = time.monotonic()
            with self.assertRaises(KeyboardInterrupt) if interrupted else contextlib.nullcontext(), prebuilds:
                elsewhere.start()
                prebuilds._submit(slow_build)
                prebuilds._submit(slow_build)   # waiting its turn: never started
                started.wait(10)
                if interrupted:
                    raise KeyboardInterrupt
            self.assertLess(time.monotonic() - begin, 2.5)
            self.assertTrue(elsewhere.is_alive(), "a program another thread runs was stopped too")
            elsewhere.join()

    def test_a_signal_is_named(self):
        r = process.run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"],
                    timeout=30, keep_bytes=1000)
        self.assertEqual(r.signal_name, "SIGSEGV")


if __name__ == "__main__":
    unittest.main()
