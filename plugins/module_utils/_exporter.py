# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the GPU exporter. One scrape reads the node's GPUs the way gpu_facts does
(its collector, one NVML session per scrape, the health verdict included) as prometheus_client metric families (a
Collector), rendered by prometheus_client's generate_latest; the same text is served over HTTP or HTTPS for
Prometheus (GET /metrics; TLS and basic authentication from a web configuration file in the form of Prometheus'
exporter toolkit) or written atomically as a textfile for node_exporter's textfile collector.

A scrape never fails: whatever goes wrong (NVML missing, the driver not loaded, a GPU lost, an exception in the
reading itself) is in the text as accelops_gpu_nvml_up 0 or accelops_gpu_exporter_error_info, with the health verdict
"unknown", not as a crash or an empty page.

Run on the node by its program, node_programs/accelops-gpu-exporter.py (with pynvml and prometheus_client
importable): accelops-gpu-exporter --lib DIR [--listen HOST:PORT [--web.config.file PATH] | --textfile PATH
[--interval SECONDS]] [--hostname NAME] [--hostname-label Hostname|hostname] [--hpc-job-mapping-dir DIR]
[--sysfs-root DIR] [--cdi-spec PATH ... | --no-cdi] [--driver-root DIR] [--proc-root DIR]

With --hpc-job-mapping-dir (dcgm-exporter's option of that name), the series of a GPU that a job holds carry the job's
id in hpc_job (module_utils/_job_map.py reads the directory at every scrape).

The node's CDI specs (by default /etc/cdi/nvidia.yaml and /var/run/cdi/nvidia.yaml, those that exist) are judged against
NVML as gpu_health judges them: a stale or unreadable spec is a warning finding (accelops_gpu_health_finding with a
cdi_* code) and makes the verdict at least "warning". A judgement is made again only when a spec, the driver or the
MIG devices change, or a minute after the last one (CdiJudge).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import concurrent.futures
import ctypes
import email.parser
import hashlib
import http
import http.client
import json
import os
import re
import socket
import ssl
import sys
import tempfile
import threading
import time

try:
    import bcrypt
except ImportError:  # basic_auth_users say that they need it (WebConfig.parse)
    bcrypt = None
try:
    from prometheus_client import CollectorRegistry
except ImportError:  # main() says that the exporter needs it
    CollectorRegistry = None

from ansible_collections.accelops.gpu.plugins.module_utils import _cdi, _job_map
from ansible_collections.accelops.gpu.plugins.module_utils._gpu_facts import GpuFactsCollector, resolve_subsets
from ansible_collections.accelops.gpu.plugins.module_utils._metrics import (
    CONTENT_TYPE,
    HOSTNAME_LABELS,
    Node,
    as_node,
    collect,
    render,
)
from ansible_collections.accelops.gpu.plugins.module_utils._nvml import GpuLost, NvmlCallError, NvmlSession

# Everything the series need, the PCI bus included (the health verdict sees a GPU that NVML no longer lists); not the
# topology, whose pairwise queries no series uses.
SUBSETS = ("all", "!topology")
DEFAULT_LISTEN = ":9400"
MAX_REQUESTS = 4
FRESH_S = 1.0
REQUEST_TIMEOUT_S = 10


# The CDI specs judged by default: where nvidia-ctk and gpu_cdi write them. A judgement stands this long when nothing
# it can see cheaply (the spec files, the driver, the GPUs and MIG devices) has changed.
CDI_SPECS = ("/etc/cdi/nvidia.yaml", "/var/run/cdi/nvidia.yaml")
CDI_RECHECK_S = 60.0

NVML_ERROR_TIMEOUT = 10
XID_EVENT = 0x8  # nvmlEventTypeXidCriticalError


class XidWatcher:
    """XID errors through NVML's event API, counted per GPU (NVML index) and XID code, in a thread of its own.

    Its NVML calls take the scrapes' lock, one at a time (NVML is thread safe; the test double is not, and one call
    at a time costs nothing here): a wait that does not block under the lock, then a pause outside it. A GPU that
    cannot be registered (lost, no permission) is left out of the watch; a failure of the watch itself (NVML gone, no
    GPU to watch) is kept as the watcher's error and the watch starts again a little later. The counts stay, and so
    do the GPUs once watched (a GPU lost after its XID 79 keeps its series), as a Prometheus counter's must.
    """

    def __init__(self, lock, lib=None, poll_s=0.5, retry_s=10.0):
        self.lock = lock
        self.lib = lib
        self.poll_s = poll_s
        self.retry_s = retry_s
        self.counts = {}  # (gpu index, xid) -> count
        self.last = {}  # gpu index -> the last XID code
        self.watched = []  # the GPU indexes registered for XID events
        self.up = False
        self.starts = 0  # watches that registered their GPUs
        self.error = "not started"
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        """Start the watch; a watcher already watching is left as it is (two watches would count each XID twice)."""
        if self._thread is not None and self._thread.is_alive():
            return self
        self._stop.clear()
        self._thread = threading.Thread(target=self.run, name="xid-watcher", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def run(self):
        while not self._stop.is_set():
            try:
                self._watch()
            except Exception as exc:  # pylint: disable=broad-except  # the watch starts again; a scrape says why
                self.error = "%s: %s" % (type(exc).__name__, exc)
            self.up = False
            self._stop.wait(self.retry_s)

    def _watch(self):
        session = NvmlSession(self.lib)
        with self.lock:
            _available, _loaded, reason = session.open()
        if not session.active:
            self.error = reason or "NVML is not available"
            return
        events = None
        try:
            with self.lock:
                events, handles, refused = self._register(session)
            if not handles:
                self.error = "no GPU can be watched for XID events%s" % (
                    ": " + "; ".join(refused) if refused else "")
                return
            self.watched = sorted(set(self.watched) | set(handles.values()))
            self.up, self.error = True, None
            self.starts += 1
            while not self._stop.is_set():
                with self.lock:
                    data = self._next(session, events)
                    if data is not None:
                        self._count(handles.get(_address(data.device)), data)
                # A pause after every event too: a storm of XIDs must not keep the scrapes from the lock.
                self._stop.wait(self.poll_s if data is None else 0.001)
        finally:
            with self.lock:
                if events is not None:
                    try:
                        session.change("nvmlEventSetFree", events)
                    except (NvmlCallError, GpuLost):
                        pass
                session.close()

    def _count(self, gpu, data):
        if gpu is not None and data.eventType & XID_EVENT:
            code = int(data.eventData)
            self.counts[(gpu, code)] = self.counts.get((gpu, code), 0) + 1
            self.last[gpu] = code

    @staticmethod
    def _register(session):
        """An event set with every GPU that offers XID events; returns it, {handle address: GPU index} and why the
        others could not be registered (a lost GPU, no permission)."""
        events = session.change("nvmlEventSetCreate")
        handles, refused = {}, []
        for index in range(session.change("nvmlDeviceGetCount")):
            try:
                handle = session.change("nvmlDeviceGetHandleByIndex", index)
                if (session.call("nvmlDeviceGetSupportedEventTypes", handle) or 0) & XID_EVENT:
                    session.change("nvmlDeviceRegisterEvents", handle, XID_EVENT, events)
                    handles[_address(handle)] = index
            except GpuLost:
                refused.append("GPU %d is lost" % index)
            except NvmlCallError as exc:
                refused.append("GPU %d: %s" % (index, exc))
        return events, handles, refused

    @staticmethod
    def _next(session, events):
        try:
            return session.change("nvmlEventSetWait", events, 0)
        except NvmlCallError as exc:
            if exc.code == NVML_ERROR_TIMEOUT:
                return None
            raise

    def state(self):
        """What a scrape shows: whether the watch runs, why not, the counts and the last XID of each GPU."""
        return {"up": self.up, "error": self.error, "counts": dict(self.counts), "last": dict(self.last),
                "watched": list(self.watched)}


class CdiJudge:
    """gpu_health's findings about the node's CDI specs (warnings: a spec that no longer matches NVML, or that cannot be
    read or judged), for the exporter's readings. A judgement reads each spec and works out the spec the node calls
    for (dozens of file checks): it is made again only when a spec file, the driver or the GPUs' MIG devices change
    (seen from the reading's facts and one stat per spec), or recheck_s after the last one (a device node or a
    library that changed meanwhile); between, the last findings stand."""

    __slots__ = ("_at", "_findings", "_key", "host", "judged", "paths", "recheck_s")

    def __init__(self, paths=CDI_SPECS, host=None, recheck_s=CDI_RECHECK_S):
        self.paths = [os.path.normpath(path) for path in paths]
        self.host = host if host is not None else _cdi.Host("/")
        self.recheck_s = recheck_s
        self.judged = 0
        self._at = self._key = None
        self._findings = []

    def _files(self):
        found = []
        for path in self.paths:
            try:
                info = os.lstat(path)
            except OSError as exc:
                found.append((path, exc.errno))
            else:
                found.append((path, info.st_mode, info.st_ino, info.st_size, info.st_mtime_ns))
        return tuple(found)

    @staticmethod
    def _gpus(facts):
        gpus = []
        for gpu in facts.get("gpus") or []:
            if isinstance(gpu, dict):
                migs = tuple((mig.get("uuid"), mig.get("gpu_instance_id"), mig.get("compute_instance_id"))
                             for mig in gpu.get("mig_devices") or [] if isinstance(mig, dict))
                gpus.append((gpu.get("index"), gpu.get("uuid"), gpu.get("minor_number"), gpu.get("mig_mode"), migs))
        return (facts.get("driver_version"), tuple(gpus))

    def findings(self, session, facts):
        """The findings for this reading (session: its open NvmlSession; facts: what it read)."""
        key = (self._files(), self._gpus(facts))
        now = time.monotonic()
        if key != self._key or self._at is None or now - self._at >= self.recheck_s:
            try:
                self._findings = _cdi.health_findings(self.paths, session, self.host)
            except (GpuLost, NvmlCallError):
                raise  # NVML failing outside the judgement's reading of the GPUs: the reading's error, as before
            except Exception as exc:  # pylint: disable=broad-except  # a judgement that fails never fails the scrape
                self._findings = [_cdi.finding(None, "cdi_unjudged", "warning", "%s cannot be judged: %s: %s" % (
                    ", ".join(self.paths), type(exc).__name__, exc))]
            self._key, self._at = key, now
            self.judged += 1
        return list(self._findings)


def with_cdi(facts, cdi):
    """The facts with the CDI findings in their health verdict (at least "warning" where there is one), as gpu_health
    adds them."""
    if not cdi:
        return facts
    health = facts.get("health") or {}
    status = health.get("status") or "unknown"
    if status == "ok":
        status = "warning"
    return dict(facts, health=dict(health, status=status, findings=list(health.get("findings") or []) + cdi))


def _address(handle):
    return ctypes.cast(handle, ctypes.c_void_p).value


def _lock_of(watcher):
    """The lock every NVML call of the process takes: the watcher's where one watches, else one of its own."""
    return watcher.lock if watcher is not None else threading.Lock()


def _read_with(lock, hostname, sysfs_root, lib, watcher, *, job_map_dir=None, cdi=None):
    """One reading under the lock, with the watcher's XID counts where one watches, as metric families; whatever
    raises on the way is the error page, never an empty answer or a dropped connection."""
    try:
        with lock:
            return read(hostname, sysfs_root, lib, watcher.state() if watcher is not None else None, job_map_dir,
                        cdi=cdi)
    except Exception as exc:  # pylint: disable=broad-except  # a scrape reports its failure, it never ends the exporter
        return failed(hostname, "%s: %s" % (type(exc).__name__, exc))


def _scrape_with(lock, hostname, sysfs_root, lib, watcher, *, job_map_dir=None, cdi=None):
    """_read_with as exposition text."""
    return render(_read_with(lock, hostname, sysfs_root, lib, watcher, job_map_dir=job_map_dir, cdi=cdi))


def read(hostname, sysfs_root="/sys", lib=None, xid=None, job_map_dir=None, *, cdi=None):
    """One reading of the node (hostname: its name or a Node) as metric families (prometheus_client's), with how long
    it took and how many NVML calls it made; with xid (an XidWatcher's state()), the XID errors it counted; with
    job_map_dir, the jobs on each GPU as the job map says after the GPUs were read (a job that ends meanwhile is not
    given a GPU it has left); with cdi (a CdiJudge), its findings about the CDI specs in the health verdict, where
    NVML answered."""
    start = time.monotonic()
    session = NvmlSession(lib)
    try:
        with session:
            facts = GpuFactsCollector(session, resolve_subsets(list(SUBSETS)), sysfs_root).collect()
            if cdi is not None and facts.get("driver_loaded"):
                facts = with_cdi(facts, cdi.findings(session, facts))
        jobs = _job_map.read(job_map_dir) if job_map_dir else None
        out = collect(facts, hostname, xid, jobs=jobs)
    except Exception as exc:  # pylint: disable=broad-except  # a scrape reports its failure, it never ends the exporter
        out = _failed(hostname, "%s: %s" % (type(exc).__name__, exc))
    node = as_node(hostname).labels()
    out.add("accelops_gpu_scrape_duration_seconds", "gauge", "How long this reading of the GPUs took.",
            node, round(time.monotonic() - start, 6))
    out.add("accelops_gpu_scrape_nvml_calls", "gauge", "NVML calls this reading of the GPUs made.",
            node, session.calls)
    return out.families()


def scrape(hostname, sysfs_root="/sys", lib=None, xid=None, job_map_dir=None, *, cdi=None):
    """One reading of the node as exposition text (see read)."""
    return render(read(hostname, sysfs_root, lib, xid, job_map_dir, cdi=cdi))


def _failed(hostname, error):
    facts = {"nvml_available": False, "driver_loaded": False, "reason": "the exporter could not read the GPUs",
             "health": {"status": "unknown", "findings": []}, "errors": []}
    out = collect(facts, hostname)
    out.add("accelops_gpu_exporter_error_info", "gauge", "What went wrong in this reading (always 1).",
            [*as_node(hostname).labels(), ("error", error[:500])], 1)
    return out


def failed(hostname, error):
    """The families of a reading that raised: NVML counts as down, the verdict unknown, and the error said."""
    return _failed(hostname, error).families()


class GpuCollector:
    """A prometheus_client Collector: each collect() is one reading of the GPUs (one NVML session, under the lock
    that the XID watcher shares), or the reading of another request younger than FRESH_S (requests that queued behind
    one share it)."""

    def __init__(self, hostname, sysfs_root="/sys", lib=None, watcher=None, job_map_dir=None, *, cdi=None):
        self.hostname, self.sysfs_root, self.lib, self.watcher = hostname, sysfs_root, lib, watcher
        self.job_map_dir, self.cdi = job_map_dir, cdi
        self.lock = _lock_of(watcher)
        self._fresh = threading.Lock()
        self._at = None
        self._families = None

    def collect(self):
        with self._fresh:
            if self._at is None or time.monotonic() - self._at >= FRESH_S:
                self._families = _read_with(self.lock, self.hostname, self.sysfs_root, self.lib, self.watcher,
                                            job_map_dir=self.job_map_dir, cdi=self.cdi)
                self._at = time.monotonic()
            return list(self._families)


def write_textfile(path, text):
    """Write text to path (a .prom file) at once: a temporary file beside it (a name node_exporter ignores), then
    renamed over it, so that a scrape never reads half a file."""
    if not path.endswith(".prom"):
        raise ValueError("the textfile must end in .prom (node_exporter reads only those), got %r" % path)
    directory = os.path.dirname(os.path.abspath(path))
    # A new file of its own (O_EXCL): never one that another process or a link left under the same name.
    descriptor, temporary = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), suffix=".tmp", dir=directory)
    try:
        # As over HTTP: a character UTF-8 cannot hold (a surrogate from an undecodable path or message) is replaced,
        # not a write that fails at every round.
        with os.fdopen(descriptor, "w", encoding="utf-8", errors="replace") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def textfile_loop(path, hostname, sysfs_root="/sys", lib=None, *, interval=0, rounds=None, watcher=None,
                  job_map_dir=None, cdi=None):
    """Write a reading to path once (interval 0; 1 when it fails), or every interval seconds for ever (or for
    rounds): a write that fails is said on stderr and tried again at the next round, as a service should. With a
    watcher (an XidWatcher), its XID counts are in every reading."""
    lock = _lock_of(watcher)
    done = 0
    while True:
        start = time.monotonic()
        try:
            write_textfile(path, _scrape_with(lock, hostname, sysfs_root, lib, watcher, job_map_dir=job_map_dir,
                                              cdi=cdi))
        except (OSError, ValueError) as exc:
            sys.stderr.write("accelops-gpu-exporter: %s\n" % exc)
            if not interval:
                return 1
        done += 1
        if not interval or (rounds is not None and done >= rounds):
            return 0
        time.sleep(max(0.0, interval - (time.monotonic() - start)))


