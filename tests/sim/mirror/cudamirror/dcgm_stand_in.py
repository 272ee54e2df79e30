"""Stand-ins for DCGM's dcgmi and dcgm-exporter in the test mirror's DCGM packages (one file, two names).

They read the GPUs through libnvidia-ml.so.1 (the fake NVML on a simulated node) with ctypes, as DCGM reads them
through NVML, and answer the parts of the real tools' interfaces that accelops.gpu uses:

    dcgmi diag -r 1 [-j]      the quick diagnostic: per GPU, the deployment ("software") test fails where NVIDIA's
                              does on a node that looks fine otherwise: persistence mode off, a row remap pending or
                              failed. -j prints DCGM 4's JSON document; the exit status is 226 when a test failed,
                              1 when NVML cannot be read (an error on stderr, no document).
    dcgm-exporter -a ADDR -f COUNTERS.csv [-r HOST:PORT]
                              serves /metrics on ADDR (":9400", "HOST:PORT") with the counters of the CSV file that
                              it knows (DCGM_FI_DEV_GPU_TEMP, DCGM_FI_DEV_POWER_USAGE), dcgm-exporter's labels
                              gpu, UUID, pci_bus_id, device, modelName and Hostname. -r is accepted and not used.
"""

import ctypes
import http.server
import json
import os
import socket
import socketserver
import sys

VERSION = "4.2.3"
NVML_TEMPERATURE_GPU = 0
# dcgm-exporter's fields that the stand-in serves (gauges).
FIELDS = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE")
EXIT_TEST_FAILED = 226


class PciInfo(ctypes.Structure):
    _fields_ = [("busIdLegacy", ctypes.c_char * 16), ("domain", ctypes.c_uint), ("bus", ctypes.c_uint),
                ("device", ctypes.c_uint), ("pciDeviceId", ctypes.c_uint), ("pciSubSystemId", ctypes.c_uint),
                ("busId", ctypes.c_char * 32)]


class NvmlError(Exception):
    pass


class Nvml:
    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        except OSError as error:
            raise NvmlError("libnvidia-ml.so.1 cannot be loaded: %s" % error) from None
        self.call("nvmlInit_v2")

    def call(self, name, *args):
        status = getattr(self.lib, name)(*args)
        if status != 0:
            raise NvmlError("%s returned %d" % (name, status))

    def uint(self, name, *args):
        value = ctypes.c_uint()
        self.call(name, *args, ctypes.byref(value))
        return value.value

    def text(self, name, handle):
        buffer = ctypes.create_string_buffer(96)
        self.call(name, handle, buffer, ctypes.c_uint(96))
        return buffer.value.decode(errors="replace")

    def gpus(self):
        """(index, handle) per GPU; the handle is None for a GPU that NVML counts and cannot reach."""
        for index in range(self.uint("nvmlDeviceGetCount_v2")):
            handle = ctypes.c_void_p()
            try:
                self.call("nvmlDeviceGetHandleByIndex_v2", ctypes.c_uint(index), ctypes.byref(handle))
            except NvmlError:
                handle = None
            yield index, handle

    def remapped(self, handle):
        values = [ctypes.c_uint() for _slot in range(4)]
        self.call("nvmlDeviceGetRemappedRows", handle, *(ctypes.byref(value) for value in values))
        return [value.value for value in values]

    def pci_bus_id(self, handle):
        info = PciInfo()
        self.call("nvmlDeviceGetPciInfo_v3", handle, ctypes.byref(info))
        return info.busId.decode(errors="replace")


# --- dcgmi ------------------------------------------------------------------------------------------------------


def software_warnings(nvml, index, handle):
    if handle is None:
        return ["NVML Library: GPU %d cannot be reached through NVML (fallen off the bus?)." % index]
    warnings = []
    try:
        if nvml.uint("nvmlDeviceGetPersistenceMode", handle) != 1:
            warnings.append("Persistence Mode: Persistence mode for GPU %d is disabled. Enable persistence mode by "
                            "running \"nvidia-smi -i <gpuId> -pm 1 \" as root." % index)
    except NvmlError as error:
        warnings.append("Persistence Mode: cannot read GPU %d: %s" % (index, error))
    try:
        pending, failure = nvml.remapped(handle)[2:]
        if failure:
            warnings.append("Page Retirement/Row Remap: GPU %d had uncorrectable memory errors and row remapping "
                            "failed. Run a field diagnostic on the GPU." % index)
        elif pending:
            warnings.append("Page Retirement/Row Remap: GPU %d has uncorrectable memory errors in a row that is "
                            "pending remapping. Drain the GPU and reset it or reboot the node." % index)
    except NvmlError:
        pass  # before Ampere: page retirement, not read here
    return warnings


