"""_config_value_problems: what may be written into each configuration file format."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.plugin_utils._config_value_problems_filters import (
    FilterModule,
    config_value_problems,
)

GOOD = [
    ("modprobe_options", {}),
    ("modprobe_options", {"nvidia": {"NVreg_PreserveVideoMemoryAllocations": 1, "NVreg_EnableGpuFirmware": 0}}),
    ("modprobe_options", {"nvidia": {"NVreg_RegistryDwords": "RMUseSwI2c=0x01;RMI2cSpeed=100"}}),
    ("modprobe_options", {"nvidia-drm": {"modeset": True}, "nvidia": {"NVreg_TemporaryFilePath": "/var/tmp"}}),
    ("modprobe_options", {"nvidia": {"NVreg_RegistryDwords": '"a b=1"'}}),
    ("kernel_modules", ["ib_umad", "ib_ipoib", "rdma_ucm", "nvidia-peermem"]),
    ("apt_pin_value", "NVIDIA CUDA"),
    ("apt_pin_value", "cuda-mirror.example_1"),
    ("limits_domains", ["*"]),
    ("limits_domains", ["@mlusers", "%gpu", "slurm", "svc.train-1"]),
    ("nccl_env", {}),
    ("nccl_env", {"NCCL_IB_HCA": "mlx5_0:1,mlx5_1:1", "NCCL_SOCKET_IFNAME": "^docker0,lo", "NCCL_DEBUG": "WARN",
                  "NCCL_IB_TIMEOUT": 22, "NCCL_IB_DISABLE": False}),
    ("unit_names", ["jupyterhub", "slurmd.service", "user@1000.service", "dev-disk-by\\x2dlabel.mount"]),
    ("pip_locations", ""),
    ("pip_locations", "https://download.pytorch.org/whl/{channel}"),
    ("pip_locations", ["http://127.0.0.1:18080/wheels/", "file:///srv/wheels", "/srv/wheels"]),
    ("pip_location_list", ["http://127.0.0.1:18080/wheels/", "/srv/wheels"]),
    ("pip_location_list", []),
    ("listen_address", ":9400"),
    ("listen_address", "127.0.0.1:19400"),
    ("listen_address", "[::1]:65535"),
    ("listen_address", "gpu-node-1.example:1"),
    ("host_name", "dgx-01.cluster_a"),
    ("absolute_path", "/var/lib/prometheus/node-exporter"),
    ("absolute_path", "/srv/a.b/.hidden"),
    ("system_user", "accelops-gpu-exporter"),
    ("system_users", []),
    ("system_users", ["video", "render"]),
    ("host_address", "gpu-a01.example.org"),
    ("host_address", "10.1.1.2"),
    ("host_address", "2001:db8::3"),
    ("basic_auth_users", {}),
    ("basic_auth_users", {"prometheus": "$2b$12$" + "A./z09" * 8 + "abcde", "ops@site": "$2y$10$" + "b" * 53}),
]


@pytest.mark.parametrize("fmt, value", GOOD)
def test_what_each_format_allows(fmt, value):
    assert config_value_problems(value, fmt, "v") == []


BAD = [
    ("modprobe_options", {"nvidia": {"NVreg_X": "1\ninstall nvidia /bin/sh -c id>/tmp/x"}},
     "nvidia_driver_module_params['nvidia']['NVreg_X']: '1\\ninstall nvidia /bin/sh -c"),
    ("modprobe_options", {"nvidia\ninstall evil /bin/sh": {"a": 1}}, "nvidia_driver_module_params: key 'nvidia\\ninst"),
    ("modprobe_options", {"nvidia": {"a b": 1}}, "nvidia_driver_module_params['nvidia']: key 'a b' is not allowed"),
    ("modprobe_options", {"nvidia": {"a": "x y"}}, "give letters, digits and _ . , : ; / + = @ % -, or a double-"),
    ("modprobe_options", {"nvidia": {"a": '"x\ny"'}}, "nvidia_driver_module_params['nvidia']['a']"),
    ("modprobe_options", {"nvidia": {"a": "x\x00"}}, "nvidia_driver_module_params['nvidia']['a']"),
    ("modprobe_options", {"nvidia": {"a": "#comment"}}, "nvidia_driver_module_params['nvidia']['a']"),
    ("modprobe_options", {"nvidia": {"a": None}}, "nvidia_driver_module_params['nvidia']['a']: None"),
    ("modprobe_options", {"nvidia": {"a": [1]}}, "nvidia_driver_module_params['nvidia']['a']: [1]"),
    ("modprobe_options", {"nvidia": ["a=1"]}, "nvidia_driver_module_params['nvidia']: must be a dict, got list"),
    ("modprobe_options", "nvidia a=1", "nvidia_driver_module_params: must be a dict, got str"),
    ("kernel_modules", ["ib_umad\nevil"], "nvidia_driver_module_params[0]: 'ib_umad\\nevil' is not allowed here"),
    ("kernel_modules", "ib_umad", "nvidia_driver_module_params: must be a list, got str"),
    ("apt_pin_value", "NVIDIA CUDA\nPin-Priority: 1001", "nvidia_driver_module_params: 'NVIDIA CUDA\\nPin-Priority"),
    ("apt_pin_value", "NVIDIA,o=evil", "give letters, digits, spaces inside and . _ + ~ - (no comma, no newline)"),
    ("apt_pin_value", " NVIDIA", "is not allowed here"),
    ("apt_pin_value", "", "'' is not allowed here"),
    ("limits_domains", ["*\n* hard nofile 1"], "nvidia_driver_module_params[0]: '*\\n* hard nofile 1'"),
    ("limits_domains", ["root soft"], "give *, a user name, @group or %group"),
    ("limits_domains", ["*"] * 2 + [""], "nvidia_driver_module_params[2]: ''"),
    ("nccl_env", {"NCCL_X\n": "1"}, "nvidia_driver_module_params: key 'NCCL_X\\n' is not allowed here; give an NCCL"),
    ("nccl_env", {"LD_PRELOAD": "/x.so"}, "key 'LD_PRELOAD' is not allowed here"),
    ("nccl_env", {"NCCL_DEBUG": "INFO\nLD_PRELOAD=/x.so"}, "nvidia_driver_module_params['NCCL_DEBUG']: 'INFO\\nLD"),
    ("nccl_env", {"NCCL_DEBUG": "IN FO"}, "give printable ASCII without spaces"),
    ("nccl_env", {"NCCL_DEBUG": ""}, "nvidia_driver_module_params['NCCL_DEBUG']: ''"),
    ("unit_names", ["a b"], "give a systemd unit name"),
    ("unit_names", ["jupyterhub\n"], "nvidia_driver_module_params[0]: 'jupyterhub\\n'"),
    ("pip_locations", "https://x/simple --trusted-host evil", "give an https://, http:// or file:// URL or an"),
    ("pip_locations", ["wheels"], "nvidia_driver_module_params[0]: 'wheels' is not allowed here"),
    ("pip_locations", "ftp://x", "nvidia_driver_module_params: 'ftp://x' is not allowed here"),
    ("pip_locations", {"a": 1}, "nvidia_driver_module_params: must be a list, got dict"),
    ("pip_location_list", "/srv/wheels", "nvidia_driver_module_params: must be a list of wheel locations, got the"),
    ("pip_location_list", 5, "nvidia_driver_module_params: must be a list, got int"),
    ("pip_location_list", ["ftp://x"], "nvidia_driver_module_params[0]: 'ftp://x' is not allowed here"),
    ("listen_address", ":0", "nvidia_driver_module_params: ':0' is not allowed here; give HOST:PORT, [IPv6 addr"),
    ("listen_address", ":65536", "':65536' is not allowed here"),
    ("listen_address", "9400", "'9400' is not allowed here"),
    ("listen_address", "::1:9400", "'::1:9400' is not allowed here"),
    ("listen_address", "a b:9400", "'a b:9400' is not allowed here"),
    ("listen_address", ":9400 --textfile /etc/x.prom", "is not allowed here"),
    ("listen_address", ":9400\n", "is not allowed here"),
    ("listen_address", 9400, "nvidia_driver_module_params: 9400 is not allowed here"),
    ("host_name", "node 1", "give a host name (letters, digits and . _ -)"),
    ("host_name", "node\nExecStartPre=/bin/sh", "is not allowed here"),
    ("host_name", "", "'' is not allowed here"),
    ("absolute_path", "relative/dir", "give an absolute path of letters, digits and . _ + - without . or .. parts"),
    ("absolute_path", "/var/lib/../../etc", "is not allowed here"),
    ("absolute_path", "/var/lib/./x", "is not allowed here"),
    ("absolute_path", "/var/lib x", "is not allowed here"),
    ("absolute_path", "/", "is not allowed here"),
    ("absolute_paths", "/etc/cdi/nvidia.yaml", "must be a list, got str"),
    ("absolute_paths", ["/etc/cdi/nvidia.yaml", "/etc/cdi/a b.yaml"],
     "nvidia_driver_module_params[1]: '/etc/cdi/a b.yaml' is not allowed here"),
    ("system_user", "Root", "give a system user name"),
    ("system_user", "a" * 33, "is not allowed here"),
    ("system_users", "video", "must be a list, got str"),
    ("system_users", ["video", "a b"], "nvidia_driver_module_params[1]: 'a b' is not allowed here; give a system user"),
    ("host_address", "http://node1", "give a host name, an IPv4 address or an IPv6 address without brackets"),
    ("host_address", "[2001:db8::3]", "is not allowed here"),
    ("host_address", "node1:9400", "is not allowed here"),
    # A leading - is an option to modprobe and systemctl: ["-r", "mlx5_ib"] would unload the module.
    ("kernel_modules", ["-r", "mlx5_ib"], "nvidia_driver_module_params[0]: '-r' is not allowed here; give a kernel "
     "module name (letters, digits, _ and -, not starting with -)"),
    ("kernel_modules", ["--force"], "nvidia_driver_module_params[0]: '--force' is not allowed here"),
    ("modprobe_options", {"-r": {"a": 1}}, "nvidia_driver_module_params: key '-r' is not allowed here"),
    ("unit_names", ["-H", "evil"], "nvidia_driver_module_params[0]: '-H' is not allowed here; give a systemd unit "
     "name (letters, digits and : _ . @ \\ -, not starting with - or ., without ..)"),
    ("unit_names", ["--now"], "nvidia_driver_module_params[0]: '--now' is not allowed here"),
    ("unit_names", [".."], "nvidia_driver_module_params[0]: '..' is not allowed here"),
    ("unit_names", ["../../etc/x.service"], "nvidia_driver_module_params[0]: '../../etc/x.service' is not allowed"),
    ("unit_names", ["a..service"], "nvidia_driver_module_params[0]: 'a..service' is not allowed here"),
    ("unit_names", [".hidden.service"], "nvidia_driver_module_params[0]: '.hidden.service' is not allowed here"),
    ("basic_auth_users", ["prometheus"], "must be a dict, got list"),
    ("basic_auth_users", {"a:b": "$2b$12$" + "b" * 53}, "key 'a:b' is not allowed here; give a user name"),
    ("basic_auth_users", {"a\nb": "$2b$12$" + "b" * 53}, "is not allowed here"),
    ("basic_auth_users", {"prometheus": "$2b$12$" + "b" * 53 + "\n"}, "['prometheus']: is not a bcrypt hash"),
    ("basic_auth_users", {"prometheus": "$2b$03$" + "b" * 53}, "is not a bcrypt hash"),
    ("basic_auth_users", {"prometheus": None}, "give the hash of the password, such as htpasswd -nBC 12 prometheus"),
]


def test_a_password_given_for_a_hash_is_never_shown():
    problems = config_value_problems({"prometheus": "hunter2 secret"}, "basic_auth_users", "gpu_monitoring_x")
    assert len(problems) == 1 and "hunter2" not in problems[0]


@pytest.mark.parametrize("fmt, value, message", BAD, ids=[m[:40] for _f, _v, m in BAD])
def test_what_each_format_refuses(fmt, value, message):
    problems = config_value_problems(value, fmt, "nvidia_driver_module_params")
    assert problems and any(message in p for p in problems), problems


def test_a_huge_integer_is_a_problem_not_a_crash():
    problems = config_value_problems({"nvidia": {"a": 10 ** 5000}}, "modprobe_options", "p")
    assert problems == ["p['nvidia']['a']: an integer of 16610 bits is not allowed here; give letters, digits and "
                        "_ . , : ; / + = @ % -, or a double-quoted text of printable ASCII without \" and \\"]


@pytest.mark.parametrize("fmt, name, message", [
    ("ini", "x", "format must be one of modprobe_options"), ("nccl_env", "", "name must be the variable's name"),
    (None, "x", "format must be one of"),
])
def test_bad_arguments_are_filter_errors(fmt, name, message):
    with pytest.raises(AnsibleFilterError, match=message):
        config_value_problems({}, fmt, name)


def test_registered():
    assert FilterModule().filters()["_config_value_problems"] is config_value_problems
