"""A crates.io db-dump's tables, and the rows a crawl of it must store.

``TABLES`` maps each dump table to its (columns, rows), columns in no schema order
with an unknown one inserted mid-row; :func:`tests.servers.crates_dump.make_dump`
packs them. A crate's description (``BIG``) is over 131,072 bytes on many lines
with quotes and commas. ``EXPECTED_CRATES``, ``EXPECTED_VERSIONS`` and
``EXPECTED_DEPENDENCIES`` are the rows ``CRATE_SQL``, ``VERSION_SQL`` and
``DEPENDENCY_SQL`` read back; ``EXPECTED_OTHERS`` the (SQL, rows) of every other
table; all written from the same dicts, not from the reader. :func:`many_versions`
is a ``versions`` table of as many generated rows as a test needs.
"""

from __future__ import annotations

BIG = "\n".join(f'line {i}: "quoted", with commas, {"x" * 60}' for i in range(2200))
assert len(BIG) > 131_072

CRATE_COLUMNS = [
    "created_at",
    "description",
    "documentation",
    "homepage",
    "id",
    "max_features",
    "max_upload_size",
    "name",
    "readme",
    "repository",
    "trustpub_only",
    "updated_at",
]
CRATES = [
    {
        "id": 1,
        "name": "serde",
        "created_at": "2014-12-05 20:20:39.487502",
        "description": BIG,
        "documentation": "",
        "homepage": None,
        "repository": "https://github.com/serde-rs/serde",
        "readme": '# serde\n\nA "framework",\nfor serializing',
        "trustpub_only": False,
        "updated_at": "2026-08-30 10:00:00.5",
    },
    {
        "id": 2,
        "name": "tokio",
        "created_at": "2016-07-01 00:00:00",
        "description": "An event-driven, I/O platform",
        "documentation": "https://docs.rs/tokio",
        "homepage": "https://tokio.rs",
        "repository": None,
        "readme": None,
        "trustpub_only": True,
        "updated_at": "2026-08-31 09:08:07.000001+00",
    },
    {"id": 3, "name": "tiny", "created_at": "2020-01-01 00:00:00", "updated_at": "2020-01-02 00:00:00"},
]
VERSION_COLUMNS = [
    "bin_names",
    "checksum",
    "crate_id",
    "inserted_mid_row",
    "crate_size",
    "created_at",
    "downloads",
    "edition",
    "has_lib",
    "id",
    "license",
    "num",
    "rust_version",
    "updated_at",
    "yanked",
]
VERSIONS = [
    {
        "id": 11,
        "crate_id": 1,
        "num": "1.0.200",
        "created_at": "2026-08-30 10:00:00",
        "downloads": 1000,
        "yanked": False,
        "license": "MIT OR Apache-2.0",
        "crate_size": 77000,
        "rust_version": "1.31",
        "bin_names": [],
        "inserted_mid_row": "new, column",
        "updated_at": "2026-08-30 10:00:00",
    },
    {
        "id": 12,
        "crate_id": 1,
        "num": "1.0.199",
        "created_at": "2026-08-01 10:00:00",
        "downloads": 5,
        "yanked": True,
        "license": None,
        "bin_names": ["serde-cli", "x y"],
        "updated_at": "2026-08-02 10:00:00",
    },
    {
        "id": 21,
        "crate_id": 2,
        "num": "1.40.0",
        "created_at": "2026-08-31 09:08:07",
        "downloads": 0,
        "yanked": False,
        "license": "MIT",
        "has_lib": True,
        "updated_at": "2026-08-31 09:08:07",
    },
    {
        "id": 31,
        "crate_id": 3,
        "num": "0.1.0",
        "created_at": "2020-01-01 00:00:00",
        "downloads": 2,
        "yanked": False,
        "license": "",
        "updated_at": "2020-01-01 00:00:00",
    },
]
DEPENDENCY_COLUMNS = [
    "crate_id",
    "default_features",
    "explicit_name",
    "features",
    "id",
    "kind",
    "optional",
    "req",
    "target",
    "version_id",
]
DEPENDENCIES = [
    {
        "id": 100,
        "version_id": 21,
        "crate_id": 1,
        "req": "^1.0",
        "features": ["derive", "std"],
        "kind": 0,
        "optional": False,
        "default_features": True,
    },
    {
        "id": 101,
        "version_id": 21,
        "crate_id": 3,
        "req": ">=0.1, <0.3",
        "features": [],
        "kind": 2,
        "optional": True,
        "default_features": False,
        "target": "cfg(unix)",
        "explicit_name": "tiny2",
    },
    {
        "id": 102,
        "version_id": 11,
        "crate_id": 3,
        "req": "=0.1.0",
        "features": ["a b"],
        "kind": 1,
        "optional": False,
        "default_features": True,
    },
]
TABLES = {
    "crates": (CRATE_COLUMNS, CRATES),
    "crate_downloads": (
        ["crate_id", "downloads"],
        [
            {"crate_id": 1, "downloads": 500_000_000},
            {"crate_id": 2, "downloads": 300},
            {"crate_id": 3, "downloads": 0},
        ],
    ),
    "default_versions": (
        ["crate_id", "num_versions", "version_id"],
        [{"crate_id": 1, "version_id": 11, "num_versions": 2}, {"crate_id": 2, "version_id": 21}],
    ),
    "versions": (VERSION_COLUMNS, VERSIONS),
    "dependencies": (DEPENDENCY_COLUMNS, DEPENDENCIES),
    "keywords": (
        ["crates_cnt", "created_at", "id", "keyword"],
        [
            {"id": 1, "keyword": "serde", "crates_cnt": 9},
            {"id": 2, "keyword": "async", "crates_cnt": 1, "created_at": "2020-01-01 00:00:00"},
        ],
    ),
    "version_downloads": (
        ["date", "downloads", "version_id"],
        [
            {"version_id": 11, "date": "2026-08-30", "downloads": 10},
            {"version_id": 11, "date": "2026-08-31", "downloads": 12},
            {"version_id": 21, "date": "2026-08-31", "downloads": 0},
        ],
    ),
    "categories": (
        ["category", "crates_cnt", "created_at", "description", "id", "path", "slug"],
        [
            {
                "id": 4,
                "category": "Encoding",
                "slug": "encoding",
                "description": 'Encoding and/or decoding data,\nfrom one "format" to another.',
                "path": "encoding",
                "crates_cnt": 2,
                "created_at": "2017-01-17 19:13:05.112025",
            }
        ],
    ),
    "crates_keywords": (
        ["crate_id", "keyword_id"],
        [{"crate_id": 1, "keyword_id": 1}, {"crate_id": 2, "keyword_id": 2}],
    ),
    "crates_categories": (["category_id", "crate_id"], [{"crate_id": 1, "category_id": 4}]),
    "crate_owners": (
        ["crate_id", "created_at", "created_by", "owner_id", "owner_kind"],
        [
            {"crate_id": 1, "created_at": "2014-12-05 20:20:39", "owner_id": 5, "owner_kind": 0},
            {
                "crate_id": 1,
                "created_at": "2015-01-01 00:00:00",
                "created_by": 5,
                "owner_id": 7,
                "owner_kind": 1,
            },
        ],
    ),
    "users": (
        ["gh_avatar", "gh_id", "gh_login", "id", "inserted_mid_row", "name"],
        [
            {
                "id": 5,
                "gh_login": "dtolnay",
                "gh_id": 1940490,
                "name": "David Tolnay",
                "gh_avatar": "",
                "inserted_mid_row": "x, y",
            },
            {"id": 6, "gh_login": "ghost", "gh_id": -1},
        ],
    ),  # fmt: skip
    "teams": (
        ["avatar", "github_id", "id", "login", "name", "org_id"],
        [{"id": 7, "login": "github:serde-rs:publish", "github_id": 3, "name": "publish", "org_id": 9}],
    ),
    "deleted_crates": (
        ["available_at", "created_at", "deleted_at", "deleted_by", "id", "message", "name"],
        [
            {
                "id": 1,
                "name": "gone",
                "created_at": "2020-01-01 00:00:00",
                "deleted_at": "2026-08-01 00:00:00",
                "available_at": "2026-08-02 00:00:00",
                "deleted_by": 6,
                "message": None,
            },
        ],
    ),  # fmt: skip
    "metadata": (["total_downloads"], [{"total_downloads": 500_000_300}]),
}

