"""accelops.gpu.node_files against ansible.builtin.template, copy and file on the same entries, on this machine (a
local connection, two trees under a temporary directory): check mode says changed and writes nothing for both, the
real run leaves the same files with the same modes, --diff shows the same text change, and a second run changes
nothing for both. One node_files task does in one module run what the builtins do in one run per entry."""

from __future__ import annotations

import ast
import json
import os
import re
import stat
import subprocess
import sys

import pytest

from simnode import ROOT, ansible_env, expose_collection

expose_collection()

ROLE_TEMPLATE = """# {{ ansible_managed }}
{% for gpu in gpus %}
gpu {{ gpu }} power {{ power }}
{% endfor %}
name={{ template_destpath | basename }}
"""

BUILTINS = """
    - name: Builtin directory
      ansible.builtin.file: {path: "{{ builtin }}/etc", state: directory, mode: "0750"}
    - name: Builtin template
      ansible.builtin.template: {src: settings.j2, dest: "{{ builtin }}/etc/settings.conf", mode: "0640"}
    - name: Builtin copy of a file
      ansible.builtin.copy: {src: apply.py, dest: "{{ builtin }}/apply", mode: "0755"}
    - name: Builtin content
      ansible.builtin.copy: {content: "inline\\n", dest: "{{ builtin }}/etc/inline", mode: "0600"}
    - name: Builtin link
      ansible.builtin.file: {src: "{{ builtin }}/apply", dest: "{{ builtin }}/apply-link", state: link, force: true}
"""

NODE_FILES = """
    - name: node_files
      accelops.gpu.node_files:
        files:
          - {dest: "{{ ours }}/etc", directory: true, mode: "0750"}
          - {dest: "{{ ours }}/etc/settings.conf", template: settings.j2, mode: "0640"}
          - {dest: "{{ ours }}/apply", file: apply.py, mode: "0755"}
          - {dest: "{{ ours }}/etc/inline", content: "inline\\n", mode: "0600"}
          - {dest: "{{ ours }}/apply-link", link: "{{ ours }}/apply"}
      register: ours_result
    - name: Show what node_files reported
      ansible.builtin.debug: {msg: "NODE_FILES {{ ours_result | to_json }}"}
"""


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    work = tmp_path_factory.mktemp("node_files")
    (work / "templates").mkdir()
    (work / "templates" / "settings.j2").write_text(ROLE_TEMPLATE)
    (work / "files").mkdir()
    (work / "files" / "apply.py").write_text("#!/usr/bin/python3\nprint('apply')\n")
    (work / "builtin").mkdir()
    (work / "ours").mkdir()
    (work / "inventory.yml").write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
                                        "      ansible_python_interpreter: %s\n" % sys.executable)
    for name, tasks in (("builtin", BUILTINS), ("ours", NODE_FILES)):
        (work / ("%s.yml" % name)).write_text(
            "- hosts: all\n  gather_facts: false\n  vars:\n    builtin: %s/builtin\n    ours: %s/ours\n"
            "    gpus: [0, 1]\n  tasks:%s" % (work, work, tasks))
    return work