def parse_listen(value):
    """HOST:PORT, [IPv6]:PORT or :PORT (every address, IPv6 and IPv4) as (host, port); host "" for every address."""
    host, sep, port = value.rpartition(":")
    if not sep or not (port.isascii() and port.isdigit()) or not 1 <= int(port) <= 65535:
        raise ValueError("--listen must be HOST:PORT, [IPv6]:PORT or :PORT with a port from 1 to 65535, got %r" % value)
    if host.startswith("[") or host.endswith("]"):
        if not (host.startswith("[") and host.endswith("]")) or len(host) < 3:
            raise ValueError("--listen: an IPv6 address goes in brackets, [ADDRESS]:PORT, got %r" % value)
        host = host[1:-1]
    elif ":" in host:
        raise ValueError("--listen: an IPv6 address goes in brackets, [ADDRESS]:PORT, got %r" % value)
    if not host.isascii() or any(c.isspace() or c in "[]/" or ord(c) < 32 for c in host):
        raise ValueError("--listen: the host must be an address or a host name, got %r" % value)
    return host, int(port)


def _bind_family(host, port):
    """The address family and address to bind: every address on both IPv6 and IPv4 for "" (IPv4 alone where the
    host has no IPv6), else what the name or address resolves to first."""
    if not host:
        return (socket.AF_INET6, "::") if socket.has_ipv6 and _ipv6_works() else (socket.AF_INET, "0.0.0.0")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise OSError("cannot resolve %s: %s" % (host, exc.strerror)) from None
    family, _type, _proto, _name, address = infos[0]
    return family, address[0]


