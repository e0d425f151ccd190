"""The pod proxy (`GET /api/v1/namespaces/NS/pods/NAME:PORT/proxy/PATH`), forwarded to the
pod's `status.podIP` as kube-apiserver does (`draftgen top gj/NAME` reads the pods' `/metrics`
through it)."""

from __future__ import annotations

import re
from typing import Any

import httpx

POD_PROXY = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/:]+):(\d+)/proxy/(.*)$")


async def proxy_pod(pod: dict[str, Any] | None, name: str, port: str, path: str) -> Any:
    """GET on a pod's port through the API server, answered as kube-apiserver answers:
    the pod's own reply, else 503 with the dial error (404 for no such pod)."""
    from aiohttp import web

    ip = ((pod or {}).get("status") or {}).get("podIP")
    if pod is None:
        return web.json_response(
            {
                "kind": "Status",
                "status": "Failure",
                "reason": "NotFound",
                "code": 404,
                "message": f'pods "{name}" not found',
            },
            status=404,
        )
    try:
        async with httpx.AsyncClient(timeout=5.0) as client:
            rsp = await client.get(f"http://{ip}:{port}/{path}")
    except httpx.HTTPError as err:
        return web.Response(
            status=503, text=f"error trying to reach service: dial tcp {ip}:{port}: {err}"
        )
    return web.Response(
        status=rsp.status_code,
        body=rsp.content,
        headers={"Content-Type": rsp.headers.get("content-type", "text/plain")},
    )
