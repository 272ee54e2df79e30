"""ABI tests of the fake libnvidia-ml.so.1's event API (XID errors from the fixture), driven through the real pynvml."""

import threading
import time

import pynvml
import pytest

XID = pynvml.nvmlEventTypeXidCriticalError


@pytest.fixture
def event_set(nvml):
    """An event set with every GPU of the fixture registered for XIDs."""

    def start(name, *extra_lines):
        path = nvml(name, *extra_lines)
        events = pynvml.nvmlEventSetCreate()
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            assert pynvml.nvmlDeviceGetSupportedEventTypes(handle) & XID
            pynvml.nvmlDeviceRegisterEvents(handle, XID, events)
        return path, events

    return start


def wait(events, timeout_ms=0):
    data = pynvml.nvmlEventSetWait(events, timeout_ms)
    return pynvml.nvmlDeviceGetIndex(data.device), data.eventType, data.eventData


def test_only_xids_after_registration_are_delivered_once_in_order(event_set):
    path, events = event_set("dgx-h100.conf", "gpu.3.xid.1=48")
    with pytest.raises(pynvml.NVMLError_Timeout):
        wait(events)  # the XID before registration is not news
    with path.open("a") as fixture:
        fixture.write("gpu.5.xid.1=79\ngpu.3.xid.2=63\ngpu.3.xid.3=94\n")
    assert [wait(events), wait(events), wait(events)] == [(3, XID, 63), (3, XID, 94), (5, XID, 79)]
    with pytest.raises(pynvml.NVMLError_Timeout):
        wait(events, 50)
    with path.open("a") as fixture:
        fixture.write("gpu.0.xid.1=13\n")
    data = pynvml.nvmlEventSetWait(events, 0)
    assert (data.gpuInstanceId, data.computeInstanceId) == (0xFFFFFFFF, 0xFFFFFFFF)
    pynvml.nvmlEventSetFree(events)


def test_a_wait_sees_an_xid_that_arrives_while_it_waits(event_set):
    path, events = event_set("pcie-l40s.conf")

    def later():
        time.sleep(0.2)
        with path.open("a") as fixture:
            fixture.write("gpu.1.xid.1=31\n")

    writer = threading.Thread(target=later)
    writer.start()
    start = time.monotonic()
    assert wait(events, 10000) == (1, XID, 31)
    assert time.monotonic() - start < 5
    writer.join()


def test_unregistered_gpus_and_types_are_refused_or_quiet(nvml):
    path = nvml("dgx-h100.conf")
    events = pynvml.nvmlEventSetCreate()
    pynvml.nvmlDeviceRegisterEvents(pynvml.nvmlDeviceGetHandleByIndex(0), XID, events)
    with path.open("a") as fixture:
        fixture.write("gpu.1.xid.1=79\n")
    with pytest.raises(pynvml.NVMLError_Timeout):
        pynvml.nvmlEventSetWait(events, 0)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceRegisterEvents(pynvml.nvmlDeviceGetHandleByIndex(0), pynvml.nvmlEventTypePState, events)
    pynvml.nvmlEventSetFree(events)


def test_a_lost_gpu_cannot_register_and_faults_can_be_injected(nvml):
    nvml("gpu-lost.conf", "fail.nvmlEventSetWait_v2=1:GPU_IS_LOST")
    events = pynvml.nvmlEventSetCreate()
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        pynvml.nvmlDeviceRegisterEvents(pynvml.nvmlDeviceGetHandleByIndex(2), XID, events)
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        pynvml.nvmlEventSetWait(events, 0)
