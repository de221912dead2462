"""The untimed calls before a block: a process's first call, and the re-warming of a fast call
after the others went quiet. What a user's own process would have run before the calls timed."""

from __future__ import annotations

from harness.bench.budget import SLOW_CALL_S

# A process's first call within this of its block's calls: the point's other processes time theirs
# as a sample. A first run times every point in PROCESSES processes, and their warm-ups were its
# largest cost beside the calls themselves.
FIRST_CALL_SAME = 1.10
REWARM_S = 0.05  # seconds of untimed calls before each block of a fast call
REWARM_FAN_OUT_S = 0.15  # ...of a fast call that fans out over a process pool
# A baseline's call shorter than this gets an untimed call before each block too (it enters every
# ratio of its analysis): ARPACK's svds of 4 deltas, 150 ms a call, measured 15% faster cold than
# back to back. Other calls from SLOW_CALL_S on: their own length makes up for a cold start.
REWARM_BASELINE_BELOW_S = 0.2


def warmups_before(warmed: bool, first_call: float | None, spec_warmups: int, called: bool) -> int:
    """Untimed calls before a process's block. A process's first call is untimed where it is
    slower (its thread pools start, its allocator grows: top-3 torch's first full SVD of a 3072 x
    768 delta took 201 ms, its later ones 105-113 ms); once the point's first process has shown its
    first call (`first_call`, over its block's mean) within FIRST_CALL_SAME, the others time theirs."""
    if warmed or (first_call is not None and first_call <= FIRST_CALL_SAME):
        return 0
    return max(spec_warmups, 0 if called else 1)


def rewarm(call_s: float, baseline: bool, fans_out: bool) -> float:
    """Seconds of untimed calls that start each block of a fast call: after waiting for the others
    to go quiet, a process is cold (its pools asleep, its processes on one core): a process pool's
    first calls of 256 x 256 svdvals took 8-10 ms, 5 ms once a dozen had run back to back (so a
    fan-out strategy gets longer); a slow call gets none, but a baseline's under
    REWARM_BASELINE_BELOW_S."""
    if call_s >= (REWARM_BASELINE_BELOW_S if baseline else SLOW_CALL_S):
        return 0.0
    return REWARM_FAN_OUT_S if fans_out else REWARM_S
