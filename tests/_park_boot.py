"""``python tests/_park_boot.py -m MODULE ...``: :mod:`_park`'s prelude as a script, for a child
that a launcher starts (torchrun runs ``python -u SCRIPT ARGS``); see ``_park.ParkedByFifo``."""

from _park import BOOT

exec(compile(BOOT, __file__, "exec"), {"__name__": "__main__"})  # noqa: S102 (our own prelude)
