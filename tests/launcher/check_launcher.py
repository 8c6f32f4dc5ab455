#!/usr/bin/env python3
# Checks the cgraft command: refusals of bad options (one line, exit 2, the
# program never started), the CGRAFT_* variables and LD_PRELOAD it hands to
# the program and its children, a help and a man page that name every option
# of the table in src/options.c, and an installation (meson install into a
# staging directory) whose launcher preloads the installed library, not the
# build tree's, and whose pkg-config file gives the header.
"""Exit status: 0 pass, 1 fail, 77 skip (meson's convention)."""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

FAILS = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILS.append(what)
    return ok


def run(argv, env=None, cwd=None):
    e = dict(os.environ)
    e.pop("CGRAFT_LIB", None)
    for k in [k for k in e if k.startswith("CGRAFT_")]:
        del e[k]
    e.pop("LD_PRELOAD", None)
    e.update(env or {})
    p = subprocess.run(argv, env=e, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=60)
    return p.returncode, p.stdout, p.stderr


def table_names(options_c):
    """The option names of the table, read from its source."""
    text = open(options_c).read()
    table = text[text.index("cg_opt_table[] = {"):]
    table = table[:table.index("};")]
    names = re.findall(r'\{\s*"(CGRAFT_[A-Z_]+)"', table)
    if not names:
        sys.exit("no option found in the table of " + options_c)
    return names


def flag(name):
    return "--" + name[len("CGRAFT_"):].lower().replace("_", "-")


def env_of(out):
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def test_options(a):
    tmp = tempfile.mkdtemp(prefix="cgraft-launcher-")
    marker = os.path.join(tmp, "started")
    prog = ["sh", "-c", 'touch "$0"', marker]
    cases = [
        (["--no-such-option"], "--no-such-option"),
        (["--reprot"], "did you mean --report?"),
        (["--min-repeats", "0"], "'0'"),
        (["--min-repeats=abc"], "'abc'"),
        (["--log", "loud"], "'loud'"),
        (["--window", "9:3"], "'9:3'"),
        (["--report=maybe"], "'maybe'"),
        (["--stats="], "''"),
        (["--no-stats"], "--no-stats"),
        (["--no-report=1"], "--no-report"),
        (["--stats", "--report"], "--stats"),
        (["-x"], "'-x'"),
    ]
    for args, needle in cases:
        if os.path.exists(marker):
            os.unlink(marker)
        rc, out, err = run([a.launcher] + args + prog)
        lines = err.splitlines()
        what = " ".join(args)
        check(rc == 2, f"{what}: exit 2 (got {rc})")
        check(len(lines) == 1 and lines[0].startswith("cgraft: "), f"{what}: one line on stderr ({err!r})")
        check(needle in err, f"{what}: the line names {needle} ({err.strip()!r})")
        # A refused value says what is accepted.
        if "'" in needle and needle != "'-x'":
            check("expected " in err, f"{what}: the line says what is accepted")
        check(not os.path.exists(marker), f"{what}: the program did not start")
    # A bad value set in the environment is refused the same way; an option
    # given on the command line overrides it.
    rc, out, err = run([a.launcher] + prog, env={"CGRAFT_MIN_OPS": "abc"})
    check(rc == 2 and len(err.splitlines()) == 1 and "CGRAFT_MIN_OPS='abc'" in err,
          f"a bad CGRAFT_MIN_OPS in the environment is refused in one line ({rc}, {err!r})")
    rc, out, err = run([a.launcher, "--min-ops", "3"] + prog, env={"CGRAFT_MIN_OPS": "abc"})
    check(rc == 0 and os.path.exists(marker), f"--min-ops overrides the environment ({rc}, {err!r})")
    rc, out, err = run([a.launcher])
    check(rc == 2 and len(err.splitlines()) == 1 and "no program" in err, f"no program: exit 2 ({rc}, {err!r})")
    rc, out, err = run([a.launcher, "--report", "cgraft-no-such-program"])
    check(rc == 127 and "cgraft-no-such-program" in err, f"a program not found: exit 127 ({rc}, {err!r})")
    rc, out, err = run([a.launcher, "true"], env={"CGRAFT_LIB": os.path.join(tmp, "nope.so")})
    check(rc == 2 and "CGRAFT_LIB" in err, f"CGRAFT_LIB that does not exist: exit 2 ({rc}, {err!r})")
    shutil.rmtree(tmp)