def play(work, name, *args, power=400):
    out = subprocess.run(["ansible-playbook", "-i", str(work / "inventory.yml"), str(work / ("%s.yml" % name)),
                          "-e", "power=%d" % power, *args],
                         cwd=work, env=ansible_env(ANSIBLE_STDOUT_CALLBACK="default"), capture_output=True,
                         text=True, check=False, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    recap = re.search(r"localhost\s+: ok=(\d+)\s+changed=(\d+)", out.stdout)
    return out.stdout, int(recap.group(2))


def tree(root):
    """Every path under root (relative), with its kind, mode, and content or link target (the link's own target
    relative to root, so that two trees compare)."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            info = os.lstat(path)
            relative = os.path.relpath(path, root)
            if stat.S_ISLNK(info.st_mode):
                found[relative] = ("link", os.path.relpath(os.readlink(path), root))
            elif stat.S_ISDIR(info.st_mode):
                found[relative] = ("directory", oct(stat.S_IMODE(info.st_mode)))
            else:
                with open(path, "rb") as handle:
                    found[relative] = ("file", oct(stat.S_IMODE(info.st_mode)), handle.read())
    return found


def diff_lines(stdout):
    """The +/- lines of the text diffs a run printed."""
    return sorted(line for line in stdout.splitlines()
                  if re.match(r"^[-+](?![-+]{2})", line) and "Ansible managed" not in line)


def node_files_result(stdout):
    return json.loads(re.search(r'"msg": "NODE_FILES (.*)"\n', stdout).group(1).encode().decode("unicode_escape"))


def test_same_as_the_builtins(workdir):
    """Check mode, the real run, the converged run and a changed template, each for both ways."""
    # Check mode: both say changed and neither writes anything.
    for name in ("builtin", "ours"):
        _out, changed = play(workdir, name, "--check")
        assert changed >= 1, name
        assert tree(workdir / name) == {}, name
    # The real run: the same tree.
    _out, builtin_changed = play(workdir, "builtin")
    out, ours_changed = play(workdir, "ours")
    assert builtin_changed == 5 and ours_changed == 1
    assert tree(workdir / "ours") == tree(workdir / "builtin")
    assert tree(workdir / "ours")["etc/settings.conf"][2].decode().endswith("gpu 1 power 400\nname=settings.conf\n")
    result = node_files_result(out)
    assert result["changed_paths"] == ["%s/ours/%s" % (workdir, path)
                                       for path in ("etc", "etc/settings.conf", "apply", "etc/inline", "apply-link")]
    assert "invocation" not in result
    # Converged: nothing changes, for either.
    for name in ("builtin", "ours"):
        _out, changed = play(workdir, name)
        assert changed == 0, name
    # A changed variable in check mode with --diff: the same text diff, and nothing written.
    before = tree(workdir / "ours")
    builtin_out, builtin_changed = play(workdir, "builtin", "--check", "--diff", power=500)
    ours_out, ours_changed = play(workdir, "ours", "--check", "--diff", power=500)
    assert builtin_changed == 1 and ours_changed == 1
    assert diff_lines(ours_out) == diff_lines(builtin_out) != []
    assert "+gpu 0 power 500" in diff_lines(ours_out)
    assert tree(workdir / "ours") == before
    assert node_files_result(ours_out)["changed_paths"] == ["%s/ours/etc/settings.conf" % workdir]
    # Mode drift alone is put back, and named.
    os.chmod(workdir / "ours" / "apply", 0o644)
    out, changed = play(workdir, "ours")
    assert changed == 1 and stat.S_IMODE(os.stat(workdir / "ours" / "apply").st_mode) == 0o755
    assert node_files_result(out)["changed_paths"] == ["%s/ours/apply" % workdir]


def test_bad_entry_changes_nothing(workdir, tmp_path):
    """A bad entry late in the list fails the task with one message naming it, before the first is written."""
    playbook = tmp_path / "bad.yml"
    playbook.write_text(
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - accelops.gpu.node_files:\n        files:\n"
        "          - {dest: %s/first, content: x}\n          - {dest: %s/second, content: y, mode: 644}\n"
        % (tmp_path, tmp_path))
    out = subprocess.run(["ansible-playbook", "-i", str(workdir / "inventory.yml"), str(playbook)], cwd=workdir,
                         env=ansible_env(), capture_output=True, text=True, check=False, timeout=120)
    assert out.returncode == 2
    assert "files[1] (%s/second).mode must be three or four octal digits" % tmp_path in out.stdout
    assert not (tmp_path / "first").exists()


PROGRAMS = sorted(path.stem for path in (ROOT / "node_programs").glob("*.py"))
# What each program does once its code imports: a call that imports everything it needs and touches no GPU.
PROGRAM_RUNS = {
    "accelops-gpu-exporter": (["--help"], 0, "--web.config.file"),
    "accelops-gpu-spark-discovery": (["--help"], 0, "--min-addresses"),
    "apply-gpu-settings": (["/nonexistent/gpu-settings.json"], 1, "cannot read /nonexistent/gpu-settings.json"),
}


def test_every_node_program_is_exercised():
    assert PROGRAMS and sorted(PROGRAM_RUNS) == PROGRAMS


@pytest.mark.parametrize("name", PROGRAMS)
def test_node_program_runs_on_what_is_shipped(workdir, tmp_path, name):
    """node_files ships a node program and the module_utils it imports; the program then runs in an isolated Python
    whose only copy of the collection is what was shipped, imports nothing from the collection that was not shipped,
    and every shipped module imports there on its own (nothing missing, nothing that needs Ansible)."""
    playbook = tmp_path / "program.yml"
    playbook.write_text("- hosts: all\n  gather_facts: false\n  tasks:\n    - accelops.gpu.node_files:\n"
                        "        files:\n          - {dest: %s/bin/%s, program: %s, lib: %s/lib}\n"
                        "          - {dest: %s/bin, directory: true}\n"
                        % (tmp_path, name, name, tmp_path, tmp_path))
    out = subprocess.run(["ansible-playbook", "-i", str(workdir / "inventory.yml"), str(playbook)], cwd=workdir,
                         env=ansible_env(), capture_output=True, text=True, check=False, timeout=120)
    # The program's directory comes after it in the list: refused, nothing written.
    assert out.returncode == 2 and "its directory %s/bin does not exist" % tmp_path in out.stdout
    assert not (tmp_path / "lib").exists()
    playbook.write_text("- hosts: all\n  gather_facts: false\n  tasks:\n    - accelops.gpu.node_files:\n"
                        "        files:\n          - {dest: %s/bin, directory: true}\n"
                        "          - {dest: %s/bin/%s, program: %s, lib: %s/lib}\n"
                        % (tmp_path, tmp_path, name, name, tmp_path))
    out = subprocess.run(["ansible-playbook", "-i", str(workdir / "inventory.yml"), str(playbook)], cwd=workdir,
                         env=ansible_env(), capture_output=True, text=True, check=False, timeout=120)
    assert out.returncode == 0, out.stdout[-3000:]
    program = tmp_path / "bin" / name
    assert stat.S_IMODE(os.stat(program).st_mode) == 0o755
    assert program.read_bytes() == (ROOT / "node_programs" / ("%s.py" % name)).read_bytes()
    utils = tmp_path / "lib/ansible_collections/accelops/gpu/plugins/module_utils"
    shipped = sorted(path.stem for path in utils.glob("*.py"))
    for module in shipped:
        assert (utils / ("%s.py" % module)).read_bytes() == \
            (ROOT / "plugins" / "module_utils" / ("%s.py" % module)).read_bytes()
    args, code, expected = PROGRAM_RUNS[name]
    run = subprocess.run(
        [sys.executable, "-I", "-c",
         "import runpy, sys; sys.argv = [%r] + %r\n"
         "try:\n    runpy.run_path(%r, run_name='__main__')\n"
         "except SystemExit as e:\n    code = e.code\n"
         "print('MODULES', sorted(m.rsplit('.', 1)[1] for m in sys.modules "
         "if m.startswith('ansible_collections.accelops.gpu.plugins.module_utils.')))\n"
         "print('ANSIBLE', sorted(m for m in sys.modules if m == 'ansible' or m.startswith('ansible.')))\n"
         "sys.exit(code)" % (str(program), ["--lib", str(tmp_path / "lib"), *args], str(program))],
        capture_output=True, text=True, check=False, cwd=tmp_path, timeout=60)
    assert run.returncode == code, run.stdout + run.stderr
    assert expected in run.stdout + run.stderr
    imported = re.search(r"MODULES (.*)", run.stdout).group(1)
    assert set(ast.literal_eval(imported)) <= set(shipped)
    assert "ANSIBLE []" in run.stdout
    for module in shipped:
        source = "import sys; sys.path.insert(0, %r); import ansible_collections.accelops.gpu.plugins.module_utils.%s"
        alone = subprocess.run([sys.executable, "-I", "-c", source % (str(tmp_path / "lib"), module)],
                               capture_output=True, text=True, check=False, timeout=60)
        assert alone.returncode == 0, "%s: %s" % (module, alone.stderr)


def test_decided_from_an_earlier_read(workdir, tmp_path):
    """With known (node_probe's files of the same entries), a converged run is decided without a call on the node
    and a drifted one goes to the node; the paths node_probe reads come from the entries (node_file_paths)."""
    playbook = tmp_path / "known.yml"
    playbook.write_text(
        "- hosts: all\n  gather_facts: false\n  vars:\n    entries:\n"
        "      - {dest: %(t)s/etc, directory: true}\n      - {dest: %(t)s/etc/a, content: \"a\\n\", mode: \"0600\"}\n"
        "      - {dest: %(t)s/bin/apply, program: apply-gpu-settings, lib: %(t)s/lib}\n"
        "      - {dest: %(t)s/link, link: %(t)s/etc/a}\n"
        "  tasks:\n    - {ansible.builtin.file: {path: %(t)s/bin, state: directory, mode: \"0755\"}}\n"
        "    - accelops.gpu.node_probe:\n        files: \"{{ entries | accelops.gpu.node_file_paths }}\"\n"
        "      register: read\n"
        "    - accelops.gpu.node_files:\n        files: \"{{ entries }}\"\n        known: \"{{ read.files }}\"\n"
        "      register: written\n"
        "    - ansible.builtin.debug: {msg: \"NODE_FILES {{ written | to_json }}\"}\n" % {"t": tmp_path})
    reads = []
    for run in range(3):
        out = subprocess.run(["ansible-playbook", "-i", str(workdir / "inventory.yml"), str(playbook)], cwd=workdir,
                             env=ansible_env(), capture_output=True, text=True, check=False, timeout=120)
        assert out.returncode == 0, out.stdout[-3000:]
        result = node_files_result(out.stdout)
        reads.append((result["read"], len(result["changed_paths"])))
        if run == 1:
            os.chmod(tmp_path / "etc" / "a", 0o644)
    # First run: written by the node (the 4 entries stand for 15 paths: the program's lib is 6 directories and 5
    # files); second: decided from the read; third: the mode drift seen in the read, put back by the node.
    assert reads == [("node", 15), ("known", 0), ("node", 1)]
    assert stat.S_IMODE(os.stat(tmp_path / "etc" / "a").st_mode) == 0o600
