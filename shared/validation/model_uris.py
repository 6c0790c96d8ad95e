"""Where a backend's model comes from and where it is cached: the newer line's PVC reachability checks, then
the cache URI shapes synthesis would refuse, both answered at admission (docs/design/validation.md §6, item 5).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Sequence

from shared.api.modelbooster import ModelBackend
from shared.errors import FieldError, invalid, required
from shared.gotext import go_quote
from shared.uris import HOSTPATH_SCHEME, PVC_SCHEME
from shared.validation.reads import backend_fields, reads


def cache_uris(backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
    for i, backend in enumerate(backends):
        error = _cache_uri_error(i, backend)
        if error is not None:
            # Each of these compares modelURI with cacheURI.
            yield reads(error, *backend_fields(i, "modelURI", "cacheURI"))


def _cache_uri_error(index: int, backend: ModelBackend) -> FieldError | None:
    """One error at most: a `pvc://` modelURI that passes the reachability checks has a cacheURI naming a
    claim, which passes the shape checks."""
    cache_uri = backend.cache_uri or ""
    if backend.model_uri.startswith(PVC_SCHEME):
        error = _pvc_reachability(f"spec.backends[{index}]", model_uri=backend.model_uri, cache_uri=cache_uri)
        if error is not None:
            return error
    if cache_uri.startswith(PVC_SCHEME) and not cache_uri.removeprefix(PVC_SCHEME).strip("/"):
        detail = f"invalid cacheURI {go_quote(cache_uri)}: must include a PVC claim name"
    elif cache_uri.startswith(HOSTPATH_SCHEME) and not cache_uri.removeprefix(HOSTPATH_SCHEME).strip("/"):
        detail = f"invalid cacheURI {go_quote(cache_uri)}: must include a host path"
    else:
        return None
    return invalid(f"spec.backends[{index}].cacheURI", cache_uri, detail)


def _pvc_reachability(path: str, *, model_uri: str, cache_uri: str) -> FieldError | None:
    if not cache_uri:  # the reference's words below suit a wrong cacheURI, not a missing one
        claim = model_uri.removeprefix(PVC_SCHEME).strip("/").split("/")[0] or "<claimName>"
        return required(
            f"{path}.cacheURI",
            f"a pvc:// modelURI is read through the PVC that cacheURI names; set cacheURI: pvc://{claim} (the "
            "claim that holds the model, the first segment of modelURI)",
        )
    if not cache_uri.startswith(PVC_SCHEME):
        return invalid(
            f"{path}.cacheURI",
            cache_uri,
            "when modelURI uses pvc://, cacheURI must also use pvc://. The downloader only has access to the "
            "volume mounted via cacheURI. Set cacheURI to the PVC that holds the model (e.g. pvc://<claimName>) "
            "and set modelURI to the path within that PVC (e.g. pvc:///<claimName>/<path-to-model>)",
        )
    model_path = model_uri.removeprefix(PVC_SCHEME)
    if ".." in model_path.split("/"):
        return invalid(f"{path}.modelURI", model_uri, "pvc:// modelURI must not contain '..' path segments")
    claim = cache_uri.removeprefix(PVC_SCHEME).strip("/")
    if not claim or "/" in claim:
        return invalid(
            f"{path}.cacheURI",
            cache_uri,
            "pvc:// cacheURI must contain a single PVC claim name with no path separator (e.g. pvc://<claimName>); "
            "claim names cannot contain '/'",
        )
    # Go's path.Clean; POSIX normpath keeps a leading "//", Go does not.
    source = posixpath.normpath("/" + model_path.lstrip("/"))
    mount = "/" + claim
    if source != mount and not source.startswith(mount + "/"):
        return invalid(
            f"{path}.modelURI",
            model_uri,
            f"PVC source path {go_quote(source)} is not reachable via cacheURI mount {go_quote(mount)}. "
            "The downloader only has access to PVCs mounted via cacheURI. If the source model and the cache are "
            "on the same PVC, set cacheURI to the PVC name and include that name as the first path segment of "
            "modelURI. Example: cacheURI: pvc://<claimName>, modelURI: pvc:///<claimName>/<path-to-model>",
        )
    return None
