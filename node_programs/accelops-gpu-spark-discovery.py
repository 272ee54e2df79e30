# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Spark's GPU discovery script: the node's GPUs read through NVML, printed as the JSON Spark reads from a
resource discovery script ({"name": "gpu", "addresses": [...]}), or one line on stderr and a non-zero exit status
when there is no answer Spark may use.

Run with the Python of the accelops.gpu.nvml_python virtual environment (which has pynvml). The script itself is the
collection's module_utils/_spark_gpus.py, with the collector it shares with gpu_facts, installed under --lib.

Usage: accelops-gpu-spark-discovery [--lib DIR] [the script's options; --help lists them]
"""

import sys

DEFAULT_LIB = "/usr/local/lib/accelops-gpu"


def main(argv):
    args, lib = list(argv), DEFAULT_LIB
    if args[:1] == ["--lib"]:
        if len(args) < 2:
            sys.stderr.write("accelops-gpu-spark-discovery: --lib needs a directory\n")
            return 2
        lib, args = args[1], args[2:]
    sys.path.insert(0, lib)
    try:
        from ansible_collections.accelops.gpu.plugins.module_utils import _spark_gpus
    except ImportError as exc:
        sys.stderr.write("accelops-gpu-spark-discovery: the collection's code is not under %s: %s\n" % (lib, exc))
        return 1

    return _spark_gpus.main(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
