#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_files
short_description: Put a role's files on a node in one task, writing only what differs
version_added: 0.1.0
description:
  - Each entry of O(files) is one destination on the node and what it should be; a role declares its files once, as
    data, and one task puts them all in place.
  - Templates, role files and the collection's module_utils are read and rendered on the controller; then one call on
    the node reads every destination, compares it with what it should be, and writes only what differs. A converged
    node costs one round trip for all of a role's files.
  - A file is written to a temporary file in its own directory and renamed over the old one, so that a reader never
    sees half of it. A directory or a link is made or corrected in place.
  - Every entry is checked before anything is written (absolute and distinct destinations, a file's or link's
    directory that exists or that an earlier entry makes, owners and groups that exist on the node, modes, nothing
    in the way such as a directory where a file belongs, nothing beneath an earlier entry's file or link or beneath
    a path that is not a directory, text that is UTF-8, a link target shorter than PATH_MAX). The directories above
    a destination are taken as they are, links among them followed, as M(ansible.builtin.copy) does. A write that
    fails part-way fails the task with the paths it had already changed in RV(changed_paths).
  - This is an action plugin with a module on the node. The node's side needs nothing beyond Python.
extends_documentation_fragment:
  - accelops.gpu.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: A changed text file shows its old and new text; other changes show the kind, mode, owner, group and link.
  idempotent:
    support: full
