import json
import pytest
from ansible_collections.accelops.gpu.plugins.modules import gpu_facts
from test_gpu_facts import facts_with


def show(facts, gpus=(0, 1)):
    for i in gpus:
        g = facts["gpus"][i]
        print("GPU", i, "lost", g.get("lost"), "error", g.get("error"), "nerr", len(g.get("errors") or []),
              set(g.get("errors") or []))
        nl = g.get("nvlinks")
        print("  nvlinks", None if nl is None else [(l["index"], l["active"], l["remote_pci_bus_id"], l["remote_type"]) for l in nl])
    print("health", facts["health"]["status"], [(f["gpu"], f["code"], f["severity"]) for f in facts["health"]["findings"]])
    print("topology row0", facts.get("topology", [None])[0])
    print("sys errors", facts["errors"][:3])


@pytest.mark.parametrize("line", [
    "fail.nvmlDeviceGetNvLinkState=1+:UNKNOWN",
    "fail.nvmlDeviceGetNvLinkState=1+:TIMEOUT",
    "fail.nvmlDeviceGetNvLinkState=5:GPU_IS_LOST",
    "fail.nvmlDeviceGetNvLinkState=5+:GPU_IS_LOST",
    "fail.nvmlDeviceGetNvLinkState=5:NOT_SUPPORTED",
    "fail.nvmlDeviceGetNvLinkState=5:FUNCTION_NOT_FOUND",
    "fail.nvmlDeviceGetNvLinkState=5:NO_PERMISSION",
    "fail.nvmlDeviceGetNvLinkState=5:INVALID_ARGUMENT",
    "fail.nvmlDeviceGetNvLinkRemotePciInfo_v2=5:UNKNOWN",
    "fail.nvmlDeviceGetNvLinkRemotePciInfo_v2=5:GPU_IS_LOST",
    "fail.nvmlDeviceGetNvLinkRemotePciInfo_v2=5:NOT_SUPPORTED",
    "fail.nvmlDeviceGetNvLinkRemoteDeviceType=5:UNKNOWN",
    "fail.nvmlDeviceGetNvLinkRemoteDeviceType=5:GPU_IS_LOST",
    "fail.nvmlDeviceGetNvLinkRemoteDeviceType=1+:UNKNOWN",
    "gpu.0.nvlink.4.active=0",
    "gpu.0.nvlink.4.active=garbage",
])
def test_scen(module_result, nvml_fixture, line, capsys):
    facts = facts_with(module_result, nvml_fixture, line)
    with capsys.disabled():
        print("\n=====", line)
        show(facts)
