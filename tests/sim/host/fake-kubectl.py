"""A recorded stand-in for kubectl (no API server runs here), for the tests of playbooks/kubernetes_health.yml and
playbooks/upgrade_driver.yml.

It keeps a cluster in two JSON files: FAKE_KUBE_STATE, the nodes (a list of Node objects), and FAKE_KUBE_PODS, the pods
(a list of Pod objects; absent: none), and answers in the shape of kubectl 1.31's output:
  get nodes [--field-selector metadata.name=N] --output json     a List of Node objects
  get pods --all-namespaces --field-selector spec.nodeName=N --output json
  cordon N, uncordon N                                            spec.unschedulable
  annotate [--overwrite] node N KEY=VALUE | KEY-                   metadata.annotations, as the API server checks it
  drain N --ignore-daemonsets --delete-emptydir-data --timeout=Ts cordons, evicts every pod of N but a DaemonSet's
                                                                  and a static pod's mirror (kubectl skips those);
                                                                  a pod labelled fake-kubectl/pdb=block is refused
                                                                  (a PodDisruptionBudget) and the drain fails
NotFound for an unknown node, as the API server says it. Every command is recorded, one JSON list per line, in
FAKE_KUBE_LOG; a command not listed here fails with status 2.
"""

import json
import os
import sys


def load(path, default):
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    return default


def save(path, value):
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(value, handle)


def main(argv):
    state_path, pods_path = os.environ["FAKE_KUBE_STATE"], os.environ.get("FAKE_KUBE_PODS", "")
    with open(os.environ["FAKE_KUBE_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps(argv) + "\n")
    if argv[:1] == ["--kubeconfig"]:
        argv = argv[2:]
    nodes = load(state_path, None)
    pods = load(pods_path, [])

    def node(name):
        for item in nodes:
            if item["metadata"]["name"] == name:
                return item
        sys.stderr.write('Error from server (NotFound): nodes "%s" not found\n' % name)
        sys.exit(1)

    def listing(items):
        print(json.dumps({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}))
        return 0

    if argv == ["get", "nodes", "--output", "json"]:
        return listing(nodes)
    if argv[:3] == ["get", "nodes", "--field-selector"] and argv[4:] == ["--output", "json"]:
        name = argv[3].partition("metadata.name=")[2]
        return listing([item for item in nodes if item["metadata"]["name"] == name])
    if argv[:4] == ["get", "pods", "--all-namespaces", "--field-selector"] and argv[5:] == ["--output", "json"]:
        name = argv[4].partition("spec.nodeName=")[2]
        return listing([item for item in pods if item["spec"].get("nodeName") == name])
    if len(argv) == 2 and argv[0] in ("cordon", "uncordon"):
        item = node(argv[1])
        if argv[0] == "cordon":
            item["spec"]["unschedulable"] = True
        else:
            item["spec"].pop("unschedulable", None)
        print("node/%s %s" % (argv[1], argv[0] + "ed"))
    elif argv[:1] == ["annotate"] and argv[-3] == "node":
        item = node(argv[-2])
        key, _sep, value = argv[-1].partition("=")
        notes = item["metadata"].setdefault("annotations", {})
        if key.endswith("-") and not value:
            notes.pop(key[:-1], None)
        elif key in notes and "--overwrite" not in argv:
            sys.stderr.write("error: --overwrite is false but found the following declared annotation(s): '%s'\n" % key)
            return 1
        else:
            notes[key] = value
        print("node/%s annotated" % argv[-2])
    elif argv[:1] == ["drain"] and argv[2:4] == ["--ignore-daemonsets", "--delete-emptydir-data"] \
            and argv[4].startswith("--timeout="):
        item = node(argv[1])
        item["spec"]["unschedulable"] = True
        evicted, blocked = [], []
        for pod in pods:
            owners = pod["metadata"].get("ownerReferences") or []
            mirror = "kubernetes.io/config.mirror" in (pod["metadata"].get("annotations") or {})
            if pod["spec"].get("nodeName") != argv[1] or mirror or any(o.get("kind") == "DaemonSet" for o in owners):
                continue
            if (pod["metadata"].get("labels") or {}).get("fake-kubectl/pdb") == "block":
                blocked.append(pod)
                sys.stderr.write("error when evicting pods/\"%s\" -n \"%s\" (will retry after 5s): Cannot evict pod "
                                 "as it would violate the pod's disruption budget.\n"
                                 % (pod["metadata"]["name"], pod["metadata"].get("namespace", "default")))
            else:
                evicted.append(pod)
                print("pod/%s evicted" % pod["metadata"]["name"])
        save(pods_path, [pod for pod in pods if pod not in evicted])
        save(state_path, nodes)
        if blocked:
            sys.stderr.write("There are pending pods in node \"%s\" when an error occurred: "
                             "global timeout reached: %s\n" % (argv[1], argv[4].partition("=")[2]))
            return 1
        print("node/%s drained" % argv[1])
    else:
        sys.stderr.write("fake kubectl: not recorded: %r\n" % argv)
        return 2
    save(state_path, nodes)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
