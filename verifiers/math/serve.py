"""Entry point of a math worker process: ``python -m dapo_bench.verifiers.math.serve FD``.

Kept apart from ``worker.py`` (which the package imports) so that running it with ``-m``
does not re-import an already imported module. See ``worker.py`` for the protocol.
"""

import sys

from dapo_bench.verifiers.math.worker import serve

if __name__ == "__main__":
    serve(int(sys.argv[1]))
