"""What a pinned correction keeps (app/services/corrections.py's doctests); a branch read on through the runner
keeping one: tests/integration/test_branches.py."""

import doctest

from app.services import corrections


def test_keep_puts_back_only_the_lines_the_memory_no_longer_holds() -> None:
    result = doctest.testmod(corrections)
    assert result.attempted > 0 and result.failed == 0