def diag(args):
    if "-r" not in args or args[args.index("-r") + 1:args.index("-r") + 2] != ["1"]:
        sys.stderr.write("dcgmi stand-in: only 'dcgmi diag -r 1 [-j]' is known\n")
        return 1
    try:
        nvml = Nvml()
        gpus = list(nvml.gpus())
    except NvmlError as error:
        sys.stderr.write("Error: Unable to complete diagnostic for group 2147483647. Return: (-3) NVML %s\n" % error)
        return 1
    results = []
    for index, handle in gpus:
        warnings = software_warnings(nvml, index, handle)
        result = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": index,
                  "status": "Fail" if warnings else "Pass"}
        if warnings:
            result["warnings"] = [{"error_category": 8, "error_id": 29, "error_severity": 5, "warning": text}
                                  for text in warnings]
        results.append(result)
    failed = any(result["status"] == "Fail" for result in results)
    document = {
        "DCGM Diagnostic": {"test_categories": [{"category": "Deployment", "tests": [{
            "name": "software", "results": results,
            "test_summary": {"status": "Fail" if failed else "Pass"}}]}]},
        "metadata": {"version": VERSION},
    }
    if "-j" in args:
        print(json.dumps(document, indent=2))
    else:
        for result in results:
            print("GPU %d software: %s" % (result["entity_id"], result["status"]))
            for warning in result.get("warnings", ()):
                print("  %s" % warning["warning"])
    return EXIT_TEST_FAILED if failed else 0


def dcgmi(args):
    if args[:1] == ["diag"]:
        return diag(args[1:])
    if args[:1] in (["-v"], ["--version"]):
        print("Version : %s" % VERSION)
        return 0
    sys.stderr.write("dcgmi stand-in: unknown command %s\n" % " ".join(args))
    return 1


# --- dcgm-exporter ----------------------------------------------------------------------------------------------


def counters(path):
    """The field names of a dcgm-exporter counters file: 'NAME, type, help' per line, # comments."""
    names = []
    with open(path, encoding="utf-8") as stream:
        for raw in stream:
            line = raw.strip()
            if line and not line.startswith("#"):
                names.append(line.split(",", 1)[0].strip())
    return [name for name in FIELDS if name in names]


def escape(value):
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def metrics(fields, hostname):
    nvml = Nvml()
    lines = {field: [] for field in fields}
    for index, handle in nvml.gpus():
        if handle is None:
            continue
        # A GPU that NVML cannot read is left out, as dcgm-exporter leaves it: the others are still served.
        try:
            labels = 'gpu="%d",UUID="%s",pci_bus_id="%s",device="nvidia%d",modelName="%s",Hostname="%s"' % (
                index, escape(nvml.text("nvmlDeviceGetUUID", handle)), escape(nvml.pci_bus_id(handle)), index,
                escape(nvml.text("nvmlDeviceGetName", handle)), escape(hostname))
            if "DCGM_FI_DEV_GPU_TEMP" in fields:
                value = nvml.uint("nvmlDeviceGetTemperature", handle, ctypes.c_int(NVML_TEMPERATURE_GPU))
                lines["DCGM_FI_DEV_GPU_TEMP"].append("DCGM_FI_DEV_GPU_TEMP{%s} %d" % (labels, value))
            if "DCGM_FI_DEV_POWER_USAGE" in fields:
                value = nvml.uint("nvmlDeviceGetPowerUsage", handle) / 1000.0
                lines["DCGM_FI_DEV_POWER_USAGE"].append("DCGM_FI_DEV_POWER_USAGE{%s} %.3f" % (labels, value))
        except NvmlError:
            continue
    text = []
    helps = {"DCGM_FI_DEV_GPU_TEMP": "GPU temperature (in C).", "DCGM_FI_DEV_POWER_USAGE": "Power draw (in W)."}
    for field in fields:
        text += ["# HELP %s %s" % (field, helps[field]), "# TYPE %s gauge" % field] + lines[field]
    return "\n".join(text) + "\n"


def exporter(args):
    # dcgm-exporter's own flags that the role gives it; the HPC job-mapping directory is taken and not read here (the
    # collection's exporter and its tests prove the hpc_job label).
    options = {"-a": ":9400", "-f": "/etc/dcgm-exporter/default-counters.csv", "-r": "", "--hpc-job-mapping-dir": ""}
    aliases = {"--address": "-a", "--collectors": "-f", "--remote-hostengine-info": "-r"}
    rest = list(args)
    while rest:
        flag = aliases.get(rest[0], rest[0])
        if flag not in options or len(rest) < 2:
            sys.stderr.write("dcgm-exporter stand-in: unknown argument %s\n" % rest[0])
            return 2
        options[flag] = rest[1]
        rest = rest[2:]
    fields = counters(options["-f"])
    host, port = options["-a"].rsplit(":", 1) if ":" in options["-a"] else ("", options["-a"])
    hostname = socket.gethostname()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path != "/metrics":
                self.send_error(404)
                return
            try:
                body = metrics(fields, hostname).encode()
                self.send_response(200)
            except NvmlError as error:
                body = ("NVML: %s\n" % error).encode()
                self.send_response(500)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True
        address_family = socket.AF_INET6 if host.startswith("[") or not host else socket.AF_INET

    bind = host.strip("[]") or "::"
    with Server((bind, int(port)), Handler) as server:
        server.serve_forever()
    return 0


def main():
    name = os.path.basename(sys.argv[0])
    return (exporter if name == "dcgm-exporter" else dcgmi)(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
