"""kmock's KubernetesEmulator, made good enough for kopf, running in a background thread.

What the subclass adds (see /work/shared/notes/kubernetes-testing.md):
- `resourceVersion`, `uid`, `creationTimestamp` on create and a new `resourceVersion` on every
  patch (kopf's JSON patches start with a test of `/metadata/resourceVersion`), `generation`
  bumped when `spec` changes; a failed JSON-patch test answers 422 as a real API server does;
- `labelSelector` honoured on lists (equality terms only);
- watches that start where the list ended, as kopf expects (list, then watch from the list's
  `resourceVersion`): kmock's own watch re-sends every object as ADDED, and kopf, handling the
  same version twice, loses the race for its finalizer patch (422) and then waits for the next
  change of the object (the next status write, a poll interval later) — and it snapshots the
  objects before it subscribes to changes, so a change in between was lost;
- the GenerationJob discovery entry, with its `status` subresource, and the built-in kinds the
  operator uses;
- a request log that does not slow every request down: kmock matches each request against its
  reactions by walking every request it has ever served (O(n) per request: 13 ms per GET after
  500 requests, 145 ms after 3000), so kmock is shown only the requests in flight and the whole
  log lives in `served`.
- optionally (`Rbac`), authorization of the operator's requests against the rules the chart
  grants, and the `OwnerReferencesPermissionEnforcement` admission plugin's rule, with the real
  server's 403 messages;
- the kinds kopf manages when a real server serves them (MutatingWebhookConfiguration, kopf's
  peerings);
- the pod proxy (`GET .../pods/NAME:PORT/proxy/PATH`), forwarded to the pod's `status.podIP`
  as a real API server does (`draftgen top gj/NAME` reads the pods' `/metrics` through it).
- validating admission webhooks, called as kube-apiserver calls them (`admission`: a `service:`
  clientConfig through the Services a test routes, a `url:` on `*.svc` failing as the API
  server's own DNS fails), and the pod rules a real server refused draftgen's children for
  (`validation`: duplicate mountPath, tolerations), each with kube-apiserver's message.
What it still does not do: garbage collection, mutating admission, schema validation,
controllers (no ReplicaSet, no pod, no Job status appears by itself: tests patch those in).

Where each part lives: `resources` (the kinds served), `stamp` (metadata on writes), `rbac`
(authorization and the owner-reference rule), `admission` and `validation` (above), `proxy`
(the pod proxy), `api` (the emulator: versions, lists, watches, the request log), `thread` (the
background thread, its kubeconfig and the tests' sync client).
"""

from __future__ import annotations

from .api import DraftgenEmulator
from .rbac import OPERATOR_AGENTS, Grant, Rbac
from .resources import RESOURCES, VERBS
from .thread import EmulatorThread

__all__ = [
    "OPERATOR_AGENTS",
    "RESOURCES",
    "VERBS",
    "DraftgenEmulator",
    "EmulatorThread",
    "Grant",
    "Rbac",
]
