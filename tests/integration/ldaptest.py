"""ldaptest.py - a real OpenLDAP slapd for the identity tests.

Slapd(tmp) writes a slapd.conf (mdb database, the memberof overlay, the
core, cosine, inetorgperson and nis schemas), loads a test directory and
starts slapd in the foreground on a free loopback port; stop() ends it.
With tls=(cert, key) or tls=(cert, key, ca) it also serves TLS with that
certificate (ca: the CA file slapd names, olcTLSCACertificateFile): StartTLS
on the ldap:// port and ldaps:// on a second loopback port (ldaps_url).
slapd runs as the test's own user (no -u), so a key file of mode 0600
made by the test is readable to it.

The directory, under dc=example,dc=com:
  cn=sluice,ou=services   the search account (password "search-secret")
  uid=alice               in cn=nlp            (password "alice-pw")
  uid=bob                 in cn=ml-platform    (password "bob-pw")
  uid=carol               in no group          (password "carol-pw")
  uid=dave                in cn=viewers        (password "dave-pw")
  uid=root                in cn=nlp: a name Sluice's break-glass admin
                          also has locally     (password "root-pw")
Groups are groupOfNames under ou=groups, added online so that the memberof
overlay gives each user its memberOf values.
"""

import atexit
import os
import shutil
import signal
import subprocess
import time

from sltest import free_port

BASE = "dc=example,dc=com"
ROOT_DN = "cn=admin," + BASE
ROOT_PW = "root-secret"
SEARCH_DN = "cn=sluice,ou=services," + BASE
SEARCH_PW = "search-secret"
USERS = {"alice": "alice-pw", "bob": "bob-pw", "carol": "carol-pw", "dave": "dave-pw",
         "root": "root-pw"}
GROUPS = {"nlp": ["alice", "root"], "ml-platform": ["bob"], "viewers": ["dave"]}


def available():
    return all(shutil.which(p) or os.path.exists(p)
               for p in ("/usr/sbin/slapd", "/usr/sbin/slapadd", "ldapmodify"))


def user_dn(u):
    return "uid=%s,ou=people,%s" % (u, BASE)


def group_dn(g):
    return "cn=%s,ou=groups,%s" % (g, BASE)