options:
  files:
    description:
      - The destinations, in the order they are put in place. Each has O(files[].dest) and exactly one of
        O(files[].template), O(files[].file), O(files[].module_utils), O(files[].program), O(files[].content),
        O(files[].base64), O(files[].directory) and O(files[].link).
    type: list
    elements: dict
    required: true
    suboptions:
      dest:
        description:
          - The absolute path on the node, named once in O(files). A destination that is a link is replaced, not
            followed.
        type: str
        required: true
      template:
        description:
          - A Jinja2 template found as M(ansible.builtin.template) finds its O(ansible.builtin.template#module:src)
            (the role's C(templates/) first), rendered on the controller with the task's variables.
        type: str
      file:
        description:
          - A file found as M(ansible.builtin.copy) finds its O(ansible.builtin.copy#module:src) (the role's
            C(files/) first), put as it is. It must be UTF-8 text.
        type: str
      module_utils:
        description:
          - Names of the collection's module_utils (such as C(_gpu_config)) that a program on the node imports. They
            and every module_util they import in turn are installed under O(files[].dest) as the namespace package
            tree C(ansible_collections/accelops/gpu/plugins/module_utils/), so that a program with O(files[].dest) on
            its C(sys.path) imports them as the collection's modules do. What they import is worked out from their
            own imports; one that imports Ansible is refused, as a node program runs without it.
          - The directories of the tree get O(directory_mode); the files O(files[].mode) or O(mode).
        type: list
        elements: str
      program:
        description:
          - One of the collection's node programs (C(node_programs/NAME.py), such as C(apply-gpu-settings)), put at
            O(files[].dest) with O(files[].mode) or C(0755). The collection's module_utils it imports, and every one
            they import in turn, are installed under O(files[].lib) as O(files[].module_utils) installs them, so that
            what is shipped is what the program imports.
        type: str
      lib:
        description:
          - With O(files[].program), the directory its module_utils go under (the program's C(--lib)). Required when
            the program imports any.
        type: str
      content:
        description:
          - The file's text, as given.
        type: str
      base64:
        description:
          - The file's bytes as base64 text, for a file that is not text (a key such as munge's). Decoded on the node;
            with O(files[].secret), neither the text nor its checksum is shown.
        type: str
      directory:
        description:
          - C(true) makes O(files[].dest) a directory. Missing directories above it are made with it, with its mode
            and owners, as M(ansible.builtin.file) makes them; a directory that exists keeps its own.
        type: bool
      link:
        description:
          - Makes O(files[].dest) a symbolic link to this path. A file or link in its place is replaced; a directory
            is not.
        type: str
      secret:
        description:
          - C(true) keeps the file's text out of C(--diff) and its checksum out of the result (a password hash, a
            key); the diff shows only that the file changes, and a template that fails to render says so without
            the error's text, which could quote the secret. Its text goes to the node as base64, an argument the
            module keeps out of the node's log, as C(no_log) does.
        type: bool
        default: false
      owner:
        description:
          - The owner's user name; O(owner) when not given, and left as it is when neither is.
          - In check mode an owner or group that does not exist yet (an earlier task of the run makes it) shows as a
            change with a warning, not as an error.
        type: str
      group:
        description:
          - The group's name; O(group) when not given, and left as it is when neither is.
        type: str
      mode:
        description:
          - Three or four octal digits as a quoted string (C("0644")); O(mode) for a file and O(directory_mode) for a
            directory when not given. A link has no mode of its own.
        type: str
  known:
    description:
      - An earlier read of the destinations in this run, the C(files) of M(accelops.gpu.node_probe) (give it the paths
        of P(accelops.gpu.node_file_paths#filter)). Where that read finds every destination as wanted (kind, owner,
        group, mode, link target, and the SHA-1 of the rendered content), the task is decided on the controller and
        the node is not called; otherwise the node is read and written as without it.
      - The read must be of this run and before anything else wrote these paths; a read that is stale says
        "unchanged" for what changed since.
    type: dict
  owner:
    description:
      - The owner of every entry that names none.
    type: str
  group:
    description:
      - The group of every entry that names none.
    type: str
  mode:
    description:
      - The mode of every file that names none.
    type: str
    default: "0644"
  directory_mode:
    description:
      - The mode of every directory that names none, and of the directories of a O(files[].module_utils) tree.
    type: str
    default: "0755"
seealso:
  - module: ansible.builtin.template
  - module: ansible.builtin.copy
  - module: ansible.builtin.file
  - module: accelops.gpu.node_probe
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Install the boot part of the GPU settings
  accelops.gpu.node_files:
    owner: root
    group: root
    files:
      - dest: /etc/accelops-gpu
        directory: true
      - dest: /etc/accelops-gpu/gpu-settings.json
        template: gpu-settings.json.j2
      - dest: /usr/local/libexec/accelops-gpu
        directory: true
      - dest: /usr/local/libexec/accelops-gpu/apply-gpu-settings
        program: apply-gpu-settings
        lib: /usr/local/lib/accelops-gpu
      - dest: /etc/systemd/system/accelops-gpu-settings.service
        template: accelops-gpu-settings.service.j2
  register: boot_files

- name: Restart the service when its configuration changed
  ansible.builtin.systemd_service:
    name: accelops-gpu-settings.service
    state: restarted
    daemon_reload: true
  when: "'/etc/accelops-gpu/gpu-settings.json' in boot_files.changed_paths"
"""

RETURN = r"""
changed_paths:
  description: The destinations that were changed (or, in check mode, would be), in the order of O(files).
  returned: always
  type: list
  elements: str
  sample: [/etc/accelops-gpu/gpu-settings.json]
read:
  description: C(known) where the task was decided from O(known) without a call on the node, C(node) otherwise.
  returned: success
  type: str
  sample: known
files:
  description: Each destination as it was put in place, in order.
  returned: success
  type: list
  elements: dict
  contains:
    dest:
      description: The path.
      type: str
    state:
      description: C(file), C(directory) or C(link).
      type: str
    changed:
      description: Whether it was changed.
      type: bool
    differs:
      description: What differed before (C(created), C(kind), C(content), C(target), C(mode), C(owner), C(group)).
      type: list
      elements: str
    checksum:
      description: The SHA-1 of a file's content.
      type: str
      returned: for files not marked O(files[].secret)
  sample:
    - {dest: /etc/accelops-gpu, state: directory, changed: false, differs: []}
    - {dest: /etc/accelops-gpu/gpu-settings.json, state: file, changed: true, differs: [content],
       checksum: 0b9f5f0e3dd0a8e1c2d1f7a3b7a5c0c2ff0d4a11}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.accelops.gpu.plugins.module_utils._files import FilesError, PartialError, apply

ENTRY = dict(
    dest=dict(type="str", required=True),
    template=dict(type="str"),
    file=dict(type="str"),
    module_utils=dict(type="list", elements="str"),
    program=dict(type="str"),
    lib=dict(type="str"),
    content=dict(type="str"),
    base64=dict(type="str", no_log=True),
    secret=dict(type="bool", default=False),
    directory=dict(type="bool"),
    link=dict(type="str"),
    owner=dict(type="str"),
    group=dict(type="str"),
    mode=dict(type="str"),
)
ARGUMENT_SPEC = dict(
    files=dict(type="list", elements="dict", required=True, options=ENTRY),
    owner=dict(type="str"),
    group=dict(type="str"),
    mode=dict(type="str", default="0644"),
    directory_mode=dict(type="str", default="0755"),
    known=dict(type="dict"),
)
# What the action plugin turns into content on the controller; the node is never given these.
CONTROLLER_ONLY = ("template", "file", "module_utils", "program", "lib")


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    entries = []
    for entry in module.params["files"]:
        given = [key for key in CONTROLLER_ONLY if entry.get(key) is not None]
        if given:
            module.fail_json(msg="%s: %s is read on the controller by the accelops.gpu.node_files action; it cannot "
                                 "be given to the node" % (entry["dest"], given[0]), changed_paths=[])
        entries.append(dict(entry, owner=entry["owner"] or module.params["owner"],
                            group=entry["group"] or module.params["group"],
                            mode=entry["mode"] or (module.params["directory_mode"] if entry.get("directory")
                                                   else module.params["mode"])))
    try:
        changed, diffs, results = apply(entries, check_mode=module.check_mode, want_diff=module._diff)
    except PartialError as error:
        module.fail_json(msg="%s; changed before it: %s" % (error, ", ".join(error.changed) or "nothing"),
                         changed=bool(error.changed), changed_paths=error.changed)
    except FilesError as error:
        module.fail_json(msg="%s; nothing was changed" % error, changed_paths=[])
    for found in results:
        for missing in found.get("missing", []):
            module.warn("%s: %s does not exist on this node yet; check mode counts it as a change that an earlier "
                        "task of the run would make possible" % (found["dest"], missing))
    result = dict(changed=bool(changed), changed_paths=changed, files=results)
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
