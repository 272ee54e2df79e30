"""gpu_monitoring's exporter unit, its web configuration and node_exporter's options, rendered by Ansible's own
templating as the role renders them: the command line of each output, the sandbox, TLS and the users; and the files
the role declares for accelops.gpu.node_files."""

from __future__ import annotations

import json

import pytest
from rolevars import Batch, role_files

from ansible_collections.accelops.gpu.plugins.module_utils import _exporter
from simnode import ROOT

ROLE = ROOT / "roles" / "gpu_monitoring"
UNIT = (ROLE / "templates" / "accelops-gpu-exporter.service.j2").read_text()
NODE_EXPORTER = (ROLE / "templates" / "prometheus-node-exporter.j2").read_text()
WEB = (ROLE / "templates" / "web-config.yml.j2").read_text()
HASH = "$2b$12$" + "K1bS0Lh6b2L0m4yq9U7pLe" + "x" * 31


BATCH = Batch()
CASES = {
    "http": {},
    "textfile": {"gpu_monitoring_output": "textfile", "gpu_monitoring_interval_s": 5,
                 "gpu_monitoring_hostname": "dgx-01", "accelops_gpu_sysfs_root": "/etc/accelops-sim/sys",
                 "gpu_monitoring_hostname_label": "hostname", "gpu_monitoring_job_map_dir": "/run/slurm-gpus"},
    "no_jobs": {"gpu_monitoring_job_map_dir": ""},
    "dcgm": {"gpu_monitoring_backend": "dcgm"},
    "groups": {"gpu_monitoring_groups": ["video", "render"]},
    "node_exporter": {"gpu_monitoring_output": "textfile", "gpu_monitoring_node_exporter": True,
                      "gpu_monitoring_node_exporter_listen": "127.0.0.1:19100"},
    "tls": {"gpu_monitoring_tls_cert_file": "/etc/ssl/certs/node1.pem",
            "gpu_monitoring_tls_key_file": "/etc/ssl/private/node1.key",
            "gpu_monitoring_basic_auth_users": {"prometheus": HASH}},
}
KEYS = {name: BATCH.add(role_files("gpu_monitoring"), dict(variables, ansible_managed="Ansible managed"),
                        [("unit", UNIT), ("node_exporter", NODE_EXPORTER), ("web", WEB),
                         ("scheme", "{{ __gpu_monitoring_scheme }}"), ("auth", "{{ __gpu_monitoring_auth | bool }}"),
                         ("files", "{{ __gpu_monitoring_files }}"),
                         ("dcgm_command", "{{ __gpu_monitoring_dcgm_command }}"),
                         ("node_exporter_files", "{{ __gpu_monitoring_node_exporter_files }}")])
        for name, variables in CASES.items()}


def settings(text):
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_http_serves_on_the_listen_address():
    lines = settings(BATCH[KEYS["http"]]["unit"])
    assert ("ExecStart=/opt/accelops-gpu/nvml/bin/python /usr/local/libexec/accelops-gpu/accelops-gpu-exporter "
            "--lib /usr/local/lib/accelops-gpu --listen :9400 "
            "--web.config.file /etc/accelops-gpu-exporter/web-config.yml "
            "--hpc-job-mapping-dir /run/accelops-gpu/job-map") in lines
    assert "User=accelops-gpu-exporter" in lines and "Group=accelops-gpu-exporter" in lines
    # The program puts its --lib on sys.path itself; no bytecode is written beside the shipped code.
    assert "Environment=PYTHONDONTWRITEBYTECODE=1" in lines
    assert not [line for line in lines if line.startswith("Environment=PYTHONPATH")]
    # Nothing to write: no path is writable.
    assert not [line for line in lines if line.startswith("ReadWritePaths=")]
    for setting in ("NoNewPrivileges=true", "CapabilityBoundingSet=", "ProtectSystem=full", "ProtectHome=true",
                    "Restart=always"):
        assert setting in lines


def test_textfile_writes_every_interval_and_only_there():
    lines = settings(BATCH[KEYS["textfile"]]["unit"])
    assert next(line for line in lines if line.startswith("ExecStart=")).endswith(
        "accelops-gpu-exporter --lib /usr/local/lib/accelops-gpu "
        "--textfile /var/lib/prometheus/node-exporter/accelops-gpu.prom --interval 5 --hostname dgx-01 "
        "--hostname-label hostname --hpc-job-mapping-dir /run/slurm-gpus --sysfs-root /etc/accelops-sim/sys")
    assert "ReadWritePaths=/var/lib/prometheus/node-exporter" in lines


