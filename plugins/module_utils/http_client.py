# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The collection's one HTTP client for modules, shared by ``wait_for_endpoint``, ``gateway_worker`` and
``weight_swap`` (whose JSON calls go through :func:`json_request`).

One request goes through ``ansible.module_utils.urls.Request`` (its documented options only), never follows a
redirect, never goes through a proxy to a loopback or link-local host, and runs under one wall-clock limit from
connect to the last byte of the body (:class:`HardenedClient`, with :class:`~endpoint_wait.RequestWatchdog`); the
body is read up to a cap. What comes back is a plain dict that never raises for HTTP or network errors: status -1
means "no HTTP answer".

``fetch_url`` itself is not used, because it reads an error answer's body whole, without a cap (a server that
answers 503 with gigabytes would fill the memory), takes ``follow_redirects`` from module options these modules do
not have (and so follows redirects), and fails the module on a TLS error instead of reporting it as one poll's
outcome. :func:`build_fetcher` keeps ``fetch_url``'s calling convention and ``(response, info)`` answer, so the rest
of the client (and the tests' fake servers) read like ``fetch_url`` code.

The module's parameters that are read (all optional, so each module declares only those it offers):
``use_proxy`` (default true), ``validate_certs`` (true), ``ca_path``, ``client_cert``, ``client_key``.
"""

from __future__ import annotations

import http.client
import json
import socket
import urllib.error
from urllib.parse import urlsplit

from ansible.module_utils.common.text.converters import to_native
from ansible.module_utils import urls

from ansible_collections.llmserve.sglang.plugins.module_utils.endpoint_wait import (
    NO_CONNECTION,
    RequestDeadline,
    RequestWatchdog,
    is_local_host,
    read_capped,
)
from ansible_collections.llmserve.sglang.plugins.module_utils.text import clean_text, mask_userinfo

DEFAULT_MAX_BODY_BYTES = 1024 * 1024

# Request.open builds an SSL context, loading the CA store, for every request, http included, unless Request gets a
# prebuilt one (its documented ``context`` option). Measured on 2.21 (100 GETs to a local server): 20 ms of CPU a
# request with a new context, 1 ms with one context for the run; at four polls a second the new contexts alone would
# keep a core 8 % busy.


def url_host(url):
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


def is_own_address(host, resolve=socket.getaddrinfo):
    """True when ``host`` (an address or a name) resolves to an address of this machine: one that a socket can be
    bound to. A server bound to the host's own IP is probed at that IP, and a proxy must not see that request (nor
    its API key) any more than one to 127.0.0.1. A name that does not resolve here is not this machine's.

    With ``net.ipv4.ip_nonlocal_bind`` (or ``net.ipv6.ip_nonlocal_bind``) set, any address binds and so counts as
    this machine's: such a request then goes direct, which never hands a key to a proxy."""
    if not host:
        return False
    try:
        answers = resolve(host, None, 0, socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError):
        return False
    for family, dummy, dummy, dummy, sockaddr in answers:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        try:
            with socket.socket(family, socket.SOCK_STREAM) as sock:
                sock.bind((sockaddr[0], 0) + tuple(sockaddr[2:]))
        except OSError:  # EADDRNOTAVAIL: another machine's address
            continue
        return True
    return False


def goes_direct(host, resolve=socket.getaddrinfo):
    """Whether a request to ``host`` must skip any proxy: loopback, link-local and unspecified addresses
    (:func:`~endpoint_wait.is_local_host`) and the addresses of this machine (:func:`is_own_address`)."""
    return is_local_host(host) or is_own_address(host, resolve)


def build_fetcher(module):
    """A ``fetch(module, url, data=None, headers=None, method=None, timeout=10, ca_path=None)`` for one module run.

    It answers ``(response, info)`` as ``fetch_url`` does (``info["status"]`` -1 without an HTTP answer, the headers
    with lower-case names, ``msg``), with three differences: it never reads a body (on an error status the response
    is the ``HTTPError``, read by the caller with its size cap), it never follows a redirect (a 3xx comes back as its
    status with its ``location``, so the Authorization header only goes to the URL's own origin), and it never
    uses a proxy for loopback and link-local hosts and this machine's own addresses (:func:`goes_direct`, decided
    once a host for the run), whatever the environment says.
    """
    p = module.params
    use_proxy = p.get("use_proxy", True)
    tls = dict(validate_certs=p.get("validate_certs", True), client_cert=p.get("client_cert"),
               client_key=p.get("client_key"))
    options = dict(tls, use_proxy=use_proxy, ca_path=p.get("ca_path"), http_agent="ansible-httpget",
                   follow_redirects="none")
    options["context"] = urls.make_context(cafile=p.get("ca_path"), **tls)
    request = urls.Request(**options)
    direct = {}

    def proxy_for(url):
        if not use_proxy:
            return False
        host = url_host(url)
        if host not in direct:
            direct[host] = goes_direct(host)
        return not direct[host]

    def fetch(module, url, data=None, headers=None, method=None, timeout=10, ca_path=None):
        info = {"url": url, "status": -1}
        try:
            resp = request.open(method or "GET", url, data=data, headers=headers, timeout=timeout,
                                use_proxy=proxy_for(url))
        except urllib.error.HTTPError as exc:  # an answer with an error or redirect status
            info.update({k.lower(): v for k, v in (exc.headers or {}).items()})
            info.update(status=exc.code, msg="HTTP Error %s: %s" % (exc.code, clean_text(exc.reason)))
            return (exc if exc.fp is not None else None), info
        except urllib.error.URLError as exc:  # refused, name not found, TLS
            info.update(status=int(getattr(exc, "code", -1) or -1), msg="Request failed: %s" % to_native(exc))
        except http.client.BadStatusLine as exc:
            info.update(msg="Connection failure: connection was closed before a valid response was received: %s"
                        % to_native(exc.line))
        except OSError as exc:  # reset, timed out
            info.update(msg="Connection failure: %s" % to_native(exc))
        except ValueError as exc:
            module.fail_json(msg="cannot request %s: %s" % (mask_userinfo(url), to_native(exc)))
        except Exception as exc:  # ansible's own errors (SSLValidationError, ...), other http.client errors
            info.update(msg="Request failed: %s" % to_native(exc))
        else:
            info.update({k.lower(): v for k, v in resp.headers.items()})
            info.update(status=resp.status, msg="OK (%s bytes)" % resp.headers.get("Content-Length", "unknown"))
            return resp, info
        info["msg"] = clean_text(info["msg"])
        return None, info

    fetch.request = request
    return fetch


