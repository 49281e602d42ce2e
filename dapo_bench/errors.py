"""User-facing errors.

Raise `UserError` for anything the user can fix (bad file, unknown name, malformed config).
The CLI prints its message on one line and exits with status 2, without a traceback.
Messages name the file, line and field where there is one: ``runs/x.jsonl:12: field 'gold'
missing``.
"""


class UserError(Exception):
    """An error caused by the user's input; its message is shown as is."""


class RunStopped(Exception):
    """A run stopped on purpose by a watch that fired (``--stop-on-cheat``, the exploit zoo):
    the CLI prints ``stopped: <message>`` on one line and exits with status 3; everything the
    run wrote stays."""

    exit_code = 3
