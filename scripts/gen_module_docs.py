#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""Render docs/modules/<module>.md from each module's DOCUMENTATION, EXAMPLES and RETURN.

The docs are read with ``ansible-doc --json`` of the ansible-core next to this Python (the
venv's), so ``extends_documentation_fragment`` entries (plugins/doc_fragments/) are merged
exactly as ``ansible-doc`` shows them to users. The collection is linked into a temporary
collections directory, so no ``make venv`` link or installed copy is needed.

    .venv/bin/python scripts/gen_module_docs.py            # (re)write every page
    .venv/bin/python scripts/gen_module_docs.py --check    # exit 1 and name stale pages
    .venv/bin/python scripts/gen_module_docs.py npu_cpu_plan    # only these modules

The pages are generated: edit the module's doc strings, then run ``make docs``.
Exit codes: 0 up to date / written, 1 stale pages (--check), 2 the docs could not be read.
"""

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES_DIR = os.path.join(REPO, "plugins", "modules")
DOCS_DIR = os.path.join(REPO, "docs", "modules")
ANSIBLE_DOCS = "https://docs.ansible.com/ansible/latest/collections"
SHORT_SAMPLE = 80  # longer samples (or multi-line ones) go below the return table

# Ansible doc markup. I(), B(), C(), U(), M() end at the first ")"; O(), V(), RV(), E(), P()
# allow backslash escapes; L(text, url) and R(text, ref) take two arguments.
_MARKUP = re.compile(
    r"(?<![A-Za-z0-9_])(?:"
    r"(?P<simple>[IBCUM])\((?P<simple_arg>[^)]*)\)"
    r"|(?P<escaped>RV|[OVEP])\((?P<escaped_arg>(?:\\.|[^\\)])*)\)"
    r"|(?P<pair>[LR])\((?P<pair_text>[^,)]*),(?P<pair_target>[^)]*)\)"
    r"|(?P<hline>HORIZONTALLINE)"
    r")"
)
_UNESCAPE = re.compile(r"\\(.)")
# Markdown-special characters in plain text; "_" only where it could start or end emphasis.
_MD_SPECIAL = re.compile(r"([\\`*\[\]<])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


class DocsError(Exception):
    """The module docs could not be read."""


def collection_name():
    with open(os.path.join(REPO, "galaxy.yml")) as handle:
        galaxy = yaml.safe_load(handle)
    return "%s.%s" % (galaxy["namespace"], galaxy["name"])


def module_names():
    return sorted(name[:-3] for name in os.listdir(MODULES_DIR) if name.endswith(".py") and not name.startswith("_"))


def ansible_doc_executable():
    beside = os.path.join(os.path.dirname(sys.executable), "ansible-doc")
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("ansible-doc")
    if not found:
        raise DocsError("ansible-doc not found (run with the venv's python, e.g. make docs)")
    return found


def load_docs(collection, names):
    """ansible-doc --json for the given modules, with this checkout as the collection."""
    namespace, name = collection.split(".")
    with tempfile.TemporaryDirectory(prefix="gen_module_docs.") as tmp:
        parent = os.path.join(tmp, "ansible_collections", namespace)
        os.makedirs(parent)
        os.symlink(REPO, os.path.join(parent, name))
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=tmp, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
        cmd = [ansible_doc_executable(), "--json", "-t", "module"]
        cmd += ["%s.%s" % (collection, module) for module in names]
        proc = subprocess.run(
            cmd, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False
        )
    if proc.returncode != 0:
        raise DocsError("%s failed (rc=%d):\n%s" % (" ".join(cmd[:4]), proc.returncode, proc.stderr.strip()))
    try:
        docs = json.loads(proc.stdout)
    except ValueError as err:
        raise DocsError("ansible-doc printed no JSON (%s):\n%s" % (err, proc.stderr.strip()))
    missing = [module for module in names if "%s.%s" % (collection, module) not in docs]
    if missing:
        raise DocsError("ansible-doc returned no docs for %s:\n%s" % (", ".join(missing), proc.stderr.strip()))
    return docs


class Renderer(object):
    """Markdown for one module's ansible-doc JSON."""

    def __init__(self, collection, modules):
        self.collection = collection
        self.modules = set(modules)
        self.version_added = None
        self.current = None

    # -- markup -----------------------------------------------------------------------------

    @staticmethod
    def text(value, table=False):
        out = _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), value)
        return out.replace("|", "\\|") if table else out

    @staticmethod
    def code(value, table=False):
        value = value.replace("\n", " ")
        if table:
            value = value.replace("|", "\\|")
        if "`" not in value:
            return "`%s`" % value
        ticks = "``" if "``" not in value else "```"
        return "%s %s %s" % (ticks, value, ticks)

    def module_link(self, fqcn, table=False):
        namespace, dummy, name = fqcn.rpartition(".")
        if namespace == self.collection and name in self.modules:
            return "[%s](%s.md)" % (fqcn, name)
        if namespace.count(".") == 1:
            url = "%s/%s/%s_module.html" % (ANSIBLE_DOCS, namespace.replace(".", "/"), name)
            return "[%s](%s)" % (fqcn, url)
        return self.code(fqcn, table)

    def doc_path_link(self, value, table=False):
        """C(docs/x.md) naming a file of this repository becomes a relative link."""
        path = value.strip()
        if re.match(r"^docs/[A-Za-z0-9_./-]+\.md$", path) and os.path.isfile(os.path.join(REPO, path)):
            rel = os.path.relpath(os.path.join(REPO, path), DOCS_DIR)
            return "[%s](%s)" % (self.code(path, table), rel)
        return self.code(value, table)

    def markup(self, value, table=False):
        """One paragraph of Ansible doc markup as Markdown."""
        if value is None:
            return ""
        value = str(value)
        if table:
            value = value.replace("\n", " ")
        out = []
        pos = 0
        for match in _MARKUP.finditer(value):
            out.append(self.text(value[pos : match.start()], table))
            pos = match.end()
            out.append(self.markup_part(match, table))
        out.append(self.text(value[pos:], table))
        return "".join(out).strip()

    def markup_part(self, match, table):
        if match.group("hline"):
            return "<hr>"
        if match.group("simple"):
            kind, arg = match.group("simple"), match.group("simple_arg")
            if kind == "C":
                return self.doc_path_link(arg, table)
            if kind == "I":
                return "*%s*" % self.text(arg, table)
            if kind == "B":
                return "**%s**" % self.text(arg, table)
            if kind == "U":
                return "<%s>" % arg
            return self.module_link(arg, table)
        if match.group("escaped"):
            kind = match.group("escaped")
            arg = _UNESCAPE.sub(r"\1", match.group("escaped_arg"))
            if kind in ("O", "RV"):
                # O(fqcn#type:name=value): name=value, then "(of fqcn)" for another plugin.
                name, eq, val = arg.partition("=")
                plugin = None
                if "#" in name and ":" in name:
                    plugin, dummy, name = name.partition(":")
                    plugin = plugin.split("#")[0]
                text = self.code(name + eq + val, table)
                if plugin and plugin != self.current:
                    text += " (of %s)" % self.module_link(plugin, table)
                return text
            return self.code(arg, table)
        text, target = match.group("pair_text"), match.group("pair_target").strip()
        if match.group("pair") == "L":
            return "[%s](%s)" % (self.text(text, table), target)
        return self.text(text, table)

    def paragraphs(self, value, table=False):
        if value is None:
            return []
        if not isinstance(value, list):
            value = [value]
        return [self.markup(par, table) for par in value if par not in (None, "")]

    def cell(self, value):
        return "<br>".join(self.paragraphs(value, table=True))

    # -- values -----------------------------------------------------------------------------

    @staticmethod
    def plain_value(value):
        if isinstance(value, str):
            return value if value.strip() == value and value else json.dumps(value)
        return json.dumps(value, sort_keys=True, ensure_ascii=False)

    def type_of(self, spec):
        kind = spec.get("type") or "raw"
        if spec.get("elements"):
            return "%s of %s" % (kind, spec["elements"])
        return kind

    # -- sections ---------------------------------------------------------------------------

    def options_rows(self, options, prefix=""):
        rows = []
        for name in sorted(options):
            spec = options[name]
            path = prefix + name
            required = "yes" if spec.get("required") else ""
            default = (
                ""
                if "default" not in spec or spec["default"] is None
                else self.code(self.plain_value(spec["default"]), table=True)
            )
            choices = spec.get("choices") or []
            description = self.paragraphs(spec.get("description"), table=True)
            if isinstance(choices, dict):
                description += [
                    "%s: %s" % (self.code(str(key), True), " ".join(self.paragraphs(text, True)))
                    for key, text in choices.items()
                ]
            if spec.get("aliases"):
                description.append("Aliases: %s." % ", ".join(self.code(alias, True) for alias in spec["aliases"]))
            if (
                spec.get("version_added")
                and spec.get("version_added_collection") == self.collection
                and spec["version_added"] != self.version_added
            ):
                description.append("Added in version %s." % spec["version_added"])
            rows.append(
                "| %s | %s | %s | %s | %s | %s |"
                % (
                    self.code(path, True),
                    self.type_of(spec),
                    required,
                    default,
                    ", ".join(self.code(self.plain_value(c), True) for c in choices),
                    "<br>".join(description),
                )
            )
            sub = spec.get("suboptions") or spec.get("options")
            if sub:
                rows += self.options_rows(sub, path + ".")
        return rows

    def return_rows(self, values, samples, prefix=""):
        rows = []
        for name in sorted(values):
            spec = values[name]
            path = prefix + name
            description = self.paragraphs(spec.get("description"), table=True)
            if "sample" in spec and spec["sample"] is not None:
                sample = spec["sample"]
                short = self.plain_value(sample)
                if isinstance(sample, str) and "\n" in sample or len(short) > SHORT_SAMPLE:
                    samples.append((path, sample))
                    description.append("Sample: below the table.")
                else:
                    description.append("Sample: %s" % self.code(short, table=True))
            rows.append(
                "| %s | %s | %s | %s |"
                % (
                    self.code(path, True),
                    self.type_of(spec),
                    self.markup(spec.get("returned") or "", table=True),
                    "<br>".join(description),
                )
            )
            if spec.get("contains"):
                rows += self.return_rows(spec["contains"], samples, path + ".")
        return rows

    @staticmethod
    def sample_block(sample):
        if isinstance(sample, str):
            return "```\n%s\n```" % sample.rstrip("\n")
        dumped = yaml.safe_dump(sample, default_flow_style=None, sort_keys=False, width=120, allow_unicode=True)
        return "```yaml\n%s```" % dumped

    def seealso_item(self, entry):
        desc = self.markup(entry.get("description") or "")
        if "module" in entry:
            head = self.module_link(entry["module"])
        elif "plugin" in entry:
            head = "%s (%s plugin)" % (self.code(entry["plugin"]), entry.get("plugin_type", ""))
        elif "link" in entry:
            head = "[%s](%s)" % (self.text(entry.get("name") or entry["link"]), entry["link"])
        else:
            head = self.text(entry.get("name") or entry.get("ref") or "")
        return "- %s%s" % (head, " - " + desc if desc else "")

    def render(self, module, data):
        doc = data["doc"]
        fqcn = "%s.%s" % (self.collection, module)
        self.version_added = doc.get("version_added")
        self.current = fqcn
        out = [
            "<!-- Generated by scripts/gen_module_docs.py from the DOCUMENTATION, EXAMPLES and"
            " RETURN of plugins/modules/%s.py (and its doc fragments). Do not edit: change"
            " the module's docs, then run `make docs`. -->" % module,
            "",
            "# %s" % fqcn,
            "",
            self.markup(doc.get("short_description") or ""),
        ]
        if doc.get("version_added"):
            out += ["", "*Added in version %s of %s.*" % (doc["version_added"], self.collection)]

        out += ["", "## Synopsis", ""]
        out += ["- %s" % par for par in self.paragraphs(doc.get("description"))]

        if doc.get("requirements"):
            out += [
                "",
                "## Requirements",
                "",
                "The below requirements are needed on the host that executes this module.",
                "",
            ]
            out += ["- %s" % par for par in self.paragraphs(doc["requirements"])]

        options = doc.get("options") or {}
        out += ["", "## Parameters", ""]
        if options:
            out += ["| Parameter | Type | Required | Default | Choices | Description |", "|---|---|---|---|---|---|"]
            out += self.options_rows(options)
        else:
            out.append("This module takes no parameters.")

        attributes = doc.get("attributes") or {}
        if attributes:
            out += ["", "## Attributes", "", "| Attribute | Support | Description |", "|---|---|---|"]
            for name in sorted(attributes):
                attr = attributes[name]
                support = attr.get("support", "")
                if attr.get("platforms"):
                    platforms = attr["platforms"]
                    if isinstance(platforms, list):
                        platforms = ", ".join(platforms)
                    support = "%s (platforms: %s)" % (support, platforms)
                description = self.paragraphs(attr.get("description"), table=True)
                description += self.paragraphs(attr.get("details"), table=True)
                out.append(
                    "| %s | %s | %s |" % (self.code(name, True), self.text(support, True), "<br>".join(description))
                )

        if doc.get("notes"):
            out += ["", "## Notes", ""]
            out += ["- %s" % par for par in self.paragraphs(doc["notes"])]

        if doc.get("seealso"):
            out += ["", "## See also", ""]
            out += [self.seealso_item(entry) for entry in doc["seealso"]]

        examples = (data.get("examples") or "").strip("\n")
        if examples:
            out += ["", "## Examples", "", "```yaml", examples.rstrip(), "```"]

        returns = data.get("return") or {}
        if returns:
            samples = []
            out += ["", "## Return values", "", "| Key | Type | Returned | Description |", "|---|---|---|---|"]
            out += self.return_rows(returns, samples)
            for path, sample in samples:
                out += ["", "Sample of %s:" % self.code(path), "", self.sample_block(sample)]

        if doc.get("author"):
            authors = doc["author"] if isinstance(doc["author"], list) else [doc["author"]]
            out += ["", "## Authors", ""]
            out += ["- %s" % self.text(author) for author in authors]
        return "\n".join(out) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming every page that differs")
    parser.add_argument("modules", nargs="*", help="only these modules (default: all)")
    args = parser.parse_args(argv)

    collection = collection_name()
    everything = module_names()
    unknown = sorted(set(args.modules) - set(everything))
    if unknown:
        parser.error("no such module in plugins/modules: %s" % ", ".join(unknown))
    names = args.modules or everything
    try:
        docs = load_docs(collection, names)
    except DocsError as err:
        print("docs: %s" % err, file=sys.stderr)
        return 2

    renderer = Renderer(collection, everything)
    stale = []
    for module in names:
        path = os.path.join(DOCS_DIR, module + ".md")
        rel = os.path.relpath(path, REPO)
        want = renderer.render(module, docs["%s.%s" % (collection, module)])
        have = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                have = handle.read()
        if have == want:
            continue
        stale.append(rel)
        if args.check:
            diff = list(
                difflib.unified_diff((have or "").splitlines(True), want.splitlines(True), "a/" + rel, "b/" + rel, n=1)
            )
            sys.stdout.writelines(diff[:20])
            if len(diff) > 20:
                print("... (%d more diff lines)" % (len(diff) - 20))
        else:
            os.makedirs(DOCS_DIR, exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(want)
            print("docs: wrote %s" % rel)
    # A page without a module (a renamed or removed module) is never written over: remove it.
    orphans = [
        os.path.relpath(os.path.join(DOCS_DIR, name), REPO)
        for name in sorted(os.listdir(DOCS_DIR))
        if name.endswith(".md") and name[:-3] not in everything
    ]
    if orphans:
        print("docs: no module for %s; remove it" % ", ".join(orphans))
    if args.check and stale:
        print("docs: %d of %d module pages stale: %s; run `make docs`" % (len(stale), len(names), ", ".join(stale)))
        return 1
    if args.check and not orphans:
        print("docs: %d module pages up to date" % len(names))
    elif not stale and not orphans:
        print("docs: %d module pages already up to date" % len(names))
    return 1 if orphans else 0


if __name__ == "__main__":
    sys.exit(main())
