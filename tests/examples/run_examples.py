"""Run every example of the collection's documentation as it would be pasted: the EXAMPLES of each plugin under
plugins/ and the YAML plays of README.md.

Each example runs on a host of its own named after it (example_<plugin>, readme_<n>), all in one ansible-playbook
run: on this machine over a local connection, against the fake NVML (a copy of a fixture per example, so an example
that changes GPU settings changes only its copy) and a sysfs made for that fixture. Registered variables and facts
belong to a host, so an example cannot use what another one left behind (nor gather_facts' facts: none are
gathered), and a failing example names itself in the recap while the others still run.

What runs differently from a paste on a GPU node is said in SETUP below, example by example, with the reason:
  check   run in check mode (it would install packages or restart services on this machine)
  skip    not run, only loaded with the rest (it needs a program that a GPU or Slurm node has and this machine has
          not): its tasks are imported, so their modules and keywords must exist
  paths   directories moved under the work directory (it writes under /etc)
  fixture another NVML fixture than dgx-h100
  fixture_edit  lines of the fixture's copy replaced (a state the example's own steps lead to on a real node)
  fabric  the sysfs of an RDMA fabric (tests/sim/host/mkfabric.py) instead of the GPUs' alone
  programs  programs put first on PATH that print what a node's own print (slurmd -C, sacct)
  alone   in a play of its own, after the others (it reads every host of its play: run_once, ansible_play_hosts);
          when it fails, the plays after it do not run and their examples count as failed
An example of a plugin that SETUP does not name runs as it stands; a name in SETUP without an example fails.
Every example with `become: true` runs without it (this machine runs the tests as the user who started them and has no
sudo): the inventory sets `ansible_become: false`.

Usage: python tests/examples/run_examples.py WORKDIR [--ansible-playbook PATH] [--python PATH] [--fakenvml DIR]
  ANSIBLE_COLLECTIONS_PATH as set (the installed collection in tests/compat.sh), else build/collections (the checkout).
  Exit status 0 when every example ran; the playbook's output is in WORKDIR/examples.log.
Another ansible-core (a container's, say) runs it with --ansible-playbook and --python (the nodes' Python, which needs
nvidia-ml-py), or from Python:
run_examples(workdir, ansible_playbook="ansible-playbook", python=sys.executable, fakenvml=build/fakenvml) returns
(returncode, output, failed) where failed lists the hosts (examples) that did not run to their end.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "sim" / "nvml" / "fixtures"
FAKENVML_DIR = ROOT / "build" / "fakenvml"

# What slurmd -C prints on a DGX H100 (Slurm 24.11), and sacct for the day of the examples' window.
_SLURMD_C = {"slurmd": "NodeName=dgx01 CPUs=224 Boards=1 SocketsPerBoard=2 CoresPerSocket=56 ThreadsPerCore=2 "
                       "RealMemory=2063937\nUpTime=12-03:04:05\n"}
_SACCT = {"sacct": (ROOT / "tests" / "sim" / "slurm" / "sacct-24.11.txt").read_text(encoding="utf-8")}
# scontrol of a controller with two idle DGX H100 nodes: `show node` prints them, `update` takes any change.
_SCONTROL_IDLE = {"scontrol": "#!/bin/sh\n[ \"$1\" = update ] && exit 0\ncat <<'EOF'\n%sEOF\n" % "".join(
    "NodeName=%s Arch=x86_64 CoresPerSocket=56 Gres=gpu:nvidia_h100_80gb_hbm3:8 State=IDLE ThreadsPerCore=2\n" % name
    for name in ("gpu01", "gpu02"))}
_SLURM_WHY = "runs Slurm's commands: programs that print what they print on a Slurm node"
_FABRIC = "reads the InfiniBand devices of a node"
# What runs differently from a paste, and why (see the docstring). Keys: plugins/<type>/<name>.py or README.md#<n>
# (the n-th YAML play of the README, from 1).
SETUP = {
    "plugins/modules/gpu_cdi.py": {"skip": "needs the driver's device nodes (/dev/nvidia*) and libraries, which only a "
                                           "node with the driver has (tests/unit/plugins/modules/test_gpu_cdi.py and "
                                           "molecule's gpu_settings scenario run it on a simulated node)"},
    "plugins/modules/container_runtime.py": {"skip": "changes the container runtimes' configuration of the machine it "
                                                     "runs on (/etc/docker, /etc/containerd): "
                                                     "tests/unit/plugins/modules/test_container_runtime.py and "
                                                     "molecule's gpu_settings scenario run it on files of their own"},
    "plugins/modules/apt_mirror.py": {"skip": "downloads from NVIDIA's repository and signs with a site's key: "
                                              "tests/unit/plugins/modules/test_apt_mirror.py and molecule's airgap "
                                              "scenario run it against the test mirror"},
    "plugins/modules/gpu_mig.py": {"fixture_edit": {"gpu.*.mig.current=0": "gpu.*.mig.current=1",
                                                    "gpu.*.mig.pending=0": "gpu.*.mig.pending=1"},
                                   "why": "MIG mode is on already, as after the GPU reset its first task asks for"},
    "plugins/modules/ib_facts.py": {"fabric": True, "why": _FABRIC},
    "plugins/modules/node_files.py": {"skip": "puts the gpu_settings role's templates in place and restarts its "
                                              "systemd service: it runs inside that role (molecule's gpu_settings "
                                              "scenario)"},
    "plugins/filter/nccl_env.py": {"fabric": True, "why": _FABRIC},
    "plugins/filter/_ipoib_problems.py": {"fabric": True, "why": _FABRIC},
    "plugins/filter/nfd_feature_file.py": {"paths": {"/etc/kubernetes/": "etc/kubernetes/"},
                                           "why": "writes NFD's feature file under /etc"},
    "plugins/filter/node_file_paths.py": {"paths": {"/etc/accelops-gpu": "etc/accelops-gpu",
                                                    "/usr/local/": "usr/local/"},
                                          "why": "writes the boot part's files under /etc and /usr/local"},
    "plugins/filter/_file_matches.py": {"paths": {"/etc/": "etc/"}, "why": "writes /etc/app.conf"},
    "plugins/filter/fleet_report_model.py": {"alone": True, "why": "reads every host of its play"},
    "plugins/filter/fleet_report_html.py": {"alone": True, "paths": {"/var/tmp/": "var/tmp/"},
                                            "why": "reads every host of its play; writes the report"},
    "plugins/filter/torch_cuda_channel.py": {"check": "installs torch from download.pytorch.org"},
    "plugins/filter/_pip_unmet.py": {"check": "installs nvidia-ml-py from PyPI into /opt/app/venv"},
    "plugins/filter/_alternatives_set.py": {"check": "would point /usr/local/cuda of this machine elsewhere"},
    "plugins/filter/_running_units.py": {"skip": "starts a service: needs systemd as PID 1"},
    "plugins/filter/gpu_waste_model.py": {"programs": _SACCT, "why": _SLURM_WHY},
    "plugins/filter/gpu_waste_html.py": {"programs": _SACCT, "paths": {"/var/tmp/": "var/tmp/"}, "why": _SLURM_WHY},
    "plugins/filter/slurm_hardware.py": {"programs": _SLURMD_C, "why": _SLURM_WHY},
    "plugins/filter/slurm_node_gres.py": {"programs": _SLURMD_C, "why": _SLURM_WHY},
    "plugins/filter/slurm_node_line.py": {"programs": _SLURMD_C, "why": _SLURM_WHY},
    "plugins/filter/slurm_gres_conf.py": {"programs": _SLURMD_C, "paths": {"/etc/slurm/": "etc/slurm/"},
                                          "why": _SLURM_WHY},
    "plugins/filter/_slurm_gres_mismatch.py": {"skip": "needs slurmd -G, which detects the GPUs of a Slurm node with "
                                                       "the configuration being written"},
    "plugins/filter/_slurm_maintenance.py": {"programs": _SCONTROL_IDLE, "why": _SLURM_WHY},
    "plugins/filter/_slurm_health_actions.py": {"programs": _SCONTROL_IDLE, "why": _SLURM_WHY},
    "plugins/filter/_slurm_node_problems.py": {"programs": _SCONTROL_IDLE, "why": _SLURM_WHY},
    "plugins/filter/_slurm_foreign_scripts.py": {"skip": "reads /etc/slurm/slurm.conf, which only a Slurm node has"},
    "plugins/filter/_kubernetes_health_actions.py": {"skip": "needs kubectl and a Kubernetes cluster"},
    "plugins/filter/_kubernetes_maintenance.py": {"skip": "needs kubectl and a Kubernetes cluster"},
    "plugins/filter/_kubernetes_gpu_pods.py": {"skip": "needs kubectl and a Kubernetes cluster"},
    "plugins/filter/_dcgm_diag_problems.py": {"skip": "needs NVIDIA DCGM (dcgmi) and its host engine"},
    "plugins/filter/_dkms_unbuilt.py": {"skip": "needs DKMS, which the driver's packages bring"},
    "plugins/filter/_apt_outdated.py": {"skip": "installs the driver's packages, which only NVIDIA's CUDA repository "
                                                "among apt's sources offers"},
    "plugins/filter/_kernel_headers_missing.py": {"skip": "installs kernel headers of kernels this machine does not "
                                                          "have"},
    "plugins/filter/_key_download_problem.py": {"skip": "downloads from a mirror (mirror.example) the tests cannot "
                                                        "reach"},
    "plugins/filter/_signing_key_problems.py": {"skip": "reads the key file that the download of "
                                                        "_key_download_problem's example stores"},
}


# Names every example may use without defining them: Ansible's own variables and Jinja's and Ansible's globals.
MAGIC = {"ansible_facts", "inventory_hostname", "inventory_hostname_short", "hostvars", "groups", "ansible_host",
         "ansible_play_hosts", "ansible_play_hosts_all", "ansible_check_mode", "omit", "lookup", "query", "q", "now",
         "dict", "range", "lipsum", "namespace", "undef"}
EXPRESSIONS = ("when", "that", "failed_when", "changed_when", "until")


def plugin_examples(path):
    """EXAMPLES of a plugin file, as text, or None."""
    for node in ast.parse(Path(path).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "EXAMPLES":
            return node.value.value
    return None


def readme_blocks():
    """The YAML code blocks of README.md, parsed."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [yaml.safe_load(block) for block in re.findall(r"^```yaml\n(.*?)^```", text, re.M | re.S)]


