"""PyIceberg's FsspecFileIO with its S3 request signer kept across s3fs reconnects.

PyIceberg 0.12.0 registers its REST signer (S3V4RestSigner) on the one
aiobotocore client that exists when the filesystem is built, and turns
botocore's own signing off. s3fs replaces that client whenever it finds the
HTTP session closed, and the new client has no signer, so some S3 requests go
out unsigned and Floe answers AccessDenied ("anonymous requests are refused").
That is apache/iceberg-python#3625 (fix proposed in PR #3783: register the
signer on the aiobotocore session, which every client inherits). This FileIO
does exactly that and nothing else: the requests are still signed by
PyIceberg's own S3V4RestSigner calling Floe's sign endpoint.
"""

from __future__ import annotations

from typing import Any

from pyiceberg.io import S3_ENDPOINT, S3_REGION, S3_SIGNER
from pyiceberg.io.fsspec import SIGNERS, FsspecFileIO
from pyiceberg.typedef import Properties


def _s3_session_signed(properties: Properties) -> Any:
    from aiobotocore.session import AioSession
    from botocore import UNSIGNED
    from s3fs import S3FileSystem

    signer_name = properties.get(S3_SIGNER)
    if signer_name not in SIGNERS:
        raise ValueError(f"this FileIO needs s3.signer from the catalog, got {signer_name!r}")
    session = AioSession()
    session.register("before-sign.s3", SIGNERS[signer_name](properties), unique_id="floe-rest-signer")
    return S3FileSystem(
        session=session,
        client_kwargs={"endpoint_url": properties.get(S3_ENDPOINT), "region_name": properties.get(S3_REGION)},
        config_kwargs={"signature_version": UNSIGNED},
    )


class SessionSignedFsspecFileIO(FsspecFileIO):
    """FsspecFileIO whose s3 filesystem signs every request through the catalog."""

    def __init__(self, properties: Properties):
        super().__init__(properties)
        self._scheme_to_fs["s3"] = _s3_session_signed
        self._scheme_to_fs["s3a"] = _s3_session_signed
        self._scheme_to_fs["s3n"] = _s3_session_signed
