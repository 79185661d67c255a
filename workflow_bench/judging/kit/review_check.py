"""Harness-owned authored verify for review tasks, speaking the outcome-report protocol.

``python3 -I -B "$WORKFLOW_BENCH_REVIEW_CHECK"`` (with ``verify_min_tests: 2``) checks the review
artifact at ``$WORKFLOW_BENCH_REVIEW_OUTPUT`` as two tests, one line each on the judge runner's
result channel (``wfbench_result_channel``; see judge_runner.py), then ``{"done": true}``:

- ``review.artifact_present``: a regular, non-empty file of at most 256 KiB (the contract's cap);
- ``review.artifact_is_json_object``: it parses as one JSON object.

It is what ``test -s`` used to check, judged the way every other verify is: on a nonce-bound
report, never on an exit status. Whether the findings are right is the hidden oracle's business
(the labels), not verify's. Exit status: 0 iff both passed.
"""

import json
import os
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wfbench_result_channel as results

del sys.path[0]

MAX_ARTIFACT_BYTES = 256 * 1024  # keep in sync with review/contract.py


def _read(path: str):
    """The artifact's bytes, or None (missing, not a regular file, empty, oversized, a symlink)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        data = handle.read(MAX_ARTIFACT_BYTES + 1)
    return data if 0 < len(data) <= MAX_ARTIFACT_BYTES else None


def main() -> int:
    try:
        channel = results.open_channel()
    except results.NoChannel as exc:
        print(f"review check: {exc}", file=sys.stderr)
        return 2
    data = _read(os.environ.get("WORKFLOW_BENCH_REVIEW_OUTPUT", ""))
    try:
        is_object = data is not None and isinstance(json.loads(data), dict)
    except ValueError:
        is_object = False
    checks = {"review.artifact_present": data is not None, "review.artifact_is_json_object": is_object}
    for test, passed in checks.items():
        results.emit(channel, test, "passed" if passed else "failed")
        print(f"{test} ... {'ok' if passed else 'FAIL'}", file=sys.stderr)
    results.done(channel)
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
