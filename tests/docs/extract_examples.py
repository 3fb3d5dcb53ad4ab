#!/usr/bin/env python3
"""Writes the complete programs of the Markdown documents (fenced ```c blocks that define main)
into files that the build compiles and CTest runs, so that an example of the guide that no
longer compiles, or no longer runs to a zero exit status, fails CI instead of misleading a reader.

Usage: extract_examples.py OUTDIR DOC.md...
Prints one path a line: OUTDIR/doc_<document>_<section>.c, or .cu for a program that includes
gcomm/device.cuh or defines a kernel. <section> is the enclosing level-2 heading, with the level-3
one added after the first program of a section (a number after that), so that a test's name stays
the same when text above it moves. A `#line` directive points compiler messages at the
document's own lines. A file is rewritten only when its text changed (no needless rebuilds), and
files of examples that are gone are removed."""
import os
import re
import sys


def slug(heading):
    return re.sub(r'[^a-z0-9]+', '_', heading.lower()).strip('_') or 'top'


def examples(doc):
    """(line of the first code line, level-2 heading, level-3 heading, code) of every complete C
    program."""
    lines = open(doc, encoding='utf-8').read().split('\n')
    section, sub, i = '', '', 0
    while i < len(lines):
        line = lines[i]
        if line.startswith('```'):
            j = i + 1
            while j < len(lines) and not lines[j].startswith('```'):
                j += 1
            code = '\n'.join(lines[i + 1:j]) + '\n'
            if line[3:].strip() == 'c' and re.search(r'^int main\(', code, re.M):
                yield i + 2, section, sub, code
            i = j + 1
            continue
        if line.startswith('## '):
            section, sub = line[3:], ''
        elif line.startswith('### '):
            sub = line[4:]
        i += 1


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, docs = sys.argv[1], sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    written, taken = set(), set()
    for doc in docs:
        stem = slug(os.path.splitext(os.path.basename(doc))[0])
        for line, section, sub, code in examples(doc):
            name = 'doc_%s_%s' % (stem, slug(section))
            if name in taken:
                name += '_' + slug(sub)
            base, n = name, 1
            while name in taken:
                n += 1
                name = '%s_%d' % (base, n)
            taken.add(name)
            cuda = 'gcomm/device.cuh' in code or '__global__' in code
            path = os.path.join(out, name + ('.cu' if cuda else '.c'))
            text = ('/* %s, line %d: generated at configure time; edit the document */\n'
                    '#line %d "%s"\n%s' % (os.path.basename(doc), line, line, doc, code))
            old = open(path, encoding='utf-8').read() if os.path.exists(path) else None
            if old != text:
                with open(path, 'w', encoding='utf-8') as f:
                    f.write(text)
            written.add(os.path.basename(path))
            print(path)
    for f in os.listdir(out):
        if f.startswith('doc_') and f.endswith(('.c', '.cu')) and f not in written:
            os.remove(os.path.join(out, f))


if __name__ == '__main__':
    main()
