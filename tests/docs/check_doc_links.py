#!/usr/bin/env python3
"""Checks the links of the Markdown documents (README.md and docs/*.md): every relative link names a
file that exists, and every #fragment into one of these documents names one of its headings, with
the anchor GitHub derives from it (lower case; letters, digits, '_' and '-' kept, spaces to '-',
everything else dropped; a repeated heading gets -1, -2, ...). BENCHMARKS.md is long and its
sections are linked from the guide by anchor, so a renamed heading breaks links silently.
Usage: check_doc_links.py [repository root]; exit status 1 when a link is broken."""
import os
import re
import sys
import unicodedata


def anchor(heading):
    out = []
    for ch in heading.strip().lower():
        if ch == ' ':
            out.append('-')
        elif ch in '-_' or unicodedata.category(ch)[0] in 'LN':
            out.append(ch)
    return ''.join(out)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..')
    os.chdir(root)
    files = ['README.md'] + sorted('docs/' + f for f in os.listdir('docs') if f.endswith('.md'))
    docs = {}
    for f in files:
        text = open(f, encoding='utf-8').read()
        # headings outside fenced code blocks
        text_nocode = re.sub(r'^```.*?^```', '', text, flags=re.M | re.S)
        anchors, seen = set(), {}
        for m in re.finditer(r'^#{1,6} (.*)$', text_nocode, re.M):
            a = anchor(m.group(1))
            n = seen.get(a, 0)
            seen[a] = n + 1
            anchors.add(a if n == 0 else '%s-%d' % (a, n))
        docs[f] = (text_nocode, anchors)
    bad = checked = 0
    for f, (text, _) in docs.items():
        for m in re.finditer(r'\]\(([^)\s]+)\)', text):
            link = m.group(1)
            if re.match(r'[a-z]+:', link):
                continue
            path, _, frag = link.partition('#')
            target = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            checked += 1
            if path and not os.path.exists(target):
                print('%s: link to a missing file: %s' % (f, link))
                bad += 1
            elif frag and target in docs and frag not in docs[target][1]:
                print('%s: link to a missing heading: %s' % (f, link))
                bad += 1
    print('check_doc_links: %d links in %d documents, %d broken' % (checked, len(docs), bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
