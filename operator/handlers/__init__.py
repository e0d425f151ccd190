"""kopf handlers, one module per concern. `kopf run -m draftgen.controller.handlers` (or
`draftgen operator`) registers them all.

- `startup`: kopf settings, API credentials, the operator's metrics, the webhook if enabled;
- `lifecycle`: create / update / resume / timer → one idempotent reconcile each;
- `cleanup`: deletion removes every child explicitly (owner references let a cluster's garbage
  collector do the same; the test API server has none).
"""

from . import cleanup, lifecycle, startup  # noqa: F401  (registration by import)