def test_env(a):
    lib = os.path.realpath(a.lib)
    rc, out, err = run([a.launcher, "--report", "--stats", "s-%p.json", "--window=10:", "--no-backoff-slow",
                        "--log", "debug", "--max-hold-us", "1k", "--driver-ops=off", "env"])
    e = env_of(out)
    check(rc == 0, f"env under the launcher exits 0 ({rc}, {err!r})")
    want = {"CGRAFT_REPORT": "1", "CGRAFT_STATS": "s-%p.json", "CGRAFT_WINDOW": "10:", "CGRAFT_BACKOFF_SLOW": "0",
            "CGRAFT_LOG": "debug", "CGRAFT_MAX_HOLD_US": "1k", "CGRAFT_DRIVER_OPS": "off"}
    for k, v in want.items():
        check(e.get(k) == v, f"{k}={v} (got {e.get(k)!r})")
    check(not any(k.startswith("CGRAFT_") and k not in want for k in e), "no other CGRAFT_* variable is set")
    check(e.get("LD_PRELOAD") == lib, f"LD_PRELOAD is the build tree's library {lib} (got {e.get('LD_PRELOAD')!r})")
    # Prepended to an existing LD_PRELOAD, and not twice.
    rc, out, err = run([a.launcher, "env"], env={"LD_PRELOAD": "libm.so.6"})
    check(env_of(out).get("LD_PRELOAD") == lib + ":libm.so.6", f"prepended to LD_PRELOAD ({env_of(out).get('LD_PRELOAD')!r})")
    rc, out, err = run([a.launcher, a.launcher, "env"])
    check(env_of(out).get("LD_PRELOAD") == lib, f"the launcher under itself preloads once ({env_of(out).get('LD_PRELOAD')!r})")
    # CGRAFT_LIB names another library.
    tmp = tempfile.mkdtemp(prefix="cgraft-launcher-")
    other = os.path.join(tmp, "libcgraft.so")
    shutil.copy(a.lib, other)
    rc, out, err = run([a.launcher, "env"], env={"CGRAFT_LIB": other})
    check(env_of(out).get("LD_PRELOAD") == os.path.realpath(other), f"CGRAFT_LIB overrides ({env_of(out).get('LD_PRELOAD')!r})")
    shutil.rmtree(tmp)
    # The children of the program inherit all of it (torchrun, python -m): a
    # shell started by Python, started under the launcher.
    code = "import subprocess; subprocess.run(['sh', '-c', 'echo \"$CGRAFT_REPORT $CGRAFT_MIN_OPS $LD_PRELOAD\"'])"
    rc, out, err = run([a.launcher, "--report", "--min-ops=3", "--", sys.executable, "-c", code])
    check(rc == 0 and out.strip() == f"1 3 {lib}", f"a grandchild inherits the options ({out.strip()!r}, {err!r})")
    # The program's own options are left alone, with or without --.
    rc, out, err = run([a.launcher, "--report", "sh", "-c", 'echo "$@"', "sh", "--report", "--", "-x"])
    check(out.strip() == "--report -- -x", f"the program's arguments are its own ({out.strip()!r})")
    rc, out, err = run([a.launcher, "--", "sh", "-c", "exit 3"])
    check(rc == 3, f"the program's exit status is the launcher's ({rc})")


def test_help(a):
    names = table_names(a.options_src)
    rc, out, err = run([a.launcher, "--help"])
    check(rc == 0 and not err, f"--help exits 0 quietly ({rc}, {err!r})")
    for n in names:
        check(n in out and flag(n) in out, f"--help lists {flag(n)} ({n})")
    check("%p" in out, "--help says what %p does")
    rc, out, err = run([a.launcher, "--version"])
    check(rc == 0 and out.splitlines()[0] == "cgraft " + a.version, f"--version ({out!r})")
    man = open(a.man).read()
    check(man.startswith(".TH CGRAFT 1"), "cgraft.1 is a man page of section 1")
    for n in names:
        roff = flag(n).replace("-", "\\-")
        check(n in man and roff in man, f"cgraft.1 lists {flag(n)}")


