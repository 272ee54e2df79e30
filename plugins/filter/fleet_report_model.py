# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.fleet_report_model; its code is in plugin_utils/_report_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_report_model
short_description: A GPU fleet report's content from each node's facts
version_added: 0.1.0
description:
  - Gathers what the nodes of a GPU fleet reported into one model (JSON-serialisable) for
    P(accelops.gpu.fleet_report_html#filter) or any other rendering. It runs on the controller and reads only what
    it is given.
  - Judges each node's GPUs with the policy of M(accelops.gpu.gpu_health) (its findings are those of the facts'
    C(health), recomputed from the facts so that facts gathered without the C(health) subset are judged too), with
    the node's C(expected_gpu_count) where it is given. An NVML error in the facts is always a finding. A node
    without GPU facts, with facts that lack what health needs (the C(state), C(ecc), C(thermal), C(clocks),
    C(nvlink) and C(pcie) subsets, or the C(errors) of an older gpu_facts), where NVML is not usable and the PCI bus
    was not listed, or whose facts hold values that are not what the modules return (text where a number belongs,
    NaN or infinity, a negative count; each is left out, null, and named in a C(facts_malformed) finding), is
    C(unknown), never C(ok). A node without a GPU is a warning (C(no_gpu)) unless its C(expected_gpu_count) is 0.
  - Also finds an RDMA port whose link is up but that is not C(ACTIVE) (warning), a Slurm state such as C(DOWN),
    C(FAIL) or not responding, or a Slurm node whose state could not be learnt (warning), and a failed framework
    validation (critical).
  - Statuses rank C(critical), C(warning), C(unknown), C(ok); nodes and findings come worst first, then by node name
    (C(gpu2) before C(gpu10)).
  - Version drift compares, per GPU model, each node's driver and CUDA driver version, each GPU's VBIOS and each
    node's O(_input) C(versions); per HCA model (C(hca_type)), each HCA's firmware. Each field gives the value most
    have (the newest on a tie) and the odd ones out with their nodes.
  - Validation figures (matmul TFLOP/s, all-reduce bus bandwidth) stand beside nominal peaks of the GPU model from a
    small table of datasheet figures (dense, no sparsity), marked as nominal. The float32 matmul is compared with
    FP32 for PyTorch and with TF32 for TensorFlow (each framework's default), the low-precision one with BF16 or
    FP16 as it ran. The all-reduce is compared with the NVLink bandwidth of one GPU in one direction where a link is
    up, else with the GPU's PCIe link at its maximum generation and width. Nothing is judged on these figures.
  - The model holds no time; P(accelops.gpu.fleet_report_html#filter) takes the time of the report.
positional: _input, unreachable, failed
options:
  _input:
    description:
      - One entry per node, by name, each a dict of optional keys.
      - C(nvidia), the C(ansible_facts.nvidia) of M(accelops.gpu.gpu_facts).
      - C(ib), the C(ansible_facts.infiniband) of M(accelops.gpu.ib_facts).
      - C(validation), by framework (C(pytorch), C(tensorflow)), the facts C(pytorch_validation) and
        C(tensorflow_validation) that the P(accelops.gpu.pytorch#role) and P(accelops.gpu.tensorflow#role) roles
        set.
      - C(slurm), the node's C(state) (as C(scontrol) or C(sinfo) prints it) and C(reason), as
        P(accelops.gpu.slurm_node_states#filter) gives them; a null C(state) with a C(problem) (the controller could
        not be asked, or does not know the node) is a warning. Without C(slurm) the node is shown as not in Slurm.
      - C(versions), software versions by name (such as C(cuda_toolkit), C(pytorch), C(tensorflow), C(nccl)).
      - C(expected_gpu_count), as M(accelops.gpu.gpu_health) takes it (a whole number, 0 or more, or its digits);
        fewer GPUs is critical.
    type: dict
    required: true
  unreachable:
    description: The nodes the play could not reach, by name, each with the reason.
    type: dict
  failed:
    description: The nodes on which a task failed, by name, each with the reason.
    type: dict
seealso:
  - plugin: accelops.gpu.fleet_report_html
    plugin_type: filter
  - module: accelops.gpu.gpu_facts
  - module: accelops.gpu.ib_facts
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Gather GPU facts
  accelops.gpu.gpu_facts:

- name: Keep what each node reports
  ansible.builtin.set_fact:
    fleet_node:
      nvidia: "{{ ansible_facts.nvidia | default(none) }}"
      ib: "{{ ansible_facts.infiniband | default(none) }}"
      validation:
        pytorch: "{{ pytorch_validation | default(none) }}"
        tensorflow: "{{ tensorflow_validation | default(none) }}"

# {"summary": {"nodes": 3, "reporting": 2, "unreachable": 1, "gpus": 16, "health": {"critical": 1, "ok": 1,
#  "unknown": 1, "warning": 0}, ...}, "findings": [{"node": "gpu02", "gpu": 3, "code": "gpu_lost",
#  "severity": "critical", "message": "GPU 3 is lost: it fell off the bus or stopped answering"}, ...], ...}
- name: Make the fleet report's model
  ansible.builtin.set_fact:
    fleet_model: >-
      {{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'fleet_node')))
         | accelops.gpu.fleet_report_model(unreachable=dict(ansible_play_hosts_all | difference(ansible_play_hosts)
                                                             | product(['did not answer or failed']))) }}
  run_once: true
