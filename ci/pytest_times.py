"""A pytest plugin (`-p ci.pytest_times`, run from the repository's root):
a line `[time] 12.34 s ID` as each test ends, its setup, call and teardown
summed, so that a log cut off at a deadline still says how long each test
took. Under pytest-xdist the lines come from the controller, which gets
every worker's reports; pytest's `console_output_style=times` sums there
whatever reports arrived since its last line, which mixes the workers'
tests (a racecheck test of minutes printed as 880 us)."""

from __future__ import annotations

import pytest

_spent: dict[str, float] = {}  # a test's phases so far
_terminal = None  # the controller's terminal reporter; None in an xdist worker


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    global _terminal
    if not hasattr(config, "workerinput"):  # an xdist worker's lines go nowhere
        _terminal = config.pluginmanager.get_plugin("terminalreporter")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if _terminal is None:
        return
    _spent[report.nodeid] = _spent.get(report.nodeid, 0.0) + report.duration
    if report.when == "teardown":
        _terminal.ensure_newline()
        _terminal.write_line(f"[time] {_spent.pop(report.nodeid):.2f} s {report.nodeid}", flush=True)