def json_request(client, method, url, timeout, key=None, body=None):
    """One JSON request through ``client`` (a :class:`HardenedClient` or anything with its ``request`` call): the
    answer dict of ``client.request``.

    Asks for ``application/json``; ``body`` (when not None) goes as JSON with its ``Content-Type``; ``key`` (when
    given) goes only in the ``Authorization: Bearer <key>`` header, never in the URL, so no message that names the
    URL can show it."""
    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body)
        headers["Content-Type"] = "application/json"
    if key:
        headers["Authorization"] = "Bearer %s" % key
    return client.request(method, url, data=data, headers=headers, timeout=timeout)


def client_argument_spec(max_body_bytes=DEFAULT_MAX_BODY_BYTES):
    """The options of a module that talks HTTP through HardenedClient (build_fetcher reads validate_certs, ca_path and
    use_proxy of module.params; the caller passes max_body_bytes to the client)."""
    return dict(max_body_bytes=dict(type="int", default=max_body_bytes), validate_certs=dict(type="bool", default=True),
                ca_path=dict(type="path"), use_proxy=dict(type="bool", default=True))


class HardenedClient(object):
    """Requests under a wall-clock limit each, with capped bodies; use it as a context manager (the watchdog's
    SIGALRM handler is installed on entry and removed on exit).

    ``fetch`` is what :func:`build_fetcher` returns or anything with its call signature (tests pass fakes).
    """

    def __init__(self, module, fetch, max_body_bytes=DEFAULT_MAX_BODY_BYTES):
        self.module = module
        self.fetch = fetch
        self.max_body_bytes = max_body_bytes
        self.watchdog = None

    def __enter__(self):
        self.watchdog = RequestWatchdog()
        return self

    def __exit__(self, *exc_info):
        self.close()
        return False

    def close(self):
        if self.watchdog is not None:
            self.watchdog.close()
            self.watchdog = None

    def request(self, method, url, data=None, headers=None, timeout=30.0):
        """One request; a dict with ``status`` (-1: no HTTP answer), ``msg``, ``content_type``, ``body`` (bytes,
        or None when it was not read whole) and, where it applies, ``reason`` (a redirect that was not followed),
        ``location`` and ``body_problem`` (why the body is missing: too large, too slow, reset)."""
        answer = {"status": NO_CONNECTION, "msg": "", "content_type": None, "body": None}
        held = []
        watchdog = self.watchdog or RequestWatchdog()
        try:
            watchdog.run(timeout, self._exchange, method, url, data, headers, timeout, answer, held)
        except RequestDeadline:
            if answer["status"] == NO_CONNECTION:
                answer["msg"] = "Connection failure: no complete answer within %.3g s" % timeout
            else:
                answer["body"] = None
                answer["body_problem"] = "the body was not read completely within %.3g s" % timeout
        finally:
            for resp in held:
                try:
                    resp.close()
                except Exception:
                    pass
            if watchdog is not self.watchdog:
                watchdog.close()
        return answer

    def _exchange(self, method, url, data, headers, timeout, answer, held):
        resp, info = self.fetch(self.module, url, data=data, headers=headers, method=method, timeout=timeout,
                                ca_path=self.module.params.get("ca_path"))
        if resp is not None:
            held.append(resp)
        status = int(info.get("status", NO_CONNECTION))
        answer.update(status=status, msg=clean_text(to_native(info.get("msg", ""))),
                      content_type=info.get("content-type"))
        if 300 <= status < 400:
            location = info.get("location")
            if location:
                answer["location"] = clean_text(mask_userinfo(to_native(location)))
            answer["reason"] = ("redirect to %s, not followed" % answer["location"]
                                if location else "redirect (%s) without a Location, not followed" % status)
        limit = self.max_body_bytes
        try:
            if resp is not None:
                body, complete = read_capped(resp, limit)
            else:
                body = info.get("body")
                complete = body is None or len(body) <= limit
        except Exception as exc:  # a reset or stalled body read keeps the status but loses the body
            answer["body_problem"] = "reading the body failed: %s" % clean_text(to_native(exc))
            return
        if not complete:
            answer["body_problem"] = "the body is larger than max_body_bytes, %d bytes; it was not read" % limit
            body = None
        answer["body"] = body
