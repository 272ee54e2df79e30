# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes filters (GPU Feature Discovery's node labels from the GPU facts, Node Feature Discovery's feature file;
internal: the health check's and the maintenance's cordons), each documented in its own <name>.yml."""

from __future__ import annotations

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import KubernetesError, LabelError
from ansible_collections.accelops.gpu.plugins.plugin_utils._filters import filter_errors

# Each filter imports its plugin_utils module inside the function, not with the file: Ansible's Jinja plugin loader
# imports every filter file of the collection in every worker process at the first lookup of any filter, and a task
# that asks none of these filters should not pay for them (docs/performance.md).


@filter_errors("gpu_feature_labels", LabelError)
def gpu_feature_labels(facts, mig_strategy="none", *, machine=None, sharing_strategy="none", replicas=1,
                       rename_by_default=False):
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _gpu_labels

    return _gpu_labels.gpu_feature_labels(facts, mig_strategy, machine=machine, sharing_strategy=sharing_strategy,
                                          replicas=replicas, rename_by_default=rename_by_default)


@filter_errors("nfd_feature_file", LabelError)
def nfd_feature_file(labels, expiry=None):
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _gpu_labels

    return _gpu_labels.nfd_feature_file(labels, expiry)


@filter_errors("_kubernetes_health_actions", KubernetesError)
def _kubernetes_health_actions(listing, verdicts, cordon_on="critical"):
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _kubernetes_health

    return _kubernetes_health.health_actions(listing, verdicts, cordon_on)


@filter_errors("_kubectl_steps", KubernetesError)
def _kubectl_steps(actions, kubectl="kubectl", kubeconfig=""):
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _kubernetes_health

    return _kubernetes_health.kubectl_steps(actions, kubectl, kubeconfig)


@filter_errors("_kubernetes_maintenance", KubernetesError)
def _kubernetes_maintenance(listing, node, action, reason=None, *, scope="", kubectl="kubectl", kubeconfig=""):
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _kubernetes_health

    return _kubernetes_health.maintenance_action(listing, node, action, reason, scope=scope, kubectl=kubectl,
                                                 kubeconfig=kubeconfig)


@filter_errors("_kubernetes_gpu_pods", KubernetesError)
def _kubernetes_gpu_pods(listing):
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _kubernetes_health

    return _kubernetes_health.gpu_pods(listing)


class FilterModule:
    def filters(self):
        return {"gpu_feature_labels": gpu_feature_labels, "nfd_feature_file": nfd_feature_file,
                "_kubernetes_health_actions": _kubernetes_health_actions, "_kubectl_steps": _kubectl_steps,
                "_kubernetes_maintenance": _kubernetes_maintenance, "_kubernetes_gpu_pods": _kubernetes_gpu_pods}
