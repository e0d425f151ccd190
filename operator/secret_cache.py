"""`policy.secretLabel` without polling: the Secrets carrying the label, per namespace, kept by
a list and a watch.

The first job in a namespace that names a token Secret lists that namespace's Secrets with the
label selector `key=value` (synchronously: the answer is needed now) and starts a watch from the
list's resourceVersion in a daemon thread; later checks read the cache. A label added or
removed reaches the cache through the watch (a watch with a label selector sends DELETED when an
object stops matching), so a revoked Secret is refused at the job's next reconcile, with no
request per reconcile. Every request carries the selector and names one namespace: a Secret
without the label never reaches the operator (RBAC cannot limit `list` by label: the chart
grants `list`, `watch` on secrets only in the namespaces the operator serves, and only in this
mode; operator/rbac.py). A watch that breaks is resumed from its last version, or relisted; when
that fails too the namespace is dropped and the next check lists it again.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from typing import Any

from .kube import Kube, KubeError

log = logging.getLogger(__name__)

_RETRIES = 5
"""Consecutive failed relists after which a namespace's watch gives up (the next check relists)."""


class _Namespace:
    """The labelled Secrets of one namespace, and the thread that keeps them current."""

    def __init__(self, kube: Kube, namespace: str, key: str, value: str) -> None:
        self.kube, self.namespace = kube, namespace
        self.key, self.value = key, value
        self.selector = f"{key}={value}"
        self.names: set[str] = set()
        self.alive = True
        self._lock = threading.Lock()
        self.version = self._relist()
        threading.Thread(
            target=self._run, name=f"draftgen-secrets-{namespace}", daemon=True
        ).start()

    def snapshot(self) -> set[str]:
        with self._lock:
            return set(self.names)

    def _labelled(self, obj: dict[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return labels.get(self.key) == self.value

    def _relist(self) -> str:
        items, version = self.kube.list_from("Secret", self.namespace, self.selector)
        with self._lock:
            self.names = {o["metadata"]["name"] for o in items if self._labelled(o)}
        return version

    def _apply(self, event: dict[str, Any]) -> None:
        obj = event.get("object") or {}
        meta = obj.get("metadata") or {}
        if event.get("type") == "BOOKMARK":
            self.version = str(meta.get("resourceVersion") or self.version)
            return
        name = str(meta.get("name") or "")
        with self._lock:
            # Filtered here too: an API server that ignores the selector still sends the label.
            if event.get("type") != "DELETED" and self._labelled(obj):
                self.names.add(name)
            else:
                self.names.discard(name)
        self.version = str(meta.get("resourceVersion") or self.version)

    def _run(self) -> None:
        failures = 0
        while failures < _RETRIES:
            try:
                for event in self.kube.watch("Secret", self.namespace, self.selector, self.version):
                    if event.get("type") == "ERROR":
                        raise KubeError(int((event.get("object") or {}).get("code") or 0), "watch")
                    self._apply(event)
                failures = 0  # the server ended the watch: resume from the last version
            except KubeError as err:
                log.debug("watch of labelled Secrets in %s broke: %s", self.namespace, err)
                try:
                    time.sleep(min(30, 2**failures))
                    self.version = self._relist()
                    failures = 0
                except KubeError:
                    failures += 1
        self.alive = False


class LabelledSecrets:
    """The cache for one API client and one label."""

    def __init__(self, kube: Kube, key: str, value: str) -> None:
        self.kube, self.key, self.value = kube, key, value
        self._namespaces: dict[str, _Namespace] = {}
        self._lock = threading.Lock()

    def labelled(self, namespace: str, name: str) -> bool:
        """Whether Secret `namespace/name` exists and carries the label (from the cache; the
        first check in a namespace lists it)."""
        with self._lock:
            found = self._namespaces.get(namespace)
            if found is None or not found.alive:
                found = self._namespaces[namespace] = _Namespace(
                    self.kube, namespace, self.key, self.value
                )
        return name in found.snapshot()


_CACHES: weakref.WeakKeyDictionary[Kube, dict[tuple[str, str], LabelledSecrets]] = (
    weakref.WeakKeyDictionary()
)
_CACHES_LOCK = threading.Lock()


def for_client(kube: Kube, key: str, value: str) -> LabelledSecrets:
    """The one cache of this client for this label (the reconcile and the webhook share it)."""
    with _CACHES_LOCK:
        caches = _CACHES.setdefault(kube, {})
        return caches.setdefault((key, value), LabelledSecrets(kube, key, value))
