# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU exporter: the node's GPUs read as gpu_facts reads them, served to Prometheus over HTTP or HTTPS, or
written as a textfile for node_exporter.

Installed by the accelops.gpu.gpu_monitoring role and run by accelops-gpu-exporter.service with the Python of the
accelops.gpu.nvml_python virtual environment (which has pynvml, prometheus_client and bcrypt). The exporter itself is
the collection's module_utils/_exporter.py, with the collector and health verdict it shares with gpu_facts, installed
under --lib by the role.

Usage: accelops-gpu-exporter [--lib DIR] [the exporter's options; --help lists them]
"""

import sys

DEFAULT_LIB = "/usr/local/lib/accelops-gpu"


def main(argv):
    args, lib = list(argv), DEFAULT_LIB
    if args[:1] == ["--lib"]:
        if len(args) < 2:
            sys.stderr.write("accelops-gpu-exporter: --lib needs a directory\n")
            return 2
        lib, args = args[1], args[2:]
    sys.path.insert(0, lib)
    from ansible_collections.accelops.gpu.plugins.module_utils import _exporter

    return _exporter.main(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
