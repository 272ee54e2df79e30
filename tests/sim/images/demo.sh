#!/usr/bin/env bash
# make demo: start a simulated 8-GPU DGX H100 node (Debian 12 container, systemd as PID 1, the dgx-h100 NVML
# fixture), run playbooks/site.yml against it exactly as against a real server (NVIDIA's repository, the driver and
# the CUDA toolkit come from the local signed mirror, whose driver library package brings the fake NVML; PyTorch and
# TensorFlow from the local wheelhouse, as their CPU builds: the fake NVML runs no CUDA code), and show what it found.
# The node is also a one-node Slurm cluster (DEMO_SLURM=no leaves Slurm out): slurmctld and slurmd from Debian 12,
# slurmd with the node's GPUs, and then `sinfo` and one job that asks Slurm for two GPUs. Last, a few series of the
# node's GPU exporter for Prometheus (accelops.gpu.gpu_monitoring).
# The node keeps running afterwards for a look around (`docker exec -it accelops-demo-dgx-h100 bash`);
# the next `make demo` replaces it.
set -euo pipefail

root=$(cd "$(dirname "$0")/../../.." && pwd)
node=${DEMO_NODE:-accelops-demo-dgx-h100}
image=accelops-sim/debian12:latest
fixture=${DEMO_FIXTURE:-dgx-h100}
slurm=${DEMO_SLURM:-yes}
case $slurm in yes | no) ;; *) echo "demo.sh: DEMO_SLURM must be yes or no, not '$slurm'" >&2; exit 2 ;; esac
work="$root/build/demo"
mirror=$("$root/tests/sim/mirror/mirror.sh" url)
key=$(cat "$root/build/mirror/cuda/fingerprint")
# The driver release the fixture reports as loaded, when the mirror carries it; else the newest of branch 550.
loaded=$(sed -n 's/^driver_version=//p' "$root/tests/sim/nvml/fixtures/$fixture.conf")
if ls "$root"/build/mirror/cuda/repos/debian12/x86_64/libnvidia-ml1_"$loaded"-1_*.deb >/dev/null 2>&1; then
  branch=${loaded%%.*} version=$loaded
else
  branch=550 version=""
fi
# The mirror's CUDA toolkits are 12.4 and 12.8; driver 550 runs up to 12.4.
if [ "$branch" = 550 ]; then cuda=12.4; else cuda=12.8; fi

mkdir -p "$work" "$root/build/collections/ansible_collections/accelops"
ln -sfn "$root" "$root/build/collections/ansible_collections/accelops/gpu"

docker rm -f "$node" >/dev/null 2>&1 || true
# The node's name resolves to 127.0.0.1, where its slurmctld and slurmd listen (the host's network).
docker run -d --name "$node" --hostname "$node" --network host --add-host "$node:127.0.0.1" --tmpfs /run --tmpfs /run/lock \
  -v /sys/fs/cgroup:/sys/fs/cgroup:ro \
  "$image" /lib/systemd/systemd >/dev/null

if [ "$slurm" = yes ]; then
  controllers="
    slurm_controllers:
      hosts:
        $node:"
else
  controllers=""
fi
cat >"$work/inventory.yml" <<YAML
all:
  children:
    gpu_nodes:
      hosts:
        $node:
          ansible_connection: community.docker.docker
          ansible_python_interpreter: /usr/bin/python3
          accelops_sim_fixture: $fixture$controllers
  vars:
    # The simulated node installs nvidia-ml-py from the local mirror, reads PCI devices from its fake sysfs and the
    # driver's MIG capabilities from its fake /proc.
    nvml_python_index_url: ""
    nvml_python_find_links: ["$mirror/wheels/"]
    accelops_gpu_sysfs_root: /etc/accelops-sim/sys
    accelops_gpu_procfs_root: /etc/accelops-sim/proc
    # dkms and the kernels' headers from the mirror's stand-in of Debian's archive.
    accelops_sim_mirror: $mirror
    # NVIDIA's repository layout from the local mirror, signed with its throw-away key.
    cuda_repo_base_url: $mirror/cuda/repos
    cuda_repo_key_fingerprint: $key
    cuda_repo_key_name: $(tr 'A-F' 'a-f' <<<"${key: -8}").pub
    nvidia_driver_branch: "$branch"
    nvidia_driver_version: "$version"
    cuda_toolkit_versions: ["$cuda"]
    # The frameworks' CPU builds from the local wheelhouse only (tests/sim/mirror/wheelhouse.sh fills it).
    pytorch_channel: cpu
    pytorch_index_url: ""
    pytorch_find_links: ["$mirror/wheelhouse/"]
    tensorflow_variant: cpu
    tensorflow_index_url: ""
    tensorflow_find_links: ["$mirror/wheelhouse/"]
    # Slurm's daemons on 127.0.0.1 (the node is its own controller).
    slurm_node_address: 127.0.0.1
    # The GPU exporter for Prometheus, on the host's network: on 127.0.0.1 only.
    gpu_monitoring_listen: 127.0.0.1:9400
YAML

export ANSIBLE_COLLECTIONS_PATH="$root/build/collections" ANSIBLE_HOME="$root/.ansible"
export ANSIBLE_DISPLAY_SKIPPED_HOSTS=false ANSIBLE_NOCOLOR=1
echo "== preparing the simulated node $node ($fixture)"
ansible-playbook -i "$work/inventory.yml" "$root/tests/sim/host/prepare-node.yml" >"$work/prepare.log" ||
  { tail -n 30 "$work/prepare.log"; exit 1; }
