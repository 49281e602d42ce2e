"""Where the shared benchmark files are: ``../shared/data`` beside the checkout (as CI lays it),
or ``$DAPO_BENCH_TEST_DATA``. Tests that need them skip with a reason when absent."""

import os
from pathlib import Path

DATA = Path(
    os.environ.get("DAPO_BENCH_TEST_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)
