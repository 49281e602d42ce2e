"""Resource limits of one program run (`Limits`), with the defaults the README documents."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from dapo_bench.errors import UserError


@dataclass(frozen=True)
class Limits:
    """Per-run limits. CPU time is the main limit; wall time is a backstop against sleeping.

    time_s:    CPU seconds per test (an assert-based program gets time_s per check).
    wall_s:    wall seconds per test; default ``2 * time_s + 1`` (the machine may be loaded).
    memory_mb: address space of the program (RLIMIT_AS), MiB.
    output_mb: stdout per test, MiB; more is ``output_limit``.
    file_mb:   largest file the program may write (RLIMIT_FSIZE), MiB.
    nproc:     processes and threads of the sandbox uid (RLIMIT_NPROC).
    nofile:    open file descriptors.
    float_tol: when set, numeric stdout tokens within this absolute or relative tolerance match.
    fail_fast: after the first test that crashes or runs out of a limit, skip the rest.
    """

    time_s: float = 4.0
    wall_s: float | None = None
    memory_mb: int = 2048
    output_mb: float = 16.0
    file_mb: float = 16.0
    nproc: int = 64
    nofile: int = 64
    float_tol: float | None = None
    fail_fast: bool = True

    def __post_init__(self):
        if self.time_s <= 0 or (self.wall_s is not None and self.wall_s <= 0):
            raise UserError(f"limits: time_s and wall_s must be positive, got {self}")
        if self.memory_mb < 64 or self.nproc < 1 or self.nofile < 16:
            raise UserError(f"limits: memory_mb >= 64, nproc >= 1, nofile >= 16 ({self})")

    @property
    def wall(self) -> float:
        return self.wall_s if self.wall_s is not None else 2 * self.time_s + 1

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Limits:
        known = {f.name for f in fields(cls)}
        bad = sorted(set(d) - known)
        if bad:
            raise UserError(f"limits: unknown field(s) {bad} (known: {sorted(known)})")
        return cls(**d)