def collect():
    """Every example: a dict of key, text (the tasks as YAML) and play (the play's keywords other than tasks)."""
    found = []
    for path in sorted(ROOT.glob("plugins/*/*.py")):
        text = plugin_examples(path)
        if text is not None:
            found.append({"key": str(path.relative_to(ROOT)), "text": text, "play": {}})
    plays = [block for block in readme_blocks() if isinstance(block, list)]
    for number, play in enumerate(plays, 1):
        keywords = {key: value for key, value in play[0].items() if key not in ("hosts", "tasks")}
        found.append({"key": "README.md#%d" % number, "text": yaml.safe_dump(play[0]["tasks"], sort_keys=False),
                      "play": keywords})
    return found


def host_name(key):
    if key.startswith("README.md#"):
        return "readme_" + key.split("#")[1]
    return "example_" + re.sub(r"\W", "_", Path(key).stem.lstrip("_"))


def walk_tasks(tasks):
    for task in tasks:
        yield task
        for section in ("block", "rescue", "always"):
            yield from walk_tasks(task.get(section) or [])


def strings(value, key=None):
    """(the key that holds it, the string) for every string in a task's value."""
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for name, item in value.items():
            yield from strings(item, name)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item, key)


def _anything(*args, **kwargs):
    return None


class _Anything(dict):
    """Every filter and test name, for a Jinja environment that only parses."""

    def __contains__(self, name):
        return True

    def get(self, name, default=None):
        return _anything

    def __missing__(self, name):
        return _anything


