"""A pytest plugin (`-p ci.pytest_times`, run from the repository's root):
a line `[time] 12.34 s ID` as each test ends, its setup, call and teardown
summed, so that a log cut off at a deadline still says how long each test
took. Under pytest-xdist the lines come from the controller, which gets
every worker's reports; pytest's `console_output_style=times` sums there
whatever reports arrived since its last line, which mixes the workers'
tests (a racecheck test of minutes printed as 880 us)."""

from __future__ import annotations

import pytest

_spent: dict[str, float] = {}


def format_line(nodeid: str, seconds: float) -> str:
    return f"[time] {seconds:.2f} s {nodeid}"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _spent[report.nodeid] = _spent.get(report.nodeid, 0.0) + report.duration
    if report.when == "teardown":
        _write(format_line(report.nodeid, _spent.pop(report.nodeid)))


_terminal = None


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    global _terminal
    if not hasattr(config, "workerinput"):  # an xdist worker's lines go nowhere
        _terminal = config.pluginmanager.get_plugin("terminalreporter")


def _write(line: str) -> None:
    if _terminal is not None:
        _terminal.ensure_newline()
        _terminal.write_line(line, flush=True)
