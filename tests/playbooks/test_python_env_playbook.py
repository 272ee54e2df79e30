"""The internal python_env role's venv entry point, which every framework role and the spark role install through,
run on this machine: a pinned release the index does not have stops the play in one line that names the requirement
and says what pip said and what became of the environment."""

from __future__ import annotations

import json
import subprocess
import sys

from simnode import ansible_env, expose_collection

expose_collection()

PLAYBOOK = """
- name: An environment from an index without the release asked for
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Read this machine's Python
      ansible.builtin.setup:
        gather_subset: ["!all", "!min", "python", "distribution"]
    - name: Install into its own environment
      ansible.builtin.include_role:
        name: accelops.gpu.python_env
        tasks_from: venv
      vars:
        python_env_path: %(venv)s
        python_env_requirements: [pyspark==9.9.9]
        python_env_pip_args: [--no-index, --find-links, %(wheels)s]
        python_env_os_packages: false
        python_env_what: Spark (pyspark 9.9.9)
"""

INVENTORY = "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n      ansible_python_interpreter: %s\n" \
    % sys.executable


def run(tmp_path, venv, *args):
    """ansible-playbook's exit status and its output on one line, the role run with ARGS."""
    (tmp_path / "wheels").mkdir(exist_ok=True)
    (tmp_path / "inventory.yml").write_text(INVENTORY)
    (tmp_path / "venv.yml").write_text(PLAYBOOK % {"venv": venv, "wheels": tmp_path / "wheels"})
    done = subprocess.run(["ansible-playbook", "-i", "inventory.yml", "venv.yml", *args],
                          cwd=tmp_path, env=ansible_env(), capture_output=True, text=True, check=False)
    return done.returncode, " ".join((done.stdout + done.stderr).replace("\\n", "\n").split())


def test_a_release_the_index_does_not_have_is_one_clear_error(tmp_path):
    venv = tmp_path / "env"
    returncode, out = run(tmp_path, venv)
    assert returncode == 2, out[-3000:]
    message = json.loads(out.split("FAILED! => ", 1)[1].split("} ", 1)[0] + "}")["msg"]
    assert message.startswith(
        "pip could not install Spark (pyspark 9.9.9) (pyspark==9.9.9) into %s: " % venv), message
    assert "No matching distribution found for pyspark==9.9.9" in message, message
    assert "The environment was not there before, and holds none of them if pip made it." in message, message
    assert "stdout:" not in message and ":stderr:" not in message, message
    # The environment pip made is there, without pyspark.
    assert (venv / "bin" / "activate").is_file()
    assert not list(venv.glob("lib/python*/site-packages/pyspark*"))

    # Again on the environment now there: said as such.
    returncode, out = run(tmp_path, venv)
    assert returncode == 2, out[-3000:]
    assert "The environment was there before; pip installs nothing when it cannot find every requirement." in out


def test_check_mode_on_a_new_environment_says_it_would_install(tmp_path):
    returncode, out = run(tmp_path, tmp_path / "env", "--check")
    assert returncode == 0, out[-3000:]
    assert "changed=1" in out, out[-3000:]
    assert not (tmp_path / "env").exists()


def test_credentials_in_a_requirement_are_not_shown(tmp_path):
    # A wheel behind a login, at an address where nothing listens: pip's error names the requirement.
    wheel = "foo @ https://deploy:s3cr3t-t0ken@127.0.0.1:1/foo-1.0-py3-none-any.whl"
    returncode, out = run(tmp_path, tmp_path / "env", "-e", json.dumps({
        "python_env_requirements": [wheel], "python_env_pip_args": ["--no-index", "--retries", "0", "--timeout", "1"]}))
    assert returncode == 2, out[-3000:]
    message = json.loads(out.split("FAILED! => ", 1)[1].split("} ", 1)[0] + "}")["msg"]
    assert "(foo @ https://****@127.0.0.1:1/foo-1.0-py3-none-any.whl) into" in message, message
    assert "s3cr3t-t0ken" not in out, out[-3000:]
