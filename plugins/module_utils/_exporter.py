# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the GPU exporter. One scrape reads the node's GPUs the way gpu_facts does
(its collector, one NVML session per scrape, the health verdict included) and renders them with _metrics; the same
text is served over HTTP for Prometheus (GET /metrics) or written atomically as a textfile for node_exporter's
textfile collector.

A scrape never fails: whatever goes wrong (NVML missing, the driver not loaded, a GPU lost, an exception in the
reading itself) is in the text as accelops_gpu_nvml_up 0 or accelops_gpu_exporter_error_info, with the health verdict
"unknown", not as a crash or an empty page.

Usage (on the node, with pynvml importable): python -m ...module_utils._exporter [--listen HOST:PORT | --textfile
PATH [--interval SECONDS]] [--hostname NAME] [--sysfs-root DIR]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import socket
import sys
import tempfile
import threading
import time

from ansible_collections.accelops.gpu.plugins.module_utils._gpu_facts import GpuFactsCollector, resolve_subsets
from ansible_collections.accelops.gpu.plugins.module_utils._metrics import CONTENT_TYPE, Exposition, exposition
from ansible_collections.accelops.gpu.plugins.module_utils._nvml import GpuLost, NvmlCallError, NvmlSession

# Everything the series need, the PCI bus included (the health verdict sees a GPU that NVML no longer lists); not the
# topology, whose pairwise queries no series uses.
SUBSETS = ("all", "!topology")
DEFAULT_LISTEN = ":9400"
MAX_REQUESTS = 4
FRESH_S = 1.0
REQUEST_TIMEOUT_S = 10


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


def _address(handle):
    return ctypes.cast(handle, ctypes.c_void_p).value


def _lock_of(watcher):
    """The lock every NVML call of the process takes: the watcher's where one watches, else one of its own."""
    return watcher.lock if watcher is not None else threading.Lock()


def _scrape_with(lock, hostname, sysfs_root, lib, watcher):
    """One scrape under the lock, with the watcher's XID counts where one watches; whatever raises on the way is the
    error page, never an empty answer or a dropped connection."""
    try:
        with lock:
            return scrape(hostname, sysfs_root, lib, watcher.state() if watcher is not None else None)
    except Exception as exc:  # pylint: disable=broad-except  # a scrape reports its failure, it never ends the exporter
        return failed(hostname, "%s: %s" % (type(exc).__name__, exc))


def scrape(hostname, sysfs_root="/sys", lib=None, xid=None):
    """One reading of the node as exposition text, with how long it took and how many NVML calls it made; with xid
    (an XidWatcher's state()), the XID errors it counted."""
    start = time.monotonic()
    session = NvmlSession(lib)
    try:
        with session:
            facts = GpuFactsCollector(session, resolve_subsets(list(SUBSETS)), sysfs_root).collect()
        text = exposition(facts, hostname, xid)
    except Exception as exc:  # pylint: disable=broad-except  # a scrape reports its failure, it never ends the exporter
        text = failed(hostname, "%s: %s" % (type(exc).__name__, exc))
    out = Exposition()
    out.add("accelops_gpu_scrape_duration_seconds", "gauge", "How long this reading of the GPUs took.",
            [("Hostname", hostname)], round(time.monotonic() - start, 6))
    out.add("accelops_gpu_scrape_nvml_calls", "gauge", "NVML calls this reading of the GPUs made.",
            [("Hostname", hostname)], session.calls)
    return text + out.text()


def failed(hostname, error):
    """The text of a reading that raised: NVML counts as down, the verdict unknown, and the error said."""
    facts = {"nvml_available": False, "driver_loaded": False, "reason": "the exporter could not read the GPUs",
             "health": {"status": "unknown", "findings": []}, "errors": []}
    text = exposition(facts, hostname)
    out = Exposition()
    out.add("accelops_gpu_exporter_error_info", "gauge", "What went wrong in this reading (always 1).",
            [("Hostname", hostname), ("error", error[:500])], 1)
    return text + out.text()


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


