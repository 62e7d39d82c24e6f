"""What a browser may do with the HTTP door (edge_tts/http/browser.py), and how clients
are counted for the per-client connection limit: the rules on headers alone. The same
rules through the real daemon: tests/test_http_hardening.py."""

from __future__ import annotations

from typing import Any

import pytest

from edge_tts.config import settings_from_mapping
from edge_tts.http import browser
from edge_tts.http.admission import client_key
from edge_tts.http.browser import Hosts, Refusal

pytestmark = pytest.mark.unit

LOOPBACK = "tcp://127.0.0.1:8380"
LAN = "tcp://0.0.0.0:8380"


def hosts(uri: str, **http: Any) -> Hosts:
    settings = settings_from_mapping({"http": {"uri": uri, **http}}).http
    return Hosts.of(settings, hostname="kitchen-pi")


def refusal(
    method: str, headers: dict[str, str], allowed: Hosts, cors: tuple[str, ...] = ()
) -> str:
    with pytest.raises(Refusal) as refused:
        browser.check(method, headers, allowed, cors)
    assert refused.value.status == 403
    return refused.value.code


@pytest.mark.parametrize(
    ("given", "name"),
    [
        ("localhost:8380", "localhost"),
        ("[::1]:8380", "::1"),
        ("Pi.Local.:80", "pi.local"),
        ("127.0.0.1", "127.0.0.1"),
        ("[::1]", "::1"),
        ("::1", "::1"),
    ],
)
def test_a_host_header_s_name_is_read_without_its_port(given: str, name: str) -> None:
    assert browser.host_name(given) == name


def test_on_loopback_only_the_loopback_names_are_served() -> None:
    allowed = hosts(LOOPBACK)
    for host in ("localhost:8380", "127.0.0.1:8380", "[::1]:8380", "LOCALHOST"):
        browser.check("GET", {"Host": host}, allowed, ())
    for host in (
        "attacker.rebind.network:8380",
        "127.0.0.1.nip.io:8380",
        "kitchen-pi:8380",
        "192.168.1.20:8380",
    ):
        assert refusal("GET", {"Host": host}, allowed) == "forbidden_host"


def test_beyond_loopback_the_machine_s_names_and_addresses_are_served_too() -> None:
    allowed = hosts(LAN)
    reads = []

    def addresses() -> frozenset[str]:
        reads.append(1)
        return frozenset({"192.168.1.20", "fe80::1"})

    allowed.addresses = addresses
    for host in (
        "kitchen-pi:8380",
        "kitchen-pi.local:8380",
        "192.168.1.20:8380",
        "[fe80::1]:8380",
        "localhost:8380",
    ):
        browser.check("GET", {"Host": host}, allowed, ())
    assert refusal("GET", {"Host": "192.168.1.99:8380"}, allowed) == "forbidden_host"
    assert refusal("GET", {"Host": "evil.example"}, allowed) == "forbidden_host"
    assert len(reads) == 1  # a name is never looked up; addresses are re-read at most every 5 s


def test_more_names_are_allowed_by_the_setting_and_any_by_a_star() -> None:
    allowed = hosts(LOOPBACK, allowed_hosts=["tts.example.lan"])
    browser.check("POST", {"Host": "tts.example.lan:443"}, allowed, ())
    assert refusal("GET", {"Host": "other.example.lan"}, allowed) == "forbidden_host"
    browser.check("GET", {"Host": "other.example.lan"}, hosts(LOOPBACK, allowed_hosts=["*"]), ())


def test_a_page_of_another_origin_is_refused_unless_configured() -> None:
    allowed = hosts(LOOPBACK)
    own = {"Host": "127.0.0.1:8380"}
    for origin in ("http://evil.example", "null", "http://127.0.0.1:9999", "http://localhost:8380"):
        for method in ("POST", "GET", "OPTIONS"):
            assert refusal(method, {**own, "Origin": origin}, allowed) == "forbidden_origin"
    browser.check("POST", {**own, "Origin": "http://127.0.0.1:8380"}, allowed, ())  # its own
    cors = ("http://homeassistant.local:8123",)
    browser.check("POST", {**own, "Origin": cors[0]}, allowed, cors)
    browser.check("POST", {**own, "Origin": "http://evil.example"}, allowed, ("*",))


def test_a_rebinding_page_is_refused_though_its_origin_matches_its_host() -> None:
    headers = {
        "Host": "attacker.rebind.network:8380",
        "Origin": "http://attacker.rebind.network:8380",
    }
    assert refusal("POST", headers, hosts(LOOPBACK)) == "forbidden_host"


def test_without_an_origin_only_a_get_may_come_from_another_site() -> None:
    allowed = hosts(LOOPBACK)
    for site in ("cross-site", "same-site", "Cross-Site"):
        headers = {"Host": "localhost:8380", "Sec-Fetch-Site": site}
        assert refusal("POST", headers, allowed) == "forbidden_origin"
        browser.check("GET", headers, allowed, ())  # an <audio> of /download, a link
    for site in ("same-origin", "none"):
        browser.check("POST", {"Host": "localhost:8380", "Sec-Fetch-Site": site}, allowed, ())
    browser.check("POST", {}, allowed, ())  # no Host, no Origin: HTTP/1.0, curl -H 'Host:'


def test_speech_routes_take_only_json_and_say_takes_text_only_from_no_page() -> None:
    browser.require_json({"Content-Type": "application/json; charset=utf-8"})
    for given in (
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; b=x",
        "",
    ):
        with pytest.raises(Refusal) as refused:
            browser.require_json({"Content-Type": given} if given else {})
        assert refused.value.status == 415
    assert browser.may_send_plain_text({"Content-Type": "text/plain"}, token_checked=False)
    assert browser.may_send_plain_text({"Sec-Fetch-Site": "none"}, token_checked=False)
    assert not browser.may_send_plain_text({"Origin": "http://localhost:8380"}, token_checked=False)
    assert not browser.may_send_plain_text({"Sec-Fetch-Site": "cross-site"}, token_checked=False)
    assert browser.may_send_plain_text({"Origin": "http://x"}, token_checked=True)


@pytest.mark.parametrize(
    ("peer", "key"),
    [
        (("127.0.0.1", 50000), "127.0.0.1"),
        (("127.0.0.2", 50000), "127.0.0.2"),
        (("2001:db8:1:2:aaaa::1", 50000, 0, 0), "2001:db8:1:2::/64"),
        (("2001:db8:1:2:bbbb::9", 50001, 0, 0), "2001:db8:1:2::/64"),
        (("::ffff:192.168.1.5", 50000, 0, 0), "192.168.1.5"),
        (("fe80::1%eth0", 50000, 0, 2), "fe80::/64"),
        ("", "local"),
        (None, "local"),
    ],
)
def test_a_client_is_its_address_or_its_ipv6_64(peer: object, key: str) -> None:
    assert client_key(peer) == key
