"""Where an agent's URL goes: its host as a browser's URL parser (WHATWG) reads it, cases
from the URL Standard's host parsing (backslashes, user info, %-escapes, IDNA, the IPv4
forms and IPv6)."""

from __future__ import annotations

import pytest

from louise.acp.urls import UrlError, parse_web_url


@pytest.mark.parametrize("url, host, ip", [
    ("https://github.com/login/device", "github.com", False),
    ("HTTPS://GitHub.COM:443/x", "github.com", False),
    # A backslash is a slash: the authority ends there.
    ("https://evil.example\\.accounts.google.com/", "evil.example", False),
    ("https://accounts.google.com\\@evil.example/", "accounts.google.com", False),
    # Everything before the last @ is user info.
    ("https://accounts.google.com@evil.example/", "evil.example", False),
    ("https://a@b:c@evil.example/x", "evil.example", False),
    ("https://example.com#@evil.example", "example.com", False),
    ("https://example.com?@evil.example", "example.com", False),
    # The host is percent-decoded, lower-cased, mapped to ASCII.
    ("https://evil%2Eexample/", "evil.example", False),
    ("https://\uff25\uff38\uff21\uff2d\uff30\uff2c\uff25\uff0ecom/", "example.com", False),
    ("https://b\u00fccher.de/", "xn--bcher-kva.de", False),
    # Slashes after the scheme, any number, or none.
    ("https:evil.example/path", "evil.example", False),
    ("https:///evil.example/", "evil.example", False),
    # IPv4 in every form a browser reads.
    ("http://127.0.0.1/", "127.0.0.1", True),
    ("http://2130706433/", "127.0.0.1", True),
    ("http://0x7f.1/", "127.0.0.1", True),
    ("http://0177.0.0.1/", "127.0.0.1", True),
    ("http://017700000001/", "127.0.0.1", True),
    ("http://127.1/", "127.0.0.1", True),
    ("http://10.0.0.1./", "10.0.0.1", True),
    ("http://0x/", "0.0.0.0", True),
    # IPv6.
    ("http://[::1]/", "[::1]", True),
    ("http://[0:0:0:0:0:0:0:1]:8080/", "[::1]", True),
    ("https://[::ffff:1.2.3.4]/", "[::ffff:102:304]", True),
])
def test_the_host_is_the_one_a_browser_opens(url: str, host: str, ip: bool) -> None:
    parsed = parse_web_url(url)
    assert (parsed.host, parsed.ip) == (host, ip)


def test_how_the_url_is_written_is_reported() -> None:
    plain = parse_web_url("https://github.com/x")
    assert (plain.userinfo, plain.backslash, plain.escaped_host, plain.slashes) == \
        (False, False, False, "//")
    assert parse_web_url("https://evil.example\\.accounts.google.com/").backslash
    assert parse_web_url("https:\\\\evil.example/").backslash
    assert parse_web_url("https://x@evil.example/").userinfo
    assert parse_web_url("https://@evil.example/").userinfo
    assert parse_web_url("https://evil%2Eexample/").escaped_host
    assert parse_web_url("https:evil.example").slashes == ""
    assert parse_web_url("https://b\u00fccher.de/").non_ascii
    assert parse_web_url("https://b\u00fccher.de/").punycode
    assert parse_web_url("https://example.com:8443/").port == 8443
    assert parse_web_url("https://example.com:0443/").port is None  # the default


@pytest.mark.parametrize("url, reason", [
    ("javascript:alert(1)", "only http and https"),
    ("file:///etc/passwd", "only http and https"),
    ("//example.com/", "no scheme"),
    ("https://a.example/\x1b[2J", "control characters"),
    (" https://example.com", "spaces"),
    ("https://", "no host"),
    ("https://user@/x", "no host"),
    ("https://evil%2Fexample/", "not a valid name"),
    ("https://exa mple.com/", "not a valid name"),
    ("https://example.com:99999/", "out of range"),
    ("https://example.com:8o/", "not a number"),
    ("https://[::1/", "closing bracket"),
    ("https://[::1%eth0]/", "IPv6 address is not valid"),
    ("https://[1:2:3]/", "IPv6 address is not valid"),
    ("http://1.2.3.4.5/", "not one"),
    ("http://foo.09/", "not one"),
    ("http://256.0.0.1/", "out of range"),
    ("http://1.2.3.4294967296/", "out of range"),
    ("https://%ff.example/", "not valid text"),
    ("https://xn--zz.example/", "invalid punycode"),
    ("https://stra\u00dfe.de/", "more than one way"),
])
def test_what_is_no_url_a_browser_would_open(url: str, reason: str) -> None:
    with pytest.raises(UrlError, match=reason):
        parse_web_url(url)