def undefined_names(tasks):
    """The variables the tasks read that none of them defines (register, set_fact, vars, a loop's item), that Ansible
    does not give and that are not read through `default`: what a pasted example would miss."""
    from jinja2 import Environment, meta, nodes

    env = Environment()
    env.filters = env.tests = _Anything()
    defined, used = set(MAGIC), set()
    for task in walk_tasks(tasks):
        defined.update([task["register"]] if "register" in task else [])
        defined.update(task.get("vars") or {})
        defined.update(task.get("ansible.builtin.set_fact") or {})
        if "loop" in task or "with_items" in task:
            defined.add((task.get("loop_control") or {}).get("loop_var", "item"))
        for key, value in task.items():
            if key in ("block", "rescue", "always"):
                continue
            for inner, found in strings(value, key):
                text = "{{ %s }}" % found if inner in EXPRESSIONS and "{{" not in found else found
                if "{{" in text or "{%" in text:
                    with warnings.catch_warnings():  # a regex's backslashes in a Jinja string (Ansible's too)
                        warnings.simplefilter("ignore", DeprecationWarning)
                        tree = env.parse(text)
                    used |= meta.find_undeclared_variables(tree)
                    defined |= {node.node.name for node in tree.find_all(nodes.Filter)
                                if node.name in ("default", "d") and isinstance(node.node, nodes.Name)}
    return sorted(used - defined)


