#!/usr/bin/python3
"""Reports every file or folder that the Markdown files of the repo (README.md, docs/*.md, the
READMEs of models/ and tests/) name but the source tree lacks.

    /usr/bin/python3 scripts/check_doc_paths.py [SOURCE_ROOT] [MORE.md ...]

Run by ctest (test `docs.paths`, label `docs`), so moving or renaming a file without fixing the
docs that name it fails the suite. What counts as a path:

  - a token that starts with a top-level folder of the repo (`kernels/gemm/qgemm.h`,
    `optimizer/passes/`, `core/ops/window.h`): it must exist below the source root;
  - a token with a folder that ends in a file name (`gemm/qgemm.h`, `fusions/conv.cpp`): some
    file of the tree must end with it;
  - a bare file name with a source or doc extension (`qgemm_driver_inl.h`, `DESIGN.md`): some
    file of the tree must have that name.

`{a,b}` is expanded (`dispatch.{h,cpp}` names two files) and `*` must match at least one file.
Of a token with a placeholder (`core/ops/<family>.h`) the folder before it is checked; tokens with
`...`, paths under build/ and the few paths an install script, the build or a benchmark makes (GENERATED) are
not. Exit status 1 when something is missing, with one line per missing path:
`docs/kernels.md:12: kernels/qgemm.h`.
"""

import fnmatch
import glob
import os
import re
import sys

# Top-level folders and files a path can start from: these and whatever else the root holds. Listed
# here too so that a folder that disappears still makes the paths under it stale.
ROOTS = {".ci", "bench", "cmake", "core", "deploy", "docs", "engine", "kernels", "models", "optimizer", "parser",
         "python", "reference", "scripts", "server", "tests", "tools", "CMakeLists.txt", "README.md"}
# Extensions of file names worth checking (not .onnx/.npy/.svg/.txt: examples name made-up files).
FILE_EXTENSIONS = (".h", ".cpp", ".py", ".sh", ".fbs", ".js", ".md", ".cmake")
BARE_NAME_EXTENSIONS = (".h", ".cpp", ".py", ".sh", ".fbs", ".md")  # not .js: "Node.js"
# Paths the docs name that the build or an install script makes, with what makes them.
GENERATED = {
    "engine/engine_file_generated.h": "flatc, into the build tree (engine/CMakeLists.txt)",
    "core/version.h": "configure_file from core/version.h.in, into the build tree (core/CMakeLists.txt)",
    "tools/ort/node_modules": "npm ci in scripts/install_ort.sh",
    "tests/server/node_modules": "npm ci in scripts/install_serve_clients.sh",
    "summary.md": "bench/device/device_bench.py, into $OUT on the device machine",
}
SKIPPED_DIRS = {".git", "build", "node_modules", "__pycache__"}

# A run of path characters that does not continue another word or path.
TOKEN = re.compile(r"(?<![\w./{}*<>-])[\w.{}*,/<>-]*[\w}*/>]")
TRAILING = ".,:;"


def expand_braces(token):
    """`a.{h,cpp}` -> [`a.h`, `a.cpp`], nested and repeated braces included."""
    match = re.search(r"\{([^{}]*)\}", token)
    if match is None:
        return [token]
    expanded = []
    for choice in match.group(1).split(","):
        expanded += expand_braces(token[: match.start()] + choice + token[match.end():])
    return expanded


def tree_files(root):
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("build")]
        for name in names:
            files.append(os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/"))
    return files


def candidate_tokens(line):
    """Path-looking tokens of one line, braces expanded."""
    for match in TOKEN.finditer(line):
        token = match.group(0).rstrip(TRAILING)
        if line[: match.start()].rstrip().endswith(">") and not line[: match.start()].rstrip().endswith("->"):
            continue  # a shell redirect's output file
        if "," in token and "{" not in token:
            continue  # a list in prose ("gemm/,conv/"), not one path
        if "<" in token and ">" in token:
            token = token[: token.index("<")].rpartition("/")[0]  # `core/ops/<family>.h`: its folder
            if not token:
                continue
            token += "/"
        if token.count("{") != token.count("}") or "..." in token or "<" in token or ">" in token:
            continue  # `kernels/.../`, an arrow
        yield from expand_braces(token)


class Tree:
    def __init__(self, root):
        self.root = root
        self.roots = ROOTS | {entry for entry in os.listdir(root) if entry not in SKIPPED_DIRS
                              and not entry.startswith("build")}
        self.files = tree_files(root)
        self.names = {path.rsplit("/", 1)[-1] for path in self.files}

    def exists(self, path):
        if "*" in path:
            return bool(glob.glob(os.path.join(self.root, path)))
        return os.path.exists(os.path.join(self.root, path.rstrip("/")))

    def has_suffix(self, suffix):
        pattern = "*/" + suffix if "*" in suffix else None
        for path in self.files:
            if ("/" + path).endswith("/" + suffix) or (pattern and fnmatch.fnmatch("/" + path, pattern)):
                return True
        return False

    def missing(self, token):
        """True when `token` names a path this tree lacks; False when it exists or is no path."""
        if token.startswith("build/") or token.rstrip("/") in GENERATED or not re.search(r"[A-Za-z]", token):
            return False
        first = token.split("/", 1)[0]
        if "/" in token and first in self.roots:
            return not self.exists(token)
        if "/" in token:
            return token.endswith(FILE_EXTENSIONS) and not self.has_suffix(token)
        if token.endswith(BARE_NAME_EXTENSIONS) and re.search(r"[A-Za-z_]\w*\.\w+$", token):
            if token.startswith("_"):  # a suffix: `_avx2.cpp` stands for every `*_avx2.cpp`
                token = "*" + token
            if "*" in token:
                return not any(fnmatch.fnmatch(name, token) for name in self.names)
            return token not in self.names
        return False


def check(root, tree, documents):
    problems = []
    for document in documents:
        with open(os.path.join(root, document), encoding="utf-8") as text:
            for number, line in enumerate(text, 1):
                for token in candidate_tokens(line):
                    if tree.missing(token):
                        problems.append(f"{document}:{number}: {token}")
    return problems


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    tree = Tree(root)
    documents = sorted(path for path in tree.files if path.endswith(".md")) + argv[2:]
    problems = check(root, tree, documents)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} path(s) named in the docs do not exist below {root}")
        return 1
    print(f"every path named in {len(documents)} documents exists")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
