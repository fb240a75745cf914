"""The kit against agui-core's own host, over every transport it serves: every check passes."""

from __future__ import annotations

import pytest

from agui_core.conformance import CATALOGUE, Options, Status, run_conformance, transport_for
from tests.conformance.servers import TRANSPORTS, make_host, serving

pytestmark = pytest.mark.anyio

# Short bounds keep a run of the kit to a few seconds; the form expires in two. The kit may
# approve: the test agent's tool only counts (tests/conformance/test_no_surprise.py: without).
OPTIONS = Options(expiry_wait=5.0, timeout=10.0, drain=0.02, approve=True)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_every_check_passes_against_agui_core(transport: str) -> None:
    async with serving(make_host(), transport) as url:
        probe = transport_for(url)
        try:
            report = await run_conformance(probe, OPTIONS)
        finally:
            await probe.aclose()
    statuses = {r.spec.id: r.status for r in report.results}
    assert [r.spec.id for r in report.results] == [spec.id for spec in CATALOGUE]
    failed = {r.spec.id: r.detail for r in report.failed}
    assert not failed, report.table()
    # The agent raises what every check needs: none is left out.
    assert set(statuses.values()) == {Status.PASS}, report.table()
    assert report.ok and report.to_json()["counts"] == {"pass": len(CATALOGUE), "fail": 0, "n/a": 0}
    assert report.server["capabilities"]["humanInTheLoop"]["interrupts"] is True
