"""The registry of benchmark scenarios: the harness runs :data:`SCENARIOS`, in this order.

A new scenario is a module in this package exposing a :class:`benchmarks.harness.Scenario`
named ``SCENARIO``, added to the list below.
"""

from __future__ import annotations

from benchmarks.harness import Scenario
from benchmarks.scenarios import (
    decode_input,
    encode_stream,
    history_merge,
    host_growth,
    http_sse,
    langgraph_cycle,
    machine_cycle,
    payload_validation,
    replay_cycle,
    store_scale,
    strands_cycle,
    transports,
)

__all__ = ["SCENARIOS"]

SCENARIOS: list[Scenario] = [
    encode_stream.SCENARIO,
    decode_input.SCENARIO,
    payload_validation.SCENARIO,
    machine_cycle.SCENARIO,
    history_merge.SCENARIO,
    replay_cycle.SCENARIO,
    store_scale.SCENARIO,
    host_growth.SCENARIO,
    transports.SCENARIO,
    http_sse.SCENARIO,
    langgraph_cycle.SCENARIO,
    strands_cycle.SCENARIO,
]
