"""The pinned transport: connects to checked addresses only, keeps Host and TLS server name."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from invokit.builtin.http._fetch import Fetcher
from invokit.builtin.http._guard import CheckedTarget, UrlGuard
from invokit.builtin.http._transport import PinnedBackend, PinnedTransport
from invokit.exceptions import ToolFailed
from tests.builtin.http.server import RecordingServer, Reply

pytestmark = pytest.mark.anyio


@dataclass(frozen=True, kw_only=True, slots=True)
class Certificates:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes


def _name(text: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])


@pytest.fixture(scope="module")
def certificates() -> Certificates:
    """A throwaway CA and a server certificate for ``pinned.test`` only."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("invokit test CA"))
        .issuer_name(_name("invokit test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("pinned.test"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("pinned.test")]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return Certificates(
        ca_pem=ca.public_bytes(serialization.Encoding.PEM),
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


@pytest.fixture
def tls_server(
    certificates: Certificates, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[RecordingServer, list[str | None]]]:
    """An HTTPS server on 127.0.0.1 for ``pinned.test`` that records the SNI names it sees."""
    folder = tmp_path_factory.mktemp("tls")
    (folder / "cert.pem").write_bytes(certificates.cert_pem)
    (folder / "key.pem").write_bytes(certificates.key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    names: list[str | None] = []

    def remember(_socket: ssl.SSLObject, name: str | None, _context: ssl.SSLContext) -> None:
        names.append(name)

    context.sni_callback = remember
    server = RecordingServer("127.0.0.1", tls=context)
    server.route("/", Reply(body=b"secure", headers={"Content-Type": "text/plain"}))
    with server.running():
        yield server, names


def client_context(certificates: Certificates) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=certificates.ca_pem.decode())


def pinned(host: str, port: int, *addresses: str) -> CheckedTarget:
    return CheckedTarget(
        host=host, port=port, addresses=tuple(ipaddress.ip_address(a) for a in addresses)
    )


async def test_tls_keeps_the_server_name_while_dialling_the_pinned_address(
    tls_server: tuple[RecordingServer, list[str | None]], certificates: Certificates
) -> None:
    """HTTPS to a pinned name verifies the certificate for that name and sends it as SNI."""
    server, names = tls_server

    async def resolve(host: str, port: int) -> Sequence[str]:
        return ["127.0.0.1"] if host == "pinned.test" else []

    fetcher = Fetcher(
        guard=UrlGuard(allow_private=True, resolver=resolve),
        verify=client_context(certificates),
        timeout=5,
    )
    result = await fetcher.fetch(f"https://pinned.test:{server.port}/")
    assert result.text == "secure"
    assert names == ["pinned.test"]
    assert server.received[0].headers["host"] == f"pinned.test:{server.port}"


async def test_tls_to_the_bare_address_fails_verification(
    tls_server: tuple[RecordingServer, list[str | None]], certificates: Certificates
) -> None:
    """The certificate is checked against the URL's name, so the IP itself does not match."""
    server, _names = tls_server
    fetcher = Fetcher(
        guard=UrlGuard(allow_private=True), verify=client_context(certificates), timeout=5
    )
    with pytest.raises(ToolFailed) as caught:
        await fetcher.fetch(f"https://127.0.0.1:{server.port}/")
    assert caught.value.data["reason"] == "network"


async def test_unpinned_hosts_are_never_dialled(victim: RecordingServer) -> None:
    """A request to a host the guard did not check fails without a connection."""
    backend = PinnedBackend()
    transport = PinnedTransport(backend, ssl_context=ssl.create_default_context())
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(victim.url())
    assert backend.connections == []
    assert victim.received == []


async def test_backend_dials_the_pinned_address_and_records_it(site: RecordingServer) -> None:
    """The TCP connection goes to the pinned address, the URL's host stays in the request."""
    site.route("/", Reply(body=b"hi"))
    backend = PinnedBackend()
    backend.pin(pinned("name.test", site.port, "127.0.0.2"))
    transport = PinnedTransport(backend, ssl_context=ssl.create_default_context())
    async with httpx.AsyncClient(transport=transport) as client:
        response = await client.get(f"http://name.test:{site.port}/")
    assert response.text == "hi"
    assert backend.connections == [("name.test", site.port, "127.0.0.2")]
    assert site.received[0].headers["host"] == f"name.test:{site.port}"


async def test_backend_tries_the_next_checked_address(site: RecordingServer) -> None:
    """When the first checked address refuses, the next checked one is tried."""
    site.route("/", Reply(body=b"second"))
    backend = PinnedBackend()
    backend.pin(pinned("multi.test", site.port, "127.0.0.3", "127.0.0.2"))
    transport = PinnedTransport(backend, ssl_context=ssl.create_default_context())
    async with httpx.AsyncClient(transport=transport) as client:
        response = await client.get(f"http://multi.test:{site.port}/")
    assert response.text == "second"
    assert backend.connections == [("multi.test", site.port, "127.0.0.2")]