def _ipv6_works():
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::", 0))
        return True
    except OSError:
        return False


class WebConfigError(ValueError):
    """A web configuration file that cannot be used, and why."""


# bcrypt's modular crypt form, as htpasswd -B and Python's bcrypt write it.
BCRYPT_HASH = re.compile(r"\A\$2[aby]?\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}\Z")
WEB_CONFIG_MAX_BYTES = 1 << 16


class WebConfig:
    """The exporter's web configuration file, in the form of Prometheus' exporter toolkit (--web.config.file):

        {"tls_server_config": {"cert_file": "/etc/.../tls.crt", "key_file": "/etc/.../tls.key"},
         "basic_auth_users": {"prometheus": "$2b$12$..."}}

    written as JSON (YAML's JSON form: the toolkit reads the same file), with # comment lines before it; either part
    may be left out. TLS is 1.2 or
    later, as the toolkit's default. A relative path is taken from the file's directory, as the toolkit does. A key
    that the toolkit knows and this exporter does not (client certificates, cipher suites, HTTP headers) is refused,
    not ignored: a file that asks for more protection than it gets must not start an open exporter."""

    def __init__(self, ssl_context=None, users=None):
        self.ssl_context = ssl_context
        self.users = dict(users or {})
        self._checked = {}  # digest of name, hash and password -> True (bcrypt costs tens of ms; a scrape repeats)
        self._checked_lock = threading.Lock()

    @classmethod
    def load(cls, path):
        where = "--web.config.file %s" % path
        try:
            with open(path, "rb") as handle:
                raw = handle.read(WEB_CONFIG_MAX_BYTES + 1)
        except OSError as exc:
            raise WebConfigError("%s: %s" % (where, exc.strerror or exc)) from None
        if len(raw) > WEB_CONFIG_MAX_BYTES:
            raise WebConfigError("%s: larger than %d bytes" % (where, WEB_CONFIG_MAX_BYTES))
        try:
            # Whole lines that start with # are YAML's comments (the role's header); JSON has none of its own.
            text = "\n".join(line for line in raw.decode("utf-8").splitlines() if not line.lstrip().startswith("#"))
            data = json.loads(text) if text.strip() else {}
        except (UnicodeDecodeError, ValueError) as exc:
            raise WebConfigError("%s: not JSON (YAML's JSON form, which the role writes): %s" % (where, exc)) from None
        return cls.parse(data, os.path.dirname(os.path.abspath(path)), where)

    @classmethod
    def parse(cls, data, base, where="the web configuration"):
        if not isinstance(data, dict):
            raise WebConfigError("%s: must be a mapping, got %s" % (where, type(data).__name__))
        unknown = sorted(set(data) - {"tls_server_config", "basic_auth_users"})
        if unknown:
            raise WebConfigError("%s: unknown or unsupported keys %s (this exporter knows tls_server_config with "
                                 "cert_file and key_file, and basic_auth_users)" % (where, ", ".join(unknown)))
        tls = data.get("tls_server_config") or {}
        users = data.get("basic_auth_users") or {}
        if not isinstance(tls, dict) or sorted(set(tls) - {"cert_file", "key_file"}):
            raise WebConfigError("%s: tls_server_config takes cert_file and key_file only, got %s"
                                 % (where, json.dumps(tls if not isinstance(tls, dict) else sorted(tls))))
        context = None
        if tls:
            files = [tls.get("cert_file"), tls.get("key_file")]
            if not all(isinstance(item, str) and item and _one_line(item) for item in files):
                raise WebConfigError("%s: tls_server_config needs cert_file and key_file, each a path on one line"
                                     % where)
            cert_file, key_file = (os.path.join(base, item) for item in files)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            try:
                context.load_cert_chain(cert_file, key_file)
            except (OSError, ssl.SSLError) as exc:
                raise WebConfigError("%s: cannot load the certificate %s with its key %s: %s"
                                     % (where, cert_file, key_file, exc.strerror or exc)) from None
        if not isinstance(users, dict):
            raise WebConfigError("%s: basic_auth_users must map user names to bcrypt hashes" % where)
        for name, hashed in users.items():
            if not name or ":" in name or not _one_line(name):
                raise WebConfigError("%s: basic_auth_users: %r is not a user name (one line, no colon)" % (where, name))
            if not isinstance(hashed, str) or not BCRYPT_HASH.match(hashed):
                raise WebConfigError("%s: basic_auth_users.%s must be a bcrypt hash ($2b$12$ and 53 characters), not "
                                     "a password" % (where, name))
        if users and bcrypt is None:
            raise WebConfigError("%s: basic_auth_users needs the Python package bcrypt in the exporter's environment"
                                 % where)
        return cls(context, users)

    def authorized(self, header):
        """Whether an Authorization header names a user of the file with its password; always true without users.
        An unknown user costs a bcrypt check too (no hint of which names exist); a right answer is remembered."""
        if not self.users:
            return True
        scheme, _sep, token = (header or "").partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            name, sep, password = base64.b64decode(token.strip(), validate=True).decode("utf-8").partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        if not sep:
            return False
        hashed = self.users.get(name)
        key = hashlib.sha256(b"\0".join(part.encode("utf-8") for part in (name, hashed or "", password))).digest()
        with self._checked_lock:
            if hashed is not None and self._checked.get(key):
                return True
        try:
            good = bcrypt.checkpw(password.encode("utf-8"), (hashed or DUMMY_HASH).encode("ascii"))
        except ValueError:  # bcrypt refuses a password longer than 72 bytes
            good = False
        if good and hashed is not None:
            with self._checked_lock:
                if len(self._checked) >= 64:
                    self._checked.clear()
                self._checked[key] = True
            return True
        return False