def make_sysfs(python, fixture, target, fabric):
    if fabric:
        command = [python, str(ROOT / "tests/sim/host/mkfabric.py"), "--peermem", "dgx-h100", str(target)]
    else:
        command = [python, str(ROOT / "tests/sim/host/mksysfs.py"), str(fixture), str(target)]
    subprocess.run(command, check=True, capture_output=True)


def build(workdir, python=sys.executable):
    """Write WORKDIR/inventory.yml and WORKDIR/examples.yml (with each example's fixture copy and sysfs); returns
    the examples, each with its host."""
    workdir = Path(workdir).resolve()
    examples = collect()
    keys = {example["key"] for example in examples}
    stale = sorted(set(SETUP) - keys)
    if stale:
        raise SystemExit("examples: SETUP names examples that do not exist: %s" % ", ".join(stale))
    hosts, not_run, shared, alone = {}, [], [], []
    for example in examples:
        setup = SETUP.get(example["key"], {})
        host = example["host"] = host_name(example["key"])
        place = workdir / host
        shutil.rmtree(place, ignore_errors=True)
        place.mkdir(parents=True)
        text = example["text"]
        for old, new in setup.get("paths", {}).items():
            text = text.replace(old, "%s/%s" % (place, new))
            (place / new if new.endswith("/") else (place / new).parent).mkdir(parents=True, exist_ok=True)
        (place / "tasks.yml").write_text(text, encoding="utf-8")
        if "skip" in setup:
            not_run.append({"name": "Load %s, which is not run" % example["key"],
                            "ansible.builtin.import_tasks": str(place / "tasks.yml"), "tags": ["never"]})
            continue
        fixture = place / "nvml.conf"
        values = (FIXTURES / ("%s.conf" % setup.get("fixture", "dgx-h100"))).read_text(encoding="utf-8")
        for old, new in setup.get("fixture_edit", {}).items():
            if old not in values:
                raise SystemExit("examples: %s: the fixture has no line %s" % (example["key"], old))
            values = values.replace(old, new)
        fixture.write_text(values, encoding="utf-8")
        make_sysfs(python, fixture, place / "sys", setup.get("fabric", False))
        search = os.environ.get("PATH", os.defpath)
        if setup.get("programs"):
            (place / "bin").mkdir()
            for name, printed in setup["programs"].items():
                script = printed if printed.startswith("#!") else "#!/bin/sh\ncat <<'EOF'\n%sEOF\n" % printed
                (place / "bin" / name).write_text(script, encoding="utf-8")
                (place / "bin" / name).chmod(0o755)
            search = "%s:%s" % (place / "bin", search)
        hosts[host] = {"example_fixture": str(fixture), "example_sysfs": str(place / "sys"), "example_path": search,
                       "example_tasks": str(place / "tasks.yml"), "example_check": "check" in setup}
        if "alone" in setup:
            alone.append((example["key"], host))
        else:
            shared.append(host)
    keywords = {"gather_facts": False,
                "environment": {"FAKE_NVML_FIXTURE": "{{ example_fixture }}", "PATH": "{{ example_path }}"},
                "module_defaults": {"group/accelops.gpu.sysfs": {"sysfs_root": "{{ example_sysfs }}"}}}
    # The free strategy runs each host's tasks as soon as its previous one ends: the hosts' examples side by side.
    plays = [dict({"name": "The examples, each on a host of its own", "hosts": ":".join(shared) or "none",
                   "strategy": "free"}, **keywords,
                  tasks=[{"name": "Run the example", "ansible.builtin.include_tasks": {
                      "file": "{{ example_tasks }}", "apply": {"check_mode": "{{ example_check }}"}}}])]
    plays += [dict({"name": "Example %s, in a play of its own" % key, "hosts": host}, **keywords,
                   tasks=[{"name": "Run the example",
                           "ansible.builtin.import_tasks": str(workdir / host / "tasks.yml")}])
              for key, host in alone]
    plays.append({"name": "The examples that are not run (loaded only)", "hosts": "localhost", "gather_facts": False,
                  "tasks": not_run or [{"name": "None", "ansible.builtin.meta": "noop"}]})
    inventory = {"all": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": python,
                                  "ansible_become": False, "ansible_host": "127.0.0.1"},
                         "hosts": hosts}}
    (workdir / "inventory.yml").write_text(yaml.safe_dump(inventory), encoding="utf-8")
    (workdir / "examples.yml").write_text(yaml.safe_dump(plays, sort_keys=False, width=1000), encoding="utf-8")
    return examples


