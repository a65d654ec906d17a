"""Where an http(s) URL really goes: its host as a browser's URL parser (the WHATWG URL
Standard) reads it, and how the URL is written, so that what louise shows a person before
opening an agent's URL is the host the browser will open. Pure: no I/O.

What a browser does that Python's `urllib.parse` does not (and so what a URL can hide):

- a backslash is a slash: `https://evil.example\\.accounts.google.com/` opens
  `evil.example`;
- any run of slashes and backslashes after `https:` is skipped (`https:evil.example`,
  `https:///evil.example`);
- everything up to the last `@` of the authority is user info, not the host;
- the host is percent-decoded (`evil%2Eexample`), mapped to lower case and to ASCII
  (IDNA: full-width letters and dots become ASCII ones, other letters punycode);
- a host whose last label is a number is an IPv4 address, in decimal, octal (`0177.1`)
  or hex (`0x7f.1`), whole or in parts: `http://2130706433/` is `127.0.0.1`;
- `[…]` is an IPv6 address.

`parse_web_url` reports the host and the spelling (user info, backslashes, slashes,
%-escapes); the caller decides what to refuse and what to warn about. Only http and https
are read.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from dataclasses import dataclass

WEB_SCHEMES = {"http": 80, "https": 443}
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Forbidden domain code points (WHATWG): a host holding one after decoding is no host.
_FORBIDDEN = re.compile(r"[\x00-\x20#%/:<>?@\[\\\]^|\x7f]")
# Characters IDNA 2003 (Python's codec) and browsers (UTS 46) map differently: the host
# shown could differ from the one opened.
_DEVIATIONS = re.compile("[\u00df\u03c2\u200c\u200d]")


class UrlError(ValueError):
    """Not an http(s) URL a browser would open (its text says why)."""


@dataclass(frozen=True, slots=True)
class WebUrl:
    """An http(s) URL as a browser reads it.

    `host` is what the browser connects to: lower-case ASCII (punycode for other
    letters), an IPv4 address in dotted decimal, or an IPv6 address in brackets.
    `written_host` is the host as the URL spells it (before decoding and mapping)."""

    scheme: str
    host: str
    port: int | None  # None: the scheme's default
    written_host: str
    ip: bool  # an IPv4 or IPv6 address, not a name
    userinfo: bool  # the authority holds `…@` before the host
    backslash: bool  # a backslash where the browser reads a slash, before the path
    slashes: str  # what follows `scheme:` before the authority (normally `//`)
    escaped_host: bool  # the host is written with %-escapes

    @property
    def non_ascii(self) -> bool:
        return not self.written_host.isascii()

    @property
    def punycode(self) -> bool:
        return any(label.startswith("xn--") for label in self.host.split("."))


def parse_web_url(url: str) -> WebUrl:
    """The URL as a browser reads it; UrlError when it is not an http(s) URL a browser
    would open."""
    if _CONTROL.search(url):
        raise UrlError("the URL holds control characters")
    if url != url.strip(" "):
        raise UrlError("the URL starts or ends with spaces")
    scheme_match = _SCHEME.match(url)
    if scheme_match is None:
        raise UrlError("the URL has no scheme (https://…)")
    scheme = scheme_match.group(1).lower()
    if scheme not in WEB_SCHEMES:
        raise UrlError(f"louise opens only http and https URLs, not {scheme[:40]!r}")
    rest = url[scheme_match.end():]
    after_slashes = rest.lstrip("/\\")
    slashes = rest[:len(rest) - len(after_slashes)]
    end = len(after_slashes)
    for stop in "/\\?#":  # a backslash ends the authority of an http(s) URL
        found = after_slashes.find(stop)
        if found != -1:
            end = min(end, found)
    authority = after_slashes[:end]
    _, at, host_port = authority.rpartition("@")
    written_host, port = _split_port(host_port, scheme)
    if not written_host:
        raise UrlError("the URL has no host")
    host, ip = _host(written_host)
    return WebUrl(scheme=scheme, host=host, port=port, written_host=written_host, ip=ip,
                  userinfo=bool(at), backslash="\\" in slashes + after_slashes[end:end + 1],
                  slashes=slashes, escaped_host="%" in written_host)


def _split_port(host_port: str, scheme: str) -> tuple[str, int | None]:
    """(host, port) as the browser splits them: at the first `:` outside `[…]`."""
    inside = False
    for index, char in enumerate(host_port):
        if char == "[":
            inside = True
        elif char == "]":
            inside = False
        elif char == ":" and not inside:
            digits = host_port[index + 1:]
            if digits and not (digits.isascii() and digits.isdigit()):
                raise UrlError("the URL's port is not a number")
            port = int(digits) if digits else None
            if port is not None and port > 65535:
                raise UrlError("the URL's port is out of range")
            return host_port[:index], None if port == WEB_SCHEMES[scheme] else port
    return host_port, None


def _host(written: str) -> tuple[str, bool]:
    """(the host the browser opens, whether it is an IP address)."""
    if written.startswith("["):
        if not written.endswith("]"):
            raise UrlError("the URL's IPv6 address has no closing bracket")
        inner = written[1:-1]
        if not re.fullmatch(r"[0-9A-Fa-f:.]+", inner):
            raise UrlError("the URL's IPv6 address is not valid")
        try:
            return f"[{ipaddress.IPv6Address(inner).compressed}]", True
        except ValueError:
            raise UrlError("the URL's IPv6 address is not valid") from None
    try:
        decoded = urllib.parse.unquote_to_bytes(written).decode("utf-8")
    except UnicodeDecodeError:
        raise UrlError("the URL's host is not valid text") from None
    ascii_host = _to_ascii(decoded)
    if not ascii_host or _FORBIDDEN.search(ascii_host):
        raise UrlError("the URL's host is not a valid name")
    if _ends_in_number(ascii_host):
        return _ipv4(ascii_host), True
    return ascii_host, False


def _to_ascii(name: str) -> str:
    if name.isascii():
        ascii_name = name.lower()
        for label in ascii_name.split("."):
            if label.startswith("xn--"):
                try:
                    label.encode("ascii").decode("idna")
                except UnicodeError:
                    raise UrlError("the URL's host holds invalid punycode") from None
        return ascii_name
    if _DEVIATIONS.search(name):
        raise UrlError("the URL's host holds letters browsers read in more than one way")
    try:
        return name.encode("idna").decode("ascii").lower()
    except UnicodeError:
        raise UrlError("the URL's host is not a valid international name") from None


def _ends_in_number(host: str) -> bool:
    labels = host.split(".")
    if labels[-1] == "" and len(labels) > 1:
        labels.pop()
    last = labels[-1]
    if last and last.isdigit():
        return True
    return _ipv4_number(last) is not None


def _ipv4_number(part: str) -> int | None:
    """A part of an IPv4 address: decimal, `0x` hex or `0` octal; None when it is not."""
    if not part:
        return None
    base = 10
    if part[:2].lower() == "0x":
        part, base = part[2:], 16
    elif len(part) > 1 and part.startswith("0"):
        part, base = part[1:], 8
    if part == "":
        return 0
    digits = {10: "0123456789", 16: "0123456789abcdefABCDEF", 8: "01234567"}[base]
    if not all(c in digits for c in part):
        return None
    return int(part, base)


def _ipv4(host: str) -> str:
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if len(parts) > 4:
        raise UrlError("the URL's host looks like an IPv4 address but is not one")
    numbers = [_ipv4_number(part) for part in parts]
    if any(n is None for n in numbers):
        raise UrlError("the URL's host looks like an IPv4 address but is not one")
    values = [n for n in numbers if n is not None]
    if any(n > 255 for n in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        raise UrlError("the URL's host is an IPv4 address out of range")
    address = values[-1]
    for index, number in enumerate(values[:-1]):
        address += number * 256 ** (3 - index)
    return str(ipaddress.IPv4Address(address))
