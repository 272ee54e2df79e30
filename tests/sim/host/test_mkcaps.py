"""The MIG capabilities of simulated nodes (tests/sim/host/mkcaps.py): mig-minors as the driver lists it, and a device
file for each MIG device's GPU and compute instance, where the Slurm role's gres.conf points."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from simnode import FIXTURES, expose_collection

MKCAPS = Path(__file__).resolve().parent / "mkcaps.py"


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")
def test_mig_minors_and_capability_files_of_the_dgx_a100_mig(tmp_path):
    expose_collection()
    from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_conf import parse_mig_minors

    out = subprocess.run([sys.executable, str(MKCAPS), str(FIXTURES / "dgx-a100-mig.conf"), str(tmp_path / "proc"),
                          str(tmp_path / "dev")], capture_output=True, text=True, check=True)
    # Eight GPUs; GPU 0 (minor 2) has seven 1g.10gb devices (GPU instances 7..13), GPU 1 (minor 3) three.
    assert out.stdout == "mig-minors for 8 GPUs, 10 MIG devices, 20 capability files made\n"
    minors = parse_mig_minors((tmp_path / "proc" / "driver" / "nvidia-caps" / "mig-minors").read_text())
    assert len(minors) == 2 + 8 * 15 * 9
    assert minors["config"] == 1 and minors["monitor"] == 2
    assert minors["gpu0/gi0/access"] == 3 and minors["gpu0/gi0/ci7/access"] == 11 and minors["gpu0/gi1/access"] == 12
    assert minors["gpu2/gi7/access"] == 3 + 2 * 135 + 7 * 9 and minors["gpu3/gi2/ci0/access"] == 3 + 3 * 135 + 2 * 9 + 1
    files = sorted(os.listdir(tmp_path / "dev" / "nvidia-caps"))
    expected = sorted("nvidia-cap%d" % minors[name] for name in
                      ["gpu2/gi%d/access" % gi for gi in range(7, 14)]
                      + ["gpu2/gi%d/ci0/access" % gi for gi in range(7, 14)]
                      + ["gpu3/gi%d/access" % gi for gi in (2, 3, 9)]
                      + ["gpu3/gi%d/ci0/access" % gi for gi in (2, 3, 9)])
    assert files == expected
    assert all(stat.S_ISCHR(os.stat(tmp_path / "dev" / "nvidia-caps" / name).st_mode) for name in files)
    # A second run keeps what is there.
    again = subprocess.run([sys.executable, str(MKCAPS), str(FIXTURES / "dgx-a100-mig.conf"), str(tmp_path / "proc"),
                            str(tmp_path / "dev")], capture_output=True, text=True, check=True)
    assert again.stdout.endswith(", 0 capability files made\n")
