"""The option groups a MySQL or MariaDB server reads besides the one a knob names.

mariadbd 10.11 reads [mysqld], [server], [mysqld-10.11], [mariadb], [mariadb-10.11], [mariadbd],
[mariadbd-10.11], [client-server] and [galera] (`mariadbd --help --verbose`), MySQL's mysqld
[mysqld], [server] and [mysqld-8.0]. It takes the lines of all of them in file order, so for one
option the line read last wins whatever its group: a value under [mariadb] after the [mysqld]
one hone edits makes the edit do nothing. Group names match in any case ([MARIADB] is read) but
as written between the brackets ([ mysqld ] is not), as my_print_defaults shows."""

from __future__ import annotations

import re
from collections.abc import Iterator

#: A server's group: its base names, each also with a version suffix (`mysqld-8.0`).
_SERVER_GROUP = re.compile(
    r"(?:mysqld|server|mariadbd?|client-server|galera)(?:-\d+(?:\.\d+)*)?", re.I
)
_HEADER = re.compile(r"^[ \t]*\[(?P<name>[^\]\r\n]*)\][ \t]*\r?$", re.M)


def is_server_group(name: str) -> bool:
    """Whether a MySQL or MariaDB server (of some version) reads the group `name`."""
    return bool(_SERVER_GROUP.fullmatch(name))


def other_server_groups(text: str, own: str) -> Iterator[tuple[str, int, int]]:
    """Each group of the text a server reads other than `own` (as hone finds it: spelled the
    same), as its name and the span of its lines."""
    headers = list(_HEADER.finditer(text))
    for header, following in zip(headers, [*headers[1:], None], strict=True):
        name = header["name"]
        if name != own and is_server_group(name):
            yield name, header.end(), following.start() if following else len(text)