# Checked against when the user is unknown, so that an unknown name takes as long as a wrong password.
DUMMY_HASH = "$2b$12$" + "e" * 53


def _one_line(value):
    return isinstance(value, str) and not any(c in value for c in "\n\r\0") and _utf8(value)


# Why not prometheus_client's start_http_server (measured, prometheus_client 0.26.0): its TLS wraps the listening
# socket, so the handshake runs in the thread that accepts: one client that connects and sends nothing stopped every
# scrape (a urllib scrape with a 5 s timeout failed until that client closed; 6 ms alone). Its server also starts a
# thread per connection without limit or timeout, and has no basic authentication; make_wsgi_app answers Prometheus'
# Accept header with OpenMetrics, where counters must end in _total and dcgm-exporter's names do not. So the HTTP side
# is asyncio's (TLS handshakes, slow clients and many connections cost no thread) with prometheus_client's collector
# and generate_latest for the text: at MAX_CONNECTIONS a new connection closes the oldest that has not sent its
# request yet (else itself), the TLS handshake has REQUEST_TIMEOUT_S and the request then one deadline of as long from
# its first byte to the answer's last (not a timeout per read), and readings and password checks run in MAX_REQUESTS
# threads (more at once get 503).
MAX_CONNECTIONS = 64
MAX_HEADER_BYTES = 16384