class Slapd:
    def __init__(self, tmp, tls=None, users=None, groups=None):
        """users: {name: password} and groups: {group: [names]} replace
        the directory's USERS and GROUPS."""
        self.users = USERS if users is None else users
        self.groups = GROUPS if groups is None else groups
        self.dir = os.path.join(tmp, "slapd")
        self.db = os.path.join(self.dir, "db")
        os.makedirs(self.db, exist_ok=True)
        self.tls = tls
        self.port = None
        self.tls_port = None
        self.proc = None
        self.log = os.path.join(self.dir, "slapd.log")
        atexit.register(self.stop)

    @property
    def url(self):
        return "ldap://127.0.0.1:%d" % self.port

    @property
    def ldaps_url(self):
        """ldaps://127.0.0.1:PORT (tls= only)."""
        return "ldaps://127.0.0.1:%d" % self.tls_port

    def _conf(self):
        s = "/etc/ldap/schema/"
        lines = ["include %s%s.schema" % (s, n)
                 for n in ("core", "cosine", "inetorgperson", "nis")]
        lines += ["modulepath /usr/lib/ldap", "moduleload back_mdb", "moduleload memberof",
                  "pidfile %s/slapd.pid" % self.dir]
        if self.tls:
            lines += ["TLSCertificateFile %s" % self.tls[0],
                      "TLSCertificateKeyFile %s" % self.tls[1]]
            if len(self.tls) > 2:
                lines += ["TLSCACertificateFile %s" % self.tls[2]]
        lines += ["database mdb", "maxsize 10485760", "suffix \"%s\"" % BASE,
                  "rootdn \"%s\"" % ROOT_DN, "rootpw %s" % ROOT_PW,
                  "directory %s" % self.db, "overlay memberof",
                  "memberof-group-oc groupOfNames", "memberof-member-ad member",
                  "memberof-memberof-ad memberOf",
                  "access to attrs=userPassword by self read by anonymous auth by * none",
                  "access to * by dn.exact=\"%s\" read by self read by * none" % SEARCH_DN]
        path = os.path.join(self.dir, "slapd.conf")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def _base_ldif(self):
        out = ["dn: %s\nobjectClass: dcObject\nobjectClass: organization\no: Example\n"
               "dc: example\n" % BASE]
        for ou in ("people", "groups", "services"):
            out.append("dn: ou=%s,%s\nobjectClass: organizationalUnit\nou: %s\n"
                       % (ou, BASE, ou))
        out.append("dn: %s\nobjectClass: person\ncn: sluice\nsn: sluice\n"
                   "userPassword: %s\n" % (SEARCH_DN, SEARCH_PW))
        for u, pw in self.users.items():
            out.append("dn: %s\nobjectClass: inetOrgPerson\nuid: %s\ncn: %s\nsn: %s\n"
                       "userPassword: %s\n" % (user_dn(u), u, u, u, pw))
        return "\n".join(out)

    def start(self):
        conf = self._conf()
        p = subprocess.run(["/usr/sbin/slapadd", "-f", conf, "-b", BASE],
                           input=self._base_ldif().encode(), capture_output=True)
        if p.returncode != 0:
            raise RuntimeError("slapadd: %s" % p.stderr.decode(errors="replace"))
        for _ in range(3):
            self.port = free_port()
            urls = "ldap://127.0.0.1:%d/" % self.port
            if self.tls:
                self.tls_port = free_port()
                urls += " ldaps://127.0.0.1:%d/" % self.tls_port
            with open(self.log, "ab") as log:
                self.proc = subprocess.Popen(
                    ["/usr/sbin/slapd", "-d", "0", "-f", conf, "-h", urls],
                    stdout=log, stderr=log)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and self.proc.poll() is None:
                if self.search(SEARCH_DN, "base", "(objectClass=*)", bind=(SEARCH_DN, SEARCH_PW)) \
                        is not None:
                    break
                time.sleep(0.1)
            if self.proc.poll() is None:
                break
        if self.proc.poll() is not None:
            raise RuntimeError("slapd did not start: %s" % open(self.log).read()[-2000:])
        ldif = []
        for g, members in self.groups.items():
            ldif.append("dn: %s\nobjectClass: groupOfNames\ncn: %s\n%s\n"
                        % (group_dn(g), g, "\n".join("member: %s" % user_dn(m)
                                                     for m in members)))
        self.modify("\n".join(ldif), add=True)
        return self

    def modify(self, ldif, add=False):
        p = subprocess.run(["ldapmodify"] + (["-a"] if add else []) +
                           ["-x", "-H", self.url, "-D", ROOT_DN, "-w", ROOT_PW],
                           input=ldif.encode(), capture_output=True)
        if p.returncode != 0:
            raise RuntimeError("ldapmodify: %s" % p.stderr.decode(errors="replace"))

    def remove_member(self, group, user):
        self.modify("dn: %s\nchangetype: modify\ndelete: member\nmember: %s\n"
                    % (group_dn(group), user_dn(user)))

    def add_member(self, group, user):
        self.modify("dn: %s\nchangetype: modify\nadd: member\nmember: %s\n"
                    % (group_dn(group), user_dn(user)))

    def search(self, base, scope, flt, bind=None, attrs=()):
        args = ["ldapsearch", "-x", "-LLL", "-o", "nettimeout=2", "-H", self.url,
                "-b", base, "-s", scope]
        if bind:
            args += ["-D", bind[0], "-w", bind[1]]
        p = subprocess.run(args + [flt] + list(attrs), capture_output=True)
        return p.stdout.decode() if p.returncode == 0 else None

    def pause(self):
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def identity_file(slapd, tmp, rules):
    """The identity file naming 'slapd' (its search account's password in
    a private file under tmp), with rules [(group, team, role)]."""
    secret = os.path.join(tmp, "bind.secret")
    with open(secret, "w") as f:
        f.write(SEARCH_PW)
    os.chmod(secret, 0o600)
    path = os.path.join(tmp, "identity.yaml")
    with open(path, "w") as f:
        f.write("ldap: {url: '%s', bindDN: '%s', bindPasswordFile: '%s', userBase: '%s', "
                "groupBase: '%s'}\ngroups:\n" % (slapd.url, SEARCH_DN, secret,
                                                 "ou=people," + BASE, "ou=groups," + BASE))
        for g, team, role in rules:
            f.write("  - {group: '%s', team: %s, role: %s}\n" % (group_dn(g), team, role))
    return path