#: The other tables as stored: (SQL, rows), rows written from the dicts above.
EXPECTED_OTHERS = {
    "version_download": (
        "SELECT version_id, date, downloads FROM version_download_records ORDER BY version_id, date",
        [(11, "2026-08-30", 10), (11, "2026-08-31", 12), (21, "2026-08-31", 0)],
    ),
    "keyword": (
        "SELECT id, keyword, crates_cnt, created_at FROM keyword_records ORDER BY id",
        [(1, "serde", 9, None), (2, "async", 1, "2020-01-01T00:00:00Z")],
    ),
    "category": (
        "SELECT id, category, slug, description, path, crates_cnt, created_at FROM category_records",
        [
            (
                4,
                "Encoding",
                "encoding",
                'Encoding and/or decoding data,\nfrom one "format" to another.',
                "encoding",
                2,
                "2017-01-17T19:13:05.112025Z",
            )
        ],
    ),  # fmt: skip
    "crate_keyword": (
        "SELECT crate_id, keyword_id FROM crate_keyword_records ORDER BY crate_id",
        [(1, 1), (2, 2)],
    ),
    "crate_category": ("SELECT crate_id, category_id FROM crate_category_records", [(1, 4)]),
    "crate_owner": (
        "SELECT crate_id, owner_id, owner_kind, created_at, created_by"
        " FROM crate_owner_records ORDER BY owner_id",
        [(1, 5, "user", "2014-12-05T20:20:39Z", None), (1, 7, "team", "2015-01-01T00:00:00Z", 5)],
    ),
    "user": (
        "SELECT id, gh_login, gh_id, name, gh_avatar FROM user_records ORDER BY id",
        [(5, "dtolnay", 1940490, "David Tolnay", ""), (6, "ghost", -1, None, None)],
    ),
    "team": (
        "SELECT id, login, github_id, name, avatar, org_id FROM team_records",
        [(7, "github:serde-rs:publish", 3, "publish", None, 9)],
    ),
    "deleted_crate": (
        "SELECT id, name, created_at, deleted_at, deleted_by, message, available_at"
        " FROM deleted_crate_records",
        [(1, "gone", "2020-01-01T00:00:00Z", "2026-08-01T00:00:00Z", 6, None, "2026-08-02T00:00:00Z")],
    ),
    "crates_dump": (
        "SELECT snapshot, timestamp, crates_io_commit, total_downloads, tables, rows"
        " FROM crates_dump_records",
        [("2026-09-01-020003", "2026-09-01T02:00:03Z", "0" * 40, 500_000_300, 14, 30)],
    ),
}

