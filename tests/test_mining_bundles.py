"""The JavaScript miner on what real browser bundles write: route tables, ``new URL(path, base)``,
minified ``$``, specification and error-reference URIs, default file names.

Each case is a line of code as a bundle ships it (supabase-js, Octokit's route table,
swagger-ui, react-dom) and the exact endpoints (url, how, method, query) it must give.
"""

from __future__ import annotations

import pytest

from trawl.mining import extract_file

URL = "https://cdn.example.com/dist/app.js"


def found(code: str) -> set[tuple]:
    findings = extract_file(code.encode(), URL, "application/javascript")
    return {(e.url, e.how, e.method, e.query) for e in findings.endpoints}


def params(code: str) -> set[str]:
    return extract_file(code.encode(), URL, "application/javascript").params


ROUTES = [
    # Octokit's table: the method, placeholders as EXPR, the path under an unknown API base.
    (
        'const E = {a: ["GET /repos/{owner}/{repo}"]};',
        {("EXPR/repos/EXPR/EXPR", "route", "GET", ())},
    ),
    ('x = ["POST /user/repos"];', {("EXPR/user/repos", "route", "POST", ())}),
    (
        'x = ["POST /repos/{owner}/{repo}/releases/{release_id}/assets{?name,label}"];',
        {("EXPR/repos/EXPR/EXPR/releases/EXPR/assets", "route", "POST", ("label", "name"))},
    ),
    ('x = "DELETE /orgs/:org/members/:user";', {("EXPR/orgs/EXPR/members/EXPR", "route", "DELETE", ())}),
    # Not routes: a method word in prose, a lower-case method, a route without a path.
    ('x = "GET the data first";', set()),
    ('x = "get /users";', set()),
    ('x = "POST";', set()),
    # A path template without a method: a string endpoint, placeholders as EXPR.
    ('x = "/users/{id}/keys";', {("https://cdn.example.com/users/EXPR/keys", "string", None, ())}),
    ('x = "/users/:id/keys";', {("https://cdn.example.com/users/EXPR/keys", "string", None, ())}),
    # `:` inside a segment is no placeholder.
    ('x = "/time/12:30";', {("https://cdn.example.com/time/12:30", "string", None, ())}),
]


@pytest.mark.parametrize(("code", "expected"), ROUTES)
def test_route_strings_and_placeholders(code: str, expected: set[tuple]) -> None:
    assert found(code) == expected


def test_placeholders_are_parameters() -> None:
    code = 'x = ["GET /repos/{owner}/{repo}", "/users/:user_id", "PUT /a/{?per_page}"];'
    assert params(code) == {"owner", "repo", "user_id", "per_page"}


NEW_URL = [
    # supabase-js: the base is the client's URL, unknown to the bundle.
    ("this.rest = new URL(`rest/v1`, r).href;", {("EXPR/rest/v1", "url", None, ())}),
    ("u = new URL('functions/v1', base);", {("EXPR/functions/v1", "url", None, ())}),
    ("u = new URL('/auth/v1', base);", {("EXPR/auth/v1", "url", None, ())}),
    # A base the file gives: resolved against it, not against the bundle.
    (
        'u = new URL("v2/items", "https://api.example.net/root/");',
        {("https://api.example.net/root/v2/items", "url", None, ())},
    ),
    (
        'const B = "https://api.example.net"; u = new URL("/x", B);',
        {("https://api.example.net/x", "url", None, ())},
    ),
    ('u = new URL("https://other.example.org/a", b);', {("https://other.example.org/a", "url", None, ())}),
    # An unknown path: nothing, and the base used only to check a URL is no endpoint either.
    ('try { new URL(s, "https://vladimirgorej.com"); } catch {}', set()),
    ("u = new URL(`${this.url}/rpc/${fn}`);", {("EXPR/rpc/EXPR", "url", None, ())}),
]


@pytest.mark.parametrize(("code", "expected"), NEW_URL)
def test_new_url_resolves_against_its_base(code: str, expected: set[tuple]) -> None:
    assert found(code) == expected


RELATIVE = [
    # A bare relative API path in a script: its page or client decides the base, not the folder.
    ('const p = "rest/v1";', {("EXPR/rest/v1", "string", None, ())}),
    ('const p = "api/users";', {("EXPR/api/users", "string", None, ())}),
    # The page's own origin spelled out: a same-origin path.
    (
        "s.redirect = `${location.protocol}//${location.host}${path}/oauth2-redirect.html`;",
        {("EXPR/oauth2-redirect.html", "string", None, ())},
    ),
    # Root-relative and absolute strings are as before.
    ('const p = "/api/users";', {("https://cdn.example.com/api/users", "string", None, ())}),
]


@pytest.mark.parametrize(("code", "expected"), RELATIVE)
def test_relative_strings_keep_an_unknown_base(code: str, expected: set[tuple]) -> None:
    assert found(code) == expected


JQUERY = [
    ('$.get("/api/items", {q: 1});', {("https://cdn.example.com/api/items", "jquery", "GET", ("q",))}),
    ('jQuery.post("save.php", {a: 1});', {("https://cdn.example.com/dist/save.php", "jquery", "POST", ())}),
    ('$.ajax({url: "/api/x", type: "PUT"});', {("https://cdn.example.com/api/x", "jquery", "PUT", ())}),
    # Minified code binds `$` to anything (swagger-ui: an Immutable map); a bare word is a key.
    ('const Y = $.get("summary");', set()),
    ('return this.get("summary");', set()),
    ('m = map.get("/api/not-jquery");', {("https://cdn.example.com/api/not-jquery", "string", None, ())}),
]


@pytest.mark.parametrize(("code", "expected"), JQUERY)
def test_jquery_only_on_dollar_or_jquery_and_only_for_urls(code: str, expected: set[tuple]) -> None:
    assert found(code) == expected


NOT_ENDPOINTS = [
    'const s = {$schema: "http://json-schema.org/draft-07/schema#"};',
    'const s = "https://json-schema.org/draft/2020-12/schema";',
    'const d = "https://spec.openapis.org/oas/3.1/dialect/base";',
    'throw Error("https://reactjs.org/docs/error-decoder.html?invariant=" + e);',
    'throw Error("Minified React error #" + e + "; visit https://react.dev/errors/" + e);',
    'const u = "https://react.dev/errors/" + e;',
    'download(blob, "response.txt");',
    'const name = "export.json";',
    'const u = "/" + a + "/" + b;',
    "const u = `http://${host}`;",
]


@pytest.mark.parametrize("code", NOT_ENDPOINTS)
def test_specification_and_error_reference_uris_are_not_endpoints(code: str) -> None:
    assert found(code) == set()


def test_a_server_side_file_name_is_still_an_endpoint() -> None:
    assert found('const u = "login.php";') == {("EXPR/login.php", "string", None, ())}


HELPERS = [
    # supabase-js's own request helper: the method literal, then the URL.
    ('await Q(this.fetch, "POST", `${this.url}/signup`, {body: b});', {("EXPR/signup", "call", "POST", ())}),
    (
        "r = request('GET', '/api/items?page=1');",
        {("https://cdn.example.com/api/items?page=1", "call", "GET", ("page",))},
    ),
    # Not a request: a method word then something that is no URL, or a lower-case word.
    ('log("GET", "done");', set()),
    ('x = pick("get", "/api/x");', {("https://cdn.example.com/api/x", "string", None, ())}),
]


@pytest.mark.parametrize(("code", "expected"), HELPERS)
def test_a_request_helper_gives_its_method(code: str, expected: set[tuple]) -> None:
    assert found(code) == expected