"""

RETURN = r"""
_value:
  description: The model of the report.
  type: dict
  contains:
    summary:
      description:
        - C(nodes) (all, lost ones included), C(reporting), C(unreachable), C(failed), C(gpus), C(drift_fields) (how
          many fields have an odd one out).
        - C(gpu_models), each C(model), C(gpus) and C(nodes), most GPUs first.
        - C(health) and C(gpu_health), how many nodes and GPUs are C(ok), C(unknown), C(warning), C(critical); a
          lost node without facts counts as C(unknown).
        - C(findings), how many findings are C(critical), C(warning) and C(unknown).
      type: dict
    findings:
      description: Every finding of the fleet, worst first, each with C(node), C(gpu) (null for the node),
        C(code), C(severity) and C(message).
      type: list
      elements: dict
    drift:
      description:
        - One group per GPU model (C(scope) C(gpu_model)) and per HCA model (C(scope) C(hca_model)), with
          C(model), C(label) and C(fields).
        - Each field has C(field) (C(driver_version), C(cuda_driver_version), C(vbios_version), C(fw_ver) or
          C(versions.<name>)), C(label), C(unit) (C(node), C(gpu) or C(hca)), C(majority), C(majority_count),
          C(total), C(tie), C(drift), and C(odd), each odd value with C(count), C(nodes) and C(members) (C(node),
          with C(gpu) or C(device) where the field is per GPU or per HCA).
      type: list
      elements: dict
    nodes:
      description:
        - One record per node of O(_input), worst first, with C(name), C(status), C(findings), C(facts) (whether
          GPU facts were given), C(driver_loaded), C(reason), C(driver_version), C(cuda_driver_version),
          C(nvml_version), C(gpu_count), C(model) (the model most of its GPUs are), C(slurm), C(versions).
        - C(gpus), each with index, name, uuid, serial, pci_bus_id, vbios_version, lost, C(status), C(status_text),
          C(codes), memory_used_mib, memory_total_mib, power_draw_w, power_limit_w, the temperatures, ECC errors,
          remapped rows, C(nvlink) (C(active), C(total), C(down)), C(pcie) (current and maximum generation and
          width), mig_mode and C(nearest_hca) (C(devices) and C(path) from the RDMA facts).
        - C(topology), C(gpus) (the labels) and C(matrix) as M(accelops.gpu.gpu_facts) gives it; null without one.
        - C(rdma), C(devices) (name, hca_type, family, fw_ver, board_id, pci_bus_id, numa_node, ports) and
          C(peermem_loaded); null without RDMA facts.
        - C(validation), one entry per framework with C(framework), C(version), C(failure), C(gpu_count),
          C(built_cuda), C(built_nccl), C(statement), C(model) and C(figures), each with C(metric), C(label),
          C(unit), C(measured), C(nominal), C(nominal_basis) and C(ratio) (measured over nominal).
      type: list
      elements: dict
    unreachable:
      description: The nodes of O(unreachable), by name, each with C(name) and C(reason).
      type: list
      elements: dict
    failed:
      description: The nodes of O(failed), by name, each with C(name) and C(reason).
      type: list
      elements: dict
    nominal:
      description: The nominal figures behind the comparisons, C(models) (the table's rows for the fleet's GPU
        models, each with its C(source)), C(pcie_lane_gbps) and C(pcie_source).
      type: dict
"""


def fleet_report_model(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._report_filters import (
        fleet_report_model as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"fleet_report_model": fleet_report_model}
