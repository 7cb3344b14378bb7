"""lockprobe.py - the device slot's lock state as another holder would see it, for the bridge tests.

flock(2) locks belong to an open file description, so a fresh open() of the lock file in the same
process conflicts with the bridge's hold: lock_state(path) is "held" while the bridge holds the slot
and "free" otherwise (a non-blocking try that releases at once)."""
import fcntl
import os


def lock_state(lock):
    """'held' when another open file description holds lock (a path) exclusively, else 'free'."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return "free"
    except BlockingIOError:
        return "held"
    finally:
        os.close(fd)
