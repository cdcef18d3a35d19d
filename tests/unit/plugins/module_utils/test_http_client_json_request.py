# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""http_client.json_request: the one JSON-over-HTTP request that gateway_worker and weight_swap both send."""

from __future__ import annotations

import json

from ansible_collections.llmserve.sglang.plugins.module_utils import http_client

KEY = "sk-secret-0123456789"


class _RecordingClient(object):
    """Stands in for HardenedClient: records each ``request`` call and answers a fixed dict."""

    def __init__(self, answer):
        self.answer = answer
        self.calls = []

    def request(self, method, url, data=None, headers=None, timeout=30.0):
        self.calls.append(dict(method=method, url=url, data=data, headers=headers, timeout=timeout))
        return self.answer


def test_a_get_without_key_or_body_only_asks_for_json():
    answer = {"status": 200, "msg": "OK", "body": b"{}", "content_type": "application/json"}
    client = _RecordingClient(answer)
    assert http_client.json_request(client, "GET", "http://127.0.0.1:1/workers", 2.5) is answer
    assert client.calls == [dict(method="GET", url="http://127.0.0.1:1/workers", data=None,
                                 headers={"Accept": "application/json"}, timeout=2.5)]


def test_a_body_goes_as_json_and_the_key_only_in_the_authorization_header():
    client = _RecordingClient({"status": 202})
    body = {"url": "http://10.0.0.2:30000", "api_key": None}
    http_client.json_request(client, "POST", "http://127.0.0.1:1/workers", 7, KEY, body)
    call = client.calls[0]
    assert call["method"] == "POST" and call["timeout"] == 7
    assert json.loads(call["data"]) == body
    assert call["headers"] == {"Accept": "application/json", "Content-Type": "application/json",
                               "Authorization": "Bearer %s" % KEY}
    assert KEY not in call["url"] and KEY not in call["data"]


def test_an_empty_body_is_still_sent_and_an_empty_key_is_no_header():
    client = _RecordingClient({"status": 200})
    http_client.json_request(client, "POST", "http://127.0.0.1:1/x", 1, key="", body={})
    http_client.json_request(client, "DELETE", "http://127.0.0.1:1/x", 1, key=None)
    assert client.calls[0]["data"] == "{}"
    assert client.calls[0]["headers"] == {"Accept": "application/json", "Content-Type": "application/json"}
    assert client.calls[1]["data"] is None
    assert client.calls[1]["headers"] == {"Accept": "application/json"}


def test_the_answer_of_the_client_comes_back_as_it_is():
    """No HTTP answer is no exception: the caller reads status -1 as before."""
    answer = {"status": -1, "msg": "Request failed: <urlopen error [Errno 111] Connection refused>",
              "content_type": None, "body": None}
    client = _RecordingClient(answer)
    assert http_client.json_request(client, "GET", "http://127.0.0.1:1/health", 1, KEY) == {
        "status": -1, "msg": "Request failed: <urlopen error [Errno 111] Connection refused>",
        "content_type": None, "body": None}
