"""ptytest.py - a command on a pseudo-terminal of its own, driven as a user
at a keyboard would: what it shows is read, what is typed is sent once the
text it waits for was shown, and the terminal may be resized (SIGWINCH).
For the tests of interactive sessions (interactive.t, attach_tls.t)."""

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time


def under_pty(argv, env, steps, rows=40, cols=120, secs=40):
    """Run argv (with env) on a new terminal of rows x cols. steps: (wait_for,
    send) pairs: once wait_for (bytes) was shown, send is typed (bytes, or a
    (rows, cols) resize). Returns (exit status, output, the terminal's
    lflag after the exit)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(argv[0], argv, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    out, steps, deadline = b"", list(steps), time.monotonic() + secs
    status = None
    while time.monotonic() < deadline:
        if steps and steps[0][0] in out:
            want, send = steps.pop(0)
            if isinstance(send, tuple):
                fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", send[0], send[1], 0, 0))
                os.kill(pid, signal.SIGWINCH)
            else:
                os.write(fd, send)
            continue
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            out += chunk
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(st)
            break
    lflag = None
    try:
        lflag = termios.tcgetattr(fd)[3]
    except termios.error:
        pass
    if status is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    try:
        while True:
            r, _, _ = select.select([fd], [], [], 0.1)
            if not r:
                break
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            out += chunk
    except OSError:
        pass
    os.close(fd)
    return status, out, lflag


def interrupt_after(proc, secs):
    """SIGINT to 'proc' (a Popen with pipes) after 'secs'; its stderr once
    it ended (killed after 20 s more)."""
    time.sleep(secs)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err
