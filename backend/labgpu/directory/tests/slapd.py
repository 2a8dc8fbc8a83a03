"""A real OpenLDAP server (Debian's `slapd`) on loopback with a throwaway directory.

The directory is loaded offline with slapadd from SEED_LDIF, then slapd serves it on a free port
of 127.0.0.1 in the foreground (a child of the test process, stopped after the test). Only the
service account may search; people may bind as themselves; nobody may read passwords.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import ldap
import ldap.modlist

SUFFIX = "dc=labgpu,dc=test"
ROOT_DN = f"cn=admin,{SUFFIX}"
ROOT_PASSWORD = "root-secret"
READER_DN = f"cn=labgpu-reader,ou=services,{SUFFIX}"
READER_PASSWORD = "reader-secret"
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"
CLUBS = f"ou=clubs,{SUFFIX}"
# carol's and Alice's uids equal (or case-vary) the local site admin carol's and researcher
# alice's usernames: strangers to them, who must get accounts of their own (issue 22).
PASSWORDS = {
    "ada": "ada-analytical-engine",
    "grace": "grace-compiler-1952",
    "carol": "a-stranger-named-carol",
    "Alice": "a-stranger-named-alice",
}
SEARCH_PATH = f"{os.environ.get('PATH', '')}:/usr/sbin:/usr/local/sbin"


def ssha(password: str) -> str:
    """RFC 2307 {SSHA}, as slappasswd writes it: the directory never holds a plain password."""
    salt = os.urandom(8)
    digest = hashlib.sha1(password.encode() + salt).digest()
    return "{SSHA}" + base64.b64encode(digest + salt).decode()


def seed_ldif() -> str:
    return f"""\
dn: {SUFFIX}
objectClass: dcObject
objectClass: organization
dc: labgpu
o: LabGPU test university

dn: ou=people,{SUFFIX}
objectClass: organizationalUnit
ou: people

dn: ou=groups,{SUFFIX}
objectClass: organizationalUnit
ou: groups

dn: ou=services,{SUFFIX}
objectClass: organizationalUnit
ou: services

dn: {READER_DN}
objectClass: organizationalRole
objectClass: simpleSecurityObject
cn: labgpu-reader
userPassword: {ssha(READER_PASSWORD)}

dn: uid=ada,{PEOPLE}
objectClass: inetOrgPerson
uid: ada
cn: Ada Lovelace
givenName: Ada
sn: Lovelace
mail: ada@uni.example
userPassword: {ssha(PASSWORDS["ada"])}

dn: uid=grace,{PEOPLE}
objectClass: inetOrgPerson
uid: grace
cn: Grace Hopper
givenName: Grace
sn: Hopper
mail: grace@uni.example
userPassword: {ssha(PASSWORDS["grace"])}

dn: uid=carol,{PEOPLE}
objectClass: inetOrgPerson
uid: carol
cn: Carol Stranger
sn: Stranger
mail: carol.stranger@students.example
userPassword: {ssha(PASSWORDS["carol"])}

dn: uid=Alice,{PEOPLE}
objectClass: inetOrgPerson
uid: Alice
cn: Alice Stranger
sn: Stranger
mail: alice.stranger@students.example
userPassword: {ssha(PASSWORDS["Alice"])}

dn: {CLUBS}
objectClass: organizationalUnit
ou: clubs

dn: cn=gpu-admins,{CLUBS}
objectClass: groupOfNames
cn: gpu-admins
description: a student club whose cn equals the site admins' group's
member: uid=carol,{PEOPLE}

dn: cn=vision-lab,{GROUPS}
objectClass: groupOfNames
cn: vision-lab
member: uid=ada,{PEOPLE}

dn: cn=gpu-admins,{GROUPS}
objectClass: groupOfNames
cn: gpu-admins
member: uid=grace,{PEOPLE}

dn: cn=language-lab,{GROUPS}
objectClass: groupOfNames
cn: language-lab
member: uid=ada,{PEOPLE}
member: uid=grace,{PEOPLE}
"""


def slapd_conf(workdir: Path) -> str:
    schema = Path("/etc/ldap/schema")
    return f"""\
include {schema}/core.schema
include {schema}/cosine.schema
include {schema}/inetorgperson.schema
include {schema}/nis.schema
pidfile {workdir}/slapd.pid
argsfile {workdir}/slapd.args
modulepath /usr/lib/ldap
moduleload back_mdb
database mdb
maxsize 16777216
suffix "{SUFFIX}"
rootdn "{ROOT_DN}"
rootpw {ROOT_PASSWORD}
directory {workdir}/db
access to attrs=userPassword
    by anonymous auth
    by * none
