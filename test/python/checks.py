"""What the Python module's tests share: an ok/FAIL line per check, and the failures so far."""

failures = []


def check(cond, what):
    """Prints `what` as passed or failed; a failure is kept in `failures`."""
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)