def run_examples(workdir, ansible_playbook="ansible-playbook", python=sys.executable, fakenvml=FAKENVML_DIR):
    """Build the playbook and run it with the given ansible-playbook, the nodes' Python and the directory of the fake
    libnvidia-ml.so.1; returns (returncode, output, failed hosts)."""
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    build(workdir, python)
    env = dict(os.environ)
    if "ANSIBLE_COLLECTIONS_PATH" not in env:
        link = ROOT / "build" / "collections" / "ansible_collections" / "accelops" / "gpu"
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(ROOT, target_is_directory=True)
        env["ANSIBLE_COLLECTIONS_PATH"] = str(ROOT / "build" / "collections")
    env.setdefault("ANSIBLE_HOME", str(workdir / "ansible-home"))
    # A longer poll than the default 1 ms: the free strategy's loop otherwise takes a core from the examples.
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_INTERNAL_POLL_INTERVAL="0.02",
               LD_LIBRARY_PATH=str(fakenvml))
    done = subprocess.run([ansible_playbook, "-i", "inventory.yml", "examples.yml"],
                          cwd=workdir, env=env, capture_output=True, text=True, check=False, timeout=600)
    output = done.stdout + done.stderr
    (workdir / "examples.log").write_text(output, encoding="utf-8")
    # A host that ran its example to the end has a recap line without failures; one whose play never ran (a play
    # of its own after one whose every host failed) has none.
    recap = dict(re.findall(r"^(\S+)\s+: (ok=.*)$", output, re.M))
    finished = {host for host, counts in recap.items() if not re.search(r"(unreachable|failed)=[1-9]", counts)}
    hosts = yaml.safe_load((workdir / "inventory.yml").read_text(encoding="utf-8"))["all"]["hosts"]
    failed = sorted(set(hosts) - finished)
    return done.returncode, output, failed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("workdir")
    parser.add_argument("--ansible-playbook", default="ansible-playbook")
    parser.add_argument("--python", default=sys.executable, help="the nodes' Python (with nvidia-ml-py)")
    parser.add_argument("--fakenvml", default=str(FAKENVML_DIR), help="the directory of the fake libnvidia-ml.so.1")
    args = parser.parse_args()
    returncode, output, failed = run_examples(args.workdir, args.ansible_playbook, args.python, args.fakenvml)
    if returncode != 0 or failed:
        print(output[-6000:])
        print("examples: failed: %s (the whole output: %s/examples.log)" % (", ".join(failed) or "the run",
                                                                            args.workdir))
        return 1
    print("examples: every example ran (%s/examples.log)" % args.workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