access to *
    by dn.exact="{READER_DN}" read
    by self read
    by * none
"""


def slapd_path() -> str | None:
    return shutil.which("slapd", path=SEARCH_PATH)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Slapd:
    uri: str
    workdir: Path

    def admin(self) -> ldap.ldapobject.LDAPObject:
        """A connection bound as the directory's root, to change people and groups in tests."""
        connection = ldap.initialize(self.uri, bytes_mode=False)
        connection.simple_bind_s(ROOT_DN, ROOT_PASSWORD)
        return connection

    def remove_person(self, uid: str) -> None:
        connection = self.admin()
        dn = f"uid={uid},{PEOPLE}"
        for group_dn, attrs in connection.search_s(
            GROUPS, ldap.SCOPE_ONELEVEL, f"(member={dn})", ["member"]
        ):
            if len(attrs["member"]) == 1:
                connection.delete_s(group_dn)
            else:
                connection.modify_s(group_dn, [(ldap.MOD_DELETE, "member", [dn.encode()])])
        connection.delete_s(dn)
        connection.unbind_s()

    def rename_person(self, uid: str, new_uid: str) -> None:
        """modrdn: the entry keeps its entryUUID under a new DN (and login name)."""
        connection = self.admin()
        connection.rename_s(f"uid={uid},{PEOPLE}", f"uid={new_uid}", delold=1)
        connection.unbind_s()

    def remove_member(self, group: str, uid: str) -> None:
        connection = self.admin()
        dn = f"uid={uid},{PEOPLE}"
        connection.modify_s(f"cn={group},{GROUPS}", [(ldap.MOD_DELETE, "member", [dn.encode()])])
        connection.unbind_s()

    def environ(self, **overrides: str) -> dict[str, str]:
        """The LABGPU_LDAP_* variables an operator would set for this directory."""
        return {
            "LABGPU_LDAP_SERVER_URI": self.uri,
            "LABGPU_LDAP_BIND_DN": READER_DN,
            "LABGPU_LDAP_BIND_PASSWORD": READER_PASSWORD,
            "LABGPU_LDAP_USER_SEARCH_BASE": PEOPLE,
            "LABGPU_LDAP_USER_SEARCH_FILTER": "(uid=%(user)s)",
            # The whole tree, as many sites configure it: clubs' groups are found too.
            "LABGPU_LDAP_GROUP_SEARCH_BASE": SUFFIX,
            "LABGPU_LDAP_GROUP_TYPE": "groupOfNames",
            "LABGPU_LDAP_TIMEOUT_S": "5",
            **overrides,
        }


@contextmanager
def running_slapd(workdir: Path) -> Iterator[Slapd]:
    binary = slapd_path()
    assert binary is not None
    (workdir / "db").mkdir(parents=True)
    conf = workdir / "slapd.conf"
    conf.write_text(slapd_conf(workdir))
    seed = workdir / "seed.ldif"
    seed.write_text(seed_ldif())
    subprocess.run(
        [shutil.which("slapadd", path=SEARCH_PATH) or "slapadd", "-q", "-f", conf, "-l", seed],
        check=True,
        capture_output=True,
    )
    port = _free_port()
    uri = f"ldap://127.0.0.1:{port}/"
    log = (workdir / "slapd.log").open("w")
    # `-d 0` keeps slapd in the foreground, so it is our child and dies with the fixture.
    process = subprocess.Popen(
        [binary, "-d", "0", "-h", uri, "-f", conf], stdout=log, stderr=subprocess.STDOUT
    )
    try:
        _wait_until_serving(uri, process, workdir)
        yield Slapd(uri=uri, workdir=workdir)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _wait_until_serving(uri: str, process: subprocess.Popen, workdir: Path) -> None:
    deadline = time.monotonic() + 20
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"slapd exited: {(workdir / 'slapd.log').read_text()[-2000:]}")
        try:
            connection = ldap.initialize(uri, bytes_mode=False)
            connection.set_option(ldap.OPT_NETWORK_TIMEOUT, 1)
            connection.simple_bind_s(READER_DN, READER_PASSWORD)
            connection.unbind_s()
            return
        except ldap.SERVER_DOWN:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)  # waiting for the listener, not asserting on time