EXPECTED_CRATES = [
    (
        1,
        "serde",
        "2014-12-05T20:20:39.487502Z",
        "2026-08-30T10:00:00.5Z",
        BIG,
        None,
        "",
        "https://github.com/serde-rs/serde",
        500_000_000,
        11,
    ),
    (
        2,
        "tokio",
        "2016-07-01T00:00:00Z",
        "2026-08-31T09:08:07.000001Z",
        "An event-driven, I/O platform",
        "https://tokio.rs",
        "https://docs.rs/tokio",
        None,
        300,
        21,
    ),
    (3, "tiny", "2020-01-01T00:00:00Z", "2020-01-02T00:00:00Z", None, None, None, None, 0, None),
]
EXPECTED_VERSIONS = [
    (
        11,
        1,
        "1.0.200",
        "2026-08-30T10:00:00Z",
        "2026-08-30T10:00:00Z",
        1000,
        0,
        "MIT OR Apache-2.0",
        77000,
        "1.31",
    ),
    (12, 1, "1.0.199", "2026-08-01T10:00:00Z", "2026-08-02T10:00:00Z", 5, 1, None, None, None),
    (21, 2, "1.40.0", "2026-08-31T09:08:07Z", "2026-08-31T09:08:07Z", 0, 0, "MIT", None, None),
    (31, 3, "0.1.0", "2020-01-01T00:00:00Z", "2020-01-01T00:00:00Z", 2, 0, "", None, None),
]
EXPECTED_DEPENDENCIES = [
    (100, 21, 1, "^1.0", 0, 1, '["derive","std"]', None, "normal", None),
    (101, 21, 3, ">=0.1, <0.3", 1, 0, "[]", "cfg(unix)", "dev", "tiny2"),
    (102, 11, 3, "=0.1.0", 0, 1, '["a b"]', None, "build", None),
]

CRATE_SQL = (
    "SELECT id, name, created_at, updated_at, description, homepage, documentation, repository,"
    " downloads, default_version_id FROM crate_records ORDER BY id"
)
VERSION_SQL = (
    "SELECT id, crate_id, num, created_at, updated_at, downloads, yanked, license, crate_size,"
    " rust_version FROM version_records ORDER BY id"
)
DEPENDENCY_SQL = (
    "SELECT id, version_id, crate_id, req, optional, default_features, features, target, kind,"
    " explicit_name FROM dependency_records ORDER BY id"
)


def many_versions(count: int, start: int = 1000) -> tuple[list, list]:
    """The ``versions`` table as (columns, rows) with ``count`` generated rows (ids from ``start``)."""
    return VERSION_COLUMNS, [
        {"id": n, "crate_id": 1 + n % 3, "num": f"9.{n}.0", "downloads": n, "yanked": False}
        for n in range(start, start + count)
    ]