class ExporterServer:
    """An HTTP(S) server (not yet serving) for /metrics: serve_forever() in one thread, shutdown() from another."""

    def __init__(self, sock, registry, web=None, *, max_connections=None, deadline_s=None, max_requests=None):
        self.socket = sock
        self.server_address = sock.getsockname()
        self.address_family = sock.family
        self.registry = registry
        self.web = web or WebConfig()
        self.max_connections = max_connections or MAX_CONNECTIONS
        self.deadline_s = deadline_s or REQUEST_TIMEOUT_S
        self.max_requests = max_requests or MAX_REQUESTS
        self.connections = 0
        self.requests = 0
        self._waiting = {}  # transport -> True: the connections whose request has not come yet, oldest first
        self._loop = None
        self._stop = None
        self._stopped = threading.Event()
        self._pool = None

    def serve_forever(self):
        try:
            asyncio.run(self._serve())
        finally:
            self._stopped.set()

    def shutdown(self):
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:  # the loop has ended already
                pass
            self._stopped.wait(30)

    def server_close(self):
        self.socket.close()

    async def _serve(self):
        self._loop = asyncio.get_running_loop()
        self._loop.set_exception_handler(_quiet)
        self._stop = asyncio.Event()
        self._pool = concurrent.futures.ThreadPoolExecutor(self.max_requests, thread_name_prefix="scrape")
        tls = {"ssl": self.web.ssl_context, "ssl_handshake_timeout": self.deadline_s} if self.web.ssl_context else {}
        server = await asyncio.start_server(self._connection, sock=self.socket, limit=MAX_HEADER_BYTES,
                                            backlog=self.max_connections, **tls)
        try:
            await self._stop.wait()
        finally:
            server.close()
            self._pool.shutdown(wait=False)

    async def _connection(self, reader, writer):
        """One request on one connection, whatever the client does: it sends its request and reads the answer within
        the deadline, or the connection is closed; a client that goes away is no news. At MAX_CONNECTIONS, a new
        connection closes the oldest one still waiting for its request (a scraper sends its request at once: what
        waits is a slow client), else it is closed itself."""
        if self.connections >= self.max_connections:
            if not self._waiting:
                writer.transport.abort()
                return
            oldest = next(iter(self._waiting))
            del self._waiting[oldest]
            oldest.abort()
        self.connections += 1
        try:
            await asyncio.wait_for(self._request(reader, writer), self.deadline_s)
        except (asyncio.TimeoutError, OSError, EOFError, ValueError, asyncio.IncompleteReadError,
                asyncio.LimitOverrunError):
            pass  # the client was too slow, went away or sent what is not HTTP: nothing to say to it
        except Exception as exc:  # pylint: disable=broad-except  # one request's failure never ends the server
            sys.stderr.write("accelops-gpu-exporter: a request failed: %s: %s\n" % (type(exc).__name__, exc))
        finally:
            self.connections -= 1
            self._waiting.pop(writer.transport, None)
            writer.transport.abort()  # nothing left to send: an answer is closed by _reply, anything else is cut

    async def _request(self, reader, writer):
        self._waiting[writer.transport] = True  # in the order of arrival
        head = await reader.readuntil(b"\r\n\r\n")
        self._waiting.pop(writer.transport, None)
        request_line, _sep, rest = head.decode("iso-8859-1").partition("\r\n")
        parts = request_line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            await self._reply(writer, 400, b"bad request\n")
            return
        method, target, _version = parts
        headers = email.parser.Parser(_class=http.client.HTTPMessage).parsestr(rest)
        if method not in ("GET", "HEAD"):
            await self._reply(writer, 405, b"only GET and HEAD\n", extra=[("Allow", "GET, HEAD")])
            return
        head_only = method == "HEAD"
        path = target.split("?", 1)[0]
        if self.web.users:
            if self.requests >= self.max_requests:
                await self._reply(writer, 503, b"busy: too many requests at once\n", head_only)
                return
            self.requests += 1
            try:
                good = await self._loop.run_in_executor(self._pool, self.web.authorized, headers.get("Authorization"))
            finally:
                self.requests -= 1
            if not good:
                await self._reply(writer, 401, b"Unauthorized\n", head_only,
                                  extra=[("WWW-Authenticate", 'Basic realm="accelops-gpu-exporter"')])
                return
        if path == "/metrics":
            if self.requests >= self.max_requests:
                await self._reply(writer, 503, b"busy: too many scrapes at once\n", head_only)
                return
            self.requests += 1
            try:
                body = await self._loop.run_in_executor(self._pool, self._metrics)
            finally:
                self.requests -= 1
            await self._reply(writer, 200, body, head_only, content_type=CONTENT_TYPE)
        elif path == "/":
            await self._reply(writer, 200, b"accelops.gpu GPU exporter: /metrics\n", head_only)
        else:
            await self._reply(writer, 404, b"not found: only /metrics\n", head_only)

    def _metrics(self):
        return render(list(self.registry.collect())).encode("utf-8")

    async def _reply(self, writer, code, body, head_only=False, *, content_type="text/plain; charset=utf-8", extra=()):
        lines = ["HTTP/1.1 %d %s" % (code, http.HTTPStatus(code).phrase), "Server: accelops-gpu-exporter",
                 "Content-Type: %s" % content_type, "Content-Length: %d" % len(body), "Connection: close",
                 *("%s: %s" % pair for pair in extra)]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + (b"" if head_only else body))
        # Every byte out before the connection closes (drain alone leaves up to 64 KiB in the buffer, which an abort
        # would drop), within the request's deadline like the rest.
        writer.close()
        await writer.wait_closed()


