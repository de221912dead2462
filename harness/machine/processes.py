"""The processes taking the CPU right now, read from /proc as `top` reads it, so that `harness
system` names what is busy instead of only saying that something is (issue 48)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
TICKS_PER_S = os.sysconf("SC_CLK_TCK")
LEAST_SHARE = 0.05  # of one CPU: below it a process is not what makes a machine busy
COMMAND_CHARS = 60


@dataclass(frozen=True)
class Busy:
    """A process and the share of one CPU it took over the window watched."""

    pid: int
    command: str
    share: float

    def describe(self) -> str:
        return f"{self.command} (pid {self.pid}, {100 * self.share:.0f}% of a CPU)"


def cpu_ticks(proc: Path = PROC) -> dict[int, tuple[str, int]]:
    """pid -> (its command, user + system clock ticks so far); a process that ends while read is skipped."""
    found: dict[int, tuple[str, int]] = {}
    for entry in proc.glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        comm, _, rest = stat.partition(" (")[2].rpartition(") ")  # a command may hold spaces and parentheses
        fields = rest.split()
        if len(fields) < 13:
            continue
        command = cmdline or f"[{comm}]"
        found[int(entry.name)] = (command[:COMMAND_CHARS] + ("..." if len(command) > COMMAND_CHARS else ""),
                                  int(fields[11]) + int(fields[12]))  # utime, stime: fields 14 and 15 of stat
    return found


def busiest(before: dict[int, tuple[str, int]], after: dict[int, tuple[str, int]], seconds: float,
            top: int = 5, own: int | None = None) -> list[Busy]:
    """The `top` processes by CPU taken between two readings `seconds` apart, this one (`own`) left out."""
    own = os.getpid() if own is None else own
    busy = [Busy(pid, command, (ticks - before[pid][1]) / TICKS_PER_S / seconds)
            for pid, (command, ticks) in after.items() if pid in before and pid != own]
    return sorted((b for b in busy if b.share >= LEAST_SHARE), key=lambda b: -b.share)[:top]
