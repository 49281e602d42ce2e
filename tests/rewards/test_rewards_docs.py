"""Every python block of docs/rewards.md runs as shown (the TRL training block: in
test_rewards_trl.py, which also checks what the trainer logged)."""

import pytest
from _snippets import python_blocks

BLOCKS = python_blocks("rewards.md")


def test_the_page_has_its_blocks():
    assert len(BLOCKS) == 3 and sum("GRPOTrainer(" in b for b in BLOCKS) == 1


@pytest.mark.parametrize("k", [k for k, b in enumerate(BLOCKS) if "GRPOTrainer(" not in b])
def test_block_runs(k):
    exec(compile(BLOCKS[k], f"docs/rewards.md block {k}", "exec"), {})  # noqa: S102