def _quiet(loop, context):
    """asyncio's handler of errors nobody awaited: one line on stderr, never a traceback (a client that went away in
    the middle of a TLS handshake is not the exporter's fault)."""
    exc = context.get("exception")
    if isinstance(exc, (OSError, EOFError, asyncio.TimeoutError)):
        return
    sys.stderr.write("accelops-gpu-exporter: %s%s\n" % (context.get("message") or "error",
                                                        ": %s: %s" % (type(exc).__name__, exc) if exc else ""))


def make_server(host, port, hostname, sysfs_root="/sys", lib=None, *, watcher=None, web=None, job_map_dir=None,
                cdi=None, **limits):
    """An HTTP(S) server (not yet serving) whose /metrics is a reading (GpuCollector) per request; with a watcher (an
    XidWatcher, whose lock the readings share), its XID counts in every scrape; with web (a WebConfig), TLS and basic
    authentication."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(GpuCollector(hostname, sysfs_root, lib, watcher, job_map_dir, cdi=cdi))
    family, address = _bind_family(host, port)
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6 and not host:
            # Every address: IPv4 too, as IPv4-mapped addresses, whatever the system's bindv6only says.
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind((address, port))
        sock.listen(limits.get("max_connections") or MAX_CONNECTIONS)
    except BaseException:
        sock.close()
        raise
    return ExporterServer(sock, registry, web, **limits)


def _utf8(value):
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # bytes the locale could not decode (surrogates)
        return False
    return True


def main(argv=None, lib=None):
    parser = argparse.ArgumentParser(prog="accelops-gpu-exporter", description=__doc__.partition("\n\n")[0])
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--listen", default=DEFAULT_LISTEN, help="HOST:PORT to serve /metrics on (default :9400)")
    target.add_argument("--textfile", help="write one reading to this .prom file and exit (see --interval)")
    parser.add_argument("--interval", type=float, default=0, metavar="SECONDS",
                        help="with --textfile: write a new reading every SECONDS (1 to 3600) until stopped")
    parser.add_argument("--hostname", default=socket.gethostname(),
                        help="the node's name in the Hostname label (default: this host)")
    parser.add_argument("--hostname-label", choices=HOSTNAME_LABELS, default="Hostname",
                        help="the label of the node's name: Hostname (dcgm-exporter's releases) or hostname (its main "
                             "branch)")
    parser.add_argument("--hpc-job-mapping-dir", metavar="DIR",
                        help="label each GPU's series with the jobs that hold it (hpc_job), as this directory's files "
                             "say (dcgm-exporter's HPC job-mapping convention)")
    parser.add_argument("--sysfs-root", default="/sys")
    parser.add_argument("--no-xid", action="store_true", help="do not watch NVML's events for XID errors")
    parser.add_argument("--web.config.file", dest="web_config_file", metavar="PATH",
                        help="with --listen: TLS and basic authentication, as Prometheus' exporter toolkit reads them")
    parser.add_argument("--cdi-spec", action="append", metavar="PATH",
                        help="a CDI spec to judge against NVML, in the health verdict (repeat for several; default %s)"
                        % " and ".join(CDI_SPECS))
    parser.add_argument("--no-cdi", action="store_true", help="judge no CDI spec")
    parser.add_argument("--driver-root", default="/", help="where the driver's files and device nodes are (CDI)")
    parser.add_argument("--proc-root", default="/proc", help="where the driver's /proc files are (CDI, MIG devices)")
    args = parser.parse_args(argv)
    if CollectorRegistry is None:
        sys.stderr.write("accelops-gpu-exporter: needs the Python package prometheus_client in its environment (%s)\n"
                         % sys.executable)
        return 1
    if not args.hostname or any(c in args.hostname for c in "\n\r\0") or not _utf8(args.hostname):
        parser.error("--hostname must be one line of UTF-8 text")
    if not args.sysfs_root or any(c in args.sysfs_root for c in "\n\r\0") or not _utf8(args.sysfs_root):
        parser.error("--sysfs-root must be one line of UTF-8 text")
    if args.hpc_job_mapping_dir is not None and not (args.hpc_job_mapping_dir.startswith("/")
                                                     and _one_line(args.hpc_job_mapping_dir)):
        parser.error("--hpc-job-mapping-dir must be an absolute path on one line")
    cdi = None
    if args.no_cdi and args.cdi_spec:
        parser.error("--cdi-spec and --no-cdi exclude each other")
    if not args.no_cdi:
        for path in args.cdi_spec or CDI_SPECS:
            problem = _cdi.check_path(path)
            if problem or not _one_line(path):
                parser.error("--cdi-spec: %s" % (problem[len("path: "):] if problem else "a path on one line"))
        for name in ("driver_root", "proc_root"):
            problem = _cdi.check_root(name, getattr(args, name))
            if problem or not _one_line(getattr(args, name)):
                parser.error("--%s: an absolute directory on one line, got %r"
                             % (name.replace("_", "-"), getattr(args, name)))
        cdi = CdiJudge(args.cdi_spec or CDI_SPECS, _cdi.Host(args.driver_root, None, args.sysfs_root, args.proc_root))
    node = Node(args.hostname, args.hostname_label)
    if args.interval and not (args.textfile and 1 <= args.interval <= 3600):
        parser.error("--interval goes with --textfile and is from 1 to 3600 seconds")
    if args.web_config_file is not None and (args.textfile or not _one_line(args.web_config_file)
                                             or not args.web_config_file):
        parser.error("--web.config.file goes with --listen and is a path on one line")
    # A service watches XID events between its readings; one reading and exit has nothing to watch.
    watcher = None
    if not args.no_xid and (args.interval or not args.textfile):
        watcher = XidWatcher(threading.Lock(), lib)
    if args.textfile:
        if watcher is not None:
            watcher.start()
        try:
            return textfile_loop(args.textfile, node, args.sysfs_root, lib, interval=args.interval,
                                 watcher=watcher, job_map_dir=args.hpc_job_mapping_dir, cdi=cdi)
        finally:
            if watcher is not None:
                watcher.stop()
    try:
        web = WebConfig.load(args.web_config_file) if args.web_config_file else None
    except WebConfigError as exc:
        sys.stderr.write("accelops-gpu-exporter: %s\n" % exc)
        return 1
    try:
        host, port = parse_listen(args.listen)
        server = make_server(host, port, node, args.sysfs_root, lib, watcher=watcher, web=web,
                             job_map_dir=args.hpc_job_mapping_dir, cdi=cdi)
    except (OSError, ValueError) as exc:
        sys.stderr.write("accelops-gpu-exporter: cannot listen on %s: %s\n" % (args.listen, exc))
        return 1
    if watcher is not None:
        watcher.start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        if watcher is not None:
            watcher.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