def textfile_loop(path, hostname, sysfs_root="/sys", lib=None, *, interval=0, rounds=None, watcher=None):
    """Write a reading to path once (interval 0; 1 when it fails), or every interval seconds for ever (or for
    rounds): a write that fails is said on stderr and tried again at the next round, as a service should. With a
    watcher (an XidWatcher), its XID counts are in every reading."""
    lock = _lock_of(watcher)
    done = 0
    while True:
        start = time.monotonic()
        try:
            write_textfile(path, _scrape_with(lock, hostname, sysfs_root, lib, watcher))
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


def make_server(host, port, hostname, sysfs_root="/sys", lib=None, *, watcher=None):
    """An HTTP server (not yet serving) whose /metrics is one scrape per request, one at a time; with a watcher (an
    XidWatcher, whose lock the scrapes share), its XID counts in every scrape."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    lock = _lock_of(watcher)
    # Requests at once beyond this get 503 at once, not a thread that waits for the lock; a reading younger than
    # FRESH_S answers the requests that queued behind it.
    slots = threading.BoundedSemaphore(MAX_REQUESTS)
    latest = {"at": None, "text": None}

    fresh = threading.Lock()

    def reading():
        with fresh:
            if latest["at"] is None or time.monotonic() - latest["at"] >= FRESH_S:
                latest["text"] = _scrape_with(lock, hostname, sysfs_root, lib, watcher)
                latest["at"] = time.monotonic()
            return latest["text"]

    class Handler(BaseHTTPRequestHandler):
        server_version = "accelops-gpu-exporter"
        timeout = REQUEST_TIMEOUT_S  # a client that sends nothing is dropped, not kept

        def do_GET(self, head=False):  # the name http.server calls
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                if not slots.acquire(blocking=False):
                    self._reply(503, "text/plain; charset=utf-8", b"busy: too many scrapes at once\n", head)
                    return
                try:
                    body = reading().encode("utf-8", errors="replace")
                finally:
                    slots.release()
                self._reply(200, CONTENT_TYPE, body, head)
            elif path == "/":
                self._reply(200, "text/plain; charset=utf-8", b"accelops.gpu GPU exporter: /metrics\n", head)
            else:
                self._reply(404, "text/plain; charset=utf-8", b"not found: only /metrics\n", head)

        def do_HEAD(self):  # the name http.server calls
            self.do_GET(head=True)

        def _reply(self, code, content_type, body, head):
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def log_message(self, *args):  # a scrape every few seconds is not news
            pass

    family, address = _bind_family(host, port)

    class Server(ThreadingHTTPServer):
        address_family = family
        daemon_threads = True

        def server_bind(self):
            if family == socket.AF_INET6 and not host:
                # Every address: IPv4 too, as IPv4-mapped addresses, whatever the system's bindv6only says.
                self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            super().server_bind()

    return Server((address, port), Handler)


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
    parser.add_argument("--hostname", default=socket.gethostname(), help="the Hostname label (default: this host)")
    parser.add_argument("--sysfs-root", default="/sys")
    parser.add_argument("--no-xid", action="store_true", help="do not watch NVML's events for XID errors")
    args = parser.parse_args(argv)
    if not args.hostname or any(c in args.hostname for c in "\n\r\0") or not _utf8(args.hostname):
        parser.error("--hostname must be one line of UTF-8 text")
    if not args.sysfs_root or any(c in args.sysfs_root for c in "\n\r\0") or not _utf8(args.sysfs_root):
        parser.error("--sysfs-root must be one line of UTF-8 text")
    if args.interval and not (args.textfile and 1 <= args.interval <= 3600):
        parser.error("--interval goes with --textfile and is from 1 to 3600 seconds")
    # A service watches XID events between its readings; one reading and exit has nothing to watch.
    watcher = None
    if not args.no_xid and (args.interval or not args.textfile):
        watcher = XidWatcher(threading.Lock(), lib)
    if args.textfile:
        if watcher is not None:
            watcher.start()
        try:
            return textfile_loop(args.textfile, args.hostname, args.sysfs_root, lib, interval=args.interval,
                                 watcher=watcher)
        finally:
            if watcher is not None:
                watcher.stop()
    try:
        host, port = parse_listen(args.listen)
        server = make_server(host, port, args.hostname, args.sysfs_root, lib, watcher=watcher)
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