def test_the_job_label_is_off_with_an_empty_directory_and_passed_to_dcgm_exporter():
    unit = settings(BATCH[KEYS["no_jobs"]]["unit"])
    assert next(line for line in unit if line.startswith("ExecStart=")).endswith(
        "--web.config.file /etc/accelops-gpu-exporter/web-config.yml")
    assert BATCH[KEYS["dcgm"]]["dcgm_command"][-2:] == ["--hpc-job-mapping-dir", "/run/accelops-gpu/job-map"]


def test_node_exporter_reads_the_textfile_directory():
    rendered = BATCH[KEYS["node_exporter"]]["node_exporter"]
    assert settings(rendered) == [
        'ARGS="--web.listen-address=127.0.0.1:19100 '
        '--collector.textfile.directory=/var/lib/prometheus/node-exporter"']


@pytest.mark.parametrize("name", CASES)
def test_every_setting_is_one_line(name):
    """Each value went through preflight's config_value_problems; the rendering itself adds no stray line."""
    unit = settings(BATCH[KEYS[name]]["unit"])
    assert sum(line.startswith("ExecStart=") for line in unit) == 1
    assert all("{{" not in line and "{%" not in line for line in unit)


def test_the_device_files_group_and_the_bounds():
    assert "SupplementaryGroups=video render" in settings(BATCH[KEYS["groups"]]["unit"])
    lines = settings(BATCH[KEYS["http"]]["unit"])
    assert not [line for line in lines if line.startswith("SupplementaryGroups=")]
    assert "MemoryMax=256M" in lines and "TasksMax=64" in lines


def _web(name):
    return json.loads("\n".join(line for line in BATCH[KEYS[name]]["web"].splitlines() if not line.startswith("#")))


def test_the_web_configuration_is_the_exporter_toolkits():
    """Plain HTTP open to all by default ({}); with TLS and users, the toolkit's keys, which the exporter reads."""
    assert _web("http") == {}
    assert BATCH[KEYS["http"]]["scheme"] == "http" and BATCH[KEYS["http"]]["auth"] is False
    assert _web("tls") == {"tls_server_config": {"cert_file": "/etc/ssl/certs/node1.pem",
                                                 "key_file": "/etc/ssl/private/node1.key"},
                           "basic_auth_users": {"prometheus": HASH}}
    assert BATCH[KEYS["tls"]]["scheme"] == "https" and BATCH[KEYS["tls"]]["auth"] is True
    assert BATCH[KEYS["tls"]]["web"].startswith("#")


def test_the_exporter_reads_the_roles_web_configuration(tmp_path):
    path = tmp_path / "web-config.yml"
    path.write_text(BATCH[KEYS["http"]]["web"] + "\n")
    web = _exporter.WebConfig.load(str(path))
    assert web.ssl_context is None and web.users == {}
    path.write_text(BATCH[KEYS["tls"]]["web"] + "\n")
    with pytest.raises(_exporter.WebConfigError, match=r"cannot load the certificate /etc/ssl/certs/node1\.pem"):
        _exporter.WebConfig.load(str(path))


def test_the_declared_files():
    """The program with its code, the web configuration only for output http (its group's, kept out of --diff), the
    unit last; node_exporter's options apart, for their own task and restart."""
    http = BATCH[KEYS["http"]]["files"]
    assert [entry["dest"] for entry in http] == [
        "/usr/local/libexec/accelops-gpu", "/usr/local/libexec/accelops-gpu/accelops-gpu-exporter",
        "/etc/accelops-gpu-exporter", "/etc/accelops-gpu-exporter/web-config.yml",
        "/etc/systemd/system/accelops-gpu-exporter.service"]
    assert http[1] == {"dest": "/usr/local/libexec/accelops-gpu/accelops-gpu-exporter",
                       "program": "accelops-gpu-exporter", "lib": "/usr/local/lib/accelops-gpu"}
    assert http[3] == {"dest": "/etc/accelops-gpu-exporter/web-config.yml", "template": "web-config.yml.j2",
                       "group": "accelops-gpu-exporter", "mode": "0640", "secret": True}
    textfile = BATCH[KEYS["textfile"]]["files"]
    assert [entry["dest"] for entry in textfile] == [http[0]["dest"], http[1]["dest"], http[4]["dest"]]
    assert BATCH[KEYS["node_exporter"]]["node_exporter_files"] == [
        {"dest": "/etc/default/prometheus-node-exporter", "template": "prometheus-node-exporter.j2"}]