echo "== ansible-playbook -i $work/inventory.yml playbooks/site.yml"
ansible-playbook -i "$work/inventory.yml" -e "accelops_gpu_report_dir=$root/build/demo-report" "$root/playbooks/site.yml" |
  tee "$work/site.log"
# The report and the frameworks' proof scroll by long before the run ends: once more, together.
echo "== what site.yml found on $node (the whole run: $work/site.log)"
awk '/^TASK \[Show each GPU and the GPU topology\]/ {on = 1; next}
  on && /^}/ {on = 0}
  on && /^        "/ {sub(/^        "/, "  "); sub(/",?$/, ""); print}' "$work/site.log"
awk '/^TASK \[accelops[.]gpu[.](pytorch|tensorflow) : Show the validation\]/ {on = 1; next}
  on && /"msg":/ {sub(/^ *"msg": "/, "  "); sub(/"$/, ""); print; on = 0}' "$work/site.log"
if [ "$slurm" = yes ]; then
  echo "== the Slurm cluster: docker exec $node sinfo -N -o '%N %P %T %c %m %G'"
  docker exec "$node" sinfo -N -o '%N %P %T %c %m %G' | sed 's/^/  /'
  # One job that asks for two of the node's GPUs: Slurm picks them and names them in CUDA_VISIBLE_DEVICES; the job
  # reads their names and UUIDs through NVML.
  echo "== one GPU job: docker exec $node srun --gres=gpu:2 ..."
  docker exec "$node" srun --gres=gpu:2 --ntasks=1 --time=1 /opt/accelops-gpu/nvml/bin/python -c '
import os, pynvml
pynvml.nvmlInit()
seen = os.environ["CUDA_VISIBLE_DEVICES"]
print("job %s on %s: CUDA_VISIBLE_DEVICES=%s" % (os.environ["SLURM_JOB_ID"], os.environ["SLURMD_NODENAME"], seen))
for index in seen.split(","):
    handle = pynvml.nvmlDeviceGetHandleByIndex(int(index))
    print("  GPU %s: %s %s" % (index, pynvml.nvmlDeviceGetName(handle), pynvml.nvmlDeviceGetUUID(handle)))
' | sed 's/^/  /'
fi
# What Prometheus would scrape from the node: a few of the exporter's series.
echo "== the GPU exporter for Prometheus: http://127.0.0.1:9400/metrics (a few of its series)"
docker exec "$node" /opt/accelops-gpu/nvml/bin/python -c '
import urllib.request
text = urllib.request.urlopen("http://127.0.0.1:9400/metrics", timeout=30).read().decode()
lines = [line for line in text.splitlines() if not line.startswith("#")]
node = ("accelops_gpu_nvml_up", "accelops_gpu_count", "accelops_gpu_health_status", "accelops_gpu_scrape_duration")
gpu0 = ("DCGM_FI_DEV_GPU_TEMP{", "DCGM_FI_DEV_POWER_USAGE{", "DCGM_FI_DEV_FB_USED{")  # labels in name order: gpu anywhere
print("\n".join(line for line in lines
                if line.startswith(node) or (line.startswith(gpu0) and "gpu=\"0\"" in line and "GPU_I_ID" not in line)))
print("(%d series in all)" % len(lines))
' | sed 's/^/  /'
echo "== the fleet report: $root/build/demo-report/fleet.html (its data: fleet.json beside it)"
# What the report says of the node, checked: every GPU of the fixture OK with its figures and, in the Slurm cluster,
# the node's state as Slurm has it. A report that cannot say so fails the demo.
python3 - "$root/build/demo-report/fleet.json" "$root/tests/sim/nvml/fixtures/$fixture.conf" "$slurm" <<'PY' | sed 's/^/  /'
import json, sys
report = json.load(open(sys.argv[1]))
fixture = dict(line.split("=", 1) for line in open(sys.argv[2]).read().splitlines() if "=" in line and not line.startswith("#"))
wanted = int(fixture["gpu_count"]) if "gpu_count" in fixture else None
problems = []
for node in report["nodes"]:
    slurm = node["slurm"]
    print("%s: %s, %d GPUs, Slurm: %s" % (node["name"], node["status"].upper(), len(node["gpus"]),
                                          (slurm["state"] or slurm["problem"]) if slurm else "not in Slurm"))
    for gpu in node["gpus"]:
        print("  GPU %s %s: %s, %s/%s MiB, %s/%s W, %s C" % (
            gpu["index"], gpu["name"], gpu["status"].upper(), gpu["memory_used_mib"], gpu["memory_total_mib"],
            gpu["power_draw_w"], gpu["power_limit_w"], gpu["temperature_c"]))
        if gpu["status"] != "ok" or None in (gpu["memory_total_mib"], gpu["power_draw_w"], gpu["temperature_c"]):
            problems.append("GPU %s is %s: %s" % (gpu["index"], gpu["status"], gpu["status_text"]))
        elif gpu["temperature_c"] != int(fixture["gpu.%s.temperature_c" % gpu["index"]]):
            problems.append("GPU %s: %s C, the fixture says %s" % (gpu["index"], gpu["temperature_c"],
                                                                 fixture["gpu.%s.temperature_c" % gpu["index"]]))
    if wanted is not None and len(node["gpus"]) != wanted:
        problems.append("%d GPUs in the report, the fixture has %d" % (len(node["gpus"]), wanted))
    if sys.argv[3] == "yes" and not (slurm and slurm["state"]):
        problems.append("the report does not name the node's Slurm state")
    problems.extend(f["message"] for f in node["findings"])
if problems:
    print("the report is not what the node has: " + "; ".join(problems))
    sys.exit(1)
PY
echo "== the node is still running: docker exec -it $node bash   (remove it: docker rm -f $node)"
