"""Every role refuses, in preflight, a variable that would add lines to a configuration file it writes."""

from __future__ import annotations

import pytest
import yaml
from rolevars import Batch, role_files

from simnode import ROOT

TASK = "Check the values written into configuration files"


def preflight_check(role):
    """The role's config-value assert: its condition and its problem list's template."""
    tasks = yaml.safe_load((ROOT / "roles" / role / "tasks" / "preflight.yml").read_text())
    task = next(t for t in tasks if t.get("name") == TASK)
    (name, template), = task["vars"].items()
    return name, template


BATCH = Batch()
CASES = [
    ("nvidia_driver", {}, []),
    ("nvidia_driver", {"nvidia_driver_module_params": {"nvidia": {"NVreg_X": "1\ninstall nvidia /bin/sh -c id"}}},
     ["nvidia_driver_module_params['nvidia']['NVreg_X']: '1\\ninstall nvidia /bin/sh -c id' is not allowed here"]),
    ("cuda_repo", {}, []),
    ("cuda_repo", {"cuda_repo_pin_label": "NVIDIA CUDA\nPin-Priority: 1001"},
     ["cuda_repo_pin_label: 'NVIDIA CUDA\\nPin-Priority: 1001' is not allowed here"]),
    ("infiniband", {}, []),
    ("infiniband", {"infiniband_memlock_users": ["*", "*\n* hard nofile 1"]},
     ["infiniband_memlock_users[1]: '*\\n* hard nofile 1' is not allowed here"]),
    ("infiniband", {"infiniband_nccl_env": {"NCCL_X\n": "1", "NCCL_DEBUG": "WARN\nLD_PRELOAD=/x.so"}},
     ["infiniband_nccl_env: key 'NCCL_X\\n' is not allowed here", "infiniband_nccl_env['NCCL_DEBUG']: 'WARN\\n"]),
    ("infiniband", {"infiniband_kernel_modules": ["ib_umad", "ib_ipoib\nblacklist mlx5_core"]},
     ["infiniband_kernel_modules[1]: 'ib_ipoib\\nblacklist mlx5_core' is not allowed here"]),
    ("nvml_python", {}, []),
    ("nvml_python", {"nvml_python_index_url": "https://mirror.example/simple --trusted-host evil.example"},
     ["nvml_python_index_url: 'https://mirror.example/simple --trusted-host evil.example' is not allowed here"]),
    ("pytorch", {}, []),
    ("pytorch", {"pytorch_find_links": ["/srv/wheels", "relative/wheels"], "pytorch_dali_index_url": "ftp://x"},
     ["pytorch_find_links[1]: 'relative/wheels' is not allowed here", "pytorch_dali_index_url: 'ftp://x'"]),
    ("gpu_monitoring", {}, []),
    ("gpu_monitoring", {"gpu_monitoring_listen": ":9400\n", "gpu_monitoring_hostname": "a\nExecStartPre=/bin/sh",
                        "gpu_monitoring_textfile_dir": "/var/lib/x\nReadWritePaths=/"},
     ["gpu_monitoring_listen: ':9400\\n' is not allowed here", "gpu_monitoring_textfile_dir: '/var/lib/x\\nRead",
      "gpu_monitoring_hostname: 'a\\nExecStartPre=/bin/sh' is not allowed here"]),
    ("gpu_monitoring", {"accelops_gpu_sysfs_root": "/sys%h $HOME\nUser=root", "gpu_monitoring_groups": ["video\n"]},
     ["gpu_monitoring_groups[0]: 'video\\n' is not allowed here",
      "accelops_gpu_sysfs_root: '/sys%h $HOME\\nUser=root' is not allowed here"]),
    ("gpu_monitoring", {"gpu_monitoring_tls_cert_file": "/etc/ssl/x.pem\nExecStartPre=/bin/sh",
                        "gpu_monitoring_tls_key_file": "/etc/ssl/x.key",
                        "gpu_monitoring_basic_auth_users": {"prometheus": "hunter2", "a:b": "$2b$12$" + "b" * 53}},
     ["gpu_monitoring_tls_cert_file: '/etc/ssl/x.pem\\nExecStartPre=/bin/sh' is not allowed here",
      "gpu_monitoring_basic_auth_users['prometheus']: is not a bcrypt hash (not shown",
      "gpu_monitoring_basic_auth_users: key 'a:b' is not allowed here"]),
    ("gpu_monitoring",
     {"gpu_monitoring_cdi_specs": ["/etc/cdi/nvidia.yaml\nExecStartPre=/bin/sh", "/etc/cdi/x.txt"]},
     ["gpu_monitoring_cdi_specs[0]: '/etc/cdi/nvidia.yaml\\nExecStartPre=/bin/sh' is not allowed here",
      'gpu_monitoring_cdi_specs: every spec must end in .yaml or .json (runtimes read only those), got '
      '["/etc/cdi/nvi']),
    ("gpu_monitoring", {"gpu_monitoring_cdi_specs": "/etc/cdi/nvidia.yaml"},
     ["gpu_monitoring_cdi_specs: must be a list, got str"]),
    ("tensorflow", {}, []),
    ("tensorflow", {"tensorflow_extra_index_urls": ["https://a.example/simple\n--index-url=http://evil"]},
     ["tensorflow_extra_index_urls[0]: 'https://a.example/simple\\n--index-url=http://evil' is not allowed"]),
]
KEYS = []
for role, overrides, _expected in CASES:
    name, template = preflight_check(role)
    expression = template.strip().removeprefix("{{").removesuffix("}}")
    KEYS.append(BATCH.add(role_files(role)[:1], overrides, [("problems", "{{ (%s) | to_json }}" % expression)]))


@pytest.mark.parametrize("case", range(len(CASES)), ids=["%s-%d" % (c[0], n) for n, c in enumerate(CASES)])
def test_config_values_are_checked_before_anything_is_written(case):
    _role, _overrides, expected = CASES[case]
    rendered = BATCH[KEYS[case]]["problems"]
    assert not isinstance(rendered, dict), rendered  # not a templating error
    problems = yaml.safe_load(rendered)
    assert len(problems) == len(expected), problems
    for problem, start in zip(problems, expected):
        assert problem.startswith(start), problem


def test_every_role_that_templates_a_variable_checks_it():
    for role in ("nvidia_driver", "cuda_repo", "infiniband", "nvml_python", "pytorch", "tensorflow", "gpu_monitoring"):
        tasks = yaml.safe_load((ROOT / "roles" / role / "tasks" / "preflight.yml").read_text())
        names = [t.get("name") for t in tasks]
        assert TASK in names  # in preflight, which runs before anything is installed or written
