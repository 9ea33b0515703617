"""The browser tests' checks: each prints `ok` or `FAIL` and its message as it goes, and the test
exits 1 at the end if any failed (so that one run reports every failure, not only the first)."""

failures = []


def check(condition, message):
    print(("ok   " if condition else "FAIL ") + message, flush=True)
    if not condition:
        failures.append(message)


def exit_code():
    """The test's exit code, after a line that says how it went."""
    if failures:
        print(f"{len(failures)} checks failed")
        return 1
    print("all checks passed")
    return 0
