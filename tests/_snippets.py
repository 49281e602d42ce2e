"""The ```python blocks of a docs page, so that tests run what the page shows."""

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def python_blocks(page: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", (DOCS / page).read_text(),
                      re.DOTALL | re.MULTILINE)