def test_install(a):
    if not a.meson:
        print("SKIP: meson not found")
        return 77
    tmp = tempfile.mkdtemp(prefix="cgraft-install-")
    stage = os.path.join(tmp, "stage")
    p = subprocess.run([a.meson, "install", "-C", a.build_root, "--no-rebuild", "--quiet", "--destdir", stage],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if not check(p.returncode == 0, "meson install --destdir"):
        print(p.stdout)
        return 1
    # Moved as a whole, the installation still finds its own library.
    root = os.path.join(tmp, "moved")
    os.rename(stage, root)
    prefix = root + a.prefix

    def installed(d, *rest):
        return os.path.join(root + d if os.path.isabs(d) else os.path.join(prefix, d), *rest)

    launcher = installed(a.bindir, "cgraft")
    lib = os.path.realpath(installed(a.libdir, "libcgraft.so"))
    check(os.access(launcher, os.X_OK), f"installed {launcher}")
    check(os.path.isfile(lib), f"installed {lib}")
    check(os.path.isfile(os.path.join(prefix, "include", "cgraft.h")), "installed include/cgraft.h")
    man = installed(a.mandir, "man1", "cgraft.1")
    check(os.path.isfile(man) and all(n in open(man).read() for n in table_names(a.options_src)),
          "installed man1/cgraft.1, listing every option")
    rc, out, err = run([launcher, "--report", "env"])
    pre = env_of(out).get("LD_PRELOAD", "")
    check(rc == 0 and pre == lib, f"the installed launcher preloads the installed library ({pre!r}, {err!r})")
    check(not pre.startswith(os.path.realpath(a.build_root) + "/"), "and not the build tree's")
    rc, out, err = run([launcher, "--version"])
    check(rc == 0 and f"library: {lib}" in out, f"--version names the installed library ({out!r})")

    # pkg-config: the header's flags, and where the launcher and the library are.
    if a.pkg_config:
        pc_dir = installed(a.libdir, "pkgconfig")
        pkg = [a.pkg_config, "--define-variable=prefix=" + prefix]
        penv = {"PKG_CONFIG_PATH": pc_dir}
        rc, cflags, err = run(pkg + ["--cflags", "cgraft"], env=penv)
        check(rc == 0 and ("-I" + os.path.join(prefix, "include")) in cflags,
              f"pkg-config --cflags cgraft ({cflags.strip()!r}, {err!r})")
        rc, out, err = run(pkg + ["--variable=preload", "cgraft"], env=penv)
        check(os.path.realpath(out.strip()) == lib, f"pkg-config --variable=preload ({out.strip()!r})")
        rc, out, err = run(pkg + ["--variable=launcher", "cgraft"], env=penv)
        check(os.path.realpath(out.strip()) == os.path.realpath(launcher), f"pkg-config --variable=launcher ({out.strip()!r})")
        # A program built with those flags steers the preloaded library.
        src = os.path.join(tmp, "steer.c")
        with open(src, "w") as f:
            f.write("#include <dlfcn.h>\n#include <stdio.h>\n#include <cgraft.h>\n"
                    "int main(void)\n{\n"
                    "\tint (*set)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, \"cgraft_set_enabled\");\n"
                    "\tprintf(\"%s\\n\", set && set(1) >= 0 ? \"steered\" : \"alone\");\n"
                    "\treturn 0;\n}\n")
        exe = os.path.join(tmp, "steer")
        p = subprocess.run(a.cc.split(";") + cflags.split() + [src, "-o", exe, "-ldl"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if check(p.returncode == 0, "a program compiles with pkg-config --cflags cgraft"):
            rc, out, err = run([launcher, exe])
            check(out.strip() == "steered", f"under the installed launcher it finds cgraft_set_enabled ({out!r})")
            rc, out, err = run([exe])
            check(out.strip() == "alone", f"and runs without cgraft too ({out!r})")
        else:
            print(p.stdout)
    else:
        print("note: pkg-config not found: the .pc file is not checked")

    # A program on the simulated runtime, one stats file per process.
    if a.sim_prog and os.path.exists(a.sim_prog):
        stats = os.path.join(tmp, "stats-%p.json")
        rc, out, err = run([launcher, "--stats", stats, "--no-backoff-slow", a.sim_prog])
        files = [f for f in os.listdir(tmp) if re.fullmatch(r"stats-\d+\.json", f)]
        check(rc == 0 and len(files) == 1, f"{os.path.basename(a.sim_prog)} writes its stats-PID.json ({rc}, {files}, {err[-300:]!r})")
        if files:
            s = json.load(open(os.path.join(tmp, files[0])))
            check(s.get("graph_launches", 0) > 0, f"and its work was replayed (graph_launches {s.get('graph_launches')})")
    # Without its library the installed launcher says where it looked.
    os.rename(lib, lib + ".away")
    rc, out, err = run([launcher, "true"])
    check(rc == 2 and len(err.splitlines()) == 1 and lib in err,
          f"a missing installed library: exit 2, one line naming it ({rc}, {err!r})")
    shutil.rmtree(tmp)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("what", choices=["options", "env", "help", "install"])
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--options-src", required=True)
    ap.add_argument("--man", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--build-root", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--libdir", required=True)
    ap.add_argument("--mandir", required=True)
    ap.add_argument("--meson", default="")
    ap.add_argument("--pkg-config", default="")
    ap.add_argument("--cc", required=True, help="the C compiler, arguments separated by ';'")
    ap.add_argument("--sim-prog", default="")
    a = ap.parse_args()
    rc = {"options": test_options, "env": test_env, "help": test_help, "install": test_install}[a.what](a)
    if rc == 77:
        return 77
    if FAILS:
        print(f"{len(FAILS)} checks failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
