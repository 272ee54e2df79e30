# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the errors of the controller's shared code that the filters turn into
AnsibleFilterError, apart from the code that raises them, so that a filter file names them without importing it."""

from __future__ import annotations


class CompatError(ValueError):
    """A version the tables cannot answer for; the message names what was given and the nearest valid choice."""


class ReportError(ValueError):
    """Input from which no report can be made; the message says which."""


class SlurmError(ValueError):
    """Input from which Slurm's view of a node cannot be told; the message names the GPU or the field."""


class NodeFilesError(ValueError):
    """An entry of accelops.gpu.node_files that cannot be put in place; the message names the field."""


class LabelError(ValueError):
    """Facts from which no true node label can be made, or a label Kubernetes would refuse; the message says which."""


class KubernetesError(ValueError):
    """Input from which no decision about a Kubernetes node can be made; the message names the field."""
