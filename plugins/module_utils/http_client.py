# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The collection's one HTTP client for modules, shared by ``wait_for_endpoint`` and ``gateway_worker``.

One request goes through ``ansible.module_utils.urls.Request`` with the TLS context built once per module run
(:class:`ContextFetcher`), never follows a redirect, never goes through a proxy to a loopback or link-local host,
and runs under one wall-clock limit from connect to the last byte of the body (:class:`HardenedClient`, with
:class:`~endpoint_wait.RequestWatchdog`); the body is read up to a cap. What comes back is a plain dict that never
raises for HTTP or network errors: status -1 means "no HTTP answer".

The module's parameters that are read (all optional, so each module declares only those it offers):
``use_proxy`` (default true), ``validate_certs`` (true), ``ca_path``, ``client_cert``, ``client_key``.
"""

from __future__ import annotations

import http.client
import inspect
import urllib.error
from urllib.parse import urlsplit

from ansible.module_utils.common.text.converters import to_native
from ansible.module_utils import urls

from ansible_collections.llmserve.sglang.plugins.module_utils.endpoint_wait import (
    NO_CONNECTION,
    RequestDeadline,
    RequestWatchdog,
    clean_text,
    is_local_host,
    mask_userinfo,
    read_capped,
)

DEFAULT_MAX_BODY_BYTES = 1024 * 1024


def _request_takes_context():
    try:
        return hasattr(urls, "make_context") and "context" in inspect.signature(urls.Request.open).parameters
    except (TypeError, ValueError):
        return False


def url_host(url):
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


class ContextFetcher(object):
    """One request through ``ansible.module_utils.urls.Request``, with the TLS context built once per run.

    ``fetch_url`` builds a new SSL context and loads the system CA store for every request, even for
    plain http (about 25 ms of CPU each); at four polls a second that would be most of a module's
    cost. Returns ``(response, info)`` like ``fetch_url``, with errors mapped the same way (status -1
    without an HTTP answer), but it never reads a body: on an error status the response is the
    ``HTTPError``, and the caller reads its body with its own size cap.

    Redirects are never followed, so the Authorization header only ever goes to the URL's own origin
    and a redirect target's answer never counts; a 3xx comes back as its status with its
    ``location``. Proxies are never used for loopback and link-local hosts, whatever the
    environment says, so a request to a local server (API key included) cannot go to a proxy.
    """

    def __init__(self, module):
        p = module.params
        self.use_proxy = p.get("use_proxy", True)
        validate_certs = p.get("validate_certs", True)
        self.context = None
        options = dict(use_proxy=self.use_proxy, validate_certs=validate_certs, client_cert=p.get("client_cert"),
                       client_key=p.get("client_key"), ca_path=p.get("ca_path"), http_agent="ansible-httpget",
                       follow_redirects="none")
        if _request_takes_context():
            self.context = urls.make_context(cafile=p.get("ca_path"), validate_certs=validate_certs,
                                             client_cert=p.get("client_cert"), client_key=p.get("client_key"))
            options["context"] = self.context
        self.request = urls.Request(**options)

    def __call__(self, module, url, data=None, headers=None, method=None, timeout=10, ca_path=None):
        info = {"url": url, "status": -1}
        use_proxy = self.use_proxy and not is_local_host(url_host(url))
        try:
            resp = self.request.open(method or "GET", url, data=data, headers=headers, timeout=timeout,
                                     use_proxy=use_proxy)
        except urllib.error.HTTPError as exc:
            info.update({k.lower(): v for k, v in (exc.headers or {}).items()})
            info.update(status=exc.code, msg="HTTP Error %s: %s" % (exc.code, clean_text(exc.reason)))
            return (exc if exc.fp is not None else None), info
        except urllib.error.URLError as exc:
            info.update(status=int(getattr(exc, "code", -1) or -1), msg="Request failed: %s" % to_native(exc))
        except http.client.BadStatusLine as exc:
            info.update(msg="Connection failure: connection was closed before a valid response was received: %s"
                        % to_native(exc.line))
        except OSError as exc:
            info.update(msg="Connection failure: %s" % to_native(exc))
        except ValueError as exc:
            module.fail_json(msg="cannot request %s: %s" % (mask_userinfo(url), to_native(exc)))
        except Exception as exc:  # ansible's own ConnectionError family, http.client's errors: not yet
            info.update(msg="Request failed: %s" % to_native(exc))
        else:
            info.update({k.lower(): v for k, v in resp.headers.items()})
            info.update(status=resp.status, msg="OK (%s bytes)" % resp.headers.get("Content-Length", "unknown"))
            return resp, info
        info["msg"] = clean_text(info["msg"])
        return None, info


def build_fetcher(module):
    return ContextFetcher(module)


class HardenedClient(object):
    """Requests under a wall-clock limit each, with capped bodies; use it as a context manager (the watchdog's
    SIGALRM handler is installed on entry and removed on exit).

    ``fetch`` is a :class:`ContextFetcher` or anything with its call signature (tests pass fakes).
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
